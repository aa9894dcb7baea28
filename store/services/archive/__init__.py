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

Nothing is ever extracted to the file system. The tar headers are parsed here
(`tarstream`), not by the standard library's `tarfile`, so every limit holds whichever
`tarfile` the interpreter ships; members are streamed in chunks and hashed, and only the
manifest and one event line at a time are parsed, each within a size and a JSON budget.

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

An import reads the package twice through the same open file (see `importing`). The first
pass refuses hostile members (absolute or climbing names, backslashes, NUL, links, devices,
directories, duplicates, unknown names, too many or too large members, oversized extended
headers, more decompressed bytes than MAX_TOTAL_BYTES) and checks every member against the
manifest, the versions, the hash chain from genesis, the payload formats, the approvals, the
blobs the events need and the checkpoints, staging the events in a temporary store; `verify`
runs there, and anything it reports refuses the package. Only then, in one transaction, the
event rows are inserted as they are and replayed into the projections, and the second pass
puts each blob (verified again) before the commit. A task already here with the same history
is a no-op; a different history under its id is refused.

Signatures (format 2): `keyring.json` carries the source store's keyring (its chain of
public keys bound to actors) and `signatures.jsonl` the task's signatures, one per write
transaction over the chain hash of its last event. The import stages them with the events and
verify checks them: into a signed store, against the keys that store already trusts (or only
the keys file given), plus the package's keys the person importing names (`trust`); a key
none of these trusts refuses the package naming it and the actor it claims
(`PackageKeyUntrusted`), never bound silently. Into an unsigned store, against the keyring
the package carries (or the keys file). A signature that fails refuses the package
(`PackageSignaturesFail`). `verify_package` (`offline`) checks against a keys file alone,
writing nothing. A format 1 package, or one from an unsigned store, carries no signatures:
it imports into an unsigned store, and says so; a signed store refuses it
(`PackageUnsigned`).

Approvals arrive as history, never as live authority: an approval that was pending or
approved in the package is revoked on import by an `approval.retired` event appended (by the
system) after the imported chain, in the same transaction, so it can neither be decided nor
used to dispatch here.
"""

from .common import (
    CHECKPOINTS,
    EVENTS,
    FORMAT,
    FORMAT_VERSION,
    MANIFEST,
    MAX_EVENT_BYTES,
    MAX_EVENT_ITEMS,
    MAX_HEADER_BYTES,
    MAX_JSON_ITEMS,
    MAX_MANIFEST_BYTES,
    MAX_MEMBER_BYTES,
    MAX_MEMBERS,
    MAX_TOTAL_BYTES,
    README,
    RETIRE_REASON,
    BlobRef,
    Limits,
    PackageFailsVerify,
    PackageKeyUntrusted,
    PackageRefused,
    PackageSignaturesFail,
    PackageTooLarge,
    PackageUnsigned,
    blob_refs,
)
from .export import ExportFailed, export_task, export_with_manifest
from .importing import import_package
from .offline import verify_package

__all__ = [
    "CHECKPOINTS",
    "EVENTS",
    "FORMAT",
    "FORMAT_VERSION",
    "MANIFEST",
    "MAX_EVENT_BYTES",
    "MAX_EVENT_ITEMS",
    "MAX_HEADER_BYTES",
    "MAX_JSON_ITEMS",
    "MAX_MANIFEST_BYTES",
    "MAX_MEMBERS",
    "MAX_MEMBER_BYTES",
    "MAX_TOTAL_BYTES",
    "README",
    "RETIRE_REASON",
    "BlobRef",
    "ExportFailed",
    "Limits",
    "PackageFailsVerify",
    "PackageKeyUntrusted",
    "PackageRefused",
    "PackageSignaturesFail",
    "PackageTooLarge",
    "PackageUnsigned",
    "blob_refs",
    "export_task",
    "export_with_manifest",
    "import_package",
    "verify_package",
]
