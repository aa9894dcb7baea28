"""Start-up: show the window first, then open the store on a worker and fill it in.

Only PySide6 is imported before the first paint; the store (SQLAlchemy, alembic), Pygments
and difflib load later, off the GUI thread or when first needed.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Sequence
from typing import Any


class _Version(argparse.Action):
    """Imports the version only when asked: `store` loads SQLAlchemy, too slow for start-up."""

    def __call__(self, parser, namespace, values, option_string=None):  # type: ignore[no-untyped-def]
        from store.version import __version__

        print(f"boris-desktop {__version__}")  # on stdout, like `boris --version`
        parser.exit()


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="boris-desktop", description="Review agents' tasks.")
    p.add_argument("--version", action=_Version, nargs=0, help="print the version and exit")
    p.add_argument("--store", help="store directory (default: BORIS_STORE or the user data dir)")
    p.add_argument(
        "--screenshot",
        help="render the main window, the first task needing attention selected, to this PNG and exit",
    )
    p.add_argument(
        "--tab", help="with --screenshot: show this tab of the task view (e.g. Artifacts)"
    )
    # Benchmarks: print the time of the first paint (and of the first paint with the inbox
    # filled) since the epoch, then exit.
    p.add_argument("--exit-after-paint", action="store_true", help=argparse.SUPPRESS)
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

    from .runtime import share_the_gil

    share_the_gil()
    app = QApplication.instance() or QApplication(sys.argv[:1])
    app.setApplicationName("Boris Desktop")
    # Matches packaging/…/org.boris.BorisDesktop.desktop, so the shell pairs window and icon.
    app.setDesktopFileName("org.boris.BorisDesktop")  # type: ignore[attr-defined]
    if args.screenshot:
        return _screenshot(args.store, args.screenshot, args.tab)
    from .main_window import MainWindow

    window = MainWindow(staged=True)  # the rest is built right after the first paint
    window.resize(1280, 780)
    if args.exit_after_paint:
        _exit_after_paint(app, window)
    window.show()
    window.open_store(args.store)
    if not args.exit_after_paint:
        window.store_opened.connect(_ask_reviewer_once(window))
    from .runtime import freeze_startup

    # Once the first task is on screen, start-up's objects are there for good: see runtime.
    window.loaded.connect(freeze_startup)
    rc = app.exec()
    from PySide6.QtCore import QThreadPool

    QThreadPool.globalInstance().waitForDone(5000)
    if window.store is not None:
        window.store.close()
    return int(rc)


def _ask_reviewer_once(window: Any) -> Any:
    def ask() -> None:
        from . import settings

        if settings.reviewer() is None and not getattr(window, "_asked", False):
            window._asked = True
            window.ask_reviewer()

    return ask


def _screenshot(directory: str | None, png: str, tab: str | None) -> int:
    from PySide6.QtWidgets import QApplication

    from store import Store, StoreError

    from .main_window import MainWindow

    try:
        store = Store.open(directory)
        if not store.task_ids():
            from store.demo import fill_demo

            fill_demo(store)
    except StoreError as exc:
        print(f"boris-desktop: {exc}", file=sys.stderr)
        return 1
    window = MainWindow(store)
    window.resize(1280, 780)
    window.reload_now()
    if tab:
        titles = list(window.task_view.panels)
        match = [i for i, x in enumerate(titles) if x.lower().startswith(tab.lower())]
        if match:
            window.task_view.tabs.setCurrentIndex(match[0])
    window.show()
    deadline = time.monotonic() + 3
    # Let the workers' highlighting and previews arrive (they are never waited on when live).
    while time.monotonic() < deadline:
        QApplication.processEvents()
        if not any(window.loader.busy(k) for k in list(window.loader._pending)):
            QApplication.processEvents()
            break
        time.sleep(0.01)
    ok = window.grab().save(png)
    window.close()
    from PySide6.QtCore import QThreadPool

    QThreadPool.globalInstance().waitForDone(5000)
    store.close()
    return 0 if ok else 1


def _exit_after_paint(app, window) -> None:  # type: ignore[no-untyped-def]
    from PySide6.QtCore import QEvent, QObject, QTimer

    class Watch(QObject):
        first = True

        def eventFilter(self, obj, event):  # type: ignore[no-untyped-def]
            if event.type() == QEvent.Type.Paint and self.first:
                self.first = False
                print(f"first_paint {time.time():.6f}", flush=True)
            return False

    watch = Watch(window)
    # The window's first paint, as the benchmark's empty QMainWindow reports its own: the
    # same pass paints the inbox's header and rows.
    window.installEventFilter(watch)

    def filled() -> None:
        if window.inbox.rowCount():
            QTimer.singleShot(0, lambda: window.repaint())
            QTimer.singleShot(
                0, lambda: (print(f"inbox_paint {time.time():.6f}", flush=True), app.quit())
            )

    window.loaded.connect(filled)
