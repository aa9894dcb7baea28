"""Escalations, fired by whatever is running (issue 42, routing).

A routed request nobody answered in time escalates: its policy's escalation people may decide
it too (`approval.escalated`, naming them). Who may decide is judged when read, on the
database clock, so a decision never waits for a tick; the record of the moment, and the
notice it gives the people it now waits on, come from a tick. Every process a person or an
agent keeps running ticks: the open window (a timer), `boris serve`, `boris mcp` while an
agent waits, and `boris route escalate` from cron. Each asks `escalate_due`: one read says
whether anything is due (nothing is written when nothing is); what is due is recorded as the
store's own action (`system:boris`, as the store records what it judged itself; in an
agent's own name from an agent's process, whose key signs nothing in the store's), each
escalation once however many processes tick at the same moment (the command takes the
task's row lock before it reads the escalations already recorded).

The same tick applies a person's standing rules where the call's asker could not: on a team
store an agents' login may not write a rule's decision, so a call a person's rule covers,
asked through it, waits (store.commands.standing_rules.decide_by_rule). A person's tick
decides each such request their own active rule covers (`rules_due`, a read first; then
`DecideByStandingRules` in their name, signed by their key), recorded as decided by the rule
as on SQLite, where the rule decides as the call is asked and no tick finds anything.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from .. import db
from ..commands.routing import EscalateDue
from ..commands.rule_ticks import DecideByStandingRules, rules_due
from ..model import Actor
from ..reads.routing import pending_routes
from ..rules.routing import escalation_due, next_escalation
from ..store import Store

log = logging.getLogger("boris.escalations")

#: How often a running process looks for a due escalation: a read of the pending routed
#: requests, nothing written unless one is due.
EVERY_SECONDS = 15.0


def due_now(store: Store) -> tuple[list[str], str]:
    """The routed requests (TASK/APPROVAL) whose escalation is due now, and the database
    clock it was judged at. A read only."""
    with store.read() as conn:
        now = db.database_now(conn)
        found = pending_routes(conn)
    due = [
        f"{p.task_id}/{p.approval_id}"
        for p in found.values()
        if escalation_due(p.route, p.expires_at, p.escalations, now) is not None
    ]
    return due, now


def next_due(store: Store) -> str | None:
    """When the next escalation comes due (database clock); None when none will."""
    with store.read() as conn:
        found = pending_routes(conn)
    times = [
        at
        for p in found.values()
        if (at := next_escalation(p.route, p.expires_at, p.escalations)) is not None
    ]
    return min(times) if times else None


def escalate_due(store: Store, ticker: Actor) -> list[str]:
    """Record every escalation due now, and (a person's tick) decide the requests their own
    standing rules decide that an agents' login asked; TASK/APPROVAL each. A read when
    nothing is due.

    `ticker`: who runs the process that ticks. A person's process (the window, `boris serve`,
    cron as a person) records an escalation as the store's own action, `system:boris`, signed
    by their key; an agent's (`boris mcp`) in the agent's own name, as an agent's key signs
    nothing in the store's (store.signing.seal). Either way what is recorded is the store's
    judgement, and `boris verify` checks it was due. A rule's decision is the person's, in
    their name: an agent's tick makes none."""
    due, _ = due_now(store)
    ruled = rules_due_now(store, ticker)
    if not due and not ruled:
        return []
    store.sign_as(ticker)  # only now that something is written: their key signs it
    done: list[str] = []
    if due:
        command = EscalateDue()
        if ticker.kind == "person":
            done += store.execute_as_store(command)
        else:
            done += store.execute(command, ticker)
    if ruled:
        done += store.execute(DecideByStandingRules(), ticker)
    return done


def rules_due_now(store: Store, person: Actor) -> list[str]:
    """The requests (TASK/APPROVAL) that `person`'s own standing rules decide now and only
    their process may record (asked through a team store's agents' login). A read only; []
    for an agent."""
    if person.kind != "person":
        return []
    with store.read() as conn:
        now = db.database_now(conn)
        return [d.key for d in rules_due(conn, person.id, now)]


class Ticker:
    """A daemon thread that calls `escalate_due` every `every` seconds until `stop` (for
    `boris serve` and `boris mcp`); `lock`, where the process serializes its store's use."""

    def __init__(
        self,
        store: Store,
        ticker: Actor,
        every: float = EVERY_SECONDS,
        lock: threading.Lock | None = None,
        on_escalated: Callable[[list[str]], None] | None = None,
        stop: threading.Event | None = None,
    ) -> None:
        self.store, self.ticker, self.every, self.lock = store, ticker, every, lock
        self.on_escalated = on_escalated
        self.stop = stop if stop is not None else threading.Event()
        self._thread = threading.Thread(target=self._run, name="boris-escalations", daemon=True)

    def start(self) -> Ticker:
        self._thread.start()
        return self

    def tick(self) -> list[str]:
        if self.lock is None:
            return escalate_due(self.store, self.ticker)
        with self.lock:
            return escalate_due(self.store, self.ticker)

    def _run(self) -> None:
        said = ""  # the last failure logged: a lasting one (a key not trusted) is said once
        while not self.stop.is_set():
            try:
                done = self.tick()
                said = ""
                if done and self.on_escalated is not None:
                    self.on_escalated(done)
            except Exception as exc:  # a tick never stops what it runs beside
                if str(exc) != said:
                    said = str(exc)
                    log.exception("escalations: a tick failed")
            self.stop.wait(self.every)

    def close(self) -> None:
        self.stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=5)
