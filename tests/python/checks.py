"""What the Python client scripts share: a failed check, a bounded step, the text of a result,
and the bounded run with its exit code. Imported by the scripts beside it (Python puts a
script's own folder first on `sys.path`).
"""

from __future__ import annotations

import sys
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import anyio

STEP_TIMEOUT = 20.0
"""Seconds allowed for any single request or handshake."""

PART_TIMEOUT = 60.0
"""Seconds allowed for the whole run, including spawning and stopping the server."""

T = TypeVar("T")


class CheckFailed(Exception):
    """A check did not hold; the message says which and what was seen."""


def check(condition: bool, what: str, seen: Any = None) -> None:
    """Prints "ok: what", or raises CheckFailed with what was seen."""
    if not condition:
        raise CheckFailed(f"{what}; got: {seen!r}")
    print(f"ok: {what}", flush=True)


async def step(what: str, awaitable: Awaitable[T]) -> T:
    """`awaitable`, within STEP_TIMEOUT, or CheckFailed naming `what`."""
    try:
        with anyio.fail_after(STEP_TIMEOUT):
            return await awaitable
    except TimeoutError:
        raise CheckFailed(f"timed out after {STEP_TIMEOUT:.0f} s waiting for {what}") from None


def text_of(result: Any) -> str:
    """The text blocks of a tool result, joined by newlines."""
    return "\n".join(block.text for block in result.content if getattr(block, "type", None) == "text")


def main(
    usage: str,
    run: Callable[..., Awaitable[None]],
    arguments: int = 1,
    timeout: float = PART_TIMEOUT,
) -> int:
    """Runs `run(*argv[1:])` (`arguments` of them) within `timeout`: 0 when every check
    passed, 1 on the first failure (said on stderr), 2 on a wrong command line."""
    if len(sys.argv) != arguments + 1:
        print(f"usage: {usage}", file=sys.stderr)
        return 2

    async def bounded() -> None:
        with anyio.fail_after(timeout):
            await run(*sys.argv[1:])

    try:
        anyio.run(bounded)
    except (CheckFailed, TimeoutError) as failure:
        print(f"FAIL: {failure}", file=sys.stderr)
        return 1
    print("ok: all checks passed", flush=True)
    return 0
