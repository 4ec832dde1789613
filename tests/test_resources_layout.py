"""The top-level ``resources/`` is the package ``reviewer_app.resources`` everywhere the app runs.

From the source tree (editable install), from an installed wheel and from a PyInstaller bundle,
``reviewer_app.resources.resource_path`` must find the same files; the Linux packages take the desktop
entry, the AppStream metainfo and the icons from the same directory.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tomllib
import venv
import xml.etree.ElementTree as ET
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
RESOURCES = REPO / "resources"
sys.path.insert(0, str(REPO / "packaging"))

import build_installers  # noqa: E402
import bundle_data  # noqa: E402
import project_meta  # noqa: E402
import qt_filter  # noqa: E402

# What the wheel needs to build: the project files, the package and its data.
WHEEL_SOURCES = ("pyproject.toml", "setup.py", "README.md", "reviewer_app", "resources")
METAINFO_NAME = f"{project_meta.BUNDLE_ID}.metainfo.xml"
PROBE = f"""
import json
from reviewer_app.resources import app_icon_pngs, app_icon_svg, resource_path
print(json.dumps({{
    "svg": str(app_icon_svg()),
    "pngs": [str(path) for path in app_icon_pngs()],
    "tool": str(resource_path("icons/tool.svg")),
    "desktop": str(resource_path("linux/reviewer-app.desktop")),
    "metainfo": str(resource_path("linux/{METAINFO_NAME}")),
}}))
"""


def shipped_files() -> list[str]:
    """Every data file under resources/, relative to it (what every build must carry)."""
    return sorted(
        path.relative_to(RESOURCES).as_posix()
        for path in RESOURCES.rglob("*")
        if path.is_file() and "__pycache__" not in path.parts and path.suffix not in {".py", ".pyc"}
    )


def check_probe_output(output: str, root: Path) -> None:
    """Every path PROBE printed is a file inside ``root`` with the bytes of its source in resources/."""
    found = json.loads(output)
    paths = [Path(found["svg"]), *map(Path, found["pngs"]), Path(found["tool"]), Path(found["desktop"])]
    paths.append(Path(found["metainfo"]))
    for path in paths:
        assert path.is_file(), path
        assert path.resolve().is_relative_to(root.resolve()), f"{path} is not inside {root}"
        assert path.read_bytes() == (RESOURCES / relative_to_package(path)).read_bytes(), path


def relative_to_package(path: Path) -> Path:
    """``.../reviewer_app/resources/icons/tool.svg`` -> ``icons/tool.svg``."""
    parts = path.parts
    index = max(i for i in range(len(parts) - 1) if parts[i] == "reviewer_app" and parts[i + 1] == "resources")
    return Path(*parts[index + 2 :])


def test_the_resources_package_is_the_top_level_directory() -> None:
    import reviewer_app.resources as resources

    assert Path(resources.__file__).resolve() == (RESOURCES / "__init__.py").resolve()
    assert not (REPO / "reviewer_app" / "resources").exists(), "the data files live in the top-level resources/"
    for name in shipped_files():
        assert resources.resource_path(name) == RESOURCES / name


@pytest.mark.slow
def test_a_built_wheel_ships_every_resource_and_resource_path_finds_them_installed(tmp_path: Path) -> None:
    source = tmp_path / "src"
    source.mkdir()
    for name in WHEEL_SOURCES:
        if (REPO / name).is_dir():
            shutil.copytree(REPO / name, source / name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        else:
            shutil.copy2(REPO / name, source / name)
    wheels = tmp_path / "wheels"
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", str(source), "--no-deps", "--quiet", "-w", str(wheels)],
        check=True,
        capture_output=True,
    )
    (wheel,) = wheels.glob("reviewer_app-*.whl")
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
    for name in ["__init__.py", *shipped_files()]:
        assert f"reviewer_app/resources/{name}" in names, name
    assert not any(name.startswith("resources/") for name in names), "resources/ must not become a top-level package"

    # A plain (non-editable) install in a fresh venv, run from elsewhere so the source tree is not on sys.path.
    target = tmp_path / "venv"
    venv.create(target, with_pip=False)
    python = target / ("Scripts/python.exe" if sys.platform == "win32" else "bin/python")
    subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(python), "install", "--quiet", "--no-deps", str(wheel)],
        check=True,
        capture_output=True,
    )
    result = subprocess.run([str(python), "-I", "-c", PROBE], cwd=tmp_path, capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stderr
    check_probe_output(result.stdout, target)


@pytest.mark.slow
@pytest.mark.skipif(importlib.util.find_spec("PyInstaller") is None, reason="needs the `package` extra")
def test_a_pyinstaller_bundle_finds_the_resources_with_the_specs_hook_and_datas(tmp_path: Path) -> None:
    script = tmp_path / "probe.py"
    script.write_text(PROBE, encoding="utf-8")
    command = [sys.executable, "-m", "PyInstaller", "--noconfirm", "--log-level", "WARN", "--paths", str(REPO)]
    command += ["--additional-hooks-dir", str(bundle_data.HOOKS)]
    for source, dest in bundle_data.resource_datas():
        command += ["--add-data", f"{source}{os.pathsep}{dest}"]
    command += ["--distpath", str(tmp_path / "dist"), "--workpath", str(tmp_path / "work"), "--specpath", str(tmp_path)]
    subprocess.run([*command, str(script)], check=True, capture_output=True, cwd=tmp_path)
    executable = tmp_path / "dist" / "probe" / ("probe.exe" if sys.platform == "win32" else "probe")
    result = subprocess.run([str(executable)], capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stderr
    check_probe_output(result.stdout, tmp_path / "dist")


def test_the_bundle_carries_every_resource_at_its_package_path() -> None:
    datas = bundle_data.resource_datas()
    placed = sorted(
        (Path(dest) / Path(source).name).relative_to("reviewer_app/resources").as_posix() for source, dest in datas
    )
    assert placed == shipped_files()
    for source, dest in datas:
        assert qt_filter.keep(f"{dest}/{Path(source).name}"), dest


def test_linux_packages_take_the_desktop_entry_metainfo_and_icons_from_resources(tmp_path: Path) -> None:
    meta = project_meta.read_meta()
    share = tmp_path / "share"
    build_installers.install_desktop_files(share, meta)
    installed = sorted(path.relative_to(share).as_posix() for path in share.rglob("*") if path.is_file())
    expected = [
        f"applications/{meta.name}.desktop",
        *[f"icons/hicolor/{size}x{size}/apps/{meta.name}.png" for size in build_installers.HICOLOR_SIZES],
        f"icons/hicolor/scalable/apps/{meta.name}.svg",
        f"metainfo/{METAINFO_NAME}",
    ]
    assert installed == sorted(expected)
    assert (share / "applications" / f"{meta.name}.desktop").read_bytes() == (
        RESOURCES / "linux" / "reviewer-app.desktop"
    ).read_bytes()


def test_the_appstream_metainfo_names_this_app_and_its_current_version() -> None:
    metainfo = RESOURCES / "linux" / METAINFO_NAME
    root = ET.parse(metainfo).getroot()
    assert root.get("type") == "desktop-application"
    assert root.findtext("id") == project_meta.BUNDLE_ID
    assert root.findtext("launchable") == "reviewer-app.desktop"
    assert (RESOURCES / "linux" / "reviewer-app.desktop").is_file()
    assert root.findtext("provides/binary") == project_meta.read_meta().name
    pyproject = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert root.findtext("project_license") == pyproject["license"]
    newest = root.find("releases/release")
    assert newest is not None and newest.get("version") == pyproject["version"], "add a <release> for this version"


@pytest.mark.skipif(shutil.which("appstreamcli") is None, reason="appstreamcli not installed (apt: appstream)")
def test_appstreamcli_validates_the_metainfo() -> None:
    metainfo = RESOURCES / "linux" / METAINFO_NAME
    result = subprocess.run(
        ["appstreamcli", "validate", "--no-net", str(metainfo)], capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stdout + result.stderr
