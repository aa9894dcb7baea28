"""Answer as the tool ("respond", issue 42): a person supplies the call's result instead of
letting it run.

The request must allow it (store.rules.respond: a `result_schema` or `allowed_decisions`
naming `respond` in its payload) and be decidable by this person as an approval is (pending,
not expired, not theirs, routed to them if routed). The result is checked against the
request's schema, then recorded in the person's signed `approval.answered`; the approval
ends `answered`, never usable for a dispatch, and an effect it asked about is cancelled in the
same transaction (no attempt: the tool never ran), its other open approvals revoked.
"""

from __future__ import annotations

from typing import Any, Literal

import sqlalchemy as sa

from .. import events as ev
from .. import rules
from .. import schema as t
from ..canonical import canonical_bytes, digest_of
from ..errors import AuthorityRefused, CommandRejected, UnknownApproval
from ..model import Actor
from ..rules import respond as rr
from ..tx import Tx
from . import policies, routing
from .core import TaskCommand, handles, settle_status
from .effects import effect_row, open_approvals


class RespondToApproval(TaskCommand):
    """A person's answer in the tool's place: `result` is what the call returns (any JSON
    value), checked against the request's result schema; the call is never run."""

    type: Literal["respond_to_approval"] = "respond_to_approval"
    approval_id: str
    result: Any
    note: str = ""
    #: The payload digest the person saw (None: not named); a different one now is refused.
    based_on: str | None = None


@handles(RespondToApproval)
def _respond(tx: Tx, cmd: RespondToApproval, actor: Actor) -> str:
    if actor.kind != "person":
        raise CommandRejected("a person answers in the tool's place, not an agent")
    tx.task(cmd.task_id)  # the task's row locked first: decided once, as DecideApproval
    row = tx.conn.execute(
        sa.select(t.approvals).where(
            t.approvals.c.approval_id == cmd.approval_id, t.approvals.c.task_id == cmd.task_id
        )
    ).first()
    if row is None:
        raise UnknownApproval(cmd.task_id, cmd.approval_id)
    why = rules.why_undecidable(row.state, row.expires_at, tx.now, row.decided_by)
    if why is not None:
        raise CommandRejected(f"approval {cmd.approval_id} cannot be answered: {why}")
    if cmd.based_on is not None and cmd.based_on != row.payload_digest:
        raise CommandRejected(
            f"approval {cmd.approval_id} binds {row.payload_digest} now, not {cmd.based_on} "
            "that you answered: look at it again"
        )
    refused = rules.decider_refusal(row.requester, actor.kind, actor.id)
    if refused is not None:
        raise AuthorityRefused(refused.rule, refused.message)
    routing.decide_refusal(tx, cmd.task_id, cmd.approval_id, actor)
    payload = dict(row.payload or {})
    needed = rules.approvers_needed(row.approvers, policies.approvers_of(tx.conn, row.policy))
    declared = None
    if row.effect_id is not None:  # an adapter's call declares it on the effect
        declared = rr.declared_schema(effect_row(tx, cmd.task_id, row.effect_id).intent)
    not_here = rr.why_not_respondable(payload, needed, declared)
    if not_here is not None:
        raise CommandRejected(f"approval {cmd.approval_id} cannot be answered: {not_here}")
    schema = rr.result_schema(payload, declared)
    problem = rr.result_problem(schema, cmd.result)
    if problem is not None:
        raise CommandRejected(problem, rule="respond_fits_the_tools_schema")
    if len(canonical_bytes(cmd.result)) > rr.MAX_RESULT_BYTES:
        raise CommandRejected(f"the result is larger than {rr.MAX_RESULT_BYTES} bytes")
    tx.emit(
        cmd.task_id,
        ev.ApprovalAnswered(
            approval_id=cmd.approval_id,
            result=cmd.result,
            result_digest=digest_of(cmd.result),
            note=cmd.note,
            schema_checked=schema is not None,
        ),
        actor,
    )
    if row.effect_id is not None:
        _cancel_unrun(tx, cmd, row.effect_id, actor)
    settle_status(tx, cmd.task_id, actor)
    return str(rules.ApprovalState.ANSWERED)


def _cancel_unrun(tx: Tx, cmd: RespondToApproval, effect_id: str, actor: Actor) -> None:
    """The effect the call would have made is not made: cancelled, saying who answered."""
    effect = effect_row(tx, cmd.task_id, effect_id)
    why = rules.why_not_cancellable(effect.stage, effect.outcome)
    if why is not None:
        raise CommandRejected(f"effect {effect_id} cannot be answered in the tool's place: {why}")
    reason = f"answered in the tool's place by {actor.id} (approval {cmd.approval_id}): not run"
    tx.emit(cmd.task_id, ev.EffectCancelled(effect_id=effect_id, reason=reason), actor)
    others = [a for a in open_approvals(tx, cmd.task_id, effect_id) if a != cmd.approval_id]
    if others:
        tx.emit(
            cmd.task_id,
            ev.ApprovalRetired(approval_ids=tuple(others), state="revoked", reason=reason),
            actor,
        )
