"""The HITL request record, in aury-agent's ``HITLBackend`` shape (``summarize_arguments`` lives in
:mod:`.tool_args`, which the hook's lean path loads without these enums)."""

from __future__ import annotations

from enum import StrEnum

from reviewer_app.domain import tool_args

TYPE_CHECKING = False  # no ``typing`` at run time: the hook's full path imports this module
if TYPE_CHECKING:
    from typing import Any

HITLRecord = dict[str, "Any"]
"""A request as the backend protocol hands it out: exactly :data:`RECORD_KEYS`."""

RECORD_KEYS: tuple[str, ...] = (
    "hitl_id",
    "hitl_type",
    "session_id",
    "invocation_id",
    "data",
    "metadata",
    "block_id",
    "status",
    "resume_mode",
    "tool_state",
    "checkpoint_id",
    "tool_name",
    "tool_call_id",
    "node_id",
    "expires_at",
    "user_response",
    "responded_at",
    "created_at",
    "updated_at",
)


class HITLStatus(StrEnum):
    """Lifecycle of a request. Only ``pending`` can change, and only once."""

    PENDING = "pending"
    COMPLETED = "completed"
    CANCELLED = "cancelled"
    EXPIRED = "expired"


class HITLType(StrEnum):
    """Kinds of request the app knows how to present; others are shown generically."""

    TOOL_APPROVAL = "tool_approval"
    ASK_USER = "ask_user"


# The texts every creation and decision compares with, read once: an enum member's ``.value`` is two Python calls
# (a member held in a variable is a StrEnum, whose ``str()`` is its text, in C).
STATUS_PENDING = HITLStatus.PENDING.value
TYPE_ASK_USER = HITLType.ASK_USER.value


class ResumeMode(StrEnum):
    """aury-agent's resume modes: the answer is the tool result, or the run just continues."""

    RESPONSE = "response"
    CONTINUATION = "continuation"


class HITLError(Exception):
    """Base class of the errors the HITL store raises."""


class HITLNotFound(HITLError, KeyError):
    """No request has this id."""

    def __init__(self, hitl_id: str) -> None:
        super().__init__(hitl_id)
        self.hitl_id = hitl_id

    def __str__(self) -> str:
        return f"no HITL request with id {self.hitl_id!r}"


class HITLConflict(HITLError):
    """The request exists but is not in a state that allows the operation.

    ``record`` is the request as it is now, so the loser can say who decided it,
    when and how.
    """

    def __init__(self, message: str, record: HITLRecord | None = None) -> None:
        super().__init__(message)
        self.record = record
        self._decided_by: str | None = None

    @property
    def decided_by(self) -> str | None:
        return self._decided_by

    @classmethod
    def already_decided(
        cls, record: HITLRecord, attempted: str, *, decided_by: str | None = None, decision: str | None = None
    ) -> HITLConflict:
        """The loser's message: who decided the request first, when and how."""
        response = record.get("user_response")
        response = response if isinstance(response, dict) else {}
        how = decision or response.get("decision")
        who = decided_by or response.get("reviewer")
        when = record.get("responded_at") or record.get("updated_at")
        parts = [f"request {record['hitl_id']!r} is already {record['status']}"]
        if how:
            parts.append(f"({how})")
        if who:
            parts.append(f"by {who}")
        if when:
            parts.append(f"at unix time {when}")
        withdrawn_by_system = str(who or "").split("/")[-1].startswith("system:")  # PostgreSQL: "login/system:…"
        if record.get("status") == HITLStatus.CANCELLED.value and withdrawn_by_system:
            # Withdrawn for its agent's host (ReviewClient.abandon, a hook's watchdog, a sweep): say what that means.
            parts.append("— answered elsewhere: the agent was already answered without a decision")
        conflict = cls(" ".join(parts) + f"; cannot {attempted} it", record)
        conflict._decided_by = str(who) if who else None
        return conflict


class DecisionNotOnRecord(HITLError):
    """A decided request whose record is not what its audit row signed: nothing may act on it as decided."""

    def __init__(self, hitl_id: str, problem: str) -> None:
        super().__init__(f"{problem}; the decision is not acted on")
        self.hitl_id = hitl_id
        self.problem = problem


class SchemaError(Exception):
    """The database cannot be used by this version of the app."""


class DatabaseUnavailable(SchemaError):
    """The database cannot be opened now: locked by another program, not a database, unreachable."""


class WriteRetriesExhausted(Exception):
    """The database stayed busy or full for longer than the retry budget; nothing was written."""


class SchemaTooNew(SchemaError):
    """The database was written by a newer Reviewer; opening it could corrupt it."""


summarize_arguments = tool_args.summarize_arguments
"""One line that says what a tool call would do (its home is :mod:`.tool_args`)."""


def shown_arguments(record: HITLRecord) -> Any:
    """The arguments a reviewer sees (and an approval hashes) for a request: one definition for all paths."""
    data = record.get("data") or {}
    return data.get("arguments", data) if record.get("hitl_type") != TYPE_ASK_USER else data
