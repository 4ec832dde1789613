"""Build Reviewer's installers: the PyInstaller bundle, then the platform packages around it.

    python packaging/build_installers.py linux      # bundle + .deb + .tar.gz  (what `make package` runs)
    python packaging/build_installers.py bundle     # dist/reviewer-app/ (+ dist/Reviewer.app on macOS), any OS
    python packaging/build_installers.py deb        # dist/reviewer-app_<version>_<arch>.deb from the bundle
    python packaging/build_installers.py tarball    # dist/reviewer-app-<version>-linux-x86_64.tar.gz
    python packaging/build_installers.py sizes      # what the bundle is made of

Windows (Inno Setup) and macOS (.dmg) installers wrap the same bundle; see
packaging/windows/reviewer-app.iss, packaging/macos/build_dmg.sh and
.github/workflows/release.yml. Standard library only (plus PyInstaller and
PySide6 from the build venv), so every CI runner can run it.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import stat
import subprocess
import sys
import tarfile
import time
from collections.abc import Iterator
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import make_icons
from project_meta import BUNDLE_ID, PACKAGING, REPO, ProjectMeta, deb_arch, platform_tag, read_meta

DIST = REPO / "dist"
BUILD = REPO / "build"
ICON_DIR = BUILD / "icons"
SPEC = PACKAGING / "reviewer-app.spec"
LINUX = PACKAGING / "linux"  # Debian copyright
RESOURCES = make_icons.RESOURCES  # the top-level resources/: icons, and the desktop entry and metainfo in linux/
DESKTOP_ENTRY = RESOURCES / "linux" / "reviewer-app.desktop"
METAINFO = RESOURCES / "linux" / f"{BUNDLE_ID}.metainfo.xml"
HICOLOR_SIZES = make_icons.PNG_SIZES

# Shared libraries PyInstaller deliberately leaves to the system (glibc, the GL stack, libxcb,
# Wayland) or could not find on the build host, and the Debian/Ubuntu package providing each.
# Used when `dpkg -S` cannot tell (the library is absent on the build host).
KNOWN_SYSTEM_PACKAGES = {
    "libc.so.6": "libc6",
    "libm.so.6": "libc6",
    "libdl.so.2": "libc6",
    "libpthread.so.0": "libc6",
    "librt.so.1": "libc6",
    "libresolv.so.2": "libc6",
    "libutil.so.1": "libc6",
    "libGL.so.1": "libgl1",
    "libEGL.so.1": "libegl1",
    "libOpenGL.so.0": "libopengl0",
    "libGLX.so.0": "libglx0",
    "libGLdispatch.so.0": "libglvnd0",
    "libdrm.so.2": "libdrm2",
    "libxcb.so.1": "libxcb1",
    "libxcb-icccm.so.4": "libxcb-icccm4",
    "libxcb-keysyms.so.1": "libxcb-keysyms1",
    "libxcb-cursor.so.0": "libxcb-cursor0",
    "libxcb-image.so.0": "libxcb-image0",
    "libxcb-render-util.so.0": "libxcb-render-util0",
    "libxkbcommon-x11.so.0": "libxkbcommon-x11-0",
    "libwayland-client.so.0": "libwayland-client0",
    "libwayland-cursor.so.0": "libwayland-cursor0",
    "libwayland-egl.so.1": "libwayland-egl1",
}


def log(message: str) -> None:
    print(f"[package] {message}", flush=True)


def run(*command: str | Path, **kwargs: object) -> subprocess.CompletedProcess[str]:
    log("$ " + " ".join(str(part) for part in command))
    result: subprocess.CompletedProcess[str] = subprocess.run(  # type: ignore[call-overload]
        [str(part) for part in command], check=True, text=True, **kwargs
    )
    return result


def bundle_dir() -> Path:
    return DIST / "reviewer-app"


def bundle_executable() -> Path:
    name = "reviewer-app.exe" if sys.platform == "win32" else "reviewer-app"
    return bundle_dir() / name


# -- bundle ------------------------------------------------------------------------------------


def build_icons() -> None:
    for path in make_icons.write_platform_icons(ICON_DIR):
        log(f"icon {path.relative_to(REPO)}")


def build_bundle() -> Path:
    """PyInstaller onedir build (work files in build/pyinstaller, kept between runs to save time)."""
    build_icons()
    started = time.monotonic()
    env = dict(os.environ, REVIEWER_ICON_DIR=str(ICON_DIR))
    run(
        sys.executable,
        "-m",
        "PyInstaller",
        "--noconfirm",
        "--log-level",
        "WARN",
        "--distpath",
        DIST,
        "--workpath",
        BUILD / "pyinstaller",
        SPEC,
        env=env,
        cwd=REPO,
    )
    elapsed = time.monotonic() - started
    log(f"bundle {bundle_dir().relative_to(REPO)} built in {elapsed:.0f} s, {mib(tree_size(bundle_dir()))}")
    return bundle_dir()


def tree_size(root: Path) -> int:
    return sum(path.lstat().st_size for path in root.rglob("*") if path.is_file() or path.is_symlink())


def mib(size: int) -> str:
    return f"{size / 1024 / 1024:.1f} MiB"


def require_bundle() -> Path:
    if not bundle_executable().is_file():
        raise SystemExit(f"no bundle at {bundle_dir()}: run `python packaging/build_installers.py bundle` first")
    return bundle_dir()


# -- Linux shared-library dependencies -------------------------------------------------------------


def elf_files(root: Path) -> Iterator[Path]:
    for path in sorted(root.rglob("*")):
        if path.is_file() and not path.is_symlink():
            with path.open("rb") as handle:
                if handle.read(4) == b"\x7fELF":
                    yield path


def unbundled_libraries(root: Path) -> dict[str, str | None]:
    """Libraries bundled ELF files link but the bundle does not hold: soname -> host path (None if missing)."""
    bundled = {path.name for path in root.rglob("*")}
    lib_path = os.pathsep.join([str(root / "_internal"), str(root / "_internal" / "PySide6" / "Qt" / "lib")])
    env = dict(os.environ, LD_LIBRARY_PATH=lib_path)
    found: dict[str, str | None] = {}
    for path in elf_files(root):
        result = subprocess.run(["ldd", str(path)], capture_output=True, text=True, env=env, check=False)
        for line in result.stdout.splitlines():
            match = re.match(r"\s*(\S+) => (\S+)", line)
            if not match or match.group(1) in bundled:
                continue
            soname, target = match.groups()
            resolved = None if target == "not" else target
            if resolved and Path(resolved).resolve().is_relative_to(root.resolve()):
                continue
            found[soname] = found.get(soname) or resolved
    return found


def glibc_floor(root: Path) -> str:
    """The newest GLIBC_2.x symbol version any bundled binary asks for: the libc6 the package needs."""
    newest = (2, 17)
    pattern = re.compile(rb"GLIBC_2\.(\d+)(?:\.(\d+))?\x00")
    for path in elf_files(root):
        for match in pattern.finditer(path.read_bytes()):
            newest = max(newest, (2, int(match.group(1))))
    return f"{newest[0]}.{newest[1]}"


def package_of(soname: str, host_path: str | None) -> str | None:
    if host_path and shutil.which("dpkg"):
        result = subprocess.run(["dpkg", "-S", host_path], capture_output=True, text=True, check=False)
        if result.returncode != 0:  # merged /usr: dpkg may know the file under the other prefix
            alt = host_path.replace("/lib/", "/usr/lib/", 1) if not host_path.startswith("/usr/") else host_path[4:]
            result = subprocess.run(["dpkg", "-S", alt], capture_output=True, text=True, check=False)
        if result.returncode == 0:
            return result.stdout.split(":")[0].strip()
    return KNOWN_SYSTEM_PACKAGES.get(soname)


def deb_depends(root: Path) -> list[str]:
    packages: set[str] = set()
    unknown = []
    for soname, host_path in sorted(unbundled_libraries(root).items()):
        package = package_of(soname, host_path)
        if package is None:
            unknown.append(soname)
        else:
            packages.add(package)
    if unknown:
        raise SystemExit(
            f"bundled binaries link {', '.join(unknown)}, which is neither bundled nor a known system package: "
            "install it on the build host (so PyInstaller bundles it) or add it to KNOWN_SYSTEM_PACKAGES"
        )
    packages.discard("libc6")
    return [f"libc6 (>= {glibc_floor(root)})", *sorted(packages)]


# -- shared pieces of the Linux packages -------------------------------------------------------


def install_desktop_files(share: Path, meta: ProjectMeta) -> None:
    """.desktop entry, AppStream metainfo and hicolor icons under ``share`` (= /usr/share in the .deb)."""
    applications = share / "applications"
    applications.mkdir(parents=True, exist_ok=True)
    shutil.copy2(DESKTOP_ENTRY, applications / f"{meta.name}.desktop")
    metainfo = share / "metainfo"
    metainfo.mkdir(parents=True, exist_ok=True)
    shutil.copy2(METAINFO, metainfo / METAINFO.name)
    for size in HICOLOR_SIZES:
        target = share / "icons" / "hicolor" / f"{size}x{size}" / "apps"
        target.mkdir(parents=True, exist_ok=True)
        shutil.copy2(RESOURCES / f"reviewer-{size}.png", target / f"{meta.name}.png")
    scalable = share / "icons" / "hicolor" / "scalable" / "apps"
    scalable.mkdir(parents=True, exist_ok=True)
    shutil.copy2(RESOURCES / "reviewer.svg", scalable / f"{meta.name}.svg")


def normalise_modes(root: Path) -> None:
    """0755 for directories and executables/ELF files, 0644 for the rest (whatever the umask was)."""
    for path in [root, *root.rglob("*")]:
        if path.is_symlink():
            continue
        if path.is_dir():
            path.chmod(0o755)
            continue
        executable = path.stat().st_mode & stat.S_IXUSR
        path.chmod(0o755 if executable else 0o644)


def fresh_dir(path: Path) -> Path:
    if path.exists():
        shutil.rmtree(path)
    path.mkdir(parents=True)
    return path


# -- .deb --------------------------------------------------------------------------------------


def deb_path(meta: ProjectMeta) -> Path:
    return DIST / f"{meta.name}_{meta.deb_version}_{deb_arch()}.deb"


def build_deb(meta: ProjectMeta) -> Path:
    """/opt/reviewer-app (the bundle), /usr/bin/reviewer-app (relative symlink), desktop entry, metainfo, icons."""
    bundle = require_bundle()
    started = time.monotonic()
    root = fresh_dir(BUILD / "deb" / f"{meta.name}_{meta.deb_version}_{deb_arch()}")
    opt = root / "opt" / meta.name
    shutil.copytree(bundle, opt, symlinks=True)
    (root / "usr" / "bin").mkdir(parents=True)
    # Relative, so the launcher also works from a scratch root (`dpkg -x`); the bootloader follows the
    # link through /proc/self/exe to find _internal next to the real executable.
    (root / "usr" / "bin" / meta.name).symlink_to(Path("..", "..", "opt", meta.name, meta.name))
    install_desktop_files(root / "usr" / "share", meta)
    doc = root / "usr" / "share" / "doc" / meta.name
    doc.mkdir(parents=True)
    shutil.copy2(LINUX / "copyright", doc / "copyright")
    normalise_modes(root)
    depends = deb_depends(opt)
    installed_kib = (tree_size(root) + 1023) // 1024
    control = root / "DEBIAN" / "control"
    control.parent.mkdir()
    control.write_text(
        "\n".join(
            [
                f"Package: {meta.name}",
                f"Version: {meta.deb_version}",
                f"Architecture: {deb_arch()}",
                f"Maintainer: {meta.maintainer}",
                f"Installed-Size: {installed_kib}",
                f"Depends: {', '.join(depends)}",
                "Section: devel",
                "Priority: optional",
                f"Description: {meta.description.rstrip('.')}",
                " Reviewer is a desktop app that shows the human-in-the-loop approval requests",
                " AI agents raise before they act, and records each decision in a database.",
                " This package ships a self-contained build (Python and Qt included) in /opt.",
                "",
            ]
        ),
        encoding="utf-8",
    )
    control.chmod(0o644)
    control.parent.chmod(0o755)
    target = deb_path(meta)
    target.unlink(missing_ok=True)
    run("dpkg-deb", "--root-owner-group", "-Zxz", "-z6", "--build", root, target, stdout=subprocess.DEVNULL)
    log(f"deb {target.relative_to(REPO)} in {time.monotonic() - started:.0f} s, {mib(target.stat().st_size)}")
    log(f"deb Depends: {', '.join(depends)}")
    return target


# -- .tar.gz -----------------------------------------------------------------------------------


def tarball_path(meta: ProjectMeta) -> Path:
    return DIST / f"{meta.name}-{meta.version}-{platform_tag()}.tar.gz"


def build_tarball(meta: ProjectMeta) -> Path:
    """reviewer-app-<version>/: the bundle plus share/ (desktop entry, metainfo, icons) to copy into ~/.local."""
    bundle = require_bundle()
    started = time.monotonic()
    top = f"{meta.name}-{meta.version}"
    staging = fresh_dir(BUILD / "tarball")
    share = staging / "share"
    install_desktop_files(share, meta)
    normalise_modes(staging)

    def owned_by_root(info: tarfile.TarInfo) -> tarfile.TarInfo:
        info.uid = info.gid = 0
        info.uname = info.gname = "root"
        return info

    target = tarball_path(meta)
    with tarfile.open(target, "w:gz", compresslevel=6) as archive:
        archive.add(bundle, arcname=top, filter=owned_by_root)
        archive.add(share, arcname=f"{top}/share", filter=owned_by_root)
    log(f"tarball {target.relative_to(REPO)} in {time.monotonic() - started:.0f} s, {mib(target.stat().st_size)}")
    return target


# -- reporting ---------------------------------------------------------------------------------


def report_sizes(top: int = 15) -> None:
    bundle = require_bundle()
    internal = bundle / "_internal"
    print(f"bundle {bundle.relative_to(REPO)}: {mib(tree_size(bundle))}")
    groups: dict[str, int] = {}
    for path in internal.rglob("*"):
        if path.is_file() and not path.is_symlink():
            rel = path.relative_to(internal).parts
            key = "/".join(rel[:3]) if rel[:2] == ("PySide6", "Qt") else rel[0]
            groups[key] = groups.get(key, 0) + path.stat().st_size
    for exe in bundle.iterdir():
        if exe.is_file():
            groups[f"{exe.name} (bootloader + PYZ of Python code)"] = exe.stat().st_size
    for key, size in sorted(groups.items(), key=lambda item: -item[1])[:top]:
        print(f"  {mib(size):>10}  {key}")
    for artefact in sorted(DIST.glob("*.deb")) + sorted(DIST.glob("*.tar.gz")):
        print(f"{artefact.relative_to(REPO)}: {mib(artefact.stat().st_size)}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("target", choices=["linux", "bundle", "deb", "tarball", "icons", "sizes"])
    args = parser.parse_args(argv)
    meta = read_meta()
    if args.target == "icons":
        build_icons()
    elif args.target == "bundle":
        build_bundle()
    elif args.target == "deb":
        build_deb(meta)
    elif args.target == "tarball":
        build_tarball(meta)
    elif args.target == "sizes":
        report_sizes()
    elif args.target == "linux":
        if not sys.platform.startswith("linux"):
            raise SystemExit("`linux` builds the .deb and .tar.gz: run it on Linux (use `bundle` elsewhere)")
        build_bundle()
        build_deb(meta)
        build_tarball(meta)
        report_sizes()
    return 0


if __name__ == "__main__":
    sys.exit(main())
