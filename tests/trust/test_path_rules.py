"""Path rules judge the path the tool will really touch: resolved against the call's cwd with symlinks followed.

``Write(src/**)`` allowed ``src/x/notes`` where ``src/x`` is a symlink to ``$HOME``. Now a path that resolves
outside the pattern, or cannot be resolved, never matches an allow; a deny or ask matches the lexical or the
resolved path. The differential part builds real temp trees with symlinks and checks the engine against
``os.path.realpath``: no generated path that really lies outside the pattern is allowed.
"""

from __future__ import annotations

import os
import posixpath
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from reviewer_app.domain.rules import Rule, ToolCall, evaluate

NOW = 1_000_000.0


def verdict(effect: str, pattern: str, path: str, cwd: Path, tool: str = "Write") -> str | None:
    call = ToolCall(tool, {"file_path": path, "content": "x"}, cwd=str(cwd))
    found = evaluate([Rule(effect, pattern, created_at=NOW)], call, NOW)  # type: ignore[arg-type]
    return found.effect if found is not None else None


@pytest.fixture
def tree(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "home"
    (home / "docs").mkdir(parents=True)
    workspace = home / "project"
    (workspace / "src" / "pkg").mkdir(parents=True)
    (workspace / "src" / "x").symlink_to(home)
    (workspace / "src" / "loop").symlink_to(workspace / "src" / "loop")
    (workspace / "src" / "dangling").symlink_to(home / "docs" / "new.txt")
    (workspace / "link-in").symlink_to(workspace / "src")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("REVIEWER_CONFIG", str(tmp_path / "none.toml"))
    return workspace


def test_a_symlink_out_of_the_workspace_is_not_allowed_by_a_glob(tree: Path) -> None:
    assert verdict("allow", "Write(src/**)", "src/x/docs/notes.txt", tree) is None
    assert verdict("allow", "Write(src/**)", str(tree / "src" / "x" / "notes.txt"), tree) is None
    assert verdict("allow", "Write(src/**)", "src/dangling", tree) is None
    assert verdict("allow", "Write(src/**)", "src/pkg/ok.py", tree) == "allow"


def test_a_deny_catches_the_resolved_path(tree: Path) -> None:
    home = tree.parent
    assert verdict("deny", f"Write(/{home}/docs/**)", "src/x/docs/notes.txt", tree) == "deny"
    assert verdict("ask", f"Write(/{home}/docs/**)", "src/dangling", tree) == "ask"


def test_an_unresolvable_path_never_matches_an_allow(tree: Path) -> None:
    assert verdict("allow", "Write(src/**)", "src/loop/a.txt", tree) is None
    assert verdict("allow", "Write(**)", "src/pkg/\x00x", tree) is None


def test_dot_dot_and_tilde_games(tree: Path) -> None:
    home = tree.parent
    assert verdict("allow", "Write(src/**)", "src/pkg/../../../docs/a.txt", tree) is None
    # lexically src/project/…, but the kernel follows src/x to $HOME first, then climbs out of it
    assert verdict("allow", "Write(src/**)", "src/x/../project/src/pkg/a.py", tree) is None
    assert verdict("deny", f"Write(/{home.parent}/project/**)", "src/x/../project/a.py", tree) == "deny"
    assert verdict("allow", "Write(src/**)", "link-in/../../docs/a.txt", tree) is None
    assert verdict("deny", f"Write(/{home}/docs/**)", "~/docs/a.txt", tree) == "deny"
    assert verdict("allow", f"Write(/{home}/docs/**)", "~/docs/a.txt", tree) is None


def test_a_symlink_inside_the_workspace_to_inside_the_pattern_is_fine(tree: Path) -> None:
    assert verdict("allow", "Write(src/**)", "link-in/pkg/a.py", tree) is None  # lexically outside src/
    assert verdict("allow", "Write(**)", "link-in/pkg/a.py", tree) == "allow"


# -- differential: generated trees and patterns against realpath ---------------------------------------------

NAMES = ["a", "b", "src", "out"]


DIRECTORIES = st.lists(st.sampled_from(["src", "src/a", "src/b", "a", "a/b", "out"]), max_size=4)
LINKS = st.lists(
    st.tuples(
        st.sampled_from(["src/l", "src/a/l", "a/l", "l", "src/b"]),
        st.sampled_from(["..", "../..", "../../outside", "src", "/", "a", "l", "../outside/a"]),
    ),
    max_size=3,
)


@st.composite
def trees(draw: st.DrawFn) -> tuple[list[str], list[tuple[str, str]]]:
    """Strategies built once, outside the draw (built in each draw, validating them again was most of the test)."""
    return draw(DIRECTORIES), draw(LINKS)


def _build(root: Path, directories: list[str], links: list[tuple[str, str]]) -> None:
    (root / "outside").mkdir()
    workspace = root / "ws"
    workspace.mkdir()
    for directory in directories:
        (workspace / directory).mkdir(parents=True, exist_ok=True)
    for link, target in links:
        place = workspace / link
        if place.parent.is_dir() and not os.path.lexists(place):
            place.symlink_to(target)


def _inside(real: str, base: str) -> bool:
    return real == base or real.startswith(base.rstrip("/") + "/")


@settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    trees(),
    st.sampled_from(["src/**", "a/**", "**", "src/a/**", "*.txt"]),
    st.lists(st.sampled_from([*NAMES, "l", "..", ".", "f.txt"]), min_size=1, max_size=5),
)
def test_no_generated_path_that_really_escapes_the_pattern_is_allowed(
    tmp_path_factory: pytest.TempPathFactory,
    shape: tuple[list[str], list[tuple[str, str]]],
    glob: str,
    parts: list[str],
) -> None:
    root = tmp_path_factory.mktemp("t")
    _build(root, *shape)
    workspace = root / "ws"
    path = "/".join(parts)
    if verdict("allow", f"Write({glob})", path, workspace) != "allow":
        return
    real = os.path.realpath(workspace / path)
    real_ws = os.path.realpath(workspace)
    assert _inside(real, real_ws), (path, real)
    relative = posixpath.relpath(real, real_ws)
    if glob.endswith("/**") and glob != "**":
        assert _inside(relative, glob[:-3]), (path, relative)


def test_searches_are_covered_by_the_workspace_glob_only_inside_it(tree: Path) -> None:
    """The seeded ``Glob(**)`` / ``Grep(**)``: a search of the workspace, never one that climbs out of it."""

    def search(tool: str, arguments: dict) -> str | None:
        found = evaluate([Rule("allow", f"{tool}(**)", created_at=NOW)], ToolCall(tool, arguments, cwd=str(tree)), NOW)
        return found.effect if found is not None else None

    assert search("Glob", {"pattern": "src/**/*.py"}) == "allow"
    assert search("Grep", {"pattern": "TODO"}) == "allow"
    assert search("Grep", {"pattern": "TODO", "path": "src"}) == "allow"
    assert search("Glob", {"pattern": f"{tree.parent}/.ssh/*"}) is None
    assert search("Glob", {"pattern": "../../**"}) is None
    assert search("Glob", {"pattern": "~/.aws/*"}) is None
    assert search("Grep", {"pattern": "key", "path": "src/x"}) is None  # the symlink to $HOME
    assert search("Grep", {"pattern": "key", "path": ".."}) is None
