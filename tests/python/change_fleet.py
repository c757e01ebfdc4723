"""The official MCP Python SDK (mcp==2.3.0) subscribes on one replica of a fleet
(examples/fleet.rs, three replicas on one Redis behind nginx) while changes are made
through the others.

Usage: python change_fleet.py SUBSCRIBED_URL CHANGED_URL PROXY_URL

Run by tests/fleet/changes.rs. Two subscribers on the replica at SUBSCRIBED_URL:
  - a session of a client before 2026-07-28 (`initialize`, then `resources/subscribe` to
    `stock://apples`), whose notifications are counted as they arrive;
  - a 2026-07-28 client (`mcp.Client`, mode "auto") with a `subscriptions/listen` stream for
    `stock://apples`.
Then `restock` is called CHANGES times (default 1000) on the replica at CHANGED_URL, one
change at a time: each subscriber is told of each, once, and the time from the call sent to
each notification is printed (median and p99; no limit is checked, it is a measurement).
Then 30 restocks through the proxy (which spreads them over every replica), each told once
to each; a restock of `stock://pears`, which neither subscribed to, is told to neither.

Prints one "ok: ..." line per check; on the first failure prints "FAIL: ..." to stderr and
exits 1. Every wait is bounded.
"""

from __future__ import annotations

import os
import sys
import time
import warnings
from typing import Any

import anyio
from checks import STEP_TIMEOUT, CheckFailed, check, main, step
from mcp import Client, ClientSession, MCPDeprecationWarning
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.subscriptions import ResourceUpdated

# `resources/subscribe` is deprecated by 2026-07-28; the session here is of an earlier one.
warnings.filterwarnings("ignore", category=MCPDeprecationWarning)

APPLES = "stock://apples"
PROXIED = 30
RUN_TIMEOUT = 240.0


class Heard:
    """The notifications one subscriber received, with when each came."""

    def __init__(self) -> None:
        self.times: list[float] = []
        self.uris: list[str] = []

    def add(self, uri: str) -> None:
        self.times.append(time.perf_counter())
        self.uris.append(uri)

    async def count_reaches(self, count: int, what: str) -> None:
        try:
            with anyio.fail_after(STEP_TIMEOUT):
                while len(self.uris) < count:
                    await anyio.sleep(0.0005)
        except TimeoutError:
            raise CheckFailed(f"{what}: {len(self.uris)} notifications, expected {count}") from None


def percentile(samples: list[float], fraction: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


async def run(subscribed: str, changed: str, proxy: str) -> None:
    changes = int(os.environ.get("CHANGES", "1000"))
    legacy = Heard()
    listened = Heard()

    async def on_message(message: Any) -> None:
        root = getattr(message, "root", message)
        if getattr(root, "method", None) == "notifications/resources/updated":
            legacy.add(root.params.uri)

    async with (
        streamable_http_client(subscribed) as (read, write),
        ClientSession(read, write, message_handler=on_message) as session,
        Client(subscribed, mode="auto", read_timeout_seconds=STEP_TIMEOUT) as modern,
        Client(changed, mode="legacy", read_timeout_seconds=STEP_TIMEOUT) as changer,
        Client(proxy, mode="auto", read_timeout_seconds=STEP_TIMEOUT) as proxied,
    ):
        init = await step("initialize", session.initialize())
        resources = init.capabilities.resources
        check(resources is not None and resources.subscribe is True, "the replica offers resource subscriptions", resources)
        await step("resources/subscribe", session.subscribe_resource(APPLES))
        check(modern.protocol_version == "2026-07-28", "the second subscriber speaks 2026-07-28", modern.protocol_version)
        async with modern.listen(resource_subscriptions=[APPLES]) as subscription:
            check(
                list(subscription.honored.resource_subscriptions or []) == [APPLES],
                "subscriptions/listen: the replica accepts stock://apples",
                subscription.honored,
            )

            async def follow() -> None:
                async for event in subscription:
                    if isinstance(event, ResourceUpdated):
                        listened.add(event.uri)

            async with anyio.create_task_group() as group:
                group.start_soon(follow)
                sent: list[float] = []
                for index in range(changes):
                    sent.append(time.perf_counter())
                    result = await step("restock", changer.call_tool("restock", {"item": "apples"}))
                    if result.is_error:
                        raise CheckFailed(f"restock {index} failed: {result}")
                    await legacy.count_reaches(index + 1, f"the session after restock {index}")
                    await listened.count_reaches(index + 1, f"the listen stream after restock {index}")
                check(True, f"both subscribers on one replica heard each of {changes} restocks made on another")
                for name, heard in (("resources/subscribe", legacy), ("subscriptions/listen", listened)):
                    latencies = [(heard.times[i] - sent[i]) * 1000 for i in range(changes)]
                    print(
                        f"latency {name}: median {percentile(latencies, 0.5):.2f} ms, "
                        f"p99 {percentile(latencies, 0.99):.2f} ms over {changes} changes",
                        flush=True,
                    )

                # Neither subscribed to pears: the apples after it is the next thing heard.
                await step("restock pears", changer.call_tool("restock", {"item": "pears"}))
                for index in range(PROXIED):
                    await step("restock through the proxy", proxied.call_tool("restock", {"item": "apples"}))
                    await legacy.count_reaches(changes + index + 1, "the session, through the proxy")
                    await listened.count_reaches(changes + index + 1, "the listen stream, through the proxy")
                # Late duplicates would come now.
                await anyio.sleep(1.0)
                for name, heard in (("the session", legacy), ("the listen stream", listened)):
                    check(
                        len(heard.uris) == changes + PROXIED and set(heard.uris) == {APPLES},
                        f"{name} heard each of {changes + PROXIED} changes once, and nothing of pears",
                        (len(heard.uris), sorted(set(heard.uris))),
                    )
                group.cancel_scope.cancel()


if __name__ == "__main__":
    sys.exit(main("change_fleet.py SUBSCRIBED_URL CHANGED_URL PROXY_URL", run, arguments=3, timeout=RUN_TIMEOUT))
