"""Start the window: QApplication, the qasync loop, the backend, the agent runtime, the main window.

Everything the window does runs on one thread: Qt's event loop drives asyncio
(qasync), the backend's database work happens on its own worker thread and comes
back as awaited results.
"""

from __future__ import annotations

import asyncio
import importlib
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QSettings
from PySide6.QtWidgets import QApplication, QMessageBox
from qasync import QEventLoop

from reviewer_app.config import APP_AUTHOR, AppContext, default_agents_file
from reviewer_app.domain.hitl import SchemaTooNew
from reviewer_app.ui.common import theme
from reviewer_app.ui.desktop.single_instance import SingleInstance
from reviewer_app.ui.startup.first_screen import FirstScreenWindow, resolve_once, wants_first_screen
from reviewer_app.ui.startup.gc_guard import MainThreadGC
from reviewer_app.ui.startup.platform_guard import EXIT_NO_WINDOW, WindowUnavailable, create_application

if TYPE_CHECKING:  # imported in run_gui, after the first screen is painted
    from reviewer_app.hitl import SQLHITLBackend
    from reviewer_app.ui.window.main_window import MainWindow

EXIT_CANNOT_OPEN = 2
SCREENSHOT_TIMEOUT_S = 90.0
RUNTIME_AFTER_QUIET_S = 0.5
RUNTIME_WAITS_AT_MOST_S = 3.0
# Imported on a worker thread once the first screen is painted: the persistence layer and the backend (SQLAlchemy,
# SQLModel, pydantic: most of the start), then the main window's plain-Python parts. Modules that create Qt
# objects are imported on the GUI thread only.
BACKGROUND_IMPORTS = (
    "reviewer_app.hitl.backend",
    "reviewer_app.preview.request",
    "reviewer_app.domain.explain",
    "orjson",  # ~14 ms: not in the first selection of a large request (its decoding and hash use it)
    "pathspec",  # ~40 ms: the first request shown waited for it (its risk's sensitive-path check imports it)
    "wcmatch.glob",  # ~29 ms: the risk of a command with a wildcard expands it as bash would
)


def make_app() -> QApplication:
    """The application, without its icon yet: :func:`set_app_icon` (its SVG and PNGs cost the first paint ~10 ms)."""
    existing = QApplication.instance()
    app = existing if isinstance(existing, QApplication) else create_application(sys.argv[:1])
    app.setApplicationName("Reviewer")
    app.setOrganizationName(APP_AUTHOR)
    app.setDesktopFileName("reviewer-app")
    if sys.platform.startswith("linux") and app.style().name().lower() != "fusion":
        app.setStyle("Fusion")  # so our palette can follow the OS light/dark scheme
    return app


def set_app_icon(app: QApplication) -> None:
    """The app icon, for every window without its own."""
    app.setWindowIcon(theme.icon("app"))


def open_failure_text(database: str, exc: BaseException) -> tuple[str, str]:
    """What to tell someone whose database cannot be opened (title line, details)."""
    if isinstance(exc, SchemaTooNew):
        return (
            "This database was written by a newer version of Reviewer.",
            f"{exc}\n\nOpening it with this version could damage it, so Reviewer stops here. "
            "Install the newer Reviewer, or start with another database (--db PATH).",
        )
    text = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    hint = ""
    if "locked" in text.lower():
        hint = "\n\nAnother program holds a lock on it; close it or wait, then start Reviewer again."
    return (
        "Reviewer could not open its database.",
        f"{database}\n\n{type(exc).__name__}: {text}{hint}",
    )


def report_open_failure(database: str, exc: BaseException) -> int:
    """A clear message box (and a line on stderr), then exit code 2: never a traceback."""
    title, details = open_failure_text(database, exc)
    sys.stderr.write(f"reviewer-app: {title} {details.splitlines()[-1] if details else ''}\n")
    box = QMessageBox(QMessageBox.Icon.Critical, "Reviewer cannot start", title)
    box.setObjectName("openFailureBox")
    box.setInformativeText(details)
    box.exec()  # no event loop of ours is running yet: a plain modal box is fine here
    return EXIT_CANNOT_OPEN


def build_runtime(backend: SQLHITLBackend, ctx: AppContext) -> tuple[Any, str | None]:
    """The agent runtime, or None and the reason when it cannot be built (the window still reviews)."""
    try:
        from reviewer_app.runtime.agents import AgentCatalog
        from reviewer_app.runtime.runner import Runtime

        catalog = AgentCatalog.load(ctx.agents_file, default_path=default_agents_file())
        return Runtime(backend, catalog, workspaces_dir=ctx.workspaces_dir), None
    except Exception as exc:
        return None, f"Agents are not available ({type(exc).__name__}: {exc}); you can still review requests."


async def build_runtime_soon(backend: SQLHITLBackend, ctx: AppContext) -> tuple[Any, str | None]:
    """:func:`build_runtime`, its modules (~0.2 s of imports) imported on a worker thread first.

    The imports still share the interpreter with the GUI thread, but in slices: the window keeps
    painting and taking keys instead of freezing for the whole import.
    """
    try:
        await asyncio.to_thread(importlib.import_module, "reviewer_app.runtime.runner")
        await asyncio.to_thread(importlib.import_module, "reviewer_app.runtime.agents")
    except Exception:  # build_runtime below imports them again and reports the problem
        pass
    return build_runtime(backend, ctx)


async def _until(predicate: Any, deadline: float) -> bool:
    """Poll GUI state from the loop (no signal says "the demo is fully on screen")."""
    loop = asyncio.get_running_loop()
    while True:
        if predicate():
            return True
        if loop.time() > deadline:
            return False
        await asyncio.sleep(0.1)


async def take_screenshot(window: MainWindow, path: Path, expect: int) -> int:
    """Wait for the demo requests, show the first write_file request with its diff, grab the window."""
    deadline = asyncio.get_running_loop().time() + SCREENSHOT_TIMEOUT_S
    await _until(lambda: window.inbox.model.visible_count >= expect, deadline)
    target = next((s.hitl_id for s in window.inbox.model.iter_requests() if s.tool_name == "write_file"), None)
    if target is not None:
        window.inbox.select_request(target)
    await _until(lambda: window.detail.prepared is not None and window.detail.timeline_model.rowCount() > 0, deadline)
    await asyncio.sleep(1.0)  # let the last paints land
    path.parent.mkdir(parents=True, exist_ok=True)
    ok = window.grab().save(str(path))
    shown = window.inbox.model.visible_count
    sys.stdout.write(f"screenshot {'saved to' if ok else 'FAILED for'} {path} ({shown} requests shown)\n")
    return 0 if ok and shown >= expect else 1


def run_gui(ctx: AppContext, *, demo: bool = False, screenshot: str | None = None) -> int:
    """Open the window on ``ctx.database``; returns the exit code (2: the database cannot be opened, 5: no window)."""
    try:
        app = make_app()
    except WindowUnavailable as exc:
        sys.stderr.write(f"reviewer-app: {exc}\n")
        return EXIT_NO_WINDOW
    watcher = theme.ThemeWatcher(app)
    instance = SingleInstance(ctx.database)
    if screenshot is None and instance.hand_over():  # this database's window is open: it comes to the front
        sys.stdout.write("reviewer-app: a window for this database is already open; it was brought to the front\n")
        return 0
    collector = MainThreadGC(app)  # Qt objects must never be finalised on the database thread
    loop = QEventLoop(app)
    asyncio.set_event_loop(loop)
    settings_dir = tempfile.TemporaryDirectory(prefix="reviewer-shot-") if screenshot else None
    settings = (
        QSettings(str(Path(settings_dir.name) / "ui.ini"), QSettings.Format.IniFormat) if settings_dir else QSettings()
    )
    backend: SQLHITLBackend | None = None
    fronts: list[FirstScreenWindow | MainWindow] = []  # the windows shown so far; the newest answers a second launch

    def shown(window: FirstScreenWindow | MainWindow) -> None:
        """``window`` is this database's window now; from the first one on, later launches bring it forward."""
        fronts.append(window)
        if len(fronts) == 1 and screenshot is None and instance.listen():
            instance.activated.connect(lambda: fronts[-1].bring_to_front())  # noqa: PLW0108 (the newest, when asked)
            instance.activated.connect(lambda: sys.stderr.write("reviewer-app: another launch asked for this window\n"))

    app.setQuitOnLastWindowClosed(False)  # closing the window ends main() below, which stops the runtime first
    try:
        wanted = screenshot is None and wants_first_screen(ctx.database, settings)
        first = FirstScreenWindow(settings) if wanted else None
        if first is not None:  # paint the first page, then import the backend while the operator reads it
            shown(first)
            loop.run_until_complete(first.open(ctx.database))
        set_app_icon(app)  # (after the first screen is painted: it has no icon for those few milliseconds)
        if first is not None:
            for module in BACKGROUND_IMPORTS:  # the GUI thread keeps painting and taking j/k meanwhile
                loop.run_until_complete(asyncio.to_thread(importlib.import_module, module))
        from reviewer_app.hitl import SQLHITLBackend

        if first is not None and first.closed_by_operator:
            return 0
        try:
            backend = SQLHITLBackend(ctx.database, reviewer=ctx.reviewer)
        except Exception as exc:
            if first is not None:
                first.close()
            return report_open_failure(ctx.database, exc)
        code = _run_window(app, loop, backend, ctx, settings, shown, watcher, first, demo, screenshot)
    finally:
        instance.close()
        if backend is not None:
            backend.close()
        collector.stop()
        if settings_dir is not None:
            settings_dir.cleanup()
        if not loop.is_closed():
            loop.close()
    return code


def _run_window(
    app: QApplication,
    loop: QEventLoop,
    backend: SQLHITLBackend,
    ctx: AppContext,
    settings: QSettings,
    shown: Callable[[MainWindow], None],
    watcher: theme.ThemeWatcher,
    first: FirstScreenWindow | None,
    demo: bool,
    screenshot: str | None,
) -> int:
    """The main window on the open backend until it closes (it takes the first screen's place if there is one)."""
    from reviewer_app.ui.window.main_window import MainWindow

    window = MainWindow(backend, None, settings=settings, tray=screenshot is None)
    watcher.changed.connect(lambda _dark: window.update())
    shown(window)  # later launches on this database bring it to the front

    async def main() -> int:
        closed = asyncio.Event()
        window.closing.connect(closed.set)
        if screenshot:
            window.resize(1440, 900)
        else:
            window.fit_to_screen()
        if first is None:
            window.show()
            window.start()
        else:  # shown once it holds the rows the first screen shows, in its place
            loaded: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            window.live.refreshed.connect(lambda: resolve_once(loaded))
            window.start()
            await loaded
            if first.closed_by_operator:  # closed while starting: the operator wants no window
                window.close()
                return 0
            first.hand_over(window)
        code = 0
        # The inbox loads before the runtime is even built: importing it costs time, and recovering
        # many runs queues a lot of work on the one database thread; the first screen waits for neither.
        # Nor does the operator's typing: the runtime starts at the first pause (at most 3 s later).
        await window.live.wait_loaded(timeout=60)
        await window.wait_idle(quiet_s=RUNTIME_AFTER_QUIET_S, at_most_s=RUNTIME_WAITS_AT_MOST_S)
        runtime, runtime_problem = await build_runtime_soon(backend, ctx)
        window.set_runtime(runtime)
        if runtime_problem:
            window.show_error(runtime_problem)
        if runtime is not None:
            try:
                await runtime.start()
            except Exception as exc:
                window.show_error(f"The agent runtime did not start: {exc}")
            else:
                if demo:
                    try:
                        from reviewer_app.ui.startup.demo import start_demo_runs

                        await start_demo_runs(runtime, ctx.workspaces_dir)
                    except Exception as exc:
                        window.show_error(f"Could not start the demo runs: {exc}")
        if screenshot:
            code = await take_screenshot(window, Path(screenshot), expect=5 if demo else 1)
            window.close()
        await closed.wait()
        await window.triage.undo.drain()  # decisions committed on close are written before anything stops
        if runtime is not None:
            await runtime.stop()
        return code

    with loop:
        return int(loop.run_until_complete(main()))
