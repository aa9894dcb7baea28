"""Approvals: permission bound to the exact prepared object, decided once, used at most once.

A request binds the digest of the object's canonical JSON, its one-line consequence, the
policy that asked, the requester and an expiry on the database's clock. `expired` is never
written: it is judged at read time, so it cannot lag. Consumption is in `ledger.dispatch`.
"""

from __future__ import annotations

import datetime as dt
from typing import Any, Literal

import sqlalchemy as sa
from pydantic import Field

from .. import events as ev
from .. import rules
from .. import schema as t
from ..canonical import digest_of
from ..errors import AuthorityRefused, CommandRejected, UnknownApproval
from ..model import Actor
from ..tx import Tx
from .core import Ident, TaskCommand, _require_writable, handles, new_id, settle_status
from .effects import effect_row, intent_open, normalize_consequence


class RequestApproval(TaskCommand):
    type: Literal["request_approval"] = "request_approval"
    approval_id: Ident | None = None
    effect_id: Ident | None = None
    # The object to approve; for an effect it defaults to (and must equal) its prepared one.
    payload: dict[str, Any] | None = None
    consequence: str | None = None
    policy: str = Field(min_length=1)
    expires_in_seconds: float = Field(default=3600, gt=0, le=366 * 86400)


class DecideApproval(TaskCommand):
    type: Literal["decide_approval"] = "decide_approval"
    approval_id: Ident
    decision: Literal["approved", "rejected"]
    note: str = ""


def _plus_seconds(iso: str, seconds: float) -> str:
    start = dt.datetime.strptime(iso, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=dt.UTC)
    return f"{start + dt.timedelta(seconds=seconds):%Y-%m-%dT%H:%M:%S.%f}Z"


@handles(RequestApproval)
def _request(tx: Tx, cmd: RequestApproval, actor: Actor) -> str:
    _require_writable(tx, cmd.task_id)
    status = str(tx.task(cmd.task_id).status)
    if status in {"stopped", "failed"}:
        raise CommandRejected(f"task {cmd.task_id} is {status}: no approval can be requested")
    payload = cmd.payload
    consequence = cmd.consequence
    if cmd.effect_id is not None:
        row = effect_row(tx, cmd.task_id, cmd.effect_id)
        if not intent_open(row):
            raise CommandRejected(
                f"effect {cmd.effect_id} is {row.stage} ({row.outcome}): nothing to approve"
            )
        prepared = dict(row.intent)["prepared"]
        if payload is not None and digest_of(payload) != digest_of(prepared):
            raise CommandRejected(
                f"the payload differs from effect {cmd.effect_id}'s prepared object: "
                "revise the effect, then ask"
            )
        payload = prepared
        consequence = consequence or row.consequence
    if payload is None:
        raise CommandRejected("an approval needs the payload it approves (or an effect)")
    if not consequence:
        raise CommandRejected("an approval needs the consequence a reviewer is agreeing to")
    approval_id = cmd.approval_id or new_id("apr")
    if tx.conn.execute(
        sa.select(t.approvals.c.approval_id).where(t.approvals.c.approval_id == approval_id)
    ).first():
        raise CommandRejected(f"approval {approval_id} already exists")
    tx.emit(
        cmd.task_id,
        ev.ApprovalRequested(
            approval_id=approval_id,
            effect_id=cmd.effect_id,
            payload=payload,
            payload_digest=digest_of(payload),
            consequence=normalize_consequence(consequence),
            policy=cmd.policy,
            expires_at=_plus_seconds(tx.now, cmd.expires_in_seconds),
        ),
        actor,
    )
    settle_status(tx, cmd.task_id, actor)
    return approval_id


@handles(DecideApproval)
def _decide(tx: Tx, cmd: DecideApproval, actor: Actor) -> str:
    if actor.kind != "person":
        raise CommandRejected("an approval is decided by a named person, not an agent")
    # Decided once: the task's row is locked first (on a server, FOR UPDATE), so a reviewer
    # deciding at the same moment waits here and then reads this decision.
    tx.task(cmd.task_id)
    row = tx.conn.execute(
        sa.select(t.approvals).where(
            t.approvals.c.approval_id == cmd.approval_id, t.approvals.c.task_id == cmd.task_id
        )
    ).first()
    if row is None:
        raise UnknownApproval(cmd.task_id, cmd.approval_id)
    # The rule the decision views show (store.reads.decision_views): one wording, one place.
    why = rules.why_undecidable(row.state, row.expires_at, tx.now, row.decided_by)
    if why is not None:
        raise CommandRejected(f"approval {cmd.approval_id} cannot be decided: {why}")
    refused = rules.decider_refusal(row.requester, actor.kind, actor.id)
    if refused is not None:
        raise AuthorityRefused(refused.rule, refused.message)
    # The projection is written by the event alone (a team store's server lets no agents'
    # role write it otherwise; store.team).
    tx.emit(
        cmd.task_id,
        ev.ApprovalDecided(approval_id=cmd.approval_id, decision=cmd.decision, note=cmd.note),
        actor,
    )
    settle_status(tx, cmd.task_id, actor)
    return cmd.decision
