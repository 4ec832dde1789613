"""Render the app icon from its one source, ``resources/reviewer.svg`` (the package ``reviewer_app.resources``).

PNGs are rendered with Qt's SVG renderer (already a dependency, so no Pillow or
ImageMagick at build time); ``.ico`` and ``.icns`` are written here as plain
containers of PNG images, which Windows (Vista+) and macOS (10.7+) both read.

    python packaging/make_icons.py --png          # refresh the committed PNGs
    python packaging/make_icons.py --out DIR      # write DIR/reviewer.ico and DIR/reviewer.icns
"""

from __future__ import annotations

import argparse
import os
import struct
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
RESOURCES = REPO / "resources"
SVG = RESOURCES / "reviewer.svg"
# Sizes committed as PNG (hicolor theme sizes the .deb installs; the window uses them too).
PNG_SIZES = (16, 24, 32, 48, 64, 128, 256)
ICO_SIZES = (16, 24, 32, 48, 64, 128, 256)
# ICNS element types that hold PNG data, and their pixel sizes.
ICNS_TYPES = (
    (b"ic11", 32),  # 16@2x
    (b"ic12", 64),  # 32@2x
    (b"ic07", 128),
    (b"ic13", 256),  # 128@2x
    (b"ic08", 256),
    (b"ic14", 512),  # 256@2x
    (b"ic09", 512),
    (b"ic10", 1024),  # 512@2x
)


def render_png(size: int, svg: Path = SVG) -> bytes:
    """One square PNG of ``svg`` at ``size`` pixels, transparent outside the artwork."""
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    from PySide6.QtCore import QBuffer, QByteArray, QIODevice
    from PySide6.QtGui import QGuiApplication, QImage, QPainter
    from PySide6.QtSvg import QSvgRenderer

    _app = QGuiApplication.instance() or QGuiApplication([])
    renderer = QSvgRenderer(str(svg))
    if not renderer.isValid():
        raise SystemExit(f"cannot render {svg}: not a valid SVG")
    image = QImage(size, size, QImage.Format.Format_ARGB32_Premultiplied)
    image.fill(0)
    painter = QPainter(image)
    painter.setRenderHint(QPainter.RenderHint.Antialiasing)
    painter.setRenderHint(QPainter.RenderHint.SmoothPixmapTransform)
    renderer.render(painter)
    painter.end()
    data = QByteArray()
    buffer = QBuffer(data)
    buffer.open(QIODevice.OpenModeFlag.WriteOnly)
    if not image.save(buffer, "PNG"):  # type: ignore[call-overload]  # the stub says bytes; only str works
        raise SystemExit(f"cannot encode a {size}px PNG")
    buffer.close()
    return bytes(data.data())


def ico_bytes(pngs: dict[int, bytes]) -> bytes:
    """An ICO file whose images are PNGs (a width or height of 0 means 256)."""
    sizes = sorted(pngs)
    header = struct.pack("<HHH", 0, 1, len(sizes))
    offset = len(header) + 16 * len(sizes)
    entries, payload = b"", b""
    for size in sizes:
        data = pngs[size]
        dim = 0 if size >= 256 else size
        entries += struct.pack("<BBBBHHII", dim, dim, 0, 0, 1, 32, len(data), offset + len(payload))
        payload += data
    return header + entries + payload


def icns_bytes(pngs: dict[int, bytes]) -> bytes:
    """An ICNS file made of PNG elements (what ``iconutil`` writes)."""
    body = b"".join(kind + struct.pack(">I", 8 + len(pngs[size])) + pngs[size] for kind, size in ICNS_TYPES)
    return b"icns" + struct.pack(">I", 8 + len(body)) + body


def write_pngs(target: Path = RESOURCES) -> list[Path]:
    written = []
    for size in PNG_SIZES:
        path = target / f"reviewer-{size}.png"
        path.write_bytes(render_png(size))
        written.append(path)
    return written


def write_platform_icons(out: Path) -> list[Path]:
    out.mkdir(parents=True, exist_ok=True)
    cache: dict[int, bytes] = {}

    def png(size: int) -> bytes:
        if size not in cache:
            cache[size] = render_png(size)
        return cache[size]

    ico = out / "reviewer.ico"
    ico.write_bytes(ico_bytes({size: png(size) for size in ICO_SIZES}))
    icns = out / "reviewer.icns"
    icns.write_bytes(icns_bytes({size: png(size) for _, size in ICNS_TYPES}))
    return [ico, icns]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--png", action="store_true", help=f"rewrite the PNGs in {RESOURCES.relative_to(REPO)}")
    parser.add_argument("--out", type=Path, help="write reviewer.ico and reviewer.icns into this directory")
    args = parser.parse_args(argv)
    if not args.png and args.out is None:
        parser.error("nothing to do: give --png and/or --out DIR")
    written: list[Path] = []
    if args.png:
        written += write_pngs()
    if args.out is not None:
        written += write_platform_icons(args.out)
    for path in written:
        print(f"wrote {path} ({path.stat().st_size} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
