"""The conformance example's tools ask their questions over stdio, answered by the official
MCP Python SDK (mcp==2.3.0) as a client that declares sampling, elicitation and roots.

Usage: python stdio_questions.py PATH/TO/conformance

Run by tests/clients/python_client.rs with the venv that scripts/python-env creates. A
`ClientSession` over `stdio_client(conformance --stdio)` with sampling, elicitation and roots
callbacks: each kind of question asked mid-call and its answer used, progress before the
answer, five calls asking at once each given their own answer, and a refused question as the
tool's error. Prints one "ok: ..." line per check; on the first failure prints "FAIL: ..." to
stderr and exits 1. Every wait is bounded.
"""

from __future__ import annotations

import sys
import tempfile
from typing import Any

import anyio
from checks import STEP_TIMEOUT, check, main, step, text_of
from mcp import ClientSession, StdioServerParameters, stdio_client, types

async def run(binary: str) -> None:
    sampled: list[str] = []
    refuse = {"sampling": False}

    async def on_sampling(context: Any, params: types.CreateMessageRequestParams) -> Any:
        prompt = params.messages[0].content.text
        sampled.append(prompt)
        if refuse["sampling"]:
            return types.ErrorData(code=-1, message="the user said no")
        # Answers out of order for the calls asking at once.
        await anyio.sleep(0.001 * (len(prompt) % 7))
        return types.CreateMessageResult(
            role="assistant",
            content=types.TextContent(type="text", text=f"answer to {prompt}"),
            model="test-model",
        )

    async def on_elicitation(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        return types.ElicitResult(action="accept", content={"username": "ada", "email": "ada@example.com"})

    async def on_roots(context: Any) -> types.ListRootsResult:
        return types.ListRootsResult(roots=[types.Root(uri="file:///work", name="work")])

    with tempfile.TemporaryFile(mode="w+") as errlog:
        params = StdioServerParameters(command=binary, args=["--stdio"], env={"RUST_LOG": "warn"})
        async with stdio_client(params, errlog=errlog) as (read, write):
            async with ClientSession(
                read,
                write,
                sampling_callback=on_sampling,
                elicitation_callback=on_elicitation,
                list_roots_callback=on_roots,
            ) as session:
                await step("initialize", session.initialize())

                r = await step("sampling", session.call_tool("test_sampling", {"prompt": "the capital?"}))
                check(
                    not r.is_error and text_of(r) == "LLM response: answer to the capital?",
                    "a tool asks the client's model mid-call and gets its answer",
                    r,
                )

                r = await step("elicitation", session.call_tool("test_elicitation", {"message": "who?"}))
                check(
                    not r.is_error and "action=accept" in text_of(r) and "ada@example.com" in text_of(r),
                    "a tool asks the user mid-call and gets the form back",
                    r,
                )

                r = await step("roots", session.call_tool("test_input_required_result_list_roots", {}))
                check(
                    not r.is_error and text_of(r) == "The client's roots: file:///work",
                    "a tool lists the client's roots mid-call",
                    r,
                )

                progress: list[float] = []

                async def on_progress(done: float, total: float | None, message: str | None) -> None:
                    progress.append(done)

                r = await step(
                    "progress",
                    session.call_tool("test_tool_with_progress", {}, progress_callback=on_progress),
                )
                check(not r.is_error and progress == [0, 50, 100], "progress 0, 50, 100 before the answer", progress)

                prompts = [f"question {n} {'?' * n}" for n in range(5)]
                answers: dict[str, str] = {}

                async def ask(prompt: str) -> None:
                    result = await session.call_tool("test_sampling", {"prompt": prompt})
                    answers[prompt] = text_of(result)

                with anyio.fail_after(STEP_TIMEOUT):
                    async with anyio.create_task_group() as group:
                        for prompt in prompts:
                            group.start_soon(ask, prompt)
                check(
                    all(answers.get(prompt) == f"LLM response: answer to {prompt}" for prompt in prompts),
                    "five calls asking at once each get their own answer",
                    answers,
                )

                refuse["sampling"] = True
                r = await step("a refused question", session.call_tool("test_sampling", {"prompt": "refuse me"}))
                check(r.is_error and "the user said no" in text_of(r), "a refused question is the tool's error", r)
                refuse["sampling"] = False
                r = await step("after the refusal", session.call_tool("test_sampling", {"prompt": "again"}))
                check(not r.is_error, "the session serves on after a refusal", r)


if __name__ == "__main__":
    sys.exit(main("python stdio_questions.py PATH/TO/conformance", run))
