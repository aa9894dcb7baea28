"""Checkpoints and stop: the state another actor resumes from, and how a run ends by decision.

A checkpoint is written in the same transaction as its event, and names the boundary it was
taken at (the last event before it, by seq and chain hash). Each later checkpoint supersedes
the head it was written from; checkpoints nothing supersedes are heads, and two heads are a
fork: reported, never silently resolved. A merge supersedes the branch kept and records the
other, and is only ever what the command names: a stop on a fork without a named head writes
a stopped checkpoint that supersedes nothing (see `StopRun`), so the fork stays visible. A
final checkpoint closes the lineage: it names every head (the one it continues from, each
other merged) or is refused (`ForkOpen`, `fork_open`), so a completed task has one head.
"""

from __future__ import annotations

import re
import secrets
from typing import Any, Literal

import sqlalchemy as sa
from pydantic import Field, field_validator

from .. import db, limits, rules
from .. import events as ev
from .. import schema as t
from .. import status as st
from ..canonical import canonical_json, canonical_object
from ..errors import CommandRejected, EvidenceMissing, ForkOpen, PendingWork
from ..model import Actor
from ..tx import KnownState, Tx
from .checkpoint_state import known_state
from .core import TaskCommand, _require_writable, change_status, handles
from .leases import end_agent_lease
from .waits import retire_open_waits

Reason = Literal["initial", "milestone", "handoff", "stopped", "final"]


class WriteCheckpoint(TaskCommand):
    type: Literal["write_checkpoint"] = "write_checkpoint"
    reason: Reason
    note: str = ""
    # The head this continues from; by default the one head there is.
    supersedes: list[str] | None = None
    # Other heads this checkpoint merges (they are superseded and recorded as merged).
    merge: list[str] = Field(default_factory=list)
    checkpoint_id: str | None = None
    # The same moment's identities in another system (a LangGraph thread and checkpoint id:
    # store.adapters.langgraph), kept beside Boris's own; names and ids, not a state.
    external: dict[str, str] | None = None

    @field_validator("external")
    @classmethod
    def _few_short_ids(cls, value: dict[str, str] | None) -> dict[str, str] | None:
        if value is None:
            return None
        if not value or len(value) > limits.MAX_EXTERNAL_IDS:
            raise ValueError(f"external holds 1 to {limits.MAX_EXTERNAL_IDS} names and ids")
        for name, ident in value.items():
            if not name or not ident or max(len(name), len(ident)) > limits.MAX_EXTERNAL_ID_CHARS:
                raise ValueError(
                    f"each external name and id is 1 to {limits.MAX_EXTERNAL_ID_CHARS} characters"
                )
        return value


class CloseTask(TaskCommand):
    """Close a task that will not be finished: a person's decision, with their reason. It
    becomes `failed` (given up; a person may still reopen it) or `superseded` (another task
    replaces it; the record closes). A run that may still dispatch is stopped first, so
    closing never leaves an approval to be decided or an effect planned."""

    type: Literal["close_task"] = "close_task"
    status: Literal["failed", "superseded"]
    reason: str = Field(min_length=1)


class StopRun(TaskCommand):
    """Stop the run by decision. On a forked lineage the stop chooses no head by itself:
    without `supersedes` the stopped checkpoint continues from none of the heads (it
    supersedes nothing, so every head stays a head beside it) and its account names the fork
    as unresolved; with `supersedes` it continues from that head, and merges only the heads
    named in `merge`. Superseding every head would be a merge, and a merge is a person's
    explicit choice, never a side effect of stopping."""

    type: Literal["stop_run"] = "stop_run"
    reason: str = Field(min_length=1)
    # The head the stopped checkpoint continues from; by default the one head there is, and
    # on a fork none.
    supersedes: str | None = None
    # Other heads the stopped checkpoint merges: only these, and only with `supersedes`.
    merge: list[str] = Field(default_factory=list)


# --- the structured state ------------------------------------------------------------------


def _rows(tx: Tx, table: sa.Table, task_id: str, *order: Any) -> list[Any]:
    return list(
        tx.conn.execute(sa.select(table).where(table.c.task_id == task_id).order_by(*order))
    )


# --- writing -------------------------------------------------------------------------------


_CK = t.checkpoints
_ONE = db.Prepared(
    sa.select(_CK.c.checkpoint_id).where(
        _CK.c.task_id == sa.bindparam("task_id"),
        _CK.c.checkpoint_id == sa.bindparam("checkpoint_id"),
    )
)


def heads(tx: Tx, task_id: str) -> list[str]:
    """The task's heads, oldest first, as its row in this transaction has them."""
    return tx.task(task_id).checkpoint_heads


def _exists(tx: Tx, task_id: str, checkpoint_id: str) -> bool:
    return bool(_ONE.run(tx.conn, {"task_id": task_id, "checkpoint_id": checkpoint_id}))


def write_checkpoint(
    tx: Tx,
    task_id: str,
    reason: str,
    actor: Actor,
    *,
    note: str = "",
    supersedes: list[str] | None = None,
    merge: list[str] | None = None,
    checkpoint_id: str | None = None,
    external: dict[str, str] | None = None,
) -> str:
    current = _heads_to_continue(tx, task_id, reason, actor)
    merge = list(merge or [])
    supersedes = _parents(tx, task_id, reason, current, supersedes, merge)
    known = known_state(tx, task_id)
    state = known.state
    if reason == "final":
        _refuse_pending_work(tx, task_id, state)
    if actor.kind == "person" and not note.strip():
        raise CommandRejected("a person's checkpoint carries their note")
    seq, chain = tx._head(task_id)
    cid = checkpoint_id or _generated_id(seq + 1)
    if checkpoint_id is not None:
        if _GENERATED.fullmatch(checkpoint_id):
            raise CommandRejected(
                f"checkpoint id {checkpoint_id} has the form of the ids Boris generates "
                "(ckpt- and hex digits): give another, or none to have one generated"
            )
        if cid in current or _exists(tx, task_id, cid):
            raise CommandRejected(f"checkpoint {cid} already exists")
    payload = ev.CheckpointWritten(
        checkpoint_id=cid,
        reason=reason,  # type: ignore[arg-type]
        supersedes=tuple(supersedes),
        merged=tuple(merge),
        boundary_seq=seq,
        boundary_hash=chain,
        state=state,
        state_digest=known.digest,
        note=note,
        external=external,
    )
    written = tx.emit(task_id, payload, actor, payload_json(payload, known.state_json))
    # Its own event changes nothing the state is built from: the state holds at the new head.
    # (Built, not dataclasses.replace'd: that walks the fields, a few µs on every write.)
    tx.learned[task_id] = KnownState(
        head=(written.seq, written.hash),
        state=known.state,
        state_json=known.state_json,
        digest=known.digest,
        valid_until=known.valid_until,
    )
    return cid


#: The form of the ids Boris generates: an id given is never of it (`write_checkpoint`), so
#: no generated id can take one an agent gave.
_GENERATED = re.compile(r"ckpt-[0-9a-f]{8,}")


def _generated_id(seq: int) -> str:
    """A new checkpoint's id: the hex of its event's seq, unique in the task (of tasks with
    10,000 checkpoints under random ids, about one in a hundred had a write refused for a
    clash), and a random byte, so an id copied from another task is not one of this one's. The lineage table is keyed by
    (task, id): ids in the order they are written go to the end of the task's range, where
    random ones went anywhere in it, a page read and written at random per checkpoint in a
    large task (issue 44: the same cost at 10 and at 10,000 events)."""
    return f"ckpt-{seq:06x}{secrets.token_hex(1)}"


def _heads_to_continue(tx: Tx, task_id: str, reason: str, actor: Actor) -> list[str]:
    """The heads the checkpoint continues from. Every checkpoint is a head until a later one
    supersedes it, so a lineage with any checkpoint has a head; the first checkpoint of a
    record is its initial one, written here when the one requested is not."""
    current = heads(tx, task_id)
    if reason == "initial" and current:
        raise CommandRejected("a task has exactly one initial checkpoint, and it has one")
    if not current and reason != "initial":
        write_checkpoint(tx, task_id, "initial", actor, note="the record's first checkpoint")
        current = heads(tx, task_id)
    return current


def _parents(
    tx: Tx,
    task_id: str,
    reason: str,
    current: list[str],
    supersedes: list[str] | None,
    merge: list[str],
) -> list[str]:
    """The checkpoints the new one supersedes (the head it continues from; the one head
    there is when none is named), after refusing what the lineage does not allow: a final
    checkpoint leaving a head open, an unnamed head on a fork, a parent that is no
    checkpoint of the task, a merge of what is not a head."""
    if reason == "final":
        # A final checkpoint closes the lineage: every head is named, the one it continues
        # from and each other merged, or nothing is written (the store never picks one).
        refusal = rules.final_fork_refusal(current, supersedes, merge)
        if refusal is not None:
            left = rules.final_left_open(current, supersedes, merge)
            raise ForkOpen(
                list(current), list(left), f"task {task_id}: {refusal}; nothing was written"
            )
    if supersedes is None:
        if len(current) > 1 and not merge:
            raise CommandRejected(
                f"the lineage has forked (heads {', '.join(current)}): name the head this "
                "continues from and merge the others"
            )
        supersedes = [h for h in current if h not in merge][:1]
    for ref in (*supersedes, *merge):
        if ref not in current and not _exists(tx, task_id, ref):
            raise CommandRejected(f"task {task_id} has no checkpoint {ref!r}")
    for ref in merge:
        if ref not in current:
            raise CommandRejected(f"checkpoint {ref} is not a head: only a head can be merged")
    return supersedes


def _refuse_pending_work(tx: Tx, task_id: str, state: dict[str, Any]) -> None:
    """A final checkpoint says nothing is left to do: refused while the state it would hold
    has pending work, or a criterion's evidence is missing now."""
    pending = list(state["pending_work"])
    missing = _evidence_missing(tx, task_id)
    pending += [f"criterion {cid} has evidence missing" for cid in missing]
    if not pending:
        return
    message = (
        "a final checkpoint needs no pending work, and there is: "
        + "; ".join(pending)
        + ". Write a handoff (to pass it on) or stop the run (stopped) instead"
    )
    if missing:
        raise EvidenceMissing(missing, message)
    raise PendingWork(pending, message)


def _evidence_missing(tx: Tx, task_id: str) -> list[str]:
    """Criteria judged satisfied whose evidence was retired or cannot be read now: not done,
    whatever the stored status says (the blob check is the caller's I/O, the rule is
    `rules`'). A retired item counts for nothing though another keeps its blob readable."""
    from .core import criterion_views, readable_in

    readable = readable_in(tx)
    return [
        v.criterion_id
        for v in criterion_views(tx, task_id)
        if rules.view_state(v, readable) == rules.CriterionState.EVIDENCE_MISSING
    ]


def _members_read_directly() -> tuple[str, ...] | None:
    """The payload's members but the state, when each is a value orjson writes as pydantic's
    JSON dump would (text, a number, a tuple of text, a mapping of text): they are then read
    off the model instead of dumped, which cost several times the rest of the payload's
    encoding on every checkpoint write (issue 36). None (dump them) if a member of another
    kind is ever added."""
    plain = {str, int, tuple[str, ...], dict[str, str] | None}
    fields = ev.CheckpointWritten.model_fields
    names = tuple(n for n in fields if n != "state")
    for name in names:
        kind = fields[name].annotation
        if kind not in plain and getattr(kind, "__origin__", None) is not Literal:
            return None
    return names


_MEMBERS = _members_read_directly()
_LEFT_OUT_WHILE_NONE = ev.CheckpointWritten.ADDED


def payload_json(payload: ev.CheckpointWritten, state_json: str) -> str:
    """The event's canonical JSON around the state's, which is encoded once (it is most of
    the event) and reused while the state holds."""
    if _MEMBERS is None:
        members = payload.model_dump(mode="json", exclude={"state"})
    else:
        # As the dump gives them (tests/test_checkpoint_write_path.py compares the two).
        values = payload.__dict__  # a pydantic model's field values, as validated
        members = {n: values[n] for n in _MEMBERS}
        for name in _LEFT_OUT_WHILE_NONE:
            if members.get(name) is None:
                members.pop(name, None)
    members["state"] = 0  # a stand-in, encoded with the rest in one call, then replaced
    text = canonical_json(members)
    # `"state":0` occurs once, as this member: the other members are strings, numbers and
    # lists of strings, and a quote inside a JSON string is always escaped.
    head, found, tail = text.partition('"state":0')
    if not found or '"state":0' in tail:  # pragma: no cover - the reasoning above failed
        return canonical_object(
            {k: canonical_json(v) for k, v in members.items()} | {"state": state_json}
        )
    return f'{head}"state":{state_json}{tail}'


@handles(WriteCheckpoint)
def _write_checkpoint(tx: Tx, cmd: WriteCheckpoint, actor: Actor) -> str:
    _require_writable(tx, cmd.task_id)
    if cmd.reason == "stopped":
        raise CommandRejected("a stopped checkpoint is written by the stop command")
    cid = write_checkpoint(
        tx,
        cmd.task_id,
        cmd.reason,
        actor,
        note=cmd.note,
        supersedes=cmd.supersedes,
        merge=cmd.merge,
        checkpoint_id=cmd.checkpoint_id,
        external=cmd.external,
    )
    if cmd.reason == "final":
        # A final checkpoint is written only with nothing pending, so it completes the task
        # (whoever writes it; the completion rule is checked again by change_status). A run
        # a person stopped stays as it is: only a person resumes it, then finishes it.
        status = str(tx.task(cmd.task_id).status)
        if st.allowed(status, rules.RunStatus.COMPLETED):
            change_status(
                tx,
                cmd.task_id,
                rules.RunStatus.COMPLETED,
                f"final checkpoint {cid}: every criterion satisfied or waived",
                actor,
            )
    return cid


@handles(CloseTask)
def _close(tx: Tx, cmd: CloseTask, actor: Actor) -> str:
    current = _require_writable(tx, cmd.task_id)
    refusal = rules.close_refusal(current, cmd.status)
    if refusal is not None:
        raise CommandRejected(f"task {cmd.task_id}: {refusal}")
    # As a stop does: nothing stays scheduled for a run that will not be finished.
    retire_open_waits(tx, cmd.task_id, f"closed as {cmd.status}: {cmd.reason}", actor)
    end_agent_lease(tx, cmd.task_id, f"closed as {cmd.status}: {cmd.reason}", actor)
    change_status(tx, cmd.task_id, cmd.status, f"closed by {actor.label()}: {cmd.reason}", actor)
    return cmd.status


@handles(StopRun)
def _stop(tx: Tx, cmd: StopRun, actor: Actor) -> str:
    current = _require_writable(tx, cmd.task_id)
    if not st.can_stop(current):
        raise CommandRejected(f"a run that is {current} cannot be stopped")
    approvals = tx.conn.execute(
        sa.select(t.approvals.c.approval_id, t.approvals.c.state, t.approvals.c.expires_at).where(
            t.approvals.c.task_id == cmd.task_id
        )
    )
    effects = _rows(tx, t.effects, cmd.task_id, t.effects.c.position)
    current_heads = heads(tx, cmd.task_id)
    refusal = rules.stop_lineage_refusal(current_heads, cmd.supersedes, cmd.merge)
    if refusal is not None:
        raise CommandRejected(f"task {cmd.task_id}: {refusal}")
    plan = rules.stop_plan(
        [(a, s, x) for a, s, x in approvals],
        [(e.effect_id, e.stage, e.outcome) for e in effects],
        tx.now,
        current_heads,
        continue_from=cmd.supersedes,
        merge=cmd.merge,
    )
    open_approvals, cancel = list(plan.revoke), list(plan.cancel)
    unresolved = [e for e in effects if e.effect_id in plan.unresolved]
    if open_approvals:
        tx.emit(
            cmd.task_id,
            ev.ApprovalRetired(
                approval_ids=tuple(open_approvals), state="revoked", reason=f"stopped: {cmd.reason}"
            ),
            actor,
        )
    for effect_id in cancel:
        tx.emit(
            cmd.task_id,
            ev.EffectCancelled(effect_id=effect_id, reason=f"stopped: {cmd.reason}"),
            actor,
        )
    # Scheduled work ends with the run: every open wait retired, its reservation released.
    retired_waits = retire_open_waits(tx, cmd.task_id, f"stopped: {cmd.reason}", actor)
    # And the agent working on it stops: its lease ends, its later writes are lease_lost.
    ended_token = end_agent_lease(tx, cmd.task_id, f"stopped: {cmd.reason}", actor)
    account = stop_account(actor, cmd.reason, open_approvals, cancel, unresolved)
    account += fork_account(plan)
    if retired_waits:
        account += f" Waits retired (reservations released): {', '.join(retired_waits)}."
    if ended_token is not None:
        account += f" The agent's lease (token {ended_token}) ended."
    tx.emit(
        cmd.task_id,
        ev.RunStopped(
            from_status=current,
            reason=cmd.reason,
            revoked_approvals=tuple(open_approvals),
            cancelled_effects=tuple(cancel),
            unresolved_effects=tuple(e.effect_id for e in unresolved),
            account=account,
        ),
        actor,
    )
    return write_checkpoint(
        tx,
        cmd.task_id,
        "stopped",
        actor,
        note=account,
        # On a fork with no head named: no parent at all (every head stays a head). With
        # no checkpoint yet: None, so the record's initial one is written first.
        supersedes=([plan.continue_from] if plan.continue_from else ([] if plan.fork else None)),
        merge=list(plan.merge),
    )


def _and(ids: tuple[str, ...]) -> str:
    return ", ".join(ids[:-1]) + " and " + ids[-1] if len(ids) > 1 else "".join(ids)


def fork_account(plan: rules.StopPlan) -> str:
    """What the stop did with a forked lineage, for its account ("" with no fork)."""
    if not plan.fork:
        return ""
    forked = f" The lineage is forked (heads {_and(plan.fork)})."
    if plan.continue_from is None:
        return (
            forked + f" Still unresolved: the fork, heads {_and(plan.fork)}, none chosen. "
            "This stopped checkpoint continues from none of them and merges nothing; they "
            "stay heads until a person chooses which to continue from."
        )
    text = forked + f" As chosen, this stopped checkpoint continues from {plan.continue_from}"
    text += f" and merges {_and(plan.merge)}." if plan.merge else "."
    if plan.left_open:
        text += (
            f" Still unresolved: {_and(plan.left_open)} "
            + ("stays a head" if len(plan.left_open) == 1 else "stay heads")
            + ", not merged."
        )
    return text


def stop_account(
    actor: Actor, reason: str, revoked: list[str], cancelled: list[str], unresolved: list[Any]
) -> str:
    lines = [f"Stopped by {actor.label()}: {reason}."]
    lines.append("Approvals revoked: " + (", ".join(revoked) or "none") + ".")
    lines.append("Planned effects cancelled: " + (", ".join(cancelled) or "none") + ".")
    if unresolved:
        lines.append(
            "Still unresolved, to reconcile by hand: "
            + "; ".join(
                f"{e.effect_id} ({e.stage}, {e.outcome or 'no outcome'}) at {e.target}"
                for e in unresolved
            )
            + "."
        )
    else:
        lines.append("Nothing is left unresolved.")
    return " ".join(lines)
