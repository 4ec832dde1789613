"""The risk of reading or writing one path: sensitive targets, system configuration, disk devices and the
workspace's bounds (symlinks followed). Used for a file tool's path and for the files a shell command opens.
"""

from __future__ import annotations

import functools
import posixpath
import re
from collections.abc import Callable

from reviewer_app.domain.risk_level import Findings, Risk
from reviewer_app.domain.sensitive import is_sensitive_path as sensitive_target
from reviewer_app.domain.sensitive import real_path

SYSTEM_DIRECTORIES = ("/etc/", "/private/etc/", "/boot/", "/usr/", "/bin/", "/sbin/", "/lib/", "/var/lib/")


HARMLESS_DEVICES = frozenset({"/dev/null", "/dev/stdout", "/dev/stderr", "/dev/stdin", "/dev/tty"})
DISK_DEVICE = re.compile(r"^/dev/(sd|hd|vd|xvd|nvme|disk|mmcblk|md|dm-|mapper/)")


def is_sensitive_path(path: str, cwd: str | None = None) -> bool:
    """A sensitive target (``domain.sensitive``: keys, credentials, start-up files, agent host settings…) or
    system configuration, by the path as given, its absolute form against ``cwd`` or its real target."""
    return system_path(path) or sensitive_target(path, cwd)


def system_path(path: str) -> bool:
    normal = posixpath.normpath(path.replace("\\", "/"))
    return (
        normal.startswith("/")
        and normal.rstrip("/") + "/" != "/"
        and any((normal + "/").startswith(directory) for directory in SYSTEM_DIRECTORIES)
    )


def outside_workspace(
    path: str, cwd: str | None, *, follow_symlinks: bool = False, resolve: Callable[[str], str | None] = real_path
) -> bool:
    """``~``, an absolute path not under ``cwd``, a ``..`` that climbs out of ``cwd``, or (``follow_symlinks``) a
    path whose real target, symlinks followed, is not under the real ``cwd`` (or cannot be resolved)."""
    if follow_symlinks and cwd is not None and not outside_workspace(path, cwd):
        root = resolve(posixpath.normpath(cwd.replace("\\", "/")))
        target = resolve(posixpath.join(cwd.replace("\\", "/"), path.replace("\\", "/")))
        if root is None or target is None:
            return True
        return target != root and not target.startswith(root.rstrip("/") + "/")
    path = path.replace("\\", "/")
    if path.startswith("~") or re.match(r"^[A-Za-z]:/", path):
        return True
    if path.startswith("/"):
        if cwd is None:
            return True
        root = posixpath.normpath(cwd.replace("\\", "/"))
        normal = posixpath.normpath(path)
        return normal != root and not normal.startswith(root.rstrip("/") + "/")
    normal = posixpath.normpath(path)
    return normal == ".." or normal.startswith("../")


def assess_path(
    path: str, cwd: str | None, *, writes: bool, resolve: Callable[[str], str | None] | None = None
) -> Risk:
    """The risk of a file tool reading or writing ``path`` in the workspace ``cwd``."""
    findings = Findings()
    if path in HARMLESS_DEVICES:
        return findings.risk()
    if writes and DISK_DEVICE.match(path):
        findings.add("high", f"writes to a disk device ({path})")
    resolve = resolve or functools.cache(real_path)  # each real path once for both checks
    sensitive = sensitive_target(path, cwd, resolve=resolve)
    outside = outside_workspace(path, cwd, follow_symlinks=True, resolve=resolve)
    if writes:
        if sensitive:
            findings.add("high", f"writes a sensitive file: key, credentials, start-up or agent settings ({path})")
        elif system_path(path):
            findings.add("high", f"writes system configuration ({path})")
        if outside:
            findings.add("high", f"writes outside the workspace ({path})")
    else:
        if sensitive:
            findings.add("high", f"reads a sensitive file: key, credentials, start-up or agent settings ({path})")
        elif system_path(path):
            findings.add("medium", f"reads system configuration ({path})")
        if outside:
            findings.add("medium", f"reads outside the workspace ({path})")
    return findings.risk()
