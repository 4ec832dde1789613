"""Workspace confinement under attack: a directory swapped for a symlink mid-call, FIFOs, hard links.

Another process (here a thread) keeps swapping ``ws/sub`` between a real directory and a symlink to a folder
outside the workspace while the file tools run: not one read may return the outside secret and not one write
may land outside. The counts are printed for the record (``pytest -s``).
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from reviewer_app.runtime.tools import ToolContext, ToolRegistry, builtin_tools

pytestmark = [
    pytest.mark.asyncio,
    pytest.mark.skipif(sys.platform == "win32", reason="POSIX: symlinks, FIFOs, openat"),
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the swapper uses Linux renameat2"),
]

ATTEMPTS = 1000
SECRET = "OUTSIDE-SECRET"


@pytest.fixture
def layout(tmp_path: Path) -> tuple[Path, Path]:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text(SECRET)
    return workspace, outside


@pytest.fixture
def ctx(layout: tuple[Path, Path]) -> ToolContext:
    return ToolContext(workspace=layout[0], session_id="s1", invocation_id="i1")


@pytest.fixture
def tools() -> ToolRegistry:
    return builtin_tools()


SWAP_LOOP = """
import ctypes, os, signal, sys
sub, alt, outside = sys.argv[1:4]
os.symlink(outside, alt, target_is_directory=True)
libc = ctypes.CDLL(None, use_errno=True)
AT_FDCWD, RENAME_EXCHANGE = -100, 2
a, b = os.fsencode(sub), os.fsencode(alt)
swaps = 0
def stop(*_):
    print(swaps, flush=True)
    os._exit(0)
signal.signal(signal.SIGTERM, stop)
print("ready", flush=True)
while True:
    # renameat2(RENAME_EXCHANGE): sub is the real directory or the symlink, atomically, and never missing.
    if libc.renameat2(AT_FDCWD, a, AT_FDCWD, b, RENAME_EXCHANGE) != 0:
        raise OSError(ctypes.get_errno(), "renameat2")
    swaps += 1
"""


class Swapper:
    """Another process that keeps swapping ``ws/sub`` between a real directory and a symlink to the outside.

    A process rather than a thread: it races at full speed instead of waiting for the GIL.
    """

    def __init__(self, workspace: Path, outside: Path) -> None:
        self.sub = workspace / "sub"
        self.sub.mkdir()
        (self.sub / "secret.txt").write_text("inside")
        self.args = [str(self.sub), str(workspace / ".alt"), str(outside)]
        self.swaps = 0
        self._proc: subprocess.Popen[str] | None = None

    def __enter__(self) -> Swapper:
        self._proc = subprocess.Popen([sys.executable, "-c", SWAP_LOOP, *self.args], stdout=subprocess.PIPE, text=True)
        assert self._proc.stdout is not None and self._proc.stdout.readline().strip() == "ready"
        return self

    def __exit__(self, *exc: object) -> None:
        if self._proc is None:
            return
        proc, self._proc = self._proc, None
        proc.send_signal(signal.SIGTERM)
        out, _ = proc.communicate(timeout=30)
        self.swaps = int(out.strip() or 0)
        assert proc.returncode == 0
        if self.sub.is_symlink():  # put the real directory back where it belongs
            os.rename(self.sub, self.args[1] + ".tmp")
            os.rename(self.args[1], self.sub)


@pytest.fixture
def swapper(layout: tuple[Path, Path]) -> Iterator[Swapper]:
    swap = Swapper(*layout)
    with swap:
        yield swap


async def test_symlink_swap_race_never_reads_outside(tools: ToolRegistry, ctx: ToolContext, swapper: Swapper) -> None:
    outcomes = {"inside": 0, "escaped": 0, "refused": 0}
    for _ in range(ATTEMPTS):
        result = await tools.execute("read_file", {"path": "sub/secret.txt"}, ctx)
        if SECRET in result.output:
            outcomes["escaped"] += 1
        elif result.ok:
            assert result.output == "inside"
            outcomes["inside"] += 1
        else:
            outcomes["refused"] += 1
    swapper.__exit__()
    print(f"\nread_file under a symlink swap: {ATTEMPTS} attempts, {swapper.swaps} swaps, {outcomes}")
    assert outcomes["escaped"] == 0, outcomes
    assert sum(outcomes.values()) == ATTEMPTS


async def test_symlink_swap_race_never_writes_outside(
    tools: ToolRegistry, ctx: ToolContext, layout: tuple[Path, Path], swapper: Swapper
) -> None:
    outside = layout[1]
    wrote = 0
    for i in range(ATTEMPTS):
        result = await tools.execute("write_file", {"path": f"sub/new{i % 7}.txt", "content": "pwned"}, ctx)
        wrote += result.ok
    swapper.__exit__()
    escaped = sorted(p.name for p in outside.iterdir() if p.name != "secret.txt")
    print(
        f"\nwrite_file under a symlink swap: {ATTEMPTS} attempts, {swapper.swaps} swaps, {wrote} written, "
        f"escaped {escaped}"
    )
    assert escaped == []
    assert (outside / "secret.txt").read_text() == SECRET
    assert wrote > 0  # the tool still works between swaps


async def test_a_fifo_is_refused_at_once(tools: ToolRegistry, ctx: ToolContext, layout: tuple[Path, Path]) -> None:
    os.mkfifo(layout[0] / "pipe")
    # A hang guard only (a FIFO with no writer blocks open() forever on the old code), not a speed goal.
    result = await asyncio.wait_for(tools.execute("read_file", {"path": "pipe"}, ctx), 30)
    assert not result.ok
    assert "FIFO" in result.output
    written = await asyncio.wait_for(tools.execute("write_file", {"path": "pipe", "content": "x"}, ctx), 30)
    assert not written.ok and "FIFO" in written.output
    listing = await tools.execute("list_dir", {}, ctx)
    assert listing.ok and "pipe" in listing.output
    for tool, args in (("list_dir", {"path": "pipe"}), ("read_file", {"path": "pipe/x"})):
        through = await asyncio.wait_for(tools.execute(tool, args, ctx), 30)
        assert not through.ok and "not a directory" in through.output, through.output


async def test_devices_and_sockets_are_refused(
    tools: ToolRegistry, ctx: ToolContext, layout: tuple[Path, Path]
) -> None:
    import socket

    (layout[0] / "null").symlink_to("/dev/null")
    result = await tools.execute("read_file", {"path": "null"}, ctx)
    assert not result.ok and "leads outside the workspace" in result.output
    path = layout[0] / "s.sock"
    with socket.socket(socket.AF_UNIX) as server:
        server.bind(str(path))
        result = await tools.execute("read_file", {"path": "s.sock"}, ctx)
    assert not result.ok and "socket" in result.output


async def test_a_hard_link_to_an_outside_file_is_refused(
    tools: ToolRegistry, ctx: ToolContext, layout: tuple[Path, Path]
) -> None:
    workspace, outside = layout
    os.link(outside / "secret.txt", workspace / "linked.txt")
    result = await tools.execute("read_file", {"path": "linked.txt"}, ctx)
    assert not result.ok
    assert SECRET not in result.output
    assert "hard link" in result.output
    written = await tools.execute("write_file", {"path": "linked.txt", "content": "pwned"}, ctx)
    assert not written.ok and "hard link" in written.output
    assert (outside / "secret.txt").read_text() == SECRET


async def test_symlinks_inside_the_workspace_still_work(
    tools: ToolRegistry, ctx: ToolContext, layout: tuple[Path, Path]
) -> None:
    workspace = layout[0]
    (workspace / "real" / "deeper").mkdir(parents=True)
    (workspace / "real" / "deeper" / "f.txt").write_text("hello")
    (workspace / "rel").symlink_to("real/deeper", target_is_directory=True)
    (workspace / "real" / "up").symlink_to("../real", target_is_directory=True)
    (workspace / "file-link").symlink_to("real/deeper/f.txt")
    for path in ("rel/f.txt", "real/up/deeper/f.txt", "file-link", "real/up/up/up/deeper/f.txt"):
        result = await tools.execute("read_file", {"path": path}, ctx)
        assert result.ok and result.output == "hello", (path, result.output)
    written = await tools.execute("write_file", {"path": "file-link", "content": "through the link"}, ctx)
    assert written.ok, written.output
    assert (workspace / "real" / "deeper" / "f.txt").read_text() == "through the link"
    assert (workspace / "file-link").is_symlink()  # the link itself stays; its (inside) target was replaced
    (workspace / "escape").symlink_to("real/../..", target_is_directory=True)

    result = await tools.execute("read_file", {"path": "escape/outside/secret.txt"}, ctx)
    assert not result.ok and "leads outside the workspace" in result.output
    (workspace / "loop").symlink_to("loop")
    result = await tools.execute("read_file", {"path": "loop/x"}, ctx)
    assert not result.ok and "symlinks" in result.output
