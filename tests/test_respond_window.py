"""Answer as the tool in the Approve dialog (issue 42): "Answer as the tool…" is offered only
where the store's view lists respond; the panel shows the tool's result schema; a result that
does not fit is the store's refusal, shown; one that fits is recorded as answered by the
reviewer, never run. On a signed store as `boris init` makes it, on both engines."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import pytest
from PySide6.QtCore import Qt
from test_desktop_actions import WAIT_MS, armed, done, open_window, store_for_window
from test_respond import WEATHER_SCHEMA, Signed

from store import Store
from store.services.respond import answered_result


@pytest.fixture(autouse=True)
def _reviewer(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BORIS_DESKTOP_SETTINGS", str(tmp_path / "settings.ini"))
    from boris_desktop import settings

    settings.set_reviewer("Rita Reviewer", "rita")


@pytest.fixture
def signed(store: Store, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Signed:
    return Signed(store, tmp_path, capsys)


@pytest.fixture
def window_store(signed: Signed, tmp_path: Path) -> Iterator[Store]:
    """The store as the window opens it (the reviewer signs with their own key)."""
    where = signed.store.location
    url = None if where.url.startswith("sqlite") else where.url
    with store_for_window(where.directory, url) as s:
        yield s


def _dialog(qtbot, w, tid: str, aid: str):
    from boris_desktop.decide.approve import ApproveDialog

    d = ApproveDialog(w, tid, aid)
    qtbot.addWidget(d)
    d.show()
    qtbot.waitUntil(lambda: d.decision is not None, timeout=WAIT_MS)
    return d


def test_answer_as_the_tool_from_the_approve_dialog(qtbot, signed: Signed, window_store) -> None:
    tid = signed.task("t1")
    plain = signed.ask(tid, "deploy", {"env": "prod"})
    aid = signed.ask(tid, "weather", {"city": "Oslo", "result_schema": WEATHER_SCHEMA})
    w = open_window(qtbot, window_store, tid)

    not_offered = _dialog(qtbot, w, tid, plain)
    armed(qtbot, not_offered.reject_button)
    assert not not_offered.respond_button.isEnabled()
    not_offered.close()

    d = _dialog(qtbot, w, tid, aid)
    armed(qtbot, d.respond_button)
    qtbot.mouseClick(d.respond_button, Qt.MouseButton.LeftButton)
    assert d.respond_panel.isVisible()
    assert '"temperature_c"' in d.respond_panel.schema.toPlainText()
    armed(qtbot, d.respond_panel.answer_button)

    # Does not fit the schema: the store refuses, the dialog shows why, nothing recorded.
    qtbot.keyClicks(d.respond_panel.result, '{"sky": "grey"}')
    qtbot.mouseClick(d.respond_panel.answer_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: d.error.isVisible(), timeout=WAIT_MS)
    assert "does not fit the tool's schema" in d.error.text()
    assert signed.approval(tid, aid)["state"] == "pending"

    d.close()
    d = _dialog(qtbot, w, tid, aid)
    armed(qtbot, d.respond_button)
    d.respond_button.click()
    armed(qtbot, d.respond_panel.answer_button)
    qtbot.keyClicks(d.respond_panel.result, '{"temperature_c": 4, "sky": "grey"}')
    qtbot.keyClicks(d.note, "the API is down; read off the station")
    qtbot.mouseClick(d.respond_panel.answer_button, Qt.MouseButton.LeftButton)
    done(qtbot, w, d)
    assert signed.approval(tid, aid)["state"] == "answered"
    found = answered_result(signed.store, tid, aid)
    assert found is not None and found.result == {"temperature_c": 4, "sky": "grey"}
    assert found.answered_by.id == "rita" and found.note.startswith("the API is down")
    rc, problems = signed.verify()
    assert rc == 0, problems
    w.close()
