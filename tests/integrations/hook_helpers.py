"""Running the real hook command in a child process, as Claude Code and Codex do (JSON on stdin)."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

FIXTURES = Path("/work/shared/fixtures/claude-code")
REPO_ROOT = Path(__file__).resolve().parents[2]
DATA = Path(__file__).resolve().parent / "data"


def fixture(name: str) -> dict[str, Any]:
    """A payload captured from Claude Code 2.1.330 (the copy in tests/integrations/data when the shared one is gone)."""
    path = FIXTURES / name if (FIXTURES / name).exists() else DATA / name
    return json.loads(path.read_text(encoding="utf-8"))


def hook_env(tmp_path: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO_ROOT), env.get("PYTHONPATH")]))
    env["HOME"] = str(tmp_path / "home")
    env.pop("REVIEWER_DB", None)
    return env


def start_hook(
    tmp_path: Path, db: Path | str, payload: dict[str, Any] | bytes, *args: str, host: str = "claude-code"
) -> subprocess.Popen[bytes]:
    command = [sys.executable, "-m", "reviewer_app", "hook", host, "--db", str(db), *args]
    process = subprocess.Popen(
        command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=hook_env(tmp_path)
    )
    assert process.stdin is not None
    process.stdin.write(payload if isinstance(payload, bytes) else json.dumps(payload).encode())
    process.stdin.close()
    process.stdin = None  # communicate() must not flush it again
    return process


def finish(process: subprocess.Popen[bytes], timeout: float = 60) -> tuple[int, dict[str, Any] | None, str]:
    """Exit code, the answer (None when the hook printed nothing) and stderr."""
    out, err = process.communicate(timeout=timeout)
    text = out.decode().strip()
    return process.returncode, (json.loads(text) if text else None), err.decode()


class StderrTail:
    """A running hook's stderr, read as it comes (a thread), for a test that waits on what the hook says rather
    than on a fixed time (under load a hook may take seconds to reach the point the test is about)."""

    def __init__(self, process: subprocess.Popen[bytes]) -> None:
        assert process.stderr is not None
        self.process = process
        self._lines: list[bytes] = []
        self._thread = threading.Thread(target=self._read, args=(process.stderr,), daemon=True)
        self._thread.start()

    def _read(self, stream: Any) -> None:
        for line in iter(stream.readline, b""):
            self._lines.append(line)

    @property
    def text(self) -> str:
        return b"".join(self._lines).decode(errors="replace")

    async def wait_for(self, needle: str, timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        while needle not in self.text:
            if time.monotonic() > deadline or self.process.poll() is not None:
                raise AssertionError(f"the hook never said {needle!r}; it said: {self.text!r}")
            await asyncio.sleep(0.05)

    def finish(self, timeout: float = 60) -> tuple[int, dict[str, Any] | None, str]:
        """As :func:`finish`, with the stderr this tail read."""
        assert self.process.stdout is not None
        out = self.process.stdout.read()
        self.process.wait(timeout)
        self._thread.join(timeout)
        text = out.decode().strip()
        return self.process.returncode, (json.loads(text) if text else None), self.text


def run_hook(tmp_path: Path, db: Path | str, payload: dict[str, Any] | bytes, *args: str, host: str = "claude-code"):
    return finish(start_hook(tmp_path, db, payload, *args, host=host))


async def wait_pending(backend: Any, count: int = 1, timeout: float = 30) -> list[dict[str, Any]]:
    """The pending requests once ``count`` exist (the hook runs in another process)."""
    deadline = time.monotonic() + timeout
    while True:
        records = await backend.list_records()
        if len(records) >= count:
            return records
        if time.monotonic() > deadline:
            raise AssertionError(f"{count} pending request(s) never appeared (have {len(records)})")
        await asyncio.sleep(0.05)


def import_probe(heavy: tuple[str, ...]) -> str:
    """A ``python -c`` script running ``reviewer_app hook claude-code --db ARGV1 --no-transcript`` in-process (its
    ``os._exit`` turned into SystemExit) and printing ``HEAVY [...]``: which of ``heavy`` it imported."""
    return (
        "import os, runpy, sys\n"
        "def _exit(code):\n"
        "    raise SystemExit(code)\n"
        "os._exit = _exit  # the hook ends with os._exit: keep this process alive to look at its modules\n"
        "sys.argv = ['reviewer_app', 'hook', 'claude-code', '--db', sys.argv[1], '--no-transcript']\n"
        "try:\n"
        "    runpy.run_module('reviewer_app', run_name='__main__')\n"
        "except SystemExit:\n"
        "    pass\n"
        f"heavy = {heavy!r}\n"
        "print('HEAVY', sorted(m for m in heavy if m in sys.modules), file=sys.stderr)\n"
    )
