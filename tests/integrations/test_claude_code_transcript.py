"""Claude's transcript (a real one, from Claude Code 2.1.331) becomes the run's timeline, read incrementally."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from reviewer_app.integrations.claude_code.transcript import first_prompt, read_new
from tests.integrations.hook_helpers import DATA

SESSION = "2ff3b57f-99fc-488c-b18d-8174f5bace81"
PROMPT = "ec0974fe-475a-4083-80b1-ed5c6f69813c"


def test_blocks_from_a_real_transcript_and_incremental_reads(tmp_path: Path) -> None:
    transcript = tmp_path / "t.jsonl"
    lines = (DATA / "claude_transcript.jsonl").read_bytes().splitlines(keepends=True)
    split = next(i for i, line in enumerate(lines) if b'"toolUseResult"' in line)
    transcript.write_bytes(b"".join(lines[:split]) + b'{"type": "user", "partial')  # a line still being written
    state = tmp_path / "state"

    with read_new(transcript, SESSION, state) as chunk:
        kinds = [(b.kind, b.op, b.data.get("role")) for b in chunk.blocks]
    assert kinds == [
        ("text", "apply", "user"),
        ("thinking", "apply", None),
        ("text", "apply", "assistant"),
        ("tool_use", "apply", None),
    ]
    assert chunk.run_titles == {PROMPT: "please append a marker"}
    assert all(b.invocation_id == PROMPT for b in chunk.blocks)
    tool = chunk.blocks[3]
    assert tool.data["name"] == "Bash" and tool.data["arguments"]["description"] == "append"

    with read_new(transcript, SESSION, state) as chunk:
        assert chunk.blocks == []  # nothing new; the partial line waits

    shutil.copy(DATA / "claude_transcript.jsonl", transcript)
    with read_new(transcript, SESSION, state) as chunk:
        result, answer = chunk.blocks[0], chunk.blocks[-1]
    assert result.kind == "tool_use" and result.op == "patch" and result.block_id == tool.block_id
    assert result.data["status"] == "error" and "needs approval" in result.data["result"]
    assert answer.data["role"] == "assistant" and answer.data["text"].startswith("Done.")
    assert all(b.invocation_id == PROMPT for b in chunk.blocks)  # assistant lines inherit the prompt's run
    assert first_prompt(transcript, PROMPT) == "please append a marker"


def test_hostile_lines_are_skipped(tmp_path: Path) -> None:
    transcript = tmp_path / "t.jsonl"
    junk = [
        b"not json",
        b"[]",
        b'{"type": "user", "message": "x"}',
        b'{"type": "assistant", "message": {"content": 5}}',
    ]
    good = json.dumps({"type": "user", "promptId": "p1", "uuid": "u", "message": {"role": "user", "content": "hi"}})
    transcript.write_bytes(b"\n".join([*junk, good.encode()]) + b"\n")
    with read_new(transcript, "s", tmp_path / "state") as chunk:
        assert [b.data["text"] for b in chunk.blocks] == ["hi"]
