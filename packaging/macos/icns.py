"""Make exotray.icns from the PNGs that scripts/icons.py renders (Pillow; runs anywhere).

Every size the .icns holds comes from its own rendering of the SVG, not from scaling one
bitmap. Used by packaging/macos/exotray.spec; `python packaging/macos/icns.py OUT.icns`.
"""

from __future__ import annotations

import sys
from pathlib import Path

PNG_DIR = Path(__file__).resolve().parent.parent.parent / "resources" / "icons" / "png"
SIZES = (16, 32, 64, 128, 256, 512, 1024)  # what Pillow's ICNS writer stores


def make_icns(dest: Path, png_dir: Path = PNG_DIR) -> Path:
    try:
        from PIL import Image
    except ImportError:
        raise SystemExit("making exotray.icns needs Pillow: pip install pillow") from None
    missing = [n for n in SIZES if not (png_dir / f"exotray-{n}.png").exists()]
    if missing:
        raise SystemExit(f"no exotray-<n>.png for n in {missing} in {png_dir}: "
                         "run scripts/icons.py")
    images = [Image.open(png_dir / f"exotray-{n}.png").convert("RGBA") for n in SIZES]
    dest.parent.mkdir(parents=True, exist_ok=True)
    images[-1].save(dest, format="ICNS", append_images=images[:-1])
    return dest


if __name__ == "__main__":
    print(make_icns(Path(sys.argv[1] if len(sys.argv) > 1 else "exotray.icns")))
