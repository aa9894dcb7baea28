"""Render the application icon's PNG sizes from its SVG, offscreen (no display needed).

    .venv/bin/python packaging/render-icons.py          # writes resources/app/boris-desktop-N.png
    .venv/bin/python packaging/render-icons.py --check  # exit 1 if a PNG is missing or stale

The PNGs are committed; run this again after changing resources/app/boris-desktop.svg.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

APP = Path(__file__).resolve().parent.parent / "resources" / "app"
SVG = APP / "boris-desktop.svg"
SIZES = (16, 32, 48, 64, 128, 256, 512)


def png_path(size: int) -> Path:
    return APP / f"boris-desktop-{size}.png"


def render(size: int):  # type: ignore[no-untyped-def]
    from PySide6.QtCore import Qt
    from PySide6.QtGui import QImage, QPainter
    from PySide6.QtSvg import QSvgRenderer

    renderer = QSvgRenderer(str(SVG))
    if not renderer.isValid():
        raise SystemExit(f"render-icons: cannot read {SVG}")
    image = QImage(size, size, QImage.Format.Format_ARGB32)
    image.fill(Qt.GlobalColor.transparent)
    painter = QPainter(image)
    painter.setRenderHint(QPainter.RenderHint.Antialiasing)
    renderer.render(painter)
    painter.end()
    return image


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--check", action="store_true", help="only check the PNGs are current")
    args = p.parse_args()
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    from PySide6.QtGui import QGuiApplication, QImage

    app = QGuiApplication.instance() or QGuiApplication(sys.argv[:1])  # noqa: F841
    stale = []
    for size in SIZES:
        image = render(size)
        path = png_path(size)
        if args.check:
            old = QImage(str(path))
            if old.isNull() or old.convertToFormat(image.format()) != image:
                stale.append(path.name)
            continue
        if not image.save(str(path), "PNG"):
            raise SystemExit(f"render-icons: cannot write {path}")
        print(f"{path.relative_to(APP.parent.parent)}  {size}x{size}  {path.stat().st_size} B")
    if stale:
        print(f"render-icons: stale or missing: {', '.join(stale)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
