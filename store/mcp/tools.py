"""The record's commands as tools, without the protocol: names, schemas, running them.

Every command an agent may run (by `store.rules.AUTHORITY`) is a tool named by its command
`type` (the same name `boris ingest` and `boris schema` use); its input schema is the command
model's JSON Schema without the `type` discriminator. A call is validated by the model and
run through `Store.execute`, so the command layer enforces every rule exactly as for any
other caller. Reading tools give the task's state, its resume brief and one approval.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa

from .. import commands as c
from .. import db, rules
from .. import schema as t
from ..errors import CommandRejected
from ..model import Actor
from ..services import answers
from ..services.respond import answered_result
from ..store import Store

#: One line per tool: what it does and what an agent must know to use it well.
DESCRIPTIONS: dict[str, str] = {
    "create_task": (
        "Create a task: title, owner, objective and its resource scope (absolute paths it may "
        "touch; destinations such as https://host/prefix/ or mailto:address). Returns its id."
    ),
    "amend_objective": (
        "Amend the task's objective with a reason; the old revision stays readable. "
        "based_on: the revision you read (refused as a conflict if it changed)."
    ),
    "add_criterion": "Add an acceptance criterion; returns its id (C1, C2, ... unless given).",
    "change_criterion": (
        "Change a criterion's text with a reason. based_on: the criterion's rev you read "
        "(task_state criteria[].rev); refused as a conflict if it changed since."
    ),
    "record_artifact": (
        "Record a new version of a named artifact from content (text, base64, or a path inside "
        "the task's scope). The same bytes again are not a new version. based_on: the "
        "current version you edited (0: none yet); refused as a conflict if it moved."
    ),
    "attach_evidence": (
        "Attach evidence (command output, source span, screenshot, review, receipt, other) "
        "to a criterion; it is kept as a blob. Give artifact_id and artifact_version when it "
        "was made on a known version. Returns the evidence id."
    ),
    "judge_criterion": (
        "Judge a criterion: satisfied (against the artifact's current version, with evidence "
        "ids), failed, or unverified. Waiving is a person's decision. based_on: the "
        "criterion's rev you read; evidence made on an older version needs "
        "older_evidence_reason."
    ),
    "add_phase": "Add a phase whose inputs are artifacts, approvals or other phases.",
    "complete_phase": "Complete a phase whose inputs are ready.",
    "set_budget": "Set a budget counter's limit (an agent may lower it; raising is a person's).",
    "charge_budget": "Record spending on a budget counter.",
    "reserve_budget": "Reserve part of a budget counter.",
    "release_budget": "Release a reservation.",
    "set_status": "Change the run status as the transition table allows.",
    "record_note": "Record a note or message in the task's history.",
    "plan_effect": (
        "Record an effect's intent before anything is done: its target (a path in scope or a "
        "destination), one-line consequence, and intended content; the store observes the "
        "pre-state. Set requires_approval with a policy when a person must approve. Returns "
        "the effect id and the prepared object's digest."
    ),
    "revise_effect": (
        "Change an undispatched effect's intent; open approvals of the old payload go stale."
    ),
    "cancel_effect": "Cancel an undispatched effect; its open approvals are revoked.",
    "dispatch_effect": (
        "Record an attempt before the executor runs (consumes the approval). Refused while "
        "the last outcome is unknown: reconcile first. Returns the attempt number."
    ),
    "record_response": (
        "Record what the executor reported (its word, not evidence): reported_success, "
        "failed, partial or timeout. The outcome stays unknown until reconciled."
    ),
    "observe_effect": (
        "Observe the effect's target now (the store hashes a file itself; give the state of a "
        "destination it cannot read). Returns the observation id."
    ),
    "reconcile_effect": (
        "Compare the intent with a current observation of the target and record the verdict "
        "(present, absent, conflict). A decision by hand is a person's. based_on: the seq "
        "of the effect's last reconciliation you saw (0: none)."
    ),
    "request_approval": (
        "Ask a person to approve an effect's exact prepared object (or a payload with its "
        "consequence) under a policy, with an expiry. approvers: how many distinct people "
        "must approve (you may ask for more than the policy's number in the store, never "
        "fewer). Returns the approval id; then call wait_for_approval."
    ),
    "write_checkpoint": (
        "Write a checkpoint (initial, milestone, handoff, final) another actor can resume "
        "from. final is refused while work is pending."
    ),
    "stop_run": (
        "Stop the run: revoke open approvals, cancel planned effects, write a checkpoint. On a "
        "forked lineage it picks no head: name one in supersedes to continue from it, and "
        "other heads in merge only to merge them; otherwise the fork stays for a person."
    ),
    "acquire_lease": (
        "Take the task's lease before working on it: give your session_id and ttl_seconds "
        "(the lease lapses without a renew_lease in that time). Returns the lease; send its "
        "token as lease_token with every write. Refused as lease_held while another "
        "session's lease is alive or a person took the task over."
    ),
    "renew_lease": (
        "Heartbeat: your lease (lease_token) lasts ttl_seconds from now (default: as "
        "acquired). Cheap: no event. Refused as lease_lost when it is no longer yours."
    ),
    "release_lease": (
        "Let your lease (lease_token) go when you stop working on the task (after a "
        "checkpoint), so another session or a person can take it."
    ),
    "record_wait": (
        "Record what the task waits for (rate_limit, approval, status_check, retry, time; ref "
        "names on what) and when to consider it again: not_before (ISO 8601 with its zone) or "
        "after_seconds, on the database's clock. reserve holds budget for what it leads to "
        "(released when it ends); cancel_if: approval-rejected:ID, effect-reconciled:ID or "
        "text. No process needs to stay awake: list_waits and resume_brief show it due later."
    ),
    "settle_wait": (
        "A due wait re-evaluated under current policy and the world as it is now: result done "
        "(no longer waiting), or reschedule with a new not_before or after_seconds. Being due "
        "authorizes nothing: what follows goes through its own command."
    ),
    "cancel_wait": (
        "Cancel a wait you recorded (a person cancels any, saying why in reason); its "
        "reservation is released."
    ),
    "set_retention": (
        "Change how long content you recorded is kept (item: ARTIFACT@VERSION, an evidence "
        "id or a note id; retain: keep, 30d, 12h or until-completion+Nd, database clock). "
        "Content another actor wrote is a person's to change; expiry is a person's act."
    ),
    "record_narrative": (
        "Record your narrative of the task as a claim, with structured claims about criteria; "
        "where it disagrees with the record, the record wins."
    ),
    # context manifests and configuration (issue 35 part M)
    "record_manifest": (
        "Record what the model saw for one request: provider, model, parameters (only their "
        "digest is kept), the context items included and those omitted with why (budget, "
        "policy, stale, retired), each by kind, ref, digest, size and tokens if known; and "
        "led_to (an effect or checkpoint) when known. Returns the manifest id."
    ),
    "link_manifest": "Name the effect or checkpoint a recorded manifest's request led to.",
    "record_configuration": (
        "Record a configuration transition at a checkpoint: provider, model, parameters "
        "digest, and each tool's definition digest. Intents planned under an older tool "
        "definition are then refused dispatch until a person re-pins them, or you cancel "
        "them and plan them again."
    ),
}

READING_TOOLS: dict[str, tuple[str, dict[str, Any]]] = {
    "list_tasks": (
        "The store's tasks, those needing attention first.",
        {"type": "object", "properties": {}, "additionalProperties": False},
    ),
    "task_state": (
        "A task's whole current state: objective, criteria with evidence, artifacts, effects "
        "with attempts and observations, approvals, budgets, checkpoints, problems.",
        {
            "type": "object",
            "properties": {"task_id": {"type": "string"}},
            "required": ["task_id"],
            "additionalProperties": False,
        },
    ),
    "list_waits": (
        "A task's scheduled waits as of the database's clock now: what each waits for, "
        "not_before, due, state (open, settled, cancelled, retired), reservation, condition.",
        {
            "type": "object",
            "properties": {"task_id": {"type": "string"}},
            "required": ["task_id"],
            "additionalProperties": False,
        },
    ),
    "list_manifests": (
        "A task's context manifests (what the model saw per request), all or only those "
        "that led to one effect (effect_id) or checkpoint (checkpoint_id).",
        {
            "type": "object",
            "properties": {
                "task_id": {"type": "string"},
                "effect_id": {"type": "string"},
                "checkpoint_id": {"type": "string"},
            },
            "required": ["task_id"],
            "additionalProperties": False,
        },
    ),
    "resume_brief": (
        "The resume brief: next authorized actions with their evidence, blockers and "
        "forbidden repetitions, from the record and fresh observations (never a narrative).",
        {
            "type": "object",
            "properties": {"task_id": {"type": "string"}},
            "required": ["task_id"],
            "additionalProperties": False,
        },
    ),
}

WAIT_TOOL = "wait_for_approval"
#: Commands `boris mcp` runs itself, never tools: the record of its MCP tasks (store.mcp.board).
SERVER_COMMANDS = frozenset({"start_mcp_task", "end_mcp_task"})


@dataclass(frozen=True)
class ToolSpec:
    name: str
    description: str
    input_schema: dict[str, Any]
    command: type[c.Command] | None  # None: a reading tool
    read_only: bool


def _command_type(cls: type[c.Command]) -> str:
    return str(cls.model_fields["type"].default)


def agent_may_run(command_type: str) -> bool:
    """Whether the authority table lets an agent run this command at all."""
    return rules.ActorKind.AGENT in rules.authority_of(command_type).kinds


def input_schema(cls: type[c.Command]) -> dict[str, Any]:
    """The command model's JSON Schema, without its `type` discriminator (the tool's name)."""
    schema = copy.deepcopy(cls.model_json_schema())
    schema.get("properties", {}).pop("type", None)
    if "required" in schema:
        schema["required"] = [r for r in schema["required"] if r != "type"]
    schema["type"] = "object"
    return schema


def tool_specs(max_wait_seconds: float) -> list[ToolSpec]:
    specs = []
    for cls in c.command_classes():
        name = _command_type(cls)
        if not agent_may_run(name) or name in SERVER_COMMANDS:
            continue
        person_only = rules.authority_of(name).person_when
        description = DESCRIPTIONS.get(name) or (cls.__doc__ or name).strip().splitlines()[0]
        if person_only:
            description += " A person's only when: " + "; ".join(person_only) + "."
        specs.append(ToolSpec(name, description, input_schema(cls), cls, False))
    for name, (description, schema) in READING_TOOLS.items():
        specs.append(ToolSpec(name, description, schema, None, True))
    specs.append(
        ToolSpec(
            WAIT_TOOL,
            "Wait until a person decides an approval (approved, rejected, or sent_back: changes "
            "requested, the note says which; revise and request_approval again; or answered: a "
            "person gave the tool's result themselves, in `answered.result`: use it as the "
            "tool's result and do not run the call), or it expires, "
            f"is revoked or goes stale; at most timeout_seconds (up to {max_wait_seconds:g}). "
            "Returns its state and payload_digest (an approval of a person's edit binds their "
            "version: dispatch exactly it); timed_out is true when nobody decided in time. "
            "With lease_token, a takeover ends the wait as a lease_lost error: stop working. "
            "Cancellable.",
            {
                "type": "object",
                "properties": {
                    "task_id": {"type": "string"},
                    "approval_id": {"type": "string"},
                    "lease_token": {
                        "type": "integer",
                        "minimum": 1,
                        "description": "your lease's token: the wait ends with lease_lost as "
                        "soon as a person takes the task over",
                    },
                    "timeout_seconds": {
                        "type": "number",
                        "minimum": 0,
                        "maximum": max_wait_seconds,
                        "default": min(300.0, max_wait_seconds),
                    },
                },
                "required": ["task_id", "approval_id"],
                "additionalProperties": False,
            },
            None,
            True,
        )
    )
    return specs


def _task_id(arguments: dict[str, Any]) -> str:
    task_id = arguments.get("task_id")
    if not isinstance(task_id, str) or not task_id:
        raise answers.UsageError("task_id is required")
    return task_id


def run_command(
    store: Store, actor: Actor, spec: ToolSpec, arguments: dict[str, Any]
) -> dict[str, Any]:
    """Validate the arguments by the command model and run it through the command layer.
    Raises the typed refusal (or a pydantic ValidationError) when it is refused."""
    assert spec.command is not None
    command = spec.command.model_validate({**arguments, "type": spec.name})
    value = store.execute(command, actor)
    return answers.ok(value, **answers.facts_after(store, command, value))


def read(store: Store, spec: ToolSpec, arguments: dict[str, Any]) -> dict[str, Any]:
    """A reading tool's answer."""
    if spec.name == "list_tasks":
        return answers.ok(store.tasks())
    if spec.name == "task_state":
        return answers.ok(store.task(_task_id(arguments)))
    if spec.name == "list_waits":
        from ..reads.waits import waits

        return answers.ok(waits(store, _task_id(arguments)))
    if spec.name == "list_manifests":
        from ..reads.manifests import read_manifests

        return answers.ok(
            read_manifests(
                store,
                _task_id(arguments),
                effect=arguments.get("effect_id"),
                checkpoint=arguments.get("checkpoint_id"),
            )
        )
    if spec.name == "resume_brief":
        from ..services.resume import resume_brief

        return answers.ok(resume_brief(store, _task_id(arguments)))
    raise CommandRejected(f"no reading tool {spec.name!r}")  # pragma: no cover


def approval_now(
    store: Store,
    task_id: str,
    approval_id: str,
    lease_token: Any = None,
    actor: Actor | None = None,
) -> dict[str, Any]:
    """One approval as it stands now (`expired` judged by the database's clock). With
    `lease_token` and the waiting `actor`, the lease's fence first (commands.core.judge_fence):
    a waiter whose task was taken over hears it as LeaseLost, not as a silent wait."""
    if lease_token is not None and (
        isinstance(lease_token, bool) or not isinstance(lease_token, int)
    ):
        raise answers.UsageError("lease_token must be the lease's token, an integer")
    with store.read() as conn:
        now = db.database_now(conn)
        if lease_token is not None and actor is not None:
            c.judge_fence(conn, now, task_id, lease_token, actor)
        row = conn.execute(
            sa.select(t.approvals).where(
                t.approvals.c.task_id == task_id, t.approvals.c.approval_id == approval_id
            )
        ).first()
        if row is None:
            exists = conn.execute(
                sa.select(t.tasks.c.task_id).where(t.tasks.c.task_id == task_id)
            ).first()
            if exists is None:
                from ..reads.deleted import absent  # deleted by a person: when and by whom

                raise absent(conn, task_id)
            raise CommandRejected(f"task {task_id} has no approval {approval_id!r}")
    state = str(rules.approval_state(str(row.state), row.expires_at, now))
    answered = None
    if state == rules.ApprovalState.ANSWERED:
        answered = _answered(store, task_id, approval_id)
    return {
        "approval_id": approval_id,
        "task_id": task_id,
        "effect_id": row.effect_id,
        "state": state,
        "decided": state != rules.ApprovalState.PENDING,
        "decided_by": row.decided_by,
        "decided_at": row.decided_at,
        "note": row.note,
        "changes_requested": state == rules.ApprovalState.SENT_BACK,
        # Approved: the exact object to hand the executor (a person's edit, if they made one).
        "payload": row.payload if state == rules.ApprovalState.APPROVED else None,
        "payload_digest": row.payload_digest,
        "expires_at": row.expires_at,
        # Several people: pending until `approvers` distinct people approved (who so far).
        "approvers": row.approvers,
        "approved_by": [str(x.get("id")) for x in (row.approved_by or [])],
        # Answered in the tool's place (`boris respond`): the person's result is the tool's,
        # to hand the model as the call's result; the call is never run.
        "answered": answered,
    }


def _answered(store: Store, task_id: str, approval_id: str) -> dict[str, Any] | None:
    """A person's answer in the tool's place, as `wait_for_approval` hands it back."""
    found = answered_result(store, task_id, approval_id)
    if found is None:  # pragma: no cover - an answered approval has its event
        return None
    return {
        "result": found.result,
        "result_digest": found.result_digest,
        "answered_by": found.answered_by.model_dump(mode="json"),
        "answered_at": found.answered_at,
        "note": found.note,
        "schema_checked": found.schema_checked,
    }
