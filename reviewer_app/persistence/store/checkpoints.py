"""Checkpoints: a run's conversation (``run_messages``) and the small checkpoints it resumes from.

Run state is append-only: each commit adds the conversation's new messages to ``run_messages`` and writes a
small checkpoint (the turn's pending calls, counters, how many messages it resumes from); large values go to
``blobs`` once (:mod:`reviewer_app.persistence.blobs`) and the superseded checkpoint is deleted in the same
transaction unless a pending request names it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import Connection, bindparam, delete, func, insert, select

from reviewer_app.domain.hitl import HITLStatus
from reviewer_app.persistence.blobs import (
    STATE_FORMAT,
    externalize_message,
    externalize_state,
    internalize_message,
    internalize_state,
    message_digests,
    small_json,
    state_digests,
)
from reviewer_app.persistence.core_tables import checkpoints_t, requests_t, run_messages_t
from reviewer_app.persistence.store.base import Reader, Statements
from reviewer_app.persistence.store.blobstore import BlobWrites, read_blobs
from reviewer_app.persistence.store.records import now_ms

_INSERT_CHECKPOINT = insert(checkpoints_t)
_INSERT_MESSAGE = insert(run_messages_t)
# Superseded checkpoints of one run: every one but the newest, unless a pending request names it (its
# ``checkpoint_id``); ix_hitl_invocation_status answers the subquery.
_PRUNE_CHECKPOINTS = delete(checkpoints_t).where(
    checkpoints_t.c.invocation_id == bindparam("match_inv"),
    checkpoints_t.c.checkpoint_id != bindparam("keep_id"),
    checkpoints_t.c.checkpoint_id.not_in(
        select(requests_t.c.checkpoint_id).where(
            requests_t.c.invocation_id == bindparam("match_inv"),
            requests_t.c.status == HITLStatus.PENDING.value,
            requests_t.c.checkpoint_id.is_not(None),
        )
    ),
)


class CheckpointWrites:
    """``tx.checkpoints``: a step's new messages and checkpoint, written inside one transaction."""

    __slots__ = ("_blobs", "_db")

    def __init__(self, db: Statements, blobs: BlobWrites) -> None:
        self._db = db
        self._blobs = blobs

    def save(
        self,
        checkpoint_id: str,
        invocation_id: str,
        session_id: str,
        state: dict[str, Any],
        new_messages: Sequence[dict[str, Any]],
        *,
        first_index: int,
    ) -> None:
        """Append the run's new messages (from ``first_index``), write the checkpoint, prune the superseded ones.

        ``state`` is the checkpoint without its conversation; the stored one records the message count it
        resumes from, so a reader rebuilds exactly the conversation this commit saw.
        """
        db, put = self._db, self._blobs.put
        for offset, message in enumerate(new_messages):
            text = small_json(message)  # the usual message: nothing to store as a blob, its JSON made already
            db.write(
                _INSERT_MESSAGE,
                {
                    "invocation_id": invocation_id,
                    "idx": first_index + offset,
                    "message": externalize_message(message, put) if text is None else db.json_value(message, text),
                },
            )
        count = first_index + len(new_messages)
        stored: Any = {**state, "format": STATE_FORMAT, "message_count": count}
        text = small_json(stored) if isinstance(state.get("pending"), list) else None
        if text is None:
            stored = externalize_state(state, put, memo=db.blob_memo, has=self._blobs.has)
            stored["format"] = STATE_FORMAT
            stored["message_count"] = count
        else:  # what externalize_state would keep when no field is large: the state as it is
            stored = db.json_value(stored, text)
        self._db.write(
            _INSERT_CHECKPOINT,
            {
                "checkpoint_id": checkpoint_id,
                "invocation_id": invocation_id,
                "session_id": session_id,
                "state": stored,
                "created_ms": now_ms(),
            },
        )
        self._db.write(_PRUNE_CHECKPOINTS, {"match_inv": invocation_id, "keep_id": checkpoint_id})

    def save_whole(self, checkpoint_id: str, invocation_id: str, session_id: str, state: dict[str, Any]) -> None:
        """A checkpoint stored as given (format 1: the state holds everything); runs use :meth:`save`."""
        self._db.write(
            _INSERT_CHECKPOINT,
            {
                "checkpoint_id": checkpoint_id,
                "invocation_id": invocation_id,
                "session_id": session_id,
                "state": state,
                "created_ms": now_ms(),
            },
        )


class CheckpointReads:
    """``store.checkpoints``: the checkpoint a run resumes from, with its conversation and large values restored."""

    def __init__(self, db: Reader) -> None:
        self._db = db

    def latest(self, invocation_id: str) -> tuple[str, dict[str, Any]] | None:
        """The run's newest checkpoint as ``(id, state)``, its conversation (``messages``) and large values restored."""
        query = (
            select(checkpoints_t.c.checkpoint_id, checkpoints_t.c.state)
            .where(checkpoints_t.c.invocation_id == invocation_id)
            # By the run's own checkpoint sequence, never the wall clock (a clock stepped back would pick an
            # older checkpoint and run a tool again). Ids share the run's prefix and end in the zero-padded
            # sequence: longer is later, equal lengths compare as numbers.
            .order_by(func.length(checkpoints_t.c.checkpoint_id).desc(), checkpoints_t.c.checkpoint_id.desc())
            .limit(1)
        )
        with self._db.reading() as connection:
            row = connection.execute(query).first()
            if row is None:
                return None
            return (row[0], _assembled(connection, invocation_id, row[1]))

    def get(self, checkpoint_id: str) -> dict[str, Any] | None:
        with self._db.reading() as connection:
            row = connection.execute(
                select(checkpoints_t.c.invocation_id, checkpoints_t.c.state).where(
                    checkpoints_t.c.checkpoint_id == checkpoint_id
                )
            ).first()
            if row is None or not isinstance(row[1], dict):
                return None
            return _assembled(connection, row[0], row[1])


def _assembled(connection: Connection, invocation_id: str, state: Any) -> dict[str, Any]:
    """A stored checkpoint as the runtime uses it: format 2 gets its conversation and large values back."""
    if not isinstance(state, dict) or state.get("format") != STATE_FORMAT:
        return state if isinstance(state, dict) else {}
    count = int(state.get("message_count") or 0)
    rows = connection.execute(
        select(run_messages_t.c.message)
        .where(run_messages_t.c.invocation_id == invocation_id, run_messages_t.c.idx < count)
        .order_by(run_messages_t.c.idx)
    ).all()
    messages = [row[0] for row in rows]
    if len(messages) != count:
        raise ValueError(f"run {invocation_id}: its checkpoint resumes from {count} messages, {len(messages)} stored")
    digests = state_digests(state)
    for message in messages:
        digests.extend(message_digests(message))
    blobs = read_blobs(connection, digests) if digests else {}
    assembled = internalize_state(state, blobs)
    assembled["messages"] = [internalize_message(m, blobs) if digests else m for m in messages]
    return assembled
