"""``safe_fs.read_inside``: a path a model named (absolute or relative, with ``..``) read as the kernel would
resolve it, never above the workspace, never through a symlink that leaves it, never past its size limit."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from reviewer_app.domain import safe_fs

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX: openat, symlinks")


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    folder = tmp_path / "real"
    (folder / "deep" / "er").mkdir(parents=True)
    (folder / "top.txt").write_bytes(b"top")
    (folder / "deep" / "mid.txt").write_bytes(b"mid")
    (folder / "link").symlink_to(folder / "deep" / "er")  # absolute, inside
    (tmp_path / "alias").symlink_to(folder)  # the workspace as the host may name it
    (tmp_path / "secret.txt").write_bytes(b"secret")
    return tmp_path / "alias"


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("top.txt", b"top"),
        ("./deep/../top.txt", b"top"),
        ("link/../mid.txt", b"mid"),  # ``..`` of the link's target, as the kernel takes it, not of the text
        ("{alias}/top.txt", b"top"),
        ("{real}/deep/mid.txt", b"mid"),
    ],
)
def test_paths_inside_are_read_as_the_kernel_resolves_them(workspace: Path, path: str, expected: bytes) -> None:
    named = path.format(alias=workspace, real=workspace.resolve())
    assert safe_fs.read_inside(str(workspace), named, 100) == expected


@pytest.mark.parametrize("path", ["../secret.txt", "deep/../../secret.txt", "{tmp}/secret.txt", "{real}/../secret.txt"])
def test_paths_that_leave_are_refused(workspace: Path, path: str) -> None:
    named = path.format(tmp=workspace.parent, real=workspace.resolve())
    with pytest.raises(safe_fs.LeadsOutside):
        safe_fs.read_inside(str(workspace), named, 100)


def test_a_nul_byte_and_the_size_limit(workspace: Path) -> None:
    with pytest.raises(safe_fs.WorkspaceEscape, match="NUL"):
        safe_fs.read_inside(str(workspace), "top\x00.txt", 100)
    with pytest.raises(safe_fs.FileTooLarge) as raised:
        safe_fs.read_inside(str(workspace), "top.txt", 2)
    assert raised.value.size == 3
    assert safe_fs.read_inside(str(workspace), "top.txt", 3) == b"top"
