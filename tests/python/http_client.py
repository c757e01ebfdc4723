"""Drive fusion servers with the official MCP Python SDK (mcp==2.3.0) over Streamable HTTP.

Usage:
  python http_client.py quickstart URL    # the quickstart served with --http
  python http_client.py conformance URL   # examples/conformance.rs: resources, prompts, ...
  python http_client.py demo URL          # the demo, e.g. stateless replicas behind nginx

Run by tests/clients/python_client.rs (quickstart, conformance) and tests/fleet/scale_out.rs (demo) with
the venv that scripts/python-env creates.

quickstart: the low-level `ClientSession` over `streamable_http_client(URL)` (initialize,
tools/list, successes, a validation error, a panic then a normal call, an unknown tool), then
the high-level `mcp.Client(URL)` in mode "auto" (probes `server/discover` first) and
"legacy" (the `initialize` handshake).

conformance: a `ClientSession` with sampling, elicitation and logging callbacks: resources
(list, templates, text, blob, template read, unknown URI, subscribe/unsubscribe), prompts
(list, get with arguments, a missing argument), completion, and the tools that report
progress, log, sample and elicit; then `mcp.Client(URL)` in mode "auto" (2026-07-28) through
multi-round tools (`input_required` answered by its callbacks, the signed state echoed).

demo: the demo (`fusion-demo --http PORT --stateless`), possibly several replicas behind a
load balancer, so that consecutive requests reach different processes: a `ClientSession`
(initialize, tools/list, `system` action `health`, `db_user` action `find_many`, a
validation error), repeated so that every replica serves some, then the high-level
`mcp.Client(URL)` in mode "auto".

Prints one "ok: ..." line per check; on the first failure prints "FAIL: ..." to stderr and
exits 1. Every wait is bounded.
"""

from __future__ import annotations

import base64
import json
import sys
import warnings
from collections.abc import Awaitable
from typing import Any, TypeVar

import anyio
from mcp import Client, ClientSession, MCPDeprecationWarning, MCPError, types
from mcp.client.streamable_http import streamable_http_client

STEP_TIMEOUT = 20.0
"""Seconds allowed for any single request or handshake."""

PART_TIMEOUT = 60.0
"""Seconds allowed for a whole part."""

# Logging and resource subscriptions are deprecated by the 2026-07-28 protocol; the server
# offers them to clients of the earlier versions, which is what this checks.
warnings.filterwarnings("ignore", category=MCPDeprecationWarning)

QUICKSTART_TOOLS = {"echo", "add", "divide", "get_weather", "greet", "crash"}

DEMO_TOOLS = {"db_user", "system"}

T = TypeVar("T")


class CheckFailed(Exception):
    """A check did not hold; the message says which and what was seen."""


def ok(what: str) -> None:
    print(f"ok: {what}", flush=True)


def check(condition: bool, what: str, seen: Any = None) -> None:
    if not condition:
        raise CheckFailed(f"{what}; got: {seen!r}")
    ok(what)


async def step(what: str, awaitable: Awaitable[T]) -> T:
    try:
        with anyio.fail_after(STEP_TIMEOUT):
            return await awaitable
    except TimeoutError:
        raise CheckFailed(f"timed out after {STEP_TIMEOUT:.0f} s waiting for {what}") from None


def text_of(result: Any) -> str:
    return "\n".join(block.text for block in result.content if getattr(block, "type", None) == "text")


async def quickstart_session(url: str) -> None:
    async with streamable_http_client(url) as (read, write):
        async with ClientSession(read, write) as session:
            init = await step("initialize", session.initialize())
            check(init.server_info.name == "quickstart", "http initialize: serverInfo.name is quickstart", init)
            ok(f"http initialize: negotiated protocol {init.protocol_version}")
            listed = await step("tools/list", session.list_tools())
            names = {tool.name for tool in listed.tools}
            check(names == QUICKSTART_TOOLS, "http tools/list: the six tools", sorted(names))

            r = await step("add", session.call_tool("add", {"a": 2, "b": 3}))
            check(not r.is_error and r.structured_content == {"result": 5}, "http add 2+3: {result: 5}", r)
            r = await step("add bad", session.call_tool("add", {"a": 1, "b": "x"}))
            text = text_of(r)
            check(r.is_error is True and "`b`" in text, "http add b='x': isError naming `b`", text)
            r = await step("crash", session.call_tool("crash", {}))
            check(r.is_error is True and "reference" in text_of(r), "http crash: isError with a reference", r)
            r = await step("echo", session.call_tool("echo", {"text": "still alive"}))
            check(text_of(r) == "still alive", "http echo after crash: still answers", r)
            r = await step("unknown tool", session.call_tool("nope", {}))
            check(r.is_error is True and "`add`" in text_of(r), "http unknown tool: isError listing `add`", r)


async def quickstart_client(url: str, mode: str) -> None:
    async with Client(url, mode=mode, read_timeout_seconds=STEP_TIMEOUT) as client:
        check(
            client.server_info is not None and client.server_info.name == "quickstart",
            f"http Client(mode={mode!r}): connected",
            client.server_info,
        )
        ok(f"http Client(mode={mode!r}): negotiated protocol {client.protocol_version}")
        listed = await step("Client.list_tools", client.list_tools())
        check({t.name for t in listed.tools} == QUICKSTART_TOOLS, f"http Client(mode={mode!r}).list_tools", listed)
        r = await step("Client.call_tool add", client.call_tool("add", {"a": 40, "b": 2}))
        check(r.structured_content == {"result": 42}, f"http Client(mode={mode!r}).call_tool add: 42", r)


async def conformance(url: str) -> None:
    logs: list[Any] = []
    sampled: list[Any] = []
    elicited: list[Any] = []

    async def on_sampling(context: Any, params: types.CreateMessageRequestParams) -> types.CreateMessageResult:
        sampled.append(params)
        return types.CreateMessageResult(
            role="assistant",
            content=types.TextContent(type="text", text="forty-two"),
            model="test-model",
            stop_reason="endTurn",
        )

    async def on_elicitation(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        elicited.append(params)
        if "context" in params.message:
            return types.ElicitResult(action="accept", content={"context": "a session"})
        return types.ElicitResult(action="accept", content={"username": "ada", "email": "ada@example.com"})

    async def on_log(params: types.LoggingMessageNotificationParams) -> None:
        logs.append(params)

    async with streamable_http_client(url) as (read, write):
        async with ClientSession(
            read,
            write,
            sampling_callback=on_sampling,
            elicitation_callback=on_elicitation,
            logging_callback=on_log,
        ) as session:
            init = await step("initialize", session.initialize())
            caps = init.capabilities
            check(
                caps.resources is not None and caps.prompts is not None and caps.completions is not None,
                "initialize: resources, prompts and completions advertised",
                caps,
            )

            resources = await step("resources/list", session.list_resources())
            uris = {resource.uri for resource in resources.resources}
            check(
                {"test://static-text", "test://static-binary", "test://watched-resource"} <= uris,
                "resources/list: the fixed resources",
                sorted(uris),
            )
            templates = await step("resources/templates/list", session.list_resource_templates())
            check(
                [t.uri_template for t in templates.resource_templates] == ["test://template/{id}/data"],
                "resources/templates/list: the template",
                templates,
            )
            text = await step("read static-text", session.read_resource("test://static-text"))
            check(
                text.contents[0].text == "This is the content of the static text resource."
                and text.contents[0].mime_type == "text/plain",
                "resources/read static-text: text and mimeType",
                text,
            )
            binary = await step("read static-binary", session.read_resource("test://static-binary"))
            blob = base64.b64decode(binary.contents[0].blob)
            check(
                blob.startswith(b"\x89PNG") and binary.contents[0].mime_type == "image/png",
                "resources/read static-binary: a PNG blob",
                binary,
            )
            templated = await step("read template", session.read_resource("test://template/abc/data"))
            data = json.loads(templated.contents[0].text)
            check(
                data["id"] == "abc" and str(templated.contents[0].uri) == "test://template/abc/data",
                "resources/read template: the id substituted, the URI echoed",
                templated,
            )
            try:
                await step("read unknown", session.read_resource("test://nope"))
                raise CheckFailed("resources/read of an unknown URI succeeded")
            except MCPError as error:
                check(error.error.code == -32002, "resources/read unknown: -32002 resource not found", error.error)
            await step("subscribe", session.subscribe_resource("test://watched-resource"))
            await step("unsubscribe", session.unsubscribe_resource("test://watched-resource"))
            ok("resources/subscribe and unsubscribe answered")

            prompts = await step("prompts/list", session.list_prompts())
            by_name = {prompt.name: prompt for prompt in prompts.prompts}
            args = [(a.name, a.required) for a in by_name["test_prompt_with_arguments"].arguments or []]
            check(args == [("arg1", True), ("arg2", True)], "prompts/list: arguments with required", args)
            got = await step(
                "prompts/get",
                session.get_prompt("test_prompt_with_arguments", {"arg1": "hello", "arg2": "world"}),
            )
            check(
                got.messages[0].content.text == "Prompt with arguments: arg1='hello', arg2='world'",
                "prompts/get: arguments substituted",
                got,
            )
            before = len(elicited)
            got = await step("prompts/get asking", session.get_prompt("test_input_required_result_prompt"))
            check(
                got.messages[0].content.text == "Use this context: a session." and len(elicited) == before + 1,
                "prompts/get: the prompt asks the user on the session, once",
                got,
            )
            try:
                await step("prompts/get missing", session.get_prompt("test_prompt_with_arguments", {"arg1": "x"}))
                raise CheckFailed("prompts/get without a required argument succeeded")
            except MCPError as error:
                check(
                    error.error.code == -32602 and "arg2" in error.error.message,
                    "prompts/get missing arg2: -32602 naming it",
                    error.error,
                )
            completion = await step(
                "completion/complete",
                session.complete(
                    types.PromptReference(type="ref/prompt", name="test_prompt_with_arguments"),
                    {"name": "arg1", "value": "par"},
                ),
            )
            check(
                completion.completion.values == ["paris", "park", "party"],
                "completion/complete: choices by prefix",
                completion,
            )

            progress: list[tuple[float, float | None]] = []

            async def on_progress(done: float, total: float | None, message: str | None) -> None:
                progress.append((done, total))

            r = await step(
                "progress tool",
                session.call_tool("test_tool_with_progress", {}, progress_callback=on_progress),
            )
            check(not r.is_error, "test_tool_with_progress: answered", r)
            check(
                [done for done, _ in progress] == [0, 50, 100],
                "test_tool_with_progress: progress 0, 50, 100",
                progress,
            )

            await step("logging/setLevel", session.set_logging_level("debug"))
            r = await step("logging tool", session.call_tool("test_tool_with_logging", {}))
            with anyio.move_on_after(2):
                while len(logs) < 3:
                    await anyio.sleep(0.02)
            check(len(logs) >= 3, "test_tool_with_logging: three log messages", logs)

            r = await step("sampling tool", session.call_tool("test_sampling", {"prompt": "the answer?"}))
            check(
                text_of(r) == "LLM response: forty-two" and len(sampled) == 1,
                "test_sampling: the client's model answered",
                r,
            )
            before = len(elicited)
            r = await step("elicitation tool", session.call_tool("test_elicitation", {"message": "who?"}))
            check(
                "action=accept" in text_of(r) and "ada@example.com" in text_of(r) and len(elicited) == before + 1,
                "test_elicitation: the user's answer",
                r,
            )
            r = await step("error tool", session.call_tool("test_error_handling", {}))
            check(
                r.is_error is True and "intentionally" in text_of(r),
                "test_error_handling: isError with its message",
                r,
            )


async def conformance_rounds(url: str) -> None:
    """2026-07-28 multi-round calls: `mcp.Client` in mode "auto" answers `input_required`
    results through its callbacks and calls again with the signed request state."""
    asked: list[str] = []

    async def on_elicitation(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        asked.append(params.message)
        if "context" in params.message:
            return types.ElicitResult(action="accept", content={"context": "rounds"})
        field = "color" if "color" in params.message else "name"
        return types.ElicitResult(action="accept", content={field: "Ada" if field == "name" else "teal"})

    async def on_sampling(context: Any, params: types.CreateMessageRequestParams) -> types.CreateMessageResult:
        asked.append("sampling")
        return types.CreateMessageResult(
            role="assistant",
            content=types.TextContent(type="text", text="Paris"),
            model="test-model",
            stop_reason="endTurn",
        )

    async def on_roots(context: Any) -> types.ListRootsResult:
        asked.append("roots")
        return types.ListRootsResult(roots=[types.Root(uri="file:///work", name="work")])

    async with Client(
        url,
        mode="auto",
        read_timeout_seconds=STEP_TIMEOUT,
        elicitation_callback=on_elicitation,
        sampling_callback=on_sampling,
        list_roots_callback=on_roots,
    ) as client:
        ok(f"rounds Client(mode='auto'): negotiated protocol {client.protocol_version}")
        check(client.protocol_version == "2026-07-28", "rounds: the 2026-07-28 revision", client.protocol_version)
        r = await step("rounds: one question", client.call_tool("test_input_required_result_elicitation", {}))
        check(not r.is_error and text_of(r) == "Hello, Ada!", "rounds: the answer reaches the tool", r)
        r = await step("rounds: two rounds", client.call_tool("test_input_required_result_multi_round", {}))
        check(not r.is_error and text_of(r) == "Ada likes teal", "rounds: the first answer is carried in the state", r)
        check(asked[-2:] == ["Step 1: What is your name?", "Step 2: What is your favorite color?"], "rounds: each question asked once", asked)
        r = await step("rounds: three at once", client.call_tool("test_input_required_result_multiple_inputs", {}))
        check(not r.is_error and "Paris Ada (1 roots)" == text_of(r), "rounds: elicitation, sampling and roots in one round", r)
        got = await step("rounds: a prompt asks", client.get_prompt("test_input_required_result_prompt"))
        check(
            got.messages[0].content.text == "Use this context: rounds." and asked[-1] == "What context should the prompt use?",
            "rounds: prompts/get answers input_required, then the prompt with the answer",
            got,
        )


async def demo_session(url: str) -> None:
    async with streamable_http_client(url) as (read, write):
        async with ClientSession(read, write) as session:
            init = await step("initialize", session.initialize())
            check(init.server_info.name == "fusion-demo", "demo initialize: serverInfo.name is fusion-demo", init)
            ok(f"demo initialize: negotiated protocol {init.protocol_version}")
            # Round after round, so that a round-robin balancer sends each request of the
            # round to a different replica than the round before.
            for round_ in range(1, 4):
                listed = await step("tools/list", session.list_tools())
                names = {tool.name for tool in listed.tools}
                check(names == DEMO_TOOLS, f"demo round {round_}: tools/list has db_user and system", sorted(names))
                r = await step("system health", session.call_tool("system", {"action": "health"}))
                check(
                    not r.is_error and (r.structured_content or {}).get("status") == "ok",
                    f"demo round {round_}: system health is ok",
                    r,
                )
                r = await step("db_user find_many", session.call_tool("db_user", {"action": "find_many", "take": 3}))
                users = (r.structured_content or {}).get("result")
                check(
                    not r.is_error and isinstance(users, list) and len(users) == 3,
                    f"demo round {round_}: db_user find_many take=3 gives three users",
                    r,
                )
            r = await step("find_many bad", session.call_tool("db_user", {"action": "find_many", "take": 99999}))
            check(r.is_error is True and "`take`" in text_of(r), "demo find_many take=99999: isError naming `take`", r)


async def demo_client(url: str) -> None:
    async with Client(url, mode="auto", read_timeout_seconds=STEP_TIMEOUT) as client:
        check(
            client.server_info is not None and client.server_info.name == "fusion-demo",
            "demo Client(mode='auto'): connected",
            client.server_info,
        )
        r = await step("Client.call_tool system health", client.call_tool("system", {"action": "health"}))
        check(not r.is_error, "demo Client(mode='auto').call_tool system health", r)


def first_failure(exc: BaseException) -> BaseException:
    if isinstance(exc, CheckFailed):
        return exc
    if isinstance(exc, BaseExceptionGroup):
        for inner in exc.exceptions:
            found = first_failure(inner)
            if isinstance(found, CheckFailed):
                return found
        return first_failure(exc.exceptions[0]) if exc.exceptions else exc
    return exc


async def run_part(name: str, body: Awaitable[None]) -> None:
    try:
        with anyio.fail_after(PART_TIMEOUT):
            await body
    except TimeoutError:
        raise CheckFailed(f"{name}: did not finish within {PART_TIMEOUT:.0f} s") from None


async def run(kind: str, url: str) -> None:
    if kind == "quickstart":
        await run_part("ClientSession", quickstart_session(url))
        await run_part("Client(auto)", quickstart_client(url, "auto"))
        await run_part("Client(legacy)", quickstart_client(url, "legacy"))
    elif kind == "demo":
        await run_part("demo ClientSession", demo_session(url))
        await run_part("demo Client(auto)", demo_client(url))
    else:
        await run_part("conformance", conformance(url))
        await run_part("conformance rounds", conformance_rounds(url))


def main() -> int:
    if len(sys.argv) != 3 or sys.argv[1] not in ("quickstart", "conformance", "demo"):
        print("usage: http_client.py quickstart|conformance|demo URL", file=sys.stderr)
        return 2
    kind, url = sys.argv[1], sys.argv[2]
    try:
        anyio.run(run, kind, url)
    except BaseException as exc:  # noqa: BLE001 - report the first real failure and exit 1
        failure = first_failure(exc)
        print(f"FAIL: {type(failure).__name__}: {failure}", file=sys.stderr)
        return 1
    print("ok: all checks passed", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
