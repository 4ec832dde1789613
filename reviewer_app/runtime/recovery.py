"""Who drives a run: owner ids ``host:pid:random`` and the liveness check recovery relies on.

A run is only taken over when its owner is certainly gone (a process on this host that no longer
exists, or no owner at all); a run whose owner lives on another host, or is alive here, is never stolen.
"""

from __future__ import annotations

import os
import secrets
import socket
from pathlib import Path


def new_owner_id() -> str:
    """This process's id for the runs it drives; random part so two runtimes in one process differ."""
    return f"{socket.gethostname()}:{os.getpid()}:{secrets.token_hex(4)}"


def parse_owner(owner: str) -> tuple[str, int] | None:
    """``(host, pid)`` of an owner id, or None when it is not one of ours."""
    parts = owner.rsplit(":", 2)
    if len(parts) != 3:
        return None
    host, pid_text, _ = parts
    try:
        return host, int(pid_text)
    except ValueError:
        return None


def pid_alive(pid: int) -> bool:
    """Whether a process with this pid exists on this host (zombies count as gone)."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # exists, owned by someone else
    except OSError:
        return True  # cannot tell: assume alive, never steal
    stat = Path(f"/proc/{pid}/stat")
    try:
        # Field 3 is the state; "Z" (zombie) or "X" (dead) means it will never drive anything again.
        state = stat.read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return True
    return state not in ("Z", "X")


def owner_is_gone(owner: str | None, *, hostname: str | None = None) -> bool:
    """True only when the owner certainly cannot be driving the run any more."""
    if not owner:
        return True
    parsed = parse_owner(owner)
    if parsed is None:
        return False  # someone else's scheme: leave it alone
    host, pid = parsed
    if host != (hostname or socket.gethostname()):
        return False
    return not pid_alive(pid)
