"""Retention: a class per item (set when recorded, changed by `set_retention`), and expiry
(`expire_content`), which writes each due item's tombstone (`content.retired`).

The blob itself is removed after the tombstone is committed (store.services.retention), and
only when no live item still names its digest: a rolled-back expiry never loses content, and
a crash between the two leaves a tombstoned blob that the next expiry removes.
"""

from __future__ import annotations

from typing import Any, Literal

import sqlalchemy as sa
from pydantic import Field

from .. import events as ev
from .. import rules
from .. import schema as t
from ..errors import AuthorityRefused, CommandRejected
from ..model import Actor
from ..reads import retention as reads
from ..tx import Tx
from .core import RETENTION, Command, Content, Ident, TaskCommand, handles, new_id, store_content

RETAIN_HELP = (
    "how long the content is kept: keep (default), a duration from now (30d, 12h), or "
    "until-completion+Nd; counted on the database's clock"
)


def parse_class(text: str) -> rules.RetentionClass:
    try:
        return rules.retention_class(text)
    except ValueError as exc:
        raise CommandRejected(str(exc), rule="retention_class") from exc


def set_at_recording(
    tx: Tx,
    task_id: str,
    kind: str,
    item_id: str,
    identity: dict[str, Any],
    retain: str | None,
    actor: Actor,
) -> None:
    """The class a writer gave the content it just recorded (nothing for keep, the default:
    an item without a class is kept, as every item before retention was)."""
    if retain is None:
        return
    cls = parse_class(retain)
    if cls.keeps:
        return
    _emit_class(tx, task_id, kind, item_id, identity, actor, cls, actor, "")


def _emit_class(
    tx: Tx,
    task_id: str,
    kind: str,
    item_id: str,
    identity: dict[str, Any],
    written_by: Actor,
    cls: rules.RetentionClass,
    actor: Actor,
    reason: str,
) -> None:
    tx.emit(
        task_id,
        ev.RetentionSet(
            item_kind=kind,  # type: ignore[arg-type]  # one of RETAINED_KINDS
            item_id=item_id,
            digest=identity["digest"],
            size=identity["size"],
            media_type=identity["media_type"],
            written_by=written_by,
            retain=cls.text,
            due_at=rules.retention_due(cls, tx.now, None),
            reason=reason,
        ),
        actor,
    )


class SetRetention(TaskCommand):
    """Change how long an item's content is kept (store.rules.retain_refusal says who may)."""

    type: Literal["set_retention"] = "set_retention"
    item: str = Field(
        min_length=1,
        max_length=160,
        description="the item: ARTIFACT@VERSION (report@2), an evidence id, or a note id",
    )
    retain: str = Field(min_length=1, max_length=48, description=RETAIN_HELP)
    reason: str = ""


class ExpireContent(Command):
    """Retire every item due now on the database's clock: a tombstone each (a person's act)."""

    type: Literal["expire_content"] = "expire_content"
    task_id: Ident | None = Field(default=None, description="one task (default: every task)")


def _find(tx: Tx, task_id: str, item: str) -> tuple[str, dict[str, Any], Actor]:
    """(item kind, identity, who wrote it) of an item named as the CLI names it."""
    c = tx.conn
    artifact_id, at, version = item.rpartition("@")
    if at and version.lstrip("v").isdigit():
        row = c.execute(
            sa.select(t.artifact_versions).where(
                t.artifact_versions.c.task_id == task_id,
                t.artifact_versions.c.artifact_id == artifact_id,
                t.artifact_versions.c.version == int(version.lstrip("v")),
            )
        ).first()
        if row is not None:
            producer = row.producer
            return (
                "artifact_version",
                {"digest": row.digest, "size": row.size, "media_type": row.media_type},
                Actor.model_validate(producer["actor"]),
            )
    row = c.execute(
        sa.select(t.evidence).where(
            t.evidence.c.task_id == task_id, t.evidence.c.evidence_id == item
        )
    ).first()
    if row is not None:
        ident = {"digest": row.digest, "size": row.size, "media_type": row.media_type}
        return "evidence", ident, Actor.model_validate(row.actor)
    row = c.execute(
        sa.select(t.retention).where(
            t.retention.c.task_id == task_id,
            t.retention.c.item_kind == "note",
            t.retention.c.item_id == item,
        )
    ).first()
    if row is not None:
        ident = {"digest": row.digest, "size": row.size, "media_type": row.media_type}
        return "note", ident, Actor.model_validate(row.written_by)
    raise CommandRejected(
        f"task {task_id} has no item {item!r} (an artifact version is ARTIFACT@VERSION, e.g. "
        "report@2; an evidence id; or a note kept as content)"
    )


@handles(SetRetention)
def _set_retention(tx: Tx, cmd: SetRetention, actor: Actor) -> dict[str, Any]:
    tx.task(cmd.task_id)
    cls = parse_class(cmd.retain)
    kind, identity, writer = _find(tx, cmd.task_id, cmd.item)
    item_id = cmd.item
    if kind == "artifact_version":
        artifact_id, _, version = cmd.item.rpartition("@")
        item_id = reads.artifact_item(artifact_id, int(version.lstrip("v")))
    row = tx.conn.execute(
        sa.select(t.retention).where(
            t.retention.c.task_id == cmd.task_id,
            t.retention.c.item_kind == kind,
            t.retention.c.item_id == item_id,
        )
    ).first()
    refusal = rules.retain_refusal(
        actor.kind,
        actor.id,
        writer.id,
        writer.kind,
        retired=row is not None and row.retired_at is not None,
    )
    if refusal is not None:
        raise AuthorityRefused(refusal.rule, refusal.message)
    _emit_class(tx, cmd.task_id, kind, item_id, identity, writer, cls, actor, cmd.reason)
    return {"item_kind": kind, "item_id": item_id, "retain": cls.text}


def _proved(tx: Tx, task_id: str, kind: str, item_id: str) -> tuple[str, ...]:
    """What the item backed when it was retired, in words the tombstone keeps."""
    out = []
    for c in tx.conn.execute(
        sa.select(t.criteria).where(t.criteria.c.task_id == task_id).order_by(t.criteria.c.position)
    ):
        on = f" on {c.artifact_id} v{c.artifact_version}" if c.artifact_id is not None else ""
        said = f"criterion {c.criterion_id} {c.status}{on}"
        if kind == "evidence" and item_id in (c.evidence_ids or []):
            out.append(said)
        elif kind == "artifact_version" and c.artifact_id is not None:
            judged_on = reads.artifact_item(str(c.artifact_id), int(c.artifact_version or 0))
            if judged_on == item_id:
                out.append(said)
    return tuple(out)


def due_rows(tx_conn: Any, task_ids: list[str], now: str) -> list[tuple[str, Any, str]]:
    """(task id, retention row, due time) of every live item due at `now`."""
    out = []
    for task_id in task_ids:
        completed = reads.completed_at(tx_conn, task_id)
        for r in reads.rows(tx_conn, task_id):
            if r.retired_at is not None:
                continue
            due = reads.due_at(r, completed)
            if due is not None and due <= now:
                out.append((task_id, r, due))
    return out


def task_ids_of(conn: Any, task_id: str | None) -> list[str]:
    if task_id is not None:
        return [task_id]
    q = sa.select(t.retention.c.task_id).distinct().order_by(t.retention.c.task_id)
    return [str(x) for x in conn.execute(q).scalars()]


@handles(ExpireContent)
def _expire(tx: Tx, cmd: ExpireContent, actor: Actor) -> list[dict[str, Any]]:
    refusal = rules.expire_refusal(actor.kind)
    if refusal is not None:
        raise AuthorityRefused(refusal.rule, refusal.message)
    if cmd.task_id is not None:
        tx.task(cmd.task_id)
    retired = []
    for task_id, r, due in due_rows(tx.conn, task_ids_of(tx.conn, cmd.task_id), tx.now):
        proved = _proved(tx, task_id, r.item_kind, r.item_id)
        tx.emit(
            task_id,
            ev.ContentRetired(
                item_kind=r.item_kind,
                item_id=r.item_id,
                digest=r.digest,
                size=int(r.size),
                media_type=r.media_type,
                retain=r.retain,
                due_at=due,
                proved=proved,
            ),
            actor,
        )
        retired.append(
            {
                "task_id": task_id,
                "item_kind": r.item_kind,
                "item_id": r.item_id,
                "digest": r.digest,
                "due_at": due,
                "proved": list(proved),
            }
        )
    return retired


def store_expiring_note(tx: Tx, cmd: Any, actor: Actor) -> str | None:
    """A note given a class other than keep: its text kept as content (`note.stored`) and its
    class set; returns the note's id. None for keep: the note is written as any other."""
    cls = parse_class(str(cmd.retain))
    if cls.keeps:
        return None
    if cmd.visibility != rules.Visibility.SHARED:
        # A private note's blob is part D's (store.commands.core, `note.private`).
        raise CommandRejected(
            "a private note is kept for the life of the record; give it no retention class",
            rule="retention_class",
        )
    note_id = new_id("note")
    content = Content(text=cmd.text, media_type="text/plain; charset=utf-8")
    identity = store_content(tx, cmd.task_id, content, note_id)
    identity.pop("path")
    tx.emit(cmd.task_id, ev.NoteStored(note_id=note_id, kind=cmd.kind, **identity), actor)
    set_at_recording(tx, cmd.task_id, "note", note_id, identity, cmd.retain, actor)
    return note_id


RETENTION.update(set=set_at_recording, note=store_expiring_note)
