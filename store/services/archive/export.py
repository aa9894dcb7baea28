"""Export: a task's whole record written to one package, atomically."""

from __future__ import annotations

import contextlib
import gzip
import hashlib
import io
import os
import tarfile
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO, cast

import sqlalchemy as sa

from ... import db, migrate, rules, tempfiles
from ... import events as ev
from ... import schema as t
from ...blobs import PREFIX
from ...canonical import canonical_json, parse_json
from ...errors import BlobProblem, StoreError
from ...reads import passkeys, queries
from ...record import Event
from ...signing import keyring
from ...store import Store
from ...version import __version__
from .common import (
    CHECKPOINTS,
    EVENT_COLUMNS,
    EVENTS,
    FORMAT,
    FORMAT_VERSION,
    KEYRING,
    MANIFEST,
    PASSKEYS,
    README,
    SIGNATURES,
    BlobRef,
    blob_refs,
    checkpoint_rows_json,
    pretty,
    private_digests,
)


class ExportFailed(StoreError):
    """The package could not be written; no file was left at its name."""


def export_task(
    store: Store,
    task_id: str,
    out_path: str | os.PathLike[str],
    *,
    force: bool = False,
    include: Iterable[str] = (),
) -> Path:
    """Write the task's package to `out_path` (refusing to replace a file unless `force`).
    `include`: visibility classes carried besides `shared` (`private`)."""
    path, _ = export_with_manifest(store, task_id, out_path, force=force, include=include)
    return path


def export_with_manifest(
    store: Store,
    task_id: str,
    out_path: str | os.PathLike[str],
    *,
    force: bool = False,
    include: Iterable[str] = (),
) -> tuple[Path, dict[str, Any]]:
    """`export_task`, also returning the manifest written.

    Visibility (issue 35 part D): the package carries the classes `rules.export_classes`
    names and says so in the manifest (`visibility`). A private note's event names its text
    by digest and holds none of it, so the event stays in (the chain, the signatures and
    an import verify as they are) while its text's blob stays out unless `private` is
    carried; the manifest lists the withheld notes' seqs."""
    classes = rules.export_classes(include)
    out = Path(out_path)
    _refuse_target(out, force=force)
    record = _read_record(store, task_id)
    # Digest -> the seqs of the private notes whose text stays out of this package.
    withheld = {} if rules.Visibility.PRIVATE in classes else private_digests(record.events)
    blobs = _blobs_carried(store, task_id, record.events, withheld)
    counts = {
        "events": len(record.rows),
        "blobs": len(blobs),
        "checkpoints": len(record.checkpoints),
    }
    # The file's name as a person reads it: a byte that is not UTF-8 shown as \xff.
    shown = os.fsencode(out.name).decode("utf-8", "backslashreplace")
    texts = {
        README: _readme(record.task, counts, record.now, shown).encode("utf-8"),
        EVENTS: b"".join(canonical_json(r).encode("utf-8") + b"\n" for r in record.rows),
        CHECKPOINTS: pretty(record.checkpoints),
        KEYRING: pretty({"required": record.required, "entries": record.ring_rows}),
        SIGNATURES: b"".join(canonical_json(r).encode("utf-8") + b"\n" for r in record.signatures),
        PASSKEYS: pretty(
            {"entries": [{"key": k, "value": _entry_value(v)} for k, v in record.passkeys]}
        ),
    }
    manifest = _manifest(record, classes, withheld, texts, blobs, counts)
    _write_atomically(store, out, task_id, manifest, texts, blobs, force=force)
    return out, manifest


def _refuse_target(out: Path, *, force: bool) -> None:
    """The package's name must be a file's, in a directory that exists; a file there is
    replaced only with `force`."""
    if out.is_dir():
        raise ExportFailed(f"{out} is a directory: give the package's file name")
    if (out.exists() or out.is_symlink()) and not force:
        raise ExportFailed(f"{out} already exists; nothing was written (--force replaces it)")
    if not out.parent.is_dir():
        raise ExportFailed(f"the directory {out.parent} does not exist; nothing was written")


@dataclass(frozen=True)
class _Record:
    """The task's record as one read saw it: its row, its log (stored rows and decoded
    events), checkpoints, the keyring and signatures, and the database's time then."""

    task_id: str
    task: dict[str, Any]
    rows: list[dict[str, Any]]
    events: list[Event]
    checkpoints: list[dict[str, Any]]
    ring_rows: list[dict[str, Any]]
    required: bool
    signatures: list[dict[str, Any]]
    #: The signed entries registering (and revoking) the passkeys the task's decisions
    #: were made with: settings key and value.
    passkeys: list[tuple[str, str]]
    now: str


def _read_record(store: Store, task_id: str) -> _Record:
    """Everything the package holds but the blobs, in one read (one snapshot)."""
    with store.read() as conn:
        events = list(store.load_events(conn, task_id))
        return _Record(
            task_id=task_id,
            task=queries.task_row(conn, task_id),
            rows=[
                {n: r._mapping[n] for n in EVENT_COLUMNS}
                for r in conn.execute(
                    sa.select(t.events)
                    .where(t.events.c.task_id == task_id)
                    .order_by(t.events.c.seq)
                )
            ],
            events=events,
            checkpoints=checkpoint_rows_json(conn, task_id),
            ring_rows=keyring.rows(conn),
            required=keyring.required(conn),
            signatures=[
                {"seq": int(r.seq), "key_id": str(r.key_id), "signature": str(r.signature)}
                for r in conn.execute(
                    sa.select(t.signatures.c.seq, t.signatures.c.key_id, t.signatures.c.signature)
                    .where(t.signatures.c.task_id == task_id)
                    .order_by(t.signatures.c.seq)
                )
            ],
            passkeys=passkeys.entries_of(conn, _passkeys_used(events)),
            now=db.database_now(conn),
        )


def _entry_value(text: str) -> Any:
    """A passkey entry's value as JSON, or its text when it is none (a database written by
    hand): carried as it is, for the import to refuse in one line and verify to name."""
    try:
        return parse_json(text)
    except ValueError:
        return text


def _passkeys_used(events: Iterable[Event]) -> set[str]:
    """The credentials of the passkeys the task's decisions were made with."""
    return {
        str(e.payload.assertion.get("credential_id"))
        for e in events
        if isinstance(e.payload, ev.ApprovalDecided) and e.payload.assertion is not None
    }


def _blobs_carried(
    store: Store, task_id: str, events: list[Event], withheld: dict[str, list[int]]
) -> list[tuple[str, int, BlobRef]]:
    """The blobs the package carries: each the events name, but a private note's text not
    carried (`withheld`), retired content that is gone, and optional content unreadable
    now. A required blob that cannot be read refuses the export."""
    blobs: list[tuple[str, int, BlobRef]] = []
    # Content retired by its retention class travels as its tombstone only (issue 35 part R).
    from ..retention import tombstoned

    gone = tombstoned(events)
    for digest, ref in sorted(blob_refs(events).items()):
        if digest in withheld and not ref.required:
            continue
        if digest in gone and store.blobs.problem(digest, verify=False) is not None:
            continue
        problem = store.blobs.problem(digest, verify=False)
        if problem is not None:
            if ref.required:
                raise ExportFailed(
                    f"cannot export task {task_id}: "
                    f"{BlobProblem(digest, problem, ref.owner)}; nothing was written"
                )
            continue
        blobs.append((digest, store.blobs.size_of(digest, ref.owner), ref))
    return blobs


def _manifest(
    record: _Record,
    classes: tuple[str, ...],
    withheld: dict[str, list[int]],
    texts: dict[str, bytes],
    blobs: list[tuple[str, int, BlobRef]],
    counts: dict[str, int],
) -> dict[str, Any]:
    """The package's manifest: what it is, of which task and store, each member's digest
    and size, whether it is signed, and what visibility it carries and withholds."""
    rows = record.rows
    formats: dict[str, int] = {}
    for r in rows:
        formats[r["type"]] = max(formats.get(r["type"], 0), int(r["format"]))
    last = rows[-1]
    members: dict[str, dict[str, Any]] = {
        name: _member_digest(data) for name, data in texts.items()
    }
    for digest, size, _ in blobs:
        members[f"blobs/{digest[len(PREFIX) :]}"] = {"sha256": digest[len(PREFIX) :], "size": size}
    return {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "boris_version": __version__,
        "schema_revision": migrate.HEAD,
        "event_formats": dict(sorted(formats.items())),
        "task_id": record.task_id,
        "title": record.task["title"],
        "exported_at": record.now,
        "counts": counts,
        "event_count": len(rows),
        "head_seq": last["seq"],
        "head_hash": last["hash"],
        "signed": record.required or bool(record.ring_rows) or bool(record.signatures),
        "signature_count": len(record.signatures),
        "members": members,
        "visibility": {
            "carried": list(classes),
            "withheld": {
                rules.Visibility.PRIVATE.value: sorted(
                    s for seqs in withheld.values() for s in seqs
                )
            },
        },
    }


def _write_atomically(
    store: Store,
    out: Path,
    task_id: str,
    manifest: dict[str, Any],
    texts: dict[str, bytes],
    blobs: list[tuple[str, int, BlobRef]],
    *,
    force: bool,
) -> None:
    """Write the package beside its name, synced, then rename it into place: no file is
    left at the name unless it is whole."""
    fd, partial_name = _partial(out)
    partial = Path(partial_name)
    try:
        with os.fdopen(fd, "wb") as raw:
            _write_package(store, raw, manifest, texts, blobs)
            raw.flush()
            os.fsync(raw.fileno())
        _install(partial, out, force=force)
    except BlobProblem as exc:
        partial.unlink(missing_ok=True)
        raise ExportFailed(f"cannot export task {task_id}: {exc}; nothing was written") from exc
    except BaseException:
        partial.unlink(missing_ok=True)
        raise


def _member_digest(data: bytes) -> dict[str, Any]:
    return {"sha256": hashlib.sha256(data).hexdigest(), "size": len(data)}


def _partial(out: Path) -> tuple[int, str]:
    # Created readable by its owner only (mkstemp's 0600), as the store's own files are: a
    # task's record may hold anything the agent saw.
    # Locked while written, so a later export sweeps only what a killed one left.
    tempfiles.sweep_exports(out)
    return tempfiles.create(out.parent, f"{out.name}.partial-")


def _install(partial: Path, out: Path, *, force: bool) -> None:
    """Rename the finished package into place; without `force`, never over a file that
    appeared meanwhile (a hard link fails if the name exists, where the system has them)."""
    if force:
        os.replace(partial, out)
    else:
        try:
            os.link(partial, out)
        except FileExistsError:
            raise ExportFailed(f"{out} already exists; nothing was written") from None
        except OSError:
            if out.exists():
                raise ExportFailed(f"{out} already exists; nothing was written") from None
            os.replace(partial, out)
        else:
            partial.unlink()
    with contextlib.suppress(OSError):
        dir_fd = os.open(out.parent, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)


class _Hashing:
    """Reads a blob file while hashing it, so what went into the package is what was checked."""

    def __init__(self, f: BinaryIO) -> None:
        self._f = f
        self.sha = hashlib.sha256()
        self.size = 0

    def read(self, n: int = -1) -> bytes:
        data = self._f.read(n)
        self.sha.update(data)
        self.size += len(data)
        return data


def _tar_info(name: str, size: int) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.size = size
    info.mode = 0o644
    info.mtime = int(time.time())
    info.type = tarfile.REGTYPE
    return info


def _write_member(tar: tarfile.TarFile, name: str, data: bytes) -> None:
    tar.addfile(_tar_info(name, len(data)), io.BytesIO(data))


def _write_blob(tar: tarfile.TarFile, store: Store, digest: str, size: int, owner: str) -> None:
    hexpart = digest[len(PREFIX) :]
    try:
        f = open(store.blobs.local_file(digest, owner), "rb")
    except FileNotFoundError:
        raise BlobProblem(digest, "missing", owner) from None
    with f:
        reader = _Hashing(f)
        try:
            tar.addfile(_tar_info(f"blobs/{hexpart}", size), reader)
        except OSError as exc:
            # tarfile's copy says so when the file is shorter than the size it was given.
            if "unexpected end of data" in str(exc):
                raise BlobProblem(digest, "changed while it was exported", owner) from None
            raise
    if reader.sha.hexdigest() != hexpart or reader.size != size:
        raise BlobProblem(digest, "corrupt (content does not match its digest)", owner)


def _write_package(
    store: Store,
    raw: BinaryIO,
    manifest: dict[str, Any],
    texts: dict[str, bytes],
    blobs: list[tuple[str, int, BlobRef]],
) -> None:
    # No file name or time in the gzip header: the partial file's name is not the package's.
    with (
        gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0) as gz,
        tarfile.open(fileobj=cast(Any, gz), mode="w|", format=tarfile.PAX_FORMAT) as tar,
    ):
        # The manifest first: a reader streaming the package sees what to expect.
        _write_member(tar, MANIFEST, pretty(manifest))
        for name, data in texts.items():
            _write_member(tar, name, data)
        for digest, size, ref in blobs:
            _write_blob(tar, store, digest, size, ref.owner)


def _readme(task: dict[str, Any], counts: dict[str, int], now: str, name: str) -> str:
    return f"""This is a Boris task package: the whole durable record of one task.

Task:         {task["task_id"]}
Title:        {task["title"]}
Owner:        {task["owner"]}
Status:       {task["status"]}
Exported at:  {now} by Boris {__version__} (schema {migrate.HEAD})
Contents:     {counts["events"]} events, {counts["checkpoints"]} checkpoints, {counts["blobs"]} blobs

Members:
  manifest.json     versions, counts, the head hash, and the sha256 of every other member
  events.jsonl      the task's event log, one stored event a line, hash-chained from genesis
  checkpoints.json  the task's checkpoints (also recorded in the events)
  keyring.json      the source store's public keys and the actors they name (a signed chain)
  signatures.jsonl  each write's signature: the key and its Ed25519 signature over the chain
                    hash of the write's last event (empty for an unsigned store)
  blobs/<sha256>    artifact versions, evidence and other content the events name by digest

To import it into a store:

  boris import {name}

The import checks every member's digest, the schema and event versions, and the whole hash
chain before it writes anything, and refuses a package that fails any check. Importing the
same package again changes nothing. Approvals that were pending or approved arrive as
history: they are revoked on import and cannot authorize anything in the new store.
A package whose signatures do not verify is refused.

To verify it offline, trusting only public keys you got out of band (boris keys export):

  boris verify-package {name} --keys KEYS_FILE
"""
