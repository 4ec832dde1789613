"""ScriptedModel and model_from_config: the model the demo, the tests and the benchmarks run on."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from reviewer_app.runtime.llm_clients import (
    ModelTurn,
    ScriptedModel,
    ToolCall,
    model_from_config,
)
from reviewer_app.runtime.openai_client import OpenAICompatibleModel

SCRIPT: list[dict[str, Any]] = [
    {
        "thinking": "The user wants a file.",
        "text": "I will write the file.",
        "tool_calls": [
            {"name": "write_file", "args": {"path": "a.txt", "content": "hello"}},
            {"name": "read_file", "args": {"path": "a.txt"}},
        ],
    },
    {"text": "Now I run it.", "tool_calls": [{"name": "run_shell", "args": {"command": "cat a.txt"}}]},
    {"text": "All written."},
]


def conversation(assistant_turns: int) -> list[dict[str, Any]]:
    """A conversation as the runner would rebuild it from a checkpoint: n assistant turns plus tool results."""
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": "You are a test agent."},
        {"role": "user", "content": "Write a.txt"},
    ]
    for n in range(assistant_turns):
        messages.append(
            {
                "role": "assistant",
                "content": None,
                "thinking": "x",
                "tool_calls": [
                    {"id": f"call_{n}_0", "type": "function", "function": {"name": "read_file", "arguments": "{}"}}
                ],
            }
        )
        messages.append({"role": "tool", "tool_call_id": f"call_{n}_0", "content": "ok"})
        # Reviewer guidance arrives as a user message; it must not shift the turn index.
        messages.append({"role": "user", "content": "Reviewer guidance: be careful"})
    return messages


@pytest.mark.asyncio
async def test_turns_follow_the_number_of_assistant_messages() -> None:
    model = ScriptedModel(SCRIPT)
    first = await model.complete(conversation(0), [])
    assert first.text == "I will write the file."
    assert first.thinking == "The user wants a file."
    assert first.tool_calls == (
        ToolCall(id="call_0_0", name="write_file", arguments={"path": "a.txt", "content": "hello"}),
        ToolCall(id="call_0_1", name="read_file", arguments={"path": "a.txt"}),
    )
    # Asking again with the same conversation plays the same turn: the model keeps no hidden position.
    assert await model.complete(conversation(0), []) == first

    # A brand-new instance (as after a crash) given a rebuilt conversation continues at the right turn.
    resumed = ScriptedModel(SCRIPT)
    second = await resumed.complete(conversation(1), [])
    assert second == ModelTurn(
        text="Now I run it.",
        tool_calls=(ToolCall(id="call_1_0", name="run_shell", arguments={"command": "cat a.txt"}),),
    )
    third = await resumed.complete(conversation(2), [])
    assert third == ModelTurn(text="All written.")


@pytest.mark.asyncio
async def test_final_text_after_the_script() -> None:
    model = ScriptedModel(SCRIPT, final_text="Finished here.")
    for n in (3, 4, 10):
        assert await model.complete(conversation(n), []) == ModelTurn(text="Finished here.")
    assert await ScriptedModel([]).complete(conversation(0), []) == ModelTurn(text="Done.")


@pytest.mark.asyncio
async def test_returned_arguments_are_copies() -> None:
    model = ScriptedModel(SCRIPT)
    turn = await model.complete([], [])
    turn.tool_calls[0].arguments["content"] = "changed"
    again = await model.complete([], [])
    assert again.tool_calls[0].arguments == {"path": "a.txt", "content": "hello"}


@pytest.mark.asyncio
async def test_streams_thinking_then_text_in_chunks() -> None:
    model = ScriptedModel(SCRIPT)
    seen: list[tuple[str, str]] = []

    def on_delta(kind: str, delta: str) -> None:
        seen.append((kind, delta))

    turn = await model.complete([], [], on_delta=on_delta)
    kinds = [k for k, _ in seen]
    assert kinds == sorted(kinds, key=lambda k: k != "thinking"), "thinking streams before text"
    assert "".join(d for k, d in seen if k == "thinking") == turn.thinking
    assert "".join(d for k, d in seen if k == "text") == turn.text
    assert sum(1 for k in kinds if k == "text") > 1, "text arrives in several deltas"

    # Async callbacks are awaited, and the final text streams too.
    async_seen: list[str] = []

    async def on_delta_async(kind: str, delta: str) -> None:
        async_seen.append(delta)

    final = await model.complete(conversation(5), [], on_delta=on_delta_async)
    assert "".join(async_seen) == final.text == "Done."


@pytest.mark.asyncio
async def test_delay_ms_sleeps() -> None:
    model = ScriptedModel([{"text": "slow", "delay_ms": 80}])
    started = time.monotonic()
    await model.complete([], [])
    assert time.monotonic() - started >= 0.07


def test_from_file_json_and_yaml(tmp_path: Path) -> None:
    json_path = tmp_path / "script.json"
    json_path.write_text(json.dumps(SCRIPT), encoding="utf-8")
    yaml_path = tmp_path / "script.yaml"
    yaml_path.write_text(
        "turns:\n"
        "  - text: I will write the file.\n"
        "    tool_calls:\n"
        "      - name: write_file\n"
        "        args: {path: a.txt, content: hello}\n"
        "final_text: Bye.\n",
        encoding="utf-8",
    )
    assert len(ScriptedModel.from_file(json_path)) == 3
    from_yaml = ScriptedModel.from_file(yaml_path)
    assert len(from_yaml) == 1
    assert from_yaml.final_text == "Bye."


@pytest.mark.asyncio
async def test_yaml_script_plays(tmp_path: Path) -> None:
    path = tmp_path / "s.yml"
    path.write_text("- tool_calls:\n    - {name: list_dir, args: {}}\n", encoding="utf-8")
    turn = await ScriptedModel.from_file(path).complete([], [])
    assert turn.tool_calls == (ToolCall(id="call_0_0", name="list_dir", arguments={}),)


@pytest.mark.parametrize(
    ("script", "fragment"),
    [
        ([{"text": "ok"}, {"tool_calls": [{"name": "x", "args": "not a dict"}]}], "script turn 1, tool call 0"),
        ([{"text": "ok"}, {"text": "ok"}, {"tool_call": []}], "script turn 2: unknown key(s) 'tool_call'"),
        (["just a string"], "script turn 0: expected an object"),
        ([{"text": 5}], "script turn 0: 'text' must be a string"),
        ([{"tool_calls": [{"args": {}}]}], "script turn 0, tool call 0: 'name'"),
        ([{}], "script turn 0: empty turn"),
        ([{"text": "x", "delay_ms": -1}], "script turn 0: 'delay_ms'"),
    ],
)
def test_malformed_script_names_the_turn(script: list[Any], fragment: str) -> None:
    with pytest.raises(ValueError) as info:
        ScriptedModel(script)
    assert fragment in str(info.value)


def test_malformed_files_name_the_file(tmp_path: Path) -> None:
    bad_yaml = tmp_path / "bad.yaml"
    bad_yaml.write_text("- text: [unclosed\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"bad\.yaml"):
        ScriptedModel.from_file(bad_yaml)
    bad_turn = tmp_path / "turn.json"
    bad_turn.write_text(json.dumps([{"text": "a"}, {"tool_calls": "x"}]), encoding="utf-8")
    with pytest.raises(ValueError, match=r"turn\.json: script turn 1: 'tool_calls' must be a list"):
        ScriptedModel.from_file(bad_turn)
    with pytest.raises(ValueError, match="cannot read script"):
        ScriptedModel.from_file(tmp_path / "missing.json")
    with pytest.raises(ValueError, match="list of turns"):
        ScriptedModel.from_data("nope")


def test_model_from_config(tmp_path: Path) -> None:
    scripted = model_from_config({"type": "scripted", "script": SCRIPT, "final_text": "End."})
    assert isinstance(scripted, ScriptedModel)
    assert scripted.final_text == "End."
    path = tmp_path / "s.json"
    path.write_text(json.dumps(SCRIPT), encoding="utf-8")
    assert isinstance(model_from_config({"type": "scripted", "script": str(path)}), ScriptedModel)

    remote = model_from_config(
        {"type": "openai", "base_url": "http://127.0.0.1:1/v1/", "model": "m", "api_key_env": "X", "stream": False}
    )
    assert isinstance(remote, OpenAICompatibleModel)
    assert remote.url == "http://127.0.0.1:1/v1/chat/completions"
    assert remote.stream is False

    with pytest.raises(ValueError, match="unknown type 'llama'"):
        model_from_config({"type": "llama"})
    with pytest.raises(ValueError, match="'base_url' is required"):
        model_from_config({"type": "openai", "model": "m"})
    with pytest.raises(ValueError, match="unknown key"):
        model_from_config({"type": "openai", "base_url": "http://x", "model": "m", "api_ky": "k"})
    with pytest.raises(ValueError, match="'script'"):
        model_from_config({"type": "scripted"})
