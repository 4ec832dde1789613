"""What archivers and copiers touch, and what a wildcard matches now, on a real disk (the preview's "What it will
touch")."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from reviewer_app.domain.toolcall import ToolCall
from reviewer_app.preview.describe import item_facts
from reviewer_app.preview.effects import compute_effects


def _touches(command: str, cwd: Path) -> dict[str, list[dict[str, Any]]]:
    return compute_effects(ToolCall("Bash", {"command": command}, cwd=str(cwd)), budget_s=5).to_dict()


def _paths(effects: dict[str, list[dict[str, Any]]], kind: str) -> list[str]:
    return [str(item["path"]) for item in effects[kind]]


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    (tmp_path / "src" / "pkg").mkdir(parents=True)
    for name in ("a.py", "b.py", "notes.txt"):
        (tmp_path / "src" / "pkg" / name).write_text("x\n")
    return tmp_path


@pytest.mark.parametrize(
    "command",
    [
        "tar czf backup.tgz src",
        "tar -czf backup.tgz src",
        "tar -c -z -f backup.tgz src",
        "tar --create --gzip --file=backup.tgz src",
        "tar --create --file backup.tgz src",
        "tar cf backup.tgz --exclude '*.pyc' src",
    ],
)
def test_tar_create_writes_the_archive_and_reads_the_directory(workspace: Path, command: str) -> None:
    effects = _touches(command, workspace)
    assert _paths(effects, "writes") == ["backup.tgz"]
    assert _paths(effects, "reads") == ["src"]
    assert effects["reads"][0]["kind"] == "directory" and effects["reads"][0]["files"] == 4


def test_tar_create_reads_its_operands_in_the_directory_given_by_c(workspace: Path, tmp_path: Path) -> None:
    effects = _touches(f"tar -C {workspace}/src -czf backup.tgz pkg", workspace)
    assert _paths(effects, "writes") == ["backup.tgz"]
    [read] = effects["reads"]
    assert read["path"] == "pkg" and read["resolved"] == str(workspace / "src" / "pkg") and read["files"] == 3


def test_tar_extract_reads_the_archive_and_writes_where_it_extracts(workspace: Path) -> None:
    for command in ("tar xzf backup.tgz -C out", "tar --extract --file=backup.tgz --directory=out"):
        effects = _touches(command, workspace)
        assert _paths(effects, "reads") == ["backup.tgz"], command
        assert _paths(effects, "writes") == ["out"], command


def test_zip_cp_and_rsync_read_their_sources_and_write_their_destination(workspace: Path) -> None:
    effects = _touches("zip -r src.zip src && cp -r src/pkg copy && rsync -a --exclude .git src/ mirror/", workspace)
    assert _paths(effects, "writes") == ["src.zip", "copy", "mirror/"]
    assert _paths(effects, "reads") == ["src", "src/pkg", "src/"]


def test_a_wildcard_says_what_it_matches_now_not_that_it_does_not_exist(workspace: Path) -> None:
    effects = _touches("cp src/pkg/*.py /tmp/out/", workspace)
    [read] = effects["reads"]
    assert read["path"] == "src/pkg/*.py" and read["matches"] == ["src/pkg/a.py", "src/pkg/b.py"]
    words = item_facts(read)
    assert "does not exist" not in words and "a pattern: matches 2 now: src/pkg/a.py, src/pkg/b.py" in words


def test_a_wildcard_that_matches_nothing_says_so(workspace: Path) -> None:
    [deleted] = _touches("rm -f src/*.log", workspace)["deletes"]
    assert deleted["matches"] == []
    words = item_facts(deleted)
    assert "does not exist" not in words and "a pattern: matches nothing now" in words


def test_a_wildcard_with_many_matches_names_a_few(workspace: Path) -> None:
    for number in range(30):
        (workspace / "src" / f"f{number:02}.txt").write_text("")
    [deleted] = _touches("rm src/*.txt", workspace)["deletes"]
    assert len(deleted["matches"]) == 30
    words = item_facts(deleted)
    assert "a pattern: matches 30 now: src/f00.txt, src/f01.txt, src/f02.txt, …" in words
