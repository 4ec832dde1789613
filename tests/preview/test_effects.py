"""Effects on a real disk: bounded time on a huge tree, staleness, force pushes, symlinks, diffs."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

from reviewer_app.domain.toolcall import ToolCall
from reviewer_app.preview.effects import compute_effects

GIT = ["git", "-c", "user.email=a@example.com", "-c", "user.name=a", "-c", "init.defaultBranch=main"]


def _git(*args: str | Path) -> None:
    subprocess.run([*GIT, *map(str, args)], check=True, capture_output=True)


def _bash(command: str, cwd: Path, budget_s: float = 0.5) -> dict[str, list[dict[str, object]]]:
    effects = compute_effects(ToolCall("Bash", {"command": command}, cwd=str(cwd)), budget_s=budget_s)
    return effects.to_dict()


@pytest.fixture
def huge_tree() -> Path:
    """200,000 empty files (200 directories of 1,000), made with mknod on a tmpfs when there is one."""
    base = "/dev/shm" if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK) else None
    root = Path(tempfile.mkdtemp(prefix="reviewer-huge-", dir=base))
    tree = root / "tree"
    tree.mkdir()
    for directory in range(200):
        folder = tree / f"d{directory:03d}"
        folder.mkdir()
        prefix = str(folder) + "/f"
        for number in range(1000):
            os.mknod(f"{prefix}{number}")
    yield root
    shutil.rmtree(root, ignore_errors=True)


def test_a_recursive_delete_over_200000_files_answers_within_its_budget(huge_tree: Path) -> None:
    budget = 0.05  # a 200,000-entry walk takes longer than this even on an idle machine
    compute_effects(ToolCall("Bash", {"command": "true"}, cwd=str(huge_tree)))  # imports, outside the figure
    started = time.perf_counter()
    effects = compute_effects(ToolCall("Bash", {"command": "rm -rf tree"}, cwd=str(huge_tree)), budget_s=budget)
    elapsed = time.perf_counter() - started
    [item] = effects.deletes
    assert item["kind"] == "directory" and item["inside_workspace"] is True
    assert item["at_least"] is True and 0 < item["files"] < 200_200  # "at least N": cut by the budget
    assert elapsed < budget + 1.0, elapsed  # the budget, plus slack for a loaded machine (2 shared cores)
    # Given time, the same walk counts everything.
    full = compute_effects(ToolCall("Bash", {"command": "rm -rf tree"}, cwd=str(huge_tree)), budget_s=60)
    assert full.deletes[0]["files"] == 200_200 and full.deletes[0]["at_least"] is False


def test_an_effect_is_stale_once_the_workspace_changes(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("notes")
    effects = compute_effects(ToolCall("Bash", {"command": "rm notes.txt && cat README.md"}, cwd=str(tmp_path)))
    assert effects.deletes[0]["exists"] is True and effects.deletes[0]["size"] == 5
    assert effects.reads[0]["exists"] is False
    assert effects.stale() == []
    (tmp_path / "README.md").write_text("now it exists")
    assert effects.stale() == [str(tmp_path / "README.md")]
    (tmp_path / "notes.txt").write_text("longer notes")
    assert sorted(effects.stale()) == sorted([str(tmp_path / "README.md"), str(tmp_path / "notes.txt")])
    fresh = compute_effects(ToolCall("Bash", {"command": "rm notes.txt && cat README.md"}, cwd=str(tmp_path)))
    assert fresh.stale() == [] and fresh.reads[0]["exists"] is True


def test_force_push_counts_the_remote_commits_it_would_discard(tmp_path: Path) -> None:
    remote = tmp_path / "remote.git"
    _git("init", "-q", "--bare", remote)
    work = tmp_path / "work"
    _git("clone", "-q", remote, work)
    for number in range(5):
        (work / "f.txt").write_text(str(number))
        _git("-C", work, "add", "f.txt")
        _git("-C", work, "commit", "-qm", f"c{number}")
    _git("-C", work, "push", "-q", "origin", "main")
    _git("-C", work, "reset", "-q", "--hard", "HEAD~2")  # two commits the remote has and we no longer do
    (work / "g.txt").write_text("new")
    _git("-C", work, "add", "g.txt")
    _git("-C", work, "commit", "-qm", "replacement")

    [item] = _bash("git push --force origin main", work)["network"]
    assert item["remote"] == "origin" and item["branch"] == "main" and item["force"] is True
    assert item["discards"] == 2 and item["discards_at_least"] is False and item["uploads"] == 1
    assert item["host"] == str(remote)  # a local remote: its path stands for the host
    [plain] = _bash("git push", work)["network"]
    assert plain["force"] is False and "refused" in plain["note"]
    [plus] = _bash("git push origin +main:main", work)["network"]
    assert plus["force"] is True and plus["discards"] == 2


def test_symlinks_are_never_followed_out_of_the_workspace(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("TOP SECRET")
    work = tmp_path / "work"
    work.mkdir()
    (work / "link").symlink_to(outside)
    deleted = _bash("rm -rf link/secret.txt", work)["deletes"][0]
    assert "symlink" in deleted["note"] and "exists" not in deleted
    listed = _bash("rm -rf link", work)["deletes"][0]
    assert listed["kind"] == "symlink" and "files" not in listed  # the link itself, never its target's tree
    call = ToolCall("Write", {"file_path": str(work / "link" / "secret.txt"), "content": "x"}, cwd=str(work))
    [write] = compute_effects(call).writes
    assert "diff" not in write and "TOP SECRET" not in str(write)


def test_file_writes_carry_the_diff_against_the_file_on_disk(tmp_path: Path) -> None:
    (tmp_path / "app.py").write_text("a = 1\nb = 2\n")
    edit = ToolCall(
        "Edit", {"file_path": str(tmp_path / "app.py"), "old_string": "b = 2", "new_string": "b = 3"}, cwd=str(tmp_path)
    )
    [item] = compute_effects(edit).writes
    assert "-b = 2\n+b = 3\n" in item["diff"] and item["diff"].startswith("--- a/app.py")
    mcp = ToolCall(
        "mcp__filesystem__write_file", {"path": str(tmp_path / "new.md"), "content": "hi\n"}, cwd=str(tmp_path)
    )
    [created] = compute_effects(mcp).writes
    assert created["exists"] is False and "+hi\n" in created["diff"]
    outside = ToolCall("Write", {"file_path": "/etc/hosts", "content": "x"}, cwd=str(tmp_path))
    [far] = compute_effects(outside).writes
    assert far["inside_workspace"] is False and "diff" not in far and "inside the workspace" in far["diff_note"]
    read = ToolCall("Read", {"file_path": str(tmp_path / "app.py")}, cwd=str(tmp_path))
    assert compute_effects(read).reads[0]["size"] == 12
    fetch = ToolCall("WebFetch", {"url": "https://docs.example.com/x"})
    assert compute_effects(fetch).network[0]["host"] == "docs.example.com"


def test_a_fifo_or_a_hard_link_is_never_opened(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "pipe")
    (tmp_path / "outside.txt").write_text("TOP SECRET")
    os.link(tmp_path / "outside.txt", tmp_path / "linked.txt")  # the same inode under a second name
    for name in ("pipe", "linked.txt"):
        call = ToolCall("Write", {"file_path": str(tmp_path / name), "content": "x"}, cwd=str(tmp_path))
        [item] = compute_effects(call, budget_s=0.5).writes  # a FIFO opened for reading would block here
        assert "diff" not in item and "not read" in item["diff_note"], item
    [fifo] = _bash("cat pipe", tmp_path)["reads"]
    assert fifo["kind"] == "special"


def test_a_file_named_after_a_cd_is_shown_where_the_shell_opens_it(tmp_path: Path) -> None:
    """``cd ~/.ssh && cat config`` reads the SSH configuration: the preview must not tell the reviewer it reads
    ``config`` in the workspace (which does not even exist there)."""
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "config").write_text("Host *\n")
    work = tmp_path / "work"
    (work / "src").mkdir(parents=True)
    (work / "src" / "main.py").write_text("print()\n")
    [read] = _bash(f"cd {home / '.ssh'} && cat config", work)["reads"]
    assert read["resolved"] == str(home / ".ssh" / "config")
    assert read["exists"] is True and read["inside_workspace"] is False
    [inside] = _bash("cd src && cat main.py", work)["reads"]
    assert inside["resolved"] == str(work / "src" / "main.py") and inside["inside_workspace"] is True
    [unknown] = _bash('cd "$D" && cat config', work)["reads"]
    assert "resolved" not in unknown and "cannot tell" in unknown["note"]
