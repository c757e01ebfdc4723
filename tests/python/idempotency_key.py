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
from typing import Any

from checks import check, main, step, text_of
from mcp import ClientSession, StdioServerParameters, stdio_client

KEY = "fusion/idempotencyKey"
"""The `_meta` key of a request's idempotency key (fusion_runtime::meta)."""


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


if __name__ == "__main__":
    sys.exit(main("python idempotency_key.py PATH/TO/faults", run))
