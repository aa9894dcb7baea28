"""Start-up: pick the store, fill it with the demo when empty, show or render the window."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

from store.version import __version__


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="boris-desktop", description="Review agents' tasks.")
    p.add_argument("--version", action="version", version=f"boris-desktop {__version__}")
    p.add_argument("--store", help="store directory (default: BORIS_STORE or the user data dir)")
    p.add_argument("--screenshot", help="render the main window to this PNG and exit")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    has_display = os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY")
    if args.screenshot:
        os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    elif not has_display and not os.environ.get("QT_QPA_PLATFORM"):
        print(
            "boris-desktop: no display found. Run headless with:\n"
            "  QT_QPA_PLATFORM=offscreen boris-desktop --screenshot out.png",
            file=sys.stderr,
        )
        return 2
    from PySide6.QtWidgets import QApplication

    from store import Store, StoreError

    from .main_window import MainWindow

    app = QApplication.instance() or QApplication(sys.argv[:1])
    try:
        store = Store.open(args.store)
        if not store.task_ids():
            from store.demo import fill_demo

            fill_demo(store)
    except StoreError as exc:
        print(f"boris-desktop: {exc}", file=sys.stderr)
        return 1
    window = MainWindow(store)
    window.resize(1200, 720)
    window.reload_now()
    if args.screenshot:
        window.show()
        app.processEvents()
        ok = window.grab().save(args.screenshot)
        window.close()
        store.close()
        return 0 if ok else 1
    window.show()
    rc = app.exec()
    store.close()
    return int(rc)
