"""The app without a usable platform plugin: one clear line and exit code 5, never Qt's abort and core dump.

Each start is a real ``python -m reviewer_app`` process: Qt's failure aborts the whole process, so it cannot
be observed in the test's own.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from reviewer_app.ui.startup import platform_deps
from reviewer_app.ui.startup.platform_deps import EXIT_NO_WINDOW

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Qt's xcb platform is Linux's")


def unused_display() -> str:
    """An X display number no server listens on."""
    number = next(n for n in range(197, 400) if not Path(f"/tmp/.X11-unix/X{n}").exists())
    return f":{number}"


def start_app(tmp_path: Path, subprocess_env: dict[str, str], **env: str) -> subprocess.CompletedProcess[str]:
    child = {k: v for k, v in subprocess_env.items() if k not in {"DISPLAY", "WAYLAND_DISPLAY", "QT_QPA_PLATFORM"}}
    child.update(env, XDG_CONFIG_HOME=str(tmp_path / "config"), XDG_DATA_HOME=str(tmp_path / "data"))
    return subprocess.run(
        [sys.executable, "-m", "reviewer_app", "--db", str(tmp_path / "r.db"), "--workspaces", str(tmp_path / "ws")],
        env=child,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def assert_one_clear_line(result: subprocess.CompletedProcess[str], starts: str) -> str:
    assert result.returncode == EXIT_NO_WINDOW, (result.returncode, result.stderr)
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith(starts), lines[0]
    assert "Traceback" not in result.stderr and "core dumped" not in result.stderr
    return lines[0]


def test_no_display_says_so_and_how_to_run_headless(tmp_path: Path, subprocess_env: dict[str, str]) -> None:
    result = start_app(tmp_path, subprocess_env)
    line = assert_one_clear_line(result, "reviewer-app: no display: DISPLAY and WAYLAND_DISPLAY are unset")
    assert "QT_QPA_PLATFORM=offscreen" in line and "reviewer-app --help" in line
    assert not (tmp_path / "r.db").exists(), "nothing is touched before the window can open"


def test_xcb_without_a_running_x_server_exits_5_instead_of_aborting(
    tmp_path: Path, subprocess_env: dict[str, str]
) -> None:
    result = start_app(tmp_path, subprocess_env, QT_QPA_PLATFORM="xcb", DISPLAY=unused_display())
    line = assert_one_clear_line(result, "reviewer-app: Qt's xcb platform plugin")
    report = platform_deps.check_platform_libraries({"QT_QPA_PLATFORM": "xcb"})
    if report is not None and report.missing_system:  # this machine lacks the xcb libraries: they are named
        assert all(soname in line for soname in report.missing_system) and "install with:" in line
    else:
        assert "could not start on display" in line and "QT_QPA_PLATFORM=offscreen" in line


def test_a_plugin_whose_library_is_missing_is_named_not_aborted(tmp_path: Path, subprocess_env: dict[str, str]) -> None:
    """A copy of the real xcb plugin next to every Qt library but libQt6XcbQpa: Qt cannot load it."""
    package = platform_deps.pyside_dir()
    assert package is not None
    real = package / "Qt" / "plugins" / "platforms" / "libqxcb.so"
    if not real.is_file():
        pytest.skip("this PySide6 has no xcb plugin")
    fake = tmp_path / "qt"
    (fake / "plugins" / "platforms").mkdir(parents=True)
    (fake / "lib").mkdir()
    (fake / "plugins" / "platforms" / real.name).write_bytes(real.read_bytes())  # its RUNPATH: $ORIGIN/../../lib
    for library in (package / "Qt" / "lib").iterdir():
        if not library.name.startswith("libQt6XcbQpa"):
            (fake / "lib" / library.name).symlink_to(library)
    result = start_app(
        tmp_path,
        subprocess_env,
        QT_QPA_PLATFORM="xcb",
        DISPLAY=unused_display(),
        QT_QPA_PLATFORM_PLUGIN_PATH=str(fake / "plugins" / "platforms"),
    )
    line = assert_one_clear_line(result, "reviewer-app: Qt's xcb platform plugin cannot load:")
    assert "libQt6XcbQpa.so.6" in line and "pip install --force-reinstall PySide6-Essentials" in line


def test_an_unknown_platform_plugin_is_named(tmp_path: Path, subprocess_env: dict[str, str]) -> None:
    result = start_app(tmp_path, subprocess_env, QT_QPA_PLATFORM="nosuchplatform")
    assert_one_clear_line(result, "reviewer-app: Qt has no platform plugin named 'nosuchplatform'")


def test_the_normal_start_path_asks_no_subprocess(tmp_path: Path, subprocess_env: dict[str, str]) -> None:
    """The guard costs nothing when Qt starts: ldd and apt run only after a failure (checked by tracing execs)."""
    script = (
        "import subprocess, sys\n"
        "calls = []\n"
        "real = subprocess.Popen.__init__\n"
        "def spy(self, *a, **k):\n"
        "    calls.append(a[0] if a else k.get('args'))\n"
        "    return real(self, *a, **k)\n"
        "subprocess.Popen.__init__ = spy\n"
        "from reviewer_app.ui.startup.platform_guard import create_application\n"
        "app = create_application(['reviewer-app'])\n"
        "print(app.platformName(), len(calls))\n"
    )
    env = {**subprocess_env, "QT_QPA_PLATFORM": "offscreen"}
    result = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["offscreen", "0"]


def test_qt_messages_during_a_good_start_are_still_shown(tmp_path: Path, subprocess_env: dict[str, str]) -> None:
    script = (
        "from reviewer_app.ui.startup.platform_guard import create_application\n"
        "app = create_application(['reviewer-app'])\n"
        "print(app.platformName())\n"
    )
    env = {**subprocess_env, "QT_QPA_PLATFORM": "offscreen", "QT_LOGGING_RULES": "qt.qpa.*=true"}
    env.pop("PYTHONWARNINGS", None)
    result = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "offscreen"
    assert "qt.qpa." in result.stderr, result.stderr
