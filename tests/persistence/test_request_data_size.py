"""``Store.data_size``: a request's stored data measured without reading it, on SQLite and PostgreSQL."""

from __future__ import annotations

import json

from reviewer_app.domain.records import NewRequest
from reviewer_app.persistence.store import Store


def test_data_size_is_the_stored_json_length_and_none_for_an_unknown_request(any_db: str) -> None:
    store = Store.open(any_db)
    try:
        data = {"arguments": {"path": "a.txt", "content": "é" * 1000 + "x" * 5000}}
        with store.transaction() as tx:
            tx.requests.create(NewRequest("h1", "tool_approval", "s1", "i1", data=data, tool_name="write_file"))
        size = store.requests.data_size("h1")
        assert size is not None and size >= len(json.dumps(data).encode()) - 20  # the stored text, in bytes
        assert size < 2 * len(json.dumps(data).encode())
        assert store.requests.data_size("nope") is None
    finally:
        store.close()
