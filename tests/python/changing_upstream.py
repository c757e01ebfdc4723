"""A stdio MCP server written with the official MCP Python SDK (its `MCPServer`) whose tools
change while it runs: the upstream that tests/clients/gateway.rs mounts to check that a
gateway lists an upstream's tools again (on `notifications/tools/list_changed`, and at an
interval).

Its tools:
  steady            answers "steady" (read-only)
  grow(name, notify=True, read_only=True, seconds=0)
                    adds a tool `name` that answers "<name> here" after `seconds`,
                    described "The tool <name>.", read-only unless `read_only` is false
  shrink(name, notify=True)  removes the tool `name`
With `notify`, the change is told with `notifications/tools/list_changed`; without it, only a
new `tools/list` shows it.

Usage: python changing_upstream.py [--http PORT]
With `--http PORT` it serves Streamable HTTP at http://127.0.0.1:PORT/mcp instead, and
declares `tools.listChanged` (the SDK does not by default): the notification, sent by the
SDK's own `send_tool_list_changed()` outside any request's answer, goes on the session's GET
stream.
"""

from __future__ import annotations

import sys

import anyio

from mcp.server.lowlevel.server import NotificationOptions
from mcp.server.mcpserver import Context, MCPServer
from mcp.types import ToolAnnotations

server = MCPServer("changing", version="1.0.0")
READ_ONLY = ToolAnnotations(readOnlyHint=True)
# Changing the tool list twice has the same effect as once.
IDEMPOTENT = ToolAnnotations(readOnlyHint=False, destructiveHint=False, idempotentHint=True)


@server.tool(annotations=READ_ONLY)
def steady() -> str:
    """Always here (until shrunk)."""
    return "steady"


def answering(name: str, seconds: float):
    async def tool() -> str:
        if seconds > 0:
            await anyio.sleep(seconds)
        return f"{name} here"

    return tool


@server.tool(annotations=IDEMPOTENT)
async def grow(
    name: str, ctx: Context, notify: bool = True, read_only: bool = True, seconds: float = 0
) -> str:
    """Add a tool named `name`."""
    annotations = READ_ONLY if read_only else ToolAnnotations(readOnlyHint=False, destructiveHint=True)
    server.add_tool(answering(name, seconds), name=name, description=f"The tool {name}.", annotations=annotations)
    if notify:
        await ctx.session.send_tool_list_changed()
    return f"{name} added"


@server.tool(annotations=IDEMPOTENT)
async def shrink(name: str, ctx: Context, notify: bool = True) -> str:
    """Remove the tool named `name`."""
    server.remove_tool(name)
    if notify:
        await ctx.session.send_tool_list_changed()
    return f"{name} removed"


def declare_tools_list_changed() -> None:
    """Makes `initialize` say `tools.listChanged: true`, as a server that sends it should."""
    lowlevel = server._lowlevel_server
    original = lowlevel.create_initialization_options

    def declaring(notification_options=None, *args, **kwargs):
        return original(NotificationOptions(tools_changed=True), *args, **kwargs)

    lowlevel.create_initialization_options = declaring


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--http":
        declare_tools_list_changed()
        server.run("streamable-http", port=int(sys.argv[2]))
    else:
        server.run("stdio")
