"""The page's defences: sessions, CSRF tokens, rate limits and the response headers.

A session is a random id in a cookie (`Secure`, `HttpOnly`, `SameSite=Strict`, path /)
mapped in this process to who signed in, when it ends and its CSRF token; nothing about the
person is in the cookie. Every POST carries the session's CSRF token (a form field or the
`X-CSRF-Token` header) and is refused without it. Authentication (signing in and
registering, each step of each: every path under /auth/) is rate limited per client address;
a decision's ceremony needs a signed-in session and a passkey's assertion of exactly that
decision, and is not limited (a reviewer clears a burst). Every response says what it may
load: scripts and styles from this server only, no inline script, no frames, no plugins.
"""

from __future__ import annotations

import hmac
import logging
import secrets
import threading
import time
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from starlette.requests import Request
from starlette.responses import Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

COOKIE = "boris_session"
SESSION_SECONDS = 8 * 3600

CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "
    "connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'"
)
HEADERS = {
    "content-security-policy": CSP,
    "x-content-type-options": "nosniff",
    "referrer-policy": "no-referrer",
    "x-frame-options": "DENY",
    "cache-control": "no-store",
    "cross-origin-opener-policy": "same-origin",
    "permissions-policy": "camera=(), microphone=(), geolocation=()",
}


@dataclass
class Session:
    csrf: str
    expires: float
    #: `kind:id` of the person signed in (None: not yet).
    actor: str | None = None
    #: The passkey they signed in with: its revocation ends the session (a lost phone reads
    #: nothing more either).
    credential: str | None = None


@dataclass
class Sessions:
    """The sessions of this server process (a restart signs everyone out)."""

    by_id: dict[str, Session] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def get(self, request: Request) -> tuple[str, Session]:
        """The request's session, or a new anonymous one (set by `remember`)."""
        sid = request.cookies.get(COOKIE, "")
        now = time.monotonic()
        with self.lock:
            s = self.by_id.get(sid)
            if s is not None and s.expires > now:
                return sid, s
            self.by_id.pop(sid, None)
            sid = secrets.token_urlsafe(32)
            s = self.by_id[sid] = Session(secrets.token_urlsafe(32), now + SESSION_SECONDS)
            return sid, s

    def sign_in(self, sid: str, actor: str, credential: str | None = None) -> str:
        """A new session id and CSRF token for the person (the anonymous session ends: what
        was handed out before signing in, planted or not, is worth nothing after)."""
        with self.lock:
            self.by_id.pop(sid, None)
            new = secrets.token_urlsafe(32)
            csrf = secrets.token_urlsafe(32)
            self.by_id[new] = Session(csrf, time.monotonic() + SESSION_SECONDS, actor, credential)
            return new

    def end(self, sid: str) -> None:
        with self.lock:
            self.by_id.pop(sid, None)


def remember(response: Response, sid: str, *, secure: bool = True) -> None:
    response.set_cookie(
        COOKIE,
        sid,
        max_age=SESSION_SECONDS,
        path="/",
        secure=secure,
        httponly=True,
        samesite="strict",
    )


def csrf_ok(session: Session, given: str | None) -> bool:
    return bool(given) and hmac.compare_digest(session.csrf, str(given))


@dataclass
class RateLimit:
    """At most `attempts` authentications per client address in `window` seconds."""

    attempts: int = 10
    window: float = 60.0
    seen: dict[str, deque[float]] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def allow(self, client: str) -> bool:
        now = time.monotonic()
        with self.lock:
            times = self.seen.setdefault(client, deque())
            while times and times[0] <= now - self.window:
                times.popleft()
            if len(times) >= self.attempts:
                return False
            times.append(now)
            return True


class SecurityHeaders:
    """ASGI middleware: the headers above on every response, and a plain 500 (no trace) for
    any exception a route let through."""

    def __init__(self, app: ASGIApp, *, https: bool = False) -> None:
        self.app = app
        # Over HTTPS the browser is told to come back over HTTPS only (a year, this host).
        self.headers = HEADERS | (
            {"strict-transport-security": "max-age=31536000"} if https else {}
        )

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = False

        async def with_headers(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
                headers = [
                    (k, v)
                    for k, v in message.get("headers", [])
                    if k.decode().lower() not in self.headers
                ]
                headers += [(k.encode(), v.encode()) for k, v in self.headers.items()]
                message = {**message, "headers": headers}
            await send(message)

        try:
            await self.app(scope, receive, with_headers)
        except Exception:
            if started:
                raise
            # The trace goes to the server's log, never into the page.
            logging.getLogger("boris.web").exception("boris serve: a request failed")
            plain = Response("internal error: nothing was decided", 500, media_type="text/plain")
            await plain(scope, receive, with_headers)


Handler = Callable[[Request], Awaitable[Response]]
