"""Task packages: export, import, and every hostile package refused with nothing written."""

from __future__ import annotations

import argparse
import gzip
import hashlib
import io
import json
import tarfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from blob_damage import damage_blob, lose_blob
from test_store_integrity import chain_problems

from store import Actor, CommandRejected, Store, StoreError
from store import commands as c
from store.canonical import GENESIS_HASH, canonical_json, chain_hash
from store.cli import archive as cli_archive
from store.commands.approvals import DecideApproval, RequestApproval
from store.commands.checkpoints import WriteCheckpoint
from store.commands.effects import DispatchEffect, PlanEffect
from store.migrate import HEAD
from store.record import stored_body
from store.services import archive as ar
from store.services.archive import export as archive_export

AGENT = Actor(kind="agent", id="writer-7")
ANA = Actor(kind="person", id="ana", name="Ana Lind")


@dataclass
class Source:
    store: Store
    tid: str
    approved: str  # an approval decided `approved`, its effect undispatched
    pending: str  # an approval still pending
    effect: str  # the effect the approved approval is for
    package: Path


def _fill(s: Store, ws: Path) -> tuple[str, str, str, str]:
    tid: str = s.execute(
        c.CreateTask(title="ship the guide", owner="ana", objective="ship", scope_paths=[str(ws)]),
        AGENT,
    )
    cid = s.execute(c.AddCriterion(task_id=tid, text="reviewed", criterion_id="reviewed"), AGENT)
    s.execute(
        c.RecordArtifact(
            task_id=tid, artifact_id="guide", name="guide", content=c.Content(text="draft one")
        ),
        AGENT,
    )
    s.execute(
        c.RecordArtifact(
            task_id=tid, artifact_id="guide", name="guide", content=c.Content(text="draft two")
        ),
        AGENT,
    )
    s.execute(
        c.AttachEvidence(
            task_id=tid,
            criterion_id=cid,
            kind="review",
            content=c.Content(text="looks right"),
            evidence_id="rev1",
        ),
        AGENT,
    )
    effect: str = s.execute(
        PlanEffect(
            task_id=tid,
            target="out.md",
            consequence="write out.md",
            content=c.Content(text="final text"),
            requires_approval=True,
            policy="every write is reviewed",
        ),
        AGENT,
    )
    approved: str = s.execute(
        RequestApproval(task_id=tid, effect_id=effect, policy="writes"), AGENT
    )
    s.execute(DecideApproval(task_id=tid, approval_id=approved, decision="approved"), ANA)
    other = s.execute(
        PlanEffect(
            task_id=tid,
            target="notes.md",
            consequence="write notes.md",
            content=c.Content(text="notes"),
            requires_approval=True,
        ),
        AGENT,
    )
    pending: str = s.execute(RequestApproval(task_id=tid, effect_id=other, policy="writes"), AGENT)
    s.execute(WriteCheckpoint(task_id=tid, reason="milestone", note="halfway"), AGENT)
    return tid, approved, pending, effect


@pytest.fixture(scope="module")
def src(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Source]:
    root = tmp_path_factory.mktemp("source")
    ws = root / "workspace"
    ws.mkdir()
    s = Store.open(root / "store")
    tid, approved, pending, effect = _fill(s, ws)
    pkg = ar.export_task(s, tid, root / "task.tar.gz")
    yield Source(s, tid, approved, pending, effect, pkg)
    s.close()


@pytest.fixture
def dst(tmp_path: Path, store_engine: str, request: pytest.FixtureRequest) -> Iterator[Store]:
    """The store a package is imported into, on each engine: a database of its own, apart
    from `s` (the source is SQLite; `s` exports from each engine)."""
    if store_engine == "sqlite":
        s = Store.open(tmp_path / "dst")
        yield s
        s.close()
        return
    cluster = request.getfixturevalue("pg_cluster")
    name = cluster.create()
    s = Store.open(tmp_path / "dst", url=cluster.url(name))
    yield s
    s.close()
    cluster.drop(name)


# --- building packages by hand ---------------------------------------------------------------


@dataclass
class Member:
    name: str
    data: bytes = b""
    type: bytes = tarfile.REGTYPE
    linkname: str = ""


def read_members(pkg: Path) -> list[Member]:
    with tarfile.open(pkg, "r:gz") as tar:
        out = []
        for info in tar:
            f = tar.extractfile(info)
            assert f is not None
            out.append(Member(info.name, f.read()))
        return out


def write_package(path: Path, members: list[Member]) -> Path:
    with (
        open(path, "wb") as raw,
        gzip.GzipFile(fileobj=raw, mode="wb") as gz,
        tarfile.open(fileobj=gz, mode="w|") as tar,
    ):
        for m in members:
            info = tarfile.TarInfo(m.name)
            info.type = m.type
            info.linkname = m.linkname
            info.size = len(m.data) if m.type == tarfile.REGTYPE else 0
            tar.addfile(info, io.BytesIO(m.data) if m.type == tarfile.REGTYPE else None)
    return path


def get(members: list[Member], name: str) -> Member:
    return next(m for m in members if m.name == name)


def manifest_of(members: list[Member]) -> dict[str, Any]:
    value: dict[str, Any] = json.loads(get(members, "manifest.json").data)
    return value


def set_manifest(members: list[Member], manifest: dict[str, Any]) -> None:
    get(members, "manifest.json").data = json.dumps(manifest).encode()


def fix_digests(members: list[Member]) -> None:
    """List every member's true digest in the manifest, so only the fault under test shows."""
    m = manifest_of(members)
    m["members"] = {
        x.name: {"sha256": hashlib.sha256(x.data).hexdigest(), "size": len(x.data)}
        for x in members
        if x.name != "manifest.json"
    }
    set_manifest(members, m)


def event_rows(members: list[Member]) -> list[dict[str, Any]]:
    return [json.loads(line) for line in get(members, "events.jsonl").data.splitlines()]


def set_events(members: list[Member], rows: list[dict[str, Any]], *, rechain: bool) -> None:
    """Replace events.jsonl; with `rechain`, recompute every hash as a forger would."""
    if rechain:
        prev = GENESIS_HASH
        for r in rows:
            actor = Actor(kind=r["actor_kind"], id=r["actor_id"], name=r["actor_name"])
            body = stored_body(
                r["task_id"],
                r["seq"],
                r["type"],
                r["format"],
                json.loads(r["payload"]),
                actor,
                r["at"],
            )
            r["prev_hash"] = prev
            r["hash"] = prev = chain_hash(prev, body)
        m = manifest_of(members)
        m.update(event_count=len(rows), head_seq=rows[-1]["seq"], head_hash=rows[-1]["hash"])
        set_manifest(members, m)
    get(members, "events.jsonl").data = b"".join(canonical_json(r).encode() + b"\n" for r in rows)


def snapshot(s: Store) -> tuple[list[str], list[str], int]:
    files = sorted(str(p.relative_to(s.blobs.root)) for p in s.blobs.root.rglob("*"))
    return s.task_ids(), files, s.data_version()


def refused(s: Store, pkg: Path, match: str, limits: ar.Limits | None = None) -> ar.PackageRefused:
    before = snapshot(s)
    with pytest.raises(ar.PackageRefused, match=match) as info:
        ar.import_package(s, pkg, limits=limits)
    assert "nothing was imported" in str(info.value)
    assert snapshot(s) == before
    return info.value


Edit = Callable[[list[Member]], None]


def hostile(src: Source, tmp_path: Path, edit: Edit) -> Path:
    members = read_members(src.package)
    edit(members)
    return write_package(tmp_path / "hostile.tar.gz", members)


# --- round trip ----------------------------------------------------------------------------


# What an import changes on purpose: approvals are retired, so the status and the pending work
# (which names open approvals) follow them.
_LIVE_KEYS = {
    "now", "approvals", "status", "status_reason", "updated_at", "last_seq", "head_hash",
    "pending_work",
}  # fmt: skip


def test_round_trip_keeps_the_record_and_retires_approvals(src: Source, dst: Store) -> None:
    result = ar.import_package(dst, src.package)
    tid = src.tid
    assert result["task_id"] == tid
    assert result["already_imported"] is False
    assert result["events_imported"] == len(src.store.events(tid))
    assert sorted(result["approvals_revoked"]) == sorted([src.approved, src.pending])

    before, after = src.store.task(tid).to_json(), dst.task(tid).to_json()
    assert {k: v for k, v in after.items() if k not in _LIVE_KEYS} == {
        k: v for k, v in before.items() if k not in _LIVE_KEYS
    }
    assert after["problems"] == []
    assert before["status"] == "awaiting_approval"
    assert after["status"] == "running"  # nothing is awaiting a usable approval here
    states = {a["approval_id"]: a["state"] for a in after["approvals"]}
    assert states == {src.approved: "revoked", src.pending: "revoked"}
    assert not [w for w in after["pending_work"] if w.startswith("approval ")]
    assert [w for w in before["pending_work"] if w.startswith("approval ")]
    # The source still holds them as they were: export changes nothing.
    assert {a["approval_id"]: a["state"] for a in before["approvals"]} == {
        src.approved: "approved",
        src.pending: "pending",
    }

    # The imported events are the source's, byte for byte, then the system's retirement.
    src_events, dst_events = src.store.events(tid), dst.events(tid)
    assert dst_events[: len(src_events)] == src_events
    tail = dst_events[len(src_events) :]
    assert [e["type"] for e in tail] == ["approval.retired", "run.status_changed"]
    assert tail[0].to_json()["actor"] == {"kind": "system", "id": "boris", "name": ""}
    assert tail[0]["payload"]["state"] == "revoked"
    assert tail[0]["payload"]["reason"] == ar.RETIRE_REASON
    assert chain_problems(dst, tid) == []

    for a in after["artifacts"]:
        for v in a["versions"]:
            assert dst.blobs.read(v["digest"]) == src.store.blobs.read(v["digest"])
    for cr in after["criteria"]:
        for e in cr["evidence"]:
            assert dst.blobs.read(e["digest"]) == b"looks right"
    assert after["checkpoints"] == before["checkpoints"]

    # History, not authority: the approved one cannot dispatch, the pending one cannot be decided.
    with pytest.raises(CommandRejected, match=f"{src.approved} is revoked"):
        dst.execute(DispatchEffect(task_id=tid, effect_id=src.effect, executor="t"), AGENT)
    with pytest.raises(CommandRejected, match="revoked"):
        dst.execute(DecideApproval(task_id=tid, approval_id=src.pending, decision="approved"), ANA)


def test_importing_twice_is_harmless(src: Source, dst: Store) -> None:
    ar.import_package(dst, src.package)
    before = snapshot(dst)
    events = dst.events(src.tid)
    again = ar.import_package(dst, src.package)
    assert again["already_imported"] is True
    assert again["events_imported"] == 0 and again["approvals_revoked"] == []
    assert snapshot(dst) == before
    assert dst.events(src.tid) == events


def test_an_imported_task_exports_and_imports_again(
    src: Source, dst: Store, tmp_path: Path
) -> None:
    ar.import_package(dst, src.package)
    pkg = ar.export_task(dst, src.tid, tmp_path / "again.tar.gz")
    with Store.open(tmp_path / "third") as third:
        result = ar.import_package(third, pkg)
        assert result["approvals_revoked"] == []  # already history
        assert third.events(src.tid) == dst.events(src.tid)


def test_the_package_lists_its_members_and_versions(src: Source) -> None:
    members = read_members(src.package)
    assert members[0].name == "manifest.json"
    m = manifest_of(members)
    assert m["format"] == ar.FORMAT and m["format_version"] == ar.FORMAT_VERSION
    assert m["task_id"] == src.tid
    events = src.store.events(src.tid)
    assert m["event_count"] == len(events) and m["head_seq"] == events[-1]["seq"]
    assert m["head_hash"] == events[-1]["hash"]
    assert m["event_formats"]["task.created"] == 1
    names = {x.name for x in members}
    assert {"README.txt", "events.jsonl", "checkpoints.json"} <= names
    assert set(m["members"]) == names - {"manifest.json"}
    for x in members[1:]:
        assert m["members"][x.name]["sha256"] == hashlib.sha256(x.data).hexdigest()
    blobs = {x.name for x in members if x.name.startswith("blobs/")}
    # two artifact versions, one evidence, two effects' intended content
    assert len(blobs) == 5
    readme = get(members, "README.txt").data.decode()
    assert "boris import" in readme and src.tid in readme
    rows = event_rows(members)
    assert [r["seq"] for r in rows] == list(range(1, len(rows) + 1))
    assert all(isinstance(r["payload"], str) for r in rows)


def test_the_package_file_is_readable_by_tar(src: Source) -> None:
    with tarfile.open(src.package, "r:gz") as tar:
        assert all(i.isreg() for i in tar.getmembers())


def test_a_different_history_under_the_same_id_is_refused(src: Source, dst: Store) -> None:
    dst.execute(c.CreateTask(task_id=src.tid, title="mine", owner="me", objective="x"), AGENT)
    head = dst.task(src.tid)["head_hash"]
    err = refused(dst, src.package, "already exists in this store with a different history")
    assert head in str(err)
    assert manifest_of(read_members(src.package))["head_hash"] in str(err)


def test_a_package_continuing_a_task_here_is_refused(s: Store, dst: Store, tmp_path: Path) -> None:
    tid = s.execute(c.CreateTask(title="T", owner="o", objective="x"), AGENT)
    first = ar.export_task(s, tid, tmp_path / "first.tar.gz")
    s.execute(c.AddCriterion(task_id=tid, text="later"), AGENT)
    second = ar.export_task(s, tid, tmp_path / "second.tar.gz")
    ar.import_package(dst, first)
    refused(dst, second, r"continues task .* past this store's copy \(seq 1 .* to seq 2 ")
    # The older package is already here: this store holds its whole history.
    assert ar.import_package(dst, first)["already_imported"] is True


def test_an_approval_id_held_by_another_task_here_is_refused(src: Source, dst: Store) -> None:
    other = dst.execute(c.CreateTask(title="other", owner="o", objective="x"), AGENT)
    dst.execute(
        RequestApproval(
            task_id=other, approval_id=src.pending, payload={"a": 1}, consequence="c", policy="p"
        ),
        AGENT,
    )
    refused(dst, src.package, rf"approval ids {src.pending} of task {src.tid} already belong")


def test_a_package_that_is_no_file_is_refused(dst: Store, tmp_path: Path) -> None:
    with pytest.raises(StoreError, match="no package at"):
        ar.import_package(dst, tmp_path / "absent.tar.gz")
    with pytest.raises(StoreError, match="not a regular file"):
        ar.import_package(dst, tmp_path)


def test_manifest_counts_must_match(src: Source, dst: Store, tmp_path: Path) -> None:
    def edit(ms: list[Member]) -> None:
        m = manifest_of(ms)
        m["head_seq"] = 3
        set_manifest(ms, m)

    refused(dst, hostile(src, tmp_path, edit), r"manifest.json says head_seq is 3")


# --- hostile packages: refused, nothing written --------------------------------------------


@pytest.mark.parametrize(
    ("member", "match"),
    [
        (Member("../evil", b"x"), r"'\.\./evil' climbs out of the package"),
        (Member("blobs/../../evil", b"x"), r"climbs out of the package"),
        (Member("/etc/passwd", b"x"), r"'/etc/passwd' is an absolute path"),
        (Member("C:/evil", b"x"), r"is an absolute path"),
        (Member("blobs\\evil", b"x"), r"backslash"),
        (Member("evil.sh", b"x"), r"'evil.sh' is not a member a Boris package has"),
        (
            Member("blobs/" + "0" * 64, type=tarfile.SYMTYPE, linkname="/etc/passwd"),
            r"is a symbolic link \(to '/etc/passwd'\)",
        ),
        (
            Member("README.txt", type=tarfile.LNKTYPE, linkname="manifest.json"),
            r"'README.txt' is a hard link",
        ),
        (Member("README.txt", type=tarfile.CHRTYPE), r"is a device"),
        (Member("README.txt", type=tarfile.FIFOTYPE), r"is a named pipe"),
        (Member("README.txt", type=tarfile.DIRTYPE), r"is a directory where a file is expected"),
    ],
)
def test_hostile_member_is_refused(
    src: Source, dst: Store, tmp_path: Path, member: Member, match: str
) -> None:
    pkg = hostile(src, tmp_path, lambda ms: ms.insert(1, member))
    refused(dst, pkg, match)


def test_duplicate_member_is_refused(src: Source, dst: Store, tmp_path: Path) -> None:
    pkg = hostile(src, tmp_path, lambda ms: ms.append(Member("README.txt", b"the second one")))
    refused(dst, pkg, r"'README.txt' appears twice")


def test_member_over_the_size_limit_is_refused(src: Source, dst: Store) -> None:
    limits = ar.Limits(member_bytes=100)
    refused(
        dst, src.package, r"member 'manifest.json' is larger than the limit of 100 bytes", limits
    )


def test_too_many_members_are_refused(src: Source, dst: Store) -> None:
    refused(dst, src.package, r"more than 3 members", ar.Limits(members=3))


def test_compression_bomb_stops_at_the_limit(src: Source, dst: Store, tmp_path: Path) -> None:
    zeros = bytes(32 * 1024 * 1024)
    name = "blobs/" + hashlib.sha256(zeros).hexdigest()

    def edit(ms: list[Member]) -> None:
        ms.insert(1, Member(name, zeros))
        fix_digests(ms)  # listed with its true size, so only the volume is at fault

    pkg = hostile(src, tmp_path, edit)
    assert pkg.stat().st_size < 256 * 1024  # a small file that expands a hundredfold
    limit = 1024 * 1024
    err = refused(
        dst,
        pkg,
        rf"decompresses to more than {limit} bytes \(in member '{name}'\)",
        ar.Limits(total_bytes=limit),
    )
    assert isinstance(err, ar.PackageTooLarge)
    assert err.streamed <= limit + 1  # reading stopped at the limit, not at the end


def test_oversized_extended_header_is_refused(src: Source, dst: Store, tmp_path: Path) -> None:
    members = read_members(src.package)
    path = tmp_path / "pax.tar.gz"
    with (
        open(path, "wb") as raw,
        gzip.GzipFile(fileobj=raw, mode="wb") as gz,
        tarfile.open(fileobj=gz, mode="w|", format=tarfile.PAX_FORMAT) as tar,
    ):
        for m in members:
            info = tarfile.TarInfo(m.name)
            info.size = len(m.data)
            info.pax_headers = {"comment": "x" * 4096}
            tar.addfile(info, io.BytesIO(m.data))
    refused(
        dst,
        path,
        r"extended tar header of \d+ bytes \(the limit is 512\)",
        ar.Limits(header_bytes=512),
    )


def test_digest_mismatch_names_the_member(src: Source, dst: Store, tmp_path: Path) -> None:
    def edit(ms: list[Member]) -> None:
        readme = get(ms, "README.txt")
        readme.data = b"X" + readme.data[1:]  # same size, other bytes

    refused(
        dst,
        hostile(src, tmp_path, edit),
        r"member 'README.txt' does not match its digest in manifest.json",
    )


def test_a_member_of_another_size_than_listed_is_refused_from_its_header(
    src: Source, dst: Store, tmp_path: Path
) -> None:
    pkg = hostile(src, tmp_path, lambda ms: setattr(get(ms, "README.txt"), "data", b"changed"))
    refused(dst, pkg, r"member 'README.txt' has 7 bytes; manifest.json says \d+")


def test_blob_content_not_matching_its_name_is_refused(
    src: Source, dst: Store, tmp_path: Path
) -> None:
    def edit(ms: list[Member]) -> None:
        blob = next(m for m in ms if m.name.startswith("blobs/"))
        blob.data = b"other bytes"
        fix_digests(ms)

    refused(
        dst, hostile(src, tmp_path, edit), r"member 'blobs/[0-9a-f]{64}' does not match its name"
    )


def test_tampered_event_fails_the_chain_naming_its_seq(
    src: Source, dst: Store, tmp_path: Path
) -> None:
    def edit(ms: list[Member]) -> None:
        rows = event_rows(ms)
        payload = json.loads(rows[1]["payload"])
        payload["text"] = "a weaker criterion"
        rows[1]["payload"] = canonical_json(payload)
        set_events(ms, rows, rechain=False)
        fix_digests(ms)

    refused(
        dst,
        hostile(src, tmp_path, edit),
        r"event seq 2 \(criterion.added\) does not match its hash: the event was altered",
    )


def test_removed_event_is_a_gap(src: Source, dst: Store, tmp_path: Path) -> None:
    def edit(ms: list[Member]) -> None:
        rows = event_rows(ms)
        del rows[2]
        set_events(ms, rows, rechain=False)
        fix_digests(ms)

    refused(dst, hostile(src, tmp_path, edit), r"line 3 has seq 4, expected 3")


def test_forged_approval_for_another_task_is_refused(
    src: Source, dst: Store, tmp_path: Path
) -> None:
    # A consistent chain that decides an approval it never requested (another task's id):
    # the projection keys approvals by id alone, so this would grant authority elsewhere.
    def edit(ms: list[Member]) -> None:
        rows = event_rows(ms)
        last = rows[-1]
        payload = {"approval_id": "apr-victim", "decision": "approved", "note": ""}
        rows.append(
            dict(
                last, seq=last["seq"] + 1, type="approval.decided", payload=canonical_json(payload)
            )
        )
        set_events(ms, rows, rechain=True)
        m = manifest_of(ms)
        m["event_formats"]["approval.decided"] = 1
        set_manifest(ms, m)
        fix_digests(ms)

    refused(dst, hostile(src, tmp_path, edit), r"names approval apr-victim, which the task never")


@pytest.mark.parametrize(
    ("change", "match"),
    [
        ({"schema_revision": "9999"}, rf"the package has schema 9999.*reads schema up to {HEAD}"),
        ({"format_version": 4}, r"the package is in format 4.*reads package formats up to 3"),
        (
            {"event_formats": {"task.created": 7}},
            r"'task.created' events in format 7.*up to format 1",
        ),
        ({"event_formats": {"task.teleported": 1}}, r"type 'task.teleported'.*does not know"),
        ({"format": "something-else"}, r"does not describe a Boris task package"),
    ],
)
def test_newer_or_foreign_manifest_is_refused(
    src: Source, dst: Store, tmp_path: Path, change: dict[str, Any], match: str
) -> None:
    def edit(ms: list[Member]) -> None:
        m = manifest_of(ms)
        m.update(change)
        set_manifest(ms, m)

    refused(dst, hostile(src, tmp_path, edit), match)


def test_newer_event_format_is_refused_naming_the_seq(
    src: Source, dst: Store, tmp_path: Path
) -> None:
    def edit(ms: list[Member]) -> None:
        rows = event_rows(ms)
        rows[1]["format"] = 2
        set_events(ms, rows, rechain=True)
        fix_digests(ms)

    refused(
        dst,
        hostile(src, tmp_path, edit),
        r"event seq 2 \(criterion.added\): event 'criterion.added' is in format 2",
    )


def test_missing_member_is_refused(src: Source, dst: Store, tmp_path: Path) -> None:
    pkg = hostile(src, tmp_path, lambda ms: ms.remove(get(ms, "checkpoints.json")))
    refused(dst, pkg, r"member 'checkpoints.json' listed in manifest.json is missing")


def test_missing_blob_is_refused_naming_its_owner(src: Source, dst: Store, tmp_path: Path) -> None:
    digest = src.store.task(src.tid)["artifacts"][0]["versions"][0]["digest"]

    def edit(ms: list[Member]) -> None:
        ms.remove(get(ms, "blobs/" + digest.removeprefix("sha256:")))
        fix_digests(ms)

    refused(
        dst, hostile(src, tmp_path, edit), rf"blob {digest} \(artifact guide v1, event seq \d+\)"
    )


def test_unlisted_member_is_refused(src: Source, dst: Store, tmp_path: Path) -> None:
    def edit(ms: list[Member]) -> None:
        m = manifest_of(ms)
        del m["members"]["README.txt"]
        set_manifest(ms, m)

    refused(dst, hostile(src, tmp_path, edit), r"'README.txt' is not listed in manifest.json")


def test_checkpoints_json_must_match_the_events(src: Source, dst: Store, tmp_path: Path) -> None:
    def edit(ms: list[Member]) -> None:
        cps = json.loads(get(ms, "checkpoints.json").data)
        cps[-1]["note"] = "a different story"
        get(ms, "checkpoints.json").data = json.dumps(cps).encode()
        fix_digests(ms)

    refused(dst, hostile(src, tmp_path, edit), r"checkpoints.json does not match")


def test_not_a_package_is_refused(dst: Store, tmp_path: Path) -> None:
    pkg = tmp_path / "junk.tar.gz"
    pkg.write_bytes(b"this is not gzip at all" * 10)
    refused(dst, pkg, r"is not a readable .tar.gz package")
    truncated = tmp_path / "cut.tar.gz"
    truncated.write_bytes(gzip.compress(bytes(10_000))[:40])
    refused(dst, truncated, r"is not a readable .tar.gz package")


# --- export ---------------------------------------------------------------------------------


def test_export_refuses_an_existing_file_unless_forced(src: Source, tmp_path: Path) -> None:
    out = tmp_path / "t.tar.gz"
    out.write_bytes(b"keep me")
    with pytest.raises(ar.ExportFailed, match="already exists"):
        ar.export_task(src.store, src.tid, out)
    assert out.read_bytes() == b"keep me"
    ar.export_task(src.store, src.tid, out, force=True)
    assert manifest_of(read_members(out))["task_id"] == src.tid
    assert [p.name for p in tmp_path.iterdir()] == ["t.tar.gz"]


def test_export_is_atomic_when_it_fails_midway(
    src: Source, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls = []

    def boom(*args: Any) -> None:
        calls.append(args)
        raise OSError("the disk is full")

    monkeypatch.setattr(archive_export, "_write_blob", boom)
    out = tmp_path / "t.tar.gz"
    with pytest.raises(OSError, match="disk is full"):
        ar.export_task(src.store, src.tid, out)
    assert calls  # it failed with part of the package written
    assert list(tmp_path.iterdir()) == []


def test_export_refuses_a_missing_blob_naming_digest_and_owner(
    tmp_path: Path, s: Store, ws: Path
) -> None:
    tid, *_ = _fill(s, ws)
    digest = s.task(tid)["criteria"][0]["evidence"][0]["digest"]
    lose_blob(s, digest)
    out = tmp_path / "t.tar.gz"
    with pytest.raises(
        ar.ExportFailed, match=rf"blob {digest} is missing \(owned by evidence rev1\)"
    ):
        ar.export_task(s, tid, out)
    assert not out.exists()
    assert not [p for p in tmp_path.iterdir() if ".partial-" in p.name]


def test_export_refuses_a_corrupt_blob(tmp_path: Path, s: Store, ws: Path) -> None:
    tid, *_ = _fill(s, ws)
    digest = s.task(tid)["artifacts"][0]["versions"][1]["digest"]
    damage_blob(s, digest, b"draft tw0")  # same size, other bytes
    out = tmp_path / "t.tar.gz"
    with pytest.raises(ar.ExportFailed, match=rf"blob {digest} is corrupt.*artifact guide v2"):
        ar.export_task(s, tid, out)
    assert not out.exists()
    assert not [p for p in tmp_path.iterdir() if ".partial-" in p.name]


def test_export_of_an_unknown_task_is_refused(src: Source, tmp_path: Path) -> None:
    with pytest.raises(CommandRejected, match="no task with id 'nope'"):
        ar.export_task(src.store, "nope", tmp_path / "x.tar.gz")
    assert list(tmp_path.iterdir()) == []


# --- the command line ---------------------------------------------------------------------


def run_cli(argv: list[str], capsys: pytest.CaptureFixture[str]) -> Any:
    """The subcommands wired as store.cli wires them (`add(name, fn)`)."""
    p = argparse.ArgumentParser(prog="boris")
    p.add_argument("--store")
    p.add_argument("--json", action="store_true")
    sub = p.add_subparsers(dest="command", required=True)

    def add(name: str, fn: Any) -> argparse.ArgumentParser:
        sp = sub.add_parser(name)
        sp.set_defaults(fn=fn)
        return sp

    cli_archive.register(add)
    args = p.parse_args(argv)
    with Store.open(args.store) as s:
        args.fn(s, args)
    out = capsys.readouterr().out
    return json.loads(out)["result"] if args.json else out


def test_cli_export_and_import(
    src: Source, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    src_dir = str(src.store.location.directory)
    out = tmp_path / "cli.tar.gz"
    exported = run_cli(["--store", src_dir, "--json", "export", src.tid, str(out)], capsys)
    assert exported["task_id"] == src.tid and exported["package"] == str(out)
    assert exported["blobs"] == 5
    human = run_cli(["--store", src_dir, "export", src.tid, str(out), "--force"], capsys)
    assert f"exported task {src.tid} to {out}" in human

    dst_dir = str(tmp_path / "dst")
    imported = run_cli(["--store", dst_dir, "--json", "import", str(out)], capsys)
    assert imported["already_imported"] is False
    assert sorted(imported["approvals_revoked"]) == sorted([src.approved, src.pending])
    again = run_cli(["--store", dst_dir, "import", str(out)], capsys)
    assert "already imported; nothing changed" in again
