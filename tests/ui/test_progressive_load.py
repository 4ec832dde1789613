"""The inbox loads a big queue page by page: it says so while it does, and ends exactly right.

Pages are made tiny here so that a 40-request database takes several of them; another
connection (as another process would) decides and creates requests while the pages come in.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from PySide6.QtCore import QSettings

from reviewer_app.domain.records import NewRequest, RequestQuery
from reviewer_app.hitl import SQLHITLBackend
from reviewer_app.persistence.store import Store
from reviewer_app.ui.window import live
from tests.ui.conftest import OpenMainWindow


def _create(store: Store, *ids: str) -> None:
    with store.transaction() as tx:
        for hitl_id in ids:
            tx.requests.create(
                NewRequest(
                    hitl_id=hitl_id,
                    hitl_type="tool_approval",
                    session_id=f"s-{hitl_id[-1]}",
                    invocation_id=f"i-{hitl_id[-2:]}",
                    data={"arguments": {"command": f"echo {hitl_id}"}},
                    tool_name="run_shell",
                )
            )


def test_pages_arrive_with_an_honest_status_and_end_with_exactly_the_pending_requests(
    open_main_window: OpenMainWindow,
    qt_backend: SQLHITLBackend,
    db_path: Path,
    ui_settings: QSettings,
    qtbot: Any,
    monkeypatch: Any,
) -> None:
    monkeypatch.setattr(live, "FIRST_PAGE", 5)
    monkeypatch.setattr(live, "PAGE", 7)
    other = Store.open(db_path)  # another writer, as another process would be
    try:
        _create(other, *(f"p-{n:03d}" for n in range(40)))
        with other.transaction() as tx:  # ten minutes old: out of reach of the first refresh's slack
            tx.connection.exec_driver_sql(
                "UPDATE hitl_requests SET created_at = created_at - 600, updated_at = updated_at - 600,"
                " updated_at_ms = updated_at_ms - 600000"
            )
        win = open_main_window(checked=lambda window: (window.inbox.model,), show=False, start=False)
        seen: dict[str, Any] = {}
        progress: list[tuple[int, int]] = []
        win.live.loadProgress.connect(lambda loaded, expected: progress.append((loaded, expected)))

        def first_page_arrived(rows: list[Any]) -> None:
            if "status" in seen:
                return
            seen["status"] = win.inbox.status_label.text()
            seen["title"] = win.windowTitle()
            seen["loaded"] = win.inbox.model.source_count
            # Meanwhile elsewhere: one request not loaded yet and one loaded are decided, one is new.
            with other.transaction() as tx:
                tx.requests.decide("p-039", {"decision": "reject"}, reviewer="elsewhere")
                tx.requests.decide("p-000", {"decision": "reject"}, reviewer="elsewhere")
            _create(other, "p-new")

        win.live.requestsAppended.connect(first_page_arrived)
        win.show()
        win.start()
        qtbot.waitUntil(lambda: "status" in seen, timeout=10_000)
        qtbot.waitUntil(lambda: not win.live.loading and not win.live.busy, timeout=10_000)
        pending = {s.hitl_id for s in other.requests.summaries(RequestQuery())}
        assert len(pending) == 39
        qtbot.waitUntil(lambda: {s.hitl_id for s in win.inbox.model.iter_requests()} == pending, timeout=10_000)
    finally:
        other.close()
    # While pages were coming in the window said so, and counted from the database, not from its rows.
    assert seen["loaded"] == 12  # the first page (5) and one more (7)
    assert "loading… 5 of 40 loaded" in seen["status"]
    assert seen["title"] == "Reviewer (40 pending)"
    assert progress[0] == (5, 40) and progress[-1][0] == progress[-1][1]
    # Once everything is in: the exact pending set, counted, and no loading note.
    qtbot.waitUntil(lambda: win.windowTitle() == "Reviewer (39 pending)")
    assert win.inbox.model.source_count == win.inbox.model.visible_count == 39
    assert "loading" not in win.inbox.status_label.text()
    assert win.inbox.model.index_for("p-new").isValid() and not win.inbox.model.index_for("p-039").isValid()
    win.close()
