"""``store.audit.signed_decided_among``: a waiting agent's look-up, the decided requests with their audit rows in one
statement (at most 500 names a statement), on SQLite and PostgreSQL alike."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import psycopg
import pytest

from reviewer_app.domain.records import NewRequest
from reviewer_app.persistence.engine import sqlite_path
from reviewer_app.persistence.store import Store


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def database(request: pytest.FixtureRequest, db_path: Path) -> str:
    if request.param == "sqlite":
        return str(db_path)
    url: str = request.getfixturevalue("pg_url")
    return url


def _rewrite_message(store: Store, hitl_id: str) -> None:
    """Change a decided request's message behind the store's back, as another program (on PostgreSQL, a superuser)
    could."""
    path = sqlite_path(store.url)
    if path is not None:
        with sqlite3.connect(path) as raw:
            raw.execute(
                "UPDATE hitl_requests SET user_response = json_set(user_response, '$.message', 'yes')"
                " WHERE hitl_id = ?",
                (hitl_id,),
            )
        return
    with psycopg.connect(str(store.url).replace("postgresql+psycopg://", "postgresql://"), autocommit=True) as raw:
        raw.execute("SET session_replication_role = replica")  # past the trigger that keeps decided rows final
        raw.execute(
            "UPDATE hitl_requests SET user_response = jsonb_set(user_response::jsonb, '{message}', '\"yes\"')::json"
            " WHERE hitl_id = %s",
            (hitl_id,),
        )


def test_a_look_up_of_many_names_finds_each_decided_request_once_and_what_its_audit_row_does_not_sign(
    database: str,
) -> None:
    store = Store.open(database)
    try:
        ids = [f"h{i:04d}" for i in range(1_200)]
        decided = [*ids[::97], "h0499", "h0500", "h1000"]  # across the statements' 500-name boundaries
        with store.transaction() as tx:
            for hitl_id in ids:
                tx.requests.create(NewRequest(hitl_id=hitl_id, hitl_type="ask_user", session_id="s", invocation_id="i"))
        with store.transaction() as tx:
            for hitl_id in decided:
                tx.requests.decide(hitl_id, {"decision": "reject", "message": "no"}, reviewer="erin")
        _rewrite_message(store, "h0500")
        asked = [*ids, "nobody", ids[3]]  # an unknown name and a name twice
        with store.sharing_one_connection():
            records, problems = store.audit.signed_decided_among(asked)
        assert sorted(str(r["hitl_id"]) for r in records) == sorted(set(decided))
        assert {str(r["hitl_id"]): r["user_response"]["message"] for r in records}["h0499"] == "no"
        assert list(problems) == ["h0500"], problems
        assert store.audit.signed_decided_among(["h0001", "nobody"]) == ([], {})
    finally:
        store.close()
