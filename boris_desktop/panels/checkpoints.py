"""Checkpoints: the lineage with heads and forks; each checkpoint's reason, author, note."""

from __future__ import annotations

from typing import Any

from .. import text as t
from ..records import Node
from .base import Bundle, TreePanel, json_detail


class CheckpointsPanel(TreePanel):
    title = "Checkpoints"
    headers = ("Checkpoint", "Reason", "Head?", "Author", "Event seq", "At", "Note")

    def summary(self, bundle: Bundle) -> str:
        cps = bundle["task"]["checkpoints"]
        if not cps["checkpoints"]:
            return "No checkpoints yet."
        heads = cps["heads"]
        if len(heads) > 1:
            return (
                f"Forked lineage: {len(heads)} heads ({', '.join(heads)}). "
                "Each branch is shown under the checkpoint it supersedes; neither is picked."
            )
        return f"{len(cps['checkpoints'])} checkpoint(s); head {heads[0] if heads else '—'}."

    def nodes(self, bundle: Bundle) -> list[Node]:
        cps = bundle["task"]["checkpoints"]
        rows = cps["checkpoints"]
        heads = set(cps["heads"])
        forked = len(heads) > 1
        by_id = {c["checkpoint_id"]: c for c in rows}
        children: dict[str, list[dict[str, Any]]] = {}
        roots = []
        for c in rows:
            parents = [p for p in c["supersedes"] if p in by_id]
            if parents:
                # A merge supersedes several: shown under the first, its others named.
                children.setdefault(parents[0], []).append(c)
            else:
                roots.append(c)

        def node(c: dict[str, Any]) -> Node:
            cid = c["checkpoint_id"]
            is_head = cid in heads
            also = [p for p in c["supersedes"][1:]] + list(c.get("merged") or [])
            head_word = ("head (fork)" if forked else "head") if is_head else ""
            return Node(
                key=cid,
                cells=(
                    cid,
                    c["reason"],
                    head_word,
                    t.actor_short(c["author"]),
                    str(c["seq"]),
                    t.when(c["at"]),
                    (c.get("note") or "")
                    + (f" (also supersedes {', '.join(also)})" if also else ""),
                ),
                icon_name=("fork" if forked else "ok") if is_head else "stopped",
                tip=f"chain hash {c['chain_hash']}\nstate digest {c['state_digest']}",
                detail=json_detail({k: v for k, v in c.items() if k not in {"task_id"}}),
                children=[node(k) for k in children.get(cid, [])],
            )

        return [node(c) for c in roots]
