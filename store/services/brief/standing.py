"""How the run stands in the brief: its status and who moves it on, the waits that are due,
what changed after completion, the checkpoint lineage (a fork is a person's choice, never
picked) and who holds the task now.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ... import rules
from .models import LateBrief, LeaseBrief, WaitBrief
from .said import Run, Said, cmd, item

if TYPE_CHECKING:
    from ...reads.checkpoints import Checkpoint, Checkpoints
    from ...reads.inbox import Lease
    from ...reads.late import LateChanges
    from ...reads.waits import Wait


def run_status(ctx: Run, said: Said) -> None:
    """A run that may not dispatch says why, and who moves it on."""
    status = ctx.status
    if ctx.closed or ctx.may_dispatch:
        return
    resume = cmd("set_status", ctx.task_id, status=rules.RunStatus.RUNNING, reason="resumed")
    if status in rules.STOPPED_BY_POLICY:
        who = rules.ActorKind.PERSON
        why = (
            f"the {', '.join(ctx.exhausted) or 'a'} budget is exhausted"
            if status == rules.RunStatus.BUDGET_EXHAUSTED
            else "the run was stopped"
        )
        said.blockers.append(
            {
                "kind": str(status),
                "counters": ctx.exhausted,
                "message": f"{why}: nothing is dispatched until a person raises the limit or "
                "resumes the run",
            }
        )
        said.forbidden.append(
            item(
                "resume the run as an agent",
                rules.ActorKind.AGENT,
                resume,
                reason="reopening a run stopped by policy is a person's",
            )
        )
        for counter in ctx.exhausted if status == rules.RunStatus.BUDGET_EXHAUSTED else []:
            said.forbidden.append(
                item(
                    f"spend more {counter}",
                    rules.ActorKind.AGENT,
                    cmd("charge_budget", ctx.task_id, counter=counter, amount=1),
                    reason=f"the {counter} budget is exhausted",
                )
            )
    else:
        who = rules.ActorKind.AGENT
        said.blockers.append(
            {
                "kind": "run_not_dispatching",
                "message": f"the run is {status}: nothing may be dispatched until it runs again",
            }
        )
    said.actions.append(item(f"resume the run (it is {status})", who, resume, evidence=[]))


def due_waits(task_id: str, waits: list[Wait]) -> list[dict[str, Any]]:
    """Each open wait whose time has come on the database's clock, as something to
    re-evaluate: being due says only that it is time to look again. Whatever it leads to is
    decided then, by current policy, budgets and approvals, through the command layer (a
    retry is a new dispatch, refused or allowed as any other); so the brief names no action
    to carry out here, only the wait to settle or schedule again."""
    out = []
    for w in waits:
        if not w.due:
            continue
        cond = w.condition.words if w.condition else None
        out.append(
            item(
                f"re-evaluate wait {w.wait_id} ({w.waiting_for}), due since "
                f"{w.not_before}: check current policy and the world again, then settle "
                "the wait or schedule it again" + (f"; {cond}" if cond else ""),
                rules.ActorKind.AGENT,
                cmd("settle_wait", task_id, wait_id=w.wait_id),
                ("result", "not_before", "after_seconds", "note"),
                evidence=[],
                wait_id=w.wait_id,
                reservation=w.reservation,
            )
        )
    return out


def wait_brief(w: Wait) -> WaitBrief:
    return WaitBrief(
        id=w.wait_id,
        kind=w.kind,
        ref=w.ref,
        waiting_for=w.waiting_for,
        not_before=w.not_before,
        clock=w.clock,
        due=w.due,
        reservation=w.reservation,
        condition=(w.condition.words if w.condition else None) or None,
    )


def late_changes(task_id: str, late: LateChanges, said: Said) -> LateBrief | None:
    """A completed task changed after completion (issue 35 part L): said as a blocker (the
    record no longer says only what was known at completion) and a person's next action.
    It never reopens the task: nobody resumes a completed one; a person decides."""
    if not late.count:
        return None
    said.blockers.append(
        {
            "kind": "changed_after_completion",
            "count": late.count,
            "since_seq": late.since_seq,
            "message": f"{late.words} (#{late.since_seq}..#{late.last_seq}): "
            + "; ".join(f.what for f in late.facts)
            + "; the task stays completed until a person acknowledges them or opens a "
            "follow-up task",
        }
    )
    for ctype, text in (
        ("acknowledge_late_changes", "acknowledge what changed after completion"),
        ("open_followup", "open a follow-up task for what changed after completion"),
    ):
        extra = {"title": ""} if ctype == "open_followup" else {}
        said.actions.append(
            item(
                text,
                rules.ActorKind.PERSON,
                cmd(ctype, task_id, through_seq=late.last_seq, **extra),
                ("title",) if extra else (),
                evidence=[],
            )
        )
    return LateBrief(
        count=late.count,
        since_seq=late.since_seq,
        since_at=late.since_at,
        last_seq=late.last_seq,
        facts=late.facts,
    )


def head_checkpoint(checkpoints: Checkpoints) -> Checkpoint | None:
    rows = [c for c in checkpoints.checkpoints if c.checkpoint_id in checkpoints.heads]
    return max(rows, key=lambda c: (c.seq, c.at)) if rows else None


def lineage_brief(task_id: str, lineage: Checkpoints, head: Checkpoint | None, said: Said) -> None:
    """A forked lineage is a person's choice to make; a task with no checkpoint says the
    brief rests on the whole log."""
    if len(lineage.heads) > 1:
        said.blockers.append(_fork(task_id, lineage, head))
        said.actions.append(_choose_head(task_id, lineage))
    if head is None:
        said.blockers.append(
            {
                "kind": "no_checkpoint",
                "message": "the task has no checkpoint: the brief rests on the whole event log",
            }
        )


def _fork(task_id: str, lineage: Checkpoints, head: Checkpoint | None) -> dict[str, Any]:
    """The fork as a blocker. Which head the work continues from is a person's choice: the
    brief names the heads and, when a stop left them unchosen, says so; it picks none."""
    heads = lineage.heads
    left_open: tuple[str, ...] = ()
    if head is not None and head.reason == "stopped":
        left_open = rules.fork_left_open(
            ((c.checkpoint_id, c.supersedes, c.merged) for c in lineage.checkpoints),
            head.checkpoint_id,
        )
    unchosen = (
        f"stopped checkpoint {head.checkpoint_id} chose none of heads {', '.join(left_open)}; "
        if head is not None and left_open
        else ""
    )
    return {
        "kind": "fork",
        "heads": heads,
        "left_open_by": head.checkpoint_id if head is not None and left_open else None,
        "unchosen": list(left_open),
        "message": f"the checkpoint lineage has forked (heads {', '.join(heads)}): {unchosen}"
        "a person must choose the head to continue from, and whether to merge the others, "
        "before anyone resumes; no branch is picked silently",
    }


def _choose_head(task_id: str, lineage: Checkpoints) -> dict[str, Any]:
    heads = lineage.heads
    return item(
        f"choose the head to continue from (one of {', '.join(heads)}): write a checkpoint "
        "that supersedes it, merging another head only if you mean to",
        rules.ActorKind.PERSON,
        cmd("write_checkpoint", task_id, reason="handoff"),
        ("supersedes", "merge", "note"),
        # Each head by the event boundary it was taken at.
        evidence=[
            {"kind": "checkpoint", "id": c.checkpoint_id, "digest": c.chain_hash}
            for c in lineage.checkpoints
            if c.checkpoint_id in heads
        ],
    )


def lease_brief(lease: Lease | None) -> LeaseBrief | None:
    """Who holds the task: a lease controls who works now, never what happened remotely."""
    if lease is None:
        return None
    holder = lease.holder
    return LeaseBrief(
        holder=f"{holder.kind}:{holder.id}",
        holder_kind=holder.kind,
        session_id=lease.session_id,
        token=lease.token,
        since=lease.since,
        last_heartbeat_at=lease.last_heartbeat_at,
        expires_at=lease.expires_at,
        standing=lease.standing,
        reason=lease.reason,
    )


def lease_words(lease: LeaseBrief | None) -> str:
    if lease is None:
        return "Held by: nobody (never leased)"
    if lease.standing == rules.LeaseStanding.ENDED:
        return f"Held by: nobody (the lease of {lease.holder} ended)"
    heard = (
        f", last heard {lease.last_heartbeat_at}"
        if lease.holder_kind != rules.ActorKind.PERSON
        else ""
    )
    return (
        f"Held by: {lease.holder} (token {lease.token}, since {lease.since}"
        f"{heard}; {lease.standing})"
    )


def taken_over(lease: LeaseBrief | None, said: Said) -> None:
    """Taken over: the next actor is the person, until they hand the task back."""
    if (
        lease is not None
        and lease.holder_kind == rules.ActorKind.PERSON
        and lease.standing == rules.LeaseStanding.ALIVE
    ):
        said.blockers.append(
            {
                "kind": "taken_over",
                "holder": lease.holder,
                "message": f"{lease.holder} took the task over at {lease.since}"
                + (f" ({lease.reason})" if lease.reason else "")
                + "; an agent resumes only after they release the lease",
            }
        )
