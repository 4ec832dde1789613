"""Smoke-test the frozen app and the packages built around it (what `make package-test` runs).

An installer that breaks silently is worse than none, so this runs the real
artefacts, never the source tree:

1. ``--version`` of the bundle matches pyproject.toml (stale metadata is caught here);
2. ``--self-test`` exits 0 under ``QT_QPA_PLATFORM=offscreen``;
3. the window starts with ``--demo`` on a scratch database, stays up for a few
   seconds, prints no error or traceback, and the database it made is at the
   newest bundled migration (so Alembic found its scripts inside the bundle);
4. (Linux) no bundled binary links a Qt/Python library the bundle lacks (the Qt filter dropped too much);
5. (Linux) the .deb unpacked into a scratch root (``dpkg -x``) has its desktop
   entry, icons and control fields, and its ``/usr/bin/reviewer-app`` launcher runs ``--version``;
6. (Linux) the .tar.gz unpacks and its executable runs ``--version``.

Every app process gets a scratch HOME and XDG directories: nothing touches the user's data.

    python packaging/smoke_test.py [--exe PATH] [--gui-seconds 5] [--no-packages]
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import sqlite3
import subprocess
import sys
import tarfile
import tempfile
import time
import traceback
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import build_installers as build
from project_meta import ProjectMeta, read_meta

# A line of app output that means something went wrong: a traceback, a log record at ERROR or above (Python
# logging and PyInstaller's bootloader write the level in capitals), an exception Python or asyncio could only
# print, a Qt plugin or library that failed to load. Demo content that merely says "failed" is not matched.
ERROR_PATTERN = re.compile(
    r"Traceback \(most recent call last\)|\b(ERROR|CRITICAL|FATAL)\b|^error:|Exception ignored in"
    r"|exception was never retrieved|This application failed to start|Could not (load|find) the Qt platform plugin"
    r"|(?i:cannot load library|undefined symbol|segmentation fault|core dumped)",
    re.MULTILINE,
)
# Known harmless Qt chatter under the offscreen platform.
BENIGN_PATTERNS = (re.compile(r"This plugin does not support propagateSizeHints\(\)"),)
LINUX = sys.platform.startswith("linux")


class SmokeFailure(AssertionError):
    pass


def check(condition: object, message: str) -> None:
    if not condition:
        raise SmokeFailure(message)


def app_env(scratch: Path) -> dict[str, str]:
    """Offscreen Qt and a scratch home, so no user file is read or written."""
    env = dict(os.environ)
    env.pop("REVIEWER_DB", None)
    home = scratch / "home"
    for name, sub in (
        ("HOME", ""),
        ("XDG_DATA_HOME", ".local/share"),
        ("XDG_CONFIG_HOME", ".config"),
        ("XDG_CACHE_HOME", ".cache"),
        ("XDG_STATE_HOME", ".local/state"),
        ("APPDATA", "AppData/Roaming"),
        ("LOCALAPPDATA", "AppData/Local"),
        ("USERPROFILE", ""),
    ):
        path = home / sub
        path.mkdir(parents=True, exist_ok=True)
        env[name] = str(path)
    env["QT_QPA_PLATFORM"] = "offscreen"
    env["PYTHONUNBUFFERED"] = "1"
    return env


def error_lines(output: str) -> list[str]:
    return [
        line
        for line in output.splitlines()
        if ERROR_PATTERN.search(line) and not any(benign.search(line) for benign in BENIGN_PATTERNS)
    ]


def run_app(exe: Path, *args: str, env: dict[str, str], timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(exe), *args], env=env, capture_output=True, text=True, timeout=timeout, check=False, errors="replace"
    )


def bundled_head_revision(bundle: Path) -> str:
    """The newest migration revision shipped in the bundle (the one no other revision builds on)."""
    dirs = [path for path in bundle.rglob("versions") if path.parent.name == "migrations"]
    check(dirs, f"no reviewer_app/persistence/migrations/versions inside {bundle}")
    revisions: dict[str, str | None] = {}
    for script in dirs[0].glob("*.py"):
        text = script.read_text(encoding="utf-8")
        revision = re.search(r"^revision\s*(?::\s*str)?\s*=\s*['\"]([^'\"]+)['\"]", text, re.MULTILINE)
        down = re.search(r"^down_revision\s*(?::[^=]+)?=\s*['\"]([^'\"]+)['\"]", text, re.MULTILINE)
        if revision:
            revisions[revision.group(1)] = down.group(1) if down else None
    heads = set(revisions) - {down for down in revisions.values() if down}
    check(len(heads) == 1, f"expected one head among bundled migrations {sorted(revisions)}, found {sorted(heads)}")
    return heads.pop()


class Smoke:
    def __init__(self, meta: ProjectMeta, exe: Path, scratch: Path, gui_seconds: float) -> None:
        self.meta, self.exe, self.scratch, self.gui_seconds = meta, exe, scratch, gui_seconds
        # The directory holding the bundle's files: dist/reviewer-app, or Reviewer.app/Contents on macOS.
        self.bundle = exe.parent.parent if exe.parent.name == "MacOS" else exe.parent
        self.passed: list[str] = []
        self.failed: list[str] = []
        self.figures: dict[str, str] = {}

    def step(self, name: str, body: Callable[[], None]) -> None:
        started = time.monotonic()
        try:
            body()
        except (SmokeFailure, subprocess.TimeoutExpired, OSError, subprocess.CalledProcessError) as exc:
            self.failed.append(name)
            print(f"FAIL {name}: {exc}", flush=True)
            if not isinstance(exc, SmokeFailure):
                traceback.print_exc()
        else:
            self.passed.append(name)
            print(f"ok   {name} ({time.monotonic() - started:.1f} s)", flush=True)

    def version(self) -> None:
        started = time.monotonic()
        result = run_app(self.exe, "--version", env=app_env(self.scratch / "version"))
        self.figures["--version wall time"] = f"{time.monotonic() - started:.2f} s"
        check(result.returncode == 0, f"--version exited {result.returncode}: {result.stderr.strip()}")
        check(
            self.meta.version in result.stdout.split(),
            f"--version printed {result.stdout.strip()!r}; pyproject.toml says {self.meta.version}",
        )

    def self_test(self) -> None:
        started = time.monotonic()
        result = run_app(self.exe, "--self-test", env=app_env(self.scratch / "self-test"), timeout=180)
        self.figures["--self-test wall time"] = f"{time.monotonic() - started:.2f} s"
        output = (result.stdout + result.stderr).strip()
        if result.returncode != 0:
            print(output[-4000:], flush=True)
        check(result.returncode == 0, f"--self-test exited {result.returncode}")

    def gui_demo(self) -> None:
        scratch = self.scratch / "gui"
        env = app_env(scratch)
        database = scratch / "smoke.db"
        log_path = scratch / "gui.log"
        with log_path.open("w+", encoding="utf-8", errors="replace") as log:
            process = subprocess.Popen(
                [str(self.exe), "--db", str(database), "--demo"], env=env, stdout=log, stderr=subprocess.STDOUT
            )
            try:
                time.sleep(self.gui_seconds)
                alive = process.poll() is None
            finally:
                if process.poll() is None:
                    process.terminate()
                    try:
                        process.wait(timeout=15)
                    except subprocess.TimeoutExpired:
                        process.kill()
                        process.wait()
            log.seek(0)
            output = log.read()
        if output.strip():
            print("  app output:\n    " + "\n    ".join(output.strip().splitlines()[-40:]), flush=True)
        check(alive, f"the window exited with {process.returncode} within {self.gui_seconds:.0f} s")
        problems = error_lines(output)
        check(not problems, "the window logged errors:\n  " + "\n  ".join(problems[:20]))
        check(database.is_file(), f"the window did not create its database {database}")
        with sqlite3.connect(database) as connection:
            (revision,) = connection.execute("SELECT version_num FROM alembic_version").fetchone()
        expected = bundled_head_revision(self.bundle)
        check(revision == expected, f"database at schema {revision!r}, bundled head is {expected!r}")

    def linked_libraries(self) -> None:
        missing = build.unbundled_libraries(self.bundle)
        ours = [
            name
            for name, path in missing.items()
            if path is None and re.match(r"lib(Qt6|pyside|shiboken|python)", name)
        ]
        check(not ours, f"bundled binaries link libraries the bundle lacks (Qt filter too eager?): {ours}")
        absent = sorted(name for name, path in missing.items() if path is None)
        if absent:
            print(f"  note: not on this host (declared in the .deb Depends instead): {', '.join(absent)}")
        internal = self.bundle / "_internal" / "PySide6" / "Qt"
        check(not (internal / "translations").exists(), "Qt translations were not filtered out")
        check(not (internal / "qml").exists(), "QML files were not filtered out")
        platforms = {path.name for path in (internal / "plugins" / "platforms").iterdir()}
        check({"libqoffscreen.so", "libqxcb.so"} <= platforms, f"platform plugins missing: {sorted(platforms)}")

    def deb(self) -> None:
        package = build.deb_path(self.meta)
        check(package.is_file(), f"no {package}: run `make package`")
        fields = subprocess.run(
            ["dpkg-deb", "-f", str(package), "Package", "Version", "Architecture", "Depends"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        check(f"Package: {self.meta.name}" in fields, f"control fields: {fields}")
        check(f"Version: {self.meta.deb_version}" in fields, f"control fields: {fields}")
        root = self.scratch / "deb-root"
        subprocess.run(["dpkg", "-x", str(package), str(root)], check=True)
        launcher = root / "usr" / "bin" / self.meta.name
        check(launcher.is_symlink(), f"{launcher} is not the launcher symlink")
        check(launcher.resolve().is_file(), f"{launcher} points at {os.readlink(launcher)}, which is missing")
        check((root / "opt" / self.meta.name / self.meta.name).is_file(), "bundle missing under /opt")
        desktop = root / "usr" / "share" / "applications" / f"{self.meta.name}.desktop"
        check(desktop.is_file(), f"missing {desktop}")
        entries = dict(line.split("=", 1) for line in desktop.read_text(encoding="utf-8").splitlines() if "=" in line)
        check(entries.get("Exec", "").split()[0] == self.meta.name, f"Exec= is {entries.get('Exec')!r}")
        check(entries.get("Icon") == self.meta.name, f"Icon= is {entries.get('Icon')!r}")
        if shutil.which("desktop-file-validate"):
            result = subprocess.run(
                ["desktop-file-validate", str(desktop)], capture_output=True, text=True, check=False
            )
            check(result.returncode == 0, f"desktop-file-validate: {result.stdout}{result.stderr}")
        metainfo = root / "usr" / "share" / "metainfo" / build.METAINFO.name
        check(metainfo.is_file(), f"missing {metainfo}")
        if shutil.which("appstreamcli"):
            result = subprocess.run(
                ["appstreamcli", "validate", "--no-net", str(metainfo)], capture_output=True, text=True, check=False
            )
            check(result.returncode == 0, f"appstreamcli validate: {result.stdout}{result.stderr}")
        icons = root / "usr" / "share" / "icons" / "hicolor"
        for icon in ("48x48/apps", "256x256/apps"):
            check((icons / icon / f"{self.meta.name}.png").is_file(), f"missing icon {icon}")
        check((icons / "scalable" / "apps" / f"{self.meta.name}.svg").is_file(), "missing scalable icon")
        result = run_app(launcher, "--version", env=app_env(self.scratch / "deb-home"))
        check(result.returncode == 0, f"installed launcher --version exited {result.returncode}: {result.stderr}")
        check(self.meta.version in result.stdout.split(), f"installed launcher printed {result.stdout!r}")

    def tarball(self) -> None:
        archive = build.tarball_path(self.meta)
        check(archive.is_file(), f"no {archive}: run `make package`")
        target = self.scratch / "tarball"
        with tarfile.open(archive) as tar:
            tar.extractall(target, filter="tar")
        top = target / f"{self.meta.name}-{self.meta.version}"
        check((top / "share" / "applications" / f"{self.meta.name}.desktop").is_file(), "tarball lacks share/")
        result = run_app(top / self.meta.name, "--version", env=app_env(self.scratch / "tar-home"))
        check(result.returncode == 0 and self.meta.version in result.stdout.split(), f"tarball --version: {result}")


def default_exe() -> Path:
    if sys.platform == "darwin":
        return build.DIST / "Reviewer.app" / "Contents" / "MacOS" / "reviewer-app"
    return build.bundle_executable()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--exe", type=Path, default=None, help="the frozen executable (default: the dist/ bundle)")
    parser.add_argument("--gui-seconds", type=float, default=5.0, help="how long the window must stay up")
    parser.add_argument("--no-packages", action="store_true", help="test the bundle only (no .deb/.tar.gz)")
    args = parser.parse_args(argv)
    meta = read_meta()
    exe = (args.exe or default_exe()).resolve()
    if not exe.is_file():
        print(f"no frozen executable at {exe}: run `make package` first", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="reviewer-smoke-") as scratch:
        smoke = Smoke(meta, exe, Path(scratch), args.gui_seconds)
        print(f"smoke-testing {exe}", flush=True)
        smoke.step("version", smoke.version)
        smoke.step("self-test", smoke.self_test)
        smoke.step("gui --demo", smoke.gui_demo)
        if LINUX:
            smoke.step("linked libraries", smoke.linked_libraries)
            if not args.no_packages:
                smoke.step("deb", smoke.deb)
                smoke.step("tarball", smoke.tarball)
    for name, value in smoke.figures.items():
        print(f"  {name}: {value}")
    if smoke.failed:
        print(f"failed: {', '.join(smoke.failed)}")
    print(f"smoke: {len(smoke.passed)} passed, {len(smoke.failed)} failed", flush=True)
    return 1 if smoke.failed else 0


if __name__ == "__main__":
    sys.exit(main())
