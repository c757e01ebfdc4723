"""The official MCP Python SDK (mcp==2.3.0) drives examples/gateway.rs over Streamable HTTP,
while its upstreams die.

Usage: python gateway_client.py PHASE URL

Run by tests/clients/gateway.rs, in phases between which the test kills or restarts the
fusion upstream (`app`):
  load     a load on the notes upstream (the Python SDK's own server, over stdio) during
           which this script kills that process three times (its pid is in NOTES_PID_FILE):
           every read-only call answers (retried, or a cached answer), and no `add_note`
           reached the upstream twice (NOTES_LOG has each text at most once, and exactly
           once for each call that answered success);
  app-down the `app` upstream was killed: its calls fail with when to retry, and its tools
           leave tools/list while the notes' stay;
  app-up   waits (writing the file GATEWAY_WAITING) for the test to start it again: its tools
           come back, the session is told, and its calls answer.
Prints one "ok: ..." line per check; on the first failure prints "FAIL: ..." to stderr and
exits 1. Every wait is bounded.
"""

from __future__ import annotations

import os
import signal
import sys
from collections import Counter
from typing import Any

import anyio
from checks import STEP_TIMEOUT, check, main, step, text_of
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

WORKERS = 4
ROUNDS = 15
"""Each worker makes this many rounds of calls: 60 rounds in all."""

KILL_AT = (8, 24, 40)
"""The rounds (counted over all workers) at which the notes process is killed."""


def kill_notes_process() -> None:
    with open(os.environ["NOTES_PID_FILE"], encoding="utf-8") as pid_file:
        pid = int(pid_file.read().strip())
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


async def tool_names(session: ClientSession) -> set[str]:
    listed = await step("tools/list", session.list_tools())
    return {tool.name for tool in listed.tools}


async def load(session: ClientSession) -> None:
    names = await tool_names(session)
    check(
        {"notes_read_note", "notes_add_note", "notes_shout", "app_greet"} <= names,
        "tools/list: the notes' tools and the app's, under their prefixes",
        sorted(names),
    )
    round_number = 0
    reads_failed: list[str] = []
    added: dict[str, Any] = {}
    killed: list[int] = []

    async def worker(worker_id: int) -> None:
        nonlocal round_number
        for _ in range(ROUNDS):
            round_number += 1
            this_round = round_number
            if this_round in KILL_AT:
                kill_notes_process()
                killed.append(this_round)
            shout = await step("shout", session.call_tool("notes_shout", {"text": f"hello {this_round}"}))
            if shout.is_error or text_of(shout) != f"HELLO {this_round}":
                reads_failed.append(f"shout {this_round}: {text_of(shout)}")
            note = await step("read_note", session.call_tool("notes_read_note", {"id": 1}))
            if note.is_error or text_of(note) != "the first note":
                reads_failed.append(f"read_note {this_round}: {text_of(note)}")
            text = f"note-{this_round}"
            add = await step("add_note", session.call_tool("notes_add_note", {"text": text}))
            added[text] = add

    async with anyio.create_task_group() as group:
        for worker_id in range(WORKERS):
            group.start_soon(worker, worker_id)
    check(len(killed) == len(KILL_AT), f"the notes process was killed {len(KILL_AT)} times mid-load", killed)
    check(not reads_failed, "every read-only call answered while the upstream restarted", reads_failed)

    with open(os.environ["NOTES_LOG"], encoding="utf-8") as log:
        reached = Counter(line.strip() for line in log if line.strip())
    twice = {text: count for text, count in reached.items() if count > 1}
    check(not twice, "no add_note reached the upstream twice", twice)
    succeeded = [text for text, result in added.items() if not result.is_error]
    missing = [text for text in succeeded if reached[text] != 1]
    check(not missing, f"each of the {len(succeeded)} add_note calls that succeeded reached the upstream once", missing)
    failed = {text: text_of(result) for text, result in added.items() if result.is_error}
    unclear = {text: said for text, said in failed.items() if "may or may not" not in said and "Retry" not in said}
    check(not unclear, f"each of the {len(failed)} add_note calls that failed says so clearly", unclear)


LIST_CHANGED: list[str] = []
"""The `notifications/tools/list_changed` the session received."""


async def on_message(message: Any) -> None:
    method = getattr(message, "method", None) or getattr(getattr(message, "root", None), "method", None)
    if method == "notifications/tools/list_changed":
        LIST_CHANGED.append(method)


async def told_the_list_changed(what: str) -> None:
    with anyio.fail_after(STEP_TIMEOUT):
        while not LIST_CHANGED:
            await anyio.sleep(0.05)
    check(True, f"the session was told its tool list changed ({what})")


async def app_down(session: ClientSession) -> None:
    # Calls that fail open the app's breaker; each says when to retry.
    with anyio.fail_after(STEP_TIMEOUT):
        while "app_greet" in await tool_names(session):
            greeted = await step("app_greet", session.call_tool("app_greet", {"name": "Ann"}))
            said = text_of(greeted)
            check(greeted.is_error is True and "etry" in said, "a call to the dead upstream fails with when to retry", said)
    names = await tool_names(session)
    check(not any(name.startswith("app_") for name in names), "the dead upstream's tools left tools/list", sorted(names))
    check("notes_shout" in names, "the other upstream's tools stay listed", sorted(names))
    shout = await step("shout", session.call_tool("notes_shout", {"text": "still here"}))
    check(text_of(shout) == "STILL HERE", "the other upstream still answers", text_of(shout))
    await told_the_list_changed("an upstream went down")


async def app_up(session: ClientSession) -> None:
    names = await tool_names(session)
    check(not any(name.startswith("app_") for name in names), "before the restart, the dead upstream is not listed", sorted(names))
    # The test restarts the upstream once this file exists.
    with open(os.environ["GATEWAY_WAITING"], "w", encoding="utf-8") as waiting:
        waiting.write("waiting\n")
    with anyio.fail_after(STEP_TIMEOUT * 2):
        while "app_greet" not in await tool_names(session):
            await anyio.sleep(0.2)
    check(True, "the restarted upstream's tools are listed again")
    await told_the_list_changed("an upstream came back")
    greeted = await step("app_greet", session.call_tool("app_greet", {"name": "Ann"}))
    check(not greeted.is_error and "Ann" in text_of(greeted), "the restarted upstream answers", text_of(greeted))


async def grow(session: ClientSession) -> None:
    # The gateway mounts tests/python/changing_upstream.py as `notes`: a tool it adds reaches
    # this session as `notifications/tools/list_changed`, then in tools/list.
    names = await tool_names(session)
    check("notes_fresh" not in names, "before it is added, the tool is not listed", sorted(names))
    grown = await step("notes_grow", session.call_tool("notes_grow", {"name": "fresh"}))
    check(not grown.is_error, "the upstream adds a tool", text_of(grown))
    await told_the_list_changed("the upstream added a tool")
    with anyio.fail_after(STEP_TIMEOUT):
        while "notes_fresh" not in await tool_names(session):
            await anyio.sleep(0.1)
    check(True, "the added tool is listed")
    fresh = await step("notes_fresh", session.call_tool("notes_fresh", {}))
    check(text_of(fresh) == "fresh here", "the added tool answers", text_of(fresh))
    LIST_CHANGED.clear()
    shrunk = await step("notes_shrink", session.call_tool("notes_shrink", {"name": "fresh"}))
    check(not shrunk.is_error, "the upstream removes the tool", text_of(shrunk))
    await told_the_list_changed("the upstream removed a tool")
    with anyio.fail_after(STEP_TIMEOUT):
        while "notes_fresh" in await tool_names(session):
            await anyio.sleep(0.1)
    check(True, "the removed tool left tools/list")
    gone = await step("notes_fresh", session.call_tool("notes_fresh", {}))
    check(gone.is_error is True and "notes_fresh" in text_of(gone), "a call to the removed tool is a clear error", text_of(gone))


PHASES = {"load": load, "app-down": app_down, "app-up": app_up, "grow": grow}


async def run(url: str) -> None:
    async with streamable_http_client(url) as (read, write):
        async with ClientSession(read, write, message_handler=on_message) as session:
            init = await step("initialize", session.initialize())
            tools = init.capabilities.tools
            check(tools is not None and tools.list_changed is True, "the gateway declares tools.listChanged", tools)
            await PHASES[PHASE](session)


if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[1] not in PHASES:
        print(f"usage: gateway_client.py {{{'|'.join(PHASES)}}} URL", file=sys.stderr)
        sys.exit(2)
    PHASE = sys.argv.pop(1)
    sys.exit(main("gateway_client.py PHASE URL", run))
