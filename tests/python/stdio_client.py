"""Drive the quickstart example with the official MCP Python SDK (mcp==2.3.0) over stdio.

Usage: python stdio_client.py PATH/TO/quickstart

Run by tests/clients/python_client.rs with the venv that scripts/python-env creates. Two parts:

  a. the low-level `ClientSession` over `stdio_client(...)`: classic initialize handshake,
     tools/list, and tools/call for successes, validation errors, a panic and an unknown tool;
  b. the high-level `mcp.Client(StdioServerParameters(...))`, twice: mode="auto" (the default:
     probes `server/discover` first and falls back to `initialize` on a JSON-RPC error) and
     mode="legacy" (the `initialize` handshake only).

Prints one "ok: ..." line per check. On the first failure prints "FAIL: ..." to stderr
(with the tail of the server's stderr for part a) and exits 1. Every wait is bounded.
"""

from __future__ import annotations

import sys
import tempfile
from collections.abc import Awaitable
from typing import Any, TextIO, TypeVar

import anyio
from mcp import Client, ClientSession, StdioServerParameters, stdio_client

STEP_TIMEOUT = 20.0
"""Seconds allowed for any single request or handshake."""

PART_TIMEOUT = 60.0
"""Seconds allowed for a whole part, including spawning and shutting down the server."""

EXPECTED_TOOLS = {"echo", "add", "divide", "get_weather", "greet", "crash"}

T = TypeVar("T")


class CheckFailed(Exception):
    """A check did not hold; the message says which and what was seen."""


def ok(what: str) -> None:
    print(f"ok: {what}", flush=True)


def check(condition: bool, what: str, seen: Any = None) -> None:
    """Print `ok: what` when `condition` holds, otherwise raise CheckFailed with `seen`."""
    if not condition:
        raise CheckFailed(f"{what}; got: {seen!r}")
    ok(what)


async def step(what: str, awaitable: Awaitable[T]) -> T:
    """Await `awaitable` for at most STEP_TIMEOUT seconds."""
    try:
        with anyio.fail_after(STEP_TIMEOUT):
            return await awaitable
    except TimeoutError:
        raise CheckFailed(f"timed out after {STEP_TIMEOUT:.0f} s waiting for {what}") from None


def text_of(result: Any) -> str:
    """All text blocks of a CallToolResult, joined by newlines."""
    return "\n".join(block.text for block in result.content if getattr(block, "type", None) == "text")


async def call(session: Any, name: str, arguments: dict[str, Any] | None) -> Any:
    return await step(f"tools/call {name} {arguments}", session.call_tool(name, arguments))


async def low_level(binary: str, errlog: TextIO) -> None:
    """Part a: ClientSession over stdio_client, the classic handshake."""
    params = StdioServerParameters(command=binary, args=[])
    async with stdio_client(params, errlog=errlog) as (read, write):
        async with ClientSession(read, write) as session:
            init = await step("initialize", session.initialize())
            check(init.server_info.name == "quickstart", "initialize: serverInfo.name is quickstart", init.server_info)
            check(init.capabilities.tools is not None, "initialize: tools capability advertised", init.capabilities)

            listed = await step("tools/list", session.list_tools())
            tools = {tool.name: tool for tool in listed.tools}
            check(set(tools) == EXPECTED_TOOLS, "tools/list: the six tools", sorted(tools))
            undescribed = [name for name, tool in tools.items() if not tool.description]
            check(not undescribed, "tools/list: every tool has a description", undescribed)
            add_schema = tools["add"].input_schema
            check(
                sorted(add_schema.get("required", [])) == ["a", "b"],
                "tools/list: add requires a and b",
                add_schema,
            )
            check(
                add_schema.get("additionalProperties") is False,
                "tools/list: add forbids additional properties",
                add_schema,
            )

            r = await call(session, "add", {"a": 2, "b": 3})
            check(not r.is_error, "add 2+3: not an error", text_of(r))
            check(r.structured_content == {"result": 5}, "add 2+3: structuredContent is {result: 5}", r)

            r = await call(session, "add", {"a": 1, "b": "x"})
            text = text_of(r)
            check(r.is_error is True, "add b='x': isError", r)
            check("`b`" in text and "expected an integer" in text, "add b='x': names `b`, expected an integer", text)

            r = await call(session, "add", {"a": 1, "b": 2, "c": 3})
            text = text_of(r)
            check(r.is_error is True, "add with c: isError", r)
            # The runtime's wording is still moving: accept "unknown field" or the code "unknown_field".
            unknown = "unknown field" in text.lower() or "unknown_field" in text
            check("`c`" in text and unknown, "add with c: names `c`, unknown field", text)

            r = await call(session, "crash", {})
            text = text_of(r)
            check(r.is_error is True, "crash: isError", r)
            check("reference" in text, "crash: text gives a reference", text)

            r = await call(session, "echo", {"text": "still alive"})
            check(
                not r.is_error and text_of(r) == "still alive",
                "echo after crash: server still answers",
                r,
            )

            r = await call(session, "get_weather", {"city": "Lisbon"})
            check(not r.is_error, "get_weather Lisbon: not an error", text_of(r))
            sc = r.structured_content or {}
            check(sc.get("city") == "Lisbon", "get_weather Lisbon: structuredContent.city", r.structured_content)

            r = await call(session, "greet", {"name": "Ada"})
            check(text_of(r) == "Hello, Ada!", "greet Ada: Hello, Ada!", text_of(r))

            r = await call(session, "nope", {})
            text = text_of(r)
            check(r.is_error is True, "unknown tool nope: isError", r)
            check("nope" in text and "`add`" in text, "unknown tool nope: names it and lists `add`", text)


async def high_level(binary: str, mode: str) -> None:
    """Part b: the high-level mcp.Client, built from StdioServerParameters.

    mode="auto" (the default) probes `server/discover` and falls back to `initialize` on a
    JSON-RPC error; mode="legacy" goes straight to the `initialize` handshake.
    """
    params = StdioServerParameters(command=binary, args=[])
    # Connecting (spawn + negotiation) is bounded by read_timeout_seconds per request and by
    # run_part's PART_TIMEOUT overall: a cancel scope must not be entered around __aenter__
    # alone, because the client's task group outlives it.
    async with Client(params, mode=mode, read_timeout_seconds=STEP_TIMEOUT) as client:
        check(
            client.server_info is not None and client.server_info.name == "quickstart",
            f"Client(mode={mode!r}): connected, serverInfo.name is quickstart",
            client.server_info,
        )
        ok(f"Client(mode={mode!r}): negotiated protocol {client.protocol_version}")
        listed = await step("Client.list_tools", client.list_tools())
        names = {tool.name for tool in listed.tools}
        check(names == EXPECTED_TOOLS, f"Client(mode={mode!r}).list_tools: the six tools", sorted(names))
        r = await step("Client.call_tool echo", client.call_tool("echo", {"text": "hi"}))
        check(not r.is_error and text_of(r) == "hi", f"Client(mode={mode!r}).call_tool echo: hi", r)
        r = await step("Client.call_tool add", client.call_tool("add", {"a": 40, "b": 2}))
        check(
            not r.is_error and r.structured_content == {"result": 42},
            f"Client(mode={mode!r}).call_tool add: structuredContent is {{result: 42}}",
            r,
        )


def first_failure(exc: BaseException) -> BaseException:
    """The first CheckFailed inside (possibly nested) exception groups, else the first leaf."""
    if isinstance(exc, CheckFailed):
        return exc
    if isinstance(exc, BaseExceptionGroup):
        for inner in exc.exceptions:
            found = first_failure(inner)
            if isinstance(found, CheckFailed):
                return found
        return first_failure(exc.exceptions[0]) if exc.exceptions else exc
    return exc


def server_stderr_tail(log: TextIO, lines: int = 30) -> str:
    log.flush()
    log.seek(0)
    return "".join(log.readlines()[-lines:])


async def run_part(name: str, body: Awaitable[None]) -> None:
    try:
        with anyio.fail_after(PART_TIMEOUT):
            await body
    except TimeoutError:
        raise CheckFailed(f"{name}: did not finish within {PART_TIMEOUT:.0f} s") from None


def main() -> int:
    if len(sys.argv) != 2:
        print("usage: stdio_client.py PATH/TO/quickstart", file=sys.stderr)
        return 2
    binary = sys.argv[1]
    with tempfile.TemporaryFile("w+", encoding="utf-8", prefix="quickstart-stderr-") as log:
        part = "part a (ClientSession)"
        try:
            anyio.run(run_part, part, low_level(binary, log))
            for mode in ("auto", "legacy"):
                part = f"part b (mcp.Client, mode={mode!r})"
                anyio.run(run_part, part, high_level(binary, mode))
        except BaseException as exc:  # noqa: BLE001 - report anything, then fail
            cause = first_failure(exc)
            kind = "" if isinstance(cause, CheckFailed) else f"{type(cause).__name__}: "
            print(f"FAIL: {part}: {kind}{cause}", file=sys.stderr, flush=True)
            if not isinstance(cause, CheckFailed):
                import traceback

                traceback.print_exception(exc, file=sys.stderr)
            tail = server_stderr_tail(log)
            if tail:
                print("--- last lines of the server's stderr (part a) ---", file=sys.stderr)
                print(tail, file=sys.stderr, end="")
            return 1
    print("ok: all checks passed", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
