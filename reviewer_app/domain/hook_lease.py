"""Whether the hook that asked is still there to be answered: its process, recorded on the request.

A hook (Claude Code, Codex) records who waits on its request in the request's metadata (``hook_process``: pid,
the process's start time in clock ticks since boot, host name). When that process is gone — on this host, the
pid no longer names the process that started then — nobody can receive a decision any more: whatever the host
was told (its own prompt, a fallback), the request is settled "answered elsewhere", never left for a reviewer
to approve. Any process that opens the database settles such requests (``SQLHITLBackend.settle_abandoned_hooks``),
and a decision on one is refused with that reason. Standard library only: the hook imports it too.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

TYPE_CHECKING = False  # no ``typing`` at run time: the hook's lean path imports this module
if TYPE_CHECKING:
    from typing import Any

ANSWERED_ELSEWHERE = "answered elsewhere"
"""The cancel reason recorded when the host settled the call itself (its own prompt, Esc, a time-out)."""

HOOK_PROCESS_KEY = "hook_process"


def process_start_ticks(pid: int) -> int | None:
    """When process ``pid`` started (Linux clock ticks since boot): tells a live hook from a reused pid."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            fields = stat.read().rsplit(b")", 1)[1].split()
        return int(fields[19])
    except (OSError, IndexError, ValueError):
        return None


def process_age_s() -> float:
    """How long this process has been running (Linux: its start time against the uptime); 0.0 where unknown."""
    ticks = process_start_ticks(os.getpid())
    if ticks is None:
        return 0.0
    try:
        with open("/proc/uptime", "rb") as uptime:
            since_boot = float(uptime.read().split()[0])
        return max(since_boot - ticks / os.sysconf("SC_CLK_TCK"), 0.0)
    except (OSError, ValueError, IndexError, AttributeError):
        return 0.0


def process_alive(pid: int, start_ticks: int | None) -> bool:
    """Whether ``pid`` is still the process that started at ``start_ticks`` (zombies count as gone)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    except OSError:  # pragma: no cover - Windows and the like: cannot tell, so alive
        return True
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            state = stat.read().rsplit(b")", 1)[1].split()[0]
        if state in (b"Z", b"X"):
            return False
    except (OSError, IndexError):
        pass
    return start_ticks is None or process_start_ticks(pid) in (None, start_ticks)


def this_host() -> str | None:
    try:
        return os.uname().nodename
    except AttributeError:  # pragma: no cover - Windows
        return None


def hook_process_metadata() -> dict[str, Any]:
    """Who is waiting on the request: kept in its metadata so any process can see the hook died."""
    pid = os.getpid()
    info: dict[str, Any] = {"pid": pid}
    start = process_start_ticks(pid)
    if start is not None:
        info["start_ticks"] = start
    host = this_host()
    if host is not None:
        info["host"] = host
    return {HOOK_PROCESS_KEY: info}


def abandoned_by_hook(metadata: Any, *, host: str | None = None) -> str | None:
    """Why nobody waits on a request any more (``"the claude-code hook process (pid 12) ended"``), or None.

    None unless the metadata names a hook process on this host that is certainly gone: a hook on another host,
    or a request no hook asked for, is never settled here (its own watchdog or its expiry does that).
    """
    # A dict is told in one test: isinstance against the Mapping ABC is a Python call, and every decision asks.
    if type(metadata) is not dict and not isinstance(metadata, Mapping):
        return None
    info = metadata.get(HOOK_PROCESS_KEY)
    if info is None or (type(info) is not dict and not isinstance(info, Mapping)):
        return None
    pid, ticks, where = info.get("pid"), info.get("start_ticks"), info.get("host")
    if type(pid) is not int or pid <= 0 or (ticks is not None and type(ticks) is not int):
        return None
    if where != (host if host is not None else this_host()):
        return None
    if process_alive(pid, ticks):
        return None
    agent = metadata.get("agent")
    return f"the {agent if isinstance(agent, str) else 'agent'} hook process (pid {pid}) ended"


def answered_elsewhere(why: str) -> str:
    """The message a request settled for a hook that answered without a decision carries."""
    return f"{ANSWERED_ELSEWHERE} ({why})"
