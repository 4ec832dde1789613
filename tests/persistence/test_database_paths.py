"""A database named by a path is that file, whatever characters the path holds.

A path is not a URL: ``?`` and ``%`` in a directory name once made SQLAlchemy open another file (``/tmp/a?b/x.db``
opened ``/tmp/a``; ``%41`` became ``A``), so requests went to a database nobody was looking at.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from reviewer_app.domain.hitl import HITLType
from reviewer_app.domain.records import NewRequest
from reviewer_app.persistence.engine import database_url, sqlite_path
from reviewer_app.persistence.store import Store


@pytest.mark.parametrize("directory", ["a?b", "a%41b", "100% sure", "a#b", "a b"])
def test_a_path_with_url_characters_opens_exactly_that_file(tmp_path: Path, directory: str) -> None:
    folder = tmp_path / directory
    folder.mkdir()
    target = folder / "reviews.db"
    assert sqlite_path(database_url(target)) == target.resolve()
    store = Store.open(target)
    try:
        with store.transaction() as tx:
            tx.requests.create(
                NewRequest(hitl_id="h1", hitl_type=HITLType.TOOL_APPROVAL.value, session_id="s", invocation_id="i")
            )
    finally:
        store.close()
    assert target.is_file()
    assert sorted(p.name for p in tmp_path.iterdir()) == [directory]  # nothing was created beside it
    reopened = Store.open(target)
    try:
        assert reopened.requests.get("h1") is not None
    finally:
        reopened.close()


def test_the_window_shows_such_a_database_as_its_plain_path(tmp_path: Path) -> None:
    from reviewer_app.ui.window.about import mask_url

    target = tmp_path / "a?b%41" / "reviews.db"
    assert mask_url(database_url(target)) == str(target.resolve())
    assert mask_url("postgresql://alice:secret@db/reviews") == "postgresql://alice:***@db/reviews"
