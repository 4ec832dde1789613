"""Facts about the paths a call names, read from disk without following symlinks and within a time budget.

Why: "what will it touch" must be true of the disk as it is, cheap enough to compute for every request shown,
and never a way out of the workspace. Everything here is ``lstat``, ``scandir`` without following links, or a
read through ``domain.safe_fs`` (component by component, ``O_NOFOLLOW``); a walk that runs out of time says
"at least N". Git facts (tracked or not, remote-tracking refs) are read with dulwich, never by running git.
"""

from __future__ import annotations

import bisect
import fnmatch
import os
import posixpath
import stat
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from reviewer_app.domain.risk import outside_workspace


@dataclass
class Budget:
    """A deadline on the monotonic clock shared by every walk of one preview."""

    deadline: float

    @classmethod
    def of(cls, seconds: float) -> Budget:
        return cls(time.monotonic() + seconds)

    @property
    def spent(self) -> bool:
        return time.monotonic() >= self.deadline


def resolve(written: str, cwd: str | None) -> str | None:
    """The absolute path a word names (``~`` expanded, ``..`` folded lexically), None when the workspace is
    unknown for a relative path."""
    if written.startswith("~"):
        return posixpath.normpath(os.path.expanduser(written))
    if written.startswith("/"):
        return posixpath.normpath(written)
    if cwd is None:
        return None
    return posixpath.normpath(posixpath.join(cwd, written))


def signature(path: str) -> tuple[bool, int, int]:
    """What "unchanged" means for a path: exists, size, modification time (of the entry, not a link's target)."""
    try:
        st = os.lstat(path)
    except OSError:
        return (False, 0, 0)
    return (True, st.st_size, st.st_mtime_ns)


def _symlink_on_the_way(resolved: str, cwd: str | None) -> str | None:
    """The first symlink between the workspace and ``resolved`` (inside the workspace only), else None."""
    if cwd is None or outside_workspace(resolved, cwd):
        return None
    root = posixpath.normpath(cwd)
    relative = posixpath.relpath(resolved, root)
    current = root
    for part in [] if relative == "." else relative.split("/")[:-1]:
        current = posixpath.join(current, part)
        try:
            if stat.S_ISLNK(os.lstat(current).st_mode):
                return current
        except OSError:
            return None
    return None


def count_tree(
    path: str, budget: Budget, *, name_pattern: str | None = None, kind: str | None = None
) -> tuple[int, bool]:
    """Entries under ``path`` (files, links and directories; matching ``name_pattern``/``kind`` when given), and
    whether the walk was cut short by the budget (then the count is a lower bound). Links are never followed."""
    count = 0
    stack = [path]
    checks = 0
    while stack:
        directory = stack.pop()
        try:
            with os.scandir(directory) as entries:
                for entry in entries:
                    checks += 1
                    if checks & 1023 == 0 and budget.spent:
                        return count, True
                    is_dir = entry.is_dir(follow_symlinks=False)
                    if is_dir:
                        stack.append(entry.path)
                    if name_pattern is not None and not fnmatch.fnmatchcase(entry.name, name_pattern):
                        continue
                    if kind == "f" and (is_dir or not entry.is_file(follow_symlinks=False)):
                        continue
                    if kind == "d" and not is_dir:
                        continue
                    count += 1
        except OSError:
            continue
        if budget.spent and stack:
            return count, True
    return count, False


def path_facts(written: str, cwd: str | None, budget: Budget, *, recursive: bool = False) -> dict[str, Any]:
    """One effect item for a path: where it resolves, inside the workspace or not, what is there now, and (for a
    recursive operation on a directory) how many entries it holds."""
    item: dict[str, Any] = {"path": written}
    if any(char in written for char in "$`"):
        item["note"] = "contains an expansion: the path is only known when it runs"
        return item
    resolved = resolve(written, cwd)
    item["resolved"] = resolved
    if resolved is None:
        item["note"] = "the workspace is unknown: a relative path cannot be resolved"
        return item
    item["inside_workspace"] = cwd is not None and not outside_workspace(resolved, cwd)
    link = _symlink_on_the_way(resolved, cwd)
    if link is not None:
        item["note"] = f"the path goes through a symlink ({link}): not followed"
        return item
    try:
        st = os.lstat(resolved)
    except FileNotFoundError:
        item["exists"] = False
        return item
    except OSError as exc:
        item["note"] = f"cannot be inspected: {exc.strerror}"
        return item
    item["exists"] = True
    if stat.S_ISLNK(st.st_mode):
        item["kind"] = "symlink"
        try:
            item["link_target"] = os.readlink(resolved)
        except OSError:
            pass
    elif stat.S_ISDIR(st.st_mode):
        item["kind"] = "directory"
        if recursive:
            count, cut = count_tree(resolved, budget)
            item["files"] = count
            item["at_least"] = cut
    elif stat.S_ISREG(st.st_mode):
        item["kind"] = "file"
        item["size"] = st.st_size
    else:
        item["kind"] = "special"
    return item


# -- git -----------------------------------------------------------------------------------------------------


def find_repository(path: str) -> Any:
    """The dulwich repository holding ``path`` (a directory or a path inside one), or None."""
    from dulwich.errors import NotGitRepository
    from dulwich.repo import Repo

    start = path
    while start and not os.path.isdir(start):
        parent = posixpath.dirname(start)
        if parent == start:
            return None
        start = parent
    try:
        return Repo.discover(start)
    except (NotGitRepository, OSError, ValueError):
        return None


_INDEX_CACHE: dict[str, tuple[int, list[str]]] = {}


def tracked_paths(repo: Any) -> list[str]:
    """The repository's tracked paths, sorted (cached by the index file's modification time)."""
    index_path = repo.index_path()
    try:
        mtime = os.stat(index_path).st_mtime_ns
    except OSError:
        return []
    cached = _INDEX_CACHE.get(index_path)
    if cached is not None and cached[0] == mtime:
        return cached[1]
    paths = sorted(path.decode("utf-8", "surrogateescape") for path in repo.open_index())
    _INDEX_CACHE[index_path] = (mtime, paths)
    return paths


def tracked_count(resolved: str) -> int | None:
    """How many tracked files are at or under ``resolved`` (None when it is not in a git work tree)."""
    repo = find_repository(resolved)
    if repo is None:
        return None
    root = posixpath.normpath(repo.path)
    relative = posixpath.relpath(resolved, root)
    if relative.startswith(".."):
        return None
    paths = tracked_paths(repo)
    if relative == ".":
        return len(paths)
    start = bisect.bisect_left(paths, relative)
    count = 0
    for candidate in paths[start:]:
        if candidate == relative or candidate.startswith(relative + "/"):
            count += 1
        elif candidate > relative + "/":
            break
    return count


def add_git_facts(item: dict[str, Any]) -> None:
    """Mark an effect item tracked / untracked when its path lies in a git work tree."""
    resolved = item.get("resolved")
    if not isinstance(resolved, str) or item.get("note"):
        return
    try:
        count = tracked_count(resolved)
    except Exception:  # a damaged repository is a fact we cannot read, never a failed preview
        return
    if count is None:
        return
    if item.get("kind") == "directory":
        item["tracked_files"] = count
    item["tracked"] = count > 0


def read_workspace_text(workspace: str, resolved: str, limit: int) -> tuple[str | None, str]:
    """A workspace file's text through ``safe_fs`` (no symlink followed), or None and why not."""
    from reviewer_app.domain.safe_fs import WorkspaceEscape, read_file

    relative = posixpath.relpath(resolved, posixpath.normpath(workspace))
    try:
        data, size = read_file(Path(workspace), relative, limit + 1)
    except FileNotFoundError:
        return "", "new file"
    except (WorkspaceEscape, OSError) as exc:
        return None, f"not read: {exc}"
    if size > limit:
        return None, f"larger than {limit // 1_000_000} MB: no diff"
    try:
        return data.decode("utf-8"), ""
    except UnicodeDecodeError:
        return None, "not UTF-8 text: no diff"
