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
from ..errors import AlreadyApproved, AuthorityRefused, CommandRejected, UnknownApproval
from ..model import Actor
from ..reads.passkeys import PasskeyAssertion
from ..tx import Tx
from . import message_edit, passkeys, policies, routing, standing_rules, tool_calls
from .core import (
    Command,
    Content,
    Ident,
    TaskCommand,
    _require_writable,
    handles,
    new_id,
    settle_status,
)
from .effects import (
    effect_row,
    intended_file_state,
    intent_open,
    normalize_consequence,
    open_approvals,
    prepared_object,
)


class RequestApproval(TaskCommand):
    type: Literal["request_approval"] = "request_approval"
    approval_id: Ident | None = None
    effect_id: Ident | None = None
    # The object to approve; for an effect it defaults to (and must equal) its prepared one.
    payload: dict[str, Any] | None = None
    consequence: str | None = None
    policy: str = Field(min_length=1)
    expires_in_seconds: float = Field(default=3600, gt=0, le=366 * 86400)
    # How many distinct people must approve. A request may ask for more than its policy
    # says in the store (`boris policy set`), never fewer: the larger number is recorded.
    approvers: int | None = Field(default=None, ge=1, le=rules.MAX_APPROVERS)


class SetApprovalPolicy(Command):
    """A person's setting: how many distinct people must approve each request made under
    `policy` from now on (and each still pending when one of them next decides it)."""

    type: Literal["set_approval_policy"] = "set_approval_policy"
    policy: str = Field(min_length=1)
    approvers: int = Field(ge=1, le=rules.MAX_APPROVERS)


class DecideApproval(TaskCommand):
    """A person's answer: approved, rejected, or `sent_back` (changes requested: the note
    says which, and the requester asks again with a revised object under a new digest).

    Edit, then approve: with `approved`, `edited` (the prepared object as the person revised
    it) or `edited_content` (a file write's new content) approves the person's version: it
    is recorded as their revision of the effect, and the approval binds its digest."""

    type: Literal["decide_approval"] = "decide_approval"
    approval_id: Ident
    decision: Literal["approved", "rejected", "sent_back"]
    note: str = ""
    edited: dict[str, Any] | None = None
    edited_content: Content | None = None
    # A message's words as the person edited them (subject, body): the store makes the
    # edited object from them (a payload's fields, or the mail effect's RFC 822 content).
    edited_message: dict[Literal["subject", "body"], str] | None = None
    # Decided on a phone with a passkey (issue 43): the WebAuthn assertion of exactly this
    # decision, checked before anything is written and recorded with it.
    assertion: PasskeyAssertion | None = None


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
    needed = rules.approvers_needed(cmd.approvers, policies.approvers_of(tx.conn, cmd.policy))
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
            approvers=needed if needed > 1 else None,
        ),
        actor,
    )
    # A routed policy names who decides it; else a person's standing rule that covers this
    # call decides it now (issue 42).
    if not routing.route_request(tx, cmd.task_id, approval_id, cmd.policy, actor):
        standing_rules.decide_by_rule(tx, cmd.task_id, approval_id, actor)
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
    if cmd.assertion is not None:
        _check_passkey(tx, cmd, row, actor)
    # The rule the decision views show (store.reads.decision_views): one wording, one place.
    why = rules.why_undecidable(row.state, row.expires_at, tx.now, row.decided_by)
    if why is not None:
        raise CommandRejected(f"approval {cmd.approval_id} cannot be decided: {why}")
    refused = rules.decider_refusal(row.requester, actor.kind, actor.id)
    if refused is not None:
        raise AuthorityRefused(refused.rule, refused.message)
    routing.decide_refusal(tx, cmd.task_id, cmd.approval_id, actor)  # issue 42
    if cmd.decision == "sent_back" and not cmd.note.strip():
        raise CommandRejected("sending back needs a note: say what should change")
    needed = rules.approvers_needed(row.approvers, policies.approvers_of(tx.conn, row.policy))
    edited = _persons_revision(tx, cmd, row, actor)
    if edited is None:
        _count_once(cmd, row, actor, needed)
    # The projection is written by the event alone (a team store's server lets no agents'
    # role write it otherwise; store.team).
    tx.emit(
        cmd.task_id,
        ev.ApprovalDecided(
            approval_id=cmd.approval_id,
            decision=cmd.decision,
            note=cmd.note,
            edited=edited,
            edited_digest=digest_of(edited) if edited is not None else None,
            needed=needed if needed > row.approvers else None,
            assertion=cmd.assertion.model_dump() if cmd.assertion is not None else None,
        ),
        actor,
    )
    settle_status(tx, cmd.task_id, actor)
    # What it is now: an approval that others must still join stays `pending`.
    return str(
        tx.conn.execute(
            sa.select(t.approvals.c.state).where(
                t.approvals.c.task_id == cmd.task_id, t.approvals.c.approval_id == cmd.approval_id
            )
        ).scalar_one()
    )


def _check_passkey(tx: Tx, cmd: DecideApproval, row: Any, actor: Actor) -> None:
    """A passkey signs the object as it was shown: no edit rides along with it."""
    assert cmd.assertion is not None
    if cmd.edited is not None or cmd.edited_content is not None or cmd.edited_message:
        raise CommandRejected("a passkey approves the request as shown; edit it at the desk")
    passkeys.check_assertion(
        tx.conn,
        cmd.assertion,
        task_id=cmd.task_id,
        approval=row,
        verdict=cmd.decision,
        note=cmd.note,
        actor=actor,
        now=tx.now,
    )


def _count_once(cmd: DecideApproval, row: Any, actor: Actor, needed: int) -> None:
    """One person counts once toward a quorum: a second approval of the same object by the
    same person is refused. (An edit makes a new object: its editor's approval is its first.)"""
    if cmd.decision != "approved":
        return  # a rejection or a send-back by anyone, approver or not, ends the request
    people = [str(x.get("id")) for x in (row.approved_by or [])]
    if actor.id in people:
        raise AlreadyApproved(cmd.approval_id, actor.id, rules.quorum_words(people, needed))


@handles(SetApprovalPolicy)
def _set_policy(tx: Tx, cmd: SetApprovalPolicy, actor: Actor) -> int:
    # A person only (rules.AUTHORITY); on a team store the server lets only the owner or a
    # reviewers' login write the store's settings (store.team), whatever actor is named.
    policies.set_approvers(
        tx.conn, cmd.policy, cmd.approvers, actor.model_dump(mode="json"), tx.now
    )
    return cmd.approvers


def _persons_revision(tx: Tx, cmd: DecideApproval, row: Any, actor: Actor) -> dict[str, Any] | None:
    """The object as the person edited it, or None when they approve it as asked. An
    effect's intent is revised in the person's name first (the agent's version stays in
    the log), and any other open approval of the old object goes stale."""
    if cmd.edited is None and cmd.edited_content is None and cmd.edited_message is None:
        return None
    if cmd.decision != "approved":
        raise CommandRejected("only an approval approves an edited object; send it back instead")
    if cmd.edited_message is not None:
        cmd = _message_edit(tx, cmd, row)
    if row.effect_id is None:
        if cmd.edited_content is not None or cmd.edited is None:
            raise CommandRejected("new content edits an effect's file; this request has none")
        edited = cmd.edited
    else:
        effect = effect_row(tx, cmd.task_id, row.effect_id)
        if not intent_open(effect):
            raise CommandRejected(f"effect {row.effect_id} is {effect.stage}: it cannot change")
        old = dict(effect.intent)
        given = (
            intended_file_state(tx, cmd.task_id, cmd.edited_content, None)
            if cmd.edited_content is not None
            else None
        )
        # Built on the intent as it stands: a new object names the new content.
        edited = prepared_object(
            effect.kind,
            effect.target,
            given or ev.FileState.model_validate(old["intended"]),
            cmd.edited,
        )
        # The person's edit is the intent: what was made from the object follows it (the
        # intended state a tool call's input digest, the consequence worded from it).
        intended, consequence = tool_calls.revised_intent(
            str(effect.target), old, str(effect.consequence), edited, given, None
        )
    digest = digest_of(edited)
    if digest == row.payload_digest:
        return None  # nothing changed: an approval of the object as asked
    if row.effect_id is not None:
        tx.emit(
            cmd.task_id,
            ev.EffectRevised(
                effect_id=row.effect_id,
                intended=intended,
                prepared=edited,
                prepared_digest=digest,
                consequence=normalize_consequence(consequence),
                reason=f"edited by {actor.id} before approving approval {cmd.approval_id}",
            ),
            actor,
        )
        others = [a for a in open_approvals(tx, cmd.task_id, row.effect_id) if a != row.approval_id]
        if others:
            tx.emit(
                cmd.task_id,
                ev.ApprovalRetired(
                    approval_ids=tuple(others),
                    state="stale",
                    reason=f"effect {row.effect_id} was edited by {actor.id}",
                ),
                actor,
            )
    return edited


def _message_edit(tx: Tx, cmd: DecideApproval, row: Any) -> DecideApproval:
    """The edited words as an edited object: the payload's fields, or the mail's content."""
    fields: dict[str, str] = {str(k): v for k, v in (cmd.edited_message or {}).items()}
    payload = dict(row.payload or {})
    if any(isinstance(payload.get(k), str) for k in message_edit.MESSAGE_FIELDS):
        return cmd.model_copy(update={"edited": message_edit.edited_fields(payload, fields)})
    digest = (payload.get("intended") or {}).get("digest")
    if row.effect_id is None or not digest:
        raise CommandRejected("this request holds no message whose words can be edited")
    text = message_edit.edited_message(tx.blobs.read(str(digest)), fields)
    return cmd.model_copy(update={"edited_content": Content(text=text)})
