"""The app's data files (icons, desktop entry, AppStream metainfo), found one way from source, wheel and bundle.

This directory is the top-level ``resources/`` of the repository, installed as the package
``reviewer_app.resources`` (setuptools ``package-dir``). ``importlib.resources`` resolves its directory;
the PyInstaller spec places these files under ``reviewer_app/resources`` inside the bundle, so no module
needs to know whether it runs frozen. Plain Python: no Qt here, the UI builds its ``QIcon`` from these paths.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

APP_ICON_SVG = "reviewer.svg"
APP_ICON_SIZES = (16, 24, 32, 48, 64, 128, 256)


def resource_path(name: str) -> Path:
    """Absolute path of a file shipped in this package (``"icons/tool.svg"``); raises if missing."""
    path = Path(str(resources.files(__name__).joinpath(*name.split("/"))))
    if not path.is_file():
        raise FileNotFoundError(f"resource {name!r} is not shipped with this build (looked at {path})")
    return path


def app_icon_pngs() -> list[Path]:
    """The app icon as PNGs, small to large (``QIcon.addFile`` each; raster needs no SVG plugin)."""
    return [resource_path(f"reviewer-{size}.png") for size in APP_ICON_SIZES]


def app_icon_svg() -> Path:
    return resource_path(APP_ICON_SVG)


__all__ = ["APP_ICON_SIZES", "APP_ICON_SVG", "app_icon_pngs", "app_icon_svg", "resource_path"]
