"""A long call kept alive by fusion's heartbeat, with the official MCP Python SDK
(mcp==2.3.0) over Streamable HTTP.

Usage: python heartbeat_client.py URL EXPECT

Calls the faults example's `slow` tool for 3 s, asking for progress, over an HTTP client
whose read timeout is 1.5 s: the longest the client waits for the next bytes of the call's
event stream. EXPECT is `answered` (the server beats more often than that: the call is
answered, after heartbeats that say the tool is still working) or `timed-out` (the server
sends no heartbeat: the client gives up at its read timeout, as it does today).

Run by tests/clients/python_client.rs. Prints one "ok: ..." line per check; on the first
failure prints "FAIL: ..." to stderr and exits 1. Every wait is bounded.
"""

from __future__ import annotations

import sys
from typing import Any

import httpx2
from checks import CheckFailed, check, main, text_of
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

READ_TIMEOUT = 1.5
"""Seconds the client waits for the next bytes of a response: half the call."""

RUN_TIMEOUT = 60.0


def describe(error: BaseException) -> str:
    """The innermost errors of `error`, an exception group's included."""
    if isinstance(error, BaseExceptionGroup):
        return "; ".join(describe(inner) for inner in error.exceptions)
    cause = error.__cause__ or error.__context__
    own = f"{type(error).__name__}: {error}"
    return f"{own} <- {describe(cause)}" if cause is not None else own


async def run(url: str, expect: str) -> None:
    if expect not in ("answered", "timed-out"):
        raise CheckFailed(f"EXPECT is `answered` or `timed-out`, not {expect!r}")
    progress: list[Any] = []

    async def on_progress(done: float, total: float | None, message: str | None) -> None:
        progress.append(message)

    http = create_mcp_http_client(timeout=httpx2.Timeout(10.0, read=READ_TIMEOUT))
    outcome = "answered"
    try:
        async with (
            http,
            streamable_http_client(url, http_client=http) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            result = await session.call_tool("slow", {"ms": 3000}, progress_callback=on_progress)
            check(not result.is_error and "3000" in text_of(result), "the 3 s call answered", result)
    except Exception as error:  # noqa: BLE001 - whatever the SDK raises, it is said below
        outcome = f"failed: {describe(error)}"
    if expect == "answered":
        check(outcome == "answered", "a call longer than the read timeout is answered", outcome)
        check(
            len(progress) >= 2 and all(message == "still working" for message in progress),
            "heartbeats said the tool is still working",
            progress,
        )
    else:
        check(
            outcome.startswith("failed") and "ReadTimeout" in outcome,
            "without heartbeats the client gives up at its read timeout",
            outcome,
        )


if __name__ == "__main__":
    sys.exit(main("heartbeat_client.py URL answered|timed-out", run, arguments=2, timeout=RUN_TIMEOUT))
