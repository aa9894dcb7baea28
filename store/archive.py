"""Task packages: one file holding a task's whole record, to move it to another store.

`export_task` writes a package; `import_package` verifies one completely and only then
writes it, in one transaction.

The format is a gzip-compressed tar (`.tar.gz`), not a zip:

- a tar is one sequential stream, so the importer reads it once, front to back, through a
  counter that limits the bytes actually decompressed. A zip describes each member twice
  (its local header and the central directory), which can disagree (overlapping entries are
  the classic zip bomb and parser-confusion trick), and reading one needs seeking;
- each tar header states the member's type (regular file, symbolic link, hard link, device,
  directory), so links are refused by type, not guessed from platform-specific mode bits;
- `tar tzf` lists it anywhere, and Python reads and writes it with the standard library.

Nothing is ever extracted to the file system: members are read into memory one at a time,
within limits, and hashed.

Members (every one a regular file):

- `manifest.json`: format and version, the Boris version and schema revision that wrote it,
  the event payload formats used, the task id, event count, head seq and head hash, and the
  sha256 and size of every other member;
- `events.jsonl`: each stored event row, one canonical JSON object a line, with the payload as
  the stored canonical JSON text, so every chain hash recomputes exactly;
- `checkpoints.json`: the task's checkpoint rows (they are also in the events; this is what an
  importer compares its replay with, and what a person reads);
- `blobs/<hex>`: every blob the events reference that the store holds (artifact versions and
  evidence must be there; an effect's intended content and observed states when present);
- `README.txt`: what this is and how to import it.

A missing or corrupt artifact or evidence blob refuses the export, naming the digest and its
owner. A package is a claim of a whole, verifiable record: the importer could not tell a blob
lost at the source from one stripped in transit, and would hold a task whose criteria rest on
content it cannot show. The source store already reports the problem (`boris show`), where it
can be repaired before exporting again.

An import reads the package twice through the same open file. The first pass refuses hostile
members (absolute or climbing names, backslashes, NUL, links, devices, directories, duplicates,
unknown names, too many or too large members, more decompressed bytes than MAX_TOTAL_BYTES)
and hashes every member; then the manifest's versions, every digest, the hash chain from
genesis, the payload formats, the blobs the events need and the checkpoints are verified. Only
then, in one transaction, the event rows are inserted as they are and replayed into the
projections, and the second pass puts each blob (verified again) before the commit. A task
already here with the same history is a no-op; a different history under its id is refused.

Approvals arrive as history, never as live authority: an approval that was pending or
approved in the package is revoked on import by an `approval.retired` event appended (by the
system) after the imported chain, in the same transaction, so it can neither be decided nor
used to dispatch here.
"""

from __future__ import annotations

import contextlib
import dataclasses
import gzip
import hashlib
import io
import json
import os
import re
import tarfile
import time
import zlib
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import IO, Any, BinaryIO, Self, cast

import sqlalchemy as sa
from pydantic import ValidationError
from sqlalchemy.engine import Connection

from . import db, migrate, projections, queries, tempfiles
from . import events as ev
from . import schema as t
from .blobs import CHUNK, PREFIX
from .canonical import GENESIS_HASH, canonical_json, chain_hash, digest_of
from .errors import BlobProblem, CommandRejected, StoreError, UnknownEventFormat
from .model import SYSTEM, Actor
from .record import Event, stored_body
from .store import Store
from .tx import Tx
from .version import __version__

FORMAT = "boris-task-package"
#: The package layout this program writes; it reads this and every older one.
FORMAT_VERSION = 1

# Limits on what an import reads. Sizes count bytes as they are decompressed, never the sizes
# a header claims; each pass over the package is limited on its own.
MAX_MEMBERS = 100_000
MAX_MEMBER_BYTES = 512 * 1024 * 1024
MAX_TOTAL_BYTES = 4 * 1024 * 1024 * 1024
#: A pax or GNU long-name header is read whole into memory by tarfile: keep it small.
MAX_HEADER_BYTES = 64 * 1024

MANIFEST = "manifest.json"
EVENTS = "events.jsonl"
CHECKPOINTS = "checkpoints.json"
README = "README.txt"
_TEXT_MEMBERS = (MANIFEST, README, EVENTS, CHECKPOINTS)
_BLOB_MEMBER = re.compile(r"blobs/([0-9a-f]{64})")
_DIGEST = re.compile(r"sha256:[0-9a-f]{64}")
_HASH = re.compile(r"[0-9a-f]{64}")

_EVENT_COLUMNS = tuple(c.name for c in t.events.columns if c.name != "id")
_INT_COLUMNS = frozenset({"seq", "format"})
RETIRE_REASON = "imported from an archive: approvals are history here"


class PackageRefused(CommandRejected):
    """An import refused before anything was written; the message names what is wrong."""


class PackageTooLarge(PackageRefused):
    """The package decompresses to more than MAX_TOTAL_BYTES; `streamed` is how many bytes had
    been decompressed when reading stopped."""

    def __init__(self, message: str, streamed: int) -> None:
        super().__init__(message)
        self.streamed = streamed


def _refuse(message: str) -> PackageRefused:
    return PackageRefused(f"{message}; nothing was imported")


# --- what a task's events reference ---------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class BlobRef:
    owner: str
    # Artifact versions and evidence must travel with the record; an effect's intended
    # content or an observed state travels when the store holds it.
    required: bool
    size: int | None
    seq: int


def blob_refs(events: Iterable[Event]) -> dict[str, BlobRef]:
    """Every blob digest the events name, with its first owner (a required one wins)."""
    refs: dict[str, BlobRef] = {}

    def note(digest: str | None, owner: str, required: bool, size: int | None, seq: int) -> None:
        if digest is None or (not required and not _DIGEST.fullmatch(digest)):
            return
        old = refs.get(digest)
        if old is None or (required and not old.required):
            refs[digest] = BlobRef(owner, required, size, seq)

    for e in events:
        p = e.payload
        if isinstance(p, ev.ArtifactVersionRecorded):
            note(p.digest, f"artifact {p.artifact_id} v{p.version}", True, p.size, e.seq)
        elif isinstance(p, ev.EvidenceAttached):
            note(p.digest, f"evidence {p.evidence_id}", True, p.size, e.seq)
        elif isinstance(p, ev.EffectPlanned | ev.EffectRevised):
            owner = f"effect {p.effect_id}'s intended content"
            note(p.intended.digest, owner, False, p.intended.size, e.seq)
            if isinstance(p, ev.EffectPlanned) and p.pre_state is not None:
                pre = p.pre_state
                note(pre.digest, f"effect {p.effect_id}'s pre-state", False, pre.size, e.seq)
        elif isinstance(p, ev.ObservationRecorded):
            note(p.state.digest, f"observation {p.observation_id}", False, p.state.size, e.seq)
    return refs


def _checkpoint_rows(conn: Connection, task_id: str) -> list[dict[str, Any]]:
    """The task's checkpoint rows as JSON values, in a stable order."""
    from .checkpoint_reads import checkpoint_rows

    out: list[dict[str, Any]] = json.loads(json.dumps(checkpoint_rows(conn, task_id)))
    return out


# --- export ---------------------------------------------------------------------------------


class ExportFailed(StoreError):
    """The package could not be written; no file was left at its name."""


def export_task(
    store: Store, task_id: str, out_path: str | os.PathLike[str], *, force: bool = False
) -> Path:
    """Write the task's package to `out_path` (refusing to replace a file unless `force`)."""
    path, _ = export_with_manifest(store, task_id, out_path, force=force)
    return path


def export_with_manifest(
    store: Store, task_id: str, out_path: str | os.PathLike[str], *, force: bool = False
) -> tuple[Path, dict[str, Any]]:
    """`export_task`, also returning the manifest written."""
    out = Path(out_path)
    if out.is_dir():
        raise ExportFailed(f"{out} is a directory: give the package's file name")
    if (out.exists() or out.is_symlink()) and not force:
        raise ExportFailed(f"{out} already exists; nothing was written (--force replaces it)")
    if not out.parent.is_dir():
        raise ExportFailed(f"the directory {out.parent} does not exist; nothing was written")
    with store.read() as conn:
        task = queries.task_row(conn, task_id)
        rows = [
            {n: r._mapping[n] for n in _EVENT_COLUMNS}
            for r in conn.execute(
                sa.select(t.events).where(t.events.c.task_id == task_id).order_by(t.events.c.seq)
            )
        ]
        events = list(store.load_events(conn, task_id))
        checkpoints = _checkpoint_rows(conn, task_id)
        now = db.database_now(conn)
    blobs: list[tuple[str, int, BlobRef]] = []
    for digest, ref in sorted(blob_refs(events).items()):
        problem = store.blobs.problem(digest, verify=False)
        if problem is not None:
            if ref.required:
                raise ExportFailed(
                    f"cannot export task {task_id}: "
                    f"{BlobProblem(digest, problem, ref.owner)}; nothing was written"
                )
            continue
        blobs.append((digest, store.blobs.path_of(digest).stat().st_size, ref))

    events_bytes = b"".join(canonical_json(r).encode("utf-8") + b"\n" for r in rows)
    checkpoints_bytes = _pretty(checkpoints)
    formats: dict[str, int] = {}
    for r in rows:
        formats[r["type"]] = max(formats.get(r["type"], 0), int(r["format"]))
    last = rows[-1]
    counts = {"events": len(rows), "blobs": len(blobs), "checkpoints": len(checkpoints)}
    readme = _readme(task, counts, now, out.name).encode("utf-8")
    members: dict[str, dict[str, Any]] = {
        README: _member_digest(readme),
        EVENTS: _member_digest(events_bytes),
        CHECKPOINTS: _member_digest(checkpoints_bytes),
    }
    for digest, size, _ in blobs:
        members[f"blobs/{digest[len(PREFIX) :]}"] = {"sha256": digest[len(PREFIX) :], "size": size}
    manifest = {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "boris_version": __version__,
        "schema_revision": migrate.HEAD,
        "event_formats": dict(sorted(formats.items())),
        "task_id": task_id,
        "title": task["title"],
        "exported_at": now,
        "counts": counts,
        "event_count": len(rows),
        "head_seq": last["seq"],
        "head_hash": last["hash"],
        "members": members,
    }
    fd, partial_name = _partial(out)
    partial = Path(partial_name)
    try:
        with os.fdopen(fd, "wb") as raw:
            _write_package(store, raw, manifest, readme, events_bytes, checkpoints_bytes, blobs)
            raw.flush()
            os.fsync(raw.fileno())
        _install(partial, out, force=force)
    except BlobProblem as exc:
        partial.unlink(missing_ok=True)
        raise ExportFailed(f"cannot export task {task_id}: {exc}; nothing was written") from exc
    except BaseException:
        partial.unlink(missing_ok=True)
        raise
    return out, manifest


def _pretty(value: Any) -> bytes:
    return (json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False) + "\n").encode()


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
        f = open(store.blobs.path_of(digest), "rb")
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
    readme: bytes,
    events_bytes: bytes,
    checkpoints_bytes: bytes,
    blobs: list[tuple[str, int, BlobRef]],
) -> None:
    # No file name or time in the gzip header: the partial file's name is not the package's.
    with (
        gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0) as gz,
        tarfile.open(fileobj=cast(Any, gz), mode="w|", format=tarfile.PAX_FORMAT) as tar,
    ):
        # The manifest first: a reader streaming the package sees what to expect.
        _write_member(tar, MANIFEST, _pretty(manifest))
        _write_member(tar, README, readme)
        _write_member(tar, EVENTS, events_bytes)
        _write_member(tar, CHECKPOINTS, checkpoints_bytes)
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
  blobs/<sha256>    artifact versions, evidence and other content the events name by digest

To import it into a store:

  boris import {name}

The import checks every member's digest, the schema and event versions, and the whole hash
chain before it writes anything, and refuses a package that fails any check. Importing the
same package again changes nothing. Approvals that were pending or approved arrive as
history: they are revoked on import and cannot authorize anything in the new store.
"""


# --- import: reading the package ----------------------------------------------------------


class _Counted:
    """The decompressed stream, counted: it refuses to hand out more than MAX_TOTAL_BYTES."""

    def __init__(self, gz: gzip.GzipFile) -> None:
        self._gz = gz
        self.streamed = 0
        self.member = ""

    def read(self, n: int = -1) -> bytes:
        allowance = MAX_TOTAL_BYTES - self.streamed
        want = allowance + 1 if n < 0 else min(n, allowance + 1)
        data = self._gz.read(want)
        self.streamed += len(data)
        if self.streamed > MAX_TOTAL_BYTES:
            where = f" (in member {self.member!r})" if self.member else ""
            raise PackageTooLarge(
                f"the package decompresses to more than {MAX_TOTAL_BYTES} bytes{where}; "
                "reading stopped there (a compression bomb?); nothing was imported",
                self.streamed,
            )
        return data


_EXTENDED_HEADERS = frozenset(
    {
        tarfile.XHDTYPE,
        tarfile.XGLTYPE,
        tarfile.SOLARIS_XHDTYPE,
        tarfile.GNUTYPE_LONGNAME,
        tarfile.GNUTYPE_LONGLINK,
    }
)


class _TarInfo(tarfile.TarInfo):
    """Refuses an extended header too large to read into memory before tarfile reads it."""

    @classmethod
    def frombuf(cls, buf: bytes | bytearray, encoding: str, errors: str) -> Self:
        obj = super().frombuf(buf, encoding, errors)
        if obj.type in _EXTENDED_HEADERS and obj.size > MAX_HEADER_BYTES:
            raise _refuse(
                f"the package has an extended tar header of {obj.size} bytes "
                f"(the limit is {MAX_HEADER_BYTES})"
            )
        return obj


def _name_problem(name: str) -> str | None:
    if not name:
        return "has an empty name"
    if "\x00" in name:
        return "has a NUL byte in its name"
    if "\\" in name:
        return "has a backslash in its name"
    if name.startswith("/") or re.match(r"[A-Za-z]:", name):
        return "is an absolute path"
    if ".." in name.split("/"):
        return "climbs out of the package (..)"
    if name not in _TEXT_MEMBERS and not _BLOB_MEMBER.fullmatch(name):
        return "is not a member a Boris package has"
    return None


def _type_problem(info: tarfile.TarInfo) -> str | None:
    if info.issym():
        return f"is a symbolic link (to {info.linkname!r})"
    if info.islnk():
        return f"is a hard link (to {info.linkname!r})"
    if info.isdir():
        return "is a directory where a file is expected"
    if info.ischr() or info.isblk():
        return "is a device"
    if info.isfifo():
        return "is a named pipe"
    if info.type not in (tarfile.REGTYPE, tarfile.AREGTYPE) or info.sparse is not None:
        return f"is not a regular file (tar type {info.type!r})"
    return None


Visit = Callable[[str, Iterator[bytes]], None]


def _walk(label: str, raw: BinaryIO, visit: Visit) -> None:
    """Stream every member of the package through `visit`, refusing anything hostile."""
    raw.seek(0)
    try:
        with gzip.GzipFile(fileobj=raw, mode="rb") as gz:
            counted = _Counted(gz)
            tar = tarfile.open(fileobj=cast(Any, counted), mode="r|", tarinfo=_TarInfo)
            with tar:
                seen: set[str] = set()
                for info in tar:
                    name = info.name
                    counted.member = name
                    problem = _name_problem(name) or _type_problem(info)
                    if problem is not None:
                        raise _refuse(f"member {name!r} {problem}")
                    if name in seen:
                        raise _refuse(f"member {name!r} appears twice")
                    seen.add(name)
                    if len(seen) > MAX_MEMBERS:
                        raise _refuse(f"the package has more than {MAX_MEMBERS} members")
                    if info.size > MAX_MEMBER_BYTES:
                        raise _refuse(_too_large(name, info.size))
                    f = tar.extractfile(info)
                    if f is None:  # pragma: no cover - a regular file always has a reader
                        raise _refuse(f"member {name!r} cannot be read")
                    visit(name, _chunks(name, f))
    except (tarfile.TarError, EOFError, zlib.error, gzip.BadGzipFile) as exc:
        raise _refuse(f"{label} is not a readable .tar.gz package ({exc})") from None


def _too_large(name: str, size: int) -> str:
    return f"member {name!r} is larger than the limit of {MAX_MEMBER_BYTES} bytes ({size})"


def _chunks(name: str, f: IO[bytes]) -> Iterator[bytes]:
    n = 0
    while chunk := f.read(CHUNK):
        n += len(chunk)
        if n > MAX_MEMBER_BYTES:
            raise _refuse(_too_large(name, n))
        yield chunk


@dataclasses.dataclass
class _Scan:
    digests: dict[str, tuple[str, int]] = dataclasses.field(default_factory=dict)
    texts: dict[str, bytes] = dataclasses.field(default_factory=dict)


def _scan(label: str, raw: BinaryIO) -> _Scan:
    scan = _Scan()

    def visit(name: str, chunks: Iterator[bytes]) -> None:
        h = hashlib.sha256()
        size = 0
        keep: list[bytes] | None = [] if name in _TEXT_MEMBERS else None
        for chunk in chunks:
            h.update(chunk)
            size += len(chunk)
            if keep is not None:
                keep.append(chunk)
        scan.digests[name] = (h.hexdigest(), size)
        if keep is not None:
            scan.texts[name] = b"".join(keep)

    _walk(label, raw, visit)
    return scan


# --- import: verifying it -----------------------------------------------------------------


@dataclasses.dataclass
class _Plan:
    task_id: str
    manifest: dict[str, Any]
    rows: list[dict[str, Any]]
    events: list[Event]
    checkpoints: list[dict[str, Any]]
    blobs: dict[str, tuple[str, int]]  # member name -> (sha256 hex, size)
    approvals: set[str]

    @property
    def head_seq(self) -> int:
        return int(self.rows[-1]["seq"])

    @property
    def head_hash(self) -> str:
        return str(self.rows[-1]["hash"])


def _json(name: str, data: bytes) -> Any:
    try:
        return json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise _refuse(f"member {name!r} is not valid JSON ({exc})") from None


def _check_versions(m: dict[str, Any]) -> None:
    if m.get("format") != FORMAT:
        raise _refuse(f"{MANIFEST} does not describe a Boris task package")
    written_by = m.get("boris_version", "an unknown version")
    version = m.get("format_version")
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        raise _refuse(f"{MANIFEST} has no valid format_version")
    if version > FORMAT_VERSION:
        raise _refuse(
            f"the package is in format {version}, written by Boris {written_by}; this program "
            f"(Boris {__version__}) reads package formats up to {FORMAT_VERSION}"
        )
    rev = m.get("schema_revision")
    if rev not in migrate.REVISIONS:
        raise _refuse(
            f"the package has schema {rev}, written by Boris {written_by}; this program "
            f"(Boris {__version__}) reads schema up to {migrate.HEAD}"
        )
    formats = m.get("event_formats")
    if not isinstance(formats, dict):
        raise _refuse(f"{MANIFEST} has no event_formats")
    known = ev.registered_types()
    for type_name, fmt in sorted(formats.items()):
        cls = known.get(type_name)
        if cls is None:
            raise _refuse(
                f"the package has events of type {type_name!r}, which this program "
                f"(Boris {__version__}) does not know (written by Boris {written_by})"
            )
        if not isinstance(fmt, int) or isinstance(fmt, bool) or fmt > cls.FORMAT:
            raise _refuse(
                f"the package has {type_name!r} events in format {fmt}, written by Boris "
                f"{written_by}; this program reads that event up to format {cls.FORMAT}"
            )


def _check_digests(m: dict[str, Any], scan: _Scan) -> dict[str, tuple[str, int]]:
    listed = m.get("members")
    if not isinstance(listed, dict):
        raise _refuse(f"{MANIFEST} lists no members")
    for name in (README, EVENTS, CHECKPOINTS):
        if name not in listed and name not in scan.digests:
            raise _refuse(f"the package has no member {name!r}")
    for name in sorted(scan.digests):
        if name != MANIFEST and name not in listed:
            raise _refuse(f"member {name!r} is not listed in {MANIFEST}")
    for name, want in sorted(listed.items()):
        if name == MANIFEST or _name_problem(name) is not None:
            raise _refuse(f"{MANIFEST} lists {name!r}, which a Boris package cannot have")
        if name not in scan.digests:
            raise _refuse(f"member {name!r} listed in {MANIFEST} is missing from the package")
        got_sha, got_size = scan.digests[name]
        if not isinstance(want, dict) or want.get("sha256") != got_sha:
            claimed = want.get("sha256") if isinstance(want, dict) else None
            raise _refuse(
                f"member {name!r} does not match its digest in {MANIFEST} "
                f"(the manifest says {claimed}, its content is {got_sha})"
            )
        if want.get("size") != got_size:
            raise _refuse(
                f"member {name!r} has {got_size} bytes; {MANIFEST} says {want.get('size')}"
            )
        blob = _BLOB_MEMBER.fullmatch(name)
        if blob is not None and blob.group(1) != got_sha:
            raise _refuse(f"member {name!r} does not match its name (its content is {got_sha})")
    return {n: d for n, d in scan.digests.items() if _BLOB_MEMBER.fullmatch(n)}


def _event_row(n: int, line: bytes) -> dict[str, Any]:
    where = f"{EVENTS} line {n}"
    try:
        row = json.loads(line.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise _refuse(f"{where} is not valid JSON ({exc})") from None
    if not isinstance(row, dict) or set(row) != set(_EVENT_COLUMNS):
        raise _refuse(
            f"{where} is not a stored event (it needs exactly {', '.join(_EVENT_COLUMNS)})"
        )
    for col in t.events.columns:
        if col.name == "id":
            continue
        value = row[col.name]
        if col.name in _INT_COLUMNS:
            if not isinstance(value, int) or isinstance(value, bool):
                raise _refuse(f"{where}: {col.name} is not an integer")
        elif not isinstance(value, str):
            raise _refuse(f"{where}: {col.name} is not a string")
        else:
            length = getattr(col.type, "length", None)
            if length is not None and len(value) > length:
                raise _refuse(f"{where}: {col.name} is longer than {length} characters")
    return row


def _check_events(m: dict[str, Any], data: bytes) -> tuple[list[dict[str, Any]], list[Event]]:
    task_id = m.get("task_id")
    if not isinstance(task_id, str) or not task_id:
        raise _refuse(f"{MANIFEST} names no task")
    lines = data.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    if not lines:
        raise _refuse(f"{EVENTS} holds no events")
    rows: list[dict[str, Any]] = []
    events: list[Event] = []
    prev = GENESIS_HASH
    for n, line in enumerate(lines, 1):
        row = _event_row(n, line)
        seq = row["seq"]
        if seq != n:
            raise _refuse(f"{EVENTS} line {n} has seq {seq}, expected {n} (a gap or reordering)")
        what = f"event seq {seq} ({row['type']})"
        if row["task_id"] != task_id:
            raise _refuse(f"{what} belongs to task {row['task_id']!r}, not {task_id!r}")
        if row["prev_hash"] != prev:
            raise _refuse(
                f"{what} does not follow the event before it: its prev_hash is "
                f"{row['prev_hash']}, the chain's hash there is {prev}"
            )
        if not _HASH.fullmatch(row["hash"]):
            raise _refuse(f"{what} has no valid hash")
        try:
            payload = json.loads(row["payload"])
        except (ValueError, RecursionError) as exc:
            raise _refuse(f"{what}: its payload is not valid JSON ({exc})") from None
        if not isinstance(payload, dict):
            raise _refuse(f"{what}: its payload is not a JSON object")
        if canonical_json(payload) != row["payload"]:
            raise _refuse(f"{what}: its payload is not in canonical form")
        try:
            actor = Actor(kind=row["actor_kind"], id=row["actor_id"], name=row["actor_name"])
        except ValidationError:
            raise _refuse(f"{what} has no valid actor") from None
        body = stored_body(task_id, seq, row["type"], row["format"], payload, actor, row["at"])
        if chain_hash(prev, body) != row["hash"]:
            raise _refuse(f"{what} does not match its hash: the event was altered")
        try:
            decoded = ev.decode(row["type"], row["format"], payload)
        except UnknownEventFormat as exc:
            raise _refuse(f"{what}: {exc}") from None
        if (seq == 1) != isinstance(decoded, ev.TaskCreated):
            raise _refuse(f"{what}: a task's first event, and only its first, is task.created")
        events.append(
            Event(
                task_id, seq, row["type"], decoded, actor, row["at"], row["prev_hash"], row["hash"]
            )
        )
        rows.append(row)
        prev = row["hash"]
    return rows, events


def _check_manifest_matches(
    m: dict[str, Any], rows: list[dict[str, Any]], events: list[Event], blobs: int
) -> None:
    formats: dict[str, int] = {}
    for r in rows:
        formats[r["type"]] = max(formats.get(r["type"], 0), r["format"])
    last = rows[-1]
    checkpoints = sum(isinstance(e.payload, ev.CheckpointWritten) for e in events)
    claims = {
        "event_count": len(rows),
        "head_seq": last["seq"],
        "head_hash": last["hash"],
        "event_formats": formats,
        "counts": {"events": len(rows), "blobs": blobs, "checkpoints": checkpoints},
    }
    for key, value in claims.items():
        if m.get(key) != value:
            raise _refuse(f"{MANIFEST} says {key} is {m.get(key)!r}, but the package has {value!r}")


def _check_approvals(events: list[Event]) -> set[str]:
    """Approval ids the package requests; it may only decide or retire its own."""
    requested: set[str] = set()
    for e in events:
        p = e.payload
        if isinstance(p, ev.ApprovalRequested):
            if p.approval_id in requested:
                raise _refuse(f"event seq {e.seq} requests approval {p.approval_id} again")
            requested.add(p.approval_id)
            continue
        if isinstance(p, ev.ApprovalDecided | ev.ApprovalConsumed):
            ids: tuple[str, ...] = (p.approval_id,)
        elif isinstance(p, ev.ApprovalRetired):
            ids = p.approval_ids
        else:
            continue
        for aid in ids:
            if aid not in requested:
                raise _refuse(
                    f"event seq {e.seq} ({e.type}) names approval {aid}, which the task "
                    "never requested"
                )
    return requested


def _check_checkpoints(events: list[Event], hashes: dict[int, str]) -> None:
    for e in events:
        p = e.payload
        if not isinstance(p, ev.CheckpointWritten):
            continue
        if digest_of(p.state) != p.state_digest:
            raise _refuse(
                f"event seq {e.seq}: checkpoint {p.checkpoint_id}'s state does not match its digest"
            )
        if not 0 < p.boundary_seq < e.seq or hashes.get(p.boundary_seq) != p.boundary_hash:
            raise _refuse(
                f"event seq {e.seq}: checkpoint {p.checkpoint_id}'s boundary (seq "
                f"{p.boundary_seq}) does not match the chain"
            )


def _check_blobs(events: list[Event], blobs: dict[str, tuple[str, int]]) -> None:
    refs = blob_refs(events)
    for digest, ref in sorted(refs.items(), key=lambda kv: kv[1].seq):
        if not ref.required:
            continue
        if not _DIGEST.fullmatch(digest):
            raise _refuse(f"event seq {ref.seq}: {ref.owner} names {digest!r}, not a sha256 digest")
        member = f"blobs/{digest[len(PREFIX) :]}"
        if member not in blobs:
            raise _refuse(f"blob {digest} ({ref.owner}, event seq {ref.seq}) is not in the package")
        if ref.size is not None and blobs[member][1] != ref.size:
            raise _refuse(
                f"member {member!r} has {blobs[member][1]} bytes; {ref.owner} records {ref.size}"
            )
    for member in sorted(blobs):
        if f"{PREFIX}{member[len('blobs/') :]}" not in refs:
            raise _refuse(f"member {member!r} is not referenced by any event")


def _verify(scan: _Scan) -> _Plan:
    if MANIFEST not in scan.texts:
        raise _refuse(f"the package has no {MANIFEST}")
    m = _json(MANIFEST, scan.texts[MANIFEST])
    if not isinstance(m, dict):
        raise _refuse(f"{MANIFEST} is not a JSON object")
    _check_versions(m)
    blobs = _check_digests(m, scan)
    rows, events = _check_events(m, scan.texts[EVENTS])
    approvals = _check_approvals(events)
    _check_checkpoints(events, {r["seq"]: r["hash"] for r in rows})
    _check_blobs(events, blobs)
    _check_manifest_matches(m, rows, events, len(blobs))
    checkpoints = _json(CHECKPOINTS, scan.texts[CHECKPOINTS])
    if not isinstance(checkpoints, list):
        raise _refuse(f"{CHECKPOINTS} is not a JSON list")
    return _Plan(m["task_id"], m, rows, events, checkpoints, blobs, approvals)


# --- import: writing it -------------------------------------------------------------------


def _already_there(conn: Connection, plan: _Plan) -> bool:
    """True when this store holds the package's history (perhaps with later events); refuses a
    different history under the same task id."""
    row = conn.execute(
        sa.select(t.tasks.c.last_seq, t.tasks.c.head_hash).where(t.tasks.c.task_id == plan.task_id)
    ).first()
    if row is None:
        stray = conn.execute(
            sa.select(sa.func.count()).where(t.events.c.task_id == plan.task_id)
        ).scalar_one()
        if stray:
            raise _refuse(
                f"this store has events of task {plan.task_id} but no task row: "
                "rebuild its projections first"
            )
        return False
    local = conn.execute(
        sa.select(t.events.c.hash).where(
            t.events.c.task_id == plan.task_id, t.events.c.seq == plan.head_seq
        )
    ).scalar()
    if local == plan.head_hash:
        return True
    mine = int(row.last_seq)
    if mine < plan.head_seq and plan.rows[mine - 1]["hash"] == row.head_hash:
        raise _refuse(
            f"the package continues task {plan.task_id} past this store's copy (seq {mine} "
            f"{row.head_hash} to seq {plan.head_seq} {plan.head_hash}); extending a task "
            "already here is not supported"
        )
    raise _refuse(
        f"task {plan.task_id} already exists in this store with a different history: its head "
        f"is seq {row.last_seq} {row.head_hash}, the package's is seq {plan.head_seq} "
        f"{plan.head_hash}"
    )


def _approval_clash(conn: Connection, plan: _Plan) -> None:
    if not plan.approvals:
        return
    clash = sorted(
        r.approval_id
        for r in conn.execute(
            sa.select(t.approvals.c.approval_id).where(
                t.approvals.c.approval_id.in_(sorted(plan.approvals))
            )
        )
    )
    if clash:
        raise _refuse(
            f"approval ids {', '.join(clash)} of task {plan.task_id} already belong to "
            "another task in this store"
        )


def _replay(conn: Connection, plan: _Plan) -> None:
    conn.execute(t.events.insert(), plan.rows)
    for e in plan.events:
        try:
            projections.apply(conn, e)
        except Exception as exc:
            # Projections trust events written by commands; these were not.
            reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            raise _refuse(f"event seq {e.seq} ({e.type}) does not replay: {reason}") from exc


def _retire_approvals(store_tx: Tx, task_id: str) -> list[str]:
    from .ledger import settle_status

    ids = [
        r.approval_id
        for r in store_tx.conn.execute(
            sa.select(t.approvals.c.approval_id)
            .where(
                t.approvals.c.task_id == task_id,
                t.approvals.c.state.in_(("pending", "approved")),
            )
            .order_by(t.approvals.c.requested_at, t.approvals.c.approval_id)
        )
    ]
    if ids:
        store_tx.emit(
            task_id,
            ev.ApprovalRetired(approval_ids=tuple(ids), state="revoked", reason=RETIRE_REASON),
            SYSTEM,
        )
        # As when a run's approvals are revoked in place: a run awaiting approval is not.
        settle_status(store_tx, task_id, SYSTEM)
    return ids


def _put_blobs(store: Store, label: str, raw: BinaryIO, scan: _Scan) -> int:
    """Second pass: the blobs, each verified again against its name and the first pass (the
    package file could have changed in between)."""
    written = 0

    def visit(name: str, chunks: Iterator[bytes]) -> None:
        nonlocal written
        data = b"".join(chunks)
        sha = hashlib.sha256(data).hexdigest()
        if scan.digests.get(name) != (sha, len(data)):
            raise _refuse(f"the package changed while it was imported (member {name!r})")
        if _BLOB_MEMBER.fullmatch(name):
            digest = PREFIX + sha
            fresh = not store.blobs.has(digest)
            got, _ = store.blobs.put_bytes(data)
            if got != digest:  # pragma: no cover - put_bytes hashes what it keeps
                raise _refuse(f"member {name!r} was stored as {got}")
            written += fresh

    _walk(label, raw, visit)
    return written


def import_package(store: Store, pkg_path: str | os.PathLike[str]) -> dict[str, Any]:
    """Verify a package completely, then write its task into `store` in one transaction.

    Returns the task id, how many events were imported, the blobs, the approvals revoked and
    whether the task was already here (then nothing is written). Raises `PackageRefused`
    naming the member, event or version at fault; nothing is written then.
    """
    pkg = Path(pkg_path)
    label = str(pkg)
    if not pkg.exists():
        raise StoreError(f"no package at {pkg}")
    if not pkg.is_file():  # a directory, device or pipe: never opened
        raise StoreError(f"{pkg} is not a regular file, so not a package")
    raw: BinaryIO = open(pkg, "rb")
    with raw:
        scan = _scan(label, raw)
        plan = _verify(scan)
        result: dict[str, Any] = {
            "task_id": plan.task_id,
            "head_seq": plan.head_seq,
            "head_hash": plan.head_hash,
            "blobs": len(plan.blobs),
        }
        with store.read() as conn:
            if _already_there(conn, plan):
                return {**result, **_nothing_done()}
            _approval_clash(conn, plan)
        try:
            with store.transaction() as tx:
                # Checked again under the write lock: another importer may have been first.
                if _already_there(tx.conn, plan):
                    return {**result, **_nothing_done()}
                _approval_clash(tx.conn, plan)
                _replay(tx.conn, plan)
                rebuilt = _checkpoint_rows(tx.conn, plan.task_id)
                if rebuilt != plan.checkpoints:
                    raise _refuse(f"{CHECKPOINTS} does not match the checkpoints its events record")
                revoked = _retire_approvals(tx, plan.task_id)
                appended = len(tx.emitted)
                written = _put_blobs(store, label, raw, scan)
        except sa.exc.IntegrityError as exc:
            raise _refuse(f"the store refused the package's rows: {exc.orig}") from exc
    return {
        **result,
        "already_imported": False,
        "events_imported": len(plan.rows),
        "events_appended": appended,
        "approvals_revoked": revoked,
        "blobs_written": written,
    }


def _nothing_done() -> dict[str, Any]:
    return {
        "already_imported": True,
        "events_imported": 0,
        "events_appended": 0,
        "approvals_revoked": [],
        "blobs_written": 0,
    }
