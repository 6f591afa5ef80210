"""Render the PNG icons from the SVG sources in resources/icons/ (Qt's QSvgRenderer, offscreen):

    .venv/bin/python scripts/icons.py          # (re)write every PNG
    .venv/bin/python scripts/icons.py --check  # exit 1 if one is missing or the wrong size

Writes
* resources/icons/png/exotray-<n>.png for the app icon at every size in APP_SIZES
  (the macOS .icns and the Linux bundle are made from these);
* resources/icons/png/tray-<state>[-template]-<n>.png for every tray icon at TRAY_SIZES,
  and, for the macOS template (mask) icons, tray-<state>-template-<n>@2x.png at twice
  16 and 22 px, the names Qt and AppKit look for on Retina menu bars;
* packaging/linux/icons/hicolor/<n>x<n>/apps/exotray.png at HICOLOR_SIZES and
  scalable/apps/exotray.svg, the freedesktop icon theme layout (Icon=exotray).

The SVGs are the sources: edit those, then run this script and commit its output.
"""

from __future__ import annotations

import argparse
import os
import shutil
import struct
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SVG_DIR = ROOT / "resources" / "icons"
PNG_DIR = SVG_DIR / "png"
HICOLOR = ROOT / "packaging" / "linux" / "icons" / "hicolor"

APP = "exotray"
APP_SIZES = (16, 22, 24, 32, 48, 64, 128, 256, 512, 1024)
HICOLOR_SIZES = (16, 22, 24, 32, 48, 64, 128, 256, 512)
TRAY_STATES = ("ok", "alone", "warning", "alert", "offline")
TRAY_SIZES = (16, 22, 32, 44)
RETINA_SIZES = (16, 22)  # template icons also get <n>@2x.png, rendered at 2n px


def outputs() -> dict[Path, tuple[Path, int]]:
    """{output file: (source file, pixel size)} for everything this script writes."""
    out: dict[Path, tuple[Path, int]] = {}
    app_svg = SVG_DIR / f"{APP}.svg"
    for n in APP_SIZES:
        out[PNG_DIR / f"{APP}-{n}.png"] = (app_svg, n)
    for state in TRAY_STATES:
        for template in (False, True):
            stem = f"tray-{state}{'-template' if template else ''}"
            svg = SVG_DIR / f"{stem}.svg"
            for n in TRAY_SIZES:
                out[PNG_DIR / f"{stem}-{n}.png"] = (svg, n)
            if template:
                for n in RETINA_SIZES:
                    out[PNG_DIR / f"{stem}-{n}@2x.png"] = (svg, 2 * n)
    for n in HICOLOR_SIZES:
        out[HICOLOR / f"{n}x{n}" / "apps" / f"{APP}.png"] = (app_svg, n)
    out[HICOLOR / "scalable" / "apps" / f"{APP}.svg"] = (app_svg, 0)  # a copy
    return out


def png_size(path: Path) -> tuple[int, int]:
    """(width, height) from a PNG's IHDR chunk, without Qt."""
    head = path.read_bytes()[:24]
    if head[:8] != b"\x89PNG\r\n\x1a\n" or head[12:16] != b"IHDR":
        raise ValueError(f"{path} is not a PNG")
    return struct.unpack(">II", head[16:24])


def render(svg: Path, size: int, dest: Path) -> None:
    from PySide6.QtCore import Qt
    from PySide6.QtGui import QImage, QPainter
    from PySide6.QtSvg import QSvgRenderer

    renderer = QSvgRenderer(str(svg))
    if not renderer.isValid():
        raise SystemExit(f"icons: cannot render {svg}")
    image = QImage(size, size, QImage.Format.Format_ARGB32_Premultiplied)
    image.fill(Qt.GlobalColor.transparent)
    painter = QPainter(image)
    painter.setRenderHint(QPainter.RenderHint.Antialiasing)
    painter.setRenderHint(QPainter.RenderHint.SmoothPixmapTransform)
    renderer.render(painter)
    painter.end()
    dest.parent.mkdir(parents=True, exist_ok=True)
    # quality 0: zlib's strongest compression, which keeps the committed files small.
    if not image.convertToFormat(QImage.Format.Format_ARGB32).save(str(dest), "PNG", 0):
        raise SystemExit(f"icons: cannot write {dest}")


def generate() -> list[Path]:
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    from PySide6.QtGui import QGuiApplication

    app = QGuiApplication.instance() or QGuiApplication(sys.argv[:1])  # noqa: F841
    written = []
    for dest, (src, size) in outputs().items():
        if size == 0:
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(src, dest)
        else:
            render(src, size, dest)
        written.append(dest)
    return written


def check() -> list[str]:
    """Problems with the generated files (missing, not a PNG, wrong size, stale copy)."""
    problems = []
    for dest, (src, size) in outputs().items():
        rel = dest.relative_to(ROOT)
        if not dest.exists():
            problems.append(f"{rel}: missing")
        elif size == 0:
            if dest.read_bytes() != src.read_bytes():
                problems.append(f"{rel}: differs from {src.relative_to(ROOT)}")
        else:
            try:
                got = png_size(dest)
            except ValueError as e:
                problems.append(str(e))
                continue
            if got != (size, size):
                problems.append(f"{rel}: {got[0]}x{got[1]}, expected {size}x{size}")
    return problems


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true",
                    help="only check that every output exists and has the right size")
    args = ap.parse_args(argv)
    if args.check:
        problems = check()
        for p in problems:
            print(f"icons: {p}", file=sys.stderr)
        if problems:
            print("icons: run scripts/icons.py to regenerate", file=sys.stderr)
        return 1 if problems else 0
    written = generate()
    total = sum(p.stat().st_size for p in written)
    print(f"icons: wrote {len(written)} files, {total / 1024:.0f} KiB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
