"""Dependencies: each phase's readiness, naming the input that blocks it."""

from __future__ import annotations

from typing import TYPE_CHECKING

from boris_desktop.task.bundle import TaskBundle
from boris_desktop.task.panels.base import TreePanel, form_detail
from boris_desktop.ui import text as t
from boris_desktop.ui.records import Node
from store.api import PhaseReadiness

if TYPE_CHECKING:
    from store.api import Phase, PhaseHistoryEntry, PhaseInput, TaskState


class PhasesPanel(TreePanel):
    title = "Dependencies"
    headers = ("Phase / input", "Readiness", "Why")
    forms = True

    def tab_note(self, task: TaskState) -> str:
        n = sum(p.readiness == PhaseReadiness.BLOCKED for p in task.phases)
        return f"{n} blocked" if n else ""

    def summary(self, bundle: TaskBundle) -> str:
        phases = bundle.task.phases
        if not phases:
            return "No phases."
        blocked = [p.phase_id for p in phases if p.readiness == PhaseReadiness.BLOCKED]
        return t.count(len(phases), "phase", "phases") + (
            f"; blocked: {', '.join(blocked)}" if blocked else "; none blocked"
        )

    def nodes(self, bundle: TaskBundle) -> list[Node]:
        out = []
        for p in bundle.task.phases:
            kids = [_input(p, i) for i in p.inputs]
            kids += [
                _earlier(h)
                for h in reversed(p.history)
                if p.result is None or h.seq != p.result.seq  # the current result is the phase's
            ]
            if p.result:
                r = p.result
                why = f"result at seq {r.seq} by {t.actor_short(r.actor)}: {r.summary}"
            elif p.blocked_by:
                why = "blocked by " + "; ".join(p.blocked_by)
            else:
                why = "every input is available now"
            out.append(
                Node(
                    key=p.phase_id,
                    cells=(p.name, p.readiness, why),
                    status=p.readiness,
                    detail=form_detail(p.to_json()),
                    children=kids,
                )
            )
        return out


def _input(p: Phase, i: PhaseInput) -> Node:
    """An input of the phase: available, or the reason it blocks the phase (the store's)."""
    key = f"{i.kind}:{i.ref}"
    reason = next((b for b in p.blocked_by if f"{i.kind} {i.ref} " in b + " "), None)
    ident = p.input_identities.get(key)
    return Node(
        key=key,
        cells=(
            f"{i.kind} {i.ref}",
            "blocks" if reason else "available",
            reason or (f"current identity {ident}" if ident else ""),
        ),
        # An input's own readiness: it blocks the phase, or is there for it.
        status=PhaseReadiness.BLOCKED if reason else PhaseReadiness.DONE,
        detail=form_detail({"input": i.to_json(), "identity": ident, "blocks": reason}),
    )


def _earlier(h: PhaseHistoryEntry) -> Node:
    """An earlier result: history only (an input's change retired it, or a newer one)."""
    why = (
        f"retired at seq {h.retired_at_seq}: {h.retired_because} changed"
        if h.retired_at_seq
        else ""
    )
    return Node(
        key=f"history:{h.seq}",
        cells=(f"earlier result (seq {h.seq})", "history", why or h.summary),
        icon_name="stopped",
        tip="an earlier result: history only, it authorizes nothing",
        detail=form_detail(h.to_json()),
    )
