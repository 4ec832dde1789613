"""A child process's output read as it comes: a test waits for the line that says something happened, not a sleep."""

from __future__ import annotations

import subprocess
import threading
import time
from typing import IO


class ProcessOutput:
    """Reads a text-mode child's stdout and stderr on threads (neither pipe can fill up and stall it)."""

    def __init__(self, process: subprocess.Popen[str]) -> None:
        self.process = process
        self._out: list[str] = []
        self._err: list[str] = []
        self._arrived = threading.Condition()
        self._readers = [
            threading.Thread(target=self._read, args=(stream, into), daemon=True)
            for stream, into in ((process.stdout, self._out), (process.stderr, self._err))
            if stream is not None
        ]
        for reader in self._readers:
            reader.start()

    def _read(self, stream: IO[str], into: list[str]) -> None:
        for line in stream:
            with self._arrived:
                into.append(line)
                self._arrived.notify_all()
        with self._arrived:  # end of the stream: the process is exiting
            self._arrived.notify_all()

    def stderr(self) -> str:
        with self._arrived:
            return "".join(self._err)

    def wait_for(self, text: str, timeout: float) -> None:
        """Until ``text`` is on stderr; fails at once, with the stderr, if the process ends first."""
        deadline = time.monotonic() + timeout
        with self._arrived:
            while text not in "".join(self._err):
                if not any(reader.is_alive() for reader in self._readers):
                    self.process.wait()
                    raise AssertionError(
                        f"the process exited ({self.process.returncode}) before saying {text!r}:\n{''.join(self._err)}"
                    )
                left = deadline - time.monotonic()
                if left <= 0:
                    raise AssertionError(f"{text!r} not said within {timeout} s:\n{''.join(self._err)}")
                self._arrived.wait(min(left, 1.0))

    def finish(self, timeout: float) -> tuple[str, str]:
        """Its stdout and stderr once it has exited."""
        self.process.wait(timeout=timeout)
        for reader in self._readers:
            reader.join(timeout)
        with self._arrived:
            return "".join(self._out), "".join(self._err)

    def kill(self) -> None:
        """SIGKILL, then reaped: its pid is gone, not a zombie."""
        self.process.kill()
        self.finish(timeout=10)
