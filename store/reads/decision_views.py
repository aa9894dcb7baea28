"""Decision views: what a person is asked to decide, built by the store.

The window renders a view and adds no rule: which change the request makes (`changes`), the
state the request is in (an enum), whether it can be decided now and why not (the store's
rule), the verdicts allowed, and the version of the record the view was built on, so that a
view read again after any write can be told from the one on screen.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from .. import rules
from .. import schema as t
from ..blobs import BlobStore
from ..errors import UnknownApproval
from ..model import Actor
from ..rules import respond as respond_rules
from .changes import Change, Facts, Opaque, Replace, Send, Upload, change_of, pretty_json
from .offered_rules import OfferedRule, offered_rules
from .routing import routing_words


class ApprovalVerdict(StrEnum):
    """What a person may answer a pending request with (DecideApproval's `decision`)."""

    APPROVE = "approved"
    REJECT = "rejected"
    # Changes requested: neither approved nor rejected; needs a note saying what to change.
    SEND_BACK = "sent_back"
    # Answer as the tool (issue 42): the person supplies the call's result; offered only
    # where the request allows it (store.rules.respond).
    RESPOND = "answered"

    @property
    def label(self) -> str:
        """The verdict as a person chooses it ("Send back", not sent_back)."""
        return _VERDICT_LABELS[self]


_VERDICT_LABELS = {
    ApprovalVerdict.APPROVE: "Approve",
    ApprovalVerdict.REJECT: "Reject",
    ApprovalVerdict.SEND_BACK: "Send back",
    ApprovalVerdict.RESPOND: "Answer as the tool",
}


#: The fields of a message a person may edit before approving it.
EDITABLE_MESSAGE_FIELDS = ("subject", "body")


#: The events that change an approval, by type: the last of them is the approval's version.
APPROVAL_EVENTS = (
    "approval.requested",
    "approval.decided",
    "approval.consumed",
    "approval.retired",
)


@dataclass(frozen=True)
class ApprovalDecision:
    """One approval as a person decides it.

    `change`: what approving lets happen (see `store.reads.changes`). `prepared_json`: the
    exact prepared object the approval binds, as JSON; `payload_digest` its digest.
    `verdicts`: what may be answered now (none when `why_not` says why it cannot be decided).
    `seq`: the task's event that last changed this approval; `task_seq`: the task's last event
    when the view was read; `now`: the database clock then (an expiry is judged by it)."""

    task_id: str
    approval_id: str
    effect_id: str | None
    state: rules.ApprovalState
    consequence: str
    policy: str
    requester: Actor
    requested_at: str
    expires_at: str
    decided_by: Actor | None
    decided_at: str | None
    note: str
    payload_digest: str
    prepared_json: str
    change: Change
    verdicts: tuple[ApprovalVerdict, ...]
    why_not: str | None
    seq: int
    task_seq: int
    now: str

    #: The prepared object's fields a person may edit, then approve (empty: none).
    editable: tuple[str, ...] = ()
    #: How many distinct people must approve (the request's quorum), and who approved the
    #: object it binds now, in order. One person counts once; an edit starts them again.
    approvers_needed: int = 1
    approved_by: tuple[Actor, ...] = ()
    #: A routed request (issue 42): who it waits on and when it escalates, in words ("waiting
    #: on group:release (rita, ben); escalates to person:olga at …"); None when not routed.
    routing: str | None = None
    #: The JSON Schema (as JSON text) a person's answer in the tool's place must fit, where
    #: the request carries one (`respond` is then among the verdicts).
    result_schema_json: str | None = None
    #: The tool's result is a string (its schema's type): the person writes plain text and
    #: it is sent as that string, no JSON quoting; False: the result is typed as JSON.
    answer_as_text: bool = False
    #: The "always" answers the framework offered with the call (Claude Code's permission
    #: suggestions), each as the standing rule it would be; empty when none, or undecidable.
    offered: tuple[OfferedRule, ...] = ()
    #: A framework's tool call (its change is the call's arguments) that a person may approve
    #: with arguments of their own (DecideApproval `edited`, `boris approve --edited-json`):
    #: the window's Edit shows `prepared_json` to edit. False when undecidable.
    edits_call: bool = False

    @property
    def decidable(self) -> bool:
        return self.why_not is None

    @property
    def quorum(self) -> str | None:
        """ "1 of 2 approved by maria", where several people must approve (else None)."""
        if self.approvers_needed <= 1:
            return None
        return rules.quorum_words([a.id for a in self.approved_by], self.approvers_needed)

    def next_approval(self, edited: bool = False) -> str | None:
        """Which approval a new person's would be, "2nd of 2", where several must approve.
        `edited`: approving their own edit, a new object, whose first approval it is."""
        if self.approvers_needed <= 1:
            return None
        n = 1 if edited else min(len(self.approved_by) + 1, self.approvers_needed)
        return f"{rules.ordinal(n)} of {self.approvers_needed}"

    def approved_already(self, person_id: str) -> bool:
        """Whether this person's approval already counts (a second would be refused)."""
        return any(a.id == person_id for a in self.approved_by)


def _actor(x: Any) -> Actor | None:
    if not isinstance(x, dict) or not x.get("id"):
        return None
    return Actor.model_validate({"kind": x.get("kind"), "id": x["id"], "name": x.get("name", "")})


def _facts(conn: Connection, row: Any) -> Facts | None:
    """The effect's kind, target and intent, while the approval binds its prepared object."""
    if row.effect_id is None:
        return None
    eff = conn.execute(
        sa.select(t.effects.c.kind, t.effects.c.target, t.effects.c.intent).where(
            t.effects.c.task_id == row.task_id, t.effects.c.effect_id == row.effect_id
        )
    ).first()
    if eff is None:
        return None
    intent = dict(eff.intent or {})
    if intent.get("prepared_digest") != row.payload_digest:
        return None  # revised since: its new intent is not what this request asked
    return Facts(str(eff.kind), str(eff.target), intent.get("intended"), intent.get("pre_state"))


def approval_seq(conn: Connection, task_id: str, approval_id: str) -> int:
    """The seq of the task's last event about this approval (0 if none is found)."""
    rows = conn.execute(
        sa.select(t.events.c.seq, t.events.c.payload)
        .where(
            t.events.c.task_id == task_id,
            t.events.c.type.in_(APPROVAL_EVENTS),
            t.events.c.payload.contains(json.dumps(approval_id), autoescape=True),
        )
        .order_by(t.events.c.seq.desc())
    )
    for seq, payload in rows:
        p = json.loads(payload)
        if p.get("approval_id") == approval_id or approval_id in (p.get("approval_ids") or ()):
            return int(seq)
    return 0


def approval_decision(
    conn: Connection, blobs: BlobStore, task_id: str, approval_id: str, now: str
) -> ApprovalDecision:
    """The decision view of one approval. UnknownTask / UnknownApproval when there is none."""
    task_seq = conn.execute(
        sa.select(t.tasks.c.last_seq).where(t.tasks.c.task_id == task_id)
    ).scalar_one_or_none()
    if task_seq is None:
        from .deleted import absent  # deleted by a person: when and by whom

        raise absent(conn, task_id)
    row = conn.execute(
        sa.select(t.approvals).where(
            t.approvals.c.task_id == task_id, t.approvals.c.approval_id == approval_id
        )
    ).first()
    if row is None:
        raise UnknownApproval(task_id, approval_id)
    state = rules.approval_state(str(row.state), row.expires_at, now)
    why = rules.why_undecidable(state, row.expires_at, now, row.decided_by)
    payload = dict(row.payload or {})
    requester = _actor(row.requester)
    facts = _facts(conn, row)
    change = _call_of(change_of(payload, facts, blobs), payload, row.payload_digest)
    declared = _declared_schema(conn, row)
    return ApprovalDecision(
        task_id=task_id,
        approval_id=approval_id,
        effect_id=row.effect_id,
        state=state,
        consequence=row.consequence,
        policy=row.policy,
        requester=requester or Actor(kind="system", id="unknown"),
        requested_at=row.requested_at,
        expires_at=row.expires_at,
        decided_by=_actor(row.decided_by),
        decided_at=row.decided_at,
        note=row.note or "",
        payload_digest=row.payload_digest,
        prepared_json=pretty_json(payload),
        change=change,
        verdicts=() if why is not None else _verdicts(payload, int(row.approvers), declared),
        why_not=why,
        seq=approval_seq(conn, task_id, approval_id),
        task_seq=int(task_seq),
        now=now,
        editable=() if why is not None else _editable(payload, change, row.effect_id),
        approvers_needed=int(row.approvers),
        approved_by=tuple(a for a in map(_actor, row.approved_by or ()) if a is not None),
        routing=routing_words(conn, task_id, approval_id, now),
        result_schema_json=_schema_json(payload, declared),
        answer_as_text=_text_schema(payload, declared),
        offered=_offered(conn, task_id, approval_id, payload, requester, why),
        edits_call=why is None and _is_call(facts, row.payload_digest),
    )


def _declared_schema(conn: Connection, row: Any) -> dict[str, Any] | None:
    """The result schema the approval's effect declares (an adapter's call), or None."""
    if row.effect_id is None:
        return None
    intent = conn.execute(
        sa.select(t.effects.c.intent).where(
            t.effects.c.task_id == row.task_id, t.effects.c.effect_id == row.effect_id
        )
    ).scalar()
    return respond_rules.declared_schema(intent if isinstance(intent, dict) else None)


def _verdicts(
    payload: dict[str, Any], needed: int, declared: dict[str, Any] | None = None
) -> tuple[ApprovalVerdict, ...]:
    """Approve, reject, send back; and respond where the request allows it (issue 42)."""
    asked = (ApprovalVerdict.APPROVE, ApprovalVerdict.REJECT, ApprovalVerdict.SEND_BACK)
    if respond_rules.why_not_respondable(payload, needed, declared) is None:
        return (*asked, ApprovalVerdict.RESPOND)
    return asked


def _schema_json(payload: dict[str, Any], declared: dict[str, Any] | None = None) -> str | None:
    schema = respond_rules.result_schema(payload, declared)
    return None if schema is None else pretty_json(schema)


def _is_call(facts: Facts | None, payload_digest: str) -> bool:
    """A framework's tool call (every adapter's): an effect of kind `other` whose intended
    content is exactly the approval's prepared object, the call's arguments."""
    intended = facts.intended if facts is not None else None
    return (
        facts is not None
        and facts.kind == "other"
        and intended is not None
        and intended.get("digest") == payload_digest
    )


def _call_of(change: Change, payload: dict[str, Any], payload_digest: str) -> Change:
    """A framework's tool call (Claude Code's, LangGraph's, the OpenAI Agents SDK's) intends
    exactly its arguments at its destination: the content is the prepared object itself, kept
    in the approval, not a blob of its own; shown as that JSON, not as an unreadable upload."""
    if isinstance(change, Upload | Replace) and change.digest == payload_digest:
        return Opaque(
            pretty_json(payload),
            f"it is a call of {change.target}, whose arguments (this JSON) are the whole of it",
        )
    return change


def _offered(
    conn: Connection,
    task_id: str,
    approval_id: str,
    payload: dict[str, Any],
    requester: Actor | None,
    why_not: str | None,
) -> tuple[OfferedRule, ...]:
    """The framework's offered "always" answers, while the request can be decided."""
    if why_not is not None or requester is None:
        return ()
    return offered_rules(conn, task_id, approval_id, payload, f"{requester.kind}:{requester.id}")


def _text_schema(payload: dict[str, Any], declared: dict[str, Any] | None = None) -> bool:
    """Whether the tool's result is a string (`{"type": "string"}`), typed as plain text."""
    schema = respond_rules.result_schema(payload, declared)
    return schema is not None and schema.get("type") == "string"


def _editable(payload: dict[str, Any], change: Change, effect_id: str | None) -> tuple[str, ...]:
    """The message fields a person may edit, then approve (DecideApproval `edited_message`):
    a payload's own subject/body, or a mail effect's plain-text message shown whole."""
    own = tuple(k for k in EDITABLE_MESSAGE_FIELDS if isinstance(payload.get(k), str))
    if own:
        return own
    # Only a plain-text message shown whole (not HTML, not cut, no attachments, readable).
    whole = (
        isinstance(change, Send)
        and change.digest is not None
        and change.problem is None
        and not change.attachments
        and not any("HTML" in n or "are shown" in n for n in change.notes)
    )
    return EDITABLE_MESSAGE_FIELDS if whole and effect_id is not None else ()
