"""``make run``'s check: ask Qt's platform plugin (ldd) which system libraries are missing, name their packages.

Fake plugins are real ELF files built with gcc that link a library which is then taken away, so ``ldd``
really reports it missing; package names are checked against this machine's own dpkg and apt.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from reviewer_app.ui.startup import platform_deps
from reviewer_app.ui.startup.platform_deps import EXIT_MISSING, EXIT_NO_WINDOW

LINUX = sys.platform.startswith("linux")
needs_gcc_and_ldd = pytest.mark.skipif(
    not (LINUX and shutil.which("gcc") and shutil.which("ldd")), reason="needs Linux with gcc and ldd"
)
needs_apt = pytest.mark.skipif(not (LINUX and platform_deps.is_debian_like()), reason="needs Debian/Ubuntu apt")
SUDO = "" if platform_deps.is_root() else "sudo "


@pytest.fixture(autouse=True)
def gui_thread_gc() -> None:
    """No Qt object is made here (the check runs before Qt is imported), so these tests skip the UI tests' full
    garbage collection after each (``tests/ui/conftest.py``): 0.2-0.35 s of CPU a test over a worker's heap."""


def build_fake_plugin(tmp_path: Path, soname: str, platform_name: str = "xcb") -> Path:
    """``tmp/platforms/libq<platform>.so`` linking ``soname``, whose library is deleted after linking."""
    libdir, platforms = tmp_path / "fakelib", tmp_path / "platforms"
    libdir.mkdir()
    platforms.mkdir()
    (tmp_path / "dep.c").write_text("int fake_dependency(void) { return 1; }\n", encoding="utf-8")
    (tmp_path / "plugin.c").write_text(
        "int fake_dependency(void);\nint fake_plugin(void) { return fake_dependency(); }\n", encoding="utf-8"
    )
    link_name = re.sub(r"\.so\..*$", ".so", soname)
    subprocess.run(
        ["gcc", "-shared", "-fPIC", f"-Wl,-soname,{soname}", "-o", str(libdir / soname), str(tmp_path / "dep.c")],
        check=True,
    )
    (libdir / link_name).symlink_to(soname)
    plugin = platforms / f"libq{platform_name}.so"
    subprocess.run(
        ["gcc", "-shared", "-fPIC", "-o", str(plugin), str(tmp_path / "plugin.c"), f"-L{libdir}", f"-l:{link_name}"],
        check=True,
    )
    return plugin


def env_for(plugin: Path, **extra: str) -> dict[str, str]:
    """This process's environment with Qt pointed at the fake plugin directory, and a display."""
    env = {key: value for key, value in os.environ.items() if key not in {"WAYLAND_DISPLAY", "QT_QPA_PLATFORM"}}
    env.update(QT_QPA_PLATFORM_PLUGIN_PATH=str(plugin.parent), QT_QPA_PLATFORM="xcb", DISPLAY=":197")
    env.update(extra)
    return env


def run_check(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "reviewer_app.ui.startup.platform_deps", *args],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )


# -- ldd on a fake plugin ----------------------------------------------------------------------------------------


@needs_gcc_and_ldd
def test_ldd_reports_the_library_a_plugin_links_but_nobody_provides(tmp_path: Path) -> None:
    plugin = build_fake_plugin(tmp_path, "libreviewerfakedep.so.4")
    libdir = tmp_path / "fakelib"
    assert platform_deps.missing_sonames([plugin], {**os.environ, "LD_LIBRARY_PATH": str(libdir)}) == ()
    shutil.rmtree(libdir)
    assert platform_deps.missing_sonames([plugin]) == ("libreviewerfakedep.so.4",)

    report = platform_deps.check_platform_libraries(env_for(plugin))
    assert report is not None
    assert report.platforms == ("xcb",) and report.plugins == (plugin,)
    assert "libreviewerfakedep.so.4" in report.missing_system
    assert report.missing_qt == ()


@needs_gcc_and_ldd
def test_the_check_names_a_library_no_package_provides_and_stops(tmp_path: Path) -> None:
    plugin = build_fake_plugin(tmp_path, "libreviewerfakedep.so.4")
    shutil.rmtree(tmp_path / "fakelib")
    result = run_check(env_for(plugin))
    assert result.returncode == EXIT_MISSING
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("reviewer-app: Qt's xcb platform plugin needs libreviewerfakedep.so.4")
    if platform_deps.is_debian_like():
        assert "no Debian package found for libreviewerfakedep.so.4" in lines[0]


@needs_gcc_and_ldd
@needs_apt
def test_the_check_prints_the_exact_apt_command_for_a_missing_real_library(tmp_path: Path) -> None:
    plugin = build_fake_plugin(tmp_path, "libxcb-xrm.so.0")  # libxcb-xrm0: in Debian and Ubuntu, rarely installed
    shutil.rmtree(tmp_path / "fakelib")
    if "libxcb-xrm.so.0" not in (platform_deps.missing_sonames([plugin]) or ()):
        pytest.skip("this machine has libxcb-xrm.so.0 installed")
    if "libxcb-xrm0" not in platform_deps.apt_candidates(["libxcb-xrm0"]):
        pytest.skip("apt's package lists are empty or lack libxcb-xrm0 (apt-get update)")
    result = run_check(env_for(plugin))
    assert result.returncode == EXIT_MISSING
    assert result.stderr.splitlines() == [
        "reviewer-app: Qt's xcb platform plugin needs libxcb-xrm.so.0, which this machine lacks; "
        f"install with: {SUDO}apt-get install -y --no-install-recommends libxcb-xrm0"
    ]
    # The app's own explanation after a failed start names the same command.
    line = platform_deps.explain_failure("xcb", env_for(plugin))
    assert line == (
        "Qt's xcb platform plugin cannot load: libxcb-xrm.so.0 missing; "
        f"install with: {SUDO}apt-get install -y --no-install-recommends libxcb-xrm0"
    )


def test_without_a_display_the_check_says_so_in_one_line_and_how_to_run_headless() -> None:
    env = {key: value for key, value in os.environ.items() if key not in {"DISPLAY", "WAYLAND_DISPLAY"}}
    env["QT_QPA_PLATFORM"] = ""
    result = run_check(env, "--install")
    if not LINUX:
        assert result.returncode == 0
        return
    assert result.returncode == EXIT_NO_WINDOW
    assert result.stderr.splitlines() == [
        "reviewer-app: no display: DISPLAY and WAYLAND_DISPLAY are unset, so the window cannot open here; "
        "run headless with QT_QPA_PLATFORM=offscreen, or use the command line (reviewer-app --help)"
    ]


def test_offscreen_needs_no_display_and_nothing_from_the_system() -> None:
    env = {key: value for key, value in os.environ.items() if key not in {"DISPLAY", "WAYLAND_DISPLAY"}}
    result = run_check({**env, "QT_QPA_PLATFORM": "offscreen"}, "--install")
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""


# -- naming packages ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("soname", "package"),
    [
        ("libxcb-icccm.so.4", "libxcb-icccm4"),
        ("libxcb-keysyms.so.1", "libxcb-keysyms1"),
        ("libxcb-cursor.so.0", "libxcb-cursor0"),
        ("libxcb-render-util.so.0", "libxcb-render-util0"),
        ("libxkbcommon-x11.so.0", "libxkbcommon-x11-0"),
        ("libX11-xcb.so.1", "libx11-xcb1"),
        ("libX11.so.6", "libx11-6"),
        ("libpng16.so.16", "libpng16-16"),
        ("libgcc_s.so.1", "libgcc-s1"),
        ("libEGL.so.1", "libegl1"),
        ("libglib-2.0.so.0", "libglib2.0-0"),
        ("libz.so.1", "zlib1g"),
        ("libm.so.6", "libc6"),
        ("libfoo.so", None),
        ("not-a-library", None),
    ],
)
def test_debian_names_library_packages_after_their_soname(soname: str, package: str | None) -> None:
    assert platform_deps.debian_package_name(soname) == package


def dpkg_owners(paths: list[str]) -> dict[str, str]:
    """path -> the package that installed it, from one ``dpkg -S`` call (unknown paths are left out)."""
    result = subprocess.run(["dpkg", "-S", *sorted(set(paths))], capture_output=True, text=True, check=False)
    owners = {}
    for line in result.stdout.splitlines():
        packages, _, path = line.partition(": ")
        owners[path.strip()] = packages.split(",")[0].split(":")[0].strip()
    return owners


@pytest.mark.skipif(not (LINUX and shutil.which("dpkg") and shutil.which("ldd")), reason="needs dpkg and ldd")
def test_the_naming_rule_agrees_with_dpkg_for_every_library_the_xcb_plugin_links() -> None:
    """``dpkg -S`` knows the owner of each installed library: the rule must name the same package."""
    package = platform_deps.pyside_dir()
    assert package is not None
    plugin = platform_deps.plugin_file("xcb", [package / "Qt" / "plugins" / "platforms"])
    assert plugin is not None
    binaries = [plugin, *platform_deps.qt_module_files(package)]
    ldd = subprocess.run(["ldd", *map(str, binaries)], capture_output=True, text=True, check=False).stdout
    resolved = dict(re.findall(r"^\s*(\S+) => (/\S+)", ldd, flags=re.MULTILINE))
    system = {soname: path for soname, path in resolved.items() if "PySide6" not in path}
    if not system:
        pytest.skip("the plugin's system libraries are missing here")
    owners = dpkg_owners([*system.values(), *map(os.path.realpath, system.values())])
    checked = 0
    for soname, path in sorted(system.items()):
        owner = owners.get(path) or owners.get(os.path.realpath(path))
        if owner is None:
            continue  # not from a package (built locally)
        assert platform_deps.debian_package_name(soname) in {owner, owner.removesuffix("t64")}, soname
        checked += 1
    assert checked >= 10


@needs_apt
def test_apt_confirms_the_packages_of_the_xcb_family() -> None:
    sonames = ["libxcb-icccm.so.4", "libxcb-keysyms.so.1", "libxkbcommon-x11.so.0", "libreviewerfakedep.so.4"]
    found, unknown = platform_deps.debian_packages(sonames)
    if not found:
        pytest.skip("apt's package lists are empty (apt-get update)")
    assert found == {
        "libxcb-icccm.so.4": "libxcb-icccm4",
        "libxcb-keysyms.so.1": "libxcb-keysyms1",
        "libxkbcommon-x11.so.0": "libxkbcommon-x11-0",
    }
    assert unknown == ["libreviewerfakedep.so.4"]


def test_other_systems_get_their_own_exact_command() -> None:
    sonames = ["libxcb-icccm.so.4", "libxcb-keysyms.so.1"]
    assert platform_deps.other_system_hint(sonames, "dnf", "64bit") == (
        "sudo dnf install 'libxcb-icccm.so.4()(64bit)' 'libxcb-keysyms.so.1()(64bit)'"
    )
    assert platform_deps.other_system_hint(sonames, "zypper", "32bit") == (
        "sudo zypper install 'libxcb-icccm.so.4' 'libxcb-keysyms.so.1'"
    )
    assert "pacman -F libxcb-icccm.so.4 libxcb-keysyms.so.1" in platform_deps.other_system_hint(sonames, "pacman")
    assert platform_deps.other_system_hint(sonames, None) == (
        "install the packages that provide libxcb-icccm.so.4, libxcb-keysyms.so.1"
    )


# -- which platform, which display -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "platforms"),
    [("", ("xcb",)), ("offscreen", ("offscreen",)), ("wayland;xcb", ("wayland", "xcb")), ("xcb:foo=1", ("xcb",))],
)
def test_the_requested_platforms_come_from_qt_qpa_platform(value: str, platforms: tuple[str, ...]) -> None:
    assert platform_deps.requested_platforms({"QT_QPA_PLATFORM": value}) == platforms


def test_without_qt_qpa_platform_a_wayland_only_session_asks_the_wayland_plugin() -> None:
    assert platform_deps.requested_platforms({"WAYLAND_DISPLAY": "wayland-0"}) == ("wayland",)
    assert platform_deps.requested_platforms({"WAYLAND_DISPLAY": "wayland-0", "DISPLAY": ":0"}) == ("xcb",)
    assert platform_deps.requested_platforms({"DISPLAY": ":0"}) == ("xcb",)


@pytest.mark.parametrize(
    ("env", "has_problem"),
    [
        ({}, True),
        ({"DISPLAY": ":0"}, False),
        ({"WAYLAND_DISPLAY": "wayland-0"}, False),
        ({"QT_QPA_PLATFORM": "offscreen"}, False),
        ({"QT_QPA_PLATFORM": "xcb", "WAYLAND_DISPLAY": "wayland-0"}, True),
        ({"QT_QPA_PLATFORM": "wayland;xcb", "WAYLAND_DISPLAY": "wayland-0"}, False),
        ({"QT_QPA_PLATFORM": "vnc"}, False),
    ],
)
def test_a_display_is_needed_only_by_platforms_that_draw_on_one(env: dict[str, str], has_problem: bool) -> None:
    problem = platform_deps.display_problem(env, "linux")
    assert (problem is not None) == has_problem
    if problem:
        assert "QT_QPA_PLATFORM=offscreen" in problem and "\n" not in problem
    assert platform_deps.display_problem(env, "darwin") is None
    assert platform_deps.display_problem(env, "win32") is None


def test_a_shared_library_import_error_is_explained_in_one_line() -> None:
    error = ImportError("libEGL.so.1: cannot open shared object file: No such file or directory")
    line = platform_deps.explain_qt_import_error(error)
    assert line is not None and "\n" not in line
    report = platform_deps.check_platform_libraries()
    if report is not None and report.missing_system:
        assert line.startswith(f"Qt cannot load: {report.missing_system[0]}") and "install with:" in line
    else:
        assert line == "Qt cannot load: libEGL.so.1: cannot open shared object file: No such file or directory"


def test_import_errors_that_are_not_about_shared_libraries_are_not_explained_away() -> None:
    assert (
        platform_deps.explain_qt_import_error(ImportError("cannot import name 'QFoo' from 'PySide6.QtWidgets'")) is None
    )


@pytest.mark.skipif(shutil.which("make") is None, reason="needs make")
def test_make_run_checks_the_platform_libraries_before_starting_the_app() -> None:
    repo = Path(__file__).resolve().parents[2]
    plan = subprocess.run(["make", "-n", "-s", "run"], cwd=repo, capture_output=True, text=True, check=True).stdout
    lines = plan.splitlines()
    check = next(i for i, line in enumerate(lines) if "-m reviewer_app.ui.startup.platform_deps --install" in line)
    start = next(i for i, line in enumerate(lines) if "/reviewer-app" in line and "platform_deps" not in line)
    assert check < start


@needs_gcc_and_ldd
@needs_apt
@pytest.mark.skipif(
    os.environ.get("REVIEWER_APT_TESTS") != "1", reason="installs a system package: REVIEWER_APT_TESTS=1 (root/sudo)"
)
def test_install_really_installs_the_missing_package_and_the_check_then_passes(tmp_path: Path) -> None:
    """The `make run` path for real: apt-get installs libxcb-xrm0 for a plugin that links it; removed afterwards."""
    plugin = build_fake_plugin(tmp_path, "libxcb-xrm.so.0")
    shutil.rmtree(tmp_path / "fakelib")
    if "libxcb-xrm.so.0" not in (platform_deps.missing_sonames([plugin]) or ()):
        pytest.skip("this machine already has libxcb-xrm.so.0")
    try:
        result = run_check(env_for(plugin), "--install")
        assert result.returncode == 0, result.stderr
        assert (
            "reviewer-app: Qt's xcb platform plugin needs libxcb-xrm.so.0, which this machine lacks; installing "
            f"libxcb-xrm0: {SUDO}apt-get install -y --no-install-recommends libxcb-xrm0"
        ) in result.stderr
        assert platform_deps.missing_sonames([plugin]) == ()
        assert run_check(env_for(plugin)).returncode == 0
    finally:
        subprocess.run([*platform_deps.privileged(["dpkg", "-r", "libxcb-xrm0"])], capture_output=True, check=False)
