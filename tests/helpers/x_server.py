"""A private Xvfb for a test, on a display number the X server picks itself.

``Xvfb -displayfd`` writes the number it bound, so parallel test workers (pytest-xdist) never race for one.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator, Sequence
from contextlib import contextmanager


@contextmanager
def xvfb(screen: str = "1280x800x24", extra: Sequence[str] = ("-nolisten", "tcp")) -> Iterator[str]:
    """Start Xvfb and yield its ``DISPLAY`` value (``":N"``); stopped on exit."""
    read_end, write_end = os.pipe()
    server = subprocess.Popen(
        ["Xvfb", "-displayfd", str(write_end), "-screen", "0", screen, *extra],
        pass_fds=(write_end,),
        stderr=subprocess.DEVNULL,
    )
    os.close(write_end)
    try:
        with os.fdopen(read_end) as pipe:
            number = pipe.readline().strip()
        if not number:
            raise RuntimeError("Xvfb exited before it chose a display")
        yield f":{number}"
    finally:
        server.terminate()
        try:
            server.wait(5)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait(5)
