"""What export and import share: the package's names and limits, its errors, and what a
task's events reference."""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Iterable
from typing import Any

from sqlalchemy.engine import Connection

from ... import events as ev
from ... import rules
from ... import schema as t
from ...errors import CommandRejected
from ...limits import MAX_BLOB_BYTES, MAX_EVENT_LINE_BYTES, MAX_EVENT_LINE_ITEMS
from ...record import Event
from ..verify_codes import ProblemCode

FORMAT = "boris-task-package"
#: The package layout this program writes; it reads this and every older one.
#: 1: manifest, README, events, checkpoints, blobs.
#: 2: also keyring.json (the source store's keyring) and signatures.jsonl (the task's
#:    signatures), so a package's history verifies offline (store.services.archive.offline).
#: 3: also passkeys.json (the signed registrations, and revocations, of the passkeys the
#:    task's decisions were made with), so those decisions' assertions are proved again
#:    offline too (issue 43).
FORMAT_VERSION = 3
#: The first format whose packages carry the keyring and signatures members.
SIGNED_FORMAT = 2
#: The first format whose packages carry the passkeys member.
PASSKEY_FORMAT = 3

# Limits on what an import reads. The sizes a header states are checked before anything is
# read; the bytes actually decompressed are counted too, so a lying header gains nothing.
MAX_MEMBERS = 100_000
#: A blob is one member: the largest content a command accepts (store.limits) fits.
MAX_MEMBER_BYTES = MAX_BLOB_BYTES
MAX_TOTAL_BYTES = 4 * 1024 * 1024 * 1024
#: A pax or GNU long-name header is read whole into memory: keep it small.
MAX_HEADER_BYTES = 64 * 1024
#: The manifest is parsed whole; it lists every member (about 200 bytes each).
MAX_MANIFEST_BYTES = 32 * 1024 * 1024
#: One line of events.jsonl is parsed whole (the log itself is read a line at a time). The
#: limit follows from what one command may hold (store.limits), so an event any command
#: wrote is a line an import reads.
MAX_EVENT_BYTES = MAX_EVENT_LINE_BYTES
#: JSON values (counted from its commas, colons, braces and brackets) one parse may build:
#: a small text can expand into many objects, this bounds the memory a parse can take.
MAX_JSON_ITEMS = 1_000_000
#: The same budget for one event line (its payload included), again from store.limits.
MAX_EVENT_ITEMS = MAX_EVENT_LINE_ITEMS


@dataclasses.dataclass(frozen=True)
class Limits:
    """What one import may read; the defaults are the module's MAX_* values."""

    members: int = MAX_MEMBERS
    member_bytes: int = MAX_MEMBER_BYTES
    total_bytes: int = MAX_TOTAL_BYTES
    header_bytes: int = MAX_HEADER_BYTES
    manifest_bytes: int = MAX_MANIFEST_BYTES
    event_bytes: int = MAX_EVENT_BYTES
    json_items: int = MAX_JSON_ITEMS
    event_items: int = MAX_EVENT_ITEMS


MANIFEST = "manifest.json"
EVENTS = "events.jsonl"
CHECKPOINTS = "checkpoints.json"
README = "README.txt"
KEYRING = "keyring.json"
SIGNATURES = "signatures.jsonl"
PASSKEYS = "passkeys.json"
TEXT_MEMBERS = (MANIFEST, README, EVENTS, CHECKPOINTS, KEYRING, SIGNATURES, PASSKEYS)
#: verify's finding kinds about signatures (store.signing.check).
SIGNATURE_KINDS = frozenset(
    {
        "keyring",
        "unknown_key",
        "bad_signature",
        "revoked_key",
        "key_names_another_actor",
        "signature_without_event",
        "unsigned_tail",
    }
)
BLOB_MEMBER = re.compile(r"blobs/([0-9a-f]{64})")
DIGEST = re.compile(r"sha256:[0-9a-f]{64}")
HASH = re.compile(r"[0-9a-f]{64}")

EVENT_COLUMNS = tuple(
    c.name for c in t.events.columns if c.name not in t.SERVER_FILLED_EVENT_COLUMNS
)
INT_COLUMNS = frozenset({"seq", "format"})
#: Why an import revokes the approvals open in the package (the rules know it: verify checks
#: that the store wrote such a revocation only as an import does).
RETIRE_REASON = rules.IMPORT_RETIRE_REASON


class PackageRefused(CommandRejected):
    """An import refused before anything was written; the message names what is wrong."""

    #: The event concerned, where the refusal is about one: verify-package's finding carries
    #: it as a field (the message names it for a person).
    seq: int | None = None
    #: Which proof failed, where it is not the package's form (an event altered: `chain`).
    finding_code: ProblemCode | None = None


class PackageTooLarge(PackageRefused):
    """The package decompresses to more than its limit; `streamed` is how many bytes had
    been decompressed when reading stopped."""

    def __init__(self, message: str, streamed: int) -> None:
        super().__init__(message)
        self.streamed = streamed


class PackageFailsVerify(PackageRefused):
    """The package's record, staged aside, has problems `boris verify` reports; `problems`
    are verify's findings (kind and message), named in the message too."""

    def __init__(self, message: str, problems: list[tuple[str, str]]) -> None:
        super().__init__(message)
        self.problems = problems


class PackageSignaturesFail(PackageFailsVerify):
    """The package's signatures do not prove its history: a signature that does not verify
    over the event it names (events edited and re-chained), a key the package's keyring
    (or the keys given) does not trust, a key that names another actor than the events it
    signs, events after the last signature. `problems` name the task, seq and key."""

    code = "package_signatures_fail"


class PackageKeyUntrusted(PackageSignaturesFail):
    """A signed store was asked to import a package signed by keys it does not trust (nor
    the keys file given, nor `--trust-key`): whatever actor the package's own keyring says
    they name, nothing proves it, so nothing is bound to that actor silently. `keys` maps
    each key id to the actor the package claims for it (None where it claims none)."""

    code = "package_key_untrusted"

    def __init__(self, message: str, keys: dict[str, str | None]) -> None:
        super().__init__(
            message,
            [("untrusted_key", f"key {k} claims {a or 'no actor'}") for k, a in keys.items()],
        )
        self.keys = keys


class PackageUnsigned(PackageRefused):
    """An unsigned package offered to a signed store: its events would stand here unproved
    (an unsigned tail `boris verify` reports), so it is refused."""

    code = "package_unsigned"


def refuse(
    message: str, *, seq: int | None = None, code: ProblemCode | None = None
) -> PackageRefused:
    exc = PackageRefused(f"{message}; nothing was imported")
    exc.seq, exc.finding_code = seq, code
    return exc


def pretty(value: Any) -> bytes:
    """How checkpoints.json and manifest.json are written (and checkpoints.json compared)."""
    return (json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False) + "\n").encode()


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
        if digest is None or (not required and not DIGEST.fullmatch(digest)):
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
        elif isinstance(p, ev.PrivateNote):
            # Optional: an export leaves a private note's text out unless asked (part D).
            note(p.digest, f"private note at seq {e.seq}", False, p.size, e.seq)
    return refs


def private_digests(events: Iterable[Event]) -> dict[str, list[int]]:
    """The blobs holding private notes' text, each with the seqs of the notes naming it."""
    out: dict[str, list[int]] = {}
    for e in events:
        if isinstance(e.payload, ev.PrivateNote):
            out.setdefault(e.payload.digest, []).append(e.seq)
    return out


def checkpoint_rows_json(conn: Connection, task_id: str) -> list[dict[str, Any]]:
    """The task's checkpoint rows as JSON values, in a stable order."""
    from ...reads.checkpoints import checkpoint_rows

    # Without the read's `id` (the same as `checkpoint_id`): the rows an archive has always held.
    return [r.model_dump(mode="json", exclude={"id"}) for r in checkpoint_rows(conn, task_id)]
