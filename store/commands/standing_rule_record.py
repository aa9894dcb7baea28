"""A standing rule's decision judged from the record (issue 42): the call as the task's log
asked it, and whether the rule an `approval.ruled` names proves the decision. Asked by the
rule's command (store.commands.standing_rules), by dispatch (store.commands.authority) and by
`boris verify`; it imports no command machinery, so each of them may import it."""

from __future__ import annotations

import json
from typing import Any

import sqlalchemy as sa

from .. import schema as t
from ..reads import standing_rules as on_record
from ..rules.standing_rules import CallAsked, tool_of, why_not_deciding
from . import policies


def _logged(conn: Any, task_id: str, type_: str, key: str, value: str) -> Any:
    """The first event of this type in the task's log whose payload's `key` is `value`: its
    payload, with its actor's kind and id under `_actor` (None when there is none)."""
    e = t.events
    # Read whole (`all`): a reader that streams (verify's) keeps no cursor open after it.
    for payload, kind, who in conn.execute(
        sa.select(e.c.payload, e.c.actor_kind, e.c.actor_id)
        .where(e.c.task_id == task_id, e.c.type == type_)
        .order_by(e.c.seq)
    ).all():
        p = json.loads(payload)
        if p.get(key) == value:
            p["_actor"] = (str(kind), str(who))
            return p
    return None


def call_from_log(
    conn: Any, task_id: str, approval_id: str, session_id: str | None, at: str | None = None
) -> CallAsked | str:
    """The call an approval asked about, as the task's log recorded it (its request, who
    made it, and its effect's intent), or why the log has none. `at`: judged as of a
    decision made then (dispatch's and verify's reading of a rule's decision): a policy
    reserved after it did not reserve it, and the people it needed are those its request
    recorded (the larger of what it asked and its policy's number then); None: now."""
    if _logged(conn, task_id, "approval.routed", "approval_id", approval_id) is not None:
        return f"approval {approval_id} is routed to named people: no standing rule decides it"
    asked = _logged(conn, task_id, "approval.requested", "approval_id", approval_id)
    if asked is None or not asked.get("effect_id"):
        return f"the log has no request of an effect for approval {approval_id}"
    planned = _logged(conn, task_id, "effect.planned", "effect_id", str(asked["effect_id"]))
    if planned is None:
        return f"the log has no intent for effect {asked['effect_id']}"
    policy = str(asked.get("policy") or "")
    kind, who = asked["_actor"]
    return CallAsked(
        task_id=task_id,
        requester_kind=kind,
        requester_id=who,
        session_id=session_id,
        tool=tool_of(str(planned["target"]), planned.get("tool"), str(planned["kind"])),
        target=str(planned["target"]),
        payload=dict(asked.get("payload") or {}),
        policy=policy,
        needed=max(int(asked.get("approvers") or 1), _policy_needs(conn, policy, at)),
        reserved=_reserved(conn, policy, at),
    )


def _policy_needs(conn: Any, policy: str, at: str | None) -> int:
    if at is not None:
        return 1  # the request recorded its policy's number when it was asked
    return policies.approvers_of(conn, policy) or 1


def _reserved(conn: Any, policy: str, at: str | None) -> bool:
    since = on_record.reserved_since(conn, policy)
    # A reservation's history is its latest setting: one made after the decision did not
    # hold then (a reservation lifted and made again since reads as made at its last time).
    return since is not None and (at is None or since <= at)


def ruled_on_record(
    conn: Any, task_id: str, payload: dict[str, Any], at: str, writer: tuple[str, str]
) -> str | None:
    """Why an `approval.ruled` event (its payload, written at `at` by `writer`, kind and id)
    is not a decision the record proves: no person's grant where it says, a grant not signed
    by a trusted person's key, a rule revoked or expired by then, one that does not cover the
    call as the log asked it, or a writer who is neither the request's requester (deciding it
    as it asks) nor the rule's person (deciding the requests pending when they granted it).
    None when it is proved. Asked by dispatch and by `boris verify`."""
    rule_id = str(payload.get("rule_id"))
    found = on_record.grant_on_record(
        conn, rule_id, str(payload.get("rule_task_id")), int(payload.get("rule_seq") or 0)
    )
    if isinstance(found, str):
        return found
    if found.unsigned is not None:
        return f"rule {rule_id} is not proved a person's: {found.unsigned}"
    person = found.terms.granted_by
    if payload.get("granted_by") != person:
        return f"rule {rule_id} is person:{person}'s, not {payload.get('granted_by')}'s"
    if payload.get("decision") != found.terms.verdict:
        return f"rule {rule_id} decides {found.terms.verdict}, not {payload.get('decision')}"
    call = call_from_log(
        conn, task_id, str(payload.get("approval_id")), payload.get("session_id"), at
    )
    if isinstance(call, str):
        return call
    requester = (call.requester_kind, call.requester_id)
    if writer not in (requester, ("person", person)):
        return (
            f"written by {writer[0]}:{writer[1]}, neither its requester "
            f"({requester[0]}:{requester[1]}) nor person:{person}, whose rule it is"
        )
    return why_not_deciding(found.terms, call, at)
