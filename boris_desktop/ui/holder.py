"""Who works on a task now, in words: its lease as the Tasks list, the task header and the
Take Over dialog say it.

The lease's standing is the store's rule (`api.lease_standing`), asked again with the
database clock as the window follows it between reads (`Clock`): a lease that runs out
without a heartbeat reads as idle within a tick of its expiry, with no write to the store.
"""

from __future__ import annotations

import time
from datetime import timedelta
from typing import TYPE_CHECKING

from boris_desktop.ui import text as t
from store import api

if TYPE_CHECKING:
    from datetime import datetime

    from store.api import ActorRef, Lease, Wait

#: Idle longer than this is said as a duration ("idle 2 d"), not a time of day.
DAY = 24 * 3600


class Clock:
    """The database clock as last read, moved on by the local monotonic clock since."""

    def __init__(self) -> None:
        self._read: tuple[datetime, float] | None = None

    def set(self, now: str | None) -> None:
        """The database's clock as a read just gave it."""
        if now:
            self._read = (t.parse(now), time.monotonic())

    def now(self) -> str:
        """The database clock now ("" before the first reading)."""
        if self._read is None:
            return ""
        at, read = self._read
        moved = at + timedelta(seconds=time.monotonic() - read)
        return str(moved.strftime("%Y-%m-%dT%H:%M:%S.%fZ"))


def standing(lease: Lease | None, now: str) -> api.LeaseStanding:
    """The lease's standing at `now` (database clock): the store's rule, asked again."""
    if lease is None:
        return api.LeaseStanding.NONE
    if not now:
        return api.LeaseStanding(lease.standing)
    return api.lease_standing(lease.ended_at, lease.expires_at, now)


def is_reviewer(holder: ActorRef | None, reviewer_id: str | None) -> bool:
    return bool(
        holder and reviewer_id and holder.kind == api.ActorKind.PERSON and holder.id == reviewer_id
    )


def _ago(at: str | None, now: str) -> str:
    if not at or not now:
        return ""
    return t.duration(max((t.parse(now) - t.parse(at)).total_seconds(), 0)) + " ago"


def last_touched(lease: Lease | None, updated_at: str | None) -> str | None:
    """When anyone last worked on the task: the later of its last write and, for a lease,
    its last heartbeat or its end."""
    marks = [m for m in (updated_at,) if m]
    if lease is not None:
        marks += [m for m in (lease.last_heartbeat_at, lease.ended_at) if m]
    return max(marks, key=lambda m: t.parse(m)) if marks else None


def idle_words(since: str | None, now: str) -> str:
    """ "idle since 14:02" the same day, "idle 2 d" after a day or more."""
    if not since:
        return "idle"
    idle = (t.parse(now) - t.parse(since)).total_seconds() if now else 0
    if idle >= DAY:
        return f"idle {int(idle // DAY)} d"
    return f"idle since {t.parse(since).astimezone().strftime('%H:%M')}"


def working_now(
    lease: Lease | None, updated_at: str | None, now: str, reviewer_id: str | None
) -> str:
    """The Tasks list's "Working now": "drafter-7 · 12 s ago", "you", "idle since 14:02"."""
    if standing(lease, now) == api.LeaseStanding.ALIVE and lease is not None:
        holder = lease.holder
        if is_reviewer(holder, reviewer_id):
            return "you"
        if holder.kind == api.ActorKind.PERSON:
            return f"{holder.id} (person)"
        heard = _ago(lease.last_heartbeat_at, now)
        return f"{holder.id} · {heard}" if heard else str(holder.id)
    return idle_words(last_touched(lease, updated_at), now)


def holder_line(
    lease: Lease | None, updated_at: str | None, now: str, reviewer_id: str | None
) -> str:
    """The task header's line: who holds the task, since when, and whether they are alive."""
    if lease is None:
        return "nobody holds it (never leased) · " + idle_words(last_touched(None, updated_at), now)
    holder = lease.holder
    who = "you" if is_reviewer(holder, reviewer_id) else t.actor(holder)
    since = t.when(lease.since)
    now_standing = standing(lease, now)
    if now_standing == api.LeaseStanding.ALIVE:
        if holder.kind == api.ActorKind.PERSON:
            return f"{who}, since {since} (taken over, token {lease.token})"
        heard = _ago(lease.last_heartbeat_at, now)
        return (
            f"{who}, session {lease.session_id}, since {since} · alive, last heard "
            f"{heard} (token {lease.token})"
        )
    idle = idle_words(last_touched(lease, updated_at), now)
    if now_standing == api.LeaseStanding.EXPIRED:
        return f"nobody: {who}'s lease expired at {t.when(lease.expires_at)} · {idle}"
    ended = lease.end_reason or "ended"
    return f"nobody: {who}'s lease {ended.replace('_', ' ')} at {t.when(lease.ended_at)} · {idle}"


def next_consideration(w: Wait, now: str) -> str:
    """A wait's next consideration time: "due", "in 5 min", or "—" once it ended."""
    if w.state != api.WaitState.OPEN:
        return "—"
    if w.due or not now or t.parse(w.not_before) <= t.parse(now):
        return "due"
    return "in " + t.duration((t.parse(w.not_before) - t.parse(now)).total_seconds())


def waits_line(waits: list[Wait], now: str) -> str:
    """The open waits' count and the next one's time, for the task header."""
    open_ = [w for w in waits if w.state == api.WaitState.OPEN]
    if not open_:
        return "no open waits"
    first = min(open_, key=lambda w: t.parse(w.not_before))
    return (
        f"{t.count(len(open_), 'open wait', 'open waits')}, next {first.waiting_for}: "
        f"{next_consideration(first, now)}"
    )
