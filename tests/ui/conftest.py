"""UI fixtures: a qasync loop on the test's QApplication, a real SQLite backend, temp QSettings."""

from __future__ import annotations

import asyncio
import gc
from collections.abc import Callable, Coroutine, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

import pytest
import qasync
import shiboken6
from PySide6.QtCore import QSettings

from reviewer_app.domain.decisions import Decision
from reviewer_app.domain.hitl import HITLRecord
from reviewer_app.domain.records import RequestSummary
from reviewer_app.hitl import SQLHITLBackend
from reviewer_app.runtime.runner import Runtime
from reviewer_app.ui.window.main_window import MainWindow
from tests.conftest import at_schema_head

T = TypeVar("T")

# The offscreen platform plugin warns whenever a top-level window's size constraints change, or a window is raised
# (it has no stacking order); xcb does not.
OFFSCREEN_NOISE = r"This plugin does not support (propagateSizeHints|raise)\(\)"


def pytest_collection_modifyitems(config: Any, items: list[Any]) -> None:
    here = Path(__file__).parent
    for item in items:
        if Path(str(item.fspath)).parent == here:
            item.add_marker(pytest.mark.qt_log_ignore(OFFSCREEN_NOISE))


class FrozenHeap:
    """The module whose UI tests run with the worker's older objects frozen (``gc.freeze``), if any."""

    module: Path | None = None

    @classmethod
    def thaw(cls) -> None:
        """Every object collectable again, and collected (on this, the GUI thread)."""
        if cls.module is not None:
            cls.module = None
            gc.unfreeze()
            gc.collect()


@pytest.fixture(autouse=True)
def gui_thread_gc(request: pytest.FixtureRequest) -> Iterator[None]:
    """Collect cycles on this (the GUI) thread only, as the app does (see reviewer_app.ui.startup.gc_guard).

    Each collection walks only the objects made since the one before: the worker's older heap (the whole
    collected suite, ~200,000 objects, ~0.15 s a walk) stays frozen while a module's UI tests run
    (``pytest_runtest_protocol`` collects what a test leaves once its fixtures' values are released, and thaws
    the heap after the module)."""
    was_enabled = gc.isenabled()
    gc.disable()
    gc.freeze()
    FrozenHeap.module = request.node.path
    yield
    gc.collect()
    if was_enabled:
        gc.enable()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[object]:
    """After a UI test, once pytest has released its fixtures' values, what it left is collected here, on the GUI
    thread, before the next test starts. The heap is thawed and collected whole after the last test of a module of
    UI tests (or of the worker), and before any test of another module (a worker's next test may have been given to
    another worker meanwhile), so no other test runs with it frozen."""
    if item.path != FrozenHeap.module:
        FrozenHeap.thaw()
    try:
        return (yield)
    finally:
        if nextitem is None or nextitem.path != item.path:
            FrozenHeap.thaw()
        elif FrozenHeap.module is not None:
            gc.collect()


@contextmanager
def qasync_loop(qapp: Any) -> Iterator[qasync.QEventLoop]:
    """An asyncio loop integrated with Qt: callbacks run whenever Qt processes events (qtbot.wait*).

    qasync's ``already_running=True`` mode is for a QApplication whose events something else
    processes, as pytest-qt does here: the loop counts as running, so tasks see it. Its ``stop()``
    calls ``QApplication.exit()`` without a running ``exec()``, which leaves Qt's quit flag set
    (every later nested event loop, e.g. ``qtbot.waitSignal``, would return at once) and asyncio's
    running loop still pointing at the stopped loop. One short ``run_until_complete`` on a fresh
    qasync loop enters ``QApplication.exec()`` properly, which clears both.
    """
    loop = qasync.QEventLoop(qapp, already_running=True)
    asyncio.set_event_loop(loop)
    try:
        yield loop
    finally:
        pending = [task for task in asyncio.all_tasks(loop) if not task.done()]
        for task in pending:
            task.cancel()
        deadline = loop.time() + 5
        while any(not task.done() for task in pending) and loop.time() < deadline:
            qapp.processEvents()
        loop.stop()
        loop.close()
        settle = qasync.QEventLoop(qapp)
        settle.run_until_complete(asyncio.sleep(0))
        settle.close()
        asyncio.set_event_loop(None)


@pytest.fixture
def qloop(qapp: Any) -> Iterator[qasync.QEventLoop]:
    with qasync_loop(qapp) as loop:
        yield loop


def run_async(qtbot: Any, coro: Coroutine[Any, Any, T], timeout: int = 15_000) -> T:
    """Run a coroutine on the qasync loop while the test waits outside it (never qtbot.wait* inside)."""
    task = asyncio.ensure_future(coro)
    qtbot.waitUntil(task.done, timeout=timeout)
    return task.result()


class RecordingRuntime(Runtime):
    """The real runtime, noting which decisions reached it (the window's decisions must go through it)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.decided_here: list[tuple[str, str]] = []

    async def decide_and_resume(self, hitl_id: str, decision: Decision) -> HITLRecord:
        self.decided_here.append((hitl_id, decision.kind.value))
        return await super().decide_and_resume(hitl_id, decision)


@pytest.fixture
def qt_backend(db_path: Path, migrated_sqlite: Path, qloop: qasync.QEventLoop) -> Iterator[SQLHITLBackend]:
    backend = SQLHITLBackend(at_schema_head(db_path, migrated_sqlite), reviewer="tester")
    yield backend
    backend.close()


@pytest.fixture
def ui_settings(tmp_path: Path) -> QSettings:
    """Settings in a temp INI file, never the user's.

    Decisions commit at once here (undo grace period 0), as the window tests written before undo expect; the
    undo tests (tests/ui/rules/test_undo.py) set the grace period they test, and check the default of 5 s.
    """
    settings = QSettings(str(tmp_path / "reviewer-ui.ini"), QSettings.Format.IniFormat)
    settings.setValue("decisions/undoGraceSeconds", 0)
    return settings


OpenMainWindow = Callable[..., MainWindow]


def window_models(window: MainWindow) -> tuple[Any, ...]:
    """The window's own models (inbox tree, runs board, timeline): what ``checked=`` usually watches."""
    return (window.inbox.model, window.runs.model, window.detail.timeline_model)


@pytest.fixture
def open_main_window(request: pytest.FixtureRequest, qtbot: Any, qtmodeltester: Any) -> Iterator[OpenMainWindow]:
    """Opens real windows on the test's database (the one way window tests build ``MainWindow``).

    ``open_main_window(runtime=None, *, backend=qt_backend, settings=ui_settings, checked=lambda w: (models…),
    show=True, start=True, loaded=True)``: the models ``checked`` returns are watched by QAbstractItemModelTester
    from before the first load; ``loaded`` waits until every page of the first load is in and the feed is idle.
    Every window opened is closed after the test.
    """
    opened: list[MainWindow] = []

    def open_window(
        runtime: Runtime | None = None,
        *,
        backend: SQLHITLBackend | None = None,
        settings: QSettings | None = None,
        checked: Callable[[MainWindow], Iterable[Any]] = lambda _window: (),
        show: bool = True,
        start: bool = True,
        loaded: bool = True,
    ) -> MainWindow:
        window = MainWindow(
            backend if backend is not None else request.getfixturevalue("qt_backend"),
            runtime,
            settings=settings if settings is not None else request.getfixturevalue("ui_settings"),
            tray=False,
        )
        qtbot.addWidget(window)
        opened.append(window)
        for model in checked(window):
            qtmodeltester.check(model)
        if show:
            window.show()
            window.activateWindow()
            qtbot.waitExposed(window)
        if start:
            window.start()
            if loaded:
                assert run_async(qtbot, window.live.wait_loaded(timeout=10))  # every page of the first load
                qtbot.waitUntil(lambda: not window.live.busy)
        return window

    yield open_window
    for window in opened:
        if shiboken6.isValid(window):
            window.close()


@pytest.fixture
def triage_window(open_main_window: OpenMainWindow) -> Iterator[MainWindow]:
    """A window with the triage models (inbox tree, rules table) watched by QAbstractItemModelTester."""
    from tests.ui.triage_helpers import triage_models

    window = open_main_window(checked=triage_models)
    yield window
    window.close()


def make_summary(
    n: int,
    *,
    session: str | None = None,
    invocation: str | None = None,
    tool: str | None = "run_shell",
    hitl_type: str = "tool_approval",
    status: str = "pending",
    summary: str | None = None,
    agent: str | None = "demo",
    created_at: int = 1_700_000_000,
    expires_at: int | None = None,
    decision: str | None = None,
    decided_by: str | None = None,
) -> RequestSummary:
    return RequestSummary(
        hitl_id=f"h{n:06d}",
        hitl_type=hitl_type,
        session_id=session or f"s{n // 50:04d}",
        invocation_id=invocation or f"i{n // 10:05d}",
        tool_name=tool,
        summary=summary if summary is not None else f"echo number {n}",
        agent=agent,
        status=status,
        created_at=created_at + n // 100,
        expires_at=expires_at,
        updated_at_ms=(created_at + n // 100) * 1000 + n % 100,
        decision=decision,
        decided_by=decided_by,
    )
