"""Notifications where the reviewer is (`boris serve --notify URL`), through Apprise: chat,
e-mail, push, any of the services its URLs name.

Every few seconds the watcher reads the store's decision queue as the window does (`decisions`,
`rules.may_decide` for the person serving) and sends one plain-text line per burst: what now
waits on the person (its one-line summary) or what expired unanswered, and the page's link.
The link alone never decides: a decision on the page is a passkey's assertion. Nothing is sent
for a request the person made themselves (they may not decide it), nor for one already told.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from .. import rules
from ..api import Actor, ApprovalState, StoreError
from ..reads.decisions import APPROVAL, Decision, decisions
from ..store import Store
from .serve import ServeRefused

log = logging.getLogger("boris.web")


@dataclass
class Watcher:
    store: Store
    person: Actor
    origin: str
    send: Callable[[str], bool]
    #: Serializes the store with the page's requests (store.web.site.Site.store_lock).
    lock: threading.Lock = field(default_factory=threading.Lock)
    #: What waited at the last look: approval id -> (its row), told already.
    told: dict[str, Decision] = field(default_factory=dict)

    def _mine(self) -> dict[str, Decision]:
        with self.lock:
            rows = decisions(self.store).decisions
        return {
            d.id: d
            for d in rows
            if d.kind == APPROVAL
            and rules.may_decide(
                d.kind,
                None if d.requester is None else d.requester.to_json(),
                self.person.kind,
                self.person.id,
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
        if len(new) == 1:
            d = new[0]
            parts.append(f"approve? {d.what} (task {d.task_id}, expires {d.expires_at})")
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

    def look(self) -> str | None:
        """Read the queue, send what is new since the last look; the line sent, if any."""
        now = self._mine()
        new = [d for k, d in now.items() if k not in self.told]
        expired = self._expired([d for k, d in self.told.items() if k not in now])
        self.told = now
        line = self.message(new, expired)
        if line is not None and not self.send(line):
            log.warning("boris serve: a notification was not delivered")
        return line

    def run(self, stop: threading.Event, every: float) -> None:
        while not stop.is_set():
            try:
                self.look()
            except Exception:  # a notification never stops the page
                log.exception("boris serve: notifications failed")
            stop.wait(every)


def apprise_sender(urls: list[str]) -> Callable[[str], bool]:
    """Send a line to every Apprise URL given (refused at start when one is not one)."""
    import apprise

    notifier: Any = apprise.Apprise()
    for url in urls:
        if not notifier.add(url):
            raise ServeRefused(f"--notify {url!r} is not a notification URL Apprise knows")

    def send(line: str) -> bool:
        return bool(notifier.notify(title="Boris", body=line))

    return send
