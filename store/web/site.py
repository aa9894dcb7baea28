"""The decision page's server state: the store it reads and writes (one call at a time, on a
worker thread), who the passkeys are for, the sessions, the challenges, the rate limit and
the one-time registration links."""

from __future__ import annotations

import secrets
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TypeVar

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request

from ..api import Actor, DecideApproval
from ..commands.passkeys import add_passkey
from ..db import database_now
from ..reads import passkeys as pk
from ..store import Store
from . import ceremony, guard

T = TypeVar("T")
#: A note longer than this is refused (the form says so too).
NOTE_LIMIT = 2000


@dataclass
class Invitation:
    """A one-time registration link for one person, from `boris serve`'s own start."""

    actor: Actor
    expires: float


@dataclass
class Site:
    store: Store
    rp: ceremony.RelyingParty
    secure_cookies: bool = True
    #: The person `boris serve` runs as: only their passkeys sign in (their decisions are
    #: signed by their desktop key, the one this process holds). None: anyone registered.
    person: Actor | None = None
    sessions: guard.Sessions = field(default_factory=guard.Sessions)
    challenges: ceremony.Challenges = field(default_factory=ceremony.Challenges)
    limit: guard.RateLimit = field(default_factory=guard.RateLimit)
    invitations: dict[str, Invitation] = field(default_factory=dict)
    store_lock: threading.Lock = field(default_factory=threading.Lock)

    def invite(self, actor: Actor, seconds: float = 900.0) -> str:
        """A one-time token that registers a passkey for `actor` (printed by serve)."""
        token = secrets.token_urlsafe(24)
        self.invitations[token] = Invitation(actor, time.monotonic() + seconds)
        return token

    async def signed_in(self, request: Request) -> guard.Session | None:
        """The request's session if a person signed in with a passkey that still decides;
        a session whose passkey was revoked ends here (None)."""
        sid, s = self.sessions.get(request)
        if s.actor is None:
            return None
        if await self.passkey_revoked(s):
            self.sessions.end(sid)
            return None
        return s

    async def passkey_revoked(self, session: guard.Session) -> bool:
        """Whether the passkey the session signed in with no longer decides (revoked, or its
        entry gone): the caller ends the session."""
        cred = session.credential
        if session.actor is None or cred is None:
            return False

        def gone() -> bool:
            with self.store.read() as conn:
                found = pk.registry(conn).get(cred)
                return found is None or not found.active(database_now(conn))

        return await self.call(gone)

    async def call(self, fn: Callable[[], T]) -> T:
        def locked() -> T:
            with self.store_lock:
                return fn()

        return await run_in_threadpool(locked)


def register_passkey(site: Site, actor: Actor, credential_id: str, public_key: str) -> pk.Passkey:
    """Record a verified registration, signed by the person's desktop key."""
    with site.store_lock:
        site.store.sign_as(actor)
        with site.store.transaction() as tx:
            return add_passkey(
                tx.conn,
                site.store.signer,
                actor,
                credential_id=credential_id,
                public_key=public_key,
                rp_id=site.rp.rp_id,
                origin=site.rp.origin,
                now=database_now(tx.conn),
            )


def decide(site: Site, actor: Actor, command: DecideApproval) -> str:
    with site.store_lock:
        site.store.sign_as(actor)
        return str(site.store.execute(command, actor))
