"""Dependencies: each phase's readiness, naming the input that blocks it."""

from __future__ import annotations

from boris_desktop.task.bundle import TaskBundle
from boris_desktop.task.panels.base import TreePanel, form_detail
from boris_desktop.ui import text as t
from boris_desktop.ui.records import Node
from store.api import PhaseReadiness


class PhasesPanel(TreePanel):
    title = "Dependencies"
    headers = ("Phase / input", "Readiness", "Why")
    forms = True

    def summary(self, bundle: TaskBundle) -> str:
        phases = bundle.task["phases"]
        if not phases:
            return "No phases."
        blocked = [p["phase_id"] for p in phases if p["readiness"] == PhaseReadiness.BLOCKED]
        return t.count(len(phases), "phase", "phases") + (
            f"; blocked: {', '.join(blocked)}" if blocked else "; none blocked"
        )

    def nodes(self, bundle: TaskBundle) -> list[Node]:
        out = []
        for p in bundle.task["phases"]:
            blocked = p["blocked_by"]
            kids = []
            for i in p["inputs"]:
                key = f"{i['kind']}:{i['ref']}"
                reason = next((b for b in blocked if f"{i['kind']} {i['ref']} " in b + " "), None)
                ident = p["input_identities"].get(key)
                kids.append(
                    Node(
                        key=key,
                        cells=(
                            f"{i['kind']} {i['ref']}",
                            "blocks" if reason else "available",
                            reason or (f"current identity {ident}" if ident else ""),
                        ),
                        # An input's own readiness: it blocks the phase, or is there for it.
                        status=PhaseReadiness.BLOCKED if reason else PhaseReadiness.DONE,
                        detail=form_detail({"input": i, "identity": ident, "blocks": reason}),
                    )
                )
            for h in reversed(p["history"]):
                if h == p["result"]:
                    continue
                why = (
                    f"retired at seq {h['retired_at_seq']}: {h['retired_because']} changed"
                    if h.get("retired_at_seq")
                    else ""
                )
                kids.append(
                    Node(
                        key=f"history:{h['seq']}",
                        cells=(
                            f"earlier result (seq {h['seq']})",
                            "history",
                            why or h.get("summary", ""),
                        ),
                        icon_name="stopped",
                        tip="an earlier result: history only, it authorizes nothing",
                        detail=form_detail(h),
                    )
                )
            if p["result"]:
                r = p["result"]
                why = f"result at seq {r['seq']} by {t.actor_short(r.get('actor'))}: {r.get('summary', '')}"
            elif blocked:
                why = "blocked by " + "; ".join(blocked)
            else:
                why = "every input is available now"
            out.append(
                Node(
                    key=p["phase_id"],
                    cells=(p["name"], p["readiness"], why),
                    status=p["readiness"],
                    detail=form_detail(p),
                    children=kids,
                )
            )
        return out
