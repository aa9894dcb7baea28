"""Notifications: a decision arriving from another process, a burst, an expiry, off and quiet.

The notification service is faked at Qt's boundary: `QSystemTrayIcon.showMessage` records
what would have been shown, `isSystemTrayAvailable` says a tray exists. The tests of clicks
(issue 32) fake the freedesktop service instead, at the far end of a socket pair that speaks
D-Bus (`FakeNotificationService`, through jeepney). The notifier and the queue it listens to
are the real ones.
"""

from __future__ import annotations

import os
from datetime import datetime, time, timedelta
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import pytest
from PySide6.QtWidgets import QSystemTrayIcon
from test_desktop_actions import WAIT_MS, open_window

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
    qtbot.waitUntil(lambda: w.queue.loaded, timeout=WAIT_MS)
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
    qtbot.waitUntil(lambda: len(q.model.rows) == before + 1, timeout=WAIT_MS)
    qtbot.waitUntil(lambda: len(shown) == 1, timeout=WAIT_MS)
    title, body = shown[0]
    assert title == "1 new decision"
    assert "send message 1" in body and "Save the weekly project note" in body
    assert f"{before + 1} open decisions" in w.notifier.tray.toolTip()
    _quiet(qtbot)
    assert len(shown) == 1
    # Clicking it opens that decision's own dialog.
    w.notifier.tray.messageClicked.emit()
    qtbot.waitUntil(lambda: q.dialog is not None and q.dialog.isVisible(), timeout=WAIT_MS)
    assert q.dialog.approval_id == aid
    assert w.views.currentWidget() is q
    q.dialog.reject()


def test_a_burst_of_twenty_is_one_notification_with_a_count(qtbot, store, shown):
    w = _window(qtbot, store)
    before = len(w.queue.model.rows)
    _from_another_process(store, *range(20))
    qtbot.waitUntil(lambda: len(w.queue.model.rows) == before + 20, timeout=WAIT_MS)
    qtbot.waitUntil(lambda: len(shown) == 1, timeout=WAIT_MS)
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
    qtbot.waitUntil(lambda: len(shown) == 1, timeout=WAIT_MS)
    assert shown[0][0] == "1 new decision, 1 approval expires soon"
    assert "expires in" in shown[0][1]
    assert shown[0][1].count("send message 1") == 1
    # Later reads (another write) do not warn again.
    _from_another_process(store, 2, expires_in=7200)
    qtbot.waitUntil(lambda: len(shown) == 2, timeout=WAIT_MS)
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
    qtbot.waitUntil(lambda: len(shown) == 1, timeout=WAIT_MS)
    assert shown[0][0] == "1 new decision"
    assert "expires" not in shown[0][1]
    qtbot.waitUntil(lambda: len(shown) == 2, timeout=WAIT_MS)
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
    qtbot.waitUntil(lambda: len(w.queue.model.rows) == before + 1, timeout=WAIT_MS)
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
    qtbot.waitUntil(lambda: len(w.queue.model.rows) == before + 1, timeout=WAIT_MS)
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
    qtbot.waitUntil(dlg.isVisible, timeout=WAIT_MS)
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
    qtbot.waitUntil(lambda: w.queue.loaded and w.notifier.known is not None, timeout=WAIT_MS)
    qtbot.waitUntil(
        lambda: any(r["key"] == "apr-burst-1" for r in w.queue.model.rows), timeout=WAIT_MS
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
    qtbot.waitExposed(d, timeout=WAIT_MS)
    d.reason.setText("enough")
    d.confirm.setText("stop")
    qtbot.waitUntil(d.ok.isEnabled, timeout=WAIT_MS)
    d.ok.click()
    qtbot.waitUntil(
        lambda: any(r["id"] == "resume:guide:guide" for r in w.queue.model.rows), timeout=WAIT_MS
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
    qtbot.waitUntil(lambda: len(shown) == 1, timeout=WAIT_MS)
    assert "Resume a run" in shown[0][1] and "Save the weekly project note" in shown[0][1]


def test_an_expiry_warned_of_is_not_warned_again_by_a_new_window(qtbot, store, shown):
    from boris_desktop import settings
    from boris_desktop.main_window import MainWindow

    settings.set_notifications(enabled=True, expiry_warning_minutes=15)
    w = _window(qtbot, store)
    _from_another_process(store, 1, expires_in=600)
    qtbot.waitUntil(lambda: len(shown) == 1, timeout=WAIT_MS)
    assert "approval expires soon" in shown[0][0]
    w.close()
    # The window opened again on the same store (the app restarted, the store reopened):
    # the approval already warned of is not warned of again.
    again = MainWindow(store)
    qtbot.addWidget(again)
    again.show()
    again.reload_now()
    qtbot.waitUntil(
        lambda: again.queue.loaded and again.notifier.known is not None, timeout=WAIT_MS
    )
    _quiet(qtbot)
    assert len(shown) == 1
    again.set_store(store)  # the store reopened in the same window
    qtbot.waitUntil(lambda: again.notifier.known is not None, timeout=WAIT_MS)
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
    qtbot.waitUntil(lambda: len(shown) == 1, timeout=WAIT_MS)
    body = shown[0][1]
    assert "<" not in body and ">" not in body
    assert notifications.plain_body(html) in body
    assert "&amp; co" in body


def test_plain_body_escapes_what_the_freedesktop_spec_names() -> None:
    from boris_desktop.runtime.notifications import plain_body

    assert plain_body("a < b && c > d") == "a &lt; b &amp;&amp; c &gt; d"
    assert plain_body("<b>x</b>") == "&lt;b&gt;x&lt;/b&gt;"
    assert plain_body("plain words") == "plain words"


# --- issue 32: a click on a notification opens the decision it told --------------------------


class FakeNotificationService:
    """The session bus and its notification service, at the far end of a socket pair: answers
    Hello, AddMatch, GetCapabilities and Notify as dunst does, and sends its signals. jeepney
    reads and writes its messages, as it does the window's."""

    NAME = ":1.9"  # the service's unique name on the bus

    def __init__(self, sock, capabilities=("actions", "body", "body-markup")) -> None:
        from jeepney.low_level import Parser

        self.sock = sock
        self.capabilities = list(capabilities)
        self.notified: list[tuple] = []  # each Notify's arguments
        self.absent = False  # answer for the service as the bus does when no one owns its name
        self.ids: list[int] = []
        self._parser = Parser()
        self._serial = 100
        sock.setblocking(False)

    def pump(self) -> None:
        from jeepney import HeaderFields, new_error

        from boris_desktop.runtime import freedesktop as fd

        try:
            data = self.sock.recv(65536)
        except OSError:  # nothing to read yet, or closed at the test's end
            return
        for call in self._parser.feed(data):
            member = call.header.fields[HeaderFields.member]
            if member == "Hello":
                self._reply(call, "s", (":1.2",), sender="org.freedesktop.DBus")
            elif member == "AddMatch":
                self._reply(call, None, (), sender="org.freedesktop.DBus")
            elif self.absent and call.header.fields[HeaderFields.destination] == fd.SERVICE:
                error = "org.freedesktop.DBus.Error.ServiceUnknown"
                self._send(new_error(call, error, "s", ("no owner",)), "org.freedesktop.DBus")
            elif member == "GetCapabilities":
                self._reply(call, "as", (self.capabilities,))
            elif member == "Notify":
                self.notified.append(call.body)
                self.ids.append(40 + len(self.ids))
                self._reply(call, "u", (self.ids[-1],))

    def _reply(self, call, signature: str | None, body: tuple, sender: str = NAME) -> None:
        from jeepney import new_method_return

        self._send(new_method_return(call, signature, body), sender)

    def signal(self, member: str, signature: str, body: tuple, sender: str = NAME) -> None:
        from jeepney import DBusAddress, new_signal

        from boris_desktop.runtime import freedesktop as fd

        emitter = DBusAddress(fd.PATH, interface=fd.INTERFACE)
        self._send(new_signal(emitter, member, signature, body), sender)

    def _send(self, message, sender: str) -> None:
        """As the bus passes it on: from `sender`, to the window's connection."""
        from jeepney import HeaderFields

        message.header.fields[HeaderFields.sender] = sender
        message.header.fields[HeaderFields.destination] = ":1.2"
        self._serial += 1
        self.sock.sendall(message.serialise(serial=self._serial))


@pytest.fixture
def service(monkeypatch, qtbot):
    """The window's notifier talks to a FakeNotificationService, pumped by the event loop."""
    import socket

    from PySide6.QtCore import QTimer

    from boris_desktop.runtime import freedesktop

    ours, theirs = socket.socketpair()
    fake = FakeNotificationService(theirs)
    monkeypatch.setattr(
        freedesktop,
        "session_service",
        lambda parent=None: freedesktop.NotificationService(ours, parent),
    )
    pump = QTimer()
    pump.timeout.connect(fake.pump)
    pump.start(5)
    yield fake
    pump.stop()
    ours.close()
    theirs.close()


def test_a_click_on_a_notification_opens_the_decision_it_told(qtbot, store, service, shown):
    w = _window(qtbot, store)
    q = w.queue
    desktop = w.notifier.desktop
    assert desktop is not None
    _quiet(qtbot)
    assert service.notified == []
    (aid,) = _from_another_process(store, 1)
    qtbot.waitUntil(lambda: len(service.notified) == 1, timeout=WAIT_MS)
    _app, replaces, _icon, summary, body, actions, _hints, _expires = service.notified[0]
    assert (summary, replaces, actions) == ("1 new decision", 0, ["default", "Open"])
    assert "send message 1" in body
    assert shown == []  # sent to the service, not through Qt's tray icon
    (decision,) = [r["id"] for r in q.model.rows if r["key"] == aid]
    qtbot.waitUntil(lambda: desktop.told == {service.ids[0]: decision}, timeout=WAIT_MS)
    # Another connection claiming to be the service, or another action, opens nothing.
    w.views.setCurrentWidget(w.left)
    service.signal("ActionInvoked", "us", (service.ids[0], "default"), sender=":1.66")
    service.signal("ActionInvoked", "us", (service.ids[0], "other"))
    qtbot.wait(300)
    assert w.views.currentWidget() is w.left and q.dialog is None
    # The service says it was clicked: the window opens that approval's dialog.
    service.signal("ActionInvoked", "us", (service.ids[0], "default"))
    qtbot.waitUntil(lambda: q.dialog is not None and q.dialog.isVisible(), timeout=WAIT_MS)
    assert q.dialog.approval_id == aid
    assert w.views.currentWidget() is q
    assert desktop.told == {}
    q.dialog.reject()


def test_a_click_on_a_notification_of_several_opens_the_queue(qtbot, store, service, shown):
    w = _window(qtbot, store)
    desktop = w.notifier.desktop
    _quiet(qtbot)
    _from_another_process(store, *range(5))
    qtbot.waitUntil(lambda: len(service.notified) == 1, timeout=WAIT_MS)
    assert service.notified[0][3] == "5 new decisions"
    qtbot.waitUntil(lambda: desktop.told == {service.ids[0]: ""}, timeout=WAIT_MS)
    w.views.setCurrentWidget(w.left)
    service.signal("ActionInvoked", "us", (service.ids[0], "default"))
    qtbot.waitUntil(lambda: w.views.currentWidget() is w.queue, timeout=WAIT_MS)
    assert w.queue.dialog is None


def test_a_closed_notification_is_forgotten(qtbot, store, service, shown):
    w = _window(qtbot, store)
    desktop = w.notifier.desktop
    _quiet(qtbot)
    _from_another_process(store, 1)
    qtbot.waitUntil(lambda: len(desktop.told) == 1, timeout=WAIT_MS)
    service.signal("NotificationClosed", "uu", (service.ids[0], 2))  # dismissed
    qtbot.waitUntil(lambda: desktop.told == {}, timeout=WAIT_MS)
    w.views.setCurrentWidget(w.left)
    service.signal("ActionInvoked", "us", (service.ids[0], "default"))
    qtbot.wait(300)
    assert w.views.currentWidget() is w.left and w.queue.dialog is None


def test_the_body_is_escaped_only_for_a_service_that_reads_markup(qtbot, store, service, shown):
    html = '<b>bold</b> & <a href="https://x.invalid">go</a>'
    w = _window(qtbot, store)
    _quiet(qtbot)
    other = Store.open(store.location.directory)
    try:
        other.execute(
            ap.RequestApproval(task_id="note", approval_id="apr-html", payload={"n": 1},
                               consequence=html, policy="test", expires_in_seconds=3600),
            AGENT,
        )  # fmt: skip
    finally:
        other.close()
    qtbot.waitUntil(lambda: len(service.notified) == 1, timeout=WAIT_MS)
    body = service.notified[0][4]
    assert "&lt;b&gt;bold&lt;/b&gt; &amp; &lt;a href=" in body and "<" not in body
    # A service without "body-markup" shows the body as it is: it is sent unescaped.
    w.notifier.desktop.reads_markup = False
    w.notifier.desktop.notify("1 new decision", html, "")
    qtbot.waitUntil(lambda: len(service.notified) == 2, timeout=WAIT_MS)
    assert service.notified[1][4] == html


def test_no_service_on_the_bus_falls_back_to_the_tray(qtbot, store, service, shown):
    service.absent = True  # the bus answers for the name no one owns
    w = _window(qtbot, store)
    desktop = w.notifier.desktop
    _quiet(qtbot)
    assert not desktop.available  # GetCapabilities was refused
    _from_another_process(store, 1)
    qtbot.waitUntil(lambda: len(shown) == 1, timeout=WAIT_MS)
    assert shown[0][0] == "1 new decision"
    assert service.notified == []


def test_a_refused_notification_is_told_through_the_tray(qtbot, store, service, shown):
    w = _window(qtbot, store)
    desktop = w.notifier.desktop
    _quiet(qtbot)
    assert desktop.available
    service.absent = True  # the service left the bus after it answered
    _from_another_process(store, 1)
    qtbot.waitUntil(lambda: len(shown) == 1, timeout=WAIT_MS)
    assert shown[0][0] == "1 new decision" and "send message 1" in shown[0][1]
    assert not desktop.available


def test_a_window_nobody_sees_sends_no_desktop_notification(qtbot) -> None:
    from boris_desktop.runtime import freedesktop

    assert freedesktop.session_service() is None  # the offscreen platform: headless


def test_the_id_the_service_returns_maps_to_the_decision_told(qtbot, monkeypatch) -> None:
    """The service object alone, on a socket pair: each id maps to what it told, a click
    (with its Wayland activation token) emits it once, a close forgets it."""
    import socket

    from PySide6.QtGui import QGuiApplication

    from boris_desktop.runtime.freedesktop import NotificationService

    ours, theirs = socket.socketpair()
    fake = FakeNotificationService(theirs)
    desktop = NotificationService(ours)
    clicked: list[str] = []
    desktop.invoked.connect(clicked.append)

    def answered(n: int) -> bool:
        fake.pump()
        return len(desktop.told) == n

    qtbot.waitUntil(lambda: answered(0) and not desktop._replies, timeout=WAIT_MS)
    assert desktop.reads_markup  # the capabilities say "body-markup"
    desktop.notify("1 new decision", "Approve / reject: <b>x</b>", "approval:note:apr-1")
    qtbot.waitUntil(lambda: answered(1), timeout=WAIT_MS)
    desktop.notify("3 new decisions", "…", "")
    qtbot.waitUntil(lambda: answered(2), timeout=WAIT_MS)
    one, several = fake.ids
    assert desktop.told == {one: "approval:note:apr-1", several: ""}
    assert fake.notified[0][4] == "Approve / reject: &lt;b&gt;x&lt;/b&gt;"
    monkeypatch.delenv("XDG_ACTIVATION_TOKEN", raising=False)
    monkeypatch.setattr(QGuiApplication, "platformName", staticmethod(lambda: "wayland"))
    fake.signal("ActivationToken", "us", (one, "token-1"))
    fake.signal("ActionInvoked", "us", (one, "default"))
    qtbot.waitUntil(lambda: clicked == ["approval:note:apr-1"], timeout=WAIT_MS)
    assert os.environ["XDG_ACTIVATION_TOKEN"] == "token-1"  # Qt's Wayland plugin takes it
    fake.signal("ActionInvoked", "us", (one, "default"))  # told once: a second click is stale
    fake.signal("NotificationClosed", "uu", (several, 1))  # expired
    qtbot.waitUntil(lambda: desktop.told == {}, timeout=WAIT_MS)
    fake.signal("ActionInvoked", "us", (several, "default"))
    qtbot.wait(100)
    assert clicked == ["approval:note:apr-1"]
    desktop.close()
    theirs.close()


def test_the_window_loads_without_jeepney() -> None:
    """jeepney is imported when connecting to the session bus, not with the window's modules:
    Windows, macOS and the first paint never load it."""
    import subprocess
    import sys

    code = (
        "import sys, boris_desktop.main_window, boris_desktop.runtime.notifications\n"
        "print('boris_desktop.runtime.freedesktop' in sys.modules, 'jeepney' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["True", "False"]


def test_a_bus_that_never_answers_costs_at_most_the_connect_limit(monkeypatch) -> None:
    """A socket that accepts and then says nothing: the GUI thread waits the limit, no more,
    and the notifications go through the tray. Without the variable, systemd's per-user bus
    in XDG_RUNTIME_DIR is where the session bus is looked for."""
    import socket
    import tempfile
    import time

    from boris_desktop.runtime import freedesktop

    with tempfile.TemporaryDirectory() as runtime:
        path = os.path.join(runtime, "bus")
        silent = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        silent.bind(path)
        silent.listen(1)
        try:
            monkeypatch.delenv("DBUS_SESSION_BUS_ADDRESS", raising=False)
            monkeypatch.setenv("XDG_RUNTIME_DIR", runtime)
            assert freedesktop.session_bus_address() == path
            monkeypatch.setenv("DBUS_SESSION_BUS_ADDRESS", f"unix:path={path},guid=0")
            assert freedesktop.session_bus_address() == path
            started = time.monotonic()
            assert freedesktop.connect_session_bus(timeout=0.3) is None
            # It gave up after its timeout, not before; the upper bound only tells a hang
            # (a loaded machine may take a while past 0.3 s to run again).
            assert 0.25 < time.monotonic() - started < 10.0
        finally:
            silent.close()
    monkeypatch.setenv("DBUS_SESSION_BUS_ADDRESS", "tcp:host=localhost,port=1")
    assert freedesktop.session_bus_address() is None  # only Unix sockets are spoken to
