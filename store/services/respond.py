"""Answer as the tool (issue 42, "respond") for callers: a person's answer, and the answer
as a waiting adapter reads it.

`respond` records a person's result for the call an approval asked about (the CLI's and the
window's, through store.api); `answered_result` is what an adapter calls when it finds the
approval `answered`: the result to hand the framework as the tool's (LangGraph's
`{"type": "respond", "message": ...}`, an MCP tool's result), and who gave it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa

from .. import events as ev
from .. import schema as t
from ..commands.respond import RespondToApproval
from ..errors import UnknownApproval
from ..model import Actor
from ..store import Store


@dataclass(frozen=True)
class AnsweredResult:
    """A person's answer in the tool's place, as recorded: `result` is the tool's result to
    hand the model; `seq` the task's event that recorded it."""

    task_id: str
    approval_id: str
    result: Any
    result_digest: str
    answered_by: Actor
    answered_at: str
    note: str
    schema_checked: bool
    seq: int


def respond(
    store: Store,
    person: Actor | str,
    task_id: str,
    approval_id: str,
    result: Any,
    *,
    note: str = "",
    based_on: str | None = None,
) -> AnsweredResult:
    """Answer approval `approval_id` in the tool's place with `result`, in the person's name
    (signed with their key, as `boris approve`). `based_on`: the payload digest they saw.
    Refused (CommandRejected, AuthorityRefused) as the command refuses it."""
    who = Actor.parse(person) if isinstance(person, str) else person
    store.sign_as(who)
    store.execute(
        RespondToApproval(
            task_id=task_id, approval_id=approval_id, result=result, note=note, based_on=based_on
        ),
        who,
    )
    found = answered_result(store, task_id, approval_id)
    assert found is not None
    return found


def answered_result(store: Store, task_id: str, approval_id: str) -> AnsweredResult | None:
    """The person's answer to `approval_id` in the tool's place, or None when it was not
    answered so (pending, approved, rejected…). UnknownApproval when there is no such one."""
    with store.read() as conn:
        known = conn.execute(
            sa.select(t.approvals.c.state).where(
                t.approvals.c.task_id == task_id, t.approvals.c.approval_id == approval_id
            )
        ).first()
        if known is None:
            raise UnknownApproval(task_id, approval_id)
        rows = conn.execute(
            sa.select(t.events)
            .where(t.events.c.task_id == task_id, t.events.c.type == ev.ApprovalAnswered.TYPE)
            .order_by(t.events.c.seq)
        ).all()
    for row in rows:
        p = ev.ApprovalAnswered.model_validate_json(row.payload)
        if p.approval_id == approval_id:
            return AnsweredResult(
                task_id=task_id,
                approval_id=approval_id,
                result=p.result,
                result_digest=p.result_digest,
                answered_by=Actor(kind=row.actor_kind, id=row.actor_id, name=row.actor_name or ""),
                answered_at=str(row.at),
                note=p.note,
                schema_checked=p.schema_checked,
                seq=int(row.seq),
            )
    return None
