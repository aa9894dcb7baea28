"""Reads: what the CLI prints with --json and what the desktop app shows.

Every function takes a connection. What the store's face answers is a read model (its
`to_json()` the shape `boris ... --json` prints); the rows the reads assemble from are
plain dicts, internal to store.reads.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from .. import rules
from .. import schema as t
from . import inbox
from .actors import ActorRef
from .inbox import TaskRow
from .read_model import ReadModel


class EventRow(ReadModel):
    """One event of a task's chain as a reader sees it: its payload decoded, its actor.
    What the database filled (the row id, the role that wrote it) is left out."""

    task_id: str
    seq: int
    type: str
    format: int
    #: What the event's writer recorded: its shape is the event type's (store.events).
    payload: dict[str, Any]
    at: str
    prev_hash: str
    hash: str
    actor: ActorRef


class EventFacets(ReadModel):
    """What a task's events can be filtered by: their types and actors, each once."""

    types: list[str]
    actors: list[ActorRef]


def _rows(conn: Connection, table: sa.Table, task_id: str, *order: Any) -> list[dict[str, Any]]:
    q = sa.select(table).where(table.c.task_id == task_id)
    if order:
        q = q.order_by(*order)
    return [dict(r._mapping) for r in conn.execute(q)]


def derive_phases(conn: Connection, task_id: str) -> dict[str, dict[str, Any]]:
    """Readiness of each phase, naming the input that blocks it.

    A phase is `done` when it has a current result, `ready` when every input is available
    now, otherwise `blocked` with a reason per missing input.
    """
    phases = _rows(conn, t.phases, task_id, t.phases.c.position)
    artifacts = {r["artifact_id"]: r["current_version"] for r in _rows(conn, t.artifacts, task_id)}
    approvals = {r["approval_id"]: r["state"] for r in _rows(conn, t.approvals, task_id)}
    return readiness_of(phases, artifacts, approvals)


def readiness_of(
    phases: list[dict[str, Any]], artifacts: dict[str, Any], approvals: dict[str, Any]
) -> dict[str, dict[str, Any]]:
    """`derive_phases` over given rows: the phases (projection rows, in order), each artifact's
    current version and each approval's state. Pure, so that a read can also say what the
    readiness would be after a change (store.reads.phase_views)."""
    by_id = {p["phase_id"]: p for p in phases}
    out: dict[str, dict[str, Any]] = {}
    for p in phases:
        blocked: list[str] = []
        identities: dict[str, str] = {}
        for i in p["inputs"]:
            key = f"{i['kind']}:{i['ref']}"
            if i["kind"] == "artifact":
                if i["ref"] not in artifacts:
                    blocked.append(f"artifact {i['ref']} has no version yet")
                else:
                    identities[key] = f"v{artifacts[i['ref']]}"
            elif i["kind"] == "phase":
                dep = by_id.get(i["ref"])
                result = dep and dep["result"]
                if not result:
                    blocked.append(f"phase {i['ref']} has no current result")
                elif not result["ok"]:
                    blocked.append(f"phase {i['ref']} failed")
                else:
                    identities[key] = f"seq:{result['seq']}"
            else:
                state = approvals.get(i["ref"])
                if state != "approved":
                    blocked.append(f"approval {i['ref']} is {state or 'not requested'}")
                else:
                    identities[key] = "approved"
        result = p["result"]
        readiness = (
            rules.PhaseReadiness.DONE
            if result
            else (rules.PhaseReadiness.BLOCKED if blocked else rules.PhaseReadiness.READY)
        )
        out[p["phase_id"]] = {
            "phase_id": p["phase_id"],
            "name": p["name"],
            "inputs": p["inputs"],
            "readiness": readiness,
            "blocked_by": blocked if not result else [],
            "input_identities": identities,
            "result": result,
            "history": p["history"],
        }
    return out


def task_row(conn: Connection, task_id: str) -> dict[str, Any]:
    row = conn.execute(sa.select(t.tasks).where(t.tasks.c.task_id == task_id)).first()
    if row is None:
        from .deleted import absent  # a person deleted it: say when and by whom

        raise absent(conn, task_id)
    return dict(row._mapping)


def list_tasks(
    conn: Connection, now: str, blob_exists: Callable[[str], bool] | None = None
) -> list[TaskRow]:
    """Every task with what needs the reviewer (store.reads.inbox), most in need first."""
    return inbox.list_tasks(
        lambda sql, params: conn.execute(sa.text(sql), dict(params)), now, blob_exists
    )


def objective(conn: Connection, task_id: str) -> list[dict[str, Any]]:
    return _rows(conn, t.objective_revisions, task_id, t.objective_revisions.c.rev)


def artifacts(conn: Connection, task_id: str) -> list[dict[str, Any]]:
    arts = _rows(conn, t.artifacts, task_id, t.artifacts.c.position)
    versions = _rows(
        conn,
        t.artifact_versions,
        task_id,
        t.artifact_versions.c.artifact_id,
        t.artifact_versions.c.version,
    )
    by_art: dict[str, list[dict[str, Any]]] = {}
    for v in versions:
        by_art.setdefault(v["artifact_id"], []).append(v)
    for a in arts:
        a["versions"] = by_art.get(a["artifact_id"], [])
        a["current"] = next(
            (v for v in a["versions"] if v["version"] == a["current_version"]), None
        )
    return arts


def events(
    conn: Connection,
    task_id: str,
    after_seq: int = 0,
    limit: int | None = None,
    types: list[str] | None = None,
    newest_first: bool = False,
    before_seq: int | None = None,
    actor: tuple[str, str] | None = None,
) -> list[EventRow]:
    """The task's events in seq order (or newest first), optionally a page of them: those
    after `after_seq` and before `before_seq`, of `types`, by `actor` (kind, id)."""
    q = sa.select(t.events).where(t.events.c.task_id == task_id, t.events.c.seq > after_seq)
    if before_seq is not None:
        q = q.where(t.events.c.seq < before_seq)
    if types:
        q = q.where(t.events.c.type.in_(types))
    if actor is not None:
        q = q.where(t.events.c.actor_kind == actor[0], t.events.c.actor_id == actor[1])
    q = q.order_by(t.events.c.seq.desc() if newest_first else t.events.c.seq)
    if limit is not None:
        q = q.limit(limit)
    out = []
    for r in conn.execute(q):
        d = dict(r._mapping)
        # What the database filled (the row id, the role that wrote it) is this store's fact
        # about its row, not part of the event: the same event reads the same in any store.
        for name in t.SERVER_FILLED_EVENT_COLUMNS:
            d.pop(name, None)
        d["payload"] = json.loads(d["payload"])
        d["actor"] = {
            "kind": d.pop("actor_kind"),
            "id": d.pop("actor_id"),
            "name": d.pop("actor_name"),
        }
        out.append(EventRow.model_validate(d))
    return out


def event_count(conn: Connection, task_id: str) -> int:
    q = sa.select(sa.func.count()).where(t.events.c.task_id == task_id)
    return int(conn.execute(q).scalar_one())


def event_facets(conn: Connection, task_id: str) -> EventFacets:
    """What a task's events can be filtered by: their types and actors, each once."""
    ev = t.events.c
    types = conn.execute(
        sa.select(ev.type).where(ev.task_id == task_id).distinct().order_by(ev.type)
    )
    actors = conn.execute(
        sa.select(ev.actor_kind, ev.actor_id, ev.actor_name)
        .where(ev.task_id == task_id)
        .distinct()
        .order_by(ev.actor_kind, ev.actor_id, ev.actor_name)
    )
    return EventFacets(
        types=[r[0] for r in types],
        actors=[ActorRef(kind=k, id=i, name=n) for k, i, n in actors],
    )


def event_type_counts(conn: Connection, task_id: str, after_seq: int = 0) -> dict[str, int]:
    """How many events of each type the task has after `after_seq`: counted by the
    database, not by reading a hundred thousand events into Python."""
    ev = t.events.c
    q = (
        sa.select(ev.type, sa.func.count())
        .where(ev.task_id == task_id, ev.seq > after_seq)
        .group_by(ev.type)
        .order_by(ev.type)
    )
    return {str(k): int(n) for k, n in conn.execute(q)}


def inbox_fetcher(conn: Connection) -> inbox.Fetch:
    """Plain SQL text with named parameters, on this connection (store.reads.inbox's Fetch).
    A list or tuple value is an expanding parameter (`task_id IN :ids`): thousands of ids
    as one bound list, where as many named parameters cost SQLAlchemy's text parsing 0.2 s."""

    def fetch(sql: str, params: Any) -> Any:
        stmt = sa.text(sql)
        lists = [k for k, v in params.items() if isinstance(v, list | tuple)]
        if lists:
            stmt = stmt.bindparams(*(sa.bindparam(k, expanding=True) for k in lists))
        return conn.execute(stmt, dict(params))

    return fetch
