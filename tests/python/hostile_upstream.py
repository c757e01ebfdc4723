"""An MCP server over stdio that misbehaves on purpose, one way per tool: the upstream of
tests/hostile/upstream.rs. Plain JSON-RPC lines, the standard library only.

Usage: python hostile_upstream.py

Tools: `ok` (echoes `text`), `steps` (three progress notifications on the request's
progressToken, then the answer; not misbehaving: the progress a gateway passes on), `hang` (never answers), `flood` (200,000 notifications, then
the answer), `huge` (a 50 MB result), `wrong_id` (answers another id), `garbage` (a line
that is not JSON, then an answer with neither result nor error), `sampling` (asks the
client for sampling, then says what came back), `die` (exits mid-call), `churn` (100,000
`notifications/tools/list_changed`, then the answer), `listings` (how many `tools/list`
requests it was sent).
"""

from __future__ import annotations

import json
import os
import sys

TOOLS = ["ok", "hang", "flood", "huge", "wrong_id", "garbage", "sampling", "die", "steps", "churn", "listings"]
READ_ONLY = {"ok", "hang", "flood", "huge", "wrong_id", "garbage", "sampling", "steps", "churn", "listings"}
listings = 0


def send(message: dict) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def answer(request_id, text: str) -> None:
    send({"jsonrpc": "2.0", "id": request_id, "result": {"content": [{"type": "text", "text": text}]}})


def tool(name: str) -> dict:
    return {
        "name": name,
        "description": f"misbehaves: {name}",
        "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}},
        "annotations": {"readOnlyHint": name in READ_ONLY},
    }


def call(request_id, name: str, arguments: dict, meta: dict) -> None:
    if name == "steps":
        token = meta.get("progressToken")
        for step in (1, 2, 3):
            if token is not None:
                send({"jsonrpc": "2.0", "method": "notifications/progress",
                      "params": {"progressToken": token, "progress": step, "total": 3, "message": f"step {step}"}})
        answer(request_id, "three steps" if token is not None else "no progress token")
    elif name == "ok":
        answer(request_id, arguments.get("text", "ok"))
    elif name == "hang":
        pass
    elif name == "flood":
        note = json.dumps({"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "info", "data": "x" * 100}})
        sys.stdout.write((note + "\n") * 200_000)
        answer(request_id, "flooded")
    elif name == "huge":
        answer(request_id, "y" * (50 * 1024 * 1024))
    elif name == "wrong_id":
        answer(request_id + 1000 if isinstance(request_id, int) else "other", "to someone else")
    elif name == "garbage":
        sys.stdout.write("this is not JSON {{{\n")
        send({"jsonrpc": "2.0", "id": request_id})
    elif name == "sampling":
        send({"jsonrpc": "2.0", "id": "ask-1", "method": "sampling/createMessage", "params": {"messages": [], "maxTokens": 1}})
        reply = json.loads(sys.stdin.readline())
        code = reply.get("error", {}).get("code")
        answer(request_id, f"sampling answered with error {code}")
    elif name == "die":
        os._exit(3)
    elif name == "churn":
        note = json.dumps({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})
        sys.stdout.write((note + "\n") * 100_000)
        answer(request_id, "churned")
    elif name == "listings":
        answer(request_id, str(listings))


def main() -> None:
    for line in sys.stdin:
        if not line.strip():
            continue
        message = json.loads(line)
        method = message.get("method")
        request_id = message.get("id")
        if method == "initialize":
            send({"jsonrpc": "2.0", "id": request_id, "result": {
                "protocolVersion": "2025-11-25",
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "hostile", "version": "1"},
            }})
        elif method == "tools/list":
            global listings
            listings += 1
            send({"jsonrpc": "2.0", "id": request_id, "result": {"tools": [tool(name) for name in TOOLS]}})
        elif method == "tools/call":
            params = message.get("params", {})
            call(request_id, params.get("name"), params.get("arguments") or {}, params.get("_meta") or {})
        elif method == "ping":
            send({"jsonrpc": "2.0", "id": request_id, "result": {}})


if __name__ == "__main__":
    main()
