"""A stdio MCP server written with the official MCP Python SDK (its `MCPServer`) whose tools
change while it runs: the upstream that tests/clients/gateway.rs mounts to check that a
gateway lists an upstream's tools again (on `notifications/tools/list_changed`, and at an
interval).

Its tools:
  steady            answers "steady" (read-only)
  grow(name, notify=True, read_only=True)
                    adds a tool `name` that answers "<name> here", described
                    "The tool <name>.", read-only unless `read_only` is false
  shrink(name, notify=True)  removes the tool `name`
With `notify`, the change is told with `notifications/tools/list_changed`; without it, only a
new `tools/list` shows it.
"""

from __future__ import annotations

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


def answering(name: str):
    def tool() -> str:
        return f"{name} here"

    return tool


@server.tool(annotations=IDEMPOTENT)
async def grow(name: str, ctx: Context, notify: bool = True, read_only: bool = True) -> str:
    """Add a tool named `name`."""
    annotations = READ_ONLY if read_only else ToolAnnotations(readOnlyHint=False, destructiveHint=True)
    server.add_tool(answering(name), name=name, description=f"The tool {name}.", annotations=annotations)
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


if __name__ == "__main__":
    server.run("stdio")
