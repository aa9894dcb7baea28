"""boris-desktop's command line: the demo store is a store of its own, the user's default store
is never filled by surprise, and a wrong --tab names the tabs."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import pytest
from test_desktop_actions import WAIT_MS

from store import Store
from store.services.demo import fill_demo

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(autouse=True)
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A user of their own: data and settings under tmp, no BORIS_STORE, no store URL."""
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    monkeypatch.setenv("BORIS_DESKTOP_SETTINGS", str(tmp_path / "settings.ini"))
    monkeypatch.delenv("BORIS_STORE", raising=False)
    monkeypatch.delenv("BORIS_STORE_URL", raising=False)
    return tmp_path


def _task_ids(directory: Path) -> list[str]:
    store = Store.open(directory, create=False)
    try:
        return store.task_ids()
    finally:
        store.close()


def _demo_ids(tmp_path: Path) -> set[str]:
    reference = Store.open(tmp_path / "reference")
    try:
        return set(fill_demo(reference))
    finally:
        reference.close()


def test_screenshot_leaves_an_empty_default_store_empty(home: Path, qapp) -> None:  # type: ignore[no-untyped-def]
    from boris_desktop.app import main

    default = home / "data" / "boris"
    Store.open(default).close()  # the user's own store, empty
    png = home / "shot.png"
    assert main(["--screenshot", str(png)]) == 0
    assert png.stat().st_size > 1000
    assert _task_ids(default) == []


def test_screenshot_leaves_an_empty_named_store_empty(home: Path, qapp) -> None:  # type: ignore[no-untyped-def]
    from boris_desktop.app import main

    assert main(["--store", str(home / "mine"), "--screenshot", str(home / "shot.png")]) == 0
    assert _task_ids(home / "mine") == []


def test_demo_screenshot_fills_the_demo_store_not_the_default(
    home: Path, qapp, monkeypatch
) -> None:  # type: ignore[no-untyped-def]
    from boris_desktop.app import main

    own = home / "own"
    monkeypatch.setenv("BORIS_STORE", str(own))
    Store.open(own).close()
    assert main(["--demo", "--screenshot", str(home / "shot.png"), "--tab", "Effects"]) == 0
    demo = home / "data" / "boris" / "demo-store"
    assert set(_task_ids(demo)) == _demo_ids(home)
    assert _task_ids(own) == []
    assert not (home / "data" / "boris" / "boris.sqlite").exists()
    # Again: the demo store is reused as it is, not filled a second time.
    assert main(["--demo", "--screenshot", str(home / "shot2.png")]) == 0
    assert len(_task_ids(demo)) == len(_demo_ids(home))


def test_demo_with_a_store_fills_that_store(home: Path, qapp) -> None:  # type: ignore[no-untyped-def]
    from boris_desktop.app import main

    assert main(["--demo", "--store", str(home / "d"), "--screenshot", str(home / "s.png")]) == 0
    assert set(_task_ids(home / "d")) == _demo_ids(home)
    assert not (home / "data" / "boris").exists()


def test_demo_refuses_the_default_store(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from boris_desktop.app import main

    default = home / "data" / "boris"
    with pytest.raises(SystemExit) as exit_:
        main(["--demo", "--store", str(default), "--screenshot", str(home / "s.png")])
    assert exit_.value.code != 0
    assert "is the default store" in capsys.readouterr().err
    assert not (default / "boris.sqlite").exists()


def test_demo_ignores_a_team_store_url(home: Path, qapp, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    from boris_desktop.app import main

    team = home / "team.sqlite"
    monkeypatch.setenv("BORIS_STORE_URL", f"sqlite+pysqlite:///{team}")
    assert main(["--demo", "--screenshot", str(home / "s.png")]) == 0
    assert not team.exists()
    assert (home / "data" / "boris" / "demo-store" / "boris.sqlite").exists()


def _signed_by(directory: Path) -> tuple[bool, list[str]]:
    """Whether the store requires signatures, and the actors its keyring names."""
    from store.signing import keyring

    store = Store.open(directory, create=False)
    try:
        with store.read() as conn:
            ring = keyring.rows(conn)
            return keyring.required(conn), [f"{r['actor_kind']}:{r['actor_id']}" for r in ring]
    finally:
        store.close()


def test_the_demo_screenshot_makes_a_signed_demo_store(home: Path, qapp) -> None:  # type: ignore[no-untyped-def]
    """As `boris init` would make it: signatures required, the reviewer's key its root, the
    demo's actors' keys beside it (issue 39)."""
    from boris_desktop import settings
    from boris_desktop.app import main

    settings.set_reviewer("Rita Reviewer", "rita")
    assert main(["--demo", "--store", str(home / "d"), "--screenshot", str(home / "s.png")]) == 0
    required, actors = _signed_by(home / "d")
    assert required and actors[0] == "person:rita"
    assert set(actors) == {"person:rita", "agent:drafter-7", "agent:drafter-7b", "person:maria"}
    assert (home / "d" / "demo-workspace" / "keys" / "agent-drafter-7.pem").is_file()


def test_the_demo_window_asks_who_reviews_then_makes_a_signed_demo_store(home: Path, qtbot) -> None:  # type: ignore[no-untyped-def]
    from boris_desktop.app import _ask_reviewer_once, _fill_demo_once
    from boris_desktop.main_window import MainWindow

    store = Store.open(home / "demo")
    window = MainWindow(store)
    window.demo_store = True  # as `boris-desktop --demo` makes it
    qtbot.addWidget(window)
    _fill_demo_once(window)()
    _ask_reviewer_once(window)()  # start-up asks too: the same dialog
    dlg = window._reviewer_dialog
    qtbot.waitUntil(dlg.isVisible, timeout=WAIT_MS)
    assert store.task_ids() == [] and not window.loader.busy("demo")
    dlg.name.setText("Rita Reviewer")
    dlg.reviewer_id.setText("rita")
    dlg.accept()
    qtbot.waitUntil(lambda: window.inbox.rowCount() == len(_demo_ids(home)), timeout=20000)
    assert store.is_signed()
    # The window no longer says the demo store is unsigned.
    window.show_task("guide")
    header = window.task_view.header
    qtbot.waitUntil(lambda: header.signatures.text().startswith("required · "), timeout=20000)
    assert "the last by Drafting agent (resumed session)" in header.signatures.text()
    assert not header.unsigned.isVisible()
    window.close()
    store.close()
    required, actors = _signed_by(home / "demo")
    assert required and actors[0] == "person:rita"


def test_the_window_fills_the_demo_store_once(home: Path, qtbot) -> None:  # type: ignore[no-untyped-def]
    from boris_desktop import settings
    from boris_desktop.app import _fill_demo_once
    from boris_desktop.main_window import MainWindow

    settings.set_reviewer("Rita Reviewer", "rita")
    store = Store.open(home / "demo")
    window = MainWindow(store)
    window.demo_store = True
    qtbot.addWidget(window)
    fill = _fill_demo_once(window)
    fill()
    qtbot.waitUntil(lambda: len(store.task_ids()) == len(_demo_ids(home)), timeout=WAIT_MS)
    qtbot.waitUntil(lambda: window.inbox.rowCount() == len(_demo_ids(home)), timeout=WAIT_MS)
    fill()  # a second store_opened (File › Open) does not fill again
    qtbot.wait(200)
    assert not window.loader.busy("demo")
    assert len(store.task_ids()) == len(_demo_ids(home))
    window.close()
    store.close()


def test_a_tab_that_does_not_exist_fails_naming_the_tabs(home: Path) -> None:
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen"}
    png = home / "shot.png"
    proc = subprocess.run(
        [sys.executable, "-m", "boris_desktop", "--screenshot", str(png), "--tab", "NoSuchTab"],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        timeout=60,
        check=False,
    )
    assert proc.returncode != 0
    assert "'NoSuchTab'" in proc.stderr
    from boris_desktop.task.view import PANELS

    for cls in PANELS:
        assert cls.title in proc.stderr
    assert not png.exists()
    assert not (home / "data" / "boris").exists()  # nothing opened, nothing created


def test_tab_alone_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    from boris_desktop.app import main

    with pytest.raises(SystemExit) as exit_:
        main(["--tab", "Effects"])
    assert exit_.value.code != 0
    assert "--tab goes with --screenshot" in capsys.readouterr().err
