"""What differs between coding agents' hooks, as one small profile per host; everything else is shared.

A profile reads its host's payload into the common :class:`HookEvent` (the same request, rules, waivers, risk and
fast path for every host), renders an :class:`Answer` as the host's stdout and exit code, names the host's shell
tools and read-only tools, and says which events can carry edited arguments (requests from the others offer no
"edit"). The bytes are read and written by :mod:`.lean_wire` and the tables are :mod:`.host_tables`' (shared with
the hook's lean path); this module gives them their types. Standard library only: this runs on the fast path of
every tool call.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from reviewer_app.integrations.claude_code.events import Answer, HookEvent, HookEventName, Host, load_object
from reviewer_app.integrations.claude_code.wire import ALL_DECISIONS, WITHOUT_EDIT
from reviewer_app.integrations.hosts.host_tables import HOST_TABLES
from reviewer_app.integrations.hosts.lean_wire import event_fields, render


@dataclass(frozen=True, slots=True)
class Reply:
    """What the hook process prints (None: nothing) and the exit code it ends with."""

    stdout: str | None
    exit_code: int = 0


@dataclass(frozen=True)
class HostProfile:
    """One host's wire format (:func:`.lean_wire.event_fields` and :func:`.lean_wire.render`) and tables."""

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
        fields = event_fields(self.host.value, load_object(payload))
        return HookEvent(host=self.host, event=HookEventName(fields.pop("event")), **fields)

    def render(self, answer: Answer, event: HookEventName) -> Reply:
        return Reply(render(self.host.value, answer.verdict.value, answer.reason, answer.updated_input, event.value))

    def decisions(self, event: HookEventName) -> tuple[str, ...]:
        return ALL_DECISIONS if event in self.edit_events else WITHOUT_EDIT

    def schema_for(self, tool_name: str) -> dict[str, Any] | None:
        return self.schemas.get(tool_name)


def tables_of(host: Host) -> dict[str, Any]:
    """``host``'s row of :data:`.host_tables.HOST_TABLES`, typed: a profile's fields after ``host``."""
    tables = HOST_TABLES[host.value]
    return {
        "default_event": HookEventName(tables["default_event"]),
        "edit_events": frozenset(HookEventName(name) for name in tables["edit_events"]),
        "shell_tools": tables["shell_tools"],
        "read_only_tools": tables["read_only_tools"],
        "schemas": tables["schemas"],
    }


def named_event(payload: bytes, allowed: tuple[HookEventName, ...], default: HookEventName) -> HookEventName:
    """The ``hook_event_name`` of a payload that may be broken, among ``allowed``; else ``default``."""
    try:
        name = json.loads(payload.decode("utf-8", "replace")).get("hook_event_name")
    except Exception:
        name = next((event.value for event in allowed if event.value.encode() in payload), None)
    return HookEventName(name) if name in allowed else default
