"""Claude Code's transcript (JSONL) as timeline blocks: prompts, text, thinking, tool calls and their results.

Read incrementally: a cursor file per transcript remembers the byte offset of the last complete line read, and
a lock on it keeps the hooks of parallel tool calls from reading the same lines twice. Block ids derive from
Claude's own ids, so reading a line twice (a lost cursor) re-applies the same blocks and the folded timeline
does not change. Each user prompt is a run (its ``promptId``); the first prompt of a run is its title.
"""

from __future__ import annotations

import os
from contextlib import contextmanager, suppress
from pathlib import Path

from reviewer_app.domain.lean_json import dumps, loads
from reviewer_app.domain.sha import new as new_hash

TYPE_CHECKING = False  # no ``typing`` at run time: the hook's lean path copies the transcript with this module
if TYPE_CHECKING:
    from collections.abc import Iterator
    from typing import Any

MAX_READ_BYTES = 8 * 1024 * 1024
"""At most this much of the transcript per hook call; the rest is read by the next call."""
MAX_TEXT_CHARS = 20_000


class TimelineBlock:
    """One block to append: which run, which block (stable id), what kind, and how to apply it.

    A plain class, not a dataclass: the hook's lean path reads the transcript, and ``dataclasses`` costs it ~10 ms."""

    __slots__ = ("block_id", "data", "invocation_id", "kind", "op")

    def __init__(self, invocation_id: str, block_id: str, kind: str, op: str, data: dict[str, Any]) -> None:
        self.invocation_id = invocation_id
        self.block_id = block_id
        self.kind = kind
        self.op = op
        self.data = data


class TranscriptChunk:
    """What one read found: blocks in order, and each new run's first prompt (its title)."""

    __slots__ = ("blocks", "run_titles")

    def __init__(self) -> None:
        self.blocks: list[TimelineBlock] = []
        self.run_titles: dict[str, str] = {}


def _block_id(*parts: str) -> str:
    return "cc_" + str(new_hash("sha256", "\x1f".join(parts).encode("utf-8")).hexdigest())[:24]


def tool_block_id(session_id: str, call_id: str) -> str:
    """The timeline block of one of Claude's tool calls: its call, its result and its PostToolUse all patch it."""
    return _block_id(session_id, "tool", call_id)


def _clip(text: str) -> str:
    return text if len(text) <= MAX_TEXT_CHARS else text[:MAX_TEXT_CHARS] + f"… ({len(text):,} characters)"


def _result_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(str(part.get("text", "")) for part in content if isinstance(part, dict))
    return "" if content is None else dumps(content, ensure_ascii=False)


def _json_line(line: bytes) -> Any:
    """``json.loads(line)``, without importing ``json`` for a UTF-8 line (which json decodes so, surrogates passed):
    the hook's lean path copies the transcript."""
    if line.startswith(b"\xef\xbb\xbf") or b"\x00" in line[:4]:  # a BOM, UTF-16 or UTF-32: json tells which
        import json

        return json.loads(line)
    return loads(line.decode("utf-8", "surrogatepass"))


class TranscriptParser:
    """Turns transcript lines into blocks; remembers the current run across lines (assistant lines name none)."""

    def __init__(self, session_id: str, current_run: str | None = None) -> None:
        self.session_id = session_id
        self.current_run = current_run

    def feed(self, line: bytes, chunk: TranscriptChunk) -> None:
        try:
            entry = _json_line(line)
        except (ValueError, RecursionError):  # json's errors, undecodable bytes, a number or nesting json refuses
            return  # a line Claude is still writing, or not ours to understand: skip it
        if not isinstance(entry, dict) or entry.get("isSidechain"):
            return
        kind = entry.get("type")
        message = entry.get("message")
        if kind not in ("user", "assistant") or not isinstance(message, dict):
            return
        prompt_id = entry.get("promptId")
        if isinstance(prompt_id, str) and prompt_id:
            self.current_run = prompt_id
        run = self.current_run or self.session_id
        uuid = str(entry.get("uuid") or "")
        content = message.get("content")
        if kind == "user":
            self._user(run, uuid, entry, content, chunk)
        else:
            self._assistant(run, uuid, content, chunk)

    def _user(self, run: str, uuid: str, entry: dict[str, Any], content: Any, chunk: TranscriptChunk) -> None:
        if entry.get("isMeta"):
            return
        if isinstance(content, str):
            texts = [content]
        elif isinstance(content, list):
            texts = []
            for part in content:
                if not isinstance(part, dict):
                    continue
                if part.get("type") == "tool_result":
                    call_id = str(part.get("tool_use_id") or "")
                    status = "error" if part.get("is_error") else "success"
                    chunk.blocks.append(
                        TimelineBlock(
                            run,
                            tool_block_id(self.session_id, call_id),
                            "tool_use",
                            "patch",
                            {"status": status, "result": _clip(_result_text(part.get("content")))},
                        )
                    )
                elif part.get("type") == "text" and isinstance(part.get("text"), str):
                    texts.append(part["text"])
        else:
            return
        text = "\n".join(texts).strip()
        if not text or text.startswith("<system-reminder>"):
            return
        chunk.run_titles.setdefault(run, text[:500])
        chunk.blocks.append(
            TimelineBlock(
                run, _block_id(self.session_id, "user", uuid), "text", "apply", {"role": "user", "text": _clip(text)}
            )
        )

    def _assistant(self, run: str, uuid: str, content: Any, chunk: TranscriptChunk) -> None:
        if not isinstance(content, list):
            return
        data: dict[str, Any]
        for index, part in enumerate(content):
            if not isinstance(part, dict):
                continue
            kind = part.get("type")
            block_id = _block_id(self.session_id, "assistant", uuid, str(index))
            if kind == "text" and isinstance(part.get("text"), str) and part["text"].strip():
                data = {"role": "assistant", "text": _clip(part["text"])}
                chunk.blocks.append(TimelineBlock(run, block_id, "text", "apply", data))
            elif kind == "thinking" and isinstance(part.get("thinking"), str) and part["thinking"].strip():
                chunk.blocks.append(
                    TimelineBlock(run, block_id, "thinking", "apply", {"thinking": _clip(part["thinking"])})
                )
            elif kind == "tool_use":
                call_id = str(part.get("id") or "")
                data = {
                    "name": part.get("name"),
                    "call_id": call_id,
                    "arguments": part.get("input"),
                    "status": "pending",
                }
                chunk.blocks.append(
                    TimelineBlock(run, tool_block_id(self.session_id, call_id), "tool_use", "apply", data)
                )


def cursor_path(state_dir: Path, transcript: Path) -> Path:
    digest = str(new_hash("sha256", str(transcript).encode("utf-8")).hexdigest())[:32]
    return state_dir / f"{digest}.cursor"


@contextmanager
def _locked(path: Path) -> Iterator[Any]:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a+", encoding="utf-8") as handle:
        try:
            import fcntl

            fcntl.flock(handle, fcntl.LOCK_EX)
        except ImportError:  # pragma: no cover - Windows: no lock; stable block ids keep re-reads harmless
            pass
        yield handle


@contextmanager
def read_new(transcript: Path, session_id: str, state_dir: Path) -> Iterator[TranscriptChunk]:
    """Yield the blocks of the lines added since the last call, then advance the cursor (under its lock).

    Use as a context: the cursor moves only after the caller has stored what it was given, so a crash in
    between re-reads those lines next time instead of losing them.
    """
    with _locked(cursor_path(state_dir, transcript)) as cursor:
        cursor.seek(0)
        try:
            state = loads(cursor.read() or "{}")
        except ValueError:
            state = {}
        if not isinstance(state, dict):
            state = {}
        offset = int(state.get("offset") or 0)
        try:
            size = transcript.stat().st_size
        except OSError:
            yield TranscriptChunk()
            return
        if size < offset:  # the file was replaced or truncated: start over
            offset = 0
            state = {}
        chunk = TranscriptChunk()
        parser = TranscriptParser(session_id, state.get("run"))
        with open(transcript, "rb") as source:
            source.seek(offset)
            data = source.read(MAX_READ_BYTES)
        end = data.rfind(b"\n") + 1  # only complete lines; a line being written waits for the next call
        for line in data[:end].splitlines():
            if line.strip():
                parser.feed(line, chunk)
        yield chunk
        cursor.seek(0)
        cursor.truncate()
        cursor.write(dumps({"offset": offset + end, "run": parser.current_run, "path": str(transcript)}))
        cursor.flush()
        with suppress(OSError):
            os.fsync(cursor.fileno())


def first_prompt(transcript: Path, run_id: str, *, limit: int = 4 * 1024 * 1024) -> str | None:
    """The prompt that started run ``run_id`` (its title), from the start of the transcript."""
    chunk = TranscriptChunk()
    parser = TranscriptParser("", None)
    try:
        with open(transcript, "rb") as source:
            for line in source:
                if source.tell() > limit:
                    break
                if b'"promptId"' in line and run_id.encode() in line:
                    parser.feed(line, chunk)
                    if run_id in chunk.run_titles:
                        return chunk.run_titles[run_id]
    except OSError:
        return None
    return None
