"""Notifications: a decision arriving from another process, a burst, an expiry, off and quiet.

The notification service is faked at Qt's boundary: `QSystemTrayIcon.showMessage` records
what would have been shown, `isSystemTrayAvailable` says a tray exists. The notifier and the
queue it listens to are the real ones.
"""

from __future__ import annotations

import os
from datetime import datetime, time, timedelta
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import pytest
from PySide6.QtWidgets import QSystemTrayIcon
from test_desktop_actions import open_window

from store import Actor, Store
from store.commands import approvals as ap
from store.services.demo import fill_demo

AGENT = Actor(kind="agent", id="drafter-7")
# The offscreen platform has no tray and cannot raise a window; with the tray faked as
# present, Qt says so. Those two messages are the platform's, not the app's.
pytestmark = pytest.mark.qt_log_ignore(
    "No such signal QPlatformNativeInterface::systemTrayWindowChanged",
    "This plugin does not support raise",
    extend=True,
)


@pytest.fixture(autouse=True)
def _reviewer(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("BORIS_DESKTOP_SETTINGS", str(tmp_path / "settings.ini"))
    from boris_desktop import settings

    settings.set_reviewer("Rita Reviewer", "rita")


@pytest.fixture
def shown(monkeypatch) -> list[tuple[str, str]]:
    """What the desktop's notification service was asked to show."""
    calls: list[tuple[str, str]] = []

    def show_message(self, title, body, *args) -> None:
        calls.append((title, body))

    monkeypatch.setattr(QSystemTrayIcon, "showMessage", show_message)
    monkeypatch.setattr(QSystemTrayIcon, "isSystemTrayAvailable", staticmethod(lambda: True))
    return calls


def _request(store: Store, n: int, expires_in: int = 3600) -> str:
    aid = f"apr-burst-{n}"
    store.execute(
        ap.RequestApproval(
            task_id="note", approval_id=aid, payload={"kind": "send", "n": n},
            consequence=f"send message {n}", policy="test", expires_in_seconds=expires_in,
        ),
        AGENT,
    )  # fmt: skip
    return aid


def _from_another_process(store: Store, *ns: int, expires_in: int = 3600) -> list[str]:
    other = Store.open(store.location.directory)
    try:
        return [_request(other, n, expires_in) for n in ns]
    finally:
        other.close()


def _window(qtbot, store: Store):
    fill_demo(store)
    w = open_window(qtbot, store)
    qtbot.waitUntil(lambda: w.queue.loaded, timeout=5000)
    return w


def _quiet(qtbot, ms: int = 2600) -> None:
    """Longer than a burst's window: whatever was gathered has been told."""
    qtbot.wait(ms)


def test_a_decision_from_another_process_appears_and_is_told_once(qtbot, store, shown):
    w = _window(qtbot, store)
    q = w.queue
    assert w.notifier.tray.isVisible()  # a tray exists: its icon is there
    _quiet(qtbot)
    assert shown == []  # the decisions present at first load are not news
    before = len(q.model.rows)
    (aid,) = _from_another_process(store, 1)
    qtbot.waitUntil(lambda: len(q.model.rows) == before + 1, timeout=1000)
    qtbot.waitUntil(lambda: len(shown) == 1, timeout=4000)
    title, body = shown[0]
    assert title == "1 new decision"
    assert "send message 1" in body and "Save the weekly project note" in body
    assert f"{before + 1} open decisions" in w.notifier.tray.toolTip()
    _quiet(qtbot)
    assert len(shown) == 1
    # Clicking it opens that decision's own dialog.
    w.notifier.tray.messageClicked.emit()
    qtbot.waitUntil(lambda: q.dialog is not None and q.dialog.isVisible(), timeout=5000)
    assert q.dialog.approval_id == aid
    assert w.views.currentWidget() is q
    q.dialog.reject()


def test_a_burst_of_twenty_is_one_notification_with_a_count(qtbot, store, shown):
    w = _window(qtbot, store)
    before = len(w.queue.model.rows)
    _from_another_process(store, *range(20))
    qtbot.waitUntil(lambda: len(w.queue.model.rows) == before + 20, timeout=5000)
    qtbot.waitUntil(lambda: len(shown) == 1, timeout=5000)
    title, body = shown[0]
    assert title == "20 new decisions"
    assert "and 17 more in the decision queue" in body
    _quiet(qtbot)
    assert len(shown) == 1
    # Clicking a notification of several opens the queue, no dialog.
    w.views.setCurrentWidget(w.left)
    w.notifier.tray.messageClicked.emit()
    assert w.views.currentWidget() is w.queue
    assert w.queue.dialog is None


def test_an_approval_about_to_expire_is_told_once(qtbot, store, shown):
    from boris_desktop import settings

    settings.set_notifications(enabled=True, expiry_warning_minutes=15)
    _window(qtbot, store)
    _quiet(qtbot)
    assert shown == []  # the demo's request expires in hours
    # Arrives 10 minutes before it expires: one notification says both.
    _from_another_process(store, 1, expires_in=600)
    qtbot.waitUntil(lambda: len(shown) == 1, timeout=5000)
    assert shown[0][0] == "1 new decision, 1 approval expires soon"
    assert "expires in" in shown[0][1]
    assert shown[0][1].count("send message 1") == 1
    # Later reads (another write) do not warn again.
    _from_another_process(store, 2, expires_in=7200)
    qtbot.waitUntil(lambda: len(shown) == 2, timeout=5000)
    assert shown[1][0] == "1 new decision"
    _quiet(qtbot)
    assert len(shown) == 2


def test_an_approval_entering_the_warning_time_is_told_when_it_does(qtbot, store, shown):
    from boris_desktop import settings

    settings.set_notifications(enabled=True, expiry_warning_minutes=1)
    w = _window(qtbot, store)
    # 66 s to go: nothing is written when it comes within a minute of expiring; the notifier's
    # own timer tells it.
    _from_another_process(store, 1, expires_in=66)
    qtbot.waitUntil(lambda: len(shown) == 1, timeout=5000)
    assert shown[0][0] == "1 new decision"
    assert "expires" not in shown[0][1]
    qtbot.waitUntil(lambda: len(shown) == 2, timeout=10000)
    assert shown[1][0] == "1 approval expires soon"
    _quiet(qtbot)
    assert len(shown) == 2
    w.close()


def test_off_tells_nothing(qtbot, store, shown):
    from boris_desktop import settings

    settings.set_notifications(enabled=False)
    w = _window(qtbot, store)
    before = len(w.queue.model.rows)
    _from_another_process(store, 1, expires_in=300)
    qtbot.waitUntil(lambda: len(w.queue.model.rows) == before + 1, timeout=1000)
    _quiet(qtbot)
    assert shown == []
    assert f"{before + 1} open decisions" in w.notifier.tray.toolTip()


def test_quiet_hours_tell_nothing(qtbot, store, shown):
    from boris_desktop import settings

    now = datetime.now()
    span = (
        (now - timedelta(hours=1)).time().replace(second=0, microsecond=0),
        (now + timedelta(hours=1)).time().replace(second=0, microsecond=0),
    )
    settings.set_notifications(enabled=True, quiet=span)
    w = _window(qtbot, store)
    before = len(w.queue.model.rows)
    _from_another_process(store, 1)
    qtbot.waitUntil(lambda: len(w.queue.model.rows) == before + 1, timeout=1000)
    _quiet(qtbot)
    assert shown == []


def test_quiet_hours_wrap_past_midnight() -> None:
    from boris_desktop.runtime.notifications import in_quiet_hours

    assert in_quiet_hours(time(23, 30), time(22, 0), time(7, 0))
    assert in_quiet_hours(time(6, 59), time(22, 0), time(7, 0))
    assert not in_quiet_hours(time(7, 0), time(22, 0), time(7, 0))
    assert in_quiet_hours(time(12, 0), time(9, 0), time(17, 0))
    assert not in_quiet_hours(time(12, 0), None, None)


def test_the_settings_dialog_writes_the_settings(qtbot, store) -> None:
    from PySide6.QtCore import QTime

    from boris_desktop import settings

    w = _window(qtbot, store)
    dlg = w.notification_settings()
    qtbot.waitUntil(dlg.isVisible, timeout=2000)
    dlg.minutes.setValue(5)
    dlg.quiet.setChecked(True)
    dlg.quiet_from.setTime(QTime(21, 30))
    dlg.quiet_to.setTime(QTime(7, 15))
    dlg.buttons.button(dlg.buttons.StandardButton.Ok).click()
    assert dlg.result() == dlg.DialogCode.Accepted
    assert settings.expiry_warning_minutes() == 5
    assert settings.quiet_hours() == (time(21, 30), time(7, 15))
    assert settings.notifications_enabled()
    dlg = w.notification_settings()
    dlg.enabled.setChecked(False)
    assert not dlg.minutes.isEnabled()
    dlg.buttons.button(dlg.buttons.StandardButton.Ok).click()
    assert not settings.notifications_enabled()


def test_opening_another_store_is_not_news(qtbot, store, shown, tmp_path):
    w = _window(qtbot, store)
    other = Store.open(tmp_path / "other-store")
    fill_demo(other)
    _request(other, 1)
    w.set_store(other)
    qtbot.waitUntil(lambda: w.queue.loaded and w.notifier.known is not None, timeout=5000)
    qtbot.waitUntil(
        lambda: any(r["key"] == "apr-burst-1" for r in w.queue.model.rows), timeout=5000
    )
    _quiet(qtbot)
    assert shown == []
    w.close()
    other.close()


# --- issue 32: plain text, the reviewer's own writes, each expiry once -------------------------


def test_the_reviewers_own_stop_is_not_news_but_someone_elses_is(qtbot, store, shown):
    from test_desktop_actions import select_task

    from store.commands import StopRun

    w = _window(qtbot, store)
    select_task(qtbot, w, "guide")
    _quiet(qtbot)
    assert shown == []
    d = w.stop_task()
    qtbot.waitExposed(d)
    d.reason.setText("enough")
    d.confirm.setText("stop")
    qtbot.waitUntil(d.ok.isEnabled, timeout=5000)
    d.ok.click()
    qtbot.waitUntil(
        lambda: any(r["id"] == "resume:guide:guide" for r in w.queue.model.rows), timeout=5000
    )
    _quiet(qtbot)
    assert shown == []  # the reviewer stopped it: "Resume a run" is theirs, not news
    # The same decision opened by someone else (the owner, from the CLI) is told.
    other = Store.open(store.location.directory)
    try:
        other.execute(
            StopRun(task_id="note", reason="from the CLI"), Actor(kind="person", id="owner")
        )
    finally:
        other.close()
    qtbot.waitUntil(lambda: len(shown) == 1, timeout=5000)
    assert "Resume a run" in shown[0][1] and "Save the weekly project note" in shown[0][1]


def test_an_expiry_warned_of_is_not_warned_again_by_a_new_window(qtbot, store, shown):
    from boris_desktop import settings
    from boris_desktop.main_window import MainWindow

    settings.set_notifications(enabled=True, expiry_warning_minutes=15)
    w = _window(qtbot, store)
    _from_another_process(store, 1, expires_in=600)
    qtbot.waitUntil(lambda: len(shown) == 1, timeout=5000)
    assert "approval expires soon" in shown[0][0]
    w.close()
    # The window opened again on the same store (the app restarted, the store reopened):
    # the approval already warned of is not warned of again.
    again = MainWindow(store)
    qtbot.addWidget(again)
    again.show()
    again.reload_now()
    qtbot.waitUntil(lambda: again.queue.loaded and again.notifier.known is not None, timeout=5000)
    _quiet(qtbot)
    assert len(shown) == 1
    again.set_store(store)  # the store reopened in the same window
    qtbot.waitUntil(lambda: again.notifier.known is not None, timeout=5000)
    _quiet(qtbot)
    assert len(shown) == 1
    again.close()


def test_a_task_s_markup_is_sent_as_text_to_a_service_that_reads_markup(
    qtbot, store, shown, monkeypatch
):
    from boris_desktop.runtime import notifications

    monkeypatch.setattr(notifications, "service_reads_markup", lambda: True)
    _window(qtbot, store)
    _quiet(qtbot)
    html = '<b>bold</b> <img src="https://x.invalid/p.png"> <a href="https://x.invalid">go</a> & co'
    other = Store.open(store.location.directory)
    try:
        other.execute(
            ap.RequestApproval(task_id="note", approval_id="apr-html", payload={"n": 1},
                               consequence=html, policy="test", expires_in_seconds=3600),
            AGENT,
        )  # fmt: skip
    finally:
        other.close()
    qtbot.waitUntil(lambda: len(shown) == 1, timeout=5000)
    body = shown[0][1]
    assert "<" not in body and ">" not in body
    assert notifications.plain_body(html) in body
    assert "&amp; co" in body


def test_plain_body_escapes_what_the_freedesktop_spec_names() -> None:
    from boris_desktop.runtime.notifications import plain_body

    assert plain_body("a < b && c > d") == "a &lt; b &amp;&amp; c &gt; d"
    assert plain_body("<b>x</b>") == "&lt;b&gt;x&lt;/b&gt;"
    assert plain_body("plain words") == "plain words"
