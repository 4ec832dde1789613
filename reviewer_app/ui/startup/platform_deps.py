"""The system libraries Qt's platform plugin needs: which ones this machine lacks, and how to install them.

PySide6's wheels carry Qt but not the X11/Wayland client libraries its platform plugins link, and a fresh
Debian or Ubuntu desktop lacks some of them (``libxcb-icccm4``, ``libxcb-keysyms1``, ...). Qt then aborts with a
message that names one guess (``libxcb-cursor0``). Here the plugin itself is asked instead: ``ldd`` lists every
library the loader cannot find for the plugin file and the Qt libraries it pulls in. Each missing soname is named
as a Debian package by Debian's library-package naming rule and confirmed with ``apt-cache``.

Standard library only and Qt is never imported, so this works while Qt cannot load at all. ``make run`` runs
``python -m reviewer_app.ui.startup.platform_deps --install`` before starting the window; the app uses
:func:`explain_failure` to turn a failed start into one line (see ``platform_guard``).
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import platform
import re
import shutil
import subprocess
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

EXIT_NO_WINDOW = 9  # the window cannot open on this machine: no display, or Qt's platform plugin cannot load
EXIT_MISSING = 1  # `--install` could not install (or was not allowed to install) the missing libraries

DEFAULT_PLATFORM = "xcb"  # what Qt uses on Linux when QT_QPA_PLATFORM is unset (and its fallback on Wayland)
DISPLAY_VARIABLES = {"xcb": "DISPLAY", "wayland": "WAYLAND_DISPLAY", "wayland-egl": "WAYLAND_DISPLAY"}
# The PySide6 modules the window imports: their Qt libraries must load too (ldd follows them transitively).
QT_MODULES = ("QtWidgets", "QtSvg")
REINSTALL_PYSIDE = "pip install --force-reinstall PySide6-Essentials"  # Qt's own libraries come with it
HEADLESS_HINT = "run headless with QT_QPA_PLATFORM=offscreen, or use the command line (reviewer-app --help)"

# Debian names a library package after its soname (policy 8.1: libfoo.so.3 -> libfoo3, libfoo2.so.0 -> libfoo2-0);
# these few do not follow the rule. Ubuntu 24.04 / Debian 13 add "t64" to some (tried after the plain name).
DEBIAN_EXCEPTIONS = {
    "libglib-2.0.so.0": "libglib2.0-0",
    "libgobject-2.0.so.0": "libglib2.0-0",
    "libgio-2.0.so.0": "libglib2.0-0",
    "libgmodule-2.0.so.0": "libglib2.0-0",
    "libgthread-2.0.so.0": "libglib2.0-0",
    "libz.so.1": "zlib1g",
    "libharfbuzz.so.0": "libharfbuzz0b",
    "libbrotlidec.so.1": "libbrotli1",
    "libbrotlicommon.so.1": "libbrotli1",
    "libcrypto.so.3": "libssl3",
    "libssl.so.3": "libssl3",
    "libGLdispatch.so.0": "libglvnd0",
    **{f"{name}.so.{version}": "libc6" for name, version in (("libm", 6), ("libdl", 2), ("libpthread", 0))},
    **{f"{name}.so.1": "libc6" for name in ("librt", "libutil")},
    "libresolv.so.2": "libc6",
}
_SONAME = re.compile(r"(?P<name>lib.+?)\.so\.(?P<version>\d+)(?:\.\d+)*")
_NOT_FOUND = re.compile(r"^\s*(?P<soname>\S+) => not found\s*$")


@dataclass(frozen=True)
class PlatformLibraries:
    """What ``ldd`` says about the plugins Qt would load: the files asked about and the sonames nobody provides."""

    platforms: tuple[str, ...]
    plugins: tuple[Path, ...]  # the plugin files found for ``platforms`` (Qt's module libraries are asked too)
    missing: tuple[str, ...]

    @property
    def missing_qt(self) -> tuple[str, ...]:
        """Qt's own libraries (PySide6 ships them: a broken PySide6 install, not a system package)."""
        return tuple(soname for soname in self.missing if soname.startswith(("libQt6", "libpyside6", "libshiboken6")))

    @property
    def missing_system(self) -> tuple[str, ...]:
        return tuple(soname for soname in self.missing if soname not in self.missing_qt)


# -- which platform, and is there a display ------------------------------------------------------------------


def requested_platforms(env: Mapping[str, str]) -> tuple[str, ...]:
    """Plugin names from ``QT_QPA_PLATFORM`` (``"wayland;xcb"``, ``"xcb:option"``); Qt's choice when unset."""
    value = env.get("QT_QPA_PLATFORM", "").strip()
    names = tuple(part.split(":", 1)[0].strip() for part in value.split(";") if part.strip())
    if names:
        return names
    if env.get("WAYLAND_DISPLAY") and not env.get("DISPLAY"):
        return ("wayland",)  # a Wayland session without XWayland: xcb could not connect anyway
    return (DEFAULT_PLATFORM,)


def display_problem(env: Mapping[str, str], system: str = sys.platform) -> str | None:
    """One line when the requested platforms all need a display server and none is set; None otherwise."""
    if not system.startswith("linux"):
        return None
    explicit = bool(env.get("QT_QPA_PLATFORM", "").strip())
    platforms = requested_platforms(env) if explicit else ("xcb", "wayland")  # unset: Qt picks by session
    if not all(name in DISPLAY_VARIABLES for name in platforms):
        return None  # offscreen, vnc, eglfs, minimal...: no display server needed
    if any(env.get(DISPLAY_VARIABLES[name]) for name in platforms):
        return None
    if explicit:
        unset = " and ".join(sorted({DISPLAY_VARIABLES[name] for name in platforms}))
        return f"no display: QT_QPA_PLATFORM={env['QT_QPA_PLATFORM']} needs {unset}, which is unset; {HEADLESS_HINT}"
    return f"no display: DISPLAY and WAYLAND_DISPLAY are unset, so the window cannot open here; {HEADLESS_HINT}"


# -- asking the plugin -------------------------------------------------------------------------------------------


def pyside_dir() -> Path | None:
    """The installed PySide6 package directory, found without importing it (which may be what fails)."""
    try:
        spec = importlib.util.find_spec("PySide6")
    except (ImportError, ValueError):
        return None
    locations = list(spec.submodule_search_locations or []) if spec else []
    return Path(locations[0]) if locations else None


def plugin_dirs(env: Mapping[str, str], extra: Iterable[Path] = ()) -> list[Path]:
    """Where Qt looks for platform plugins, in its order: the override, QT_PLUGIN_PATH, then PySide6's own."""
    dirs: list[Path] = []
    if env.get("QT_QPA_PLATFORM_PLUGIN_PATH"):
        dirs.append(Path(env["QT_QPA_PLATFORM_PLUGIN_PATH"]))
    dirs += [Path(part) / "platforms" for part in env.get("QT_PLUGIN_PATH", "").split(os.pathsep) if part]
    dirs += [Path(path) / "platforms" for path in extra]
    package = pyside_dir()
    if package is not None:
        dirs.append(package / "Qt" / "plugins" / "platforms")
    return dirs


def plugin_file(platform_name: str, dirs: Iterable[Path]) -> Path | None:
    """``libqxcb.so`` for ``xcb``: the first directory that has it wins, as in Qt."""
    for directory in dirs:
        candidate = directory / f"libq{platform_name}.so"
        if candidate.is_file():
            return candidate
    return None


def qt_module_files(package: Path | None) -> list[Path]:
    """The PySide6 extension modules the window imports (``QtWidgets.abi3.so``...)."""
    if package is None:
        return []
    return [path for module in QT_MODULES for path in sorted(package.glob(f"{module}.*so"))]


def missing_sonames(binaries: Sequence[Path], env: Mapping[str, str] | None = None) -> tuple[str, ...] | None:
    """Every soname ``ldd`` cannot resolve for these files (transitively), in order; None when ldd is absent."""
    ldd = shutil.which("ldd")
    if ldd is None or not binaries:
        return None if ldd is None else ()
    result = subprocess.run(
        [ldd, *map(str, binaries)],
        capture_output=True,
        text=True,
        check=False,
        env=dict(env) if env is not None else None,
    )
    found: dict[str, None] = {}
    for line in result.stdout.splitlines():
        match = _NOT_FOUND.match(line)
        if match:
            found.setdefault(match.group("soname"), None)
    return tuple(found)


def check_platform_libraries(
    env: Mapping[str, str] | None = None, extra_plugin_dirs: Iterable[Path] = ()
) -> PlatformLibraries | None:
    """Ask ``ldd`` about the requested platform plugins and the Qt modules; None when it cannot tell."""
    env = os.environ if env is None else env
    dirs = plugin_dirs(env, extra_plugin_dirs)
    platforms = requested_platforms(env)
    plugins = [path for name in platforms if (path := plugin_file(name, dirs)) is not None]
    missing = missing_sonames([*plugins, *qt_module_files(pyside_dir())])
    if missing is None:
        return None
    return PlatformLibraries(platforms=platforms, plugins=tuple(plugins), missing=missing)


# -- naming the packages -----------------------------------------------------------------------------------------


def debian_package_name(soname: str) -> str | None:
    """``libxcb-icccm.so.4`` -> ``libxcb-icccm4``, ``libxkbcommon-x11.so.0`` -> ``libxkbcommon-x11-0``."""
    if soname in DEBIAN_EXCEPTIONS:
        return DEBIAN_EXCEPTIONS[soname]
    match = _SONAME.fullmatch(soname)
    if match is None:
        return None
    name = match.group("name").lower().replace("_", "-")
    separator = "-" if name[-1].isdigit() else ""
    return f"{name}{separator}{match.group('version')}"


def apt_candidates(packages: Iterable[str]) -> set[str]:
    """The packages apt can install (``apt-cache policy`` shows a candidate version for them)."""
    names = sorted(set(packages))
    apt_cache = shutil.which("apt-cache")
    if apt_cache is None or not names:
        return set()
    result = subprocess.run([apt_cache, "policy", *names], capture_output=True, text=True, check=False)
    available: set[str] = set()
    current: str | None = None
    for line in result.stdout.splitlines():
        if line and not line[0].isspace() and line.endswith(":"):
            current = line[:-1].split(":")[0]  # "libfoo1:" or "libfoo1:amd64:"
        elif current and line.strip().startswith("Candidate:") and line.split(":", 1)[1].strip() != "(none)":
            available.add(current)
    return available


def debian_packages(sonames: Sequence[str]) -> tuple[dict[str, str], list[str]]:
    """(soname -> package apt can install, sonames with no such package) by the naming rule, checked with apt."""
    options = {soname: [name, f"{name}t64"] for soname in sonames if (name := debian_package_name(soname))}
    available = apt_candidates(name for names in options.values() for name in names)
    found: dict[str, str] = {}
    for soname, names in options.items():
        for name in names:
            if name in available:
                found[soname] = name
                break
    return found, [soname for soname in sonames if soname not in found]


# -- installing, or saying how -----------------------------------------------------------------------------------


def is_root() -> bool:
    return hasattr(os, "geteuid") and os.geteuid() == 0


def privileged(command: Sequence[str]) -> list[str]:
    """The command as root: as it is when we are root, else through sudo."""
    return list(command) if is_root() else ["sudo", *command]


def apt_install_command(packages: Iterable[str]) -> list[str]:
    return privileged(["apt-get", "install", "-y", "--no-install-recommends", *sorted(set(packages))])


def is_debian_like() -> bool:
    return shutil.which("apt-get") is not None and shutil.which("dpkg") is not None


def package_manager() -> str | None:
    """The package manager this machine has: apt-get, dnf, zypper or pacman (None: another)."""
    if is_debian_like():
        return "apt-get"
    return next((name for name in ("dnf", "zypper", "pacman") if shutil.which(name)), None)


def other_system_hint(sonames: Sequence[str], manager: str | None, bits: str | None = None) -> str:
    """How to install these sonames where apt is not the package manager (RPM systems resolve sonames directly)."""
    bits = bits or platform.architecture()[0]
    suffix = "()(64bit)" if bits == "64bit" else ""
    provides = " ".join(f"'{soname}{suffix}'" for soname in sonames)
    if manager in ("dnf", "zypper"):
        return f"sudo {manager} install {provides}"
    if manager == "pacman":
        return "find the packages with `pacman -F " + " ".join(sonames) + "`, then `sudo pacman -S` them"
    return "install the packages that provide " + ", ".join(sonames)


def install_hint(sonames: Sequence[str]) -> str:
    """The exact command that installs these sonames on this machine (Debian/Ubuntu names checked with apt)."""
    manager = package_manager()
    if manager != "apt-get":
        return other_system_hint(sonames, manager)
    found, unknown = debian_packages(sonames)
    parts = []
    if found:
        parts.append(" ".join(apt_install_command(found.values())))
    if unknown:
        parts.append(f"no Debian package found for {', '.join(unknown)} (try `apt-get update` first)")
    return "; ".join(parts)


def explain_failure(
    platform_name: str | None, env: Mapping[str, str] | None = None, extra_dirs: Iterable[Path] = ()
) -> str:
    """One line for a platform plugin that did not start: the missing libraries and how to install them."""
    env = os.environ if env is None else env
    problem = display_problem(env)
    if problem:
        return problem
    name = platform_name or requested_platforms(env)[0]
    report = check_platform_libraries({**env, "QT_QPA_PLATFORM": name}, extra_dirs)
    if report is not None and not report.plugins:
        return f"Qt has no platform plugin named {name!r} (QT_QPA_PLATFORM); {HEADLESS_HINT}"
    if report is not None and report.missing_qt:
        return (
            f"Qt's {name} platform plugin cannot load: PySide6 is incomplete (missing {', '.join(report.missing_qt)}); "
            f"reinstall it: {REINSTALL_PYSIDE}"
        )
    if report is not None and report.missing_system:
        missing = ", ".join(report.missing_system)
        hint = install_hint(report.missing_system)
        return f"Qt's {name} platform plugin cannot load: {missing} missing; install with: {hint}"
    where = env.get("DISPLAY") if name == "xcb" else env.get("WAYLAND_DISPLAY")
    display = f" on display {where!r}" if where else ""
    return f"Qt's {name} platform plugin could not start{display} (is the display server running?); {HEADLESS_HINT}"


def explain_qt_import_error(exc: ImportError) -> str | None:
    """One line when importing PySide6 failed because a system library is missing; None for other import errors."""
    if ".so" not in str(exc):
        return None
    report = check_platform_libraries()
    if report is not None and report.missing_system:
        missing = ", ".join(report.missing_system)
        return f"Qt cannot load: {missing} missing; install with: {install_hint(report.missing_system)}"
    if report is not None and report.missing_qt:
        return f"Qt cannot load: PySide6 is incomplete ({exc}); reinstall it: {REINSTALL_PYSIDE}"
    return f"Qt cannot load: {exc}"


def install_missing(report: PlatformLibraries, stream: TextIO) -> bool:
    """apt-get install the packages for the missing sonames (saying what and why first); True when installed."""
    sonames = list(report.missing_system)
    found, unknown = debian_packages(sonames)
    if unknown and (is_root() or shutil.which("sudo")):
        _say(stream, f"updating apt's package lists to find {', '.join(unknown)}")
        subprocess.run(privileged(["apt-get", "update", "-qq"]), check=False)
        found, unknown = debian_packages(sonames)
    if unknown:
        _say(stream, f"no Debian package found for {', '.join(unknown)}; install the packages that provide them")
        return False
    command = apt_install_command(found.values())
    if not is_root() and shutil.which("sudo") is None:
        _say(stream, f"not root and no sudo: run as root: {' '.join(command)}")
        return False
    _say(
        stream,
        f"Qt's {'/'.join(report.platforms)} platform plugin needs {', '.join(sonames)}, which this machine lacks; "
        f"installing {' '.join(sorted(set(found.values())))}: {' '.join(command)}",
    )
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive") if is_root() else None
    if subprocess.run(command, check=False, env=env).returncode == 0:
        return True
    _say(stream, "apt-get install failed; updating apt's package lists (they may be stale) and trying once more")
    subprocess.run(privileged(["apt-get", "update", "-qq"]), check=False)
    return subprocess.run(command, check=False, env=env).returncode == 0


def _say(stream: TextIO, line: str) -> None:
    stream.write(f"reviewer-app: {line}\n")
    stream.flush()


def main(argv: Sequence[str] | None = None) -> int:
    """Exit 0 when the window can start; else one line on stderr (and with --install, apt-get on Debian/Ubuntu)."""
    parser = argparse.ArgumentParser(prog="python -m reviewer_app.ui.startup.platform_deps", description=main.__doc__)
    parser.add_argument("--install", action="store_true", help="install what is missing (Debian/Ubuntu, apt-get)")
    args = parser.parse_args(argv)
    if not sys.platform.startswith("linux"):
        return 0  # Windows and macOS plugins ship inside PySide6
    problem = display_problem(os.environ)
    if problem:
        _say(sys.stderr, problem)
        return EXIT_NO_WINDOW
    report = check_platform_libraries()
    if report is None or not report.missing:
        return 0  # nothing missing (or no ldd to ask: Qt will say)
    if report.missing_qt:
        _say(sys.stderr, explain_failure(report.platforms[0]))
        return EXIT_MISSING
    if args.install and is_debian_like():
        if install_missing(report, sys.stderr):
            after = check_platform_libraries()
            if after is not None and not after.missing:
                return 0
            still = ", ".join(after.missing) if after else "unknown"
            _say(sys.stderr, f"still missing after installing: {still}")
        return EXIT_MISSING
    missing = ", ".join(report.missing_system)
    _say(
        sys.stderr,
        f"Qt's {'/'.join(report.platforms)} platform plugin needs {missing}, which this machine lacks; "
        f"install with: {install_hint(report.missing_system)}",
    )
    return EXIT_MISSING


if __name__ == "__main__":
    sys.exit(main())
