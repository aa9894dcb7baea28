"""LangGraph's human-in-the-loop interrupt answered from Boris.

Contract followed (README "LangGraph" says which versions it was checked against): LangChain's
`HumanInTheLoopMiddleware` (langchain >= 1.0, `langchain.agents.middleware`) on a LangGraph
agent with a checkpointer. A gated tool call stops the run with an `Interrupt` (in the run's
result, `result.interrupts` / `result["__interrupt__"]`, and in
`graph.get_state(config).interrupts`); the run goes on with `Command(resume=...)`. Both of
its modes are read:

- `interrupt_mode="batched"` (its default): one interrupt per model turn whose value is a
  `HITLRequest` `{"action_requests": [{"name", "args", "description"}], "review_configs":
  [{"action_name", "allowed_decisions"}]}`, answered with `{"decisions": [...]}`, one per
  action, in order;
- `interrupt_mode="per_call"`: one interrupt per gated call whose value is a
  `ToolApprovalRequest` `{"type": "tool_approval", "tool_call_id", "name", "args",
  "description"}`, answered with one decision.

A decision is `{"type": "approve"}`, `{"type": "edit", "edited_action": {"name", "args"}}`,
`{"type": "reject", "message": ...}` or `{"type": "respond", "message": ...}`; the resume
value is keyed by interrupt id, so one `Command` answers every pending interrupt.

Every gated call is one effect of kind `other` whose target is the destination
`langgraph://tools/<tool name>` (the task's scope says which tools may be asked about:
`--destination langgraph://tools/` admits every tool) and whose prepared object is the call's
`args`, exactly. It is keyed by `langgraph:<thread_id>:<tool_call_id>`, so any process that
opens the same thread (the graph's checkpointer) meets the same effect. The person's decision
becomes the resume value: approved → `approve`, approved with their edit → `edit` with exactly
the edited args (what the approval binds), rejected → `reject` with their note, sent back →
`reject` whose message is their note (what the model reads), expired or revoked → `reject`,
answered in the tool's place (`boris respond`, where the graph allows `respond`: the effect
declares `RESPOND_SCHEMA`, a string) → `respond` with their result as the message, which the
model reads as the tool's successful result; the tool never runs. LangGraph has no "always"
answer of its own: a person's "always" is a Boris standing rule (`boris rules`), which decides
the next call like it as it is asked, so the next resume answers it at once.
The attempt is recorded (consuming the approval) when the resume value hands the approved
args over, before the tool runs; the graph's `ToolMessage` becomes its response after (the
tool's word: the outcome stays unknown for reconciliation, also for `status="error"`; the
middleware's own message for a rejected call is no tool's and is not recorded). A resume
that never reports back leaves the outcome unknown, and it is not resumed blindly.

Nothing is recorded as an attempt that will not run. A person's edit is checked first against
what the graph checks it against (`edit_problem`: the tool's `tool_call_schema`, or a
per-call interrupt's `response_schema`); one that does not fit is not handed over: the
person's approval is retired (stale) with the reason, they are asked again about the call as
the model made it, and the graph stays paused (`resume_command` is None). (At decision time
it cannot be refused: `boris approve --edited-json` knows nothing of the graph's tools.) A
"no" goes only as `reject`, never as `respond`, which the model reads as the tool's
successful result: where a tool's `allowed_decisions` leave `reject` out, the resume is
refused (`ResumeRefused`) and the run waits.

On a signed store (what `boris init` makes) every write is signed with the agent's key by the
one rule (`signing.keys.signer_for`): the store's `signer` if given, else BORIS_KEY's; without
one the store refuses with a `SignatureRefused` whose one line names the `boris keys new` /
`boris keys add` commands that give the agent a trusted key.

A graph on an async checkpointer (`AsyncSqliteSaver`, `AsyncPostgresSaver`), run with
`ainvoke` / `astream`, is answered by the same functions' async namesakes (`aask`,
`aresume_command`, `arecord_results`, `akeep_checkpoint`, `apending_actions`): they read the
thread's state with `aget_state` and do the same work on the store.

LangGraph is imported only where its types are made (`resume_command`): the core imports
without the `langgraph` extra.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import pydantic
import sqlalchemy as sa

from .. import db, rules
from .. import schema as t
from ..canonical import canonical_json, digest_of
from ..commands import approvals as ap
from ..commands import checkpoints as ck
from ..commands import effects as lg
from ..commands.core import new_id
from ..events import FileState
from ..model import Actor
from ..services.answers import UsageError
from ..services.respond import answered_result
from ..store import Store

#: Where a gated call points: the task's scope admits it (`--destination langgraph://tools/`).
TARGET_PREFIX = "langgraph://tools/"
#: The policy every approval of a LangGraph tool call names.
POLICY = "LangGraph asks before this tool runs"
#: A graph paused on an interrupt waits as long as its checkpoint is kept: a week by default.
EXPIRES_IN_SECONDS = 7 * 86400.0
#: The longest tool result kept whole in the record; a longer one is kept as digest and size.
MAX_KEPT_RESPONSE_BYTES = 64 * 1024
#: Every decision the middleware knows, for an interrupt that does not say which it allows.
ALL_DECISIONS = ("approve", "edit", "reject", "respond")
#: What a person answers in the tool's place where the graph allows `respond`: the
#: middleware's `RespondDecision` carries a `message` string, the tool's result the model reads.
RESPOND_SCHEMA: dict[str, Any] = {
    "type": "string",
    "description": "the tool's result as the model reads it (LangGraph's respond message)",
}

_TOOL_NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$")


class ResumeRefused(UsageError):
    """Boris will not hand this interrupt an answer (the call was dispatched already and its
    outcome is unknown, or the graph accepts no answer that says what the person decided)."""

    code = "langgraph_resume"


class _Graph(Protocol):
    """What the adapter uses of a compiled graph (`CompiledStateGraph`, `create_agent`)."""

    def get_state(self, config: Any) -> Any: ...


# --- what the graph is waiting for ----------------------------------------------------------


@dataclass(frozen=True)
class Action:
    """One gated tool call in a pending interrupt: the args it would run with, and where its
    answer goes (`index` is its place in a batched interrupt's decisions; None per call).

    What an edit of its args must fit, where the graph says (`edit_problem` reads them):
    `tool`, the graph's own tool (its `tool_call_schema`), and `args_schema`, the JSON
    schema of the args a per-call interrupt's `response_schema` shows for an edit."""

    interrupt_id: str
    index: int | None
    tool_name: str
    args: dict[str, Any]
    tool_call_id: str | None
    allowed: tuple[str, ...] = ALL_DECISIONS
    tool: Any = field(default=None, compare=False, repr=False)
    args_schema: Mapping[str, Any] | None = field(default=None, compare=False, repr=False)


def _allowed_in_schema(schema: Any) -> tuple[str, ...]:
    """The decisions a per-call interrupt's `response_schema` (JSON Schema) allows."""
    if not isinstance(schema, Mapping):
        return ALL_DECISIONS
    mapping = schema.get("discriminator", {}).get("mapping")
    if isinstance(mapping, Mapping) and mapping:
        return tuple(str(k) for k in mapping)
    const = schema.get("properties", {}).get("type", {}).get("const")
    return (str(const),) if isinstance(const, str) else ALL_DECISIONS


def _resolve(root: Mapping[str, Any], node: Any) -> Any:
    """`node` with its local `$ref` followed (a few hops at most), or None."""
    for _ in range(8):
        ref = node.get("$ref") if isinstance(node, Mapping) else None
        if not isinstance(ref, str):
            return node
        if not ref.startswith("#/"):
            return None
        at: Any = root
        for part in ref[2:].split("/"):
            at = at.get(part) if isinstance(at, Mapping) else None
        node = at
    return None


def _edit_args_schema(schema: Any) -> dict[str, Any] | None:
    """The JSON schema an edit's `args` must match in a per-call interrupt's
    `response_schema`: the middleware builds its edit branch from the tool's argument schema
    (`_decision_schema` / `_edit_args` in langchain/agents/middleware/human_in_the_loop.py),
    and LangGraph publishes it as JSON Schema (`Interrupt.response_schema`). None where it
    shows none (a batched interrupt, an edit not allowed)."""
    if not isinstance(schema, Mapping):
        return None
    mapping = schema.get("discriminator", {}).get("mapping")
    if isinstance(mapping, Mapping) and "edit" in mapping:
        branch = _resolve(schema, {"$ref": mapping["edit"]})
    elif schema.get("properties", {}).get("type", {}).get("const") == "edit":
        branch = schema  # an edit is the only decision allowed: its plain object schema
    else:
        return None
    edited = _resolve(schema, (branch or {}).get("properties", {}).get("edited_action"))
    args = _resolve(schema, (edited or {}).get("properties", {}).get("args"))
    if not isinstance(args, Mapping):
        return None
    # Its own `$ref`s point into the interrupt's `$defs`: they go along.
    return {**args, "$defs": dict(schema.get("$defs") or {})}


def _value_and_id(interrupt: Any) -> tuple[Any, str, Any]:
    if isinstance(interrupt, Mapping):  # an interrupt as JSON (the SDK's, a stream's)
        return (
            interrupt.get("value"),
            str(interrupt.get("id") or ""),
            interrupt.get("response_schema"),
        )
    return interrupt.value, str(interrupt.id), getattr(interrupt, "response_schema", None)


def _last_tool_calls(messages: Sequence[Any]) -> list[dict[str, Any]]:
    for message in reversed(messages):
        if getattr(message, "type", None) == "ai":
            return [dict(c) for c in getattr(message, "tool_calls", None) or []]
    return []


def _tool_call_ids(requests: Sequence[Mapping[str, Any]], messages: Sequence[Any]) -> list[Any]:
    """A batched request names no tool_call_id: its actions are the last model message's
    gated calls, in order; each is matched to the next call with its name and args."""
    calls = _last_tool_calls(messages)
    found: list[Any] = []
    at = 0
    for request in requests:
        match = None
        for i in range(at, len(calls)):
            if calls[i].get("name") == request.get("name") and calls[i].get("args") == request.get(
                "args"
            ):
                match, at = calls[i].get("id"), i + 1
                break
        found.append(match or None)
    return found


def actions_of(
    interrupts: Iterable[Any],
    messages: Sequence[Any] = (),
    tools: Mapping[str, Any] | None = None,
) -> list[Action]:
    """The tool calls the middleware's pending interrupts ask about. An interrupt of another
    shape (a node's own `interrupt(...)`) is not Boris's to answer and is left out. `tools`
    are the graph's tools by name, where it holds them (`tools_of`)."""
    tools = tools or {}
    actions: list[Action] = []
    for interrupt in interrupts:
        value, interrupt_id, schema = _value_and_id(interrupt)
        if not isinstance(value, Mapping) or not interrupt_id:
            continue
        if value.get("type") == "tool_approval":
            actions.append(
                Action(
                    interrupt_id=interrupt_id,
                    index=None,
                    tool_name=str(value["name"]),
                    args=dict(value["args"]),
                    tool_call_id=str(value["tool_call_id"]),
                    allowed=_allowed_in_schema(schema),
                    tool=tools.get(str(value["name"])),
                    args_schema=_edit_args_schema(schema),
                )
            )
        elif isinstance(value.get("action_requests"), list):
            requests = value["action_requests"]
            configs = value.get("review_configs") or []
            ids = _tool_call_ids(requests, messages)
            for index, request in enumerate(requests):
                config = configs[index] if index < len(configs) else {}
                allowed = tuple(config.get("allowed_decisions") or ALL_DECISIONS)
                actions.append(
                    Action(
                        interrupt_id=interrupt_id,
                        index=index,
                        tool_name=str(request["name"]),
                        args=dict(request["args"]),
                        tool_call_id=ids[index],
                        allowed=allowed,
                        tool=tools.get(str(request["name"])),
                    )
                )
    return actions


def thread_of(config: Mapping[str, Any]) -> str:
    thread_id = (config.get("configurable") or {}).get("thread_id")
    if not thread_id:
        raise UsageError("the graph's config names no thread_id: a checkpointed run needs one")
    return str(thread_id)


def tools_of(graph: Any) -> dict[str, Any]:
    """The graph's tools by name, where it holds them: a `ToolNode`'s `tools_by_name` (the
    node `create_agent` makes). Empty for a graph read only through its state (a remote one):
    then a per-call interrupt's `response_schema` is all there is to check an edit against."""
    found: dict[str, Any] = {}
    nodes = getattr(graph, "nodes", None)
    for node in nodes.values() if isinstance(nodes, Mapping) else ():
        by_name = getattr(getattr(node, "bound", None), "tools_by_name", None)
        if isinstance(by_name, Mapping):
            found.update({str(k): v for k, v in by_name.items()})
    return found


def pending_actions(graph: _Graph, config: Mapping[str, Any]) -> list[Action]:
    """What the paused run on this thread waits for, read from its checkpoint (any process)."""
    snapshot = graph.get_state(config)
    messages = (snapshot.values or {}).get("messages") or ()
    return actions_of(snapshot.interrupts, messages, tools_of(graph))


# --- what an edit must fit ------------------------------------------------------------------


def _pydantic_problem(model: type[pydantic.BaseModel], args: Mapping[str, Any]) -> str | None:
    try:
        model.model_validate(dict(args))
    except pydantic.ValidationError as exc:
        return "; ".join(
            f"{'.'.join(str(p) for p in e['loc']) or 'args'}: {e['msg']}" for e in exc.errors()
        )
    return None


def _json_schema_problem(schema: Mapping[str, Any], args: Mapping[str, Any]) -> str | None:
    # jsonschema comes with the `mcp` SDK Boris depends on (`boris mcp`); imported here only.
    from jsonschema import validators  # type: ignore[import-untyped]

    cls = validators.validator_for(schema, default=validators.Draft202012Validator)
    errors = sorted(cls(dict(schema)).iter_errors(dict(args)), key=lambda e: list(e.path))
    if not errors:
        return None
    return "; ".join(
        f"{'.'.join(str(p) for p in e.path) or 'args'}: {e.message}" for e in errors[:5]
    )


def edit_problem(action: Action, args: Mapping[str, Any]) -> str | None:
    """Why the graph would not run this call with `args` (a person's edit), or None: read
    before anything is recorded, so no attempt is recorded for a call that will not run.

    The check is the one the graph makes. The middleware checks a per-call edit against the
    tool's `tool_call_schema` when that is a Pydantic model (`_edit_args` in
    langchain/agents/middleware/human_in_the_loop.py: required args and their types; args
    it does not declare pass), and the tool checks its args the same way when it runs (a
    batched edit, which the middleware passes on unchecked). A tool whose schema is JSON
    Schema is checked against it here (the middleware only shows it). Without the graph's
    tool (a graph read only through its state) a per-call interrupt's `response_schema` is
    read; a batched interrupt shows none, and the edit is not checked."""
    schema = getattr(action.tool, "tool_call_schema", None)
    if isinstance(schema, type) and issubclass(schema, pydantic.BaseModel):
        return _pydantic_problem(schema, args)
    if isinstance(schema, Mapping):
        return _json_schema_problem(schema, args)
    if action.args_schema is not None:
        return _json_schema_problem(action.args_schema, args)
    return None


# --- one gated call as an effect -----------------------------------------------------------


def target_of(tool_name: str) -> str:
    if not _TOOL_NAME.match(tool_name):
        raise UsageError(f"tool name {tool_name[:80]!r} is not a plain tool name")
    return TARGET_PREFIX + tool_name


def key_of(thread_id: str, action: Action) -> str:
    """The effect's idempotency key: the thread's tool call (or the interrupt's place)."""
    return _key(thread_id, action.tool_call_id or f"{action.interrupt_id}:{action.index}")


def _key(thread_id: str, which: str) -> str:
    key = f"langgraph:{thread_id}:{which}"
    return key if len(key) <= 128 else "langgraph:" + digest_of([thread_id, which])


def executor_of(tool_name: str) -> str:
    return f"langgraph:{tool_name}"[:128]


def consequence_of(action: Action) -> str:
    """One line a reviewer agrees to: the tool and its args."""
    what = " ".join(canonical_json(action.args).split())
    if len(what) > 200:
        what = what[:199] + "…"
    return f"LangGraph runs {action.tool_name}: {what}"


def _effect(store: Store, task_id: str, key: str) -> Any:
    with store.read() as conn:
        return conn.execute(
            sa.select(t.effects).where(
                t.effects.c.task_id == task_id, t.effects.c.idempotency_key == key
            )
        ).first()


def _latest_approval(store: Store, task_id: str, effect_id: str) -> str | None:
    with store.read() as conn:
        row = conn.execute(
            sa.select(t.approvals.c.approval_id)
            .where(t.approvals.c.task_id == task_id, t.approvals.c.effect_id == effect_id)
            .order_by(t.approvals.c.requested_at.desc())
            .limit(1)
        ).first()
    return None if row is None else str(row.approval_id)


def _open_attempt(store: Store, task_id: str, effect_id: str) -> Any:
    with store.read() as conn:
        return conn.execute(
            sa.select(t.attempts)
            .where(
                t.attempts.c.task_id == task_id,
                t.attempts.c.effect_id == effect_id,
                t.attempts.c.ended_at.is_(None),
            )
            .order_by(t.attempts.c.attempt_no.desc())
            .limit(1)
        ).first()


def _approval_now(store: Store, task_id: str, approval_id: str) -> dict[str, Any]:
    """The approval as it stands (`expired` judged by the database's clock)."""
    with store.read() as conn:
        now = db.database_now(conn)
        row = conn.execute(
            sa.select(t.approvals).where(
                t.approvals.c.task_id == task_id, t.approvals.c.approval_id == approval_id
            )
        ).one()
    return {
        "state": str(rules.approval_state(str(row.state), row.expires_at, now)),
        "payload": row.payload,
        "decided_by": row.decided_by,
        "note": row.note,
    }


@dataclass(frozen=True)
class Asked:
    """A gated call waiting for a person: its effect and the approval bound to its digest."""

    action: Action
    key: str
    effect_id: str
    approval_id: str
    digest: str


def ask(
    store: Store,
    actor: Actor,
    task_id: str,
    graph: _Graph,
    config: Mapping[str, Any],
    *,
    expires_in_seconds: float = EXPIRES_IN_SECONDS,
) -> list[Asked]:
    """Record each gated call's intent and ask a person to approve exactly its args; then
    return (the graph stays paused on its checkpoint). Asking again about the same calls (a
    restarted agent) finds the effects and approvals already recorded."""
    store.sign_as(actor)  # the agent's key by the one rule (signing.keys.signer_for)
    thread_id = thread_of(config)
    asked: list[Asked] = []
    for action in pending_actions(graph, config):
        key = key_of(thread_id, action)
        digest = digest_of(action.args)
        existing = _effect(store, task_id, key)
        if existing is not None:
            approval_id = _latest_approval(store, task_id, str(existing.effect_id))
            if approval_id is not None:
                asked.append(Asked(action, key, str(existing.effect_id), approval_id, digest))
            continue
        effect_id, approval_id = new_id("eff"), new_id("apr")
        store.execute_all(
            [
                lg.PlanEffect(
                    task_id=task_id,
                    effect_id=effect_id,
                    kind="other",
                    target=target_of(action.tool_name),
                    consequence=consequence_of(action),
                    intended=FileState(exists=True, digest=digest),
                    prepared=action.args,
                    requires_approval=True,
                    policy=POLICY,
                    idempotency_key=key,
                    # A person may answer in the tool's place where the graph takes it.
                    result_schema=RESPOND_SCHEMA if "respond" in action.allowed else None,
                ),
                ap.RequestApproval(
                    task_id=task_id,
                    approval_id=approval_id,
                    effect_id=effect_id,
                    policy=POLICY,
                    expires_in_seconds=expires_in_seconds,
                ),
            ],
            actor,
        )
        asked.append(Asked(action, key, effect_id, approval_id, digest))
    return asked


# --- the person's decision as the middleware's ---------------------------------------------


def _who(decided_by: Any) -> str:
    if isinstance(decided_by, dict):
        return str(decided_by.get("name") or decided_by.get("id") or "a person")
    return "a person"


def _refusal(action: Action, message: str) -> dict[str, Any]:
    """A "no" the model reads: `reject`, whose message the middleware sends as a
    `ToolMessage` with `status="error"` (`_answer_message` in
    langchain/agents/middleware/human_in_the_loop.py). Never `respond`: that one goes to the
    model with `status="success"` and the message as the tool's own result (it is for a
    person answering in the tool's place), so a refusal sent as `respond` would read as a
    call that ran. Where the graph allows no `reject`, nothing is answered: the run stays
    paused, and the refusal says why."""
    if "reject" in action.allowed:
        return {"type": "reject", "message": message}
    raise ResumeRefused(
        f"the graph allows only {', '.join(action.allowed)} for {action.tool_name} (no "
        f"reject): it cannot be told that the call was refused ({message}). Boris does not "
        "send a refusal as respond, which the model reads as the tool's successful result "
        '(status="success"); nothing was answered and the run stays paused. Allow "reject" '
        f"for {action.tool_name} in HumanInTheLoopMiddleware's interrupt_on to let a "
        "person's no through"
    )


def _responded(store: Store, task_id: str, approval_id: str, action: Action) -> dict[str, Any]:
    """A person answered in the tool's place (`boris respond`): the middleware's `respond`,
    whose message the model reads as the tool's result (`status="success"`); the tool never
    runs, and the store cancelled its effect with the answer. A string is the message as it
    is; another JSON value its JSON text."""
    if "respond" not in action.allowed:
        raise ResumeRefused(
            f"a person answered this {action.tool_name} call in the tool's place, and the graph "
            f"allows only {', '.join(action.allowed)} for it: nothing was answered. Allow "
            f'"respond" for {action.tool_name} in HumanInTheLoopMiddleware\'s interrupt_on'
        )
    found = answered_result(store, task_id, approval_id)
    assert found is not None  # the approval is answered
    result = found.result
    return {
        "type": "respond",
        "message": result if isinstance(result, str) else canonical_json(result),
    }


def _cancel_quietly(store: Store, actor: Actor, task_id: str, effect_id: str, why: str) -> None:
    try:
        store.execute(lg.CancelEffect(task_id=task_id, effect_id=effect_id, reason=why), actor)
    except Exception:  # settled otherwise meanwhile (a stop cancelled it): the record says so
        return


def _standing(store: Store, task_id: str, thread_id: str, action: Action) -> tuple[str, str, bool]:
    """One gated call's effect, its approval, and whether the effect was cancelled (its "no"
    may be said again: nothing can run); refused when the call was handed over already."""
    key = key_of(thread_id, action)
    effect = _effect(store, task_id, key)
    if effect is None:
        raise ResumeRefused(
            f"Boris has no record of {action.tool_name} call {action.tool_call_id or key}: "
            "ask first (store.adapters.langgraph.ask); nothing was answered"
        )
    effect_id = str(effect.effect_id)
    cancelled = effect.stage == rules.EffectStage.CANCELLED
    if not cancelled and not lg.intent_open(effect):
        raise ResumeRefused(
            f"effect {effect_id} ({action.tool_name}) is {effect.stage}"
            + (f", outcome {effect.outcome}" if effect.outcome else "")
            + ": it was answered before, and whether it ran is for a person to reconcile in "
            "Boris, not for a blind resume"
        )
    approval_id = _latest_approval(store, task_id, effect_id)
    if approval_id is None:
        raise ResumeRefused(f"effect {effect_id} has no approval to answer from")
    return effect_id, approval_id, cancelled


@dataclass(frozen=True)
class _Answer:
    """What one gated call gets, read before anything is written: `decision` for the graph
    (None while nobody has decided, or when the person is asked again), and what is
    recorded with it: `dispatch` (the args handed over: the attempt), `cancel` (why nothing
    will run), or `unfit` (why the person's edit would not run: they are asked again)."""

    effect_id: str
    approval_id: str
    decision: dict[str, Any] | None = None
    dispatch: dict[str, Any] | None = None
    cancel: str | None = None
    unfit: str | None = None


def _answer(store: Store, task_id: str, thread_id: str, action: Action) -> _Answer:
    """The answer the person's Boris decision gives one gated call. Reads only: a call that
    cannot be answered (`ResumeRefused`) is found before any call of the run is answered."""
    effect_id, approval_id, cancelled = _standing(store, task_id, thread_id, action)
    now = _approval_now(store, task_id, approval_id)
    state = str(now["state"])
    who = _who(now.get("decided_by"))
    if state == rules.ApprovalState.ANSWERED:
        return _Answer(effect_id, approval_id, _responded(store, task_id, approval_id, action))
    if state == rules.ApprovalState.PENDING and not cancelled:
        return _Answer(effect_id, approval_id)
    if state == rules.ApprovalState.APPROVED and not cancelled:
        payload = dict(now["payload"])
        if digest_of(payload) == digest_of(action.args):
            return _Answer(effect_id, approval_id, {"type": "approve"}, dispatch=payload)
        if "edit" not in action.allowed:
            message = (
                f"{who} approved an edited {action.tool_name} call in Boris, and this graph "
                "accepts no edit of it: it was not run"
            )
            return _Answer(effect_id, approval_id, _refusal(action, message), cancel=message)
        problem = edit_problem(action, payload)
        if problem is not None:
            return _Answer(
                effect_id,
                approval_id,
                unfit=f"{who}'s edit of this {action.tool_name} call does not fit its "
                f"arguments ({problem})",
            )
        edit = {"type": "edit", "edited_action": {"name": action.tool_name, "args": payload}}
        return _Answer(effect_id, approval_id, edit, dispatch=payload)
    note = str(now.get("note") or "").strip()
    if state == rules.ApprovalState.REJECTED:
        message = note or f"{who} rejected this {action.tool_name} call in Boris"
    elif state == rules.ApprovalState.SENT_BACK:
        # The note is what should change: the model reads it and may ask again, revised.
        message = f"{who} sent this call back in Boris (changes requested): {note}"
    elif state == rules.ApprovalState.EXPIRED:
        message = f"nobody decided this {action.tool_name} call in Boris before it expired"
    elif cancelled:
        message = f"this {action.tool_name} call was cancelled in Boris"
    elif state == rules.ApprovalState.CONSUMED:
        # Its attempt was recorded and found not to have run (`_standing` lets through only
        # an effect whose every attempt failed or was reconciled absent).
        message = (
            f"this {action.tool_name} call's approval in Boris was used by an earlier attempt, "
            "which did not run it: it is not run again without a new approval"
        )
    else:
        message = f"the approval of this {action.tool_name} call is {state} in Boris"
    return _Answer(
        effect_id, approval_id, _refusal(action, message), cancel=None if cancelled else message
    )


def _ask_again(
    store: Store,
    actor: Actor,
    task_id: str,
    action: Action,
    answer: _Answer,
    expires_in_seconds: float = EXPIRES_IN_SECONDS,
) -> None:
    """The person's edit would not run: nothing is handed over and nothing is attempted. The
    effect goes back to the call the graph waits on (the model's args; the edit stays in the
    log as the person's revision), which retires their approval as stale with the reason,
    and a new approval asks them again, its line saying why (what the decision views show).
    The graph stays paused on the same interrupt."""
    if _approval_now(store, task_id, answer.approval_id)["state"] != rules.ApprovalState.APPROVED:
        return  # another resumer asked again already (or a person acted meanwhile)
    unfit = str(answer.unfit)
    if len(unfit) > 300:
        unfit = unfit[:299] + "…"
    reason = f"{unfit}: it was not run, and the call is asked about again as the model made it"
    store.execute_all(
        [
            lg.ReviseEffect(
                task_id=task_id,
                effect_id=answer.effect_id,
                reason=reason,
                consequence=consequence_of(action),
                intended=FileState(exists=True, digest=digest_of(action.args)),
                prepared=action.args,
            ),
            ap.RequestApproval(
                task_id=task_id,
                effect_id=answer.effect_id,
                policy=POLICY,
                consequence=f"{consequence_of(action)} (asked again: {unfit}; it was not run)",
                expires_in_seconds=expires_in_seconds,
            ),
        ],
        actor,
    )


def _carry_out(
    store: Store, actor: Actor, task_id: str, action: Action, answer: _Answer
) -> dict[str, Any] | None:
    """Record what the answer says, then give it: the attempt (consuming the approval)
    before the args are handed over; the cancel before a "no", so a late decision cannot
    approve a call nobody will run."""
    if answer.unfit is not None:
        _ask_again(store, actor, task_id, action, answer)
        return None
    if answer.dispatch is not None:
        store.execute(
            lg.DispatchEffect(
                task_id=task_id,
                effect_id=answer.effect_id,
                executor=executor_of(action.tool_name),
                inputs=answer.dispatch,
                approval_id=answer.approval_id,
            ),
            actor,
        )
    elif answer.cancel is not None:
        _cancel_quietly(store, actor, task_id, answer.effect_id, answer.cancel)
    return answer.decision


def resume_decision(
    store: Store, actor: Actor, task_id: str, thread_id: str, action: Action
) -> dict[str, Any] | None:
    """The decision the middleware reads for one gated call, from the person's Boris
    decision; None while nobody has decided. Approved: the attempt is recorded (consuming
    the approval) before the args are handed over; an edit that does not fit the tool's
    arguments (`edit_problem`) is not handed over: the person is asked again, and None.
    Anything else: the effect is cancelled, so a late decision cannot approve a call nobody
    will run. A call answered "no" before (a resume that did not get through) gets the same
    "no" again. `ResumeRefused` where the graph allows no `reject` for a "no"."""
    answer = _answer(store, task_id, thread_id, action)
    return _carry_out(store, actor, task_id, action, answer)


def resume_value(
    store: Store, actor: Actor, task_id: str, graph: _Graph, config: Mapping[str, Any]
) -> dict[str, Any] | None:
    """The value for `Command(resume=...)` answering every gated call the thread waits for,
    keyed by interrupt id; None while any of them is undecided, or while a person is asked
    again about an edit that would not run (then nothing is dispatched, so a run resumes
    with all of its answers or none). `ResumeRefused`, with nothing recorded, where one of
    them cannot be answered."""
    store.sign_as(actor)  # the agent's key by the one rule (signing.keys.signer_for)
    thread_id = thread_of(config)
    actions = pending_actions(graph, config)
    if not actions:
        return None
    # First, reading only: can every call be answered now, and with what?
    answers = [(action, _answer(store, task_id, thread_id, action)) for action in actions]
    for action, a in answers:
        if a.unfit is not None:  # the person sees it now, whatever the others wait for
            _ask_again(store, actor, task_id, action, a)
    if any(a.decision is None for _, a in answers):
        return None
    value: dict[str, Any] = {}
    for action, a in answers:
        decision = _carry_out(store, actor, task_id, action, a)
        assert decision is not None  # decided, as read above; a decision is never undone
        if action.index is None:
            value[action.interrupt_id] = decision
        else:
            value.setdefault(action.interrupt_id, {"decisions": []})["decisions"].append(decision)
    return value


def resume_command(
    store: Store, actor: Actor, task_id: str, graph: _Graph, config: Mapping[str, Any]
) -> Any:
    """`langgraph.types.Command(resume=...)` with the person's decisions, or None while
    someone still has to decide."""
    from langgraph.types import Command

    value = resume_value(store, actor, task_id, graph, config)
    return None if value is None else Command(resume=value)


# --- after the run ---------------------------------------------------------------------------


def _kept_response(message: Any) -> dict[str, Any]:
    """The graph's `ToolMessage`: whole when small, else its digest and size."""
    content = message.content
    text = canonical_json(content)
    size = len(text.encode("utf-8"))
    kept: dict[str, Any] = {
        "tool_call_id": message.tool_call_id,
        "status": getattr(message, "status", "success"),
        "content_digest": digest_of(content),
        "content_bytes": size,
    }
    if size <= MAX_KEPT_RESPONSE_BYTES:
        kept["content"] = content
    return kept


#: Where the middleware marks a `ToolMessage` it made itself for a `reject` or `respond`
#: decision (`_answer_message` in langchain/agents/middleware/human_in_the_loop.py, through
#: `add_notification_metadata`): no tool ran, so it is no tool's word.
_MIDDLEWARES_OWN = "hitl_interrupt_decision"


def _middlewares_own(message: Any) -> bool:
    kwargs = getattr(message, "additional_kwargs", None) or {}
    return kwargs.get("lc_source") == _MIDDLEWARES_OWN


def record_results(
    store: Store, actor: Actor, task_id: str, graph: _Graph, config: Mapping[str, Any]
) -> list[str]:
    """Each dispatched call's `ToolMessage` in the thread becomes its attempt's response (the
    tool's word, not evidence: the outcome stays unknown for reconciliation, also when the
    tool says it failed, `status="error"`: a tool that errs may have done part of its work).
    The middleware's own answer to a call it did not run (a rejection) is no tool's response
    and is left out. Returns the effects answered; a call whose message is not there yet
    keeps its attempt open."""
    store.sign_as(actor)  # the agent's key by the one rule (signing.keys.signer_for)
    thread_id = thread_of(config)
    messages = (graph.get_state(config).values or {}).get("messages") or ()
    answered: list[str] = []
    for message in messages:
        if getattr(message, "type", None) != "tool" or not message.tool_call_id:
            continue
        if _middlewares_own(message):
            continue
        effect = _effect(store, task_id, _key(thread_id, str(message.tool_call_id)))
        if effect is None or _open_attempt(store, task_id, str(effect.effect_id)) is None:
            continue
        erred = getattr(message, "status", "success") == "error"
        # The tool's word either way: a reported failure leaves the outcome unknown, as a
        # reported success does (store.commands.effects._REPORTED_OUTCOME), until a
        # reconciliation settles it; the response keeps `reported: failed` and the error.
        store.execute(
            lg.RecordResponse(
                task_id=task_id,
                effect_id=str(effect.effect_id),
                reported="failed" if erred else "reported_success",
                response=_kept_response(message),
                error=str(message.content)[:2000] if erred else None,
            ),
            actor,
        )
        answered.append(str(effect.effect_id))
    return answered


# --- the graph's checkpoints beside Boris's --------------------------------------------------


def external_ids(graph: _Graph, config: Mapping[str, Any]) -> dict[str, str]:
    """The thread's current LangGraph checkpoint, as `WriteCheckpoint.external` keeps it."""
    configurable = dict(graph.get_state(config).config.get("configurable") or {})
    ids = {"framework": "langgraph"}
    for name in ("thread_id", "checkpoint_ns", "checkpoint_id"):
        if configurable.get(name):
            ids[name] = str(configurable[name])
    if "checkpoint_id" not in ids:
        raise UsageError("the graph has no checkpoint on this thread: it needs a checkpointer")
    return ids


def keep_checkpoint(
    store: Store,
    actor: Actor,
    task_id: str,
    graph: _Graph,
    config: Mapping[str, Any],
    *,
    reason: ck.Reason = "milestone",
    note: str = "",
) -> str:
    """A Boris checkpoint that names the graph's current checkpoint beside its own boundary:
    whoever resumes from Boris's finds the LangGraph thread and checkpoint to continue."""
    store.sign_as(actor)  # the agent's key by the one rule (signing.keys.signer_for)
    return str(
        store.execute(
            ck.WriteCheckpoint(
                task_id=task_id, reason=reason, note=note, external=external_ids(graph, config)
            ),
            actor,
        )
    )


def graph_checkpoints(store: Store, task_id: str) -> list[dict[str, Any]]:
    """Boris's checkpoints that name a LangGraph checkpoint, oldest first, each with the
    `config` that opens the graph there (`graph.get_state(config)`, `graph.invoke(..., config)`)."""
    kept = []
    for event in store.events(task_id, types=["checkpoint.written"]):
        external = event.payload.get("external") or {}
        if external.get("framework") != "langgraph":
            continue
        configurable = {
            name: external[name]
            for name in ("thread_id", "checkpoint_ns", "checkpoint_id")
            if name in external
        }
        kept.append(
            {
                "checkpoint_id": event.payload["checkpoint_id"],
                "seq": event.seq,
                "external": external,
                "config": {"configurable": configurable},
            }
        )
    return kept


# --- the same, for a graph run with `ainvoke` on an async checkpointer -----------------------
#
# An async checkpointer (`AsyncSqliteSaver`, `AsyncPostgresSaver`) answers only the graph's
# async reads: `graph.get_state` on it raises from the event loop's thread. Each function below
# reads the thread's state once with `await graph.aget_state(config)` and hands it to its sync
# namesake above, which does the same work on the store (short writes, on the loop's thread):
# the same effects, approvals, attempts and answers whichever way the graph runs.


class _StateRead:
    """A graph as the functions above read it: its tools (`nodes`), and its state on one
    thread as read (awaited) already."""

    def __init__(self, graph: Any, snapshot: Any) -> None:
        self.nodes = getattr(graph, "nodes", None)
        self._snapshot = snapshot

    def get_state(self, config: Any) -> Any:
        return self._snapshot


async def _read(graph: Any, config: Mapping[str, Any]) -> _StateRead:
    return _StateRead(graph, await graph.aget_state(config))


async def apending_actions(graph: Any, config: Mapping[str, Any]) -> list[Action]:
    """`pending_actions` of a graph on an async checkpointer."""
    return pending_actions(await _read(graph, config), config)


async def aask(
    store: Store,
    actor: Actor,
    task_id: str,
    graph: Any,
    config: Mapping[str, Any],
    *,
    expires_in_seconds: float = EXPIRES_IN_SECONDS,
) -> list[Asked]:
    """`ask` for a graph on an async checkpointer (run with `ainvoke` / `astream`)."""
    state = await _read(graph, config)
    return ask(store, actor, task_id, state, config, expires_in_seconds=expires_in_seconds)


async def aresume_value(
    store: Store, actor: Actor, task_id: str, graph: Any, config: Mapping[str, Any]
) -> dict[str, Any] | None:
    """`resume_value` for a graph on an async checkpointer."""
    return resume_value(store, actor, task_id, await _read(graph, config), config)


async def aresume_command(
    store: Store, actor: Actor, task_id: str, graph: Any, config: Mapping[str, Any]
) -> Any:
    """`resume_command` for a graph on an async checkpointer: `await graph.ainvoke(command,
    config)` goes on with the person's decisions; None while someone still has to decide."""
    from langgraph.types import Command

    value = await aresume_value(store, actor, task_id, graph, config)
    return None if value is None else Command(resume=value)


async def arecord_results(
    store: Store, actor: Actor, task_id: str, graph: Any, config: Mapping[str, Any]
) -> list[str]:
    """`record_results` for a graph on an async checkpointer."""
    return record_results(store, actor, task_id, await _read(graph, config), config)


async def akeep_checkpoint(
    store: Store,
    actor: Actor,
    task_id: str,
    graph: Any,
    config: Mapping[str, Any],
    *,
    reason: ck.Reason = "milestone",
    note: str = "",
) -> str:
    """`keep_checkpoint` for a graph on an async checkpointer."""
    state = await _read(graph, config)
    return keep_checkpoint(store, actor, task_id, state, config, reason=reason, note=note)
