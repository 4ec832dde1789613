"""Append-only run state: the conversation stored once, message by message; large values stored once as blobs.

Before, every commit of a run stored its whole conversation again as a new checkpoint (never pruned), and a
large tool result or argument was copied into each checkpoint, two timeline events and the audit row. Now:

* ``run_messages`` holds each run's conversation, one row per message, written once;
* a checkpoint (format 2) holds only the turn's pending calls, counters and the message count it resumes from;
  superseded ones are deleted unless a pending request names them;
* ``blobs`` holds large values once, by SHA-256, zlib-compressed when it pays; events name theirs in
  ``block_events.blob_refs``, audit rows in ``audit_log.shown_args_ref``.

This revision converts what older code wrote: each run's newest checkpoint (and any a pending request names)
becomes format 2 with its conversation in ``run_messages``; the other checkpoints are deleted; large event
fields and shown arguments move to blobs. A run waiting on a request resumes from the converted checkpoint.

Revision ID: 0009
Revises: 0008
Create Date: 2026-11-24
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import sqlalchemy as sa
from alembic import op

from reviewer_app.persistence.blobs import (
    BLOB_THRESHOLD,
    STATE_FORMAT,
    digest,
    encode_value,
    externalize,
    externalize_message,
    externalize_state,
    internalize,
    internalize_message,
    internalize_state,
    message_digests,
    pack,
    ref_digests,
    state_digests,
    unpack,
)

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None

_blobs = sa.table(
    "blobs",
    sa.column("sha256", sa.String),
    sa.column("codec", sa.String),
    sa.column("size", sa.BigInteger),
    sa.column("data", sa.LargeBinary),
)
_messages = sa.table(
    "run_messages", sa.column("invocation_id", sa.String), sa.column("idx", sa.Integer), sa.column("message", sa.JSON)
)
_checkpoints = sa.table(
    "checkpoints",
    sa.column("checkpoint_id", sa.String),
    sa.column("invocation_id", sa.String),
    sa.column("state", sa.JSON),
)
_requests = sa.table(
    "hitl_requests",
    sa.column("invocation_id", sa.String),
    sa.column("checkpoint_id", sa.String),
    sa.column("status", sa.String),
)
_events = sa.table(
    "block_events", sa.column("seq", sa.Integer), sa.column("data", sa.JSON), sa.column("blob_refs", sa.JSON)
)
_audit = sa.table(
    "audit_log", sa.column("id", sa.Integer), sa.column("shown_args", sa.JSON), sa.column("shown_args_ref", sa.String)
)


def _putter(connection: sa.Connection) -> Callable[[bytes], str]:
    seen: set[str] = set()

    def put(raw: bytes) -> str:
        sha = digest(raw)
        if sha in seen:
            return sha
        if connection.execute(sa.select(_blobs.c.sha256).where(_blobs.c.sha256 == sha)).first() is None:
            codec, data = pack(raw)
            connection.execute(sa.insert(_blobs).values(sha256=sha, codec=codec, size=len(raw), data=data))
        seen.add(sha)
        return sha

    return put


def _getter(connection: sa.Connection) -> Callable[[list[str]], dict[str, bytes]]:
    def get(digests: list[str]) -> dict[str, bytes]:
        found = {}
        for sha in set(digests):
            row = connection.execute(sa.select(_blobs.c.codec, _blobs.c.data).where(_blobs.c.sha256 == sha)).first()
            if row is not None:
                found[sha] = unpack(sha, row[0], row[1])
        return found

    return get


def _longer(column: Any) -> Any:
    """Rows whose JSON text is at least the blob threshold (anything smaller has no field to move)."""
    return sa.func.length(sa.cast(column, sa.Text)) >= BLOB_THRESHOLD


def _ordered_checkpoint_ids(connection: sa.Connection, invocation_id: str) -> list[str]:
    # Newest first by the run's own sequence (as the store orders them): longer ids are later.
    return [
        row[0]
        for row in connection.execute(
            sa.select(_checkpoints.c.checkpoint_id)
            .where(_checkpoints.c.invocation_id == invocation_id)
            .order_by(sa.func.length(_checkpoints.c.checkpoint_id).desc(), _checkpoints.c.checkpoint_id.desc())
        )
    ]


def upgrade() -> None:
    op.create_table(
        "blobs",
        sa.Column("sha256", sa.String(), primary_key=True),
        sa.Column("codec", sa.String(), nullable=False),
        sa.Column("size", sa.BigInteger(), nullable=False),
        sa.Column("data", sa.LargeBinary(), nullable=False),
    )
    op.create_table(
        "run_messages",
        sa.Column("invocation_id", sa.String(), primary_key=True),
        sa.Column("idx", sa.Integer(), primary_key=True),
        sa.Column("message", sa.JSON(), nullable=False),
    )
    with op.batch_alter_table("block_events") as batch:
        batch.add_column(sa.Column("blob_refs", sa.JSON(), nullable=True))
    with op.batch_alter_table("audit_log") as batch:
        batch.add_column(sa.Column("shown_args_ref", sa.String(), nullable=True))

    connection = op.get_bind()
    put = _putter(connection)
    invocations = [row[0] for row in connection.execute(sa.select(_checkpoints.c.invocation_id).distinct())]
    for invocation_id in invocations:
        ordered = _ordered_checkpoint_ids(connection, invocation_id)
        named = {
            row[0]
            for row in connection.execute(
                sa.select(_requests.c.checkpoint_id).where(
                    _requests.c.invocation_id == invocation_id,
                    _requests.c.status == "pending",
                    _requests.c.checkpoint_id.is_not(None),
                )
            )
        }
        keep = [ordered[0], *(c for c in ordered[1:] if c in named)]
        for checkpoint_id in ordered:
            if checkpoint_id not in keep:
                connection.execute(sa.delete(_checkpoints).where(_checkpoints.c.checkpoint_id == checkpoint_id))
        for position, checkpoint_id in enumerate(keep):
            state = connection.execute(
                sa.select(_checkpoints.c.state).where(_checkpoints.c.checkpoint_id == checkpoint_id)
            ).scalar()
            if not isinstance(state, dict) or state.get("format") == STATE_FORMAT:
                continue
            messages = list(state.get("messages") or [])
            if position == 0:  # the newest holds the whole conversation; older ones hold a prefix of it
                for index, message in enumerate(messages):
                    connection.execute(
                        sa.insert(_messages).values(
                            invocation_id=invocation_id, idx=index, message=externalize_message(message, put)
                        )
                    )
            rest = {key: value for key, value in state.items() if key != "messages"}
            stored = externalize_state(rest, put)
            stored["format"] = STATE_FORMAT
            stored["message_count"] = len(messages)
            connection.execute(
                sa.update(_checkpoints).where(_checkpoints.c.checkpoint_id == checkpoint_id).values(state=stored)
            )

    for seq, data in connection.execute(sa.select(_events.c.seq, _events.c.data).where(_longer(_events.c.data))).all():
        if isinstance(data, dict):
            rest, refs = externalize(data, put)
            if refs:
                connection.execute(sa.update(_events).where(_events.c.seq == seq).values(data=rest, blob_refs=refs))

    rows = connection.execute(sa.select(_audit.c.id, _audit.c.shown_args).where(_longer(_audit.c.shown_args))).all()
    for row_id, shown in rows:
        encoded = encode_value(shown)
        if encoded is not None:
            ref = f"{encoded[0]}:{put(encoded[1])}"
            connection.execute(
                sa.update(_audit).where(_audit.c.id == row_id).values(shown_args=sa.null(), shown_args_ref=ref)
            )


def downgrade() -> None:
    connection = op.get_bind()
    get = _getter(connection)
    for row_id, ref in connection.execute(
        sa.select(_audit.c.id, _audit.c.shown_args_ref).where(_audit.c.shown_args_ref.is_not(None))
    ).all():
        blobs = get([ref[2:]])
        restored = internalize({}, {"shown_args": ref}, blobs)["shown_args"]
        connection.execute(sa.update(_audit).where(_audit.c.id == row_id).values(shown_args=restored))
    for seq, data, refs in connection.execute(
        sa.select(_events.c.seq, _events.c.data, _events.c.blob_refs).where(_events.c.blob_refs.is_not(None))
    ).all():
        restored = internalize(data or {}, refs, get(ref_digests(refs)))
        connection.execute(sa.update(_events).where(_events.c.seq == seq).values(data=restored))
    for checkpoint_id, invocation_id, state in connection.execute(
        sa.select(_checkpoints.c.checkpoint_id, _checkpoints.c.invocation_id, _checkpoints.c.state)
    ).all():
        if not isinstance(state, dict) or state.get("format") != STATE_FORMAT:
            continue
        count = int(state.get("message_count") or 0)
        messages = [
            row[0]
            for row in connection.execute(
                sa.select(_messages.c.message)
                .where(_messages.c.invocation_id == invocation_id, _messages.c.idx < count)
                .order_by(_messages.c.idx)
            )
        ]
        digests = state_digests(state) + [sha for m in messages for sha in message_digests(m)]
        blobs = get(digests)
        full = internalize_state(state, blobs)
        full.pop("format", None)
        full.pop("message_count", None)
        full["messages"] = [internalize_message(m, blobs) for m in messages]
        connection.execute(
            sa.update(_checkpoints).where(_checkpoints.c.checkpoint_id == checkpoint_id).values(state=full)
        )
    with op.batch_alter_table("audit_log") as batch:
        batch.drop_column("shown_args_ref")
    with op.batch_alter_table("block_events") as batch:
        batch.drop_column("blob_refs")
    op.drop_table("run_messages")
    op.drop_table("blobs")
