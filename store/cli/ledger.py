"""`boris` subcommands for the effect ledger, approvals, checkpoints and stop.

Writes go through the same command layer as every other caller; reads print the rows of
`store.state` (each with a stable `id`) as JSON with `--json`, else one line per row.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

from .. import commands as c
from .. import db, rules
from ..commands import approvals as ap
from ..commands import checkpoints as ck
from ..commands import effects as lg
from ..commands import policies
from ..events import FileState
from ..reads import queries, state
from ..reads.checkpoints import checkpoints
from ..reads.state_models import Approval
from ..rules import is_destination, quorum_words
from ..services.answers import UsageError
from ..store import Store
from .inputs import json_object, recorded_path, stdin_text
from .output import FILE_HELP, TASK_HELP, _print, _write
from .parser import global_options

Add = Callable[[str, Any], argparse.ArgumentParser]
EFFECT_HELP = "the effect's id (boris effects TASK lists them)"


# --- effects -------------------------------------------------------------------------------


def _content(args: argparse.Namespace, *, stdin: bool) -> c.Content | None:
    if args.file:
        return c.Content(path=recorded_path(args.file, "--file"))
    if args.text is not None:
        return c.Content(text=args.text)
    if stdin and args.intended_digest is None:
        return c.Content(text=stdin_text())
    return None


def _intended(args: argparse.Namespace) -> FileState | None:
    if args.intended_digest is None:
        return None
    if args.file or args.text is not None:
        raise UsageError("give the intended content (--text/--file) or --intended-digest, not both")
    return FileState(exists=True, digest=args.intended_digest)


def _plan(a: argparse.Namespace) -> c.Command:
    intended = _intended(a)
    return lg.PlanEffect(
        task_id=a.task,
        effect_id=a.id,
        kind=a.kind,
        target=a.target if is_destination(a.target) else recorded_path(a.target, "--target"),
        consequence=a.consequence,
        content=_content(a, stdin=True),
        intended=intended,
        requires_approval=a.requires_approval,
        policy=a.policy,
        idempotency_key=a.idempotency_key,
        tool=a.tool,
        tool_digest=a.tool_digest,
    )


def _revise(a: argparse.Namespace) -> c.Command:
    intended = _intended(a)
    return lg.ReviseEffect(
        task_id=a.task,
        effect_id=a.effect,
        reason=a.reason,
        consequence=a.consequence,
        content=_content(a, stdin=False),
        intended=intended,
    )


def _request(a: argparse.Namespace) -> c.Command:
    if (a.effect is None) == (a.payload_json is None):
        raise UsageError("request-approval needs --effect ID or --payload-json JSON (one of them)")
    if a.payload_json is not None and not a.consequence:
        raise UsageError("an approval of a payload needs --consequence")
    return ap.RequestApproval(
        task_id=a.task,
        approval_id=a.id,
        effect_id=a.effect,
        payload=json_object(a.payload_json, "--payload-json"),
        consequence=a.consequence,
        policy=a.policy,
        expires_in_seconds=a.expires_in,
        approvers=a.approvers,
    )


def _observe(a: argparse.Namespace) -> c.Command:
    given = json_object(a.state_json, "--state-json")
    return lg.ObserveEffect(
        task_id=a.task,
        effect_id=a.effect,
        purpose=a.purpose,
        state=None if given is None else FileState.model_validate(given),
    )


def cmd_effects(store: Store, args: argparse.Namespace) -> None:
    with store.read() as conn:
        queries.task_row(conn, args.task)
        rows = state.effects(conn, args.task)
    lines = []
    for e in rows:
        n = len(e.attempts)
        lines.append(
            f"{e.id:<14} {e.kind:<10} {e.stage:<10} {e.outcome or '-':<9} "
            f"{n} attempt{'s' if n != 1 else ''}  {e.target}  — {e.consequence}"
        )
    _print(args, rows, "\n".join(lines) or "(no effects)")


def _decide(a: argparse.Namespace, decision: str) -> c.Command:
    """A person's answer; `approve --edited-json` / `--text` / `--file` approves their edit."""
    edited = json_object(a.edited_json, "--edited-json") if a.edited_json else None
    return ap.DecideApproval.model_validate(
        {
            "task_id": a.task,
            "approval_id": a.approval,
            "decision": decision,
            "note": a.note,
            "edited": edited,
            "edited_content": _content(a, stdin=False),
        }
    )


def _quorum(r: Approval) -> str:
    """Where several people must approve a pending request: " (1 of 2 approved by maria)"."""
    if r.state != rules.ApprovalState.PENDING or r.approvers <= 1:
        return ""
    people = [x.id for x in r.approved_by]
    return f" ({quorum_words(people, r.approvers)})"


def cmd_approvals(store: Store, args: argparse.Namespace) -> None:
    with store.read() as conn:
        if args.task is not None:
            queries.task_row(conn, args.task)
        rows = state.approvals(conn, args.task, db.database_now(conn))
    lines = [
        f"{r.id:<14} {r.task_id:<14} {r.state:<9} expires {r.expires_at}  "
        + (f"effect {r.effect_id}  " if r.effect_id else "")
        + f"— {r.consequence}"
        + (f" (sent back: “{r.note}”)" if r.state == rules.ApprovalState.SENT_BACK else "")
        + _quorum(r)
        for r in rows
    ]
    _print(args, rows, "\n".join(lines) or "(no approvals)")


def cmd_policies(store: Store, args: argparse.Namespace) -> None:
    with store.read() as conn:
        rows = policies.all_policies(conn)
    lines = [
        f"{r['approvers']} approver{'s' if r['approvers'] != 1 else ''}  {r['policy']}  "
        f"(set by {r['set_by'].get('id')} at {r['set_at']})"
        for r in rows
    ]
    _print(args, rows, "\n".join(lines) or "(no policy sets a number: one person approves)")


def _register_policy(add: Add) -> None:
    """`boris policy set POLICY --approvers N` (a person's) and `boris policy list`."""
    sp = add("policy", cmd_policies)
    sub = sp.add_subparsers(dest="policy_command")
    common = argparse.ArgumentParser(add_help=False)
    global_options(common, argparse.SUPPRESS)
    sub.add_parser("list", help="every policy a person set", parents=[common]).set_defaults(
        fn=cmd_policies
    )
    k = sub.add_parser(
        "set",
        help="how many distinct people must approve each request under POLICY (a person's)",
        parents=[common],
    )
    k.set_defaults(
        fn=_write(lambda a: ap.SetApprovalPolicy(policy=a.policy, approvers=a.approvers))
    )
    k.add_argument("policy", help="the policy's name, as requests give it (--policy)")
    k.add_argument(
        "--approvers",
        type=int,
        required=True,
        help="distinct people who must approve (a request may ask for more, never fewer)",
    )


def cmd_checkpoints(store: Store, args: argparse.Namespace) -> None:
    with store.read() as conn:
        queries.task_row(conn, args.task)
        value = checkpoints(conn, args.task)
    lines = []
    for r in value.checkpoints:
        lines.append(
            f"{r.id:<14} {r.reason:<9} seq {r.seq:<5} "
            + (f"supersedes {', '.join(r.supersedes)}  " if r.supersedes else "")
            + (f"merged {', '.join(r.merged)}  " if r.merged else "")
            + ("superseded" if r.superseded else "head")
        )
    if not lines:
        lines.append("(no checkpoints)")
    for fork in value.forks:
        lines.append(
            f"FORK: heads {', '.join(fork)} (name the head to continue from, merge the others)"
        )
    _print(args, value, "\n".join(lines))


# --- registration --------------------------------------------------------------------------


def register(add: Add) -> None:
    _register_effects(add)
    _register_approvals(add)
    _register_attempts(add)
    _register_observations(add)
    _register_checkpoints(add)
    _register_reads(add)


def _register_effects(add: Add) -> None:
    """An effect's intent: planned, revised, cancelled before dispatch."""
    sp = add("plan-effect", _write(_plan))
    sp.add_argument("task", help=TASK_HELP)
    sp.add_argument(
        "--target",
        required=True,
        help="a path in the task's scope (relative: from the current directory) or a "
        "destination URI (https://…, mailto:…)",
    )
    sp.add_argument("--consequence", required=True, help="one line: what it does to the world")
    sp.add_argument(
        "--kind",
        choices=["file_write", "upload", "send", "other"],
        default="file_write",
        help="what kind of effect (default file_write)",
    )
    sp.add_argument("--text", help="the content it will write (else --file, else stdin)")
    sp.add_argument("--file", help="a file holding the content it will write; " + FILE_HELP)
    sp.add_argument(
        "--intended-digest", help="the intended post-state's sha256:… digest (instead of content)"
    )
    sp.add_argument(
        "--requires-approval",
        action="store_true",
        help="a person must approve the prepared object before dispatch (give --policy)",
    )
    sp.add_argument("--policy", default="", help="the policy that asks for approval")
    sp.add_argument("--id", help="the effect's id (default: generated, printed)")
    sp.add_argument(
        "--idempotency-key", help="the executor's idempotency key (default TASK:EFFECT)"
    )
    sp.add_argument("--tool", help="the tool that will run it (its definition is pinned)")
    sp.add_argument(
        "--tool-digest",
        dest="tool_digest",
        help="that tool's definition digest (default: the current configuration's)",
    )

    sp = add("revise-effect", _write(_revise))
    sp.add_argument("task", help=TASK_HELP)
    sp.add_argument("effect", help=EFFECT_HELP)
    sp.add_argument("--reason", required=True, help="why the intent changed")
    sp.add_argument("--consequence", help="a new one-line consequence (default: unchanged)")
    sp.add_argument("--text", help="the new content it will write")
    sp.add_argument("--file", help="a file holding the new content; " + FILE_HELP)
    sp.add_argument("--intended-digest", help="the new intended post-state's sha256:… digest")

    sp = add(
        "cancel-effect",
        _write(lambda a: lg.CancelEffect(task_id=a.task, effect_id=a.effect, reason=a.reason)),
    )
    sp.add_argument("task", help=TASK_HELP)
    sp.add_argument("effect", help=EFFECT_HELP)
    sp.add_argument("--reason", required=True, help="why it is dropped")


def _register_approvals(add: Add) -> None:
    """Approvals asked for, their policies, and a person's answers."""
    sp = add("request-approval", _write(_request))
    sp.add_argument("task", help=TASK_HELP)
    sp.add_argument("--effect", help="the effect whose prepared object is approved")
    sp.add_argument("--payload-json", help="the object to approve, when it is not an effect")
    sp.add_argument("--consequence", help="one line the reviewer agrees to (default: the effect's)")
    sp.add_argument("--policy", required=True, help="the policy that asks for approval")
    sp.add_argument("--expires-in", type=float, default=3600, help="seconds (default 3600)")
    sp.add_argument("--id", help="the approval's id (default: generated, printed)")
    sp.add_argument(
        "--approvers",
        type=int,
        help="distinct people who must approve (default: what the policy says, else 1; "
        "never fewer than the policy says)",
    )
    _register_policy(add)

    for name, decision in (("approve", "approved"), ("reject", "rejected")):
        sp = add(
            name,
            _write(lambda a, d=decision: _decide(a, d)),
        )
        sp.add_argument("task", help=TASK_HELP)
        sp.add_argument("approval", help="the approval's id (boris approvals lists them)")
        sp.add_argument("--note", default="", help="the reviewer's note, kept with the decision")
        if name == "reject":
            sp.set_defaults(edited_json=None, text=None, file=None)
            continue
        sp.add_argument(
            "--edited-json", help="approve your edit: the prepared object as you revised it"
        )
        sp.add_argument("--text", help="approve your edit: a file write's new content")
        sp.add_argument("--file", help="approve your edit: a file with the new content")
    sp = add(
        "send-back",
        _write(lambda a: _decide(a, "sent_back")),
    )
    sp.add_argument("task", help=TASK_HELP)
    sp.add_argument("approval", help="the approval's id (boris approvals lists them)")
    sp.add_argument("--note", required=True, help="what the requester should change")
    sp.set_defaults(edited_json=None, text=None, file=None)


def _register_attempts(add: Add) -> None:
    """An effect's attempts: dispatched, and what the executor reported."""
    sp = add(
        "dispatch",
        _write(
            lambda a: lg.DispatchEffect(
                task_id=a.task,
                effect_id=a.effect,
                executor=a.executor,
                approval_id=a.approval,
                inputs=json_object(a.inputs_json, "--inputs-json"),
            )
        ),
    )
    sp.add_argument("task", help=TASK_HELP)
    sp.add_argument("effect", help=EFFECT_HELP)
    sp.add_argument("--executor", required=True, help="what runs it (a tool's name)")
    sp.add_argument(
        "--approval", help="the approval to consume (default: the effect's approved one)"
    )
    sp.add_argument(
        "--inputs-json",
        help="the inputs handed over; must equal the prepared object (its digest is checked, "
        "so omit it to hand over the prepared object; revise the effect to change it)",
    )

    sp = add(
        "record-response",
        _write(
            lambda a: lg.RecordResponse(
                task_id=a.task,
                effect_id=a.effect,
                attempt_no=a.attempt,
                reported=a.reported,
                response=json_object(a.response_json, "--response-json"),
                error=a.error,
            )
        ),
    )
    sp.add_argument("task", help=TASK_HELP)
    sp.add_argument("effect", help=EFFECT_HELP)
    sp.add_argument(
        "reported",
        choices=["reported_success", "failed", "partial", "timeout"],
        help="what the executor said (timeout: nothing came back)",
    )
    sp.add_argument("--attempt", type=int, help="the attempt's number (default: the last)")
    sp.add_argument("--response-json", help="the executor's response, as a JSON object")
    sp.add_argument("--error", help="the executor's error (required with failed)")


def _register_observations(add: Add) -> None:
    """An effect's target observed, and the effect reconciled against what was seen."""
    sp = add("observe", _write(_observe))
    sp.add_argument("task", help=TASK_HELP)
    sp.add_argument("effect", help=EFFECT_HELP)
    sp.add_argument(
        "--purpose",
        choices=["reconcile", "post_dispatch", "watch"],
        default="reconcile",
        help="why it is observed (default reconcile)",
    )
    sp.add_argument("--state-json", help="what was observed at a destination the store cannot read")

    sp = add(
        "reconcile",
        _write(
            lambda a: lg.ReconcileEffect(
                task_id=a.task,
                effect_id=a.effect,
                observation_id=a.observation,
                decision=a.decision,
                note=a.note,
                based_on=a.based_on,
            )
        ),
    )
    sp.add_argument("task", help=TASK_HELP)
    sp.add_argument("effect", help=EFFECT_HELP)
    sp.add_argument(
        "--observation", help="the observation it rests on (default: observe the target now)"
    )
    sp.add_argument(
        "--decision",
        choices=["present", "absent", "conflict"],
        help="a person's decision by hand (needs --note); without it the verdict is computed",
    )
    sp.add_argument("--note", default="", help="why (required with --decision)")
    sp.add_argument(
        "--based-on",
        type=int,
        metavar="SEQ",
        help="the seq of the effect's last reconciliation you saw (0: none): refused as a "
        "conflict, naming who reconciled it and when, if another was recorded since",
    )


def _register_checkpoints(add: Add) -> None:
    """A run stopped, a task closed, a checkpoint written."""
    sp = add(
        "stop",
        _write(
            lambda a: ck.StopRun(
                task_id=a.task, reason=a.reason, supersedes=a.continue_from, merge=a.merge
            )
        ),
    )
    sp.add_argument("task", help=TASK_HELP)
    sp.add_argument("--reason", required=True, help="why the run stops (kept in the checkpoint)")
    sp.add_argument(
        "--continue-from",
        metavar="HEAD",
        help="on a forked lineage, the head the stopped checkpoint continues from (default: "
        "none; the fork stays, named in the account, for a person to resolve)",
    )
    sp.add_argument(
        "--merge",
        metavar="HEAD",
        action="append",
        default=[],
        help="another head the stopped checkpoint merges (needs --continue-from; repeat for more)",
    )

    sp = add(
        "close",
        _write(lambda a: ck.CloseTask(task_id=a.task, status=a.as_status, reason=a.reason)),
    )
    sp.add_argument("task", help=TASK_HELP)
    sp.add_argument(
        "--as",
        dest="as_status",
        choices=["failed", "superseded"],
        required=True,
        help="failed: it will not be finished; superseded: another task replaces it",
    )
    sp.add_argument("--reason", required=True, help="why it will not be finished")

    sp = add(
        "checkpoint",
        _write(
            lambda a: ck.WriteCheckpoint(
                task_id=a.task,
                reason=a.reason,
                note=a.note,
                supersedes=a.supersedes,
                merge=a.merge,
                checkpoint_id=a.id,
            )
        ),
    )
    sp.add_argument("task", help=TASK_HELP)
    sp.add_argument(
        "reason",
        choices=["initial", "milestone", "handoff", "final"],
        help="final is refused while work is pending",
    )
    sp.add_argument(
        "--note", default="", help="for whoever resumes (required when a person writes it)"
    )
    sp.add_argument(
        "--supersedes", action="append", help="the head it continues from (repeat on a fork)"
    )
    sp.add_argument(
        "--merge", action="append", default=[], help="another head it merges (repeat for more)"
    )
    sp.add_argument(
        "--id",
        help="the checkpoint's id (default: generated, printed); not ckpt- and hex digits, "
        "the form of generated ids",
    )


def _register_reads(add: Add) -> None:
    add("effects", cmd_effects).add_argument("task", help=TASK_HELP)
    add("approvals", cmd_approvals).add_argument(
        "task", nargs="?", help="one task's (default: every task's)"
    )
    add("checkpoints", cmd_checkpoints).add_argument("task", help=TASK_HELP)
