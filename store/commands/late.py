"""A person's answer to what changed after a task completed (issue 35 part L).

Late facts (store.rules.LATE_FACT_EVENTS) are appended to a completed task without
reopening it; the task's row counts them (store.projections.core). A person answers them
here, by one of two decisions, each based on the newest late fact they saw (`through_seq`):
a late fact recorded since is a `Conflict`, never answered unseen.

- acknowledge: nothing more is needed (`late_changes.acknowledged`);
- open a follow-up: a new task, whose `task.created` names this one as its origin, from a
  draft of this one's objective and scope the person edited (`followup.opened` here).
"""

from __future__ import annotations

from typing import Any, Literal

import sqlalchemy as sa
from pydantic import Field

from .. import events as ev
from .. import rules
from .. import schema as t
from ..errors import CommandRejected
from ..model import Actor, Scope
from ..scope import make_scope
from ..tx import Tx
from .core import Ident, TaskCommand, _conflict, handles, new_id

_THROUGH = (
    "the seq of the newest late fact you saw (the task's late_last_seq); refused as a "
    "conflict if a newer one was recorded since"
)


class AcknowledgeLateChanges(TaskCommand):
    type: Literal["acknowledge_late_changes"] = "acknowledge_late_changes"
    through_seq: int = Field(ge=1, description=_THROUGH)
    note: str = ""


class OpenFollowup(TaskCommand):
    type: Literal["open_followup"] = "open_followup"
    through_seq: int = Field(ge=1, description=_THROUGH)
    title: str = Field(min_length=1)
    followup_task_id: Ident | None = None
    # The draft: the completed task's current objective and scope unless edited.
    objective: str | None = Field(default=None, min_length=1)
    scope_paths: list[str] | None = None
    destinations: list[str] | None = None
    note: str = ""


def late_row(tx: Tx, task_id: str) -> Any:
    """The task's status and its late-change columns, read in the write transaction after
    the task's row lock (tx.task), so a late fact committed before is seen."""
    tx.task(task_id)
    return tx.conn.execute(
        sa.select(
            t.tasks.c.status, t.tasks.c.owner, t.tasks.c.late_count, t.tasks.c.late_last_seq
        ).where(t.tasks.c.task_id == task_id)
    ).one()


def _judge_answer(tx: Tx, task_id: str, through_seq: int) -> None:
    """Refuse an answer to nothing, or to an older late fact (that only a person answers is
    the authority table's: `authorize` refused anyone else already)."""
    row = late_row(tx, task_id)
    refusal = rules.late_decision_refusal(str(row.status), int(row.late_count))
    if refusal is not None:
        raise CommandRejected(f"task {task_id}: {refusal}", rule="nothing_late_to_answer")
    last = int(row.late_last_seq)
    if through_seq != last:
        _conflict(tx, task_id, "late_changes", task_id, through_seq, last, last)


@handles(AcknowledgeLateChanges)
def _acknowledge(tx: Tx, cmd: AcknowledgeLateChanges, actor: Actor) -> int:
    _judge_answer(tx, cmd.task_id, cmd.through_seq)
    tx.emit(
        cmd.task_id,
        ev.LateChangesAcknowledged(
            through_seq=cmd.through_seq, based_on=cmd.through_seq, note=cmd.note
        ),
        actor,
    )
    return cmd.through_seq


def _objective_now(tx: Tx, task_id: str) -> str:
    return str(
        tx.conn.execute(
            sa.select(t.objective_revisions.c.text)
            .where(t.objective_revisions.c.task_id == task_id)
            .order_by(t.objective_revisions.c.rev.desc())
            .limit(1)
        ).scalar_one()
    )


@handles(OpenFollowup)
def _open_followup(tx: Tx, cmd: OpenFollowup, actor: Actor) -> str:
    _judge_answer(tx, cmd.task_id, cmd.through_seq)
    new_task = cmd.followup_task_id or new_id("task")
    if tx.task_exists(new_task):
        raise CommandRejected(f"a task {new_task!r} exists already")
    old = Scope.model_validate(tx.task(cmd.task_id).scope)
    scope = make_scope(
        list(old.paths) if cmd.scope_paths is None else cmd.scope_paths,
        tuple(old.destinations if cmd.destinations is None else cmd.destinations),
    )
    owner = str(late_row(tx, cmd.task_id).owner)
    tx.emit(
        new_task,
        ev.TaskCreated(
            title=cmd.title,
            owner=owner,
            objective=cmd.objective or _objective_now(tx, cmd.task_id),
            scope=scope,
            origin=ev.TaskOrigin(task_id=cmd.task_id, through_seq=cmd.through_seq),
        ),
        actor,
    )
    tx.emit(
        cmd.task_id,
        ev.FollowupOpened(
            followup_task_id=new_task,
            title=cmd.title,
            through_seq=cmd.through_seq,
            based_on=cmd.through_seq,
            note=cmd.note,
        ),
        actor,
    )
    return new_task
