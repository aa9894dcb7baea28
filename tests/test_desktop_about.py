"""Help › About and `--version`: one source of the version, shown as plain text."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from store import Store
from store.version import __version__


def test_about_names_the_version_and_the_open_store(
    qtbot, store: Store, tmp_path: Path, monkeypatch
) -> None:
    monkeypatch.setenv("BORIS_DESKTOP_SETTINGS", str(tmp_path / "settings.ini"))
    from PySide6.QtCore import Qt

    from boris_desktop.main_window import MainWindow

    w = MainWindow(store)
    qtbot.addWidget(w)
    w.show()
    help_menu = next(a.menu() for a in w.menuBar().actions() if a.text() == "&Help")
    (about,) = [a for a in help_menu.actions() if "About" in a.text()]
    about.trigger()
    box = w._about
    assert box.isVisible() and box.textFormat() == Qt.TextFormat.PlainText
    assert f"Boris Desktop {__version__}" in box.text()
    assert str(store.location.directory) in box.text()
    box.close()


def test_version_on_stdout_from_one_source() -> None:
    for argv in (["-m", "boris_desktop", "--version"], ["-m", "store.cli", "--version"]):
        out = subprocess.run(
            [sys.executable, *argv], capture_output=True, text=True, check=True, timeout=60
        )
        assert out.stdout.strip().endswith(__version__), (argv, out)
