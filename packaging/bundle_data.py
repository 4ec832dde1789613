"""Which data files the PyInstaller bundle carries, and where: the spec's ``datas``, testable without a build.

The app finds its files through ``importlib.resources``, so each one must sit in the bundle at its package
path: the top-level ``resources/`` (the package ``reviewer_app.resources``, mapped there by setuptools) goes
to ``reviewer_app/resources``.
"""

from __future__ import annotations

from pathlib import Path

from project_meta import PACKAGING, REPO

RESOURCES = REPO / "resources"  # the package reviewer_app.resources
# PyInstaller's module graph searches reviewer_app/ only; this hook adds resources/ (see the hook).
HOOKS = PACKAGING / "pyinstaller_hooks"


def package_files(root: Path, patterns: tuple[str, ...], bundle_dir: str) -> list[tuple[str, str]]:
    """(source file, bundle directory) pairs: each file under ``bundle_dir`` at its path relative to ``root``."""
    found: list[tuple[str, str]] = []
    for pattern in patterns:
        for path in sorted(root.glob(pattern)):
            if path.is_file() and "__pycache__" not in path.parts and path.suffix not in {".py", ".pyc"}:
                found.append((str(path), Path(bundle_dir, path.parent.relative_to(root)).as_posix()))
    return found


def resource_datas() -> list[tuple[str, str]]:
    """Icons, the desktop entry and the AppStream metainfo (the module itself is bundled as code)."""
    return package_files(RESOURCES, ("*", "icons/*", "linux/*"), "reviewer_app/resources")
