"""Desktop notifications: a decision arrived, or an approval is about to expire.

The input is the decision queue's `updated(rows, now)`: every read of the open decisions,
with the database clock. Decisions present at the first read are known, not news. A burst
of arrivals (an agent requesting twenty approvals) is gathered for a short quiet window and
told in one notification with a count; an approval that comes within the warning time of
expiring is told once (remembered in the settings, so reopening the window or the store does
not tell it again). What the reviewer's own write just opened (their Stop opens "Resume a
run") is theirs, not news. The text is plain: a task's words are the agent's, and a
freedesktop service that renders body markup would show `<b>` bold and fetch `<img>`.

Where the desktop has a freedesktop notification service (Linux and the BSDs, a session bus
with org.freedesktop.Notifications), notifications are sent to it directly (`freedesktop.py`)
with the spec's "default" action, and a click on one opens the decision it told, or the queue
when it told of several, with the window raised. Elsewhere, and when no service answers, they
go through Qt's `QSystemTrayIcon.showMessage`, where a click is reported as `messageClicked`
(Windows, macOS; Qt's own freedesktop notifications carry no action, so there is nothing to
click). Where a system tray exists its icon's tooltip holds the count of open decisions. Off,
and quiet hours, are the reviewer's settings (`settings.py`).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from datetime import UTC, datetime, time, timedelta
from typing import TYPE_CHECKING

from PySide6.QtCore import QElapsedTimer, QObject, QTimer, Signal
from PySide6.QtWidgets import QMenu, QSystemTrayIcon

from boris_desktop import settings
from boris_desktop.queue.decisions import KIND_WORDS, may_decide
from boris_desktop.runtime import freedesktop
from boris_desktop.runtime.freedesktop import plain_body
from boris_desktop.ui import text as t
from boris_desktop.ui.icons import icon
from store import api

if TYPE_CHECKING:
    from store.api import Decision

#: A burst is over when no new decision arrived for this long.
COALESCE_MS = 2000
#: ...but a steady trickle is told at least this often.
COALESCE_MAX_MS = 10_000
#: At most this many decisions are named in one notification.
NAMED = 3
#: A decision that opens on a task this long after the reviewer's own write to it is
#: that write's doing (their Stop opens "Resume a run"), not news.
OWN_WRITE_MS = 10_000


def service_reads_markup() -> bool:
    """Whether the notification service reads the body as markup: asked once over D-Bus
    (GetCapabilities, "body-markup"). Elsewhere (Windows, macOS) Qt shows plain text."""
    if not sys.platform.startswith(("linux", "freebsd", "openbsd", "netbsd")):
        return False
    try:
        from PySide6.QtDBus import QDBusConnection, QDBusInterface, QDBusMessage
    except ImportError:  # pragma: no cover - a Qt build without D-Bus
        return True  # escaped text shown as entities beats markup rendered
    bus = QDBusConnection.sessionBus()
    if not bus.isConnected():
        return False
    service = QDBusInterface(
        "org.freedesktop.Notifications",
        "/org/freedesktop/Notifications",
        "org.freedesktop.Notifications",
        bus,
    )
    service.setTimeout(500)  # asked on the GUI thread, once: never a long wait
    reply = service.call("GetCapabilities")
    if reply.type() != QDBusMessage.MessageType.ReplyMessage or not reply.arguments():
        return False  # no service: Qt shows its own balloon, which reads no entities
    return "body-markup" in list(reply.arguments()[0])


def in_quiet_hours(now: time, start: time | None, end: time | None) -> bool:
    """Whether `now` (local) is inside [start, end); a span past midnight wraps."""
    if start is None or end is None or start == end:
        return False
    if start < end:
        return start <= now < end
    return now >= start or now < end


def _parse(at: str) -> datetime:
    return t.parse(at)


def _iso(at: datetime) -> str:
    """As the database's clock writes a time (store.db.now_expression)."""
    return at.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


class Notifier(QObject):
    """Turns the queue's reads into notifications; `open_decision(id)` opens one ("" for
    the queue). `shown` is emitted with (title, body, target) after each notification."""

    shown = Signal(str, str, str)

    def __init__(
        self,
        open_decision: Callable[[str], None],
        parent: QObject | None = None,
        *,
        local_time: Callable[[], time] | None = None,
    ) -> None:
        super().__init__(parent)
        self._open = open_decision
        self._local_time = local_time or (lambda: datetime.now().time())
        self.known: set[str] | None = None  # ids open at the last read; None before the first
        self._routed_mine: set[str] = set()  # routed approvals this reviewer might decide
        self.warned: set[str] = set()
        self.store_key = ""  # whose approvals `warned` holds (settings.warned_expiries)
        self._own: dict[str, QElapsedTimer] = {}  # task id -> since the reviewer wrote to it
        self._markup: bool | None = None  # whether the service reads markup; asked once
        self.rows: list[Decision] = []
        self._now = ""
        self._since_now = QElapsedTimer()
        self._arrived: list[Decision] = []
        self._expiring: list[Decision] = []
        self._target = ""  # what a click on the last notification opens
        self._burst = QElapsedTimer()
        self._flush = QTimer(self)
        self._flush.setSingleShot(True)
        self._flush.timeout.connect(self.flush)
        self._expiry = QTimer(self)
        self._expiry.setSingleShot(True)
        self._expiry.timeout.connect(self._check_expiry)

        self.tray = QSystemTrayIcon(icon("app"), self)
        self.tray.setToolTip("Boris Desktop")
        self.tray.messageClicked.connect(self.clicked)
        self.tray.activated.connect(self._activated)
        self._menu = QMenu()
        self._menu.addAction("Show the Decision Queue").triggered.connect(lambda: self._open(""))
        self.tray.setContextMenu(self._menu)
        if QSystemTrayIcon.isSystemTrayAvailable():
            self.tray.show()
        # The desktop's notification service, which reports a click on a notification.
        self.desktop = freedesktop.session_service(self)
        if self.desktop is not None:
            self.desktop.invoked.connect(self._open)
            self.desktop.refused.connect(self._tray_message)

    def _activated(self, reason: QSystemTrayIcon.ActivationReason) -> None:
        if reason in (
            QSystemTrayIcon.ActivationReason.Trigger,
            QSystemTrayIcon.ActivationReason.DoubleClick,
        ):
            self._open("")

    def reset(self, store_key: str = "") -> None:
        """Another store was opened: its decisions at first read are known, not news; its
        approvals already warned of (in an earlier window too) are not warned of again."""
        self._flush.stop()
        self._expiry.stop()
        self.known, self.rows, self._now = None, [], ""
        self._routed_mine = set()
        self.store_key = store_key
        self.warned = settings.warned_expiries(store_key) if store_key else set()
        self._own.clear()
        self._arrived, self._expiring = [], []
        if self.desktop is not None:
            self.desktop.forget()  # the decisions told so far were the other store's

    def own_write(self, task_id: str) -> None:
        """The reviewer just wrote to this task: what it opens there is theirs, not news."""
        since = QElapsedTimer()
        since.start()
        self._own[task_id] = since

    def _theirs(self, row: Decision) -> bool:
        # A person's write opens a resume (their Stop), a judgement (their evidence or a
        # criterion made stale) or a conflict (their verdict); an approval is an agent's
        # request, news even on a task the reviewer just wrote to.
        if row.kind == api.DecisionKind.APPROVAL:
            return False
        since = self._own.get(row.task_id)
        return since is not None and since.elapsed() < OWN_WRITE_MS

    # --- the queue's reads ---------------------------------------------------------------

    def update(self, rows: list[Decision], now: str) -> None:
        """The open decisions as just read, with the database clock."""
        self.rows, self._now = rows, now
        self._since_now.start()
        self._count(len(rows))
        ids = {r.id for r in rows}
        # A routed approval that escalated to this reviewer is news too, though it was open
        # (its `waits_on` is the store's: issue 42, routing).
        routed_mine = {r.id for r in rows if r.waits_on is not None and self._mine(r)}
        if self.known is None:
            self.known = ids
        else:
            new = [
                r
                for r in rows
                if (r.id not in self.known or r.id in routed_mine - self._routed_mine)
                and self._mine(r)
                and not self._theirs(r)
            ]
            # What is open now: a decision that closed and opens again (a new reconcile
            # after a new attempt) is news again.
            self.known = ids
            if new:
                self._arrived += new
                self._gather()
        self._routed_mine = routed_mine
        self._check_expiry()

    def _mine(self, row: Decision) -> bool:
        """Tell a reviewer of what they may decide (everything, before they said who)."""
        who = settings.reviewer()
        return who is None or may_decide(row, who[1])

    def _count(self, n: int) -> None:
        tip = f"Boris Desktop: {t.count(n, 'open decision', 'open decisions')}"
        self.tray.setToolTip(tip)

    def now(self) -> datetime | None:
        """The database clock now: its last reading plus the time since."""
        if not self._now:
            return None
        return _parse(self._now) + timedelta(milliseconds=self._since_now.elapsed())

    def _check_expiry(self) -> None:
        # Times are compared as the database writes them (ISO 8601, UTC, microseconds), so
        # a queue of thousands is scanned without parsing each expiry.
        self._expiry.stop()
        now = self.now()
        if now is None:
            return
        warn = timedelta(minutes=settings.expiry_warning_minutes())
        now_s, edge = _iso(now), _iso(now + warn)
        later: str | None = None  # the soonest expiry not yet within the warning time
        warned = len(self.warned)
        for r in self.rows:
            at = r.expires_at
            if r.kind != api.DecisionKind.APPROVAL or not at or at <= now_s:
                continue
            if at > edge:
                later = at if later is None or at < later else later
            elif r.id not in self.warned:
                self.warned.add(r.id)
                if self._mine(r):
                    self._expiring.append(r)
                    self._gather()
        if len(self.warned) != warned and self.store_key:
            # Kept only while still open: an approval decided or expired is not warned again.
            live = {r.id for r in self.rows if r.kind == api.DecisionKind.APPROVAL}
            self.warned &= live
            settings.set_warned_expiries(self.store_key, self.warned)
        if later is not None:
            due = _parse(later) - warn - now
            if due < timedelta(days=7):
                self._expiry.start(max(0, int(due.total_seconds() * 1000)) + 50)

    # --- telling -------------------------------------------------------------------------

    def _gather(self) -> None:
        """Wait for the burst to end (or for the longest wait) before telling it."""
        if not self._flush.isActive():
            self._burst.start()
        left = COALESCE_MAX_MS - self._burst.elapsed()
        self._flush.start(max(0, min(COALESCE_MS, left)))

    def silenced(self) -> bool:
        if not settings.notifications_enabled():
            return True
        start, end = settings.quiet_hours()
        return in_quiet_hours(self._local_time(), start, end)

    def flush(self) -> None:
        self._flush.stop()
        arrived, expiring = self._arrived, self._expiring
        self._arrived, self._expiring = [], []
        live = {r.id for r in self.rows}
        arrived = [r for r in arrived if r.id in live]  # decided meanwhile: no news
        expiring = [r for r in expiring if r.id in live]
        if not (arrived or expiring) or self.silenced():
            return
        title, body, target = self.compose(arrived, expiring)
        self._target = target
        if self.desktop is not None and self.desktop.available:
            self.desktop.notify(title, body, target)
        else:
            self._tray_message(title, body)
        self.shown.emit(title, body, target)

    def _tray_message(self, title: str, body: str) -> None:
        """Through Qt's tray icon: where there is no freedesktop service, or it refused."""
        if self._markup is None:
            self._markup = service_reads_markup()
        sent = plain_body(body) if self._markup else body
        self.tray.showMessage(title, sent, icon("approval"), 15_000)

    def compose(self, arrived: list[Decision], expiring: list[Decision]) -> tuple[str, str, str]:
        """(title, body, what a click opens: a decision's id, or "" for the queue)."""
        now = self.now()
        parts = []
        if arrived:
            parts.append(t.count(len(arrived), "new decision", "new decisions"))
        if expiring:
            parts.append(t.count(len(expiring), "approval expires soon", "approvals expire soon"))
        title = ", ".join(parts)
        soon = {r.id for r in expiring}
        only = list({r.id: r for r in arrived + expiring}.values())  # one line each
        lines = []
        for r in only[:NAMED]:
            line = f"{KIND_WORDS.get(r.kind, r.kind)}: {r.what} ({r.task_title})"
            if r.id in soon and now is not None and r.expires_at:
                left = (_parse(r.expires_at) - now).total_seconds()
                line += f", expires in {t.duration(left)}"
            lines.append(line)
        more = len(only) - NAMED
        if more > 0:
            lines.append(f"and {more} more in the decision queue")
        target = only[0].id if len(only) == 1 else ""
        return title, "\n".join(lines), target

    def clicked(self) -> None:
        self._open(self._target)
