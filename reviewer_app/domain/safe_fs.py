"""Race-free file access inside a workspace, for the file tools.

Checking a path and then opening it leaves a window in which another process can swap a directory for a
symlink to somewhere else. Here every path component is opened relative to its parent's directory
descriptor with ``O_NOFOLLOW`` (``openat``), so what is opened is what was checked: a symlink anywhere on
the path is refused, never followed. The final file is opened with ``O_NOFOLLOW | O_NOCTTY | O_NONBLOCK``
and checked with ``fstat``: only regular files and directories are used (a FIFO, device or socket is
refused without blocking), and a file with more than one hard link is refused (it may be the same inode as
a file outside). Writes go to a temporary file in the same directory descriptor and are renamed over the
target, so a reader never sees half a file and a symlink at the target is replaced, not followed.

Windows has no ``openat``: there :data:`RACE_FREE` is false and the tools fall back to resolving the path
and checking it stays in the workspace before opening it (the check-then-open race remains there).

In the domain layer so that both the runtime's file tools and the agent hooks' diffs
(:mod:`reviewer_app.integrations.claude_code.diffs`, on the hook's lean path) open workspace files this one way.
Standard library only, and cheap to import (no ``secrets``: the hook imports this before it answers).
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path, PurePosixPath, PureWindowsPath

RACE_FREE = os.open in os.supports_dir_fd and hasattr(os, "O_NOFOLLOW") and hasattr(os, "O_DIRECTORY")
"""Whether this platform opens paths component by component (POSIX); false on Windows."""

_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_DIRECTORY = getattr(os, "O_DIRECTORY", 0)
_NOCTTY = getattr(os, "O_NOCTTY", 0)
_NONBLOCK = getattr(os, "O_NONBLOCK", 0)
_DIR_FLAGS = os.O_RDONLY | _NOFOLLOW | _DIRECTORY | _CLOEXEC
_FILE_FLAGS = os.O_RDONLY | _NOFOLLOW | _NOCTTY | _NONBLOCK | _CLOEXEC


class WorkspaceEscape(PermissionError):
    """A path would leave the session's workspace, or names something the file tools refuse to touch."""


class LeadsOutside(WorkspaceEscape):
    """The path leads outside the workspace (as written, through a symlink or ``..``), or its last component was
    swapped for a symlink while it was being opened."""


class NotRegularFile(WorkspaceEscape):
    """A FIFO, device, socket…: refused without being read (a FIFO's ``open`` or ``read`` would wait for a writer)."""

    def __init__(self, message: str, kind: str) -> None:
        super().__init__(message)
        self.kind = kind
        """What it is, as a phrase: ``"a FIFO (named pipe)"``, ``"a device"``…"""


class HardLinked(WorkspaceEscape):
    """A regular file with more than one hard link: the other may be outside the workspace."""

    def __init__(self, message: str, links: int) -> None:
        super().__init__(message)
        self.links = links


class FileTooLarge(OSError):
    """The file is larger than the reader's limit: nothing of it was read."""

    def __init__(self, message: str, size: int) -> None:
        super().__init__(message)
        self.size = size


def workspace_parts(relative: str) -> list[str]:
    """The components of a workspace-relative path; refuses absolute paths, ``..`` and NUL bytes."""
    if not isinstance(relative, str):
        raise WorkspaceEscape(f"path must be a string, got {type(relative).__name__}")
    if "\x00" in relative:
        raise WorkspaceEscape("path contains a NUL byte")
    if PurePosixPath(relative).is_absolute() or PureWindowsPath(relative).anchor:
        raise WorkspaceEscape(f"absolute paths are not allowed: {relative!r} (use a path relative to the workspace)")
    parts = [part for part in relative.replace("\\", "/").split("/") if part not in ("", ".")]
    if ".." in parts:
        raise WorkspaceEscape(f"'..' is not allowed in paths: {relative!r}")
    return parts


_MAX_SYMLINKS = 40  # as the kernel's own limit


class _Walker:
    """Descends from the workspace one component at a time, holding a descriptor for each directory entered.

    Every component is opened relative to the directory above it with ``O_NOFOLLOW``. A symlink is not
    followed by the kernel but resolved here: its target is read and walked by the same rules, ``..`` pops
    the directory stack (never above the workspace), and an absolute target must point into the workspace.
    So a symlink that stays inside works, and one that leads outside is refused, whatever is swapped meanwhile.
    """

    def __init__(self, workspace: str | Path, relative: str) -> None:
        self.relative = relative
        self.roots = {os.path.abspath(workspace), os.path.realpath(workspace)}
        self.stack = [os.open(workspace, os.O_RDONLY | _DIRECTORY | _CLOEXEC)]  # the workspace itself is ours
        self.links = 0

    @property
    def fd(self) -> int:
        return self.stack[-1]

    def close(self) -> None:
        while self.stack:
            os.close(self.stack.pop())

    def _outside(self, detail: str) -> WorkspaceEscape:
        return LeadsOutside(f"{self.relative!r} leads outside the workspace ({detail})")

    def up(self) -> None:
        if len(self.stack) == 1:
            raise self._outside("through a symlink with '..'")
        os.close(self.stack.pop())

    def link_target(self, name: str) -> list[str]:
        """The components of symlink ``name``'s target, relative to where the walk now is."""
        self.links += 1
        if self.links > _MAX_SYMLINKS:
            raise WorkspaceEscape(f"{self.relative!r}: too many levels of symlinks")
        target = os.readlink(name, dir_fd=self.fd)
        if os.path.isabs(target):
            root = next((r for r in self.roots if target == r or target.startswith(r.rstrip(os.sep) + os.sep)), None)
            if root is None:
                raise self._outside(f"through a symlink to {target}")
            while len(self.stack) > 1:
                os.close(self.stack.pop())
            target = target[len(root) :]
        return [part for part in target.replace("\\", "/").split("/") if part not in ("", ".")]

    def enter(self, parts: list[str], *, create: bool = False) -> None:
        """Descend through directories ``parts`` (creating missing ones when ``create``)."""
        queue = list(reversed(parts))
        creations = 0
        while queue:
            name = queue.pop()
            if name == "..":
                self.up()
                continue
            try:
                child = os.open(name, _DIR_FLAGS, dir_fd=self.fd)
            except FileNotFoundError:
                if not create:
                    raise FileNotFoundError(f"no such directory: {name!r} in {self.relative!r}") from None
                creations += 1
                if creations > _MAX_SYMLINKS:  # another process keeps removing what is created
                    raise FileNotFoundError(f"{self.relative!r}: folder {name!r} keeps disappearing") from None
                with suppress(FileExistsError):
                    os.mkdir(name, 0o777, dir_fd=self.fd)
                queue.append(name)  # open it (or whatever now stands there) by the same rules
                continue
            except OSError as exc:
                if self._is_symlink(name):
                    queue.extend(reversed(self.link_target(name)))
                    continue
                if exc.errno == errno.ENOTDIR:
                    raise NotADirectoryError(f"{self.relative!r}: {name!r} is not a directory") from None
                raise
            self.stack.append(child)

    def _is_symlink(self, name: str) -> bool:
        try:
            return stat.S_ISLNK(os.stat(name, dir_fd=self.fd, follow_symlinks=False).st_mode)
        except OSError:
            return False

    def locate(self, parts: list[str], *, create: bool = False) -> str | None:
        """Walk to the parent of the last component (following symlinks by the walk's rules); its name.

        None when the path names a directory reached through ``..`` or a symlink to the workspace.
        """
        if not parts:
            return None
        *folders, name = parts
        self.enter(folders, create=create)
        while True:
            if name == "..":
                self.up()
                return None
            if not self._is_symlink(name):
                return name
            target = self.link_target(name)
            if not target:
                return None
            *folders, name = target
            self.enter(folders, create=create)


@contextmanager
def _walker(workspace: str | Path, relative: str) -> Iterator[_Walker]:
    walker = _Walker(workspace, relative)
    try:
        yield walker
    finally:
        walker.close()


def _kind(mode: int) -> str:
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISLNK(mode):
        return "a symlink"
    return "not a regular file"


def _check_regular(relative: str, st: os.stat_result) -> None:
    if stat.S_ISDIR(st.st_mode):
        raise IsADirectoryError(f"{relative} is a directory (use list_dir)")
    if not stat.S_ISREG(st.st_mode):
        kind = _kind(st.st_mode)
        raise NotRegularFile(f"{relative} is {kind}; the file tools only use regular files", kind)
    if st.st_nlink > 1:
        raise HardLinked(
            f"{relative} has {st.st_nlink} hard links; the file tools refuse hard-linked files "
            "(the other link may be outside the workspace)",
            st.st_nlink,
        )


def _read_up_to(fd: int, limit: int) -> bytes:
    chunks: list[bytes] = []
    remaining = limit
    while remaining > 0:
        chunk = os.read(fd, min(remaining, 1 << 20))
        if not chunk:
            break
        chunks.append(chunk)
        remaining -= len(chunk)
    return b"".join(chunks)


def read_file(workspace: Path, relative: str, limit: int) -> tuple[bytes, int]:
    """Up to ``limit`` bytes of a regular file in the workspace, and its size."""
    return _read(workspace, relative, workspace_parts(relative), limit)


def read_inside(workspace: str, path: str, max_bytes: int) -> bytes:
    """A regular file's bytes, ``path`` absolute (inside ``workspace`` as written, or as the workspace resolves) or
    relative to ``workspace``, its ``..`` taken as the kernel takes it but never above the workspace: the agent
    hooks' reading of a path a model named. :class:`FileTooLarge` past ``max_bytes``, having read none of it."""
    if "\x00" in path:
        raise WorkspaceEscape("path contains a NUL byte")
    relative = path
    if os.path.isabs(path):
        roots = sorted({os.path.abspath(workspace), os.path.realpath(workspace)}, key=len, reverse=True)
        root = next((r for r in roots if path == r or path.startswith(r.rstrip(os.sep) + os.sep)), None)
        if root is None:
            raise LeadsOutside(f"{path!r} is outside the workspace")
        relative = path[len(root) :]
    if not RACE_FREE:  # pragma: no cover - Windows: check-then-open
        return _read_by_path(workspace, relative, max_bytes)
    parts = [part for part in relative.split("/") if part not in ("", ".")]
    data, _ = _read(workspace, path, parts, max_bytes + 1, refuse_over=max_bytes)
    if len(data) > max_bytes:  # it grew after its size was read
        raise FileTooLarge(f"{path} is larger than {max_bytes} bytes", len(data))
    return data


def _read(
    workspace: str | Path, relative: str, parts: list[str], limit: int, refuse_over: int | None = None
) -> tuple[bytes, int]:
    with _walker(workspace, relative) as walker:
        name = walker.locate(parts)
        if name is None:
            raise IsADirectoryError(f"{relative or '.'} is a directory (use list_dir)")
        try:
            # Look before opening: a FIFO or device is refused without being opened at all.
            _check_regular(relative, os.stat(name, dir_fd=walker.fd, follow_symlinks=False))
            fd = os.open(name, _FILE_FLAGS, dir_fd=walker.fd)
        except FileNotFoundError:
            raise FileNotFoundError(f"no such file: {relative}") from None
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                raise LeadsOutside(f"{relative}: swapped for a symlink while being opened; refused") from None
            raise
        try:
            st = os.fstat(fd)
            _check_regular(relative, st)  # what was opened, whatever was swapped in meanwhile
            if refuse_over is not None and st.st_size > refuse_over:
                raise FileTooLarge(f"{relative} is larger than {refuse_over} bytes", st.st_size)
            return _read_up_to(fd, limit), st.st_size
        finally:
            os.close(fd)


def read_regular(path: str, limit: int) -> tuple[bytes, int]:
    """Up to ``limit`` bytes of the regular file at ``path`` (anywhere: symlinks followed), and its size; what is not a
    regular file is refused without waiting (:class:`NotRegularFile`: a FIFO the agent made is opened non-blocking and
    never read, a device never read). For files a check reads to judge a call (a patch file, a ``.gitignore``)."""
    fd = os.open(path, _FILE_FLAGS & ~_NOFOLLOW)
    try:
        st = os.fstat(fd)
        if stat.S_ISDIR(st.st_mode):
            raise IsADirectoryError(f"{path} is a directory")
        if not stat.S_ISREG(st.st_mode):
            kind = _kind(st.st_mode)
            raise NotRegularFile(f"{path} is {kind}, not a regular file", kind)
        return _read_up_to(fd, min(limit, st.st_size + 1)), st.st_size
    finally:
        os.close(fd)


def _read_by_path(workspace: str, relative: str, max_bytes: int) -> bytes:  # pragma: no cover - Windows
    """Where there is no ``openat``: the path resolved, checked to stay inside, then opened (the race remains)."""
    root = os.path.realpath(workspace)
    target = os.path.realpath(os.path.join(root, relative))
    if os.path.commonpath([root, target]) != root:
        raise LeadsOutside(f"{relative!r} leads outside the workspace")
    _check_regular(relative, os.stat(target))
    with open(target, "rb") as handle:
        data = handle.read(max_bytes + 1)
    if len(data) > max_bytes:
        raise FileTooLarge(f"{relative} is larger than {max_bytes} bytes", len(data))
    return data


def list_dir(workspace: Path, relative: str) -> list[tuple[str, bool]]:
    """The entries of a workspace directory as ``(name, is_directory)``; symlinks inside are listed as they are."""
    parts = workspace_parts(relative)
    with _walker(workspace, relative) as walker:
        walker.enter(parts)
        with os.scandir(walker.fd) as entries:
            return sorted((entry.name, entry.is_dir(follow_symlinks=False)) for entry in entries)


def write_file(workspace: Path, relative: str, data: bytes) -> None:
    """Create or replace a regular file in the workspace atomically (parent folders are created)."""
    parts = workspace_parts(relative)
    with _walker(workspace, relative) as walker:
        name = walker.locate(parts, create=True)
        if name is None:
            raise IsADirectoryError(f"{relative or '.'} is a directory")
        parent = walker.fd
        try:
            existing = os.stat(name, dir_fd=parent, follow_symlinks=False)
        except FileNotFoundError:
            existing = None
        if existing is not None and not stat.S_ISLNK(existing.st_mode):
            if stat.S_ISDIR(existing.st_mode):
                raise IsADirectoryError(f"{relative} is a directory")
            _check_regular(relative, existing)
        temporary = f".{name[:200]}.{os.getpid()}.{os.urandom(6).hex()}.tmp"  # secrets.token_hex(6)
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | _CLOEXEC, 0o666, dir_fd=parent)
        try:
            try:
                view = memoryview(data)
                while view:
                    written = os.write(fd, view)
                    view = view[written:]
            finally:
                os.close(fd)
            # Replaces the directory entry: a symlink swapped in meanwhile is replaced, never written through.
            os.rename(temporary, name, src_dir_fd=parent, dst_dir_fd=parent)
        except BaseException:
            with suppress(FileNotFoundError):
                os.unlink(temporary, dir_fd=parent)
            raise
