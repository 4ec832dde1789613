"""Model clients: the scripted model (demos, tests, benchmarks) and an OpenAI-compatible HTTP client.

Both speak the OpenAI chat format so a conversation saved in a checkpoint can be replayed against either.
"""

from __future__ import annotations

import asyncio
import datetime
import email.utils
import inspect
import json
import os
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import httpx

from reviewer_app.domain.sanitize import redact_secrets, redact_url

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


_RETRY_STATUS = frozenset({408, 409, 425, 429})
_MAX_BACKOFF_S = 30.0


class _Retryable(Exception):
    """An attempt failed in a way another attempt may fix (connection, timeout, 429, 5xx)."""

    def __init__(self, message: str, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after


def _server_message(body: bytes) -> str:
    """The error text a server put in its body, trimmed, whatever its shape."""
    text = body.decode("utf-8", errors="replace").strip()
    try:
        data = json.loads(text)
    except ValueError:
        return text[:500]
    if isinstance(data, dict):
        err = data.get("error", data)
        if isinstance(err, dict) and isinstance(err.get("message"), str):
            return str(err["message"])[:500]
        if isinstance(err, str):
            return err[:500]
    return text[:500]


def _retry_after(value: str | None) -> float | None:
    """Seconds a ``Retry-After`` header asks for: delta-seconds or an HTTP date (RFC 9110); None if absent/bad."""
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=datetime.UTC)
    return max(0.0, (when - datetime.datetime.now(datetime.UTC)).total_seconds())


def _error_event_text(chunk: dict[str, Any]) -> str:
    """What a mid-stream error event says: its message, type and code/status."""
    err = chunk.get("error")
    if not isinstance(err, dict):
        return str(err)[:500]
    message = str(err.get("message") or "").strip()[:500] or "(no message)"
    details = [f"{key} {err[key]}" for key in ("type", "code", "status") if err.get(key) not in (None, "")]
    return message + (f" ({', '.join(details)})" if details else "")


def _parse_arguments(name: str, raw: Any) -> dict[str, Any]:
    """Tool arguments arrive as a JSON string (OpenAI) or already decoded (some local servers)."""
    if raw is None or raw == "":
        return {}
    if isinstance(raw, dict):
        return raw
    if not isinstance(raw, str):
        raise ModelError(f"model sent arguments for tool {name!r} as {type(raw).__name__}, expected a JSON string")
    try:
        value = json.loads(raw)
    except RecursionError:  # refused at the gate: an error result for the model, not a crash
        return {"$undecodable": "the arguments are nested too deep to read"}
    except ValueError as exc:
        raise ModelError(f"model sent invalid JSON arguments for tool {name!r}: {exc}: {raw[:200]!r}") from exc
    if not isinstance(value, dict):
        raise ModelError(f"model sent arguments for tool {name!r} that are not a JSON object: {raw[:200]!r}")
    return value


def _content_text(content: Any) -> str | None:
    """Message content is a string, or (some servers) a list of parts."""
    if content is None or isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [p.get("text", "") for p in content if isinstance(p, dict)]
        return "".join(str(p) for p in parts)
    return str(content)


def _wire_messages(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Messages as a server accepts them: no ``thinking`` key, tool call arguments as JSON strings."""
    out: list[dict[str, Any]] = []
    for message in messages:
        m = {k: v for k, v in message.items() if k != "thinking"}
        calls = m.get("tool_calls")
        if calls:
            wired = []
            for call in calls:
                fn = dict(call.get("function", {}))
                if not isinstance(fn.get("arguments"), str):
                    fn["arguments"] = json.dumps(fn.get("arguments") or {}, ensure_ascii=False)
                wired.append({**call, "type": call.get("type", "function"), "function": fn})
            m["tool_calls"] = wired
        out.append(m)
    return out


class _CallAccumulator:
    """Assembles streamed tool_call deltas; servers key them by ``index`` (OpenAI, vLLM) or send whole calls."""

    def __init__(self) -> None:
        self.slots: dict[Any, dict[str, Any]] = {}
        self._last: Any = None

    def add(self, delta: dict[str, Any]) -> None:
        call_id = delta.get("id")
        if "index" in delta:
            key: Any = delta["index"]
        elif call_id:
            key = next((k for k, s in self.slots.items() if s["id"] == call_id), f"id:{call_id}")
        else:
            key = self._last if self._last is not None else 0
        slot = self.slots.setdefault(key, {"id": None, "name": "", "arguments": ""})
        self._last = key
        if call_id:
            slot["id"] = call_id
        fn = delta.get("function") or {}
        if fn.get("name"):
            slot["name"] += fn["name"]
        args = fn.get("arguments")
        if isinstance(args, dict):
            slot["arguments"] = args
        elif isinstance(args, str) and args:
            slot["arguments"] = (slot["arguments"] if isinstance(slot["arguments"], str) else "") + args

    def fragments(self) -> tuple[dict[str, str], ...]:
        """The calls as received so far (a stream that broke leaves them unfinished): id, name, raw arguments."""
        return tuple(
            {
                "id": str(slot["id"] or f"call_{i}"),
                "name": str(slot["name"]),
                "arguments": slot["arguments"] if isinstance(slot["arguments"], str) else json.dumps(slot["arguments"]),
            }
            for i, slot in enumerate(self.slots.values())
        )

    def calls(self) -> tuple[ToolCall, ...]:
        out = []
        for i, slot in enumerate(self.slots.values()):
            if not slot["name"]:
                raise ModelError(f"model streamed tool call #{i} without a function name")
            out.append(
                ToolCall(
                    id=slot["id"] or f"call_{i}",
                    name=slot["name"],
                    arguments=_parse_arguments(slot["name"], slot["arguments"]),
                )
            )
        return tuple(out)


class OpenAICompatibleModel:
    """Chat completions over HTTP with tool calling and streaming: OpenAI, Ollama (``/v1``), vLLM, llama.cpp.

    Connection errors, timeouts, 429 and 5xx are retried with exponential backoff (honouring ``Retry-After``),
    except once streamed text has reached the caller, where a retry would repeat it. Anything else is a
    ModelError with the server's message.
    """

    def __init__(
        self,
        base_url: str,
        model: str,
        api_key: str | None = None,
        api_key_env: str | None = None,
        keyring_service: str | None = None,
        timeout: float = 60.0,
        max_retries: int = 3,
        stream: bool = True,
        temperature: float | None = None,
        *,
        keyring_username: str = "api_key",
        backoff_s: float = 0.5,
        extra_body: dict[str, Any] | None = None,
    ) -> None:
        if not base_url:
            raise ValueError("base_url is required")
        if not model:
            raise ValueError("model is required")
        if max_retries < 0:
            raise ValueError("max_retries must be >= 0")
        self.base_url = base_url.rstrip("/")
        self.model = model
        self.url = f"{self.base_url}/chat/completions"
        self.timeout = timeout
        self.max_retries = max_retries
        self.stream = stream
        self.temperature = temperature
        self.backoff_s = backoff_s
        self.extra_body = dict(extra_body or {})
        self._api_key = api_key
        self._api_key_env = api_key_env
        self._keyring_service = keyring_service
        self._keyring_username = keyring_username
        self._key_resolved = api_key is not None or (api_key_env is None and keyring_service is None)
        self._client: httpx.AsyncClient | None = None  # made on first use, inside the running loop
        self.attempts = 0  # HTTP attempts made so far (for diagnostics and tests)
        self._calls = _CallAccumulator()  # the current (or last) attempt's tool calls, as streamed so far
        self.shown_url = redact_url(self.url)  # the URL as errors show it: no user-info

    @property
    def partial_calls(self) -> tuple[dict[str, str], ...]:
        """Tool calls the last attempt had streamed when it stopped (for the timeline of a turn that broke)."""
        return self._calls.fragments()

    async def _key(self) -> str | None:
        if self._key_resolved:
            return self._api_key
        if self._api_key_env and os.environ.get(self._api_key_env):
            self._api_key = os.environ[self._api_key_env]
        elif self._keyring_service:
            self._api_key = await asyncio.to_thread(self._key_from_keyring)
        if not self._api_key:
            sources = []
            if self._api_key_env:
                sources.append(f"environment variable {self._api_key_env}")
            if self._keyring_service:
                sources.append(f"keyring service {self._keyring_service!r} (user {self._keyring_username!r})")
            raise ModelError(f"no API key for {self.base_url}: set {' or '.join(sources)}")
        self._key_resolved = True
        return self._api_key

    def _key_from_keyring(self) -> str | None:
        try:
            import keyring
        except ImportError:
            raise ModelError(
                f"keyring_service {self._keyring_service!r} is configured but the 'keyring' package is not "
                "installed (pip install 'reviewer-app[keyring]')"
            ) from None
        try:
            value = keyring.get_password(str(self._keyring_service), self._keyring_username)
        except Exception as exc:  # backends raise their own error types
            raise ModelError(f"cannot read the API key from the OS keyring: {exc}") from exc
        return value if isinstance(value, str) else None

    def _http(self) -> httpx.AsyncClient:
        if self._client is None:
            self._client = httpx.AsyncClient(timeout=httpx.Timeout(self.timeout))
        return self._client

    async def aclose(self) -> None:
        if self._client is not None:
            client, self._client = self._client, None
            await client.aclose()

    def _payload(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]], stream: bool) -> dict[str, Any]:
        payload: dict[str, Any] = {"model": self.model, "messages": _wire_messages(messages), "stream": stream}
        if tools:
            payload["tools"] = tools
        if self.temperature is not None:
            payload["temperature"] = self.temperature
        payload.update(self.extra_body)
        return payload

    async def complete(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]],
        *,
        on_delta: StreamCallback | None = None,
    ) -> ModelTurn:
        key = await self._key()
        headers = {"Accept": "text/event-stream" if self.stream else "application/json"}
        if key:
            headers["Authorization"] = f"Bearer {key}"
        payload = self._payload(messages, tools, self.stream)
        try:
            return await self._attempts(payload, headers, on_delta)
        except ModelError as exc:
            # Servers echo request headers in error bodies and base_url may hold user:password@: whatever this
            # error says is stored on the run, shown in the window and printed, so it never carries a secret
            # (nor does a chained original).
            raise ModelError(redact_secrets(str(exc), [self._api_key])) from None

    async def _attempts(
        self, payload: dict[str, Any], headers: dict[str, str], on_delta: StreamCallback | None
    ) -> ModelTurn:
        """Attempts until one succeeds, honouring ``Retry-After``; never retried once any output was streamed."""
        url = self.shown_url
        last_error = "no attempt made"
        retry_after: float | None = None
        for attempt in range(self.max_retries + 1):
            if attempt:
                delay = self.backoff_s * (2 ** (attempt - 1))
                if retry_after is not None:
                    delay = max(delay, retry_after)
                await asyncio.sleep(min(delay, _MAX_BACKOFF_S))
            retry_after = None
            self.attempts += 1
            self._calls = _CallAccumulator()
            emitted = [False]
            try:
                if self.stream:
                    return await self._stream_once(payload, headers, on_delta, emitted)
                return await self._once(payload, headers)
            except _Retryable as exc:
                last_error, retry_after = str(exc), exc.retry_after
            except httpx.TimeoutException as exc:
                last_error = f"timed out after {self.timeout:g}s ({type(exc).__name__})"
            except httpx.TransportError as exc:
                last_error = f"connection failed: {exc or type(exc).__name__}"
            except httpx.HTTPError as exc:  # decoding errors, redirect loops: another attempt will not help
                raise ModelError(f"{url}: {type(exc).__name__}: {exc}") from exc
            if emitted[0]:
                raise ModelError(f"{url}: stream broke after output was delivered: {last_error}")
            if retry_after is not None and retry_after > _MAX_BACKOFF_S:
                raise ModelError(
                    f"{url}: {last_error}; the server asked to retry after {retry_after:.0f} s, longer than this "
                    f"client waits ({_MAX_BACKOFF_S:.0f} s): try again later"
                )
        raise ModelError(f"{url}: {last_error} (gave up after {self.max_retries + 1} attempts)")

    def _check_status(self, status: int, body: bytes, headers: Any) -> None:
        if status < 400:
            return
        message = _server_message(body)
        if status >= 500 or status in _RETRY_STATUS:
            raise _Retryable(f"HTTP {status}: {message}", _retry_after(headers.get("retry-after")))
        hint = " (check the API key)" if status in (401, 403) else ""
        raise ModelError(f"{self.shown_url}: HTTP {status}{hint}: {message}")

    async def _once(self, payload: dict[str, Any], headers: dict[str, str]) -> ModelTurn:
        response = await self._http().post(self.url, json=payload, headers=headers)
        self._check_status(response.status_code, response.content, response.headers)
        return self._turn_from_json(response.content)

    def _turn_from_json(self, body: bytes) -> ModelTurn:
        """A non-streamed reply: ``choices[0].message`` with content, reasoning and tool_calls."""
        try:
            message = json.loads(body)["choices"][0]["message"]
            if not isinstance(message, dict):
                raise TypeError("message is not an object")
        except (ValueError, KeyError, IndexError, TypeError) as exc:
            raise ModelError(f"{self.shown_url}: unexpected response: {body[:300]!r}") from exc
        calls = []
        for i, call in enumerate(message.get("tool_calls") or []):
            fn = call.get("function") or {}
            name = fn.get("name")
            if not name:
                raise ModelError(f"{self.shown_url}: tool call #{i} has no function name")
            arguments = _parse_arguments(name, fn.get("arguments"))
            calls.append(ToolCall(id=call.get("id") or f"call_{i}", name=name, arguments=arguments))
        thinking = message.get("reasoning_content") or message.get("reasoning")
        return ModelTurn(
            text=_content_text(message.get("content")) or None,
            thinking=_content_text(thinking) or None,
            tool_calls=tuple(calls),
        )

    async def _stream_once(
        self,
        payload: dict[str, Any],
        headers: dict[str, str],
        on_delta: StreamCallback | None,
        emitted: list[bool],
    ) -> ModelTurn:
        text: list[str] = []
        thinking: list[str] = []
        acc = self._calls
        async with self._http().stream("POST", self.url, json=payload, headers=headers) as response:
            if response.status_code >= 400:
                body = await response.aread()
                self._check_status(response.status_code, body, response.headers)
            content_type = response.headers.get("content-type", "")
            if "json" in content_type and "event-stream" not in content_type:
                # A server that ignores "stream": true answers with one JSON document.
                body = await response.aread()
                return self._turn_from_json(body)
            finished = False  # a cut connection must not pass for a complete answer
            async for raw_line in response.aiter_lines():
                line = raw_line.strip()
                if not line.startswith("data:"):
                    continue  # blank separators, comments (":"), "event:" lines
                data = line[5:].strip()
                if data == "[DONE]":
                    finished = True
                    break
                try:
                    chunk = json.loads(data)
                except ValueError as exc:
                    raise ModelError(f"{self.shown_url}: malformed stream chunk: {data[:200]!r}") from exc
                if not isinstance(chunk, dict):
                    raise ModelError(f"{self.shown_url}: malformed stream chunk: {data[:200]!r}")
                if chunk.get("error"):
                    raise ModelError(
                        f"{self.shown_url}: server error in the stream (HTTP {response.status_code}): "
                        f"{_error_event_text(chunk)}"
                    )
                for choice in chunk.get("choices") or []:
                    if choice.get("index", 0) != 0:
                        continue
                    finished = finished or bool(choice.get("finish_reason"))
                    delta = choice.get("delta") or {}
                    reasoning = delta.get("reasoning_content") or delta.get("reasoning")
                    if isinstance(reasoning, str) and reasoning:
                        thinking.append(reasoning)
                        emitted[0] = on_delta is not None
                        await emit_delta(on_delta, "thinking", reasoning)
                    content = _content_text(delta.get("content"))
                    if content:
                        text.append(content)
                        emitted[0] = on_delta is not None
                        await emit_delta(on_delta, "text", content)
                    for call in delta.get("tool_calls") or []:
                        acc.add(call)
                        emitted[0] = on_delta is not None  # the turn's calls have begun: never asked again
        if not finished:
            raise _Retryable("stream ended before the answer was complete (no finish_reason, no [DONE])")
        return ModelTurn(text="".join(text) or None, thinking="".join(thinking) or None, tool_calls=acc.calls())


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
        return OpenAICompatibleModel(**{k: v for k, v in cfg.items() if k != "type"})
    raise ValueError(f"model config: unknown type {kind!r} (expected 'scripted' or 'openai')")
