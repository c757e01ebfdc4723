"""The demo's MCP Apps view (io.modelcontextprotocol/ui) on the wire, read by the official
MCP Python SDK (mcp==2.3.0) over stdio.

Usage: python app_view.py PATH/TO/fusion-demo

Run by tests/clients/python_client.rs with the venv that scripts/python-env creates. A
client that declares the extension sees `_meta.ui.resourceUri` on `db_user` (not on
`system`), reads the view (`text/html;profile=mcp-app`, the extension's `_meta.ui`), and a
`db_user` call's result carries the users in `structuredContent` beside the text the model
reads; a client that declares nothing sees no `_meta.ui`. Prints one "ok: ..." line per
check, and the `_meta.ui` objects as `tool-ui: {json}` and `resource-ui: {json}` lines (the
Rust test checks them against the extension's published schema); on the first failure prints
"FAIL: ..." to stderr and exits 1. Every wait is bounded.
"""

from __future__ import annotations

import json
import sys
from typing import Any

from checks import check, main, step
from mcp import ClientSession, StdioServerParameters, stdio_client

EXTENSION = "io.modelcontextprotocol/ui"
MIME = "text/html;profile=mcp-app"
VIEW = "ui://fusion-demo/users"


def ui_of(tool: Any) -> Any:
    return (tool.meta or {}).get("ui")


async def run(binary: str) -> None:
    params = StdioServerParameters(command=binary, args=[], env={"RUST_LOG": "warn", "DEMO_ROLE": "ADMIN"})
    extensions = {EXTENSION: {"mimeTypes": [MIME]}}
    async with stdio_client(params) as (read, write), ClientSession(read, write, extensions=extensions) as session:
        await step("initialize", session.initialize())
        tools = {tool.name: tool for tool in (await step("tools/list", session.list_tools())).tools}
        check(ui_of(tools["db_user"]) == {"resourceUri": VIEW}, "db_user links the view", ui_of(tools["db_user"]))
        check(ui_of(tools["system"]) is None, "system has no view", ui_of(tools["system"]))
        print("tool-ui: " + json.dumps(ui_of(tools["db_user"])), flush=True)

        listed = (await step("resources/list", session.list_resources())).resources
        check(any(str(r.uri) == VIEW and r.mime_type == MIME for r in listed), "the view is a listed resource", listed)
        read_result = await step("resources/read", session.read_resource(VIEW))
        content = read_result.contents[0]
        check(content.mime_type == MIME, "the view is served as an MCP App", content.mime_type)
        check("<!DOCTYPE html>" in content.text and "ui/initialize" in content.text, "the view is the app's HTML", content.text[:80])
        resource_ui = (content.meta or {}).get("ui")
        check(resource_ui == {"prefersBorder": True}, "the view's _meta.ui", resource_ui)
        print("resource-ui: " + json.dumps(resource_ui), flush=True)

        found = await step("db_user find_many", session.call_tool("db_user", {"action": "find_many", "take": 2}))
        users = (found.structured_content or {}).get("result")
        check(not found.is_error and isinstance(users, list) and len(users) == 2, "the view's data is structuredContent", found.structured_content)
        text = " ".join(block.text for block in found.content if getattr(block, "type", None) == "text")
        check(users[0]["name"] in text, "the model reads the users in the text", text)

    async with stdio_client(params) as (read, write), ClientSession(read, write) as plain:
        await step("initialize without the extension", plain.initialize())
        tools = (await step("tools/list", plain.list_tools())).tools
        check(all(ui_of(tool) is None for tool in tools), "a client without the extension sees no _meta.ui", [t.meta for t in tools])


if __name__ == "__main__":
    sys.exit(main("python app_view.py PATH/TO/fusion-demo", run))
