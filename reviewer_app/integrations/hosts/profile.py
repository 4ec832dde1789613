"""What differs between coding agents' hooks, as one small profile per host; everything else is shared.

A profile reads its host's payload into the common :class:`HookEvent` (the same request, rules, waivers, risk and
fast path for every host), renders an :class:`Answer` as the host's stdout and exit code, names the host's shell
tools and read-only tools, and says which events can carry edited arguments (requests from the others offer no
"edit"). Standard library only: this runs on the fast path of every tool call.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from reviewer_app.integrations.claude_code.events import (
    Answer,
    HookEvent,
    HookEventName,
    HookInputError,
    Host,
    text_field,
)
from reviewer_app.integrations.claude_code.wire import ALL_DECISIONS, WITHOUT_EDIT


@dataclass(frozen=True, slots=True)
class Reply:
    """What the hook process prints (None: nothing) and the exit code it ends with."""

    stdout: str | None
    exit_code: int = 0


@dataclass(frozen=True)
class HostProfile:
    """One host's wire format; subclasses implement :meth:`parse` and :meth:`render`."""

    host: Host
    default_event: HookEventName
    """The event the answer is shaped for when the payload cannot even be read."""
    edit_events: frozenset[HookEventName] = frozenset()
    """Events whose answer carries edited arguments the host really runs."""
    shell_tools: tuple[str, ...] = ()
    read_only_tools: tuple[str, ...] = ()
    """Allowed without asking by the default ``--allow-tools`` rule."""
    schemas: dict[str, dict[str, Any]] = field(default_factory=dict)

    def event_name_in(self, payload: bytes) -> HookEventName:
        """The event a possibly broken payload names (picks the fallback answer's format)."""
        return self.default_event

    def parse(self, payload: bytes) -> HookEvent:
        raise NotImplementedError

    def render(self, answer: Answer, event: HookEventName) -> Reply:
        raise NotImplementedError

    def decisions(self, event: HookEventName) -> tuple[str, ...]:
        return ALL_DECISIONS if event in self.edit_events else WITHOUT_EDIT

    def schema_for(self, tool_name: str) -> dict[str, Any] | None:
        return self.schemas.get(tool_name)


def required_text(raw: dict[str, Any], key: str) -> str:
    value = text_field(raw, key, required=True)
    assert value is not None
    return value


def object_field(raw: dict[str, Any], key: str, *, json_text: bool = False) -> dict[str, Any]:
    """A JSON object argument; ``json_text``: the host may send it as a JSON string (Copilot, Cursor's MCP)."""
    value = raw.get(key)
    if json_text and isinstance(value, str):
        try:
            value = json.loads(value) if value.strip() else {}
        except json.JSONDecodeError as exc:
            raise HookInputError(f"{key} is not a JSON object: {exc}") from exc
    if not isinstance(value, dict):
        raise HookInputError(f"{key} must be a JSON object")
    return value


def expect_event(name: str, allowed: tuple[HookEventName, ...], host: Host) -> HookEventName:
    if name not in allowed:
        wanted = " and ".join(event.value for event in allowed)
        raise HookInputError(f"the {host.value} hook answers {wanted}, not {name!r}")
    return HookEventName(name)


def named_event(payload: bytes, allowed: tuple[HookEventName, ...], default: HookEventName) -> HookEventName:
    """The ``hook_event_name`` of a payload that may be broken, among ``allowed``; else ``default``."""
    try:
        name = json.loads(payload.decode("utf-8", "replace")).get("hook_event_name")
    except Exception:
        name = next((event.value for event in allowed if event.value.encode() in payload), None)
    return HookEventName(name) if name in allowed else default


def dumps(value: dict[str, Any]) -> str:
    return json.dumps(value, ensure_ascii=False)
