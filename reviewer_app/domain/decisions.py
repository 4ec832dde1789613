"""Decisions a reviewer makes on a request, and the hash that ties them to what was shown."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from reviewer_app.domain.audit_chain import args_digest, canonical_json
from reviewer_app.domain.limits import RequestRejected, check_json_value, is_undecodable

__all__ = ["Decision", "DecisionError", "DecisionKind", "args_digest", "canonical_json"]


class DecisionKind(StrEnum):
    """What a reviewer (or the expiry clock) decided."""

    APPROVE = "approve"
    APPROVE_FOR_SESSION = "approve_for_session"
    EDIT = "edit"
    REJECT = "reject"
    STEER = "steer"
    RESPOND = "respond"
    CANCEL = "cancel"
    EXPIRE = "expire"

    @property
    def runs_tool(self) -> bool:
        """Whether the gated tool call executes after this decision."""
        return self in (DecisionKind.APPROVE, DecisionKind.APPROVE_FOR_SESSION, DecisionKind.EDIT)

    @property
    def needs_hash(self) -> bool:
        """Approvals must name the arguments they approve (those that run the tool; asked twice a decision, so
        without a second property call)."""
        return self in (DecisionKind.APPROVE, DecisionKind.APPROVE_FOR_SESSION, DecisionKind.EDIT)


_KINDS_BY_TEXT = {kind.value: kind for kind in DecisionKind}
"""Each kind by its text: a stored decision's kind in one dictionary look-up (``DecisionKind(text)`` is two Python
calls); anything else, and every refusal, still goes through ``DecisionKind``."""


class DecisionError(ValueError):
    """A decision that cannot be applied as given (bad hash, invalid edit, wrong kind)."""


@dataclass(frozen=True, slots=True)
class Decision:
    """One reviewer decision; serialised as the request's ``user_response``."""

    kind: DecisionKind
    message: str | None = None
    edited_args: dict[str, Any] | None = None
    args_sha256: str | None = None
    reviewer: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.kind is DecisionKind.EDIT and not isinstance(self.edited_args, dict):
            raise DecisionError("an edit decision needs the edited arguments as a JSON object")
        if self.kind is DecisionKind.STEER and not (self.message and self.message.strip()):
            raise DecisionError("a steer decision needs guidance text")
        if self.kind is DecisionKind.RESPOND and self.message is None:
            raise DecisionError("a respond decision needs an answer")
        if self.message is None and self.edited_args is None and type(self.extra) is dict and not self.extra:
            return  # nothing a limit could refuse (a plain approval or rejection)
        try:  # what a decision carries is stored, hashed into the audit chain and shown: the same limits
            check_json_value(
                {"message": self.message, "edited_args": self.edited_args, "extra": self.extra}, "the decision"
            )
        except RequestRejected as exc:
            raise DecisionError(str(exc)) from None

    def to_user_response(self) -> dict[str, Any]:
        response: dict[str, Any] = dict(self.extra)
        response["decision"] = self.kind.value
        if self.message is not None:
            response["message"] = self.message
        if self.edited_args is not None:
            response["args"] = self.edited_args
        if self.args_sha256 is not None:
            response["args_sha256"] = self.args_sha256
        if self.reviewer is not None:
            response["reviewer"] = self.reviewer
        return response

    @classmethod
    def from_user_response(cls, response: dict[str, Any] | None) -> Decision:
        """Read back a stored response; a bare protocol answer counts as ``respond``."""
        response = dict(response or {})
        raw_kind = response.pop("decision", None)
        kind = _KINDS_BY_TEXT.get(raw_kind) if type(raw_kind) is str else None
        if kind is None:
            try:
                kind = DecisionKind(raw_kind) if raw_kind else DecisionKind.RESPOND
            except ValueError as exc:
                raise DecisionError(f"unknown decision {raw_kind!r}") from exc
        message = response.pop("message", None)
        if message is None and kind is DecisionKind.RESPOND:
            answer = response.get("answer", response.get("text"))
            message = "" if answer is None else str(answer)
        return cls(
            kind=kind,
            message=message,
            edited_args=response.pop("args", None),
            args_sha256=response.pop("args_sha256", None),
            reviewer=response.pop("reviewer", None),
            extra=response,
        )

    def effective_args(self, original: dict[str, Any]) -> dict[str, Any]:
        """The arguments the tool runs with if this decision lets it run."""
        return self.edited_args if self.kind is DecisionKind.EDIT and self.edited_args is not None else original

    def check_hash(self, shown_args: Any) -> None:
        """Refuse an approval whose hash does not match the arguments that would run."""
        if not self.kind.needs_hash:
            return
        if is_undecodable(shown_args):
            raise DecisionError(
                "the request's arguments could not be read from the database; it can only be rejected or cancelled"
            )
        if self.args_sha256 is None:
            raise DecisionError(f"{self.kind.value} must name the SHA-256 of the arguments it approves")
        expected = args_digest(shown_args)
        if self.args_sha256 != expected:
            raise DecisionError(
                "the arguments changed since they were shown "
                f"(shown {self.args_sha256[:12]}…, current {expected[:12]}…); look again before approving"
            )
