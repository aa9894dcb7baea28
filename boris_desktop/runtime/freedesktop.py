"""The freedesktop notification service, spoken to on the session bus, so a click reaches us.

Qt's `QSystemTrayIcon.showMessage` sends its freedesktop notifications with no action, so a
service has nothing to invoke when the reviewer clicks one. Here each notification offers the
spec's "default" action (the one a click invokes), each id the service returns is kept with
what that notification told (a decision's id, or "" for the queue), and the service's
`ActionInvoked(id, "default")` emits `invoked` with it (an `ActivationToken` sent before it
lets the window take the focus on Wayland); `NotificationClosed(id, reason)` forgets the id.
Only signals from the service that answered our `Notify` are heeded.

Why not QtDBus: `Notify` takes its `replaces_id` as a uint32, and PySide6 marshals a Python
int as int32 (or, through `QDBusArgument`, as uint16); services built on GDBus or sd-bus (dunst,
GNOME Shell, mako) check the signature and refuse the call. Why jeepney: it writes and reads
D-Bus messages for a signature given as text ("susssasa{sv}i": the uint32 is a "u"), finds the
session bus and authenticates, in pure Python, and leaves the socket to us: Qt's event loop
watches it (`QSocketNotifier`), so nothing blocks but the connect, which waits at most
`CONNECT_TIMEOUT` on the GUI thread (a local socket answers in about a millisecond); every
call after that is asynchronous. jeepney is imported only when connecting (Linux and the BSDs,
a window someone sees): Windows, macOS and the first paint never load it.

Specifications: https://specifications.freedesktop.org/notification-spec/ and
https://dbus.freedesktop.org/doc/dbus-specification.html.
"""

from __future__ import annotations

import os
import socket
import struct
import sys
import time
from collections.abc import Callable
from typing import Any

from PySide6.QtCore import QObject, QSocketNotifier, Signal
from PySide6.QtGui import QGuiApplication

SERVICE = "org.freedesktop.Notifications"
PATH = "/org/freedesktop/Notifications"
INTERFACE = SERVICE
#: The spec's key for the action a click on the notification invokes.
DEFAULT_ACTION = "default"
#: The longest the GUI thread waits to connect to the session bus and authenticate.
CONNECT_TIMEOUT = 0.5
#: Platforms whose desktops have a freedesktop notification service.
UNIX = ("linux", "freebsd", "openbsd", "netbsd", "dragonfly")
#: Platforms that show no window to anyone (tests, screenshots): nothing to notify from.
HEADLESS = ("offscreen", "minimal")

#: What a call's answer is handed to: (answered, the answering connection's name, its body).
Answer = Callable[[bool, str, tuple[Any, ...]], None]


def plain_body(text: str) -> str:
    """`text` as a notification body that shows literally. The freedesktop notification spec
    lets a service that advertises "body-markup" read the body as markup (`<b>`, `<i>`, `<u>`,
    `<a href>`, `<img src>`), and asks the sender to escape `&`, `<` and `>`."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


# --- the connection ----------------------------------------------------------------------


def session_bus_address() -> str | None:
    """The socket address of the session bus (Unix transports only), or None."""
    from jeepney.bus import get_bus

    try:
        return str(get_bus("SESSION"))
    except KeyError:
        # No DBUS_SESSION_BUS_ADDRESS (jeepney looks nowhere else): systemd's per-user bus.
        runtime = os.getenv("XDG_RUNTIME_DIR", "")
        bus = os.path.join(runtime, "bus")
        return bus if runtime and os.path.exists(bus) else None
    except (ValueError, RuntimeError):  # malformed, or no transport but TCP and the like
        return None


def connect_session_bus(timeout: float = CONNECT_TIMEOUT) -> socket.socket | None:
    """A non-blocking, authenticated socket to the session bus, or None; waits at most
    `timeout` in all."""
    from jeepney.auth import (
        BEGIN,
        AuthenticationError,
        Authenticator,
    )

    address = session_bus_address()
    if address is None:
        return None
    deadline = time.monotonic() + timeout
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)

    def within() -> socket.socket:
        left = deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError
        sock.settimeout(left)
        return sock

    try:
        within().connect(address)
        # The spec's opening nul byte; the BSDs' buses read the peer's credentials from the
        # message it comes in (Linux's from the socket), so it is sent here, not by jeepney.
        if hasattr(socket, "SCM_CREDS"):
            within().sendmsg([b"\0"], [(socket.SOL_SOCKET, socket.SCM_CREDS, bytes(512))])
        else:
            within().sendall(b"\0")
        auth = Authenticator(inc_null_byte=False)
        for line in auth:
            within().sendall(line)
            answer = within().recv(1024)
            if not answer:
                raise ConnectionResetError
            auth.feed(answer)
        within().sendall(BEGIN)
    except (OSError, AuthenticationError):
        sock.close()
        return None
    sock.setblocking(False)
    return sock


class NotificationService(QObject):
    """org.freedesktop.Notifications on one connection to the session bus.

    `notify(summary, body, target)` shows a notification whose click emits `invoked(target)`;
    one the service refuses (none is there, or it failed) is handed back as
    `refused(summary, body)` for another way of telling it. `reads_markup` is what the
    service's capabilities say (True until they are known: escaped text shown as entities
    beats markup rendered)."""

    invoked = Signal(str)
    refused = Signal(str, str)

    def __init__(self, sock: socket.socket, parent: QObject | None = None) -> None:
        from jeepney.bus_messages import (
            MatchRule,
            message_bus,
        )
        from jeepney.low_level import Parser

        super().__init__(parent)
        self._sock: socket.socket | None = sock
        self._parser = Parser()
        self._out = bytearray()
        self._serial = 0
        self._replies: dict[int, Answer] = {}
        self.told: dict[int, str] = {}  # notification id -> the decision it told ("" the queue)
        self.available = True  # until the service is found missing
        self.reads_markup = True
        self._owner = ""  # the unique name of the service that answered
        self._read = QSocketNotifier(sock.fileno(), QSocketNotifier.Type.Read, self)
        self._read.activated.connect(self._readable)
        self._write = QSocketNotifier(sock.fileno(), QSocketNotifier.Type.Write, self)
        self._write.setEnabled(False)
        self._write.activated.connect(self._flush)
        self._call(message_bus.Hello())  # the first message on a connection, always
        rule = MatchRule(type="signal", sender=SERVICE, interface=INTERFACE, path=PATH)
        self._call(message_bus.AddMatch(rule))
        self._call(self._method("GetCapabilities"), then=self._capabilities)

    # --- asking --------------------------------------------------------------------------

    def notify(self, summary: str, body: str, target: str) -> None:
        """Show `summary` and the plain text `body` (escaped where the service reads markup);
        a click on it emits `invoked(target)`."""
        app = QGuiApplication.instance()
        name = app.applicationDisplayName() if isinstance(app, QGuiApplication) else ""
        # The desktop entry names the app and its icon to the service (app_icon stays empty:
        # run from a checkout, no icon of that name is installed).
        entry = QGuiApplication.desktopFileName() if app is not None else ""
        hints = {"desktop-entry": ("s", entry)} if entry else {}
        sent = plain_body(body) if self.reads_markup else body

        def answered(ok: bool, sender: str, reply: tuple[Any, ...]) -> None:
            if ok and reply:
                self._owner = sender
                self.told[int(reply[0])] = target
            else:
                self.available = False
                self.refused.emit(summary, body)

        notify = self._method(
            "Notify",
            "susssasa{sv}i",  # replaces_id is the "u": a uint32, as the service checks
            # -1: the service's own timeout, as the reviewer set it there.
            (name or "Boris Desktop", 0, "", summary, sent, [DEFAULT_ACTION, "Open"], hints, -1),
        )
        self._call(notify, then=answered)

    def forget(self) -> None:
        """What the notifications shown so far told no longer exists (another store)."""
        self.told.clear()

    def _capabilities(self, ok: bool, sender: str, reply: tuple[Any, ...]) -> None:
        if not ok:
            self.available = False  # no service on this bus: tell another way
            return
        self._owner = sender
        self.reads_markup = "body-markup" in (reply[0] if reply else [])

    def _method(self, member: str, signature: str | None = None, body: tuple[Any, ...] = ()) -> Any:
        """A call of the notification service's `member` (a jeepney message)."""
        from jeepney.wrappers import (
            DBusAddress,
            new_method_call,
        )

        service = DBusAddress(PATH, bus_name=SERVICE, interface=INTERFACE)
        return new_method_call(service, member, signature, body)

    def _call(self, message: Any, then: Answer | None = None) -> None:
        """Send the jeepney `message`; its answer, when it comes, goes to `then`."""
        if self._sock is None:
            if then is not None:
                then(False, "", ())
            return
        self._serial += 1
        if then is not None:
            self._replies[self._serial] = then
        self._out += message.serialise(serial=self._serial)
        self._flush()

    # --- the socket ----------------------------------------------------------------------

    def _flush(self) -> None:
        if self._sock is None:
            return
        try:
            sent = self._sock.send(self._out) if self._out else 0
        except BlockingIOError:
            sent = 0
        except OSError:
            self._lost()
            return
        del self._out[:sent]
        self._write.setEnabled(bool(self._out))

    def _readable(self) -> None:
        if self._sock is None:
            return
        try:
            chunk = self._sock.recv(65536)
        except BlockingIOError:
            return
        except OSError:
            chunk = b""
        if not chunk:
            self._lost()
            return
        self._parser.add_data(chunk)
        while self._sock is not None:
            try:
                message = self._parser.get_next_message()
            except (ValueError, IndexError, KeyError, struct.error):
                # The bus checks every message it passes on, so this is not D-Bus at all:
                # the stream cannot be followed past it.
                self._lost()
                return
            if message is None:
                return
            self.receive(message)

    def _lost(self) -> None:
        """The bus went away: every call waiting for an answer is refused."""
        if self._sock is not None:
            self._read.setEnabled(False)
            self._write.setEnabled(False)
            self._sock.close()
            self._sock = None
        self.available = False
        waiting, self._replies = self._replies, {}
        for then in waiting.values():
            then(False, "", ())

    def close(self) -> None:
        self._replies.clear()
        self._lost()

    # --- what the bus says ---------------------------------------------------------------

    def receive(self, message: Any) -> None:
        """One message from the bus (a jeepney message): a reply to a call, or the service's
        signal."""
        from jeepney import HeaderFields, MessageType

        kind = message.header.message_type
        fields = message.header.fields
        body = tuple(message.body)
        sender = str(fields.get(HeaderFields.sender, ""))
        if kind in (MessageType.method_return, MessageType.error):
            then = self._replies.pop(fields.get(HeaderFields.reply_serial, -1), None)
            if then is not None:
                then(kind is MessageType.method_return, sender, body)
            return
        if kind is not MessageType.signal or fields.get(HeaderFields.interface) != INTERFACE:
            return
        if self._owner and sender != self._owner:
            return  # another connection saying it is the service
        member = fields.get(HeaderFields.member)
        if member == "ActivationToken" and len(body) == 2:
            self.activation_token(int(body[0]), str(body[1]))
        elif member == "ActionInvoked" and len(body) == 2:
            self.action_invoked(int(body[0]), str(body[1]))
        elif member == "NotificationClosed" and body:
            self.told.pop(int(body[0]), None)

    def activation_token(self, notification: int, token: str) -> None:
        """Sent just before the click's ActionInvoked (spec 1.2): on Wayland a window may take
        the focus only with such a token, which Qt's Wayland plugin reads from
        XDG_ACTIVATION_TOKEN when the window asks to be activated."""
        if notification in self.told and QGuiApplication.platformName().startswith("wayland"):
            os.environ.update(XDG_ACTIVATION_TOKEN=token)

    def action_invoked(self, notification: int, action: str) -> None:
        if action == DEFAULT_ACTION and notification in self.told:
            self.invoked.emit(self.told.pop(notification))


def session_service(parent: QObject | None = None) -> NotificationService | None:
    """The notification service on this desktop's session bus, or None where there is no
    freedesktop desktop to notify on (Windows, macOS, no session bus, a headless run)."""
    if not sys.platform.startswith(UNIX):
        return None
    if QGuiApplication.platformName() in HEADLESS:
        return None
    sock = connect_session_bus()
    return NotificationService(sock, parent) if sock is not None else None
