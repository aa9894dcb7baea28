"""Notifications where the reviewer is (`boris serve --notify URL`), through Apprise: chat,
e-mail, push, any of the services its URLs name.

Every few seconds the watcher reads the store's decision queue as the window does (`decisions`,
`rules.may_decide` for the person serving) and sends one plain-text line per burst: what now
waits on the person (its one-line summary) or what expired unanswered, and the page's link.
The link alone never decides: a decision on the page is a passkey's assertion. Nothing is sent
for a request the person made themselves (they may not decide it), nor for one already told.

With `--deny-on-timeout` the person chooses that silence means no: a request they may decide
that is about to expire unanswered is rejected in their name (their key, a note saying why),
so the agent waiting on it is answered with a rejection, recorded, never with silence.
"""

from __future__ import annotations

import datetime as dt
import logging
import os
import stat
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from .. import rules
from ..api import Actor, ApprovalState, DecideApproval, StoreError
from ..reads.decisions import APPROVAL, Decision, decisions
from ..rules.times import expiry_words
from ..store import Store
from .serve import ServeRefused

log = logging.getLogger("boris.web")


@dataclass
class Watcher:
    store: Store
    person: Actor
    origin: str
    send: Callable[[str], bool] | None
    #: Serializes the store with the page's requests (store.web.site.Site.store_lock).
    lock: threading.Lock = field(default_factory=threading.Lock)
    #: What waited at the last look: approval id -> (its row), told already.
    told: dict[str, Decision] = field(default_factory=dict)
    #: With --deny-on-timeout: reject what would expire within this many seconds.
    deny_within: float | None = None
    #: Denied on timeout at the last look.
    denied: list[Decision] = field(default_factory=list)
    #: The database clock of the last look (an expiry is told by it).
    now: str = ""

    def _mine(self) -> dict[str, Decision]:
        with self.lock:
            read = decisions(self.store)
        self.now = read.now
        mine = self._filter(read.decisions)
        if self.deny_within is None:
            return mine
        denied = [d for d in mine.values() if _seconds_left(d, read.now) <= self.deny_within]
        for d in denied:
            if self._deny(d):
                self.denied.append(d)
                mine.pop(d.id)
        return mine

    def _deny(self, d: Decision) -> bool:
        """The person's rejection of a request about to expire unanswered, as they chose
        (`boris serve --deny-on-timeout`), signed by their key and saying so in its note."""
        note = (
            f"denied on timeout: no answer as it was about to expire at {d.expires_at} "
            f"({self.person.kind}:{self.person.id} chose boris serve --deny-on-timeout)"
        )
        command = DecideApproval(
            task_id=d.task_id, approval_id=d.key, decision="rejected", note=note
        )
        try:
            with self.lock:
                self.store.sign_as(self.person)
                self.store.execute(command, self.person)
        except StoreError as exc:  # decided meanwhile, or expired already: nothing to do
            log.info("boris serve: %s not denied on timeout: %s", d.id, exc)
            return False
        return True

    def _filter(self, rows: list[Decision]) -> dict[str, Decision]:
        return {
            d.id: d
            for d in rows
            if d.kind == APPROVAL
            and rules.may_decide(
                d.kind,
                None if d.requester is None else d.requester.to_json(),
                self.person.kind,
                self.person.id,
                d.waits_on,
            )
        }

    def _expired(self, gone: list[Decision]) -> list[Decision]:
        out = []
        for d in gone:
            try:
                with self.lock:
                    view = self.store.approval_decision(d.task_id, d.key)
            except StoreError:
                continue
            if view.state == ApprovalState.EXPIRED:
                out.append(d)
        return out

    def message(self, new: list[Decision], expired: list[Decision]) -> str | None:
        """The burst's one line (None: nothing to say)."""
        parts = []
        if self.denied:
            parts.append("denied on timeout: " + "; ".join(d.what for d in self.denied))
        if len(new) == 1:
            d = new[0]
            parts.append(f"approve? {d.what} ({self._about(d)})")
        elif new:
            parts.append(f"{len(new)} approvals wait on you: " + "; ".join(d.what for d in new))
        if expired:
            parts.append("expired unanswered: " + "; ".join(d.what for d in expired))
        if not parts:
            return None
        link = (
            f"{self.origin}/a/{new[0].task_id}/{new[0].key}"
            if len(new) == 1 and not expired
            else f"{self.origin}/"
        )
        return " ".join(f"Boris: {' | '.join(parts)} — {link}".split())

    def _about(self, d: Decision) -> str:
        """ "task weekly; expires 14:10 UTC, in 12 min; waiting on person:ben; escalated to
        person:rita": the task, the expiry as a person reads it, who it waits on (routed)."""
        about = [f"task {d.task_id}"]
        if d.expires_at and self.now:
            about.append(expiry_words(d.expires_at, self.now))
        if d.routing:
            about.append(d.routing)
        return "; ".join(about)

    def look(self) -> str | None:
        """Read the queue, send what is new since the last look; the line sent, if any."""
        self.denied = []
        now = self._mine()
        new = [d for k, d in now.items() if k not in self.told]
        gone = [d for k, d in self.told.items() if k not in now and d not in self.denied]
        expired = self._expired(gone)
        self.told = now
        line = self.message(new, expired)
        if line is not None and self.send is not None and not self.send(line):
            log.warning("boris serve: a notification was not delivered")
        return line

    def run(self, stop: threading.Event, every: float) -> None:
        while not stop.is_set():
            try:
                self.look()
            except Exception:  # a notification never stops the page
                log.exception("boris serve: notifications failed")
            stop.wait(every)


def _config_file(apprise: Any, name: str) -> Any:
    """An Apprise configuration file's URLs: the file must be the caller's to read alone (its
    URLs hold the services' tokens, as a key file holds a key) and name at least one."""
    try:
        mode = os.stat(name).st_mode
        with open(name, "rb"):
            pass
    except OSError as exc:
        raise ServeRefused(f"--notify-file {name}: {exc.strerror}") from None
    if mode & 0o077:
        raise ServeRefused(
            f"--notify-file {name} may be read by others (mode {stat.S_IMODE(mode):04o}); its "
            f"URLs hold the services' tokens: chmod 600 {name}"
        )
    config: Any = apprise.AppriseConfig()
    config.add(os.path.abspath(name))
    if not config.services():
        raise ServeRefused(f"--notify-file {name} names no notification URL Apprise knows")
    return config


def _seconds_left(d: Decision, now: str) -> float:
    if d.expires_at is None:
        return float("inf")
    return (_instant(d.expires_at) - _instant(now)).total_seconds()


def _instant(iso: str) -> dt.datetime:
    return dt.datetime.strptime(iso, "%Y-%m-%dT%H:%M:%S.%fZ")


def apprise_sender(urls: Sequence[str], files: Sequence[str] = ()) -> Callable[[str], bool]:
    """Send a line to every Apprise URL given, and every one the configuration `files` list
    (refused at start when one is not one, or a file holds none or others may read it)."""
    import apprise

    notifier: Any = apprise.Apprise()
    for url in urls:
        if not notifier.add(url):
            raise ServeRefused(f"--notify {url!r} is not a notification URL Apprise knows")
    for name in files:
        notifier.add(_config_file(apprise, name))

    def send(line: str) -> bool:
        # Text, said so: a service that shows HTML or Markdown (e-mail, Slack, Telegram…) gets
        # it escaped, so an agent's words are never markup (a link of theirs, an image).
        return bool(
            notifier.notify(title="Boris", body=line, body_format=apprise.NotifyFormat.TEXT)
        )

    return send
