"""What a ``git push`` would send where, read from the local repository with dulwich (git is never run).

For each refspec: the remote and its host, the local and remote branch, whether it forces, how many local
commits it uploads and, for a force push, how many commits of the remote branch it would discard, as far as the
remote-tracking ref (the last fetch) knows them.
"""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import urlsplit

from reviewer_app.preview.facts import Budget

MAX_WALK = 10_000
_SCP_LIKE = re.compile(r"^(?:[^@/]+@)?(?P<host>[^:/]+):")
_PUSH_OPTIONS_WITH_VALUE = frozenset({"--repo", "-o", "--push-option", "--receive-pack", "--exec"})


def url_host(url: str) -> str | None:
    """The host of a git remote URL (``https://h/x``, ``ssh://u@h/x``, ``u@h:x``), None for a local path."""
    if "://" in url:
        return urlsplit(url).hostname
    match = _SCP_LIKE.match(url)
    return match["host"] if match else None


def _config(repo: Any, section: tuple[bytes, ...], name: bytes) -> str | None:
    try:
        value = repo.get_config().get(section, name)
    except KeyError:
        return None
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else None


def _current_branch(repo: Any) -> str | None:
    try:
        target = repo.refs.read_ref(b"HEAD")
    except (KeyError, OSError):
        return None
    if isinstance(target, bytes) and target.startswith(b"ref: refs/heads/"):
        return target[len(b"ref: refs/heads/") :].decode("utf-8", "replace")
    return None


def _sha(repo: Any, ref: bytes) -> bytes | None:
    try:
        return repo.refs[ref]  # type: ignore[no-any-return]
    except KeyError:
        return None


def _count(repo: Any, include: bytes, exclude: bytes | None, budget: Budget) -> tuple[int, bool]:
    """Commits reachable from ``include`` and not from ``exclude``; True when the count stopped early."""
    walker = repo.get_walker(include=[include], exclude=[exclude] if exclude else [])
    count = 0
    for _entry in walker:
        count += 1
        if count >= MAX_WALK or (count & 63 == 0 and budget.spent):
            return count, True
    return count, False


def push_effects(repo: Any, args: tuple[str, ...], budget: Budget) -> list[dict[str, Any]]:
    """One network item per pushed ref (``args``: the words after ``push``)."""
    force = False
    positional: list[str] = []
    index = 0
    while index < len(args):
        word = args[index]
        if word in _PUSH_OPTIONS_WITH_VALUE:
            index += 2
            continue
        if (
            word.startswith("--force")
            or word in ("--mirror",)
            or (word.startswith("-") and not word.startswith("--") and "f" in word)
        ):
            force = True
        elif not word.startswith("-"):
            positional.append(word)
        index += 1
    branch = _current_branch(repo)
    remote = (
        positional[0]
        if positional
        else ((_config(repo, (b"branch", branch.encode()), b"remote") if branch else None) or "origin")
    )
    url = _config(repo, (b"remote", remote.encode()), b"url") or (remote if url_host(remote) else None)
    specs = positional[1:] or ([branch] if branch else [])
    items: list[dict[str, Any]] = []
    for spec in specs:
        forced = force or spec.startswith("+")
        source, _, destination = spec.lstrip("+").partition(":")
        destination = destination or source
        item: dict[str, Any] = {
            "host": (url_host(url) if url else None) or url or remote,
            "remote": remote,
            "url": url,
            "branch": destination,
            "local": source or None,
            "force": forced,
            "by": "git push",
        }
        if not source:
            item["note"] = f"deletes the remote branch {destination}"
            items.append(item)
            continue
        local = _sha(repo, b"refs/heads/" + source.encode()) or _sha(repo, source.encode())
        tracking = _sha(repo, f"refs/remotes/{remote}/{destination}".encode())
        if local is None:
            item["note"] = f"no local branch {source}"
        elif tracking is None:
            item["note"] = f"the remote branch is not known locally (no refs/remotes/{remote}/{destination})"
        else:
            try:
                item["uploads"], _ = _count(repo, local, tracking, budget)
                discarded, cut = _count(repo, tracking, local, budget)
            except Exception as exc:  # a damaged or shallow repository: say so, never fail the preview
                item["note"] = f"commits could not be counted: {exc}"
            else:
                if forced:
                    item["discards"] = discarded
                    item["discards_at_least"] = cut
                    item["note"] = "as of the last fetch: the remote may have more commits now"
                elif discarded:
                    item["note"] = f"the remote has {discarded} commit(s) you do not have: the push will be refused"
        items.append(item)
    return items
