"""After collection, the objects every test shares are moved out of the cyclic collector's reach (``gc.freeze``).

Collecting imports the test modules and with them PySide6, SQLAlchemy, the agent frameworks, the MCP types: ~450,000
objects that live as long as the worker. Every full collection walked all of them, ~0.4 s of CPU each, and the
suite asks for many: the UI tests collect on the GUI thread after each test (``tests/ui/conftest.py``), every
window's collector collects when it stops, and CPython's own full collections come round as tests allocate. Frozen,
those objects are skipped; what the tests create afterwards is collected as before. The app freezes its long-lived
request summaries for the same reason (``reviewer_app/ui/inbox/panel.py``).

Registered as a plugin by ``tests/conftest.py``.
"""

from __future__ import annotations

import gc

import pytest


@pytest.hookimpl(trylast=True)
def pytest_collection_finish(session: pytest.Session) -> None:
    gc.collect()  # the garbage of collecting itself goes first: frozen objects are never freed
    gc.freeze()
