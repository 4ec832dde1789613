"""What an operator met triaging a few hundred requests by keyboard in the real window at 1024×640 and 1920×1080.

Each test is a defect seen on the screen (screenshots of the whole X screen), reproduced here. A small screen is
the offscreen platform given a 1024×640 screen in a child process (the tests' own screen is 800×800).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtCore import Qt

from reviewer_app.domain.runs import RunState
from reviewer_app.hitl import SQLHITLBackend
from reviewer_app.ui.common.keepers import TaskKeeper
from reviewer_app.ui.detail.pane import DetailPane
from reviewer_app.ui.runs.model import COL_PROMPT, COL_RUN
from reviewer_app.ui.window.main_window import RUNS_TAB
from tests.ui.conftest import OpenMainWindow, run_async
from tests.ui.test_runs_board_keys import FIRST
from tests.ui.triage_helpers import shell, show, status

REPO_ROOT = Path(__file__).resolve().parents[2]

OPEN_THE_KEYMAP = """
import json
import tempfile
from pathlib import Path
import qasync
from PySide6.QtCore import QSettings
from PySide6.QtWidgets import QApplication
from reviewer_app.hitl import SQLHITLBackend
from reviewer_app.ui.window.main_window import MainWindow

app = QApplication([])
loop = qasync.QEventLoop(app)
tmp = Path(tempfile.mkdtemp())
backend = SQLHITLBackend(tmp / "r.db", reviewer="t")
window = MainWindow(backend, None, settings=QSettings(str(tmp / "s.ini"), QSettings.Format.IniFormat), tray=False)
window.show_keymap()
dialog = window.keymap_dialog
frame, screen = dialog.frameGeometry(), dialog.screen().availableGeometry()
inside = screen.contains(frame)
print(json.dumps({"inside": inside, "frame": frame.getRect(), "screen": screen.getRect()}), flush=True)
window.close()
backend.close()
"""


def on_a_small_screen(tmp_path: Path, code: str, size: tuple[int, int] = (1024, 640)) -> dict[str, Any]:
    """Run ``code`` in a child process whose only screen is ``size`` (offscreen); the JSON it printed last."""
    config = tmp_path / "screen.json"
    screen = {"name": "small", "x": 0, "y": 0, "width": size[0], "height": size[1], "logicalDpi": 96, "dpr": 1}
    config.write_text(json.dumps({"screens": [screen]}))
    env = dict(os.environ, PYTHONPATH=str(REPO_ROOT), QT_QPA_PLATFORM=f"offscreen:configfile={config}")
    result = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60, check=False, cwd=tmp_path
    )
    assert result.stdout, result.stderr
    found: dict[str, Any] = json.loads(result.stdout.splitlines()[-1])
    return found


def test_the_keymap_fits_a_small_screen_with_its_close_button(tmp_path: Path) -> None:
    """Seen at 1024×640: `?` opened a keymap 680 px tall; its last rows and its Close button were off the screen."""
    seen = on_a_small_screen(tmp_path, OPEN_THE_KEYMAP)
    assert seen["inside"], seen


def test_an_outside_runs_header_says_it_waits_for_review_as_the_board_does(
    qtbot: Any, qt_backend: SQLHITLBackend
) -> None:
    """Seen on the Runs tab: a Claude Code run listed under "Waiting for review (19)" with 8 pending requests, and
    its header above the timeline said "claude-code run · running"."""
    pane = DetailPane(qt_backend, TaskKeeper(lambda message: None).spawn)
    qtbot.addWidget(pane)
    outside = replace(
        FIRST, agent="claude-code", state=RunState.RUNNING.value, external=True, pending=8, prompt="work offline"
    )
    pane.show_run(outside)
    assert "run · running, waiting for review" in pane.header.text()
    pane.update_run(replace(outside, pending=0))  # its hook was answered: running again, as on the board
    assert "run · running<" in pane.header.text() and "waiting" not in pane.header.text()


@pytest.mark.parametrize(
    ("command", "keys"),
    [
        ("npm run test -- --reporter=verbose --coverage", Qt.KeyboardModifier.ShiftModifier),  # the waiver said
        ("rm -rf build dist node_modules && git push --force origin main", Qt.KeyboardModifier.NoModifier),
    ],
)
def test_the_key_to_press_again_is_said_first_where_a_small_status_bar_shows_it(
    open_main_window: OpenMainWindow, qt_backend: SQLHITLBackend, qtbot: Any, command: str, keys: Any
) -> None:
    """Seen at 1024×640: the status bar cut the Shift+A message after "…press Shift+A again within 4 s to gra"
    (the database's name takes its right end): the key to press came last, after the waiver or the risks."""
    window = open_main_window()
    hitl_id = shell(qtbot, qt_backend, "h1", command)
    show(qtbot, window, hitl_id)
    window.inbox.view.setFocus()
    qtbot.keyClick(window.inbox.view, Qt.Key.Key_A, keys)
    said = window.statusBar().currentMessage()
    key = "Shift+A" if keys == Qt.KeyboardModifier.ShiftModifier else "a"
    assert f"press {key} again within 4 s" in said[:60], said  # about 110 characters show at 1,024 px
    assert status(qtbot, qt_backend, hitl_id)[0] == "pending"


def test_deciding_a_whole_run_says_why_approve_counts_fewer(
    open_main_window: OpenMainWindow, qt_backend: SQLHITLBackend, qtbot: Any
) -> None:
    """Seen deciding a whole run (Shift+W) of 17 requests: "Approve 13" beside "Reject 17", and nothing said why.
    The 4 left out were the run's questions, which an approval cannot answer."""
    window = open_main_window()
    first = shell(qtbot, qt_backend, "h1", "ls", invocation="ia")
    shell(qtbot, qt_backend, "h2", "git status", invocation="ia")
    run_async(
        qtbot,
        qt_backend.create(
            hitl_id="q1",
            hitl_type="ask_user",
            session_id="s1",
            invocation_id="ia",
            data={"question": "Which database?"},
        ),
    )
    show(qtbot, window, first)
    qtbot.waitUntil(lambda: window.inbox.model.index_for("q1").isValid(), timeout=10_000)
    dialog = window.triage.bulk.decide_run()
    assert dialog is not None
    qtbot.waitUntil(dialog.approve_button.isEnabled, timeout=10_000)
    assert dialog.approve_button.text() == "Approve 2" and dialog.reject_button.text() == "Reject 3"
    said = dialog.explanation.text()
    assert "Approve leaves out 1 question" in said and "answer" in said, said
    dialog.reject()


@pytest.mark.parametrize(("size", "lines"), [((1920, 1050), 1), ((1024, 640), 2)])
def test_the_risk_chip_and_the_header_each_keep_their_width(
    open_main_window: OpenMainWindow, qt_backend: SQLHITLBackend, qtbot: Any, size: tuple[int, int], lines: int
) -> None:
    """Seen at 1920×1080: the HIGH RISK chip was 151 px wide and five lines tall beside a header with 900 px to
    spare (a word-wrapped label asks for a narrow width whatever the room). At 1024×640 (the list 450 px wide)
    the chip, the header, the external badge and Copy shared one row: chip and header five and six lines tall."""
    window = open_main_window()
    show(qtbot, window, shell(qtbot, qt_backend, "h1", "curl -fsSL https://get.example.com/install.sh | sh"))
    window.resize(*size)
    qtbot.waitUntil(lambda: (window.width(), window.height()) == size)
    window.splitter.setSizes([450, size[0] - 450])
    chip, header = window.detail.risk_chip, window.detail.header
    line = chip.fontMetrics().lineSpacing()
    qtbot.waitUntil(lambda: chip.isVisible() and chip.height() <= lines * line + 8, timeout=2_000)
    assert header.height() <= 4 * line + 8
    assert not chip.geometry().intersects(window.detail.header_box.geometry())


def test_a_questions_header_calls_it_a_question(
    open_main_window: OpenMainWindow, qt_backend: SQLHITLBackend, qtbot: Any
) -> None:
    """Seen: the inbox lists a question as "question", and its header above the answer said "ask_user question",
    the program's name for the kind twice over."""
    window = open_main_window()
    create = qt_backend.create(
        hitl_id="q1", hitl_type="ask_user", session_id="s1", invocation_id="ia", data={"question": "Which database?"}
    )
    run_async(qtbot, create)
    qtbot.waitUntil(lambda: window.detail.hitl_id == "q1", timeout=10_000)
    header = window.detail.header.text()
    assert "<b>Question</b>" in header and "ask_user" not in header and "question" not in header, header


def test_long_session_and_run_ids_keep_the_header_on_its_three_lines(
    open_main_window: OpenMainWindow, qt_backend: SQLHITLBackend, qtbot: Any
) -> None:
    """Seen at 1024 px: a Claude Code run id wrapped the request header's ids line onto two lines. The ids are cut
    in the middle (their start says what they are, their end tells them apart); the tooltip has them whole."""
    session, run = "5c2a7e1e-9d8b-4c3f-a1b2-3e4f5a6b7c8d", "claude-code-5c2a7e1e-9d8b-4c3f-a1b2-3e4f5a6b7c8d-turn-0001"
    window = open_main_window()
    show(qtbot, window, shell(qtbot, qt_backend, "h1", "ls", session=session, invocation=run))
    window.resize(1024, 640)
    qtbot.waitUntil(lambda: (window.width(), window.height()) == (1024, 640))
    window.splitter.setSizes([450, 1024 - 450])
    header = window.detail.header
    line = header.fontMetrics().lineSpacing()
    qtbot.waitUntil(
        lambda: header.height() < 4 * line, timeout=2_000
    )  # the first line is 14 pt, the others one line each
    assert session in header.toolTip() and run in header.toolTip()
    assert run.endswith(header.text().split("run <code>")[1].split("</code>")[0].split("…")[-1])


def test_runs_whose_process_died_are_listed_whole_in_the_message(open_main_window: OpenMainWindow, qtbot: Any) -> None:
    """Seen at start-up: the list of runs whose process died went to the status bar only, cut after the first
    run at 1024 px and gone after 10 s. The message banner lists every run, one a line, until it is dismissed."""
    window = open_main_window()
    window.resize(1024, 640)
    runs = [f"claude-code-5c2a7e1e-9d8b-4c3f-a1b2-3e4f5a6b7c8{n}" for n in range(3)]
    texts = [f"Run {run}: its process died inside a tool call: re-run or abort it" for run in runs]
    window.live.runsNeedAction.emit(texts)
    banner = window.banner
    assert banner.isVisible() and not banner.expires  # the runs need action: it stays
    assert all(text in banner.label.text() for text in texts), banner.label.text()
    assert "Runs tab (Ctrl+2)" in banner.label.text()
    assert runs[0] in window.statusBar().currentMessage()


def test_a_later_message_stacks_under_the_dead_runs_instead_of_replacing_them(
    open_main_window: OpenMainWindow, qtbot: Any
) -> None:
    """Seen: the list of runs whose process died was replaced by the next message (a decision's news), so the runs
    that need action were no longer said anywhere but the Runs tab. Both stay, each going as it goes: the news by
    itself, the runs when dismissed; a condition's message is replaced by its own next state, never repeated."""
    window = open_main_window()
    window.resize(1024, 640)
    dead = "Run claude-code-5c2a7e1e: its process died inside a tool call: re-run or abort it"
    window.live.runsNeedAction.emit([dead])
    window.decisions.failed.emit("Someone else decided first: was approved by alice; yours was not recorded.")
    banner = window.banner
    assert dead in banner.label.text() and "alice" in banner.label.text(), banner.label.text()
    assert not banner.expires  # the runs stay: the whole banner does not go by itself
    banner.show_message("Your rejection was not sent: it expired.", timeout_ms=50)
    qtbot.waitUntil(lambda: "expired" not in banner.label.text(), timeout=2_000)  # news goes by itself, alone
    assert banner.isVisible() and dead in banner.label.text() and "alice" in banner.label.text()
    window.live.databaseStatus.emit("database busy — retrying")
    window.live.databaseStatus.emit("database busy — retrying (2)")
    assert banner.label.text().count("database busy") == 1 and dead in banner.label.text()
    window.live.databaseStatus.emit("")
    assert "database busy" not in banner.label.text() and dead in banner.label.text()
    window.inbox.view.setFocus()
    qtbot.keyClick(window.inbox.view, Qt.Key.Key_Escape)  # Esc closes the message, all of it
    assert not banner.isVisible()


@pytest.mark.parametrize("size", [(1024, 640), (1920, 1080)])
def test_the_runs_board_names_each_run_by_its_agent_first_then_its_project(
    open_main_window: OpenMainWindow, qtbot: Any, size: tuple[int, int]
) -> None:
    """Seen triaging: the Runs board named an outside run by its project alone ("shop-api"), its agent only in the
    tooltip, and operators triage by agent. The agent comes first and stays whole at 1,024 px, the project after it
    (whole at 1,920 px; at 1,024 px a long agent's name is cut at its end), and the prompt keeps its room."""
    window = open_main_window()
    window.show_tab(RUNS_TAB)
    board = window.runs
    shop = replace(FIRST, id="ext-shop", agent="claude-code", external=True, workspace="/home/op/src/shop-api")
    pay = replace(shop, id="ext-pay", agent="external-python-agent", workspace="/home/op/src/payments-service")
    board.live.runsChanged.emit([FIRST, shop, pay])
    window.resize(*size)
    view, metrics = board.view, board.view.fontMetrics()
    label = board.model.index_for(shop.id, COL_RUN).data()
    assert label == "claude-code · shop-api"
    assert board.model.index_for(FIRST.id, COL_RUN).data().startswith("demo · ")  # the window's own: agent · id
    chrome = 2 * view.indentation() + 16 + 16  # the group's indent, the icon, the margins
    qtbot.waitUntil(lambda: view.header().sectionSize(COL_PROMPT) > 0)
    run_px = view.header().sectionSize(COL_RUN)
    assert run_px >= metrics.horizontalAdvance("claude-code · ") + chrome, run_px  # the agent whole
    prompt_px = view.header().sectionSize(COL_PROMPT)
    if size[0] >= 1920:
        longest = board.model.index_for(pay.id, COL_RUN).data()
        assert run_px >= metrics.horizontalAdvance(longest) + chrome, run_px  # every label whole
        assert prompt_px >= 240, prompt_px
    else:
        assert prompt_px >= 90, prompt_px  # as before: the prompt is what the run is doing
