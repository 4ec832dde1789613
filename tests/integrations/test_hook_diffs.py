"""The diff a waiting Write or Edit request carries (``integrations/claude_code/diffs.py``): the project's file read
without following a symlink, never blocking on a FIFO or device, never past its size limit, and each refusal said in
the request's note.

The agent writes the project's files, so whatever stands at the path it names is the agent's choice: a FIFO it made
(an ``open()`` waits for a writer forever: the hook hangs to its budget), a device, a symlink or a hard link to a file
outside, a directory swapped for a symlink between a check and the open.
"""

from __future__ import annotations

import os
import stat
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from reviewer_app.integrations.claude_code.diffs import MAX_FILE_BYTES, diff_for

SECRET = "OUTSIDE-SECRET"
posix_only = pytest.mark.skipif(sys.platform == "win32", reason="POSIX: FIFOs, devices, symlinks")


@pytest.fixture
def project(tmp_path: Path) -> Path:
    folder = tmp_path / "project"
    folder.mkdir()
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "secret.txt").write_text(SECRET + "\n")
    return folder


def _diff(tool: str, path: str, cwd: Path, **arguments: Any) -> dict[str, str] | None:
    """``diff_for`` in a thread, which must end within 20 s (a hang guard, not a speed goal)."""
    if tool == "Write":
        arguments.setdefault("content", "new text\n")
    elif tool == "Edit":
        arguments = {"old_string": "a", "new_string": "b", **arguments}
    found: list[dict[str, str] | None] = []
    worker = threading.Thread(target=lambda: found.append(diff_for(tool, {"file_path": path, **arguments}, str(cwd))))
    worker.daemon = True  # a hang on the old code must not keep the test run alive
    worker.start()
    worker.join(20)
    assert not worker.is_alive(), f"diff_for({tool}, {path!r}) still blocked after 20 s"
    [result] = found
    return result


@posix_only
@pytest.mark.parametrize("tool", ["Write", "Edit"])
def test_a_fifo_in_the_project_is_not_opened(project: Path, tool: str) -> None:
    fifo = project / "pipe"
    os.mkfifo(fifo)
    try:
        result = _diff(tool, str(fifo), project)
    finally:  # unblock a reader the old code left waiting in open()
        try:
            os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
        except OSError:
            pass
    assert result is not None
    assert result["note"] == f"{fifo} is a FIFO (named pipe): not read, compared with nothing"
    assert result["diff"] == ("" if tool == "Edit" else result["diff"])


@posix_only
def test_a_directory_is_said_to_be_one(project: Path) -> None:
    (project / "folder").mkdir()
    result = _diff("Write", "folder", project)
    assert result is not None and result["note"] == "folder is a directory: not read, compared with nothing"
    assert result["diff"].startswith("--- a/folder\n+++ b/folder\n")


@posix_only
def test_a_device_node_in_the_project_is_not_read(project: Path) -> None:
    device = project / "null"
    try:
        os.mknod(device, stat.S_IFCHR | 0o666, os.makedev(1, 3))  # /dev/null's numbers
    except (PermissionError, OSError) as exc:
        pytest.skip(f"cannot make a device node here: {exc}")
    result = _diff("Write", "null", project)
    assert result is not None and result["note"] == "null is a device: not read, compared with nothing"


@posix_only
@pytest.mark.parametrize("name", ["link.txt", "folder/secret.txt"])
def test_a_symlink_inside_leading_outside_is_not_followed(project: Path, name: str) -> None:
    outside = project.parent / "outside"
    (project / "link.txt").symlink_to(outside / "secret.txt")
    (project / "folder").symlink_to(outside, target_is_directory=True)
    for path in (name, str(project / name)):
        result = _diff("Write", path, project)
        assert result is not None and SECRET not in result["diff"]
        assert result["note"] == f"{path} is outside the project directory: not read, compared with nothing"


@posix_only
def test_a_symlink_that_stays_inside_is_read(project: Path) -> None:
    (project / "real.txt").write_text("one\n")
    (project / "link.txt").symlink_to("real.txt")
    result = _diff("Edit", "link.txt", project, old_string="one", new_string="two")
    assert result is not None and "-one\n+two\n" in result["diff"] and result["note"] == ""


@posix_only
def test_a_hard_link_to_a_file_outside_is_not_read(project: Path) -> None:
    try:
        os.link(project.parent / "outside" / "secret.txt", project / "hard.txt")
    except OSError as exc:
        pytest.skip(f"no hard links here: {exc}")
    result = _diff("Write", "hard.txt", project)
    assert result is not None and SECRET not in result["diff"]
    assert result["note"] == (
        "hard.txt has 2 hard links: not read (another may be outside the project), compared with nothing"
    )


def test_a_file_over_the_size_limit_is_not_read(project: Path) -> None:
    (project / "big.txt").write_bytes(b"x" * (MAX_FILE_BYTES + 1))
    result = _diff("Edit", "big.txt", project, old_string="x", new_string="y")
    assert result == {"path": "big.txt", "diff": "", "note": "big.txt is larger than 2 MB: not read"}


def test_non_utf8_bytes_give_no_diff(project: Path) -> None:
    (project / "latin1.txt").write_bytes(b"caf\xe9\n")
    assert _diff("Edit", "latin1.txt", project) == {
        "path": "latin1.txt",
        "diff": "",
        "note": "latin1.txt is not UTF-8 text: no diff",
    }


def test_line_ends_are_read_as_text_mode_reads_them(project: Path) -> None:
    """``\\r\\n`` and ``\\r`` end lines as ``open(encoding="utf-8")`` reads them (the diff the reviewer saw)."""
    (project / "crlf.txt").write_bytes(b"one\r\ntwo\rthree\n")
    result = _diff("Edit", "crlf.txt", project, old_string="two\nthree", new_string="2\n3")
    assert result is not None and "-two\n-three\n+2\n+3\n" in result["diff"], result


def test_a_missing_file_and_a_missing_folder_are_new(project: Path) -> None:
    for path in ("new.txt", "new/folder/file.txt"):
        result = _diff("Write", path, project, content="hello\n")
        assert result is not None and result["note"] == f"{path} does not exist yet" and "+hello\n" in result["diff"]


@posix_only
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the swapper uses Linux renameat2")
def test_a_folder_swapped_for_a_symlink_never_lets_the_outside_in(project: Path) -> None:
    """Another process keeps swapping ``project/sub`` between a real folder and a symlink to the outside while the
    diffs are made: not one may show the outside file."""
    from tests.runtime.test_workspace_races import Swapper

    outcomes = {"inside": 0, "escaped": 0, "refused": 0}
    with Swapper(project, project.parent / "outside") as swapper:
        for _ in range(1000):
            result = diff_for("Write", {"file_path": "sub/secret.txt", "content": "new\n"}, str(project))
            assert result is not None
            if SECRET in result["diff"] + result["note"]:
                outcomes["escaped"] += 1
            elif "-inside" in result["diff"]:
                outcomes["inside"] += 1
            else:
                outcomes["refused"] += 1
    print(f"\ndiffs under a symlink swap: {swapper.swaps} swaps, {outcomes}")
    assert outcomes["escaped"] == 0, outcomes
