"""Task packages against hostile input the tar library must not be trusted with: forged but
re-chained histories, members that expand to gigabytes, and headers parsed by our own reader."""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import os
import subprocess
import sys
import tarfile
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest
from test_archive import (
    AGENT,
    ANA,
    event_rows,
    fix_digests,
    manifest_of,
    read_members,
    refused,
    set_events,
    set_manifest,
    write_package,
)

from store import Store
from store import commands as c
from store.commands.approvals import DecideApproval, RequestApproval
from store.commands.effects import DispatchEffect, PlanEffect
from store.services import archive as ar
from store.services.archive.tarstream import HeaderTooLarge, TarFormatError, TarReader
from store.services.verify import verify

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def dst(tmp_path: Path) -> Iterator[Store]:
    with Store.open(tmp_path / "dst") as s:
        yield s


@pytest.fixture(scope="module")
def dispatched(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A package of a task whose approved effect was dispatched (its approval consumed)."""
    root = tmp_path_factory.mktemp("dispatched")
    (root / "ws").mkdir()
    with Store.open(root / "store") as s:
        tid = s.execute(
            c.CreateTask(title="t", owner="ana", objective="o", scope_paths=[str(root / "ws")]),
            AGENT,
        )
        eff = s.execute(
            PlanEffect(
                task_id=tid,
                target="out.md",
                consequence="write out.md",
                content=c.Content(text="x"),
                requires_approval=True,
            ),
            AGENT,
        )
        apr = s.execute(RequestApproval(task_id=tid, effect_id=eff, policy="p"), AGENT)
        s.execute(DecideApproval(task_id=tid, approval_id=apr, decision="approved"), ANA)
        s.execute(DispatchEffect(task_id=tid, effect_id=eff, executor="t", approval_id=apr), AGENT)
        return ar.export_task(s, tid, root / "task.tar.gz")


def forged(pkg: Path, out: Path, edit_rows: object) -> Path:
    """The package with its events edited and re-chained as a forger would: every hash, the
    manifest's head and counts and every digest hold."""
    members = read_members(pkg)
    rows = event_rows(members)
    assert callable(edit_rows)
    edit_rows(rows)
    set_events(members, rows, rechain=True)
    m = manifest_of(members)
    m["counts"]["events"] = len(rows)
    set_manifest(members, m)
    fix_digests(members)
    return write_package(out, members)


def test_an_approval_consumed_twice_is_refused_as_verify_would(
    dispatched: Path, dst: Store, tmp_path: Path
) -> None:
    def twice(rows: list[dict[str, object]]) -> None:
        consumed = next(r for r in rows if r["type"] == "approval.consumed")
        rows.append(dict(consumed, seq=len(rows) + 1))

    pkg = forged(dispatched, tmp_path / "twice.tar.gz", twice)
    err = refused(dst, pkg, r"fails verify \(approval_reused: approval apr-\w+ is consumed 2 times")
    assert isinstance(err, ar.PackageFailsVerify)
    assert [kind for kind, _ in err.problems] == ["approval_reused"]
    assert dst.task_ids() == [] and verify(dst).tasks == []


def test_an_approval_decided_by_its_requester_is_refused(
    dispatched: Path, dst: Store, tmp_path: Path
) -> None:
    def self_decided(rows: list[dict[str, object]]) -> None:
        requested = next(r for r in rows if r["type"] == "approval.requested")
        decided = next(r for r in rows if r["type"] == "approval.decided")
        for k in ("actor_kind", "actor_id", "actor_name"):
            decided[k] = requested[k]

    pkg = forged(dispatched, tmp_path / "self.tar.gz", self_decided)
    err = refused(
        dst,
        pkg,
        r"approval_decider: seq \d+ decides approval apr-\w+: an approval is decided by a named person, not by a agent \(writer-7\)",
    )
    assert isinstance(err, ar.PackageFailsVerify)


def test_an_approval_decided_twice_is_refused(dispatched: Path, dst: Store, tmp_path: Path) -> None:
    def again(rows: list[dict[str, object]]) -> None:
        decided = next(r for r in rows if r["type"] == "approval.decided")
        rows.append(dict(decided, seq=len(rows) + 1))

    err = refused(
        dst,
        forged(dispatched, tmp_path / "again.tar.gz", again),
        r"approval_redecided: approval apr-\w+ is decided 2 times",
    )
    assert isinstance(err, ar.PackageFailsVerify)


def test_the_untouched_package_still_imports(dispatched: Path, dst: Store) -> None:
    # The forgeries above are refused for what they forged, not for the task they start from.
    result = ar.import_package(dst, dispatched)
    assert result["already_imported"] is False
    assert verify(dst).ok


# --- memory stays bounded ------------------------------------------------------------------


class _Zeros(io.RawIOBase):
    """`size` zero bytes, read in chunks: the test never holds a member whole either."""

    def __init__(self, size: int) -> None:
        self.left = size

    def readable(self) -> bool:
        return True

    def readinto(self, b: bytearray | memoryview) -> int:  # type: ignore[override]
        n = min(len(b), self.left)
        b[:n] = bytes(n)
        self.left -= n
        return n


def _zeros_sha(size: int) -> str:
    h = hashlib.sha256()
    block = bytes(1024 * 1024)
    for _ in range(size // len(block)):
        h.update(block)
    return h.hexdigest()


def test_members_of_zeros_are_refused_in_bounded_memory(dst: Store, tmp_path: Path) -> None:
    size = int(os.environ.get("BORIS_ZEROS_MIB", "200")) * 1024 * 1024
    sha = _zeros_sha(size)
    names = ["README.txt", "checkpoints.json", "events.jsonl"]
    manifest = {
        "format": ar.FORMAT,
        "format_version": ar.FORMAT_VERSION,
        "schema_revision": manifest_of_any_revision(),
        "event_formats": {"task.created": 1},
        "task_id": "task-zeros",
        "members": {n: {"sha256": sha, "size": size} for n in names},
    }
    pkg = tmp_path / "zeros.tar.gz"
    with (
        open(pkg, "wb") as raw,
        gzip.GzipFile(fileobj=raw, mode="wb", compresslevel=1) as gz,
        tarfile.open(fileobj=gz, mode="w|") as tar,
    ):
        data = json.dumps(manifest).encode()
        info = tarfile.TarInfo("manifest.json")
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
        for n in names:
            info = tarfile.TarInfo(n)
            info.size = size
            tar.addfile(info, io.BufferedReader(_Zeros(size)))
    assert pkg.stat().st_size < 4 * 1024 * 1024  # 1.5 GiB of content in a small file

    child = textwrap.dedent(
        """
        import sys
        from store import Store
        from store.services.archive import PackageRefused, import_package
        with Store.open(sys.argv[2]) as s:
            try:
                import_package(s, sys.argv[1])
            except PackageRefused as exc:
                print("refused:", exc)
        # VmHWM: this process's own peak (ru_maxrss can keep the forked parent's).
        with open("/proc/self/status") as f:
            peak = next(line.split()[1] for line in f if line.startswith("VmHWM:"))
        print("peak_kib", peak)
        """
    )
    out = subprocess.run(
        [sys.executable, "-c", child, str(pkg), str(dst.location.directory)],
        capture_output=True,
        text=True,
        check=True,
        timeout=600,
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": os.environ.get("BORIS_ZEROS_ROOT", str(ROOT))},
    ).stdout
    assert "refused: events.jsonl line 1 is longer than the limit of" in out, out
    peak_mib = int(out.split("peak_kib")[1]) / 1024
    print(f"peak {peak_mib:.0f} MiB")
    assert peak_mib < 150, f"the import reached {peak_mib:.0f} MiB"
    assert dst.task_ids() == []


def manifest_of_any_revision() -> str:
    from store.migrate import HEAD

    return HEAD


# --- our own tar reader --------------------------------------------------------------------


def _tar(members: list[tuple[tarfile.TarInfo, bytes]], fmt: int) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=fmt) as tar:
        for info, data in members:
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


@pytest.mark.parametrize("fmt", [tarfile.USTAR_FORMAT, tarfile.GNU_FORMAT, tarfile.PAX_FORMAT])
def test_the_reader_reads_what_tarfile_writes(fmt: int) -> None:
    long = "blobs/" + "d" * 150 if fmt != tarfile.USTAR_FORMAT else "dir/" * 20 + "f"
    members = [(tarfile.TarInfo("manifest.json"), b"{}"), (tarfile.TarInfo(long), b"x" * 1500)]
    reader = TarReader(io.BytesIO(_tar(members, fmt)), max_header=4096)
    got = [(e.name, e.size, e.is_regular, b"".join(reader.chunks())) for e in reader]
    assert got == [("manifest.json", 2, True, b"{}"), (long, 1500, True, b"x" * 1500)]


def test_the_reader_skips_what_is_not_read() -> None:
    members = [(tarfile.TarInfo("a"), b"1" * 700), (tarfile.TarInfo("b"), b"2")]
    reader = TarReader(io.BytesIO(_tar(members, tarfile.PAX_FORMAT)), max_header=4096)
    assert [e.name for e in reader] == ["a", "b"]


@pytest.mark.parametrize("fmt", [tarfile.GNU_FORMAT, tarfile.PAX_FORMAT])
def test_a_long_name_header_over_the_limit_is_refused_before_it_is_read(fmt: int) -> None:
    data = _tar([(tarfile.TarInfo("n" * 5000), b"")], fmt)
    with pytest.raises(HeaderTooLarge) as info:
        list(TarReader(io.BytesIO(data), max_header=1024))
    assert info.value.size > 1024


def test_a_pax_path_is_the_name_checked(dst: Store, tmp_path: Path) -> None:
    # A pax header renames the member: the name it gives is the one refused.
    info = tarfile.TarInfo("harmless.txt")
    info.pax_headers = {"path": "../../etc/cron.d/evil"}
    pkg = tmp_path / "pax-path.tar.gz"
    pkg.write_bytes(gzip.compress(_tar([(info, b"x")], tarfile.PAX_FORMAT)))
    refused(dst, pkg, r"'\.\./\.\./etc/cron\.d/evil' climbs out of the package")


def test_a_corrupt_header_is_refused(dst: Store, tmp_path: Path) -> None:
    data = bytearray(_tar([(tarfile.TarInfo("README.txt"), b"x")], tarfile.USTAR_FORMAT))
    data[0] ^= 1  # the name changes, the checksum no longer holds
    with pytest.raises(TarFormatError, match="checksum"):
        list(TarReader(io.BytesIO(bytes(data)), max_header=1024))
    pkg = tmp_path / "corrupt.tar.gz"
    pkg.write_bytes(gzip.compress(bytes(data)))
    refused(dst, pkg, r"is not a readable .tar.gz package \(a tar header's checksum")


def test_a_base256_size_is_read_and_limited(dst: Store, tmp_path: Path) -> None:
    # GNU writes sizes of 8 GiB and more in base 256: the limit holds on those too.
    header = bytearray(tarfile.TarInfo("README.txt").tobuf(tarfile.GNU_FORMAT))
    header[124:136] = b"\x80" + (9 * 1024**3).to_bytes(11, "big")
    header[148:156] = b" " * 8
    header[148:155] = b"%06o\x00" % sum(header)
    pkg = tmp_path / "huge.tar.gz"
    pkg.write_bytes(gzip.compress(bytes(header)))
    refused(dst, pkg, r"member 'README.txt' is larger than the limit of \d+ bytes \(9663676416\)")


def test_a_package_not_starting_with_its_manifest_is_refused(
    dispatched: Path, dst: Store, tmp_path: Path
) -> None:
    members = read_members(dispatched)
    members.append(members.pop(0))
    refused(
        dst,
        write_package(tmp_path / "late.tar.gz", members),
        r"the package has no manifest.json \(its first member is 'README.txt'\)",
    )
