"""Leases: which session works on a task now, and the fencing token its writes carry.

An agent session acquires the task's lease (`AcquireLease`) and gets a token, one more than
any the task had; it renews it with heartbeats (`RenewLease`) and lets it go when done
(`ReleaseLease`). A person takes the task over (`TakeOver`, a decision with a reason): the
agent's lease ends and the person holds a new token, with no expiry, until they hand the task
back (a handoff checkpoint, then `ReleaseLease`). Every agent write carries its token
(`TaskCommand.lease_token`) and `core.fence` refuses one that is not current (LeaseLost): a
session that wakes after a takeover cannot write beside the person. A lease controls who
works now; it never proves what happened remotely (the effect ledger does).

Honest without flooding the log: acquiring, releasing and taking over are chained events; a
heartbeat is not. It updates `lease_heartbeats` (outside the chain and the projections; a
rebuild leaves it alone), believed only for the lease of its token. Expiry is judged when
read, on the database's clock, never written; an expiry matters to the record when somebody
acts on it, and the acquisition that replaces an expired lease records it as `expired`
(`LeaseBefore`). A rebuild from the events restores every lease with the expiry its
acquisition granted; the heartbeats kept beside it push that out as before.
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal

from pydantic import Field

from .. import events as ev
from .. import rules
from .. import schema as t
from ..errors import CommandRejected, LeaseHeld, LeaseLost
from ..model import Actor
from ..reads.inbox import Lease
from ..reads.leases import current, expires_at_of, lease_answer, lease_fields, lease_view
from ..tx import Tx
from .approvals import _plus_seconds
from .core import TaskCommand, _require_writable, fence, handles

SessionId = Field(min_length=1, max_length=128)
Ttl = Field(default=rules.LEASE_TTL_DEFAULT, ge=1, le=rules.LEASE_TTL_MAX)


class AcquireLease(TaskCommand):
    """Take the task's lease for this session: refused (lease_held) while another holder's
    is alive. Returns the lease: its token (send it with every write), expires_at."""

    type: Literal["acquire_lease"] = "acquire_lease"
    session_id: str = SessionId
    ttl_seconds: int = Ttl
    FENCED: ClassVar[bool] = False


class RenewLease(TaskCommand):
    """A heartbeat: the lease of `lease_token` lasts `ttl_seconds` from now. No event."""

    type: Literal["renew_lease"] = "renew_lease"
    ttl_seconds: int | None = Field(default=None, ge=1, le=rules.LEASE_TTL_MAX)
    FENCED: ClassVar[bool] = False


class ReleaseLease(TaskCommand):
    """Let the lease go: an agent with its token; a person the lease they hold (handing a
    task they took over back, after a handoff checkpoint)."""

    type: Literal["release_lease"] = "release_lease"
    note: str = ""
    FENCED: ClassVar[bool] = False


class TakeOver(TaskCommand):
    """A person's decision: the session working on the task stops (its later writes are
    refused as lease_lost) and the person holds the task until they release it."""

    type: Literal["take_over"] = "take_over"
    reason: str = Field(min_length=1)
    FENCED: ClassVar[bool] = False


def _holder(row: Any) -> dict[str, Any]:
    holder: dict[str, Any] = lease_fields(row, "")["holder"]
    return holder


def _before(row: Any, now: str) -> ev.LeaseBefore | None:
    if row is None:
        return None
    standing = rules.lease_standing(row.ended_at, expires_at_of(row), now)
    said: Any = row.end_reason if standing == rules.LeaseStanding.ENDED else str(standing)
    return ev.LeaseBefore(
        token=int(row.token),
        holder=Actor.model_validate(_holder(row)),
        session_id=str(row.session_id),
        standing=said,
        expires_at=expires_at_of(row),
    )


def _heartbeat(tx: Tx, task_id: str, token: int, ttl: int) -> None:
    """Push the lease's expiry out: one row per task, outside the chain."""
    h = t.lease_heartbeats
    values = {"token": token, "last_heartbeat_at": tx.now, "expires_at": _plus_seconds(tx.now, ttl)}
    done = tx.conn.execute(h.update().where(h.c.task_id == task_id).values(**values))
    if done.rowcount == 0:
        tx.conn.execute(h.insert().values(task_id=task_id, **values))
    tx.forget_lease(task_id)  # the lease read with the task's row is the lease before this


def _current(tx: Tx, task_id: str) -> Any:
    tx.task(task_id)  # the task's row lock: writers to one task queue here (store.tx)
    return current(tx.conn, task_id)


@handles(AcquireLease)
def _acquire(tx: Tx, cmd: AcquireLease, actor: Actor) -> Lease:
    _require_writable(tx, cmd.task_id)
    row = _current(tx, cmd.task_id)
    if row is not None:
        view = lease_view(row, tx.now)
        holder = _holder(row)
        refusal = rules.acquire_refusal(view, actor.kind, actor.id, cmd.session_id)
        if refusal is None and view.standing == rules.LeaseStanding.ALIVE:
            # The same session asking again (it restarted and lost its answer): its lease,
            # renewed, not a second one.
            _heartbeat(tx, cmd.task_id, int(row.token), cmd.ttl_seconds)
            return lease_answer(current(tx.conn, cmd.task_id), tx.now)
        if refusal is not None:
            expires = expires_at_of(row)
            until = f"until {expires} unless renewed" if expires else "until they release it"
            raise LeaseHeld(
                cmd.task_id,
                f"{holder.get('kind')}:{holder.get('id')} holds the lease of task {cmd.task_id} "
                f"(token {row.token}, session {row.session_id or '-'}) {until}; "
                "nothing was written",
                holder=holder,
                lease_token=int(row.token),
                expires_at=expires,
            )
    token = 1 if row is None else int(row.token) + 1
    tx.emit(
        cmd.task_id,
        ev.LeaseAcquired(
            token=token,
            session_id=cmd.session_id,
            ttl_seconds=cmd.ttl_seconds,
            expires_at=_plus_seconds(tx.now, cmd.ttl_seconds),
            before=_before(row, tx.now),
        ),
        actor,
    )
    return lease_answer(current(tx.conn, cmd.task_id), tx.now)


def _held_by(tx: Tx, cmd: TaskCommand, actor: Actor, doing: str) -> Any:
    """The lease `cmd` acts on: an agent's by its token (the fence's rule); a person's the
    one they hold."""
    row = _current(tx, cmd.task_id)
    if actor.kind == "agent":
        if cmd.lease_token is None:
            raise CommandRejected(f"to {doing} a lease, give its lease_token; nothing was written")
        fence(tx, cmd.task_id, cmd.lease_token, actor)
        assert row is not None  # the fence refused a token with no lease
        return row
    mine = (
        row is not None
        and row.ended_at is None
        and _holder(row).get("kind") == actor.kind
        and _holder(row).get("id") == actor.id
    )
    if not mine or (cmd.lease_token is not None and cmd.lease_token != int(row.token)):
        holder = None if row is None else _holder(row)
        raise LeaseLost(
            cmd.task_id,
            f"{actor.kind}:{actor.id} holds no lease on task {cmd.task_id} to {doing}"
            + ("" if holder is None else f" (its lease is {holder['kind']}:{holder['id']}'s)")
            + "; a person takes a task over with take_over; nothing was written",
            lease_token=cmd.lease_token,
            current_token=None if row is None else int(row.token),
            holder=holder,
        )
    return row


@handles(RenewLease)
def _renew(tx: Tx, cmd: RenewLease, actor: Actor) -> Lease:
    row = _held_by(tx, cmd, actor, "renew")
    ttl = cmd.ttl_seconds or row.ttl_seconds
    if ttl is None:
        return lease_answer(row, tx.now)  # a person's lease: held until released
    _heartbeat(tx, cmd.task_id, int(row.token), int(ttl))
    return lease_answer(current(tx.conn, cmd.task_id), tx.now)


@handles(ReleaseLease)
def _release(tx: Tx, cmd: ReleaseLease, actor: Actor) -> Lease:
    row = _held_by(tx, cmd, actor, "release")
    tx.emit(cmd.task_id, ev.LeaseReleased(token=int(row.token), note=cmd.note), actor)
    return lease_answer(current(tx.conn, cmd.task_id), tx.now)


def end_agent_lease(tx: Tx, task_id: str, reason: str, actor: Actor) -> int | None:
    """End the agent's lease of the task, in the caller's transaction (a person's stop, or
    closing the task): a `lease.released` by that person, so the agent's next write with its
    token is refused (LeaseLost) instead of landing in a stopped run. Alive or merely expired
    alike: an expired token still writes until somebody ends it. A person's lease stays
    theirs. Returns the token ended, or None."""
    row = _current(tx, task_id)
    if row is None or row.ended_at is not None or _holder(row).get("kind") != "agent":
        return None
    tx.emit(task_id, ev.LeaseReleased(token=int(row.token), note=reason), actor)
    return int(row.token)


@handles(TakeOver)
def _take_over(tx: Tx, cmd: TakeOver, actor: Actor) -> Lease:
    _require_writable(tx, cmd.task_id)
    row = _current(tx, cmd.task_id)
    if row is not None and row.ended_at is None:
        holder = _holder(row)
        if holder.get("kind") == actor.kind and holder.get("id") == actor.id:
            raise CommandRejected(
                f"you ({actor.kind}:{actor.id}) already hold task {cmd.task_id} "
                f"(token {row.token}); nothing was written"
            )
    token = 1 if row is None else int(row.token) + 1
    tx.emit(
        cmd.task_id,
        ev.LeaseTakenOver(token=token, reason=cmd.reason.strip(), before=_before(row, tx.now)),
        actor,
    )
    return lease_answer(current(tx.conn, cmd.task_id), tx.now)
