"""The effect ledger: what a task intends to do to the world, what it tried, what is there now.

An effect's intent (target, pre-state, intended post-state, the exact prepared object and a
one-line consequence) is recorded before any dispatch. Each dispatch is an attempt under the
same effect and idempotency key. An executor's word is kept as its response; only an
observation of the target, compared with the intent, settles what happened.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import sqlalchemy as sa
from pydantic import Field, PrivateAttr

from .. import events as ev
from .. import rules
from .. import schema as t
from ..blobs import hash_file
from ..canonical import digest_of
from ..errors import (
    CommandRejected,
    ObservationOverride,
    ScopeViolation,
    TargetChanged,
    ToolDefinitionChanged,
)
from ..model import Actor, Scope
from ..reads import manifests as manifest_reads
from ..rules import is_destination
from ..scope import check_target
from ..tx import Tx
from . import authority, tool_calls
from .core import (
    BasedOn,
    Content,
    Ident,
    Reading,
    TaskCommand,
    _conflict,
    _require_writable,
    _scope,
    charge,
    handles,
    new_id,
    prepares,
    settle_status,
    store_content,
)

EffectKind = Literal["file_write", "upload", "send", "other"]


def normalize_consequence(text: str) -> str:
    """One line, single spaces: what an approval shows and binds, so it can be compared."""
    line = re.sub(r"\s+", " ", text).strip()
    if not line:
        raise CommandRejected("an effect needs a one-line consequence")
    return line


# --- observing a target ------------------------------------------------------------------


@dataclass(frozen=True)
class Seen:
    """A file target as hashed at one moment, with what `stat` said of it before hashing:
    while `stat` says the same, the hash holds and the file is not read again."""

    target: str
    state: ev.FileState
    mtime_ns: int | None
    signature: tuple[int, int, int, int] | None  # None: the file was missing


def _signature(target: str) -> tuple[int, int, int, int] | None:
    try:
        s = os.stat(target)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise CommandRejected(f"cannot observe {target}: {exc.strerror}") from exc
    return (s.st_size, s.st_mtime_ns, s.st_ino, s.st_ctime_ns)


def see_file(target: str) -> Seen:
    """Read and hash the target now (streamed). A missing file is a state, not an error."""
    try:
        st_ = os.stat(target)
    except FileNotFoundError:
        return Seen(target, ev.FileState(exists=False), None, None)
    except OSError as exc:
        raise CommandRejected(f"cannot observe {target}: {exc.strerror}") from exc
    if not os.path.isfile(target):
        raise CommandRejected(f"{target} is not a regular file")
    try:
        digest, size = hash_file(Path(target))
    except OSError as exc:
        raise CommandRejected(f"cannot read {target}: {exc.strerror}") from exc
    signature = (st_.st_size, st_.st_mtime_ns, st_.st_ino, st_.st_ctime_ns)
    return Seen(
        target, ev.FileState(exists=True, digest=digest, size=size), st_.st_mtime_ns, signature
    )


def observe_file(target: str) -> tuple[ev.FileState, int | None]:
    """Read and hash the target now (streamed). A missing file is a state, not an error."""
    seen = see_file(target)
    return seen.state, seen.mtime_ns


def _current(tx: Tx, task_id: str, target: str, seen: Seen | None) -> Seen:
    """The file target now: what was hashed before the write lock when `stat` still says the
    same of it (no second read), otherwise hashed again here."""
    real = _rescope(tx, task_id, target)
    if seen is not None and seen.target == real and _signature(real) == seen.signature:
        return seen
    return see_file(real)


def _rescope(tx: Tx, task_id: str, target: str) -> str:
    """The target judged against the scope again now: a link swapped in since planning that
    points outside the scope makes the target unobservable, not silently followed."""
    if is_destination(target):
        return target
    try:
        return check_target(_scope(tx, task_id), target)
    except ScopeViolation as exc:
        raise CommandRejected(
            f"the effect's target is now outside the task's scope: {exc}"
        ) from exc


# --- reading the ledger inside a transaction ---------------------------------------------


def effect_row(tx: Tx, task_id: str, effect_id: str) -> Any:
    row = tx.conn.execute(
        sa.select(t.effects).where(
            t.effects.c.task_id == task_id, t.effects.c.effect_id == effect_id
        )
    ).first()
    if row is None:
        raise CommandRejected(f"task {task_id} has no effect {effect_id!r}")
    return row


def attempts_of(tx: Tx, task_id: str, effect_id: str) -> list[Any]:
    return list(
        tx.conn.execute(
            sa.select(t.attempts)
            .where(t.attempts.c.task_id == task_id, t.attempts.c.effect_id == effect_id)
            .order_by(t.attempts.c.attempt_no)
        )
    )


def latest_observation(tx: Tx, task_id: str, effect_id: str) -> Any:
    return tx.conn.execute(
        sa.select(t.observations)
        .where(t.observations.c.task_id == task_id, t.observations.c.effect_id == effect_id)
        .order_by(t.observations.c.seq.desc())
        .limit(1)
    ).first()


# --- commands ----------------------------------------------------------------------------


class PlanEffect(TaskCommand):
    """Record an intent before anything is dispatched."""

    type: Literal["plan_effect"] = "plan_effect"
    effect_id: Ident | None = None
    kind: EffectKind = "file_write"
    target: str = Field(min_length=1)
    consequence: str
    # For a file write: the content it will write (its digest is the intended post-state).
    content: Content | None = None
    # For other targets, the intended and observed states as the writer knows them.
    intended: ev.FileState | None = None
    pre_state: ev.FileState | None = None
    prepared: dict[str, Any] | None = None
    requires_approval: bool = False
    policy: str = ""
    idempotency_key: str | None = Field(default=None, min_length=1, max_length=128)
    # The tool definition the intent is planned under (issue 35 part M): pinned with it.
    tool: str | None = Field(default=None, min_length=1, max_length=256)
    tool_digest: str | None = Field(
        default=None,
        pattern=r"^[a-z0-9-]{2,16}:[0-9a-f]{16,128}$",
        description="the tool's definition digest; left out: the current configuration's",
    )
    result_schema: dict[str, Any] | None = Field(
        default=None,
        description="a person may answer in the tool's place (respond) with a result fitting "
        "this JSON Schema; left out: as the approval's payload says",
    )


class ReviseEffect(TaskCommand):
    type: Literal["revise_effect"] = "revise_effect"
    effect_id: Ident
    reason: str = Field(min_length=1)
    consequence: str | None = None
    content: Content | None = None
    intended: ev.FileState | None = None
    prepared: dict[str, Any] | None = None


class CancelEffect(TaskCommand):
    type: Literal["cancel_effect"] = "cancel_effect"
    effect_id: Ident
    reason: str = Field(min_length=1)


class DispatchEffect(TaskCommand):
    """Record that an executor is being handed the prepared object, before it runs."""

    type: Literal["dispatch_effect"] = "dispatch_effect"
    effect_id: Ident
    executor: str = Field(min_length=1)
    inputs: dict[str, Any] | None = None
    approval_id: str | None = None


class RecordResponse(TaskCommand):
    type: Literal["record_response"] = "record_response"
    effect_id: Ident
    attempt_no: int | None = None
    # What the executor reported. `reported_success` is its word; `timeout` means nothing
    # came back after dispatch.
    reported: Literal["reported_success", "failed", "partial", "timeout"]
    response: dict[str, Any] | None = None
    error: str | None = None


def intended_file_state(
    tx: Tx, task_id: str, content: Content | None, given: ev.FileState | None
) -> ev.FileState:
    if content is not None:
        ident = store_content(tx, task_id, content, "intended")
        return ev.FileState(exists=True, digest=ident["digest"], size=ident["size"])
    if given is not None:
        return given
    raise CommandRejected("a planned effect needs its intended post-state: content or intended")


def prepared_object(
    kind: str, target: str, intended: ev.FileState, given: dict[str, Any] | None
) -> dict[str, Any]:
    if given is not None:
        return given
    return {"kind": kind, "target": target, "intended": intended.model_dump(mode="json")}


@handles(PlanEffect)
def _plan_effect(tx: Tx, cmd: PlanEffect, actor: Actor) -> str:
    status = _require_writable(tx, cmd.task_id)
    if status in rules.TERMINAL:
        raise CommandRejected(f"task {cmd.task_id} is {status}: nothing new may be planned")
    # A ScopeViolation is a CommandRejected already: it crosses with its own type
    # (UnsafeDestination among them), so callers can tell what was refused.
    target = check_target(_scope(tx, cmd.task_id), cmd.target)
    effect_id = cmd.effect_id or new_id("eff")
    key = cmd.idempotency_key or f"{cmd.task_id}:{effect_id}"
    clash = tx.conn.execute(
        sa.select(t.effects.c.effect_id).where(
            t.effects.c.task_id == cmd.task_id,
            sa.or_(t.effects.c.effect_id == effect_id, t.effects.c.idempotency_key == key),
        )
    ).first()
    if clash is not None:
        raise CommandRejected(
            f"effect {clash.effect_id} already holds id {effect_id!r} or idempotency key "
            f"{key!r}: a retry is a new attempt under it, not a new effect"
        )
    if is_destination(target):
        pre = cmd.pre_state
    else:
        pre, _ = observe_file(target)
    intended = intended_file_state(tx, cmd.task_id, cmd.content, cmd.intended)
    prepared = prepared_object(cmd.kind, target, intended, cmd.prepared)
    tx.emit(
        cmd.task_id,
        ev.EffectPlanned(
            effect_id=effect_id,
            kind=cmd.kind,
            target=target,
            idempotency_key=key,
            pre_state=pre,
            intended=intended,
            prepared=prepared,
            prepared_digest=digest_of(prepared),
            consequence=normalize_consequence(cmd.consequence),
            requires_approval=cmd.requires_approval,
            policy=cmd.policy,
            tool=cmd.tool,
            tool_digest=_pin(tx, cmd),
            result_schema=cmd.result_schema,
        ),
        actor,
    )
    charge(tx, cmd.task_id, "effects", 1.0, actor, f"effect {effect_id} planned")
    return effect_id


def _pin(tx: Tx, cmd: PlanEffect) -> str | None:
    """The definition digest an intent naming a tool is pinned to: the writer's, else the
    current configuration's (an intent under no recorded configuration pins what it says)."""
    if cmd.tool is None:
        if cmd.tool_digest is not None:
            raise CommandRejected("a tool_digest is the digest of a named tool: give tool too")
        return None
    if cmd.tool_digest is not None:
        return cmd.tool_digest
    return (manifest_reads.current_tools(tx.conn, cmd.task_id) or {}).get(cmd.tool)


def intent_open(row: Any) -> bool:
    """Whether the effect's intent may still change, be approved or be cancelled
    (`rules.intent_open`)."""
    return rules.intent_open(row.stage, row.outcome)


def open_approvals(tx: Tx, task_id: str, effect_id: str | None = None) -> list[str]:
    q = sa.select(t.approvals.c.approval_id).where(
        t.approvals.c.task_id == task_id, t.approvals.c.state.in_(("pending", "approved"))
    )
    if effect_id is not None:
        q = q.where(t.approvals.c.effect_id == effect_id)
    return [r.approval_id for r in tx.conn.execute(q)]


@handles(ReviseEffect)
def _revise_effect(tx: Tx, cmd: ReviseEffect, actor: Actor) -> str:
    _require_writable(tx, cmd.task_id)
    row = effect_row(tx, cmd.task_id, cmd.effect_id)
    if not intent_open(row):
        raise CommandRejected(
            f"effect {cmd.effect_id} is {row.stage} ({row.outcome}): only an intent not yet "
            "carried out can be revised"
        )
    old = dict(row.intent)
    given = (
        intended_file_state(tx, cmd.task_id, cmd.content, cmd.intended)
        if cmd.content is not None or cmd.intended is not None
        else None
    )
    prepared = prepared_object(
        row.kind, row.target, given or ev.FileState.model_validate(old["intended"]), cmd.prepared
    )
    digest = digest_of(prepared)
    # What the old intent made from its prepared object follows the new one, unless given
    # (store.commands.tool_calls): a tool call's intended digest and worded consequence.
    intended, consequence = tool_calls.revised_intent(
        str(row.target), old, str(row.consequence), prepared, given, cmd.consequence or None
    )
    consequence = normalize_consequence(consequence)
    tx.emit(
        cmd.task_id,
        ev.EffectRevised(
            effect_id=cmd.effect_id,
            intended=intended,
            prepared=prepared,
            prepared_digest=digest,
            consequence=consequence,
            reason=cmd.reason,
        ),
        actor,
    )
    stale = open_approvals(tx, cmd.task_id, cmd.effect_id)
    if stale and digest != old["prepared_digest"]:
        tx.emit(
            cmd.task_id,
            ev.ApprovalRetired(
                approval_ids=tuple(stale),
                state="stale",
                reason=f"effect {cmd.effect_id} was revised: {cmd.reason}",
            ),
            actor,
        )
    settle_status(tx, cmd.task_id, actor)
    return digest


@handles(CancelEffect)
def _cancel_effect(tx: Tx, cmd: CancelEffect, actor: Actor) -> None:
    _require_writable(tx, cmd.task_id)
    row = effect_row(tx, cmd.task_id, cmd.effect_id)
    why = rules.why_not_cancellable(row.stage, row.outcome)
    if why is not None:
        raise CommandRejected(f"effect {cmd.effect_id} cannot be cancelled: {why}")
    tx.emit(cmd.task_id, ev.EffectCancelled(effect_id=cmd.effect_id, reason=cmd.reason), actor)
    stale = open_approvals(tx, cmd.task_id, cmd.effect_id)
    if stale:
        tx.emit(
            cmd.task_id,
            ev.ApprovalRetired(approval_ids=tuple(stale), state="revoked", reason=cmd.reason),
            actor,
        )
    settle_status(tx, cmd.task_id, actor)


def _why_not_dispatchable(row: Any) -> str | None:
    return rules.why_not_dispatchable(row.stage, row.outcome)


@handles(DispatchEffect)
def _dispatch(tx: Tx, cmd: DispatchEffect, actor: Actor) -> int:
    status = str(tx.task(cmd.task_id).status)
    if not rules.can_dispatch(status):
        raise CommandRejected(f"task {cmd.task_id} is {status}: nothing may be dispatched")
    row = effect_row(tx, cmd.task_id, cmd.effect_id)
    why = _why_not_dispatchable(row)
    if why is not None:
        raise CommandRejected(f"effect {cmd.effect_id} cannot be dispatched: {why}")
    intent = dict(row.intent)
    pinned = rules.pinned_tool_refusal(
        intent.get("tool"),
        intent.get("tool_digest"),
        manifest_reads.current_tools(tx.conn, cmd.task_id) if "tool" in intent else None,
    )
    if pinned is not None:
        raise ToolDefinitionChanged(cmd.effect_id, str(intent["tool"]), pinned.message)
    inputs = cmd.inputs if cmd.inputs is not None else intent["prepared"]
    digest = digest_of(inputs)
    if digest != intent["prepared_digest"]:
        raise CommandRejected(
            f"the inputs ({digest}) differ from effect {cmd.effect_id}'s prepared object "
            f"({intent['prepared_digest']}): revise the effect first"
        )
    attempt_no = len(attempts_of(tx, cmd.task_id, cmd.effect_id)) + 1
    approval_id = None
    # The intent as the log planned it asks for an approval even where the table says not.
    if row.requires_approval or authority.requires_approval_on_record(
        tx.conn, cmd.task_id, cmd.effect_id
    ):
        approval_id = usable_approval(tx, cmd.task_id, cmd.effect_id, digest, cmd.approval_id)
    tx.emit(
        cmd.task_id,
        ev.AttemptDispatched(
            effect_id=cmd.effect_id,
            attempt_no=attempt_no,
            executor=cmd.executor,
            inputs_digest=digest,
            approval_id=approval_id,
        ),
        actor,
    )
    if approval_id is not None:
        # After the attempt's event: on a team store the server lets an agents' role change
        # a projection only right after an event of its own (store.team).
        take_approval(tx, approval_id, digest)
        tx.emit(
            cmd.task_id,
            ev.ApprovalConsumed(
                approval_id=approval_id, effect_id=cmd.effect_id, attempt_no=attempt_no
            ),
            actor,
        )
    settle_status(tx, cmd.task_id, actor)
    return attempt_no


def usable_approval(
    tx: Tx, task_id: str, effect_id: str, digest: str, approval_id: str | None
) -> str:
    """The approval a dispatch uses: approved in the table and, what decides, in the log (a
    person's `approval.decided` for this very object, unused; store.commands.authority)."""
    q = sa.select(t.approvals).where(
        t.approvals.c.task_id == task_id, t.approvals.c.effect_id == effect_id
    )
    if approval_id is not None:
        q = q.where(t.approvals.c.approval_id == approval_id)
    rows = list(tx.conn.execute(q.order_by(t.approvals.c.requested_at.desc())))
    if not rows:
        raise CommandRejected(f"effect {effect_id} requires an approval and has none")
    usable = [r for r in rows if r.state == "approved"]
    if not usable:
        raise CommandRejected(
            f"no usable approval for effect {effect_id}: {_approval_story(rows, tx.now)}"
        )
    chosen = usable[0]
    if chosen.payload_digest != digest:
        raise CommandRejected(
            f"approval {chosen.approval_id} was given for {chosen.payload_digest}, not "
            f"{digest}: the payload changed, request a new approval"
        )
    on_record = authority.approval_on_record(tx.conn, task_id, str(chosen.approval_id))
    why = on_record.why_not_usable(effect_id, digest, tx.now)
    if why is not None:
        raise CommandRejected(
            f"approval {chosen.approval_id} is approved in the store's table, but {why}: "
            "the table disagrees with the record (run verify); a person decides it again",
            rule="approval_not_in_record",
        )
    return str(chosen.approval_id)


def take_approval(tx: Tx, approval_id: str, digest: str) -> None:
    """Use an approval, at most once: a conditional update and a rowcount check, so two
    writers racing on a shared store get exactly one winner."""
    chosen = tx.conn.execute(
        sa.select(t.approvals.c.expires_at).where(t.approvals.c.approval_id == approval_id)
    ).one()
    result = tx.conn.execute(
        t.approvals.update()
        .where(
            t.approvals.c.approval_id == approval_id,
            t.approvals.c.state == "approved",
            t.approvals.c.payload_digest == digest,
            t.approvals.c.expires_at > tx.now,
        )
        .values(state="consumed", consumed_at=tx.now)
    )
    if result.rowcount != 1:
        raise CommandRejected(
            f"approval {approval_id} is no longer usable: "
            + ("it expired" if chosen.expires_at <= tx.now else "another writer used it first")
        )


def _approval_story(rows: list[Any], now: str) -> str:
    parts = []
    for r in rows:
        state = "expired" if r.state in {"pending", "approved"} and r.expires_at <= now else r.state
        if state == "pending" and r.approvers > 1:
            # A quorum not met yet: say how far it has come, and that others must approve.
            people = [str(x.get("id")) for x in (r.approved_by or [])]
            state += f" ({rules.quorum_words(people, r.approvers)}; more people must approve)"
        parts.append(f"{r.approval_id} is {state}")
    return "; ".join(parts)


def _current_attempt(tx: Tx, task_id: str, effect_id: str, attempt_no: int | None) -> Any:
    atts = attempts_of(tx, task_id, effect_id)
    if not atts:
        raise CommandRejected(f"effect {effect_id} has not been dispatched")
    if attempt_no is None:
        return atts[-1]
    for a in atts:
        if a.attempt_no == attempt_no:
            return a
    raise CommandRejected(f"effect {effect_id} has no attempt {attempt_no}")


#: The outcome an executor's word leaves: never known from it. A reported failure is its
#: word too (the command may have half run, or run and failed to say so): the outcome stays
#: unknown, and no new attempt is dispatched, until a reconciliation against the target
#: settles it (absent: try again). `partial` says some of it happened: reconciled as well.
#: (Records written before kept `failed` as the outcome; they read as they were written.)
_REPORTED_OUTCOME = {
    "reported_success": "unknown",
    "timeout": "unknown",
    "failed": "unknown",
    "partial": "partial",
}


@handles(RecordResponse)
def _record_response(tx: Tx, cmd: RecordResponse, actor: Actor) -> str:
    att = _current_attempt(tx, cmd.task_id, cmd.effect_id, cmd.attempt_no)
    if att.ended_at is not None:
        raise CommandRejected(
            f"attempt {att.attempt_no} of effect {cmd.effect_id} already has its response"
        )
    if cmd.reported == "failed" and not cmd.error:
        raise CommandRejected("a failed attempt needs its error")
    response = dict(cmd.response or {})
    response.setdefault("reported", cmd.reported)
    outcome = _REPORTED_OUTCOME[cmd.reported]
    if rules.late_response_reopens(effect_row(tx, cmd.task_id, cmd.effect_id).stage):
        # Late: the effect was settled without this word. It re-opens the reconciliation
        # (store.projections.ledger), and until a fresh observation the outcome is unknown,
        # whatever the executor says.
        outcome = rules.Outcome.UNKNOWN
    tx.emit(
        cmd.task_id,
        ev.AttemptResponded(
            effect_id=cmd.effect_id,
            attempt_no=att.attempt_no,
            response=response,
            error=cmd.error,
            outcome=outcome,  # type: ignore[arg-type]
        ),
        actor,
    )
    settle_status(tx, cmd.task_id, actor)
    return outcome


def record_observation(
    tx: Tx,
    task_id: str,
    row: Any,
    purpose: str,
    given: ev.FileState | None,
    actor: Actor,
    seen: Seen | None = None,
) -> str:
    target = _rescope(tx, task_id, row.target)
    mtime: int | None = None
    if is_destination(target):
        if given is None:
            raise CommandRejected(
                f"{target} is a destination the store cannot read: give the observed state"
            )
        state = given
    else:
        if given is not None:
            raise CommandRejected("a file target is observed by the store itself, not described")
        now = _current(tx, task_id, target, seen)
        state, mtime = now.state, now.mtime_ns
    obs_id = new_id("obs")
    tx.emit(
        task_id,
        ev.ObservationRecorded(
            observation_id=obs_id,
            effect_id=row.effect_id,
            target=target,
            state=state,
            mtime_ns=mtime,
            purpose=purpose,
        ),
        actor,
    )
    return obs_id


class _SeesTarget(TaskCommand):
    effect_id: Ident
    # The file target hashed before the write lock (see `prepares`); never part of the schema.
    _seen: Seen | None = PrivateAttr(default=None)


class ObserveEffect(_SeesTarget):
    type: Literal["observe_effect"] = "observe_effect"
    purpose: Literal["reconcile", "post_dispatch", "watch"] = "reconcile"
    # For a destination the store cannot read itself, what the caller observed there.
    state: ev.FileState | None = None


class ReconcileEffect(_SeesTarget):
    type: Literal["reconcile_effect"] = "reconcile_effect"
    # The observation the decision rests on; without one, the target is observed now.
    observation_id: str | None = None
    # A person's decision; without one, the verdict is computed from the observation. On a
    # file the store observed, a decision other than its verdict (unless that verdict is a
    # conflict) must say it overrides the observation, with the reason in the note.
    decision: Literal["present", "absent", "conflict"] | None = None
    override: bool = False
    note: str = ""
    # The effect's reconciliation the decision was made seeing: the seq of its last
    # reconciliation (0: none yet). Another verdict recorded since is a conflict. (The
    # observation the decision rests on is guarded apart: `observation_id`, TargetChanged.)
    based_on: BasedOn = None


def _see_before_lock(store: Reading, cmd: _SeesTarget) -> None:
    """Hash a file target once, outside the write lock; the transaction only checks with
    `stat` that it still holds. Anything odd is left for the handler to refuse."""
    from ..reads.queries import task_row

    with store.read() as conn:
        target = conn.execute(
            sa.select(t.effects.c.target).where(
                t.effects.c.task_id == cmd.task_id, t.effects.c.effect_id == cmd.effect_id
            )
        ).scalar()
        if target is None or is_destination(target):
            return
        scope = Scope.model_validate(task_row(conn, cmd.task_id)["scope"])
    try:
        cmd._seen = see_file(check_target(scope, target))
    except CommandRejected:
        return


@prepares(ObserveEffect)
def _prepare_observe(store: Reading, cmd: ObserveEffect) -> None:
    if cmd.state is None:
        _see_before_lock(store, cmd)


@prepares(ReconcileEffect)
def _prepare_reconcile(store: Reading, cmd: ReconcileEffect) -> None:
    _see_before_lock(store, cmd)


@handles(ObserveEffect)
def _observe(tx: Tx, cmd: ObserveEffect, actor: Actor) -> str:
    row = effect_row(tx, cmd.task_id, cmd.effect_id)
    return record_observation(tx, cmd.task_id, row, cmd.purpose, cmd.state, actor, cmd._seen)


def compute_verdict(
    intent: dict[str, Any], observed: ev.FileState, responses: list[dict[str, Any]], target: str
) -> tuple[rules.Verdict, list[str]]:
    """Intent against a current observation (`rules.reconcile_verdict`)."""
    return rules.reconcile_verdict(
        intent["intended"], intent.get("pre_state"), observed, responses, target, os.path.realpath
    )


def _same_state(a: ev.FileState, b: ev.FileState) -> bool:
    return rules.same_state(rules.State(a.exists, a.digest), rules.State(b.exists, b.digest))


@handles(ReconcileEffect)
def _reconcile(tx: Tx, cmd: ReconcileEffect, actor: Actor) -> rules.Verdict:
    row = effect_row(tx, cmd.task_id, cmd.effect_id)
    if cmd.based_on is not None:
        current = int((row.reconciliation or {}).get("seq") or 0)
        if cmd.based_on != current:
            _conflict(
                tx, cmd.task_id, "effect", cmd.effect_id, cmd.based_on, current, current or None
            )
    late = rules.late_reconcilable(str(tx.task(cmd.task_id).status), row.stage)
    if not rules.effect_reconcilable(row.stage) and not late:
        raise CommandRejected(
            f"effect {cmd.effect_id} is {row.stage}: only a dispatched effect is reconciled"
        )
    if cmd.decision is not None and not cmd.note.strip():
        raise CommandRejected("a decision by hand needs a note saying why")
    obs_id = cmd.observation_id
    fresh = obs_id is None
    if obs_id is None:
        obs_id = record_observation(tx, cmd.task_id, row, "reconcile", None, actor, cmd._seen)
    obs = latest_observation(tx, cmd.task_id, cmd.effect_id)
    if obs is None or obs.observation_id != obs_id:
        raise CommandRejected(
            f"observation {obs_id} is not the latest of effect {cmd.effect_id}: "
            "decide against the current observation"
        )
    observed = ev.FileState(exists=bool(obs.exists), digest=obs.digest, size=obs.size)
    if not fresh and not is_destination(row.target):
        now = _current(tx, cmd.task_id, row.target, cmd._seen).state
        if not _same_state(now, observed):
            raise TargetChanged(
                obs_id,
                f"the target changed since observation {obs_id} "
                f"({observed.digest or 'missing'} -> {now.digest or 'missing'}): observe again",
            )
    responses = [
        dict(a.response) for a in attempts_of(tx, cmd.task_id, cmd.effect_id) if a.response
    ]
    verdict, reasons = compute_verdict(dict(row.intent), observed, responses, row.target)
    refusal = rules.decision_refusal(row.target, verdict, cmd.decision, cmd.override, cmd.note)
    if refusal is not None:
        if refusal.rule == "observation_overrides_need_override":
            raise ObservationOverride(refusal.message)
        raise CommandRejected(refusal.message, rule=refusal.rule)
    tx.emit(
        cmd.task_id,
        ev.EffectReconciled(
            effect_id=cmd.effect_id,
            observation_id=obs_id,
            verdict=rules.Verdict(cmd.decision or verdict),
            reasons=tuple(reasons),
            decided_by_person=cmd.decision is not None,
            note=cmd.note,
            overrode=verdict if cmd.override else None,
            based_on=cmd.based_on,
        ),
        actor,
    )
    settle_status(tx, cmd.task_id, actor)
    return rules.Verdict(cmd.decision or verdict)
