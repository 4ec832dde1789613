"""Let PyInstaller find ``reviewer_app.resources``, which lives in the top-level ``resources/`` directory.

setuptools maps that package there (``package-dir`` in pyproject.toml), but PyInstaller's module graph only
searches ``reviewer_app/`` for submodules. Appending the repository root to the package's search path makes
``reviewer_app.resources`` resolve to ``resources/__init__.py``; the spec puts its data files next to it in
the bundle (``reviewer_app/resources``), where ``importlib.resources`` looks.
"""

from pathlib import Path

REPO = Path(__file__).resolve().parents[3]  # packaging/pyinstaller_hooks/pre_safe_import_module/ -> the repository


def pre_safe_import_module(api):  # type: ignore[no-untyped-def]  # PyInstaller's hook signature
    api.append_package_path(str(REPO))
