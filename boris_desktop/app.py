"""Start-up: show the window first, then open the store on a worker and fill it in.

Only PySide6 is imported before the first paint; the store (SQLAlchemy, alembic), Pygments
and difflib load later, off the GUI thread or when first needed.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable, Sequence
from typing import Any


class _Version(argparse.Action):
    """Imports the version only when asked: `store` loads SQLAlchemy, too slow for start-up."""

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: Any,
        option_string: str | None = None,
    ) -> None:
        from store.api import __version__

        print(f"boris-desktop {__version__}")  # on stdout, like `boris --version`
        parser.exit()


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="boris-desktop", description="Review agents' tasks.")
    p.add_argument("--version", action=_Version, nargs=0, help="print the version and exit")
    p.add_argument("--store", help="store directory (default: BORIS_STORE or the user data dir)")
    p.add_argument(
        "--demo",
        action="store_true",
        help="open the demo tasks in a store of their own (the user data dir's demo-store, or "
        "--store DIR), filled with them when it has no tasks; never the default store",
    )
    p.add_argument(
        "--screenshot",
        help="render the main window, the first task needing attention selected, to this PNG and exit",
    )
    p.add_argument(
        "--tab", help="with --screenshot: show this tab of the task view (e.g. Artifacts)"
    )
    p.add_argument(
        "--size",
        default="1280x780",
        help="with --screenshot: the window's size, WIDTHxHEIGHT (default 1280x780)",
    )
    # Benchmarks: print the time of the first paint (and of the first paint with the inbox
    # filled) since the epoch, then exit.
    p.add_argument("--exit-after-paint", action="store_true", help=argparse.SUPPRESS)
    return p


def demo_directory(store: str | None = None) -> str:
    """The demo store: DIR when given, else demo-store in the user data dir. Never the default
    store (BORIS_STORE or the user data dir itself), which holds the user's own tasks."""
    from store.api import default_directory, resolve

    directory = resolve(store).directory if store else default_directory() / "demo-store"
    if directory == resolve(None).directory:
        raise ValueError(f"{directory} is the default store: --demo needs a store of its own")
    return str(directory)


def _tab_index(tab: str) -> int | None:
    """The task view's tab whose title starts with `tab` (any case)."""
    from boris_desktop.task.view import PANELS

    titles = [cls.title.lower() for cls in PANELS]
    return next((i for i, x in enumerate(titles) if x.startswith(tab.lower())), None)


def _warm_lexing() -> None:
    import threading

    from boris_desktop.runtime.lexing import warm

    threading.Thread(target=warm, name="warm-lexing", daemon=True).start()


#: What `boris-desktop` says, on one line, where PySide6 is not installed: an agent's machine
#: installs only the record (`pip install .`); the window is the `desktop` extra.
NO_QT = (
    "boris-desktop: the window needs Qt (PySide6), which is not installed here: run "
    "pip install '.[desktop]' in the Boris checkout (or bash packaging/setup.sh)"
)


def _qt_missing() -> bool:
    """True when PySide6 (or its shiboken6) is not installed. Only the package is imported,
    not QtCore: a Qt that is there but cannot load a system library fails later, in its own
    words (packaging/entry_desktop.py turns that into a line of its own)."""
    try:
        import PySide6  # noqa: F401
    except ModuleNotFoundError as exc:
        if exc.name in ("PySide6", "shiboken6"):
            return True
        raise
    return False


def main(argv: Sequence[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)  # --help and --version need no Qt
    if _qt_missing():
        print(NO_QT, file=sys.stderr)
        return 2
    if args.tab is not None:
        if not args.screenshot:
            parser.error("--tab goes with --screenshot")
        if _tab_index(args.tab) is None:
            from boris_desktop.task.view import PANELS

            names = ", ".join(cls.title for cls in PANELS)
            parser.error(f"no tab {args.tab!r}; the tabs are: {names}")
    if args.demo:
        try:
            args.store = demo_directory(args.store)
        except ValueError as exc:
            parser.error(str(exc))
        # The demo store is SQLite in its own directory, never a team database named by URL.
        os.environ.pop("BORIS_STORE_URL", None)
    has_display = os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY")
    if args.screenshot:
        os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    elif not has_display and not os.environ.get("QT_QPA_PLATFORM"):
        print(
            "boris-desktop: no display found. Run headless with:\n"
            "  QT_QPA_PLATFORM=offscreen boris-desktop --demo --screenshot out.png",
            file=sys.stderr,
        )
        return 2
    from PySide6.QtWidgets import QApplication

    from boris_desktop.runtime.interpreter import share_the_gil

    share_the_gil()
    app = QApplication.instance() or QApplication(sys.argv[:1])
    app.setApplicationName("Boris Desktop")
    # Matches packaging/…/org.boris.BorisDesktop.desktop, so the shell pairs window and icon.
    QApplication.setDesktopFileName("org.boris.BorisDesktop")  # static: the running app
    if args.screenshot:
        try:
            width, height = (int(x) for x in args.size.lower().split("x"))
        except ValueError:
            print(f"boris-desktop: --size wants WIDTHxHEIGHT, not {args.size}", file=sys.stderr)
            return 2
        return _screenshot(args.store, args.screenshot, args.tab, (width, height), demo=args.demo)
    from boris_desktop.main_window import MainWindow

    window = MainWindow(staged=True)  # the rest is built right after the first paint
    window.fit_to_screen()  # the screen's available room, or where the reviewer left it
    if args.exit_after_paint:
        _exit_after_paint(app, window)
    window.show()
    window.open_store(args.store)
    if args.demo:
        window.demo_store = True  # new: made as `boris init` would, then filled
        window.store_opened.connect(_fill_demo_once(window))
    if not args.exit_after_paint:
        window.store_opened.connect(_ask_reviewer_once(window))
    from boris_desktop.runtime.interpreter import freeze_startup

    # Once the first task is on screen, start-up's objects are there for good: see runtime.
    window.loaded.connect(freeze_startup)
    # The lexing process starts while the reviewer reads the inbox, not at the first preview.
    window.loaded.connect(_warm_lexing)
    from boris_desktop.runtime.terminate import quit_on_terminate

    quit_on_terminate(app)  # `kill PID` closes the window and what it started
    rc = app.exec()
    from PySide6.QtCore import QThreadPool

    QThreadPool.globalInstance().waitForDone(5000)
    if window.store is not None:
        window.store.close()
    return int(rc)


def _ask_reviewer_once(window: Any) -> Any:
    def ask() -> None:
        from boris_desktop import settings

        if settings.reviewer() is None and not getattr(window, "_asked", False):
            window._asked = True
            window.ask_reviewer()

    return ask


def _fill_demo_once(window: Any) -> Callable[[], None]:
    """Fill the demo store when it has no tasks (just created), once, on the window's worker."""

    def fill() -> None:
        if window.store is not None and not getattr(window, "_demo_asked", False):
            window._demo_asked = True
            if not window.store.task_ids():
                window.load_demo()

    return fill


def _demo_person() -> Any:
    """Who makes a new demo store for a screenshot: the reviewer, else (as `boris init`)
    the person logged in."""
    import getpass

    from boris_desktop import settings
    from store.api import Actor

    who = settings.reviewer()
    if who is not None:
        return Actor(kind="person", id=who[1], name=who[0])
    try:
        return Actor(kind="person", id=getpass.getuser())
    except (OSError, KeyError, ImportError):
        return None  # nobody to name: the store says what to do


def _screenshot(
    directory: str | None,
    png: str,
    tab: str | None,
    size: tuple[int, int] = (1280, 780),
    *,
    demo: bool = False,
) -> int:
    import tempfile

    from PySide6.QtWidgets import QApplication

    from boris_desktop.main_window import MainWindow
    from store.api import Store, StoreError

    try:
        store = Store.open(directory)
        # Only the demo store is filled: an empty store of the user's stays empty. A new one
        # is made as `boris init` would make it, signed (the reviewer's key, else the login's).
        if demo and not store.task_ids():
            from store.api import fill_demo_store

            fill_demo_store(store, _demo_person())
    except StoreError as exc:
        print(f"boris-desktop: {exc}", file=sys.stderr)
        return 1
    # The default layout, not the reviewer's saved one (nor saved over it on close).
    settings_dir = None
    if not os.environ.get("BORIS_DESKTOP_SETTINGS"):
        settings_dir = tempfile.TemporaryDirectory()
        os.environ["BORIS_DESKTOP_SETTINGS"] = os.path.join(settings_dir.name, "s.ini")
    window = MainWindow(store)
    window.resize(*size)
    window.reload_now()
    if tab:
        index = _tab_index(tab)
        assert index is not None  # checked in main()
        window.task_view.tabs.setCurrentIndex(index)
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
    if settings_dir is not None:
        del os.environ["BORIS_DESKTOP_SETTINGS"]
        settings_dir.cleanup()
    return 0 if ok else 1


def _exit_after_paint(app: Any, window: Any) -> None:
    from PySide6.QtCore import QEvent, QObject, QTimer

    class Watch(QObject):
        first = True

        def eventFilter(self, obj: QObject, event: QEvent) -> bool:
            if event.type() == QEvent.Type.Paint and self.first:
                self.first = False
                print(f"first_paint {time.time():.6f}", flush=True)
            return False

    watch = Watch(window)
    # The window's first paint, as the benchmark's empty QMainWindow reports its own: the
    # same pass paints the inbox's header and rows.
    window.installEventFilter(watch)

    printed: set[str] = set()

    def painted(mark: str, then: Any = None) -> Any:
        """Once the inbox has rows: repaint, then print `mark` with the time."""

        def check() -> None:
            if window.inbox.rowCount() and mark not in printed:
                printed.add(mark)
                QTimer.singleShot(0, lambda: window.repaint())
                QTimer.singleShot(
                    0, lambda: (print(f"{mark} {time.time():.6f}", flush=True), then and then())
                )

        return check

    # The tasks listed (by the first look, store.reads.peek, or by the store if it came
    # first), then the inbox as the open store lists it.
    window.peeked.connect(painted("tasks_paint"))
    window.loaded.connect(painted("tasks_paint"))
    window.loaded.connect(painted("inbox_paint", app.quit))
