// Drive the conformance example with the official MCP TypeScript SDK client
// (@modelcontextprotocol/sdk, pinned in package.json) over Streamable HTTP, as a client
// that declares roots, sampling and elicitation, as Claude Desktop, VS Code and Cursor do.
//
// Usage: node http_client.mjs URL
//
// Run by tests/clients/typescript_client.rs from the directory it installed the SDK into.
// Checks that a tool can ask the client mid-call (sampling, elicitation, roots) and gets the
// answer, that progress reaches the caller, that calls asking at once each get their own
// answer, and that a client's refusal is the tool's error, not a hang.
// Prints one "ok: ..." line per check and "ok: all checks passed" at the end; on the first
// failure prints "FAIL: ..." to stderr and exits 1. Every wait is bounded.

import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import {
  CreateMessageRequestSchema,
  ElicitRequestSchema,
  ListRootsRequestSchema,
} from "@modelcontextprotocol/sdk/types.js";
import { check, fail } from "./checks.mjs";

const STEP_TIMEOUT_MS = 20_000;

async function step(what, promise) {
  let timer;
  const timeout = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out after ${STEP_TIMEOUT_MS} ms`)), STEP_TIMEOUT_MS);
  });
  try {
    return await Promise.race([promise, timeout]);
  } catch (error) {
    fail(`${what}: ${error?.stack ?? error}`);
  } finally {
    clearTimeout(timer);
  }
}

const textOf = (result) =>
  (result?.content ?? []).filter((block) => block.type === "text").map((block) => block.text).join("\n");

async function main() {
  const url = process.argv[2];
  if (!url) fail("usage: node http_client.mjs URL");

  const sampled = [];
  const elicited = [];
  let refuseSampling = false;
  const client = new Client(
    { name: "fusion-ts-test", version: "0.0.0" },
    { capabilities: { roots: { listChanged: true }, sampling: {}, elicitation: {} } },
  );
  client.setRequestHandler(CreateMessageRequestSchema, async (request) => {
    const prompt = request.params.messages[0]?.content?.text ?? "";
    sampled.push(prompt);
    if (refuseSampling) throw new Error("the user said no");
    // A short wait: the calls asking at once answer out of order.
    await new Promise((resolve) => setTimeout(resolve, 5 + (prompt.length % 7) * 3));
    return { role: "assistant", content: { type: "text", text: `answer to ${prompt}` }, model: "test-model" };
  });
  client.setRequestHandler(ElicitRequestSchema, async (request) => {
    elicited.push(request.params.message);
    return { action: "accept", content: { username: "ada", email: "ada@example.com" } };
  });
  client.setRequestHandler(ListRootsRequestSchema, async () => ({
    roots: [{ uri: "file:///work", name: "work" }],
  }));

  const transport = new StreamableHTTPClientTransport(new URL(url));
  await step("connect", client.connect(transport));
  check(typeof transport.sessionId === "string" && transport.sessionId.length > 0, "a session was opened", transport.sessionId);

  let result = await step("a call that asks nothing", client.callTool({ name: "test_simple_text", arguments: {} }));
  check(!result.isError && textOf(result) === "This is a simple text response for testing.", "a call that asks nothing is answered", result);

  result = await step("sampling", client.callTool({ name: "test_sampling", arguments: { prompt: "the capital?" } }));
  check(
    !result.isError && textOf(result) === "LLM response: answer to the capital?" && sampled.includes("the capital?"),
    "a tool asks the client's model mid-call and gets its answer",
    { result, sampled },
  );

  result = await step("elicitation", client.callTool({ name: "test_elicitation", arguments: { message: "who are you?" } }));
  check(
    !result.isError && textOf(result).includes("action=accept") && textOf(result).includes("ada@example.com") && elicited.includes("who are you?"),
    "a tool asks the user mid-call and gets the form back",
    { result, elicited },
  );

  result = await step("roots", client.callTool({ name: "test_input_required_result_list_roots", arguments: {} }));
  check(!result.isError && textOf(result) === "The client's roots: file:///work", "a tool lists the client's roots mid-call", result);

  const progress = [];
  result = await step(
    "progress",
    client.callTool({ name: "test_tool_with_progress", arguments: {} }, undefined, {
      onprogress: (update) => progress.push(update.progress),
    }),
  );
  check(!result.isError && JSON.stringify(progress) === "[0,50,100]", "progress 0, 50, 100 reaches the caller before the answer", { result, progress });

  const prompts = Array.from({ length: 8 }, (_, index) => `question ${index} ${"?".repeat(index)}`);
  const answers = await step(
    "calls asking at once",
    Promise.all(prompts.map((prompt) => client.callTool({ name: "test_sampling", arguments: { prompt } }))),
  );
  check(
    answers.every((answer, index) => !answer.isError && textOf(answer) === `LLM response: answer to ${prompts[index]}`),
    "eight calls asking at once each get their own answer",
    answers.map(textOf),
  );

  refuseSampling = true;
  result = await step("a refused question", client.callTool({ name: "test_sampling", arguments: { prompt: "refuse me" } }));
  check(
    result.isError === true && textOf(result).includes("the user said no"),
    "the client's error answer is the tool's error, with its message",
    result,
  );
  refuseSampling = false;

  result = await step("after the refusal", client.callTool({ name: "test_sampling", arguments: { prompt: "again" } }));
  check(!result.isError && textOf(result) === "LLM response: answer to again", "the session serves on after a refusal", result);

  await step("close", transport.terminateSession().then(() => client.close()));
  console.log("ok: all checks passed");
}

main().catch((error) => fail(`unexpected: ${error?.stack ?? error}`));
