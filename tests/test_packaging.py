"""The packaging logic that can be checked without a build (seconds): Qt filter, icons, metadata, smoke checks.

The frozen app itself is exercised by ``make package-test`` (packaging/smoke_test.py).
"""

from __future__ import annotations

import ast
import functools
import shutil
import struct
import sys
from pathlib import Path

import pytest

from tests.helpers.statements import statements

REPO = Path(__file__).resolve().parent.parent
PACKAGING = REPO / "packaging"
# The directory is named like the PyPI `packaging` library, so its scripts are imported as top-level modules.
sys.path.insert(0, str(PACKAGING))

import make_icons  # noqa: E402
import project_meta  # noqa: E402
import qt_filter  # noqa: E402
import smoke_test  # noqa: E402

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def png_size(data: bytes) -> tuple[int, int]:
    assert data[:8] == PNG_SIGNATURE
    width, height = struct.unpack(">II", data[16:24])
    return width, height


@functools.cache
def app_imports() -> tuple[tuple[Path, ast.Import | ast.ImportFrom, bool], ...]:
    """Every import statement of the app's source, in file and statement order: its file, the statement, and
    whether it sits in a ``try: … except ImportError``. The source is parsed once for the tests below, not once
    for each (only the import statements are kept, not the trees)."""
    found: list[tuple[Path, ast.Import | ast.ImportFrom, bool]] = []
    for path in (REPO / "reviewer_app").rglob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        optional = _optional_imports(tree)
        for node in statements(tree):
            if isinstance(node, ast.Import | ast.ImportFrom):
                found.append((path, node, id(node) in optional))
    return tuple(found)


def qt_modules_imported_by_app() -> set[str]:
    """``Widgets`` etc. for every ``PySide6.QtWidgets`` the app's source imports."""
    modules = set()
    for _path, node, _optional in app_imports():
        names = []
        if isinstance(node, ast.ImportFrom) and node.module:
            names = [node.module] + [f"{node.module}.{alias.name}" for alias in node.names]
        elif isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        for name in names:
            parts = name.split(".")
            if parts[0] == "PySide6" and len(parts) > 1 and parts[1].startswith("Qt"):
                modules.add(parts[1][2:])
    return modules


def spec_excludes() -> list[str]:
    tree = ast.parse((PACKAGING / "reviewer-app.spec").read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "Analysis":
            for keyword in node.keywords:
                if keyword.arg == "excludes":
                    return ast.literal_eval(keyword.value)
    raise AssertionError("no Analysis(excludes=[...]) in the spec")


# -- Qt filter -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "dest",
    [
        "PySide6/Qt/lib/libQt6Core.so.6",
        "PySide6/Qt/lib/libQt6Widgets.so.6",
        "libQt6Gui.so.6",  # PyInstaller's top-level symlink
        "PySide6/Qt/lib/libicudata.so.73",
        "PySide6/Qt/plugins/platforms/libqxcb.so",
        "PySide6/Qt/plugins/platforms/libqwayland.so",
        "PySide6/Qt/plugins/platforms/libqoffscreen.so",
        "PySide6/Qt/plugins/iconengines/libqsvgicon.so",
        "PySide6/Qt/plugins/imageformats/libqsvg.so",
        "PySide6/Qt/plugins/platformthemes/libqxdgdesktopportal.so",
        "PySide6/Qt/plugins/wayland-shell-integration/libxdg-shell.so",
        "PySide6/QtWidgets.abi3.so",
        "PySide6/Qt6Widgets.dll",
        "PySide6/plugins/platforms/qwindows.dll",
        "PySide6/plugins/styles/qmodernwindowsstyle.dll",
        "PySide6/Qt/lib/QtGui.framework/Versions/A/QtGui",
        "PySide6/Qt/plugins/platforms/libqcocoa.dylib",
        "PySide6/Qt/plugins/styles/libqmacstyle.dylib",
        "libglib-2.0.so.0",
        "reviewer_app/resources/reviewer.svg",
        "reviewer_app/resources/linux/dev.reviewer.ReviewerApp.metainfo.xml",
    ],
)
def test_qt_filter_keeps_what_a_widgets_app_needs(dest: str) -> None:
    assert qt_filter.keep(dest)


@pytest.mark.parametrize(
    "dest",
    [
        "PySide6/Qt/translations/qtbase_de.qm",
        "PySide6/Qt/lib/libQt6Quick.so.6",
        "PySide6/Qt/lib/libQt6Qml.so.6",
        "PySide6/Qt/lib/libQt6Network.so.6",
        "libQt6OpenGL.so.6",
        "PySide6/Qt/plugins/platforms/libqeglfs.so",
        "PySide6/Qt/plugins/platformthemes/libqgtk3.so",
        "PySide6/Qt/plugins/platforminputcontexts/libqtvirtualkeyboardplugin.so",
        "PySide6/Qt/plugins/wayland-graphics-integration-server/libqt-wayland-compositor-wayland-egl.so",
        "PySide6/Qt/plugins/sqldrivers/libqsqlite.so",
        "PySide6/Qt/plugins/imageformats/libqpdf.so",
        "PySide6/Qt6Pdf.dll",
        "PySide6/opengl32sw.dll",
        "PySide6/Qt/lib/QtQuick.framework/Versions/A/QtQuick",
    ],
)
def test_qt_filter_drops_what_it_does_not_use(dest: str) -> None:
    assert not qt_filter.keep(dest)


def test_every_qt_module_the_app_imports_is_kept() -> None:
    imported = qt_modules_imported_by_app()
    assert {"Core", "Gui", "Widgets"} <= imported
    # What the spec computes: the libraries behind each bundled PySide6 extension module are kept.
    needed = qt_filter.needed_qt_modules(f"PySide6/Qt{module}.abi3.so" for module in imported)
    for module in imported:
        assert qt_filter.keep(f"PySide6/Qt/lib/libQt6{module}.so.6", needed), module
        assert qt_filter.keep(f"PySide6/Qt{module}.abi3.so", needed), module


LIBRARY_ONLY_ADAPTERS = (
    "langgraph",
    "openai_agents",
    "pydantic_ai",
    "aury",
    "power_loop",
    "react_agent_harness",
    "langstage",
)


def _optional_imports(tree: ast.AST) -> set[int]:
    """Imports inside ``try: … except ImportError``: the app works without them, so the bundle may drop them."""
    optional: set[int] = set()
    for node in statements(tree):
        if not isinstance(node, ast.Try):
            continue
        caught = {getattr(h.type, "id", None) for h in node.handlers}
        if caught & {"ImportError", "ModuleNotFoundError"}:
            for statement in node.body:
                optional.update(id(inner) for inner in statements(statement))
    return optional


def test_the_spec_excludes_no_module_the_app_imports() -> None:
    excluded = spec_excludes()
    imported = {f"PySide6.Qt{module}" for module in qt_modules_imported_by_app()}
    assert not imported & set(excluded)
    # Adapters that run inside an agent author's own process, with their framework: never imported by the app.
    library_only = {REPO / "reviewer_app" / "integrations" / f"{name}.py" for name in LIBRARY_ONLY_ADAPTERS}
    for path, node, optional in app_imports():
        if path in library_only or optional:
            continue
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module]
        else:
            continue
        for name in names:
            hit = [ex for ex in excluded if name == ex or name.startswith(ex + ".")]
            assert not hit, f"{path.relative_to(REPO)} imports {name}, which the spec excludes"


def test_orphaned_dependencies_only_drops_what_dropped_files_alone_needed() -> None:
    links = {
        "/src/QtWidgets.so": ["libQt6Widgets.so.6", "libshared.so.1"],
        "/src/libQt6Widgets.so.6": ["libglib.so.0"],
        "/src/libqgtk3.so": ["libgtk-3.so.0", "libshared.so.1"],
        "/src/libgtk-3.so.0": ["libpango.so.1", "libglib.so.0"],
        "/src/libpango.so.1": [],
        "/src/libglib.so.0": [],
        "/src/libshared.so.1": [],
    }
    kept = [
        ("PySide6/QtWidgets.so", "/src/QtWidgets.so", "EXTENSION"),
        ("PySide6/Qt/lib/libQt6Widgets.so.6", "/src/libQt6Widgets.so.6", "BINARY"),
        ("libQt6Widgets.so.6", "PySide6/Qt/lib/libQt6Widgets.so.6", "SYMLINK"),
        ("libgtk-3.so.0", "/src/libgtk-3.so.0", "BINARY"),
        ("libpango.so.1", "/src/libpango.so.1", "BINARY"),
        ("libglib.so.0", "/src/libglib.so.0", "BINARY"),
        ("libshared.so.1", "/src/libshared.so.1", "BINARY"),
    ]
    dropped = [("PySide6/Qt/plugins/platformthemes/libqgtk3.so", "/src/libqgtk3.so", "BINARY")]
    orphans = qt_filter.orphaned_dependencies(kept, dropped, lambda source: links.get(source, []))
    assert sorted(entry[0] for entry in orphans) == ["libgtk-3.so.0", "libpango.so.1"]


def test_a_dropped_library_that_a_kept_plugin_links_is_restored() -> None:
    links = {
        "/qt/plugins/platforms/libqcocoa.dylib": ["@rpath/QtOpenGL.framework/Versions/A/QtOpenGL"],
        "/qt/lib/QtOpenGL.framework/Versions/A/QtOpenGL": ["@rpath/QtGui.framework/Versions/A/QtGui"],
        "/qt/lib/QtQuick.framework/Versions/A/QtQuick": [],
    }
    kept = [("PySide6/Qt/plugins/platforms/libqcocoa.dylib", "/qt/plugins/platforms/libqcocoa.dylib", "BINARY")]
    opengl = (
        "PySide6/Qt/lib/QtOpenGL.framework/Versions/A/QtOpenGL",
        "/qt/lib/QtOpenGL.framework/Versions/A/QtOpenGL",
        "BINARY",
    )
    quick = (
        "PySide6/Qt/lib/QtQuick.framework/Versions/A/QtQuick",
        "/qt/lib/QtQuick.framework/Versions/A/QtQuick",
        "BINARY",
    )
    assert not qt_filter.keep(opengl[0]) and not qt_filter.keep(quick[0])
    restored = qt_filter.linked_but_dropped(kept, [opengl, quick], lambda source: links.get(source, []))
    assert restored == [opengl]
    assert qt_filter.framework_of(opengl[0]) == "QtOpenGL.framework"
    assert qt_filter.framework_of("PySide6/Qt/lib/libQt6Core.so.6") is None


# -- icons and resources ---------------------------------------------------------------------------


def test_committed_app_icon_pngs_have_their_sizes() -> None:
    from reviewer_app.resources import APP_ICON_SIZES, app_icon_pngs, app_icon_svg

    assert tuple(make_icons.PNG_SIZES) == APP_ICON_SIZES
    assert app_icon_svg().read_text(encoding="utf-8").lstrip().startswith(("<svg", "<?xml"))
    for size, path in zip(APP_ICON_SIZES, app_icon_pngs(), strict=True):
        assert png_size(path.read_bytes()) == (size, size), path


def test_resource_path_finds_nested_files_and_names_missing_ones() -> None:
    from reviewer_app.resources import resource_path

    assert resource_path("reviewer.svg").is_file()
    nested = sorted((REPO / "resources").glob("*/*.svg"))
    assert nested, "the top-level resources/ holds the icons"
    relative = nested[0].relative_to(REPO / "resources").as_posix()
    assert resource_path(relative) == nested[0]
    with pytest.raises(FileNotFoundError, match=r"no-such-icon\.svg"):
        resource_path("no-such-icon.svg")


def test_ico_and_icns_hold_the_rendered_pngs(qapp: object) -> None:
    pngs = {size: make_icons.render_png(size) for size in (16, 32, 256)}
    for size, data in pngs.items():
        assert png_size(data) == (size, size)

    ico = make_icons.ico_bytes(pngs)
    reserved, kind, count = struct.unpack("<HHH", ico[:6])
    assert (reserved, kind, count) == (0, 1, 3)
    for index, size in enumerate(sorted(pngs)):
        width, _height, _c, _r, _planes, bpp, length, offset = struct.unpack(
            "<BBBBHHII", ico[6 + 16 * index : 22 + 16 * index]
        )
        assert width == (0 if size == 256 else size) and bpp == 32
        assert ico[offset : offset + length] == pngs[size]

    icns = make_icons.icns_bytes({size: make_icons.render_png(size) for _, size in make_icons.ICNS_TYPES})
    assert icns[:4] == b"icns" and struct.unpack(">I", icns[4:8])[0] == len(icns)
    position, kinds = 8, []
    while position < len(icns):
        kind, length = icns[position : position + 4], struct.unpack(">I", icns[position + 4 : position + 8])[0]
        assert icns[position + 8 : position + 16] == PNG_SIGNATURE
        kinds.append(kind)
        position += length
    assert position == len(icns)
    assert kinds == [kind for kind, _ in make_icons.ICNS_TYPES]


# -- metadata and smoke-test helpers ------------------------------------------------------------------


def test_project_meta_reads_pyproject() -> None:
    meta = project_meta.read_meta()
    assert meta.name == "reviewer-app"
    assert meta.version and meta.description


@pytest.mark.parametrize(
    ("version", "numeric", "deb"),
    [
        ("0.1.0", (0, 1, 0, 0), "0.1.0"),
        ("0.2.0rc1", (0, 2, 0, 0), "0.2.0~rc1"),
        ("1.0a2", (1, 0, 0, 0), "1.0~a2"),
        ("1.0.dev3", (1, 0, 0, 0), "1.0~dev3"),
        ("2.1.post1", (2, 1, 0, 0), "2.1.post1"),
    ],
)
def test_versions_for_windows_and_debian(version: str, numeric: tuple[int, ...], deb: str) -> None:
    meta = project_meta.ProjectMeta(name="reviewer-app", version=version, description="", maintainer="")
    assert meta.numeric_version == numeric
    assert meta.deb_version == deb


def test_smoke_test_flags_errors_but_not_offscreen_chatter_or_demo_content() -> None:
    harmless = [
        "This plugin does not support propagateSizeHints()",
        "INFO reviewer_app.ui: window shown",
        "INFO reviewer_app.runtime: demo tool failed as scripted; 0 errors so far",
    ]
    errors = [
        "Traceback (most recent call last):",
        'qt.qpa.plugin: Could not load the Qt platform plugin "xcb" in "" even though it was found.',
        "2026-01-01 12:00:00 ERROR reviewer_app.runtime: run failed",
        "[PYI-123:ERROR] Failed to execute script 'launcher' due to unhandled exception!",
        "Task exception was never retrieved",
        "Exception ignored in: <function Store.__del__ at 0x7f>",
        "error: the database is newer than this Reviewer",
        "Cannot load library libqxcb.so",
    ]
    assert smoke_test.error_lines("\n".join(harmless + errors)) == errors


def test_smoke_test_finds_the_bundled_head_migration(tmp_path: Path) -> None:
    from reviewer_app.persistence.migrate import head_revision, migrations_dir

    bundle = tmp_path / "reviewer-app"
    shutil.copytree(migrations_dir(), bundle / "_internal" / "reviewer_app" / "persistence" / "migrations")
    assert smoke_test.bundled_head_revision(bundle) == head_revision()
