// A long call kept alive by fusion's heartbeat, with the official MCP TypeScript SDK client
// (@modelcontextprotocol/sdk, pinned in package.json) over Streamable HTTP.
//
// Usage: node heartbeat.mjs URL EXPECT
//
// Calls the faults example's `slow` tool for 3 s with a request timeout of 1.5 s that
// progress resets (`resetTimeoutOnProgress`), as hosts that honour progress do. EXPECT is
// `answered` (the server beats more often than the timeout: the call is answered) or
// `timed-out` (the server sends no heartbeat: the client gives up, as it does today).
// Prints one "ok: ..." line per check and "ok: all checks passed" at the end; on failure
// prints "FAIL: ..." to stderr and exits 1. Every wait is bounded.

import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { check, fail } from "./checks.mjs";

async function main() {
  const [url, expect] = process.argv.slice(2);
  if (!url || !["answered", "timed-out"].includes(expect)) fail("usage: node heartbeat.mjs URL answered|timed-out");
  const client = new Client({ name: "fusion-ts-heartbeat", version: "0.0.0" }, { capabilities: {} });
  await client.connect(new StreamableHTTPClientTransport(new URL(url)));
  const progress = [];
  let outcome;
  try {
    const result = await client.callTool({ name: "slow", arguments: { ms: 3000 } }, undefined, {
      timeout: 1500,
      resetTimeoutOnProgress: true,
      maxTotalTimeout: 20_000,
      onprogress: (update) => progress.push(update),
    });
    outcome = { answered: result };
  } catch (error) {
    outcome = { error: String(error?.message ?? error) };
  }
  if (expect === "answered") {
    check(outcome.answered && !outcome.answered.isError, "the 3 s call is answered past a 1.5 s timeout", outcome);
    check(progress.length >= 2, "heartbeats arrived while it ran", progress);
    check(progress.every((update) => update.message === "still working"), "each says the tool is still working", progress);
    check(
      progress.every((update, at) => at === 0 || update.progress > progress[at - 1].progress),
      "each value is greater than the last",
      progress,
    );
  } else {
    check(outcome.error && /timed out/i.test(outcome.error), "without a heartbeat the client gives up at its timeout", outcome);
    check(progress.length === 0, "and no progress arrived", progress);
  }
  await client.close();
  console.log("ok: all checks passed");
}

const watchdog = setTimeout(() => fail("the script ran over 30 s"), 30_000);
main()
  .then(() => clearTimeout(watchdog))
  .catch((error) => fail(`unexpected: ${error?.stack ?? error}`));
