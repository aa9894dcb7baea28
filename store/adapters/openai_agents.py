"""The OpenAI Agents SDK's approval moment as Boris's (in the Boris checkout: `pip install '.[openai-agents]'`).

The contract followed, as openai-agents 0.24.0 documents it (docs "Human-in-the-loop", and the
docstrings of `RunState` and `RunHooks` in the installed package):

- A function tool declared with `needs_approval` pauses the run before it runs: the result's
  `interruptions` hold one `ToolApprovalItem` per call, whose `raw_item` is the model's function
  call (`name`, `call_id`, `arguments` as JSON text).
- `result.to_state()` is the paused run; `RunState.to_string()` and
  `await RunState.from_string(agent, text)` carry it across processes. The SDK does not
  authenticate that text: Boris keeps it as an artifact of the task, a blob read back only
  when it matches its digest.
- `state.approve(item)`; `state.reject(item, rejection_message=...)`, whose text "is sent back
  to the model" as the call's output; then `Runner.run(agent, state)` resumes the run.
- An approval cannot change a call's arguments: the SDK binds it to the call as the model
  made it (a state whose call was rewritten is refused: "Model reused a tool call ID for a
  different invocation"). So a person's edit is applied where the tool is invoked: the SDK
  approves the model's call, and on resume the starting agent is cloned (`Agent.clone`) with
  that function tool's `on_invoke_tool` handed exactly the person's arguments for exactly that
  call id; the attempt binds their digest, and the model reads that a person ran the call with
  other arguments, then the tool's output. An edit of another agent's call (after a handoff)
  is not run: the model reads the person's arguments and may call again with them.
- `Runner.run_streamed` returns a `RunResultStreaming` whose `interruptions` and `to_state()`
  are read once its stream has ended (`run_streamed`, `resume_streamed`, `StreamedRun`).
- An application that calls `Runner.run` itself hands Boris the paused result with
  `hand_over` / `BorisApprovals.record_run` (its run given `hooks=run_hooks()`).
- `RunHooks.on_tool_start` / `on_tool_end` run immediately before / after a function tool is
  invoked, with a `ToolContext` naming `tool_call_id`, `tool_name` and `tool_arguments`.
- "You do not need to resolve every pending approval in the same pass": a resume goes on with
  the calls people decided, and the ones still undecided stay in `interruptions` and pause
  the run again (still the same requests in Boris).
- A person's answer in the tool's place (`boris respond`) is handed over as the call's
  `rejection_message`, the exact text the model reads as its output: the tool never runs.
- `state.approve(item, always_approve=True)` / `state.reject(item, always_reject=True)` make
  a sticky decision for the tool for the rest of the run. Boris never answers the SDK with
  one: an application whose own approval UI took such an answer hands it over with
  `record_answers`, and it becomes a person's standing rule in Boris (signed by them,
  revocable, expiring, never covering a policy reserved for a person), which decides each
  next call like it as it is asked.

Every call of a tool declared with `needs_approval` is one effect of kind `other` whose target
is the destination `openai-agents://tools/<tool name>` (the task's scope says which tools may
be asked about: `--destination openai-agents://tools/` admits them all) and whose prepared
object is the call's arguments, exactly; it is keyed `openai-agents:<call_id>`. The attempt is
recorded in `on_tool_start` with the digest of the arguments the SDK hands the tool (the store
refuses it, and so the run, unless an approval of exactly that digest is unused), and the
tool's output in `on_tool_end`: the SDK's word, so the outcome stays unknown until a person
reconciles it. A tool that raises (and fails the run) leaves its attempt open: unknown.

The SDK is imported only when a run starts: `store` imports without it.
"""

from __future__ import annotations

import dataclasses
import inspect
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

import sqlalchemy as sa

from .. import rules
from .. import schema as t
from ..canonical import canonical_json, digest_of
from ..commands import approvals as ap
from ..commands import effects as lg
from ..commands import manifests
from ..commands.core import Content, RecordArtifact, new_id
from ..errors import CommandRejected
from ..events import FileState
from ..model import Actor
from ..services.respond import answered_result
from ..services.standing_rules import DEFAULT_RULE_SECONDS, rule_from_answer
from ..store import Store

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

    from agents import Agent, RunHooks, RunResult, RunResultStreaming, RunState, ToolApprovalItem
    from agents.stream_events import StreamEvent

#: Where a tool call points: the task's scope admits it (`--destination openai-agents://tools/`).
TARGET_PREFIX = "openai-agents://tools/"
#: The policy every approval of an OpenAI Agents SDK tool call names.
POLICY = "OpenAI Agents SDK asks before this tool runs"
#: The task's artifact holding the paused run (`RunState.to_string()`), one version a pause.
STATE_ARTIFACT = "openai-agents-run-state"
STATE_NAME = "OpenAI Agents SDK run state"
#: A paused run may wait for days: its approvals live this long unless told otherwise.
DEFAULT_EXPIRY_SECONDS = 30 * 86400.0
#: The longest tool output kept whole in the record; a longer one is kept as digest and size.
MAX_KEPT_OUTPUT_BYTES = 64 * 1024
#: Who writes, unless told: the agent the SDK runs.
DEFAULT_ACTOR = Actor(kind="agent", id="openai-agents")
#: What a person answers in the tool's place (`boris respond`): the text the model reads as the
#: call's output (handed over as the SDK's per-call `rejection_message`: the tool never runs).
RESPOND_SCHEMA: dict[str, Any] = {
    "type": "string",
    "description": "the call's output as the model reads it; the tool is not run",
}

#: A function tool's name as the SDK sends it (a namespace joins with a dot).
_TOOL_NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$")


class NothingToResume(CommandRejected):
    """The task holds no paused run whose calls wait for Boris."""

    code = "nothing_to_resume"


class ResumeRefused(CommandRejected):
    """The stored run cannot be resumed as it is (a call's attempt has no known outcome, or
    the run was not paused by this adapter): nothing was run."""

    code = "resume_refused"


class PausedRunWaiting(CommandRejected):
    """A new run was started while the task's paused run still has calls waiting: resume that
    one first (starting over would leave its calls asked in Boris with no run to answer)."""

    code = "paused_run_waiting"


class UnsupportedInterruption(CommandRejected):
    """The run paused on something other than a function tool call (a hosted MCP, shell or
    computer approval): this adapter records function tool calls only. Nothing recorded."""

    code = "unsupported_interruption"


def _sdk() -> Any:
    """The SDK, imported when a run starts; a refusal naming the extra when it is missing."""
    try:
        import agents
    except ImportError:
        raise CommandRejected(
            "the OpenAI Agents SDK is not installed: in the Boris checkout, "
            "pip install '.[openai-agents]' (or pip install openai-agents)"
        ) from None
    return agents


# --- one tool call as an effect ----------------------------------------------------------


def target_of(tool_name: str) -> str:
    if not _TOOL_NAME.match(tool_name):
        raise UnsupportedInterruption(f"tool name {tool_name[:80]!r} is not a function tool's")
    return TARGET_PREFIX + tool_name


def key_of(call_id: str) -> str:
    key = f"openai-agents:{call_id}"
    return key if len(key) <= 128 else "openai-agents:" + digest_of(call_id)


def executor_of(tool_name: str) -> str:
    return f"openai-agents:{tool_name}"[:128]


def arguments_object(text: str) -> dict[str, Any]:
    """The call's arguments as the object a person approves. The model's JSON text, parsed;
    text that is not a JSON object is kept as it is, so its digest still binds exactly it."""
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):
        return {"arguments_text": text}
    return value if isinstance(value, dict) else {"arguments_text": text}


def consequence_of(tool_name: str, arguments: dict[str, Any]) -> str:
    what = " ".join(canonical_json(arguments).split())
    if len(what) > 200:
        what = what[:199] + "…"
    return f"The agent runs {tool_name}: {what}"


@dataclass(frozen=True)
class Call:
    """One function call the run paused on, as the model made it. `arguments` is the object
    a person approves, a dict: the model's JSON text (`raw_item.arguments`) parsed
    (`arguments_object`; text that is not a JSON object is kept as `{"arguments_text":
    text}`), so its digest binds exactly what the model asked."""

    call_id: str
    tool_name: str
    arguments: dict[str, Any]

    @property
    def digest(self) -> str:
        return digest_of(self.arguments)


def call_of(item: ToolApprovalItem) -> Call:
    raw = item.raw_item
    get = raw.get if isinstance(raw, dict) else (lambda k: getattr(raw, k, None))
    kind, call_id, name, text = get("type"), get("call_id"), get("name"), get("arguments")
    if kind != "function_call" or not isinstance(call_id, str) or not call_id:
        raise UnsupportedInterruption(
            f"the run paused on a {kind or 'tool'} approval, not a function tool call: "
            "this adapter records function tools declared with needs_approval only"
        )
    tool_name = item.tool_name or (name if isinstance(name, str) else "")
    return Call(call_id, tool_name, arguments_object(text if isinstance(text, str) else ""))


def _plan(
    task_id: str,
    effect_id: str,
    call: Call,
    *,
    requires_approval: bool,
    tool_digest: str | None = None,
) -> lg.PlanEffect:
    return lg.PlanEffect(
        task_id=task_id,
        effect_id=effect_id,
        kind="other",
        target=target_of(call.tool_name),
        consequence=consequence_of(call.tool_name, call.arguments),
        intended=FileState(exists=True, digest=call.digest),
        prepared=call.arguments,
        requires_approval=requires_approval,
        policy=POLICY if requires_approval else "",
        idempotency_key=key_of(call.call_id),
        result_schema=RESPOND_SCHEMA if requires_approval else None,
        # The tool definition the model was shown when it made the call (issue 35 part M):
        # pinned, so a later configuration that changes it flags this intent.
        tool=call.tool_name if tool_digest else None,
        tool_digest=tool_digest,
    )


def find_effect(store: Store, task_id: str, call_id: str) -> Any:
    with store.read() as conn:
        return conn.execute(
            sa.select(t.effects).where(
                t.effects.c.task_id == task_id, t.effects.c.idempotency_key == key_of(call_id)
            )
        ).first()


def asked_for(store: Store, task_id: str, call: Call) -> Asked:
    """The paused call as Boris asked it; refused where Boris never recorded it, or where it
    was answered before (a resume went past it)."""
    effect = find_effect(store, task_id, call.call_id)
    if effect is None:
        raise ResumeRefused(
            f"the stored run paused on {call.tool_name} call {call.call_id}, which Boris "
            "never recorded: it was not paused by this adapter"
        )
    row = latest_approval(store, task_id, str(effect.effect_id))
    # Answered in the tool's place: cancelled by the answer itself, and nothing can run.
    answered = row is not None and str(row.state) == rules.ApprovalState.ANSWERED
    if not answered and str(effect.stage) not in {
        rules.EffectStage.PLANNED,
        rules.EffectStage.APPROVED,
    }:
        raise ResumeRefused(
            f"{call.tool_name} call {call.call_id} (effect {effect.effect_id}) is "
            f"{effect.stage} (outcome {effect.outcome}) already: this run was resumed "
            "before; reconcile the call in Boris, it is not run again"
        )
    return Asked(call, str(effect.effect_id), "" if row is None else str(row.approval_id))


def latest_approval(store: Store, task_id: str, effect_id: str) -> Any:
    with store.read() as conn:
        return conn.execute(
            sa.select(t.approvals)
            .where(t.approvals.c.task_id == task_id, t.approvals.c.effect_id == effect_id)
            .order_by(t.approvals.c.requested_at.desc())
            .limit(1)
        ).first()


# --- what a person decided, as the SDK's answer ----------------------------------------------


@dataclass(frozen=True)
class Asked:
    """A call waiting for a person in Boris: its effect and the approval bound to its digest."""

    call: Call
    effect_id: str
    approval_id: str


@dataclass(frozen=True)
class Decided:
    """A person's decision on one call, as the SDK gets it: approved (`message` None), with
    the person's `arguments` when they edited the call (it runs with those), or rejected
    with `message`, the exact text the model reads as the call's output."""

    asked: Asked
    state: str
    message: str | None = None
    arguments: dict[str, Any] | None = None

    @property
    def approved(self) -> bool:
        return self.message is None

    def not_applied(self) -> Decided:
        """An edit of a call whose tool Boris cannot hand the person's arguments (a tool of
        another agent than the run's starting one): not run; the model reads the person's
        arguments and may call the tool again with them (a new call, a new approval)."""
        tool = self.asked.call.tool_name
        edited = canonical_json(self.arguments)
        return Decided(
            self.asked,
            "edited",
            f"a person approved this {tool} call in Boris only with other arguments: {edited}"
            f". It was not run: call {tool} again with exactly these arguments to ask for them.",
        )


def _who(decided_by: Any) -> str:
    if isinstance(decided_by, dict):
        return str(decided_by.get("name") or decided_by.get("id") or "a person")
    return "a person"


def decision_of(asked: Asked, row: Any, now: str, store: Store | None = None) -> Decided | None:
    """The decision on one call from its approval as it stands; None while a person may still
    decide it. Answered in the tool's place (`boris respond`, read from `store`): the
    person's result is the exact text the model reads as the call's output."""
    tool = asked.call.tool_name
    state = str(row.state)
    if rules.approval_expired(state, str(row.expires_at), now):
        state = rules.ApprovalState.EXPIRED
    if state == rules.ApprovalState.PENDING:
        return None
    if state == rules.ApprovalState.ANSWERED and store is not None:
        found = answered_result(store, str(row.task_id), str(row.approval_id))
        if found is not None:
            text = found.result if isinstance(found.result, str) else _text_of(found.result)
            return Decided(asked, state, text)
    who = _who(row.decided_by)
    note = str(row.note or "").strip()
    if state == rules.ApprovalState.APPROVED:
        if row.payload_digest == asked.call.digest:
            return Decided(asked, state)
        # A person's edit: the SDK approves the call as the model made it, and the tool is
        # handed the person's arguments when it is invoked (`_applying`).
        return Decided(asked, "edited", arguments=dict(row.payload))
    if state == rules.ApprovalState.REJECTED:
        message = f"{who} rejected this {tool} call in Boris" + (f": {note}" if note else "")
    elif state == rules.ApprovalState.SENT_BACK:
        message = f"{who} sent this {tool} call back in Boris (changes requested): {note}"
    elif state == rules.ApprovalState.EXPIRED:
        message = f"nobody decided this {tool} call in Boris before its approval expired"
    else:
        message = f"the approval of this {tool} call is {state} in Boris"
    return Decided(asked, state, message + ". It was not run.")


# --- the adapter -----------------------------------------------------------------------------


@dataclass
class Outcome:
    """What a run or a resume came to. `result` is the SDK's (None when nothing ran because a
    person has still to decide: `waiting`); `asked` are the calls the run paused on now, each
    waiting in Boris; `decided` the decisions the resume answered the SDK with."""

    result: RunResult | RunResultStreaming | None = None
    asked: list[Asked] = field(default_factory=list)
    decided: list[Decided] = field(default_factory=list)
    waiting: list[Asked] = field(default_factory=list)
    state_version: int | None = None

    @property
    def paused(self) -> bool:
        return bool(self.asked or self.waiting)


class BorisApprovals:
    """Runs an agent whose `needs_approval` tools ask Boris: `await run(agent, input)` records
    each interruption and the paused run; `await resume(agent)`, in this process or any later
    one, answers the SDK with the people's decisions and runs on.

    On a signed store (what `boris init` makes) its writes are signed with the agent's key by
    the one rule (`signing.keys.signer_for`): the store's `signer` if given, else BORIS_KEY's.
    Without a key the store would refuse: `run` and `resume` raise that `SignatureRefused`
    (its one line names the `boris keys new` / `boris keys add` commands that fix it) before
    the SDK runs anything.

    `runner_options` go to `Runner.run` (`run_config`, `max_turns`, `context` ...); `hooks`,
    when given, are called as well as Boris's own."""

    def __init__(
        self,
        store: Store,
        task_id: str,
        actor: Actor = DEFAULT_ACTOR,
        *,
        expires_in_seconds: float = DEFAULT_EXPIRY_SECONDS,
        hooks: RunHooks[Any] | None = None,
    ) -> None:
        self.store = store
        self.task_id = task_id
        self.actor = actor
        # The agent's key by the one rule (signing.keys.signer_for): the store's signer if
        # given, else BORIS_KEY's; never a person's.
        store.sign_as(actor)
        self.expires_in_seconds = expires_in_seconds
        self.hooks = hooks
        # What the model was shown for the request in flight, and each call it made -> the
        # manifest of the request that made it (issue 35 part M).
        self._request: list[manifests.ItemIn] | None = None
        self._manifest_of_call: dict[str, str] = {}
        self._tool_digests: dict[str, str] = {}
        # The people's edits of the calls being resumed: call id -> the arguments they run with.
        self._edits: dict[str, dict[str, Any]] = {}

    async def run(self, agent: Agent[Any], input: Any, **runner_options: Any) -> Outcome:
        """Start a run. If it pauses on approvals, they are asked in Boris and the paused run
        is kept in the task; `Outcome.paused` says so."""
        sdk = _sdk()
        # Refused before the SDK runs anything, not inside its hooks half-way through a run.
        self.store.check_signature(self.actor)
        self._refuse_while_paused()
        result = await sdk.Runner.run(agent, input, hooks=self.run_hooks(), **runner_options)
        outcome = self._after(result, [], self._state_version())
        return await _on_while_ruled(self, agent, outcome, None, runner_options)

    async def resume(
        self,
        agent: Agent[Any],
        *,
        state_options: dict[str, Any] | None = None,
        **runner_options: Any,
    ) -> Outcome:
        """Resume the task's paused run with the people's decisions. While no call is decided
        nothing runs (`Outcome.waiting`); a call left undecided while others are decided stays
        in the run's interruptions and pauses it again, still waiting in Boris (the SDK's
        partial resolution: `Outcome.asked` names it). `agent` is the run's starting agent, built
        as when it paused; `state_options` go to `RunState.from_string` (a context
        deserializer ...). A call a person edited runs with their arguments. A run that
        pauses again only on calls decided as they were asked (a person's standing rule
        covered them) goes on at once."""
        sdk = _sdk()
        ready = await _decided_state(self, agent, state_options)
        if isinstance(ready, Outcome):
            return ready
        run_agent, state, decided, version = ready
        result = await sdk.Runner.run(run_agent, state, hooks=self.run_hooks(), **runner_options)
        outcome = self._after(result, decided, version)
        return await _on_while_ruled(self, agent, outcome, state_options, runner_options)

    def run_streamed(self, agent: Agent[Any], input: Any, **runner_options: Any) -> StreamedRun:
        """`run`, streamed: `Runner.run_streamed` with Boris's hooks. Stream the SDK's events
        from `StreamedRun.stream_events()`; `await StreamedRun.outcome()` when it ends asks
        the calls the run paused on in Boris and keeps the paused run, as `run` does."""
        sdk = _sdk()
        self.store.check_signature(self.actor)
        self._refuse_while_paused()
        version = self._state_version()
        result = sdk.Runner.run_streamed(agent, input, hooks=self.run_hooks(), **runner_options)
        return StreamedRun(self, result, based_on=version)

    async def resume_streamed(
        self,
        agent: Agent[Any],
        *,
        state_options: dict[str, Any] | None = None,
        **runner_options: Any,
    ) -> StreamedRun:
        """`resume`, streamed. While no call is decided nothing runs: the `StreamedRun`
        streams nothing and its outcome is `waiting`; undecided calls stay pending, as in
        `resume`. A streamed run is not
        carried past a pause whose calls a standing rule decided (each stream is the
        application's to read): `resume_streamed` again goes on from there."""
        sdk = _sdk()
        ready = await _decided_state(self, agent, state_options)
        if isinstance(ready, Outcome):
            return StreamedRun(self, None, waiting=ready)
        run_agent, state, decided, version = ready
        result = sdk.Runner.run_streamed(run_agent, state, hooks=self.run_hooks(), **runner_options)
        return StreamedRun(self, result, decided=decided, based_on=version)

    def record_run(self, result: RunResult | RunResultStreaming) -> Outcome:
        """Hand Boris a run the application ran itself (`Runner.run` or `run_streamed`, with
        `hooks=run_hooks()` so that each guarded call's attempt is recorded): the calls it
        paused on are asked in Boris and the paused run is kept in the task, exactly as `run`
        keeps it; `resume` (in any process) goes on from there. A streamed run is recorded
        once its stream has ended. Refused while an earlier paused run still waits."""
        _sdk()
        self.store.check_signature(self.actor)
        if not getattr(result, "is_complete", True):
            raise ResumeRefused("the streamed run has not ended: stream its events first")
        self._refuse_while_paused(result)
        return self._after(result, [], self._state_version())

    def _refuse_while_paused(self, result: Any = None) -> None:
        pausing = {call_of(item).call_id for item in getattr(result, "interruptions", ())}
        open_calls = [c for c in self._open_calls() if c not in pausing]
        if open_calls:
            raise PausedRunWaiting(
                f"task {self.task_id} has a paused run whose calls wait in Boris "
                f"({', '.join(open_calls)}): resume it first"
            )

    # --- recording ------------------------------------------------------------------------

    def _asked_for(self, call: Call) -> Asked:
        return asked_for(self.store, self.task_id, call)

    def _after(
        self, result: RunResult | RunResultStreaming, decided: list[Decided], based_on: int
    ) -> Outcome:
        """One transaction: the calls the run paused on now (intent, approval), the calls it
        went past without running (cancelled, so a late decision cannot approve them), and the
        run as it stands (a new version of the task's run-state artifact, refused as a
        Conflict if another process stored one since `based_on`)."""
        calls = [call_of(item) for item in result.interruptions]
        commands: list[Any] = []
        asked: list[Asked] = []
        for call in calls:
            known = find_effect(self.store, self.task_id, call.call_id)
            if known is not None and lg.intent_open(known):
                # Left undecided by the resume: the same call, still waiting in Boris.
                row = latest_approval(self.store, self.task_id, str(known.effect_id))
                approval = "" if row is None else str(row.approval_id)
                asked.append(Asked(call, str(known.effect_id), approval))
                continue
            effect_id, approval_id = new_id("eff"), new_id("apr")
            commands += [
                _plan(
                    self.task_id,
                    effect_id,
                    call,
                    requires_approval=True,
                    tool_digest=self._tool_digests.get(call.tool_name),
                ),
                *self._link(call, effect_id),
                ap.RequestApproval(
                    task_id=self.task_id,
                    approval_id=approval_id,
                    effect_id=effect_id,
                    policy=POLICY,
                    expires_in_seconds=self.expires_in_seconds,
                ),
            ]
            asked.append(Asked(call, effect_id, approval_id))
        for decision in decided:
            if not decision.approved and self._open(decision.asked.effect_id):
                commands.append(
                    lg.CancelEffect(
                        task_id=self.task_id,
                        effect_id=decision.asked.effect_id,
                        reason=decision.message or "rejected",
                    )
                )
        paused = ", ".join(f"{c.tool_name} ({c.call_id})" for c in calls)
        note = f"paused: {paused} wait for a person" if calls else "the run went on to its end"
        commands.append(
            RecordArtifact(
                task_id=self.task_id,
                artifact_id=STATE_ARTIFACT,
                name=STATE_NAME,
                role="other",
                content=Content(text=result.to_state().to_string(), media_type="application/json"),
                note=note,
                based_on=based_on,
            )
        )
        done = self.store.execute_all(commands, self.actor)
        return Outcome(
            result=result, asked=asked, decided=decided, state_version=int(done[-1]["version"])
        )

    def _open(self, effect_id: str) -> bool:
        with self.store.read() as conn:
            row = conn.execute(
                sa.select(t.effects).where(
                    t.effects.c.task_id == self.task_id, t.effects.c.effect_id == effect_id
                )
            ).first()
        return row is not None and lg.intent_open(row)

    def _open_calls(self) -> list[str]:
        """The calls asked by a paused run that no resume went past yet."""
        with self.store.read() as conn:
            rows = conn.execute(
                sa.select(t.effects.c.idempotency_key)
                .where(
                    t.effects.c.task_id == self.task_id,
                    t.effects.c.target.startswith(TARGET_PREFIX, autoescape=True),
                    t.effects.c.requires_approval.is_(True),
                    t.effects.c.stage.in_((rules.EffectStage.PLANNED, rules.EffectStage.APPROVED)),
                )
                .order_by(t.effects.c.position)
            ).all()
        return [str(r.idempotency_key).removeprefix("openai-agents:") for r in rows]

    def _state_version(self) -> int:
        with self.store.read() as conn:
            current = conn.execute(
                sa.select(t.artifacts.c.current_version).where(
                    t.artifacts.c.task_id == self.task_id,
                    t.artifacts.c.artifact_id == STATE_ARTIFACT,
                )
            ).scalar()
        return 0 if current is None else int(current)

    def _stored_state(self) -> tuple[str, int]:
        """The paused run's text, verified against its digest, and its version."""
        with self.store.read() as conn:
            row = conn.execute(
                sa.select(t.artifact_versions.c.digest, t.artifact_versions.c.version)
                .join(
                    t.artifacts,
                    sa.and_(
                        t.artifacts.c.task_id == t.artifact_versions.c.task_id,
                        t.artifacts.c.artifact_id == t.artifact_versions.c.artifact_id,
                        t.artifacts.c.current_version == t.artifact_versions.c.version,
                    ),
                )
                .where(
                    t.artifact_versions.c.task_id == self.task_id,
                    t.artifact_versions.c.artifact_id == STATE_ARTIFACT,
                )
            ).first()
        if row is None:
            raise NothingToResume(f"task {self.task_id} holds no paused OpenAI Agents SDK run")
        data = self.store.blobs.read(str(row.digest), f"artifact {STATE_ARTIFACT}")
        return data.decode("utf-8"), int(row.version)

    # --- the tool's run, as attempt and response --------------------------------------------

    def run_hooks(self) -> RunHooks[Any]:
        """The hooks that record each guarded call's attempt and response: `run` and `resume`
        pass them; pass them to `Runner.run` yourself when you drive the SDK directly."""
        return _recorder(self, self.hooks)

    def tool_started(self, call: Call, needs_approval: bool) -> None:
        """Immediately before the SDK invokes the tool with `call.arguments`: the attempt, with
        their digest. The store refuses it unless an unused approval binds exactly that digest
        (then the run fails and nothing runs). A call Boris never saw is recorded now: one whose
        `needs_approval` callable said no goes through without a person; one that always
        needs approval was approved outside Boris (the application's own `state.approve`, or
        the SDK's sticky `always_approve` letting a later call through unasked): it is asked
        in Boris in the same transaction, so a person's standing rule that covers it decides
        it there (recorded as the rule's) and it runs; else the attempt is refused, nothing is
        recorded, and nothing runs: Boris's decision, not the SDK's flag, lets it through."""
        edited = self._edits.get(call.call_id)
        if edited is not None:  # the person's arguments are what the tool is handed
            call = Call(call.call_id, call.tool_name, edited)
        effect = find_effect(self.store, self.task_id, call.call_id)
        commands: list[Any] = []
        if effect is None:
            effect_id = new_id("eff")
            commands.append(
                _plan(
                    self.task_id,
                    effect_id,
                    call,
                    requires_approval=needs_approval,
                    tool_digest=self._tool_digests.get(call.tool_name),
                )
            )
            commands += self._link(call, effect_id)
            approval_id = None
            if needs_approval:  # asked now: only a standing rule can decide it in time
                approval_id = new_id("apr")
                commands.append(
                    ap.RequestApproval(
                        task_id=self.task_id,
                        approval_id=approval_id,
                        effect_id=effect_id,
                        policy=POLICY,
                        expires_in_seconds=self.expires_in_seconds,
                    )
                )
        else:
            effect_id = str(effect.effect_id)
            row = latest_approval(self.store, self.task_id, effect_id)
            approval_id = None if row is None else str(row.approval_id)
        commands.append(
            lg.DispatchEffect(
                task_id=self.task_id,
                effect_id=effect_id,
                executor=executor_of(call.tool_name),
                inputs=call.arguments,
                approval_id=approval_id,
            )
        )
        self.store.execute_all(commands, self.actor)

    # --- what the model saw (issue 35 part M) ---------------------------------------------

    def model_asked(
        self, agent: Any, system_prompt: str | None, input_items: Sequence[Any]
    ) -> None:
        """`on_llm_start`: what the SDK hands the model, kept by digest until it answers."""
        items = [_item("instruction", "system_prompt", system_prompt)] if system_prompt else []
        for i, x in enumerate(input_items):
            kind, ref = _kind_and_ref(x, i)
            items.append(_item(kind, ref, x))
        for tool in getattr(agent, "tools", None) or ():
            name = str(getattr(tool, "name", ""))
            definition = {
                "name": name,
                "description": getattr(tool, "description", ""),
                "parameters": getattr(tool, "params_json_schema", None),
            }
            item = _item("tool_definition", name, definition)
            self._tool_digests[name] = item.digest
            items.append(item)
        self._request = items

    def model_answered(self, agent: Any, response: Any) -> None:
        """`on_llm_end`: the request's manifest; the calls in its answer will name it when
        they become effects (`_link`). The SDK says nothing of what it left out: no omitted."""
        items, self._request = self._request, None
        if items is None:
            return
        model = getattr(agent, "model", None)
        settings = getattr(agent, "model_settings", None)
        to_json = getattr(settings, "to_json_dict", None)
        manifest_id = new_id("mf")
        self.store.execute(
            manifests.RecordManifest(
                task_id=self.task_id,
                manifest_id=manifest_id,
                provider="openai"
                if isinstance(model, str) or model is None
                else type(model).__name__,
                model=str(model or "default")
                if isinstance(model, str) or model is None
                else str(getattr(model, "model", type(model).__name__)),
                parameters=json.loads(_text_of(to_json())) if callable(to_json) else None,
                included=items,
                purpose=f"a model request of agent {getattr(agent, 'name', '?')}",
            ),
            self.actor,
        )
        for out in getattr(response, "output", None) or ():
            call_id = getattr(out, "call_id", None)
            if isinstance(call_id, str):
                self._manifest_of_call[call_id] = manifest_id

    def _link(self, call: Call, effect_id: str) -> list[Any]:
        """The request whose answer made this call led to its effect."""
        manifest_id = self._manifest_of_call.get(call.call_id)
        if manifest_id is None:
            return []
        led = manifests.LedToIn(kind="effect", id=effect_id)
        return [manifests.LinkManifest(task_id=self.task_id, manifest_id=manifest_id, led_to=led)]

    def tool_ended(self, call: Call, output: object) -> None:
        """The tool returned: its output is the attempt's response (the SDK's word: the outcome
        stays unknown until a person reconciles it)."""
        effect = find_effect(self.store, self.task_id, call.call_id)
        if effect is None:  # not a call Boris saw start
            return
        text = output if isinstance(output, str) else _text_of(output)
        response: dict[str, Any] = {
            "call_id": call.call_id,
            "output_digest": digest_of({"output": text}),
            "output_bytes": len(text.encode("utf-8")),
        }
        if len(text.encode("utf-8")) <= MAX_KEPT_OUTPUT_BYTES:
            response["output"] = text
        self.store.execute(
            lg.RecordResponse(
                task_id=self.task_id,
                effect_id=str(effect.effect_id),
                reported="reported_success",
                response=response,
            ),
            self.actor,
        )


class StreamedRun:
    """A streamed run or resume (`BorisApprovals.run_streamed`, `resume_streamed`): the SDK's
    `result` (a `RunResultStreaming`; None when nothing ran because a call still waits),
    its events from `stream_events()`, and when the stream has ended `outcome()`: the calls
    the run paused on asked in Boris and the paused run kept, as `run` and `resume` do."""

    def __init__(
        self,
        adapter: BorisApprovals,
        result: RunResultStreaming | None,
        *,
        decided: list[Decided] | None = None,
        based_on: int = 0,
        waiting: Outcome | None = None,
    ) -> None:
        self.adapter = adapter
        self.result = result
        self._decided = decided or []
        self._based_on = based_on
        self._outcome = waiting

    async def stream_events(self) -> AsyncIterator[StreamEvent]:
        """The SDK's stream events, as `RunResultStreaming.stream_events()` yields them."""
        if self.result is None:
            return
        async for event in self.result.stream_events():
            yield event

    async def outcome(self) -> Outcome:
        """What the run came to, recorded once (the rest of the stream drained first)."""
        if self._outcome is None:
            assert self.result is not None
            if not self.result.is_complete:
                async for _ in self.result.stream_events():
                    pass
            self._outcome = self.adapter._after(self.result, self._decided, self._based_on)
        return self._outcome


async def _decided_state(
    adapter: BorisApprovals, agent: Agent[Any], state_options: dict[str, Any] | None
) -> Outcome | tuple[Agent[Any], RunState[Any, Any], list[Decided], int]:
    """The stored run with every call's decision applied to it, and the agent to run it
    with (the person's edits handed to their tools); an `Outcome` with the calls still
    waiting instead while any is undecided."""
    sdk = _sdk()
    adapter.store.check_signature(adapter.actor)
    text, version = adapter._stored_state()
    state: RunState[Any, Any] = await sdk.RunState.from_string(agent, text, **(state_options or {}))
    items = state.get_interruptions()
    if not items:
        raise NothingToResume(
            f"task {adapter.task_id}'s last stored run is not paused on an approval: "
            "nothing to resume"
        )
    now = adapter.store.now()
    waiting: list[Asked] = []
    decided: list[Decided] = []
    for item in items:
        asked = adapter._asked_for(call_of(item))
        row = latest_approval(adapter.store, adapter.task_id, asked.effect_id)
        decision = None if row is None else decision_of(asked, row, now, adapter.store)
        if decision is None:
            waiting.append(asked)
        else:
            decided.append(decision)
    if not decided:
        return Outcome(waiting=waiting)
    run_agent, decided = _applying_edits(agent, items, decided)
    if run_agent is not agent:  # the same run, its edited calls' tools wrapped
        state = await sdk.RunState.from_string(run_agent, text, **(state_options or {}))
        items = state.get_interruptions()
    adapter._edits = {d.asked.call.call_id: d.arguments for d in decided if d.arguments is not None}
    by_call = {d.asked.call.call_id: d for d in decided}
    for item in items:
        decision = by_call.get(call_of(item).call_id)
        if decision is None:
            # Left undecided: it stays in the run's interruptions and pauses it again, still
            # waiting in Boris (the SDK's documented partial resolution).
            continue
        if decision.approved:
            state.approve(item)
        else:
            state.reject(item, rejection_message=decision.message)
    return run_agent, state, decided, version


#: How many pauses in a row `run` / `resume` go past when standing rules decided every call
#: (a model calling a ruled tool in a loop still comes back to the application).
MAX_RULED_ROUNDS = 16


def _decided_already(adapter: BorisApprovals, asked: Asked) -> bool:
    row = latest_approval(adapter.store, adapter.task_id, asked.effect_id)
    now = adapter.store.now()
    return row is not None and decision_of(asked, row, now, adapter.store) is not None


async def _on_while_ruled(
    adapter: BorisApprovals,
    agent: Agent[Any],
    outcome: Outcome,
    state_options: dict[str, Any] | None,
    runner_options: dict[str, Any],
) -> Outcome:
    """A run that paused only on calls decided already as they were asked (a person's
    standing rule, `boris rules`, decided each, recorded as the rule's) goes on at once: the
    rule's decision is the SDK's answer, and nobody has to resume it by hand."""
    decided = list(outcome.decided)
    for _ in range(MAX_RULED_ROUNDS):
        if not outcome.asked or not all(_decided_already(adapter, a) for a in outcome.asked):
            break
        ready = await _decided_state(adapter, agent, state_options)
        if isinstance(ready, Outcome):  # pragma: no cover  # decided above, in this process
            return ready
        run_agent, state, now_decided, version = ready
        result = await _sdk().Runner.run(
            run_agent, state, hooks=adapter.run_hooks(), **runner_options
        )
        outcome = adapter._after(result, now_decided, version)
        decided += now_decided
    outcome.decided = decided
    return outcome


def _applying_edits(
    agent: Any, items: Sequence[Any], decided: list[Decided]
) -> tuple[Any, list[Decided]]:
    """The agent to resume with: where a person edited a call of one of the starting agent's
    function tools, a clone whose tool is handed the person's arguments for exactly that
    call (`_applying`); an edit of another agent's call is not run (`Decided.not_applied`)."""
    edits = {d.asked.call.call_id: d for d in decided if d.arguments is not None}
    if not edits:
        return agent, decided
    owner = {call_of(item).call_id: getattr(item, "agent", None) for item in items}
    tools = {str(getattr(t, "name", "")): t for t in getattr(agent, "tools", None) or ()}
    applied: dict[str, dict[str, dict[str, Any]]] = {}
    kept: list[Decided] = []
    for d in decided:
        call = d.asked.call
        tool = tools.get(call.tool_name)
        if d.arguments is None:
            kept.append(d)
        elif owner.get(call.call_id) is agent and tool is not None and _guarded(tool):
            applied.setdefault(call.tool_name, {})[call.call_id] = d.arguments
            kept.append(d)
        else:
            kept.append(d.not_applied())
    if not applied:
        return agent, kept
    wrapped = [
        _applying(t, applied[name]) if (name := str(getattr(t, "name", ""))) in applied else t
        for t in agent.tools
    ]
    return agent.clone(tools=wrapped), kept


def _applying(tool: Any, edits: dict[str, dict[str, Any]]) -> Any:
    """The function tool, handed the person's arguments for the calls they edited (by call
    id) instead of the model's; the model reads that it ran with them, then the output."""
    invoke = tool.on_invoke_tool

    async def on_invoke_tool(context: Any, arguments: str) -> Any:
        edited = edits.get(str(getattr(context, "tool_call_id", "")))
        if edited is None:
            return await invoke(context, arguments)
        output = await invoke(context, json.dumps(edited, ensure_ascii=False))
        if not isinstance(output, str):
            return output
        return (
            f"A person in Boris approved this {tool.name} call with other arguments, and it "
            f"ran with them: {canonical_json(edited)}\n\nTool output:\n{output}"
        )

    return dataclasses.replace(tool, on_invoke_tool=on_invoke_tool)


def hand_over(
    store: Store, task_id: str, result: RunResult | RunResultStreaming, actor: Actor = DEFAULT_ACTOR
) -> Outcome:
    """Hand Boris a paused run an application ran itself with `Runner.run` (or
    `run_streamed`, its stream ended): `BorisApprovals(store, task_id, actor).record_run`.
    Pass `hooks=BorisApprovals(...).run_hooks()` to that run so each guarded call's attempt
    is recorded; resume with `BorisApprovals(...).resume(agent)`."""
    return BorisApprovals(store, task_id, actor).record_run(result)


@dataclass(frozen=True)
class Answer:
    """A person's answer given on the SDK's own `RunState`, as recorded in Boris: `verdict`
    (approved, rejected), and `rule_id` where it was the SDK's "always"."""

    asked: Asked
    verdict: str
    always: bool
    message: str | None = None
    rule_id: str | None = None


def _sdk_decisions(state: RunState[Any, Any]) -> list[tuple[str, dict[str, Any]]]:
    """The approval records a `RunState` carries, by tool: its serialized context's
    `approvals` (by tool name) and `function_tool_approvals` (an agent's tool), the form the
    SDK documents as surviving `to_string()` / `from_string()`."""
    context = dict(state.to_json().get("context") or {})
    found = [(str(k), dict(v)) for k, v in dict(context.get("approvals") or {}).items()]
    for entry in context.get("function_tool_approvals") or ():
        found.append((str(entry.get("tool_key")), dict(entry.get("decision") or {})))
    return found


def _sdk_answer(
    records: list[tuple[str, dict[str, Any]]], call: Call
) -> tuple[str, bool, str | None] | None:
    """How the application's person answered this call on the RunState: (verdict, always,
    rejection message), or None when they did not."""
    for tool, record in records:
        if tool != call.tool_name:
            continue
        for verdict, key in (("approved", "approved"), ("rejected", "rejected")):
            given = record.get(key)
            if given is True or (isinstance(given, list) and call.call_id in given):
                messages = dict(record.get("rejection_messages") or {})
                message = messages.get(call.call_id) or record.get("sticky_rejection_message")
                return verdict, given is True, message if verdict == "rejected" else None
    return None


def record_answers(
    store: Store,
    task_id: str,
    state: RunState[Any, Any],
    person: Actor | str,
    *,
    scope: Literal["task", "agent", "session"] = "task",
    fields: Sequence[str] = (),
    expires_in_seconds: float = DEFAULT_RULE_SECONDS,
) -> list[Answer]:
    """A person's answers to the paused run's calls given in the application's own approval
    UI on the SDK's `RunState` (`state.approve(item, always_approve=...)`, `state.reject(item,
    always_reject=..., rejection_message=...)`), recorded in Boris in that person's name
    (signed with their key, `Store.sign_as`: never the agent's): a plain answer is their
    decision on the call's approval; the SDK's "always" (`always_approve` / `always_reject`)
    is a Boris standing rule (`rule_from_answer`, origin `openai-agents:always_approve` /
    `always_reject`) over calls of that tool (`fields`: whose arguments have the same values;
    none: any arguments), for `scope` (this task by default), expiring after
    `expires_in_seconds`; the call itself is decided in the same transaction. The rule, not
    the SDK's sticky flag, decides the next calls like it as they are asked, each recorded as
    the rule's; it never decides a call its policy reserves for a person, nor after it is
    revoked or expired. Resume the run as usual (`BorisApprovals.resume`): Boris answers the
    SDK per call, never with its own "always". Calls the person did not answer are left."""
    who = Actor.parse(person) if isinstance(person, str) else person
    records = _sdk_decisions(state)
    answers: list[Answer] = []
    for item in state.get_interruptions():
        call = call_of(item)
        said = _sdk_answer(records, call)
        if said is None:
            continue
        verdict, always, message = said
        asked = asked_for(store, task_id, call)
        if always:
            rule = rule_from_answer(
                store, who, task_id, asked.approval_id,
                verdict="approved" if verdict == "approved" else "rejected",
                scope=scope, fields=fields, expires_in_seconds=expires_in_seconds,
                origin=f"openai-agents:always_{'approve' if verdict == 'approved' else 'reject'}",
                note=message or "",
            )  # fmt: skip
            answers.append(Answer(asked, verdict, True, message, rule.id))
            continue
        store.sign_as(who)
        store.execute(
            ap.DecideApproval(
                task_id=task_id,
                approval_id=asked.approval_id,
                decision="approved" if verdict == "approved" else "rejected",
                note=message or "",
            ),
            who,
        )
        answers.append(Answer(asked, verdict, False, message))
    return answers


def _text_of(output: object) -> str:
    try:
        return canonical_json(output)
    except (TypeError, ValueError):
        return str(output)


def _item(kind: str, ref: str, value: object) -> manifests.ItemIn:
    """A context item by identity: its canonical JSON's digest and size, never its content."""
    text = _text_of(value)
    return manifests.ItemIn(
        kind=kind, ref=ref[:1024], digest=digest_of({"item": text}), size=len(text.encode("utf-8"))
    )


def _kind_and_ref(x: object, i: int) -> tuple[str, str]:
    get = x.get if isinstance(x, dict) else lambda k, d=None: getattr(x, k, d)
    kind = str(get("type") or ("message" if get("role") else "item"))
    ref = get("call_id") or get("id") or f"{get('role') or kind}[{i}]"
    return kind[:64], str(ref)


def _guarded(tool: object) -> bool | None:
    """Whether Boris records this tool's calls: a function tool declared with needs_approval
    (True: always asks; False: a callable that may say no). None: not Boris's to record."""
    needs = getattr(tool, "needs_approval", False)
    if needs is False or not hasattr(tool, "on_invoke_tool"):
        return None
    return needs is True


def _recorder(adapter: BorisApprovals, inner: RunHooks[Any] | None) -> RunHooks[Any]:
    """The SDK's run hooks that record a guarded tool's attempt and response, calling the
    application's own hooks as well. Built here so the SDK is imported only when a run starts."""
    sdk = _sdk()

    class Recorder(sdk.RunHooks):  # type: ignore[misc,name-defined]  # the SDK's, imported late
        async def on_llm_start(self, *args: Any) -> None:
            if len(args) == 4:  # context, agent, system_prompt, input_items
                adapter.model_asked(args[1], args[2], args[3])
            if inner is not None:
                await inner.on_llm_start(*args)

        async def on_llm_end(self, *args: Any) -> None:
            if len(args) == 3:  # context, agent, response
                adapter.model_answered(args[1], args[2])
            if inner is not None:
                await inner.on_llm_end(*args)

        async def on_agent_start(self, *args: Any) -> None:
            if inner is not None:
                await inner.on_agent_start(*args)

        async def on_agent_end(self, *args: Any) -> None:
            if inner is not None:
                await inner.on_agent_end(*args)

        async def on_handoff(self, *args: Any) -> None:
            if inner is not None:
                await inner.on_handoff(*args)

        async def on_tool_start(self, context: Any, agent: Any, tool: Any) -> None:
            call = _tool_call(context, tool)
            if call is not None:
                adapter.tool_started(call, await _needs_approval(tool, context, call))
            if inner is not None:
                await inner.on_tool_start(context, agent, tool)

        async def on_tool_end(self, context: Any, agent: Any, tool: Any, result: Any) -> None:
            call = _tool_call(context, tool)
            if call is not None:
                adapter.tool_ended(call, result)
            if inner is not None:
                await inner.on_tool_end(context, agent, tool, result)

    hooks: RunHooks[Any] = Recorder()
    return hooks


async def _needs_approval(tool: Any, context: Any, call: Call) -> bool:
    """Whether the tool's own rule asks a person about this call: True for
    `needs_approval=True`; a callable is asked again here, as the SDK asks it (the run
    context, the parsed arguments, the call id), so a call the SDK let through unasked on a
    sticky `always_approve` is not recorded as one its policy lets through. Arguments that
    are not a JSON object, or a callable that fails, ask a person (the SDK fails closed)."""
    needs = _guarded(tool)
    if needs is not False:
        return bool(needs)
    if set(call.arguments) == {"arguments_text"}:
        return True
    try:
        said = tool.needs_approval(context, dict(call.arguments), call.call_id)
        if inspect.isawaitable(said):
            said = await said
    except Exception:  # the tool's own code failed: a person decides
        return True
    return bool(said)


def _tool_call(context: Any, tool: Any) -> Call | None:
    """The call a hook is about, when it is a guarded function tool's (a ToolContext)."""
    if _guarded(tool) is None:
        return None
    call_id = getattr(context, "tool_call_id", None)
    arguments = getattr(context, "tool_arguments", None)
    if not isinstance(call_id, str) or not isinstance(arguments, str):
        return None
    name = getattr(context, "tool_name", None) or getattr(tool, "name", "")
    return Call(call_id, str(name), arguments_object(arguments))


def waiting_calls(store: Store, task_id: str) -> Sequence[dict[str, Any]]:
    """The calls of the task's paused run that still wait for a person: effect, approval and
    the call, read from the record alone (no agent needed)."""
    with store.read() as conn:
        rows = conn.execute(
            sa.select(t.approvals, t.effects.c.target, t.effects.c.idempotency_key)
            .join(
                t.effects,
                sa.and_(
                    t.effects.c.task_id == t.approvals.c.task_id,
                    t.effects.c.effect_id == t.approvals.c.effect_id,
                ),
            )
            .where(
                t.approvals.c.task_id == task_id,
                t.approvals.c.policy == POLICY,
                t.approvals.c.state == rules.ApprovalState.PENDING,
            )
        ).all()
    return [
        {
            "approval_id": str(r.approval_id),
            "effect_id": str(r.effect_id),
            "tool_name": str(r.target)[len(TARGET_PREFIX) :],
            "call_id": str(r.idempotency_key).removeprefix("openai-agents:"),
            "arguments": r.payload,
            "digest": str(r.payload_digest),
        }
        for r in rows
    ]
