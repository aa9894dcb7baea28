"""`verify_package`: a package's history proved from its bytes alone, trusting only the
public keys given (a keys file got out of band), never the keyring the package carries.

The package is read as an import reads it (every member against the manifest, the hash
chain from genesis, formats, approvals, checkpoints), staged in a temporary store that is
thrown away, and verified there as `boris verify --keys` verifies a store: every write's
signature over the chain hash of its last event, under a key the keys file binds to the
actor of every event it covers (so a person's decision stands only under that person's
key), the checkpoint lineage (one initial, each superseding one written before it, each
boundary on the chain), approvals decided once by a person who did not request them.

A package that carries no signatures (an older format, or an unsigned store's) proves
nothing about who wrote it: with keys to check against, that is a problem.
"""

from __future__ import annotations

import os
from collections import defaultdict
from pathlib import Path

import sqlalchemy as sa

from ... import schema as t
from ... import tempfiles
from ...blobs import PREFIX
from ...signing.keyring import Keyring
from ...store import Store
from ..verify import Finding, Report
from .common import BLOB_MEMBER, Limits, PackageRefused
from .importing import check_path, stage, verify_staged

_SUFFIX = "; nothing was imported"


def verify_package(
    pkg_path: str | os.PathLike[str], keys: Keyring, *, limits: Limits | None = None
) -> Report:
    """verify's report on the package's task, against `keys` only. Its `info` names who
    signed what (key, actor, seqs)."""
    limits = limits or Limits()
    pkg = check_path(pkg_path)
    with (
        open(pkg, "rb") as raw,
        tempfiles.private_directory("boris-verify-package-") as tmp,
        Store.open(Path(tmp) / "staging") as staging,
    ):
        try:
            scanned = stage(staging, str(pkg), raw, limits)
        except PackageRefused as exc:
            report = Report()
            message = str(exc).removesuffix(_SUFFIX)
            report.problems.append(
                Finding(
                    pkg.name,
                    "package_refused",
                    message,
                    seq=exc.seq,
                    given_code=exc.finding_code,
                )
            )
            return report
        report = verify_staged(staging, scanned.task_id, keys)
        # The staging store is given no blobs: an intended state whose content the package
        # carries is not absent (verify notes only those the package lacks too).
        carried = {PREFIX + m.group(1) for n in scanned.blobs if (m := BLOB_MEMBER.fullmatch(n))}
        report.info = [
            i for i in report.info if not (i.kind == "blob_absent" and i.digest in carried)
        ]
        if not report.signed:
            report.problems.append(
                Finding(
                    scanned.task_id,
                    "unsigned_package",
                    "the package carries no signatures: nothing proves who wrote its events",
                )
            )
        report.info.extend(_signers(staging, scanned.task_id, keys))
        return report


def _signers(staging: Store, task_id: str, keys: Keyring) -> list[Finding]:
    by_key: dict[str, list[int]] = defaultdict(list)
    with staging.read() as conn:
        for seq, key_id in conn.execute(
            sa.select(t.signatures.c.seq, t.signatures.c.key_id)
            .where(t.signatures.c.task_id == task_id)
            .order_by(t.signatures.c.seq)
        ):
            by_key[str(key_id)].append(int(seq))
    out = []
    for key_id, seqs in sorted(by_key.items(), key=lambda kv: kv[1][0]):
        b = keys.get(key_id)
        who = b.actor if b is not None else "a key not in the keys file"
        n = len(seqs)
        out.append(
            Finding(
                task_id,
                "signed_by",
                f"key {key_id} ({who}): {n} write{'s' if n != 1 else ''}, "
                f"seq {seqs[0]}..{seqs[-1]}",
                key_id=key_id,
            )
        )
    return out
