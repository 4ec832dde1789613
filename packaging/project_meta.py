"""Name, version and descriptions for every installer, read from ``pyproject.toml`` (the one source).

The frozen app itself reports the version from the package metadata that the
spec copies into the bundle; ``smoke_test.py`` checks that the two agree, so a
stale editable install cannot ship a mislabelled package.
"""

from __future__ import annotations

import platform
import re
import sys
import tomllib
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PACKAGING = REPO / "packaging"

# Identity that is not in pyproject: how the app presents itself on desktops.
DISPLAY_NAME = "Reviewer"
BUNDLE_ID = "dev.reviewer.ReviewerApp"


@dataclass(frozen=True)
class ProjectMeta:
    name: str  # distribution and command name: reviewer-app
    version: str
    description: str
    maintainer: str

    @property
    def numeric_version(self) -> tuple[int, int, int, int]:
        """Four integers for Windows version resources (``0.2.0rc1`` -> ``(0, 2, 0, 0)``)."""
        release = re.match(r"\d+(?:\.\d+)*", self.version)
        parts = [int(piece) for piece in release.group(0).split(".")] if release else []
        return (*parts, 0, 0, 0, 0)[:4]  # type: ignore[return-value]

    @property
    def deb_version(self) -> str:
        """Debian sorts ``~`` before anything, so ``1.0~rc1`` < ``1.0`` as PEP 440's ``1.0rc1`` < ``1.0``."""
        return re.sub(r"(\d)\.?(a|b|rc|dev)(\d*)", r"\1~\2\3", self.version, count=1)


def read_meta(pyproject: Path = REPO / "pyproject.toml") -> ProjectMeta:
    project = tomllib.loads(pyproject.read_text(encoding="utf-8"))["project"]
    authors = ", ".join(author.get("name", "") for author in project.get("authors", [])) or project["name"]
    return ProjectMeta(
        name=project["name"], version=project["version"], description=project["description"], maintainer=authors
    )


def platform_tag() -> str:
    """``linux-x86_64``, ``windows-amd64``, ``macos-arm64``: how artefact names say where they run."""
    system = {"linux": "linux", "win32": "windows", "darwin": "macos"}.get(sys.platform, sys.platform)
    return f"{system}-{platform.machine().lower()}"


def deb_arch() -> str:
    machine = platform.machine().lower()
    return {"x86_64": "amd64", "amd64": "amd64", "aarch64": "arm64", "arm64": "arm64"}.get(machine, machine)


if __name__ == "__main__":  # used by scripts and CI: `python packaging/project_meta.py version`
    meta = read_meta()
    field = sys.argv[1] if len(sys.argv) > 1 else "version"
    value = getattr(meta, field)
    print(".".join(map(str, value)) if isinstance(value, tuple) else value)
