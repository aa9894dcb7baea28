"""Approvals: none consumed more than once, none consumed that the task never requested;
each decided once (or once by each person of its quorum, until it is settled), by a person
who did not request it (store.rules.decider_refusal, judged in the authority replay)."""

from __future__ import annotations

from collections import defaultdict

from ... import events as ev
from ... import rules
from ...record import Event
from .findings import AuthorityFinding, TaskFindings


class ApprovalsCheck:
    """The approvals requested, decided and consumed in the log, kept as it streams by
    (`see`), checked once it has ended (`check`)."""

    def __init__(self, found: TaskFindings) -> None:
        self.found = found
        self.requested: set[str] = set()
        self.decided: dict[str, list[int]] = defaultdict(list)
        # Each decision as rules.why_decided_again reads it, and each request's quorum.
        self.decisions: dict[str, list[tuple[str, str, bool, int | None]]] = defaultdict(list)
        self.asked: dict[str, int | None] = {}
        self.consumed: dict[str, list[int]] = defaultdict(list)
        self.unknown_consumed: list[tuple[int, str]] = []

    def see(self, e: Event) -> None:
        p = e.payload
        if isinstance(p, ev.ApprovalRequested):
            self.requested.add(p.approval_id)
            self.asked[p.approval_id] = p.approvers
        elif isinstance(p, ev.ApprovalDecided):
            self.decided[p.approval_id].append(e.seq)
            self.decisions[p.approval_id].append(
                (p.decision, e.actor.id, p.edited is not None, p.needed)
            )
        elif isinstance(p, ev.ApprovalConsumed):
            self.consumed[p.approval_id].append(e.seq)
            if p.approval_id not in self.requested:
                self.unknown_consumed.append(
                    (
                        e.seq,
                        f"seq {e.seq} consumes approval {p.approval_id}, which this task "
                        "never requested before it",
                    )
                )

    def check(self, bad_deciders: list[tuple[int, str, str, str]]) -> None:
        """`bad_deciders`: the decisions the authority replay refused (seq, message, actor,
        rule), said here with the approvals' other problems."""
        found = self.found
        for seq, message in self.unknown_consumed:
            found.problem("approval_unknown", message, seq)
        for seq, message, actor, rule in bad_deciders:
            found.problems.append(
                AuthorityFinding(
                    found.task_id, "approval_decider", message, seq=seq, actor=actor, rule=rule
                )
            )
        for approval_id, seqs in self.decided.items():
            # Several people may approve one request (its quorum), each once, until it is
            # settled; nothing is decided after that.
            why = rules.why_decided_again(self.decisions[approval_id], self.asked.get(approval_id))
            if len(seqs) > 1 and why is not None:
                found.problem(
                    "approval_redecided",
                    f"approval {approval_id} is decided {len(seqs)} times "
                    f"(seqs {', '.join(map(str, seqs))}); {why}",
                )
        for approval_id, seqs in self.consumed.items():
            if len(seqs) > 1:
                found.problem(
                    "approval_reused",
                    f"approval {approval_id} is consumed {len(seqs)} times "
                    f"(seqs {', '.join(map(str, seqs))}); an approval is used at most once",
                )
