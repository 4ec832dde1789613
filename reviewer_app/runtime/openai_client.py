"""The OpenAI-compatible HTTP client (httpx, streaming, retries with backoff), one of the runtime's LLM clients.

It speaks the OpenAI chat format, as the scripted client does (``llm_clients.py``).
"""

from __future__ import annotations

import asyncio
import datetime
import email.utils
import json
import os
from typing import Any

import httpx

from reviewer_app.domain.sanitize import redact_secrets, redact_url
from reviewer_app.runtime.llm_clients import ModelError, ModelTurn, StreamCallback, ToolCall, emit_delta

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
