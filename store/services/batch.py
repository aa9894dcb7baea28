"""Batches (issue 42): several pending approvals, across tasks too, decided in one pass.

`batch_preflight` is the pre-flight table: for each pending approval asked about, what it
would do (its consequence and change), the digest the decision binds, its target, and the
verdicts the store allows now. `decide_batch` records a person's verdict for each item on its
own (its own transaction, signed by them): an item whose approval changed since the digest it
names (another decision, an edit, a new object) is refused with its conflict (`StaleDecision`),
any other refusal with its own error, and the others are recorded. Nothing is all-or-nothing:
each item's result says what happened to it.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import sqlalchemy as sa
from pydantic import BaseModel, ConfigDict, Field, field_validator

from .. import commands as cmds
from .. import db, rules
from .. import schema as t
from ..commands.approvals import DecideApproval
from ..commands.respond import RespondToApproval
from ..errors import CommandRejected, StoreError, UnknownApproval, WriteConflict
from ..model import Actor
from ..reads.decision_views import ApprovalDecision, approval_decision
from ..reads.read_model import ReadModel
from ..store import Store
from ..tx import Tx

BatchVerdict = Literal["approved", "rejected", "sent_back", "answered"]

#: The words a batch file may use for a verdict, and the store's word for each.
VERDICT_WORDS: dict[str, BatchVerdict] = {
    "approve": "approved",
    "approved": "approved",
    "reject": "rejected",
    "rejected": "rejected",
    "send-back": "sent_back",
    "send_back": "sent_back",
    "sent_back": "sent_back",
    "respond": "answered",
    "answered": "answered",
}

_TRIES = 5


class StaleDecision(CommandRejected):
    """A batch item's approval is no longer what the person decided on: it binds another
    digest now, or it was decided meanwhile. Nothing was written for that item."""

    code = "conflict"
    rule = "decide_on_the_current_version"

    def __init__(
        self,
        task_id: str,
        approval_id: str,
        based_on: str,
        current: str,
        state: str,
        changed_by: str = "",
    ) -> None:
        if state != rules.ApprovalState.PENDING:
            what = f"it was {state} by {changed_by or 'someone'} meanwhile"
        else:
            what = f"it binds {current} now, not {based_on} that you decided on"
        super().__init__(
            f"approval {approval_id} of task {task_id} changed since you read it: {what}; "
            "look at it again"
        )
        self.task_id = task_id
        self.approval_id = approval_id
        self.based_on = based_on
        self.current = current
        self.state = state
        self.changed_by = changed_by


class BatchItem(BaseModel):
    """One line of a batch: a verdict on one pending approval, based on the digest the
    person saw. `edited`: approve this revision of the object instead; `edited_message`: approve
    the message with these words instead (its subject, body: where the decision view lists them
    `editable`, as the Approve dialog's Edit); `result`: the tool's result, for `answered`
    (respond)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    task_id: str = Field(min_length=1)
    approval_id: str = Field(min_length=1)
    verdict: BatchVerdict
    based_on: str = Field(min_length=1, description="the payload digest the person decided on")
    note: str = ""
    edited: dict[str, Any] | None = None
    edited_message: dict[Literal["subject", "body"], str] | None = None
    result: Any = None

    @field_validator("verdict", mode="before")
    @classmethod
    def _word(cls, value: Any) -> Any:
        return VERDICT_WORDS.get(value, value) if isinstance(value, str) else value


class BatchConflict(ReadModel):
    """What changed under a stale item: the digest it named, the one now, the state now."""

    based_on: str
    current: str
    state: str
    changed_by: str


class BatchItemResult(ReadModel):
    """What happened to one item: recorded (the approval's state after), or refused (why)."""

    task_id: str
    approval_id: str
    verdict: str
    recorded: bool
    state: str | None = Field(description="the approval's state after, when recorded")
    code: str | None = Field(description="the refusal's code (conflict for a stale item)")
    message: str | None
    conflict: BatchConflict | None = None


class BatchResults(ReadModel):
    """Every item's result, in the batch's order."""

    results: list[BatchItemResult]

    @property
    def recorded(self) -> int:
        return sum(r.recorded for r in self.results)

    @property
    def refused(self) -> int:
        return len(self.results) - self.recorded


@dataclass(frozen=True)
class BatchRow:
    """One pending approval as the pre-flight table shows it: the store's decision view
    (what it would do, its digest, the verdicts allowed), its target and its task's title."""

    view: ApprovalDecision
    target: str
    task_title: str


def batch_preflight(store: Store, refs: Iterable[tuple[str, str]]) -> list[BatchRow]:
    """The pre-flight table of these (task, approval) pairs, read in one snapshot. A pair
    whose approval is not on record is left out (deleted or mistyped)."""
    rows: list[BatchRow] = []
    with store.read() as conn:
        now = db.database_now(conn)
        for task_id, approval_id in refs:
            try:
                view = approval_decision(conn, store.blobs, task_id, approval_id, now)
            except (UnknownApproval, StoreError):
                continue
            rows.append(BatchRow(view, _target(conn, view), _title(conn, task_id)))
    return rows


def _target(conn: Any, view: ApprovalDecision) -> str:
    if view.effect_id is None:
        return ""
    found = conn.execute(
        sa.select(t.effects.c.target).where(
            t.effects.c.task_id == view.task_id, t.effects.c.effect_id == view.effect_id
        )
    ).scalar()
    return str(found or "")


def _title(conn: Any, task_id: str) -> str:
    found = conn.execute(sa.select(t.tasks.c.title).where(t.tasks.c.task_id == task_id)).scalar()
    return str(found or "")


def decide_batch(store: Store, person: Actor | str, items: Sequence[BatchItem]) -> BatchResults:
    """Record each item's verdict in the person's name, each on its own; the results in the
    items' order. A refused item leaves the others as they are."""
    who = Actor.parse(person) if isinstance(person, str) else person
    store.sign_as(who)
    return BatchResults(results=[_one(store, who, item) for item in items])


def _one(store: Store, who: Actor, item: BatchItem) -> BatchItemResult:
    def result(**kw: Any) -> BatchItemResult:
        return BatchItemResult(
            task_id=item.task_id, approval_id=item.approval_id, verdict=item.verdict, **kw
        )

    try:
        state = _record(store, who, item)
    except StaleDecision as exc:
        conflict = BatchConflict(
            based_on=exc.based_on, current=exc.current, state=exc.state, changed_by=exc.changed_by
        )
        return result(
            recorded=False, state=None, code=exc.code, message=str(exc), conflict=conflict
        )
    except StoreError as exc:
        return result(recorded=False, state=None, code=exc.code, message=" ".join(str(exc).split()))
    return result(recorded=True, state=str(state), code=None, message=None)


def _command(item: BatchItem) -> cmds.Command:
    if item.verdict == "answered":
        return RespondToApproval(
            task_id=item.task_id,
            approval_id=item.approval_id,
            result=item.result,
            note=item.note,
            based_on=item.based_on,
        )
    return DecideApproval(
        task_id=item.task_id,
        approval_id=item.approval_id,
        decision=item.verdict,
        note=item.note,
        edited=item.edited,
        edited_message=item.edited_message,
    )


def _record(store: Store, who: Actor, item: BatchItem) -> Any:
    """The item's command, in a transaction of its own that first checks the approval is
    still what the person decided on (the task's row locked, as a decision locks it)."""
    command = _command(item)
    cmds.prepare(store, command)
    for attempt in range(_TRIES):
        try:
            with store.transaction() as tx:
                _check_basis(tx, item)
                return cmds.execute(tx, command, who)
        except WriteConflict:
            if attempt == _TRIES - 1:
                raise
            time.sleep(0.02 * (attempt + 1))
    raise AssertionError("unreachable")  # pragma: no cover


def _check_basis(tx: Tx, item: BatchItem) -> None:
    tx.task(item.task_id)
    row = tx.conn.execute(
        sa.select(t.approvals).where(
            t.approvals.c.task_id == item.task_id, t.approvals.c.approval_id == item.approval_id
        )
    ).first()
    if row is None:
        raise UnknownApproval(item.task_id, item.approval_id)
    state = rules.approval_state(str(row.state), row.expires_at, tx.now)
    decided = state not in {rules.ApprovalState.PENDING, rules.ApprovalState.EXPIRED}
    if row.payload_digest != item.based_on or decided:
        by = dict(row.decided_by or {}).get("id", "")
        raise StaleDecision(
            item.task_id, item.approval_id, item.based_on, row.payload_digest, str(state), by
        )
