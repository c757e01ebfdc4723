"""A request's own idempotency key, set by the client in `params._meta`
(`fusion/idempotencyKey`), over stdio with the official MCP Python SDK (mcp==2.3.0).

Usage: python idempotency_key.py PATH/TO/faults

Run by tests/clients/python_client.rs with the venv that scripts/python-env creates. The
fault server's `tally` tool counts its runs and has no key argument: the same key twice
runs it once (the second answer is the first's), a new key runs it again, and the first
key with other arguments is a `conflict`. Prints one "ok: ..." line per check; on the first
failure prints "FAIL: ..." to stderr and exits 1. Every wait is bounded.
"""

from __future__ import annotations

import sys
from collections.abc import Awaitable
from typing import Any, TypeVar

import anyio
from mcp import ClientSession, StdioServerParameters, stdio_client

STEP_TIMEOUT = 20.0
"""Seconds allowed for any single request or handshake."""

PART_TIMEOUT = 60.0
"""Seconds allowed for the whole run, including spawning and stopping the server."""

KEY = "fusion/idempotencyKey"
"""The `_meta` key of a request's idempotency key (fusion_runtime::meta)."""

T = TypeVar("T")


class CheckFailed(Exception):
    """A check did not hold; the message says which and what was seen."""


def check(condition: bool, what: str, seen: Any = None) -> None:
    if not condition:
        raise CheckFailed(f"{what}; got: {seen!r}")
    print(f"ok: {what}", flush=True)


async def step(what: str, awaitable: Awaitable[T]) -> T:
    try:
        with anyio.fail_after(STEP_TIMEOUT):
            return await awaitable
    except TimeoutError:
        raise CheckFailed(f"timed out after {STEP_TIMEOUT:.0f} s waiting for {what}") from None


def text_of(result: Any) -> str:
    return "\n".join(block.text for block in result.content if getattr(block, "type", None) == "text")


async def run(binary: str) -> None:
    params = StdioServerParameters(command=binary, args=[], env={"RUST_LOG": "warn"})
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await step("initialize", session.initialize())

        async def tally(label: str, key: str | None) -> Any:
            meta = {KEY: key} if key is not None else None
            return await step(
                f"tally {label} with key {key}",
                session.call_tool("tally", {"label": label}, meta=meta),
            )

        first = await tally("lamp", "order-1")
        check(not first.is_error and text_of(first) == "run 1 of lamp", "the first keyed call runs", text_of(first))
        again = await tally("lamp", "order-1")
        check(text_of(again) == "run 1 of lamp", "the same key again replays the first answer", text_of(again))
        other = await tally("lamp", "order-2")
        check(text_of(other) == "run 2 of lamp", "a new key runs again", text_of(other))
        conflict = await tally("desk", "order-1")
        failure = (conflict.meta or {}).get("fusion/failure", {})
        check(
            conflict.is_error and failure.get("code") == "conflict",
            "the first key with other arguments is a conflict",
            (text_of(conflict), failure),
        )
        plain = await tally("lamp", None)
        check(text_of(plain) == "run 3 of lamp", "a call without a key runs", text_of(plain))


def main() -> int:
    if len(sys.argv) != 2:
        print("usage: python idempotency_key.py PATH/TO/faults", file=sys.stderr)
        return 2
    try:
        anyio.run(run_bounded, sys.argv[1])
    except (CheckFailed, TimeoutError) as failure:
        print(f"FAIL: {failure}", file=sys.stderr)
        return 1
    print("ok: all checks passed", flush=True)
    return 0


async def run_bounded(binary: str) -> None:
    with anyio.fail_after(PART_TIMEOUT):
        await run(binary)


if __name__ == "__main__":
    sys.exit(main())
