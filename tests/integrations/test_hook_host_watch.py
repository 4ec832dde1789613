"""How a waiting hook notices its host leaving without a signal: its answer pipe closing, its parent dying.

Each watch runs in a child process as the hook runs it (its own stdout, its own parent), with the fallback poll
set to an hour: only the events themselves can end the watch within the test's wait.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
from collections.abc import Iterator

import pytest

from tests.integrations.hook_helpers import REPO_ROOT

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX pipes and signals")

WAIT_S = 30  # far past any event's delivery; the poll the events replace would take an hour

_WATCH = """
import asyncio, sys, threading, time
from reviewer_app.integrations.claude_code import hook

hook.LIVENESS_POLL_S = 3600.0
STOP_AFTER = float(sys.argv[1])

async def main():
    stop = asyncio.Event()
    stopped_by = []
    if STOP_AFTER:
        asyncio.get_running_loop().call_later(STOP_AFTER, lambda: (stopped_by.append("decided"), stop.set()))
    watch = asyncio.create_task(hook._watch_host(stop, stopped_by))
    await asyncio.sleep(0)  # the watch ran up to its first wait: its parent noted, its signal armed
    sys.stderr.write("watching\\n")
    sys.stderr.flush()
    await watch
    return stopped_by

stopped_by = asyncio.run(main())
sys.stderr.write(f"stopped by: {stopped_by[0]}\\n")
deadline = time.monotonic() + 10
while threading.active_count() > 1 and time.monotonic() < deadline:
    time.sleep(0.01)
sys.stderr.write(f"threads left: {threading.active_count()}\\n")
"""

_PARENT = """
import subprocess, sys
child = subprocess.Popen([sys.executable, "-c", sys.argv[1], "0"], stdin=subprocess.DEVNULL)
print(child.pid, flush=True)
child.wait()
"""


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO_ROOT), os.environ.get("PYTHONPATH")]))}


@contextlib.contextmanager
def _watch(stop_after: float = 0) -> Iterator[subprocess.Popen[str]]:
    """A child process watching its host (killed at the end if the watch never ended)."""
    process = subprocess.Popen(
        [sys.executable, "-c", _WATCH, str(stop_after)],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=_env(),
    )
    try:
        assert process.stderr is not None
        assert process.stderr.readline() == "watching\n"
        yield process
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()


def _report(stderr: str) -> dict[str, str]:
    return dict(line.split(": ", 1) for line in stderr.splitlines() if ": " in line)


def test_the_host_closing_the_answer_pipe_ends_the_watch_at_once() -> None:
    with _watch() as process:
        assert process.stdout is not None
        process.stdout.close()  # the host went away: nobody will read the answer
        _, stderr = process.communicate(timeout=WAIT_S)
    assert process.returncode == 0, stderr
    assert _report(stderr)["stopped by"] == "the host stopped reading the answer"


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux's")
def test_the_host_process_dying_ends_the_watch_at_once() -> None:
    parent = subprocess.Popen(
        [sys.executable, "-c", _PARENT, _WATCH],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,  # shared with the watching child: it stays open when the parent dies
        stderr=subprocess.PIPE,
        text=True,
        env=_env(),
    )
    assert parent.stdout is not None and parent.stderr is not None
    child = int(parent.stdout.readline())
    try:
        assert parent.stderr.readline() == "watching\n"
        parent.kill()  # the host dies without a word; its child is re-parented
        _, stderr = parent.communicate(timeout=WAIT_S)  # both ends closed: the child exited too
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(child, signal.SIGKILL)
        if parent.poll() is None:
            parent.kill()
            parent.communicate()
    assert _report(stderr)["stopped by"] == "the host process exited"


def test_a_watch_ended_by_a_decision_leaves_no_thread_behind() -> None:
    with _watch(stop_after=0.2) as process:
        _, stderr = process.communicate(timeout=WAIT_S)
    assert process.returncode == 0, stderr
    report = _report(stderr)
    assert report["stopped by"] == "decided"
    assert report["threads left"] == "1"  # the thread waiting on the answer pipe was woken, and it ended
