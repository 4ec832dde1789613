"""LLM clients: what the runtime needs from one (``ModelClient``), the scripted client (demos, tests, benchmarks)
and :func:`model_from_config`, which builds it or the OpenAI-compatible HTTP client (``openai_client.py``).

Both speak the OpenAI chat format so a conversation saved in a checkpoint can be replayed against either.
"""

from __future__ import annotations

import asyncio
import inspect
import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

StreamCallback = Callable[[str, str], Awaitable[None] | None]
"""Receives ``(kind, delta)`` with kind ``"text"`` or ``"thinking"`` while a turn streams."""


class ModelError(Exception):
    """A model call failed for good (bad credentials, bad request, retries exhausted, malformed reply)."""


@dataclass(frozen=True)
class ToolCall:
    """One tool call the model asked for."""

    id: str
    name: str
    arguments: dict[str, Any]


@dataclass(frozen=True)
class ModelTurn:
    """One assistant turn: optional text and thinking, and the tool calls to run before the next turn."""

    text: str | None = None
    thinking: str | None = None
    tool_calls: tuple[ToolCall, ...] = ()


class ModelClient(Protocol):
    """What the runner needs from a model: one assistant turn for a conversation."""

    async def complete(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]],
        *,
        on_delta: StreamCallback | None = None,
    ) -> ModelTurn: ...


async def emit_delta(on_delta: StreamCallback | None, kind: str, delta: str) -> None:
    """Call a sync or async stream callback."""
    if on_delta is None or not delta:
        return
    result = on_delta(kind, delta)
    if inspect.isawaitable(result):
        await result


# --------------------------------------------------------------------------------------------------------------
# Scripted model


_TURN_KEYS = frozenset({"text", "thinking", "tool_calls", "delay_ms"})
_CALL_KEYS = frozenset({"name", "args", "arguments"})


@dataclass(frozen=True)
class _ScriptTurn:
    text: str | None
    thinking: str | None
    calls: tuple[tuple[str, dict[str, Any]], ...]
    delay_ms: float


def _parse_turn(index: int, raw: Any) -> _ScriptTurn:
    """Check one script turn up front so a typo fails at load time, naming the turn, not mid-run."""
    where = f"script turn {index}"
    if not isinstance(raw, dict):
        raise ValueError(f"{where}: expected an object with text/thinking/tool_calls, got {type(raw).__name__}")
    unknown = sorted(set(raw) - _TURN_KEYS)
    if unknown:
        raise ValueError(f"{where}: unknown key(s) {', '.join(map(repr, unknown))}; allowed: {sorted(_TURN_KEYS)}")
    text = raw.get("text")
    thinking = raw.get("thinking")
    for key, value in (("text", text), ("thinking", thinking)):
        if value is not None and not isinstance(value, str):
            raise ValueError(f"{where}: '{key}' must be a string, got {type(value).__name__}")
    delay = raw.get("delay_ms", 0)
    if isinstance(delay, bool) or not isinstance(delay, int | float) or delay < 0:
        raise ValueError(f"{where}: 'delay_ms' must be a non-negative number, got {delay!r}")
    raw_calls = raw.get("tool_calls") or []
    if not isinstance(raw_calls, list):
        raise ValueError(f"{where}: 'tool_calls' must be a list, got {type(raw_calls).__name__}")
    calls: list[tuple[str, dict[str, Any]]] = []
    for i, call in enumerate(raw_calls):
        call_where = f"{where}, tool call {i}"
        if not isinstance(call, dict):
            raise ValueError(f"{call_where}: expected an object with 'name' and 'args', got {type(call).__name__}")
        unknown = sorted(set(call) - _CALL_KEYS)
        if unknown:
            raise ValueError(f"{call_where}: unknown key(s) {', '.join(map(repr, unknown))}; expected 'name', 'args'")
        name = call.get("name")
        if not isinstance(name, str) or not name:
            raise ValueError(f"{call_where}: 'name' must be a non-empty string")
        args = call.get("args", call.get("arguments", {}))
        if args is None:
            args = {}
        if not isinstance(args, dict):
            raise ValueError(f"{call_where}: 'args' must be an object, got {type(args).__name__}")
        try:
            args = json.loads(json.dumps(args))
        except (TypeError, ValueError) as exc:
            raise ValueError(f"{call_where}: 'args' must be JSON data: {exc}") from exc
        calls.append((name, args))
    if text is None and thinking is None and not calls:
        raise ValueError(f"{where}: empty turn (needs text, thinking or tool_calls)")
    return _ScriptTurn(text=text, thinking=thinking, calls=tuple(calls), delay_ms=float(delay))


def _chunks(text: str, parts: int = 3) -> list[str]:
    """Split text into a few pieces so scripted turns exercise the streaming path."""
    if len(text) <= parts:
        return [text]
    size = -(-len(text) // parts)
    return [text[i : i + size] for i in range(0, len(text), size)]


def read_script_file(path: str | Path) -> Any:
    """A script file's data: JSON for ``.json``, YAML for anything else; ValueError naming the file."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as exc:
        raise ValueError(f"cannot read script {p}: {exc}") from exc
    try:
        if p.suffix.lower() == ".json":
            return json.loads(text)
        import yaml

        return yaml.safe_load(text)
    except Exception as exc:  # yaml.YAMLError does not derive from ValueError
        raise ValueError(f"script {p} is not valid JSON/YAML: {exc}") from exc


class ScriptedModel:
    """Plays a fixed list of turns. Stateless: the turn is chosen from the conversation, so a run rebuilt from a
    checkpoint after a crash continues at the right turn (turn index = number of assistant messages)."""

    def __init__(self, turns: list[dict[str, Any]], final_text: str = "Done.") -> None:
        if not isinstance(turns, list):
            raise ValueError(f"script must be a list of turns, got {type(turns).__name__}")
        self._turns = [_parse_turn(i, t) for i, t in enumerate(turns)]
        self.final_text = final_text

    def __len__(self) -> int:
        return len(self._turns)

    @classmethod
    def from_data(cls, obj: Any) -> ScriptedModel:
        """A list of turns, or ``{"turns": [...], "final_text": "..."}``."""
        if isinstance(obj, dict):
            unknown = sorted(set(obj) - {"turns", "final_text"})
            if unknown:
                raise ValueError(f"script object: unknown key(s) {', '.join(map(repr, unknown))}")
            turns = obj.get("turns")
            final = obj.get("final_text", "Done.")
            if not isinstance(final, str):
                raise ValueError("script object: 'final_text' must be a string")
            if not isinstance(turns, list):
                raise ValueError("script object: 'turns' must be a list")
            return cls(turns, final_text=final)
        if isinstance(obj, list):
            return cls(obj)
        raise ValueError(f"script must be a list of turns or an object with 'turns', got {type(obj).__name__}")

    @classmethod
    def from_file(cls, path: str | Path) -> ScriptedModel:
        """Load a JSON (``.json``) or YAML (anything else) script."""
        data = read_script_file(path)
        try:
            return cls.from_data(data)
        except ValueError as exc:
            raise ValueError(f"{path}: {exc}") from exc

    async def complete(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]],
        *,
        on_delta: StreamCallback | None = None,
    ) -> ModelTurn:
        turn_index = sum(1 for m in messages if m.get("role") == "assistant")
        if turn_index >= len(self._turns):
            for piece in _chunks(self.final_text):
                await emit_delta(on_delta, "text", piece)
            return ModelTurn(text=self.final_text)
        turn = self._turns[turn_index]
        if turn.delay_ms:
            await asyncio.sleep(turn.delay_ms / 1000.0)
        if turn.thinking:
            for piece in _chunks(turn.thinking):
                await emit_delta(on_delta, "thinking", piece)
        if turn.text:
            for piece in _chunks(turn.text):
                await emit_delta(on_delta, "text", piece)
        calls = tuple(
            ToolCall(id=f"call_{turn_index}_{i}", name=name, arguments=json.loads(json.dumps(args)))
            for i, (name, args) in enumerate(turn.calls)
        )
        return ModelTurn(text=turn.text, thinking=turn.thinking, tool_calls=calls)

    async def aclose(self) -> None:
        """Nothing to release; present so callers can close any model alike."""


# --------------------------------------------------------------------------------------------------------------
# OpenAI-compatible HTTP client


def model_from_config(cfg: dict[str, Any]) -> ModelClient:
    """Build a model from an agent's ``model`` table: ``{"type": "scripted", "script": path|list}`` or
    ``{"type": "openai", "base_url": ..., "model": ..., "api_key_env": ...}``."""
    if not isinstance(cfg, dict):
        raise ValueError(f"model config must be a table, got {type(cfg).__name__}")
    kind = cfg.get("type", "openai" if "base_url" in cfg else None)
    if kind == "scripted":
        unknown = sorted(set(cfg) - {"type", "script", "final_text"})
        if unknown:
            raise ValueError(f"scripted model: unknown key(s) {', '.join(map(repr, unknown))}")
        script = cfg.get("script")
        if script is None:
            raise ValueError("scripted model: 'script' (a file path or a list of turns) is required")
        model = ScriptedModel.from_file(script) if isinstance(script, str | Path) else ScriptedModel.from_data(script)
        if "final_text" in cfg:
            if not isinstance(cfg["final_text"], str):
                raise ValueError("scripted model: 'final_text' must be a string")
            model.final_text = cfg["final_text"]
        return model
    if kind == "openai":
        allowed = {
            "base_url",
            "model",
            "api_key",
            "api_key_env",
            "keyring_service",
            "keyring_username",
            "timeout",
            "max_retries",
            "stream",
            "temperature",
            "backoff_s",
            "extra_body",
        }
        unknown = sorted(set(cfg) - allowed - {"type"})
        if unknown:
            raise ValueError(
                f"openai model: unknown key(s) {', '.join(map(repr, unknown))}; allowed: {sorted(allowed)}"
            )
        for required in ("base_url", "model"):
            if not isinstance(cfg.get(required), str) or not cfg[required]:
                raise ValueError(f"openai model: {required!r} is required (a string)")
        from reviewer_app.runtime.openai_client import OpenAICompatibleModel  # httpx loads only when used

        return OpenAICompatibleModel(**{k: v for k, v in cfg.items() if k != "type"})
    raise ValueError(f"model config: unknown type {kind!r} (expected 'scripted' or 'openai')")
