"""The first pass over a package: the manifest, every member's digest, and the event log
checked a line at a time while it is written into a staging store and replayed there.

Memory stays bounded whatever the package: the manifest and each event line are parsed within
a size and a JSON-value budget, every other member is only hashed while it streams past, and
events go to the staging store in batches."""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Callable, Iterator
from typing import Any

import sqlalchemy as sa
from pydantic import ValidationError
from sqlalchemy.engine import Connection

from ... import events as ev
from ... import migrate, projections
from ... import schema as t
from ...blobs import PREFIX
from ...canonical import GENESIS_HASH, canonical_json, chain_hash, digest_of
from ...codec import EventDecoder
from ...errors import UnknownEventFormat
from ...limits import input_problem
from ...model import Actor
from ...reads import passkeys
from ...record import Event, stored_body
from ...signing import keyring
from ...version import __version__
from ..verify_codes import ProblemCode
from .common import (
    BLOB_MEMBER,
    CHECKPOINTS,
    DIGEST,
    EVENT_COLUMNS,
    EVENTS,
    FORMAT,
    FORMAT_VERSION,
    HASH,
    KEYRING,
    MANIFEST,
    PASSKEY_FORMAT,
    PASSKEYS,
    README,
    SIGNATURES,
    SIGNED_FORMAT,
    BlobRef,
    Limits,
    PackageRefused,
    blob_refs,
    refuse,
)
from .tarstream import Entry
from .walk import name_problem, too_large

#: Events written to the staging store (and replayed there) at a time.
BATCH = 500


def parse_json(what: str, data: bytes, max_items: int) -> Any:
    """Parse JSON of bounded size and bounded structure: a short text can describe millions of
    tiny objects, so the values it may build are counted first from its separators."""
    items = sum(data.count(c) for c in (b",", b":", b"{", b"["))
    if items > max_items:
        raise refuse(f"{what} has more than {max_items} JSON values")
    try:
        return json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise refuse(f"{what} is not valid JSON ({exc})") from None


def _check_versions(m: dict[str, Any]) -> None:
    if m.get("format") != FORMAT:
        raise refuse(f"{MANIFEST} does not describe a Boris task package")
    written_by = m.get("boris_version", "an unknown version")
    version = m.get("format_version")
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        raise refuse(f"{MANIFEST} has no valid format_version")
    if version > FORMAT_VERSION:
        raise refuse(
            f"the package is in format {version}, written by Boris {written_by}; this program "
            f"(Boris {__version__}) reads package formats up to {FORMAT_VERSION}"
        )
    rev = m.get("schema_revision")
    if rev not in migrate.REVISIONS:
        raise refuse(
            f"the package has schema {rev}, written by Boris {written_by}; this program "
            f"(Boris {__version__}) reads schema up to {migrate.HEAD}"
        )
    formats = m.get("event_formats")
    if not isinstance(formats, dict):
        raise refuse(f"{MANIFEST} has no event_formats")
    known = ev.registered_types()
    for type_name, fmt in sorted(formats.items()):
        cls = known.get(type_name)
        if cls is None:
            raise refuse(
                f"the package has events of type {type_name!r}, which this program "
                f"(Boris {__version__}) does not know (written by Boris {written_by})"
            )
        if not isinstance(fmt, int) or isinstance(fmt, bool) or fmt > cls.FORMAT:
            raise refuse(
                f"the package has {type_name!r} events in format {fmt}, written by Boris "
                f"{written_by}; this program reads that event up to format {cls.FORMAT}"
            )


def _event_row(n: int, line: bytes, max_items: int) -> dict[str, Any]:
    where = f"{EVENTS} line {n}"
    row = parse_json(where, line, max_items)
    if not isinstance(row, dict) or set(row) != set(EVENT_COLUMNS):
        raise refuse(f"{where} is not a stored event (it needs exactly {', '.join(EVENT_COLUMNS)})")
    return _table_row(where, row, t.events, t.SERVER_FILLED_EVENT_COLUMNS)


def _table_row(
    where: str, row: Any, table: sa.Table, skip: frozenset[str] = frozenset()
) -> dict[str, Any]:
    """`row` checked against the table's columns (those the database fills, `skip`, aside):
    exactly them, integers where they are integers, strings within their length elsewhere,
    None only where the column allows it."""
    names = {c.name for c in table.columns if c.name not in skip}
    if not isinstance(row, dict) or set(row) != names:
        raise refuse(
            f"{where} is not a {table.name} row (it needs exactly {', '.join(sorted(names))})"
        )
    for col in table.columns:
        if col.name in skip:
            continue
        value = row[col.name]
        if value is None and col.nullable and not col.primary_key:
            continue
        if isinstance(col.type, sa.Integer):
            if not isinstance(value, int) or isinstance(value, bool):
                raise refuse(f"{where}: {col.name} is not an integer")
        elif not isinstance(value, str):
            raise refuse(f"{where}: {col.name} is not a string")
        elif "\x00" in value:
            raise refuse(f"{where}: {col.name} contains a NUL character")
        else:
            length = getattr(col.type, "length", None)
            if length is not None and len(value) > length:
                raise refuse(f"{where}: {col.name} is longer than {length} characters")
    return row


class Lines:
    """A member fed in chunks, handed to `on_line(n, line)` a line at a time, each line
    within the limit."""

    def __init__(self, name: str, limit: int, on_line: Callable[[int, bytes], None]) -> None:
        self.name = name
        self.limit = limit
        self.on_line = on_line
        self.pending: list[bytes] = []
        self.pending_size = 0
        self.count = 0

    def feed(self, chunk: bytes) -> None:
        while chunk:
            end = chunk.find(b"\n")
            if end < 0:
                self.pending.append(chunk)
                self.pending_size += len(chunk)
                if self.pending_size > self.limit:
                    self._too_long()
                return
            self.pending.append(chunk[:end])
            line = b"".join(self.pending)
            self.pending, self.pending_size = [], 0
            self._take(line)
            chunk = chunk[end + 1 :]

    def finish(self) -> None:
        if self.pending:
            line = b"".join(self.pending)
            self.pending, self.pending_size = [], 0
            self._take(line)

    def _too_long(self) -> None:
        raise refuse(
            f"{self.name} line {self.count + 1} is longer than the limit of {self.limit} bytes"
        )

    def _take(self, line: bytes) -> None:
        if len(line) > self.limit:
            self._too_long()
        self.count += 1
        self.on_line(self.count, line)


#: A signature line: small, whatever the task.
_SIGNATURE_LINE_BYTES = 1024


class SignatureLog:
    """signatures.jsonl: one `{seq, key_id, signature}` a line, in seq order, written to the
    staging store in batches; what they prove is verify's to judge."""

    def __init__(self, conn: Connection, task_id: str, limits: Limits) -> None:
        self.lines = Lines(SIGNATURES, _SIGNATURE_LINE_BYTES, self.line)
        self.conn = conn
        self.task_id = task_id
        self.last = 0
        self.batch: list[dict[str, Any]] = []

    def line(self, n: int, line: bytes) -> None:
        where = f"{SIGNATURES} line {n}"
        value = parse_json(where, line, 16)
        if not isinstance(value, dict) or "task_id" in value:
            raise refuse(f"{where} is not a signature (it needs exactly key_id, seq, signature)")
        row = _table_row(where, {"task_id": self.task_id, **value}, t.signatures)
        if row["seq"] <= self.last:
            raise refuse(f"{where}: seq {row['seq']} is not after seq {self.last}")
        self.last = row["seq"]
        self.batch.append(row)
        if len(self.batch) >= BATCH:
            self._flush()

    def feed(self, chunk: bytes) -> None:
        self.lines.feed(chunk)

    def finish(self) -> None:
        self.lines.finish()
        self._flush()

    def _flush(self) -> None:
        if self.batch:
            self.conn.execute(t.signatures.insert(), self.batch)
            self.batch = []


def event_of(row: Any, decoder: EventDecoder | None = None) -> Event:
    """A stored row (already checked) as an Event, as the store loads it (`store.codec`)."""
    return (decoder or EventDecoder()).event(row)


class EventLog:
    """events.jsonl, fed in chunks: each line checked (its row, its seq, its place in the hash
    chain, its payload's format), written to the staging connection in batches and replayed
    into the staging projections. What later checks need is kept small: approval ids, blob
    references, checkpoint boundaries."""

    def __init__(self, conn: Connection, task_id: str, limits: Limits) -> None:
        self.conn = conn
        self.task_id = task_id
        self.limits = limits
        self.lines = Lines(EVENTS, limits.event_bytes, self._line)
        self.prev = GENESIS_HASH
        self.formats: dict[str, int] = {}
        self.requested: dict[str, Actor] = {}
        self.refs: dict[str, BlobRef] = {}
        self.checkpoints = 0
        self.boundaries: list[tuple[int, str, int, str]] = []  # seq, checkpoint, its boundary
        self.batch: list[tuple[dict[str, Any], Event]] = []

    @property
    def count(self) -> int:
        return self.lines.count

    def feed(self, chunk: bytes) -> None:
        self.lines.feed(chunk)

    def finish(self) -> None:
        self.lines.finish()
        self._flush()
        if not self.count:
            raise refuse(f"{EVENTS} holds no events")
        self._check_boundaries()

    def _line(self, n: int, line: bytes) -> None:
        try:
            self._event(n, line)
        except PackageRefused as exc:
            # Refused for the event on line n (seq n, or the gap before it): its seq is a
            # field of the refusal, not only words in its message.
            exc.seq = n if exc.seq is None else exc.seq
            raise

    def _event(self, n: int, line: bytes) -> None:
        row = _event_row(n, line, self.limits.event_items)
        task_id, seq, prev = self.task_id, row["seq"], self.prev
        if seq != n:
            raise refuse(
                f"{EVENTS} line {n} has seq {seq}, expected {n} (a gap or reordering)",
                code=ProblemCode.CHAIN,
            )
        what = f"event seq {seq} ({row['type']})"
        if row["task_id"] != task_id:
            raise refuse(f"{what} belongs to task {row['task_id']!r}, not {task_id!r}")
        if row["prev_hash"] != prev:
            raise refuse(
                f"{what} does not follow the event before it: its prev_hash is "
                f"{row['prev_hash']}, the chain's hash there is {prev}",
                code=ProblemCode.CHAIN,
            )
        if not HASH.fullmatch(row["hash"]):
            raise refuse(f"{what} has no valid hash")
        try:
            payload = json.loads(row["payload"])
        except (ValueError, RecursionError) as exc:
            raise refuse(f"{what}: its payload is not valid JSON ({exc})") from None
        if not isinstance(payload, dict):
            raise refuse(f"{what}: its payload is not a JSON object")
        # What no command accepts (NaN, Infinity, 1e400, NUL) is no stored event either.
        problem = input_problem(payload, sizes=False)
        if problem is not None:
            raise refuse(f"{what}: {problem}")
        if canonical_json(payload) != row["payload"]:
            raise refuse(f"{what}: its payload is not in canonical form")
        try:
            actor = Actor(kind=row["actor_kind"], id=row["actor_id"], name=row["actor_name"])
        except ValidationError:
            raise refuse(f"{what} has no valid actor") from None
        body = stored_body(task_id, seq, row["type"], row["format"], payload, actor, row["at"])
        if chain_hash(prev, body) != row["hash"]:
            raise refuse(
                f"{what} does not match its hash: the event was altered", code=ProblemCode.CHAIN
            )
        try:
            decoded = ev.decode(row["type"], row["format"], payload)
        except UnknownEventFormat as exc:
            raise refuse(f"{what}: {exc}") from None
        if (seq == 1) != isinstance(decoded, ev.TaskCreated):
            raise refuse(f"{what}: a task's first event, and only its first, is task.created")
        e = Event(
            task_id, seq, row["type"], decoded, actor, row["at"], row["prev_hash"], row["hash"]
        )
        self._approval(e)
        self._checkpoint(e)
        self.formats[row["type"]] = max(self.formats.get(row["type"], 0), row["format"])
        self.prev = row["hash"]
        self.batch.append((row, e))
        if len(self.batch) >= BATCH:
            self._flush()

    def _approval(self, e: Event) -> None:
        """Approvals as the commands allow them: requested once, decided once by a person who
        is not the requester; decided, consumed or retired only when this task requested it."""
        p = e.payload
        if isinstance(p, ev.ApprovalRequested):
            if p.approval_id in self.requested:
                raise refuse(
                    f"event seq {e.seq} requests approval {p.approval_id} again",
                    code=ProblemCode.APPROVAL,
                )
            self.requested[p.approval_id] = e.actor
            return
        if isinstance(p, ev.ApprovalDecided | ev.ApprovalConsumed):
            ids: tuple[str, ...] = (p.approval_id,)
        elif isinstance(p, ev.ApprovalRetired):
            ids = p.approval_ids
        else:
            return
        for aid in ids:
            if aid not in self.requested:
                raise refuse(
                    f"event seq {e.seq} ({e.type}) names approval {aid}, which the task "
                    "never requested",
                    code=ProblemCode.APPROVAL,
                )
        # Who decided, and how often, is verify's to judge (store.rules.decider_refusal),
        # and the staged import is verified before anything is written.

    def _checkpoint(self, e: Event) -> None:
        p = e.payload
        if not isinstance(p, ev.CheckpointWritten):
            return
        self.checkpoints += 1
        if digest_of(p.state) != p.state_digest:
            raise refuse(
                f"event seq {e.seq}: checkpoint {p.checkpoint_id}'s state does not match its digest",
                code=ProblemCode.LINEAGE,
            )
        self.boundaries.append((e.seq, p.checkpoint_id, p.boundary_seq, p.boundary_hash))

    def _flush(self) -> None:
        if not self.batch:
            return
        self.conn.execute(t.events.insert(), [row for row, _ in self.batch])
        for _, e in self.batch:
            try:
                projections.apply(self.conn, e)
            except Exception as exc:
                # Projections trust events written by commands; these were not.
                reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
                raise refuse(
                    f"event seq {e.seq} ({e.type}) does not replay: {reason}", seq=e.seq
                ) from exc
        for digest, ref in blob_refs(e for _, e in self.batch).items():
            old = self.refs.get(digest)
            if old is None or (ref.required and not old.required):
                self.refs[digest] = ref
        self.batch = []

    def _check_boundaries(self) -> None:
        wanted = sorted({b for _, _, b, _ in self.boundaries})
        hashes: dict[int, str] = {}
        for i in range(0, len(wanted), BATCH):
            hashes.update(
                (int(r.seq), str(r.hash))
                for r in self.conn.execute(
                    sa.select(t.events.c.seq, t.events.c.hash).where(
                        t.events.c.task_id == self.task_id,
                        t.events.c.seq.in_(wanted[i : i + BATCH]),
                    )
                )
            )
        for seq, cid, boundary, h in self.boundaries:
            if not 0 < boundary < seq or hashes.get(boundary) != h:
                raise refuse(
                    f"event seq {seq}: checkpoint {cid}'s boundary (seq {boundary}) "
                    "does not match the chain",
                    seq=seq,
                    code=ProblemCode.LINEAGE,
                )


@dataclasses.dataclass
class Scanned:
    """What the first pass found: enough to write the task, never its content."""

    task_id: str
    manifest: dict[str, Any]
    digests: dict[str, tuple[str, int]]  # every member but the manifest -> (sha256 hex, size)
    blobs: dict[str, tuple[str, int]]  # the blob members among them
    approvals: set[str]
    head_seq: int
    head_hash: str
    event_count: int


class Scan:
    """The first pass's visitor. The manifest must come first (the exporter writes it first so
    that a streaming reader knows what to expect): every later member must be listed in it, with
    the size its header states, before a byte of it is read."""

    def __init__(self, conn: Connection, limits: Limits) -> None:
        self.conn = conn
        self.limits = limits
        self.manifest: dict[str, Any] | None = None
        self.listed: dict[str, dict[str, Any]] = {}
        self.digests: dict[str, tuple[str, int]] = {}
        self.log: EventLog | None = None
        self.sigs: SignatureLog | None = None
        self.ring_entries = 0
        self.required = False

    def visit(self, entry: Entry, chunks: Iterator[bytes]) -> None:
        name = entry.name
        if self.manifest is None:
            if name != MANIFEST:
                raise refuse(f"the package has no {MANIFEST} (its first member is {name!r})")
            if entry.size > self.limits.manifest_bytes:
                raise refuse(too_large(name, entry.size, self.limits.manifest_bytes))
            self._manifest(b"".join(chunks))
            return
        want = self.listed.get(name)
        if want is None:
            raise refuse(f"member {name!r} is not listed in {MANIFEST}")
        if want["size"] != entry.size:
            raise refuse(f"member {name!r} has {entry.size} bytes; {MANIFEST} says {want['size']}")
        h = hashlib.sha256()
        log: EventLog | SignatureLog | None = None
        if name == EVENTS:
            log = self.log
        elif name == SIGNATURES:
            log = self.sigs
        kept: list[bytes] | None = [] if name in (KEYRING, PASSKEYS) else None
        if kept is not None and entry.size > self.limits.manifest_bytes:
            raise refuse(too_large(name, entry.size, self.limits.manifest_bytes))
        for chunk in chunks:
            h.update(chunk)
            if log is not None:
                log.feed(chunk)
            if kept is not None:
                kept.append(chunk)
        got = h.hexdigest()
        if want["sha256"] != got:
            raise refuse(
                f"member {name!r} does not match its digest in {MANIFEST} "
                f"(the manifest says {want['sha256']}, its content is {got})"
            )
        blob = BLOB_MEMBER.fullmatch(name)
        if blob is not None and blob.group(1) != got:
            raise refuse(f"member {name!r} does not match its name (its content is {got})")
        if log is not None:
            log.finish()
        if kept is not None:
            (self._keyring if name == KEYRING else self._passkeys)(b"".join(kept))
        self.digests[name] = (got, entry.size)

    def _keyring(self, data: bytes) -> None:
        """The source store's keyring, staged as it is: verify walks its chain and checks
        the signatures against it (or only against the keys the caller gives)."""
        value = parse_json(f"member {KEYRING!r}", data, self.limits.json_items)
        entries = value.get("entries") if isinstance(value, dict) else None
        required = value.get("required") if isinstance(value, dict) else None
        if not isinstance(entries, list) or not isinstance(required, bool):
            raise refuse(f"{KEYRING} is not {{required, entries}}")
        rows = [_table_row(f"{KEYRING} entry {n}", r, t.keyring) for n, r in enumerate(entries, 1)]
        if [r["seq"] for r in rows] != list(range(1, len(rows) + 1)):
            raise refuse(f"{KEYRING}: entries are not numbered 1, 2, 3, ...")
        if rows:
            self.conn.execute(t.keyring.insert(), rows)
        if required:
            keyring.set_required(self.conn)
        self.ring_entries, self.required = len(rows), required

    def _passkeys(self, data: bytes) -> None:
        """The signed entries of the passkeys the task's decisions were made with, staged as
        the source store keeps them: verify checks each entry's signature (against the keys
        the caller gives, or the package's keyring) and each decision's assertion against
        the passkey its entry registers. Only entries of that shape, each once."""
        value = parse_json(f"member {PASSKEYS!r}", data, self.limits.json_items)
        entries = value.get("entries") if isinstance(value, dict) else None
        if not isinstance(entries, list) or set(value) != {"entries"}:
            raise refuse(f"{PASSKEYS} is not {{entries}}")
        rows: dict[str, str] = {}
        for n, entry in enumerate(entries, 1):
            where = f"{PASSKEYS} entry {n}"
            if not isinstance(entry, dict) or set(entry) != {"key", "value"}:
                raise refuse(f"{where} is not {{key, value}}")
            key, body = entry["key"], entry["value"]
            if not isinstance(key, str) or not passkeys.ENTRY_KEY.fullmatch(key):
                raise refuse(f"{where}: {key!r} is not a passkey entry's key")
            if not isinstance(body, dict):
                raise refuse(f"{where}: its value is not a JSON object")
            if key in rows:
                raise refuse(f"{where}: {key} is there twice")
            rows[key] = canonical_json(body)
        if rows:
            self.conn.execute(
                t.store_meta.insert(), [{"key": k, "value": v} for k, v in rows.items()]
            )

    def _manifest(self, data: bytes) -> None:
        m = parse_json(f"member {MANIFEST!r}", data, self.limits.json_items)
        if not isinstance(m, dict):
            raise refuse(f"{MANIFEST} is not a JSON object")
        _check_versions(m)
        task_id = m.get("task_id")
        if not isinstance(task_id, str) or not task_id:
            raise refuse(f"{MANIFEST} names no task")
        listed = m.get("members")
        if not isinstance(listed, dict):
            raise refuse(f"{MANIFEST} lists no members")
        for name, want in sorted(listed.items()):
            if name == MANIFEST or name_problem(name) is not None:
                raise refuse(f"{MANIFEST} lists {name!r}, which a Boris package cannot have")
            size = want.get("size") if isinstance(want, dict) else None
            sha = want.get("sha256") if isinstance(want, dict) else None
            if not isinstance(size, int) or isinstance(size, bool) or not isinstance(sha, str):
                raise refuse(f"{MANIFEST} gives no sha256 and size for member {name!r}")
        self.manifest, self.listed = m, listed
        self.log = EventLog(self.conn, task_id, self.limits)
        self.sigs = SignatureLog(self.conn, task_id, self.limits)

    def finish(self) -> Scanned:
        """After the last member: everything listed was there, and the manifest's claims, the
        blobs the events need and checkpoints.json agree with what was read."""
        m, log = self.manifest, self.log
        if m is None or log is None:  # pragma: no cover - an empty archive is refused earlier
            raise refuse(f"the package has no {MANIFEST}")
        needed = [README, EVENTS, CHECKPOINTS]
        if m["format_version"] >= SIGNED_FORMAT:
            needed += [KEYRING, SIGNATURES]
        if m["format_version"] >= PASSKEY_FORMAT:
            needed.append(PASSKEYS)
        for name in needed:
            if name not in self.listed:
                raise refuse(f"the package has no member {name!r}")
        for name in sorted(self.listed):
            if name not in self.digests:
                raise refuse(f"member {name!r} listed in {MANIFEST} is missing from the package")
        blobs = {n: d for n, d in self.digests.items() if BLOB_MEMBER.fullmatch(n)}
        # A blob retired with its tombstone in the log may be absent (issue 35 part R).
        from ..retention import retired_only

        for digest, ref in list(log.refs.items()):
            absent = f"blobs/{digest[len(PREFIX) :]}" not in blobs
            if ref.required and absent and retired_only(self.conn, digest):
                log.refs[digest] = BlobRef(ref.owner, False, ref.size, ref.seq)
        _check_blobs(log.refs, blobs)
        claims = {
            "event_count": log.count,
            "head_seq": log.count,
            "head_hash": log.prev,
            "event_formats": log.formats,
            "counts": {"events": log.count, "blobs": len(blobs), "checkpoints": log.checkpoints},
        }
        if m["format_version"] >= SIGNED_FORMAT:
            count = self.sigs.lines.count if self.sigs is not None else 0
            claims["signature_count"] = count
            claims["signed"] = self.required or bool(self.ring_entries) or bool(count)
        for key, value in claims.items():
            if m.get(key) != value:
                raise refuse(
                    f"{MANIFEST} says {key} is {m.get(key)!r}, but the package has {value!r}"
                )
        return Scanned(
            log.task_id,
            m,
            dict(self.digests),
            blobs,
            set(log.requested),
            log.count,
            log.prev,
            log.count,
        )


def _check_blobs(refs: dict[str, BlobRef], blobs: dict[str, tuple[str, int]]) -> None:
    for digest, ref in sorted(refs.items(), key=lambda kv: kv[1].seq):
        if not ref.required:
            continue
        if not DIGEST.fullmatch(digest):
            raise refuse(
                f"event seq {ref.seq}: {ref.owner} names {digest!r}, not a sha256 digest",
                seq=ref.seq,
            )
        member = f"blobs/{digest[len(PREFIX) :]}"
        if member not in blobs:
            raise refuse(
                f"blob {digest} ({ref.owner}, event seq {ref.seq}) is not in the package",
                seq=ref.seq,
                code=ProblemCode.BLOB,
            )
        if ref.size is not None and blobs[member][1] != ref.size:
            raise refuse(
                f"member {member!r} has {blobs[member][1]} bytes; {ref.owner} records {ref.size}"
            )
    for member in sorted(blobs):
        if f"{PREFIX}{member[len('blobs/') :]}" not in refs:
            raise refuse(f"member {member!r} is not referenced by any event")
