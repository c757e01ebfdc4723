"""A notes server written with the official MCP Python SDK (mcp==2.3.0, its `MCPServer`),
served over stdio: the Python upstream that `examples/gateway.rs` mounts.

Usage: python notes_upstream.py [--http PORT]

With `--http PORT` it serves Streamable HTTP at http://127.0.0.1:PORT/mcp instead (SSE answers,
sessions), and prints "serving on PORT" to stderr once it listens.

Environment:
  NOTES_LOG       a file to which each `add_note` appends one line with its text, so that a
                  test can count how many times a call reached this server (default: none)
  NOTES_PID_FILE  a file this process writes its pid to on start, so that a test can kill it
                  (default: none)
"""

from __future__ import annotations

import os
import sys

from mcp.server.mcpserver import MCPServer
from mcp.types import ToolAnnotations

server = MCPServer("notes", version="1.0.0")
notes: dict[int, str] = {1: "the first note"}


@server.tool(annotations=ToolAnnotations(readOnlyHint=True))
def read_note(id: int) -> str:
    """Read the note with this id."""
    if id not in notes:
        raise ValueError(f"no note has id {id}")
    return notes[id]


@server.tool(annotations=ToolAnnotations(readOnlyHint=False, destructiveHint=True))
def add_note(text: str) -> str:
    """Add a note; returns its id."""
    log = os.environ.get("NOTES_LOG")
    if log:
        with open(log, "a", encoding="utf-8") as out:
            out.write(text + "\n")
    note_id = max(notes) + 1
    notes[note_id] = text
    return f"note {note_id} added"


@server.tool(annotations=ToolAnnotations(readOnlyHint=True))
def shout(text: str) -> str:
    """Repeat the text in capitals."""
    return text.upper()


if __name__ == "__main__":
    pid_file = os.environ.get("NOTES_PID_FILE")
    if pid_file:
        with open(pid_file, "w", encoding="utf-8") as out:
            out.write(str(os.getpid()))
    if len(sys.argv) == 3 and sys.argv[1] == "--http":
        port = int(sys.argv[2])
        print(f"serving on {port}", file=sys.stderr, flush=True)
        server.run("streamable-http", port=port)
    else:
        server.run("stdio")
