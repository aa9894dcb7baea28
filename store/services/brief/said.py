"""What every part of the resume brief shares: the command and the item an action names,
a file observed now, what the brief says (`Said`) and the run it speaks of (`Run`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ... import rules
from ...commands.effects import observe_file
from ...errors import ScopeViolation, StoreError
from ...model import Scope
from ...scope import resolve_path
from .models import FileObservation

if TYPE_CHECKING:
    from ...reads.state_models import Budget


def cmd(ctype: str, task_id: str, **payload: Any) -> dict[str, Any]:
    """A command the brief names: its type and payload, as `boris ingest` takes it."""
    return {"type": ctype, "task_id": task_id, **payload}


def item(
    text: str,
    actor: str,
    command: dict[str, Any],
    needs: tuple[str, ...] = (),
    **extra: Any,
) -> dict[str, Any]:
    """A next action or a forbidden one: what it is in words, who (actor kind), and the
    command the command layer takes for it; `needs` names the fields the actor supplies
    (the content it checked, the executor it hands the object to, a reviewer's decision)."""
    return {"action": text, "actor": str(actor), "command": command, "needs": list(needs), **extra}


def observe(scope: Scope, path: str) -> FileObservation:
    """The file at `path` (inside the task's scope) hashed now: what is there, or why it
    cannot be read."""
    try:
        real = resolve_path(scope, path)
    except ScopeViolation as exc:
        return FileObservation(path=path, readable=False, problem=str(exc))
    try:
        state, mtime = observe_file(str(real))
    except StoreError as exc:
        return FileObservation(path=str(real), readable=False, problem=str(exc))
    return FileObservation(
        path=str(real),
        readable=True,
        exists=state.exists,
        digest=state.digest,
        size=state.size,
        mtime_ns=mtime,
    )


@dataclass
class Said:
    """What the brief says beside the record's facts, each list in the order the parts find
    it: what blocks the next actor, what may be done next (and by whom), what must not."""

    blockers: list[dict[str, Any]] = field(default_factory=list)
    actions: list[dict[str, Any]] = field(default_factory=list)
    forbidden: list[dict[str, Any]] = field(default_factory=list)


@dataclass(frozen=True)
class Run:
    """What every part of the brief asks of the run: its status and its budgets."""

    task_id: str
    status: str
    closed: bool
    budgets: list[Budget]

    @property
    def exhausted(self) -> list[str]:
        return rules.exhausted_counters(b.to_json() for b in self.budgets)

    @property
    def may_dispatch(self) -> bool:
        return rules.can_dispatch(self.status)
