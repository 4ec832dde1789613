"""Tool processes die with their runtime: parent-death signal for shells, killing a dead owner's group."""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import sys
from collections.abc import Callable
from pathlib import Path

_PR_SET_PDEATHSIG = 1


def die_with_parent() -> Callable[[], None] | None:
    """A ``preexec_fn`` that makes the child get SIGKILL when this process dies (Linux only; else None).

    The libc handle is looked up here, in the parent: the child only calls ``prctl`` and ``getppid``.
    If the parent died between fork and ``prctl``, the child exits at once instead of living on.
    """
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        prctl = libc.prctl
    except (OSError, AttributeError):
        return None
    parent = os.getpid()

    def preexec() -> None:
        prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        if os.getppid() != parent:
            os._exit(137)

    return preexec


def process_group_alive(group: int) -> bool:
    """Whether any process is still in process group ``group``."""
    if group <= 1:
        return False
    try:
        os.killpg(group, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True
    return True


def kill_process_group(group: int | None) -> bool:
    """SIGKILL a dead owner's tool process group; True if something was still there."""
    if group is None or group <= 1 or group == os.getpgrp() or not process_group_alive(group):
        return False
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(group, signal.SIGKILL)
        return True
    return False


def proc_group_members(group: int) -> list[int]:
    """Pids in process group ``group`` (Linux ``/proc``; tests and diagnostics)."""
    members = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if len(fields) > 3 and fields[0] not in ("Z", "X") and int(fields[3]) == group:
            members.append(int(entry.name))
    return members
