"""A model that sends poison tool arguments gets an error result; the run goes on and everything stays readable.

The model is a real HTTP server on 127.0.0.1 speaking the OpenAI chat format (tests/runtime/test_openai_client).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from reviewer_app.domain.limits import is_undecodable
from reviewer_app.domain.records import RequestQuery
from reviewer_app.domain.timeline import BlockKind
from reviewer_app.hitl import SQLHITLBackend
from tests.runtime.test_openai_client import FakeOpenAI, completion, json_reply
from tests.runtime.test_runner_support import agent, messages, started_runtime, timeline, tool_results

pytestmark = pytest.mark.asyncio


@pytest.fixture
def server() -> Iterator[FakeOpenAI]:
    fake = FakeOpenAI()
    fake.thread.start()
    try:
        yield fake
    finally:
        fake.server.shutdown()
        fake.server.server_close()
        fake.thread.join(timeout=5)


def http_agent(server: FakeOpenAI, **options: object):  # type: ignore[no-untyped-def]
    spec = agent()
    model = {"type": "openai", "base_url": server.base_url, "model": "m", "stream": False, "max_retries": 0}
    model.update(options)
    return type(spec)(**{**spec.__dict__, "model": model})


def call(call_id: str, name: str, arguments_text: str) -> dict[str, object]:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments_text}}


async def test_poison_tool_arguments_become_an_error_result_for_the_model(
    backend: SQLHITLBackend, tmp_path: Path, server: FakeOpenAI
) -> None:
    deep_text = '{"path": "deep.txt", "content": "x", "extra": ' + '{"a": ' * 980 + "1" + "}" * 980 + "}"
    server.plan.append(
        json_reply(
            200,
            completion(
                "Trying odd arguments \ud800.",
                [
                    call("c1", "write_file", '{"path": "a\\ud800.txt", "content": "x"}'),
                    call("c2", "write_file", deep_text),
                    call("c3", "write_file", '{"path": "n.txt", "content": "x", "n": NaN}'),
                    call("c4", "list_dir", "{}"),
                ],
            ),
        )
    )
    server.plan.append(json_reply(200, completion("All done.")))
    async with started_runtime(backend, tmp_path, http_agent(server)) as runtime:
        inv = await runtime.start_run("tester", "go")
        done = await runtime.wait_for_run(inv, timeout=20)
    assert done.state == "done", done.error
    results = tool_results(await messages(backend, inv))
    assert results["c1"].startswith("error: tool arguments refused (no lone surrogates)"), results["c1"]
    assert results["c2"].startswith("error: tool arguments refused"), results["c2"]
    assert "deep" in results["c2"]
    assert results["c3"].startswith("error: tool arguments refused (finite numbers)"), results["c3"]
    assert not results["c4"].startswith("error"), results["c4"]  # the healthy sibling ran
    # The model was told, in the next request it received.
    told = {m.get("tool_call_id"): m["content"] for m in server.requests[1]["json"]["messages"] if m["role"] == "tool"}
    assert told["c1"] == results["c1"]
    assert await backend.list_records(RequestQuery()) == []  # nothing poison reached the inbox
    # Every stored event and the checkpoint read back as real data (no placeholder), and print as UTF-8.
    for event in await backend.events(inv):
        assert not is_undecodable(event.data), event
        json.dumps(event.data, ensure_ascii=False).encode("utf-8")
    json.dumps(await messages(backend, inv), ensure_ascii=False).encode("utf-8")
    texts = [b.data["text"] for b in await timeline(backend, inv) if b.kind is BlockKind.TEXT]
    assert texts[0] == "Trying odd arguments \ufffd."


async def test_a_prompt_or_script_that_cannot_be_stored_is_refused_before_any_write(
    backend: SQLHITLBackend, tmp_path: Path
) -> None:
    from reviewer_app.domain.limits import RequestRejected

    async with started_runtime(backend, tmp_path) as runtime:
        with pytest.raises(RequestRejected, match="surrogate"):
            await runtime.start_run("tester", "do \ud800 this")
        with pytest.raises(RequestRejected, match="surrogate"):
            await runtime.start_run("tester", "ok", script=[{"text": "\udfff"}])
    assert await backend.list_runs() == []
