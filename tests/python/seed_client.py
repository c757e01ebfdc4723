"""The seed's error-handling checks, over stdio, with the official MCP Python SDK.

Usage: python seed_client.py PATH/TO/fusion-demo

Runs the demo twice: as an admin (DEMO_ROLE=ADMIN) and as a guest (DEMO_ROLE=GUEST).
Prints one "ok: ..." line per check; on the first failure prints "FAIL: ..." and exits 1.
Every wait is bounded.
"""

from __future__ import annotations

import os
import sys
from typing import Any

import anyio
from mcp import ClientSession, StdioServerParameters, stdio_client

STEP_TIMEOUT = 20.0
PART_TIMEOUT = 60.0


class CheckFailed(Exception):
    """A check did not hold."""


def check(condition: bool, what: str, seen: Any = None) -> None:
    if not condition:
        raise CheckFailed(f"{what}; got: {seen!r}")
    print(f"ok: {what}", flush=True)


def texts(result: Any) -> list[str]:
    return [block.text for block in result.content if getattr(block, "text", None) is not None]


async def call(session: ClientSession, tool: str, args: dict[str, Any]) -> Any:
    with anyio.fail_after(STEP_TIMEOUT):
        return await session.call_tool(tool, args)


async def as_role(binary: str, role: str) -> None:
    env = dict(os.environ)
    env["DEMO_ROLE"] = role
    params = StdioServerParameters(command=binary, args=[], env=env)
    with anyio.fail_after(PART_TIMEOUT):
        async with stdio_client(params) as (read, write):
            async with ClientSession(read, write) as session:
                with anyio.fail_after(STEP_TIMEOUT):
                    init = await session.initialize()
                check(init.server_info.name == "fusion-demo", f"{role}: server_info.name", init.server_info.name)
                with anyio.fail_after(STEP_TIMEOUT):
                    tools = (await session.list_tools()).tools
                names = [tool.name for tool in tools]
                check(names == ["db_user", "system"], f"{role}: grouped tools listed", names)

                unknown_tool = await call(session, "nonexistent_tool", {"action": "list"})
                check(unknown_tool.is_error, f"{role}: unknown tool is an error", unknown_tool)

                unknown_action = await call(session, "db_user", {"action": "nonexistent_action"})
                text = " ".join(texts(unknown_action))
                check(unknown_action.is_error and "find_many" in text, f"{role}: unknown action lists the actions", text)

                disabled = await call(session, "system", {"action": "disabled_action"})
                text = " ".join(texts(disabled))
                check(disabled.is_error and "temporarily disabled" in text, f"{role}: handler error text", text)

                health = await call(session, "system", {"action": "health"})
                check(not health.is_error, f"{role}: system health works", texts(health))

                find = await call(session, "db_user", {"action": "find_many", "take": 3})
                if role == "ADMIN":
                    blocks = texts(find)
                    check(not find.is_error, "ADMIN: find_many succeeds", blocks)
                    check(len(find.structured_content["result"]) == 3, "ADMIN: three users", find.structured_content)
                    check(len(blocks) == 3 and blocks[2].startswith("System rules:"), "ADMIN: data, UI block, rules", blocks)

                    too_many = await call(session, "db_user", {"action": "find_many", "take": 99999})
                    check(too_many.is_error and len(too_many.content) == 1, "ADMIN: no layers on error", texts(too_many))

                    invalid = await call(session, "db_user", {"action": "find_many", "take": "invalid"})
                    text = " ".join(texts(invalid))
                    check(invalid.is_error and "`take`" in text, "ADMIN: validation error is a result naming the field", text)
                else:
                    text = " ".join(texts(find))
                    check(find.is_error and "Unauthorized" in text, "GUEST: RBAC refusal says Unauthorized", text)


async def main(binary: str) -> None:
    await as_role(binary, "ADMIN")
    await as_role(binary, "GUEST")
    print("ok: all checks passed", flush=True)


if __name__ == "__main__":
    if len(sys.argv) != 2:
        print("usage: seed_client.py PATH/TO/fusion-demo", file=sys.stderr)
        sys.exit(2)
    try:
        anyio.run(main, sys.argv[1])
    except CheckFailed as failure:
        print(f"FAIL: {failure}", file=sys.stderr, flush=True)
        sys.exit(1)
    except TimeoutError:
        print("FAIL: timed out", file=sys.stderr, flush=True)
        sys.exit(1)
