"""Tool search (issue 58) over stdio, with the official MCP Python SDK.

Usage: python tool_search_client.py PATH/TO/fusion-demo

Starts the demo with `--tool-search`: lists two tools, searches, calls a real tool
through `call_tool` and by its own name, and sends a search out of bounds.
Prints one "ok: ..." line per check; on the first failure prints "FAIL: ..." and exits 1.
Every wait is bounded.
"""

from __future__ import annotations

import os
import sys
from typing import Any

from checks import check, main, step
from mcp import ClientSession, StdioServerParameters, stdio_client


def texts(result: Any) -> str:
    return " ".join(block.text for block in result.content if getattr(block, "text", None) is not None)


async def call(session: ClientSession, tool: str, args: dict[str, Any]) -> Any:
    return await step(f"{tool} {args!r:.60}", session.call_tool(tool, args))


async def run(binary: str) -> None:
    env = dict(os.environ)
    env["DEMO_ROLE"] = "ADMIN"
    params = StdioServerParameters(command=binary, args=["--tool-search"], env=env)
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            await step("initialize", session.initialize())
            tools = (await step("tools/list", session.list_tools())).tools
            names = [tool.name for tool in tools]
            check(names == ["search_tools", "call_tool"], "two tools listed in place of the catalog", names)
            search_schema = tools[0].input_schema
            check(search_schema.get("required") == ["query"], "search_tools requires a query", search_schema)

            found = await call(session, "search_tools", {"query": "list users", "limit": 3})
            hits = (found.structured_content or {}).get("tools", [])
            check(not found.is_error and hits and hits[0]["name"] == "db_user", "a search finds db_user", found)
            schema = hits[0].get("inputSchema", {})
            check("find_many" in str(schema), "a hit carries its full input schema", schema)
            check("db_user" in texts(found), "the text names the hit", texts(found))

            health = await call(session, "search_tools", {"query": "health"})
            health_hits = [hit["name"] for hit in (health.structured_content or {}).get("tools", [])]
            check(health_hits[:1] == ["system"], "a search by an action's name finds its group", health_hits)

            through = await call(
                session, "call_tool", {"name": "db_user", "arguments": {"action": "find_many", "take": 2}}
            )
            check(not through.is_error, "call_tool calls a real tool", texts(through))
            rows = (through.structured_content or {}).get("result", [])
            check(len(rows) == 2, "call_tool returns the tool's own result", through.structured_content)

            direct = await call(session, "db_user", {"action": "find_many", "take": 2})
            check(not direct.is_error, "the tool stays callable by its own name", texts(direct))
            check(direct.structured_content == through.structured_content, "the same result either way", direct)

            bad = await call(session, "call_tool", {"name": "db_user", "arguments": {"action": "find_many", "take": 0}})
            check(bad.is_error and "take" in texts(bad), "the tool's validation answers through call_tool", texts(bad))

            unknown = await call(session, "call_tool", {"name": "nonexistent_tool"})
            check(unknown.is_error and "nonexistent_tool" in texts(unknown), "an unknown tool is an error", texts(unknown))

            long = await call(session, "search_tools", {"query": "a" * 5000})
            check(long.is_error and "1024" in texts(long), "an overlong query is a clear error", texts(long))

            huge = await call(session, "search_tools", {"query": "user", "limit": 10**12})
            check(huge.is_error and "limit" in texts(huge), "a huge limit is a clear error", texts(huge))


if __name__ == "__main__":
    sys.exit(main("python tool_search_client.py PATH/TO/fusion-demo", run))
