"""Which Qt files the bundle keeps: PyInstaller's ``excludes`` drops Python modules only.

PyInstaller's PySide6 hooks collect every plugin family a module might use
(eglfs, virtual keyboard, Wayland compositor, SQL drivers...) plus whatever Qt
libraries those plugins link, and all Qt translations. Reviewer is a QtWidgets
app in English that draws with the raster engine, so the spec passes its
binaries and datas through :func:`keep` and this list decides. Anything a kept
extension module or plugin links is kept too (``smoke_test.py`` checks the
bundle has no unresolved Qt dependency), so an import added to the UI cannot be
silently broken by this filter.

Destination paths look like this (``dest`` is the path inside the bundle):
Linux ``PySide6/Qt/lib/libQt6Gui.so.6``, ``PySide6/Qt/plugins/platforms/libqxcb.so``;
Windows ``PySide6/Qt6Gui.dll``, ``PySide6/plugins/platforms/qwindows.dll``;
macOS ``PySide6/Qt/lib/QtGui.framework/Versions/A/QtGui``, ``.../plugins/platforms/libqcocoa.dylib``.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Callable, Iterable
from pathlib import PurePosixPath

# Qt libraries the app needs (plus those of any bundled PySide6 extension module, added by the spec).
QT_LIBS = frozenset(
    {
        "Core",
        "Gui",
        "Widgets",
        "DBus",  # QtGui links it on Linux (portal, ibus, a11y)
        "Svg",  # the SVG icon engine and image plugin
        "XcbQpa",  # the X11 platform plugin's library
        "WaylandClient",  # the Wayland platform plugin's library
    }
)

# Plugin families and the plugins kept in each ("*" keeps the family whole).
QT_PLUGINS: dict[str, frozenset[str]] = {
    "platforms": frozenset({"qxcb", "qwayland", "qoffscreen", "qminimal", "qwindows", "qcocoa"}),
    # gtk3 would drag GTK, Pango and Cairo into the bundle; the portal theme gives native dialogs through D-Bus.
    "platformthemes": frozenset({"qxdgdesktopportal"}),
    "styles": frozenset({"*"}),  # qmodernwindowsstyle, qmacstyle: native look
    "imageformats": frozenset({"qsvg", "qico", "qicns"}),  # PNG is built into QtGui
    "iconengines": frozenset({"qsvgicon"}),
    "platforminputcontexts": frozenset({"composeplatforminputcontextplugin", "ibusplatforminputcontextplugin"}),
    "xcbglintegrations": frozenset({"*"}),  # loaded by the xcb plugin; tiny, no extra Qt libraries
    "wayland-shell-integration": frozenset({"xdg-shell"}),
    "wayland-decoration-client": frozenset({"bradient", "adwaita"}),
}

# Non-Qt files shipped with the Qt wheels that a raster widgets app never loads.
DROPPED_FILES = frozenset(
    {
        "opengl32sw.dll",  # Mesa software OpenGL for Windows machines without GL drivers (20 MB)
    }
)

_LINUX_LIB = re.compile(r"^libQt6(?P<module>\w+?)\.so(\.\d+)*$")
_WINDOWS_LIB = re.compile(r"^Qt6(?P<module>\w+?)\.dll$", re.IGNORECASE)
_MACOS_FRAMEWORK = re.compile(r"^Qt(?P<module>\w+)\.framework$")
_PYSIDE_EXTENSION = re.compile(r"^Qt(?P<module>\w+?)(\.abi3)?\.(so|pyd)$")


def _parts(dest: str) -> tuple[str, ...]:
    return PurePosixPath(dest.replace("\\", "/")).parts


def qt_library_module(dest: str) -> str | None:
    """``Gui`` for any Qt library file of the QtGui module, whatever the platform; else None."""
    parts = _parts(dest)
    for part in parts:  # also top-level symlinks PyInstaller makes to PySide6/Qt/lib/...
        match = _MACOS_FRAMEWORK.match(part)
        if match:
            return match.group("module")
    name = parts[-1]
    match = _LINUX_LIB.match(name) or _WINDOWS_LIB.match(name)
    return match.group("module") if match else None


def pyside_extension_module(dest: str) -> str | None:
    """``Widgets`` for ``PySide6/QtWidgets.abi3.so`` (or ``.pyd``); else None."""
    parts = _parts(dest)
    if len(parts) == 2 and parts[0] == "PySide6":
        match = _PYSIDE_EXTENSION.match(parts[1])
        if match:
            return match.group("module")
    return None


def plugin_of(dest: str) -> tuple[str, str] | None:
    """``("platforms", "qxcb")`` for a Qt plugin file; else None."""
    parts = _parts(dest)
    if "PySide6" not in parts or "plugins" not in parts:
        return None
    index = parts.index("plugins")
    if len(parts) != index + 3:
        return None
    family, filename = parts[index + 1], parts[index + 2]
    stem = filename.split(".")[0]
    if stem.startswith("lib") and not filename.endswith(".dll"):
        stem = stem[3:]
    return family, stem


def needed_qt_modules(dests: Iterable[str]) -> frozenset[str]:
    """The Qt libraries to keep: :data:`QT_LIBS` and those behind each bundled PySide6 extension module."""
    modules = set(QT_LIBS)
    for dest in dests:
        module = pyside_extension_module(dest)
        if module:
            modules.add(module)
    return frozenset(modules)


def keep(dest: str, qt_modules: frozenset[str] = QT_LIBS) -> bool:
    """Whether the file at ``dest`` inside the bundle is kept."""
    parts = _parts(dest)
    if not parts:
        return True
    if parts[-1] in DROPPED_FILES:
        return False
    module = qt_library_module(dest)
    if module is not None:
        return module in qt_modules
    if "PySide6" not in parts:
        return True
    if "translations" in parts or "qml" in parts or "libexec" in parts:
        return False  # English-only widgets app: no Qt translations, no QML, no helper executables
    plugin = plugin_of(dest)
    if plugin is not None:
        family, name = plugin
        allowed = QT_PLUGINS.get(family, frozenset())
        return "*" in allowed or name in allowed
    return True


TocEntry = tuple[str, str, str]  # PyInstaller TOC entry: (dest inside the bundle, source, typecode)


def split(entries: Iterable[TocEntry], qt_modules: frozenset[str]) -> tuple[list[TocEntry], list[TocEntry]]:
    """Partition PyInstaller TOC entries into kept and dropped."""
    kept: list[TocEntry] = []
    dropped: list[TocEntry] = []
    for entry in entries:
        (kept if keep(entry[0], qt_modules) else dropped).append(entry)
    return kept, dropped


def _basename(path: str) -> str:
    return PurePosixPath(path.replace("\\", "/")).name


def _index_by_name(entries: Iterable[TocEntry]) -> dict[str, list[TocEntry]]:
    """Entries under both their bundle and source file names, as a binary's link list names them."""
    by_name: dict[str, list[TocEntry]] = defaultdict(list)
    for entry in entries:
        by_name[_basename(entry[0])].append(entry)
        by_name[_basename(entry[1])].append(entry)
    return by_name


def _reachable(
    starts: Iterable[TocEntry],
    by_name: dict[str, list[TocEntry]],
    imports_of: Callable[[str], Iterable[str]],
) -> dict[str, None]:
    """Names in ``by_name`` that ``starts`` link, directly or through each other (in discovery order)."""
    seen: dict[str, None] = {}
    stack = list(starts)
    while stack:
        entry = stack.pop()
        if entry[2] == "SYMLINK":
            continue
        for name in imports_of(entry[1]):
            key = _basename(name)
            if key in by_name and key not in seen:
                seen[key] = None
                stack.extend(by_name[key])
    return seen


def orphaned_dependencies(
    kept: list[TocEntry],
    dropped: list[TocEntry],
    imports_of: Callable[[str], Iterable[str]],
) -> list[TocEntry]:
    """Kept binaries that only dropped files needed (GTK for the gtk3 theme, libdrm for eglfs...).

    PyInstaller resolves every collected plugin's shared-library dependencies
    before the spec can filter, so dropping a plugin leaves its dependencies
    behind. A library goes only if a dropped file reaches it and no remaining
    file does; ``imports_of(source_path)`` names the libraries a binary links.
    """
    by_name = _index_by_name(kept)
    candidates = _reachable(dropped, by_name, imports_of).keys()
    roots = [e for e in kept if _basename(e[0]) not in candidates and _basename(e[1]) not in candidates]
    orphans = candidates - _reachable(roots, by_name, imports_of).keys()
    return [e for e in kept if _basename(e[0]) in orphans or _basename(e[1]) in orphans]


def linked_but_dropped(
    kept: list[TocEntry],
    dropped: list[TocEntry],
    imports_of: Callable[[str], Iterable[str]],
) -> list[TocEntry]:
    """Dropped binaries that a kept binary links, directly or through another of them: they must stay.

    The lists above say what the app wants; this makes sure a kept plugin never
    loses a library it links (on macOS the cocoa plugin's frameworks, say).
    """
    by_name = _index_by_name(dropped)
    restored: dict[TocEntry, None] = {}
    for name in _reachable(kept, by_name, imports_of):
        for entry in by_name[name]:
            restored[entry] = None
    return list(restored)


def framework_of(dest: str) -> str | None:
    """``QtGui.framework`` for any file inside that macOS framework; else None."""
    return next((part for part in _parts(dest) if part.endswith(".framework")), None)
