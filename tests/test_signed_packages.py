"""Signed packages: an exported task carries its keyring and signatures, so its history
verifies offline against a keys file alone (`boris verify-package`), and an import refuses a
package whose signatures fail, naming the task, seq and key."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from cryptography.hazmat.primitives import serialization
from test_archive import (
    event_rows,
    fix_digests,
    get,
    manifest_of,
    read_members,
    set_events,
    set_manifest,
    snapshot,
    write_package,
)

from store import commands as c
from store import schema as t
from store import store as store_module
from store.canonical import canonical_json
from store.cli import main as cli
from store.commands.approvals import DecideApproval, RequestApproval
from store.commands.checkpoints import WriteCheckpoint
from store.model import Actor
from store.services import archive as ar
from store.services.verify import verify
from store.signing import SignatureRefused, SigningKey, keyring, read_keys_file
from store.signing.keyring import KeyringRefused
from store.signing.seal import encode_signature, record_message
from store.signing.trust import add_key, require
from store.store import Store

ALICE = Actor(kind="person", id="alice", name="Alice")
BOT = Actor(kind="agent", id="bot")


class Signed:
    """A signed store holding one task: requested by the agent, approved by Alice, two
    checkpoints (the second supersedes the first), a criterion after them."""

    def __init__(self, store: Store, ws: Path, out: Path) -> None:
        self.store = store
        self.alice = SigningKey.generate()
        self.bot = SigningKey.generate()
        require(store, self.alice, ALICE)
        add_key(store, self.alice, self.bot.public_raw, BOT)
        self.tid = self.by_bot(
            c.CreateTask(title="T", owner="alice", objective="x", scope_paths=[str(ws)])
        )
        self.aid = self.by_bot(
            RequestApproval(task_id=self.tid, payload={"x": 1}, consequence="sends x", policy="p")
        )
        self.decide = DecideApproval(task_id=self.tid, approval_id=self.aid, decision="approved")
        self.by_alice(self.decide)
        self.by_bot(WriteCheckpoint(task_id=self.tid, reason="milestone"))
        self.by_bot(c.AddCriterion(task_id=self.tid, text="reviewed"))
        self.by_bot(WriteCheckpoint(task_id=self.tid, reason="milestone"))
        self.by_bot(c.AddCriterion(task_id=self.tid, text="shipped"))
        self.out = out

    def by_bot(self, command: Any) -> Any:
        self.store.signer = self.bot
        return self.store.execute(command, BOT)

    def by_alice(self, command: Any) -> Any:
        self.store.signer = self.alice
        return self.store.execute(command, ALICE)

    def export(self, name: str = "task.tar.gz") -> Path:
        return ar.export_task(self.store, self.tid, self.out / name)

    def keys(self, *who: str) -> Path:
        pairs = {"alice": (self.alice, ALICE), "bot": (self.bot, BOT)}
        path = self.out / f"keys-{'-'.join(who) or 'none'}.txt"
        path.write_text(
            "".join(
                f"{k.key_id} {a.kind}:{a.id} {k.public_text}\n" for k, a in (pairs[w] for w in who)
            )
        )
        return path


@pytest.fixture
def signed(store: Store, ws: Path, tmp_path: Path) -> Signed:
    return Signed(store, ws, tmp_path)


@pytest.fixture
def dst(tmp_path: Path, store_engine: str, request: pytest.FixtureRequest) -> Iterator[Store]:
    """The store a package is imported into: a database of its own, on the test's engine."""
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


def problems(report: Any) -> list[tuple[str, str, str]]:
    return [(p.task_id, p.kind, p.message) for p in report.problems]


def signatures_of(pkg: Path) -> list[dict[str, Any]]:
    data = get(read_members(pkg), "signatures.jsonl").data
    return [json.loads(line) for line in data.splitlines()]


def refused_import(dst: Store, pkg: Path, match: str) -> ar.PackageRefused:
    before = snapshot(dst)
    with pytest.raises(ar.PackageSignaturesFail, match=match) as info:
        ar.import_package(dst, pkg)
    assert snapshot(dst) == before and dst.task_ids() == []
    return info.value


def test_a_signed_task_verifies_offline_with_only_the_keys_file(
    signed: Signed, dst: Store, capsys: pytest.CaptureFixture[str]
) -> None:
    pkg = signed.export()
    members = {m.name for m in read_members(pkg)}
    assert {"keyring.json", "signatures.jsonl"} <= members
    m = manifest_of(read_members(pkg))
    assert m["format_version"] == ar.FORMAT_VERSION == 3 and m["signed"] is True
    sigs = signatures_of(pkg)
    # One signature per write transaction (seven here), the last over the head.
    assert m["signature_count"] == len(sigs) == 7
    assert sigs[-1]["seq"] == len(signed.store.events(signed.tid))
    keys = signed.keys("alice", "bot")
    report = ar.verify_package(pkg, read_keys_file(keys))
    assert report.ok and report.signed and report.tasks == [signed.tid]
    by = {i.message.split(" ")[1]: i.message for i in report.info if i.kind == "signed_by"}
    assert "(person:alice): 1 write," in by[signed.alice.key_id]
    assert "(agent:bot)" in by[signed.bot.key_id]

    # The store is gone: the package and the keys file are all verify-package reads.
    signed.store.close()
    assert cli(["verify-package", str(pkg), "--keys", str(keys)]) == 0
    out = capsys.readouterr().out
    assert out.endswith("ok\n") and f"{signed.tid}: signed_by: key {signed.alice.key_id}" in out

    result = ar.import_package(dst, pkg)
    assert result["signed"] is True and result["task_id"] == signed.tid
    assert result["approvals_revoked"] == [signed.aid]


def test_a_rechained_forged_archive_is_refused_naming_the_place(
    signed: Signed, dst: Store, capsys: pytest.CaptureFixture[str]
) -> None:
    pkg = signed.export()
    members = read_members(pkg)
    rows = event_rows(members)
    last = rows[-1]
    payload = json.loads(last["payload"])
    payload["text"] = "shipped, and the budget doubled"
    last["payload"] = canonical_json(payload)
    # The forger recomputes the whole hash chain; the signatures cannot be recomputed.
    set_events(members, rows, rechain=True)
    fix_digests(members)
    forged = write_package(signed.out / "forged.tar.gz", members)
    seq = last["seq"]

    keys = signed.keys("alice", "bot")
    report = ar.verify_package(forged, read_keys_file(keys))
    assert [(p[0], p[1]) for p in problems(report)] == [(signed.tid, "bad_signature")]
    assert problems(report)[0][2].startswith(f"seq {seq}: signature by key {signed.bot.key_id}")
    assert cli(["verify-package", str(forged), "--keys", str(keys)]) == 3
    out, err = capsys.readouterr()
    assert f"{signed.tid}: bad_signature: seq {seq}: signature by key {signed.bot.key_id}" in out
    assert "1 problem" in err

    err_ = refused_import(dst, forged, rf"seq {seq}: signature by key {signed.bot.key_id}")
    assert ("bad_signature", problems(report)[0][2]) in err_.problems
    # The same refusal, as a program reads it: a typed code, nothing written.
    where = ["--store", str(dst.location.directory)]
    if dst.location.sqlite_file is None:
        where += ["--url", dst.engine.url.render_as_string(hide_password=False)]
    assert cli([*where, "--json", "import", str(forged)]) == 1
    answer = json.loads(capsys.readouterr().out)
    assert answer["error"]["code"] == "package_signatures_fail"
    assert dst.task_ids() == []


def test_signatures_stripped_or_tampered_in_a_package_are_refused(
    signed: Signed, dst: Store
) -> None:
    pkg = signed.export()
    # Every signature but the first dropped (the manifest told the new count).
    members = read_members(pkg)
    get(members, "signatures.jsonl").data = get(members, "signatures.jsonl").data.split(b"\n")[0]
    get(members, "signatures.jsonl").data += b"\n"
    m = manifest_of(members)
    m["signature_count"] = 1
    set_manifest(members, m)
    fix_digests(members)
    stripped = write_package(signed.out / "stripped.tar.gz", members)
    head = len(signed.store.events(signed.tid))
    first = signatures_of(pkg)[0]["seq"]
    refused_import(dst, stripped, rf"unsigned_tail: seq {first + 1}\.\.{head}")
    report = ar.verify_package(stripped, read_keys_file(signed.keys("alice", "bot")))
    assert [p[1] for p in problems(report)] == ["unsigned_tail"]

    # Alice's signature over her decision, one byte changed.
    members = read_members(pkg)
    sigs = signatures_of(pkg)
    alices = next(s for s in sigs if s["key_id"] == signed.alice.key_id)
    raw = bytearray(__import__("base64").b64decode(alices["signature"]))
    raw[5] ^= 1
    alices["signature"] = encode_signature(bytes(raw))
    get(members, "signatures.jsonl").data = b"".join(
        canonical_json(s).encode() + b"\n" for s in sigs
    )
    fix_digests(members)
    tampered = write_package(signed.out / "tampered.tar.gz", members)
    refused_import(dst, tampered, rf"seq {alices['seq']}: signature by key {signed.alice.key_id}")


def test_an_approval_signed_by_an_agents_key_is_reported(
    signed: Signed, dst: Store, capsys: pytest.CaptureFixture[str]
) -> None:
    # A second approval, "decided by Alice" but signed with the agent's key: written past
    # the command layer, whose seal refuses it (test_signing), then exported.
    aid = signed.by_bot(
        RequestApproval(task_id=signed.tid, payload={"y": 2}, consequence="sends y", policy="p")
    )
    bot = signed.bot
    before = len(signed.store.events(signed.tid))

    def sign_as_bot(conn: Any, policy: Any, signer: Any, emitted: Any, now: str) -> None:
        e = emitted[-1]
        conn.execute(
            sa.insert(t.signatures).values(
                task_id=e.task_id,
                seq=e.seq,
                key_id=bot.key_id,
                signature=encode_signature(bot.sign(record_message(e.task_id, e.seq, e.hash))),
            )
        )

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(store_module, "seal", sign_as_bot)
        signed.by_alice(DecideApproval(task_id=signed.tid, approval_id=aid, decision="approved"))
    # The decision's transaction: every event in it is Alice's, each one named.
    forged = [e["seq"] for e in signed.store.events(signed.tid)[before:]]
    assert forged
    seq = forged[0]
    pkg = signed.export()

    keys = signed.keys("alice", "bot")
    report = ar.verify_package(pkg, read_keys_file(keys))
    found = problems(report)
    assert {(p[0], p[1]) for p in found} == {(signed.tid, "key_names_another_actor")}
    assert [p[2].split(":")[0] for p in found] == [f"seq {n}" for n in forged]
    message = found[0][2]
    assert message.startswith(f"seq {seq}: by person:alice but signed (seq {forged[-1]})")
    assert bot.key_id in message and "agent:bot" in message
    assert cli(["verify-package", str(pkg), "--keys", str(keys)]) == 3
    assert f"key_names_another_actor: seq {seq}" in capsys.readouterr().out
    refused_import(dst, pkg, rf"key_names_another_actor: seq {seq}: by person:alice")


def test_a_keys_file_missing_the_signers_key_fails(
    signed: Signed, capsys: pytest.CaptureFixture[str]
) -> None:
    pkg = signed.export()
    alice_only = signed.keys("alice")
    report = ar.verify_package(pkg, read_keys_file(alice_only))
    found = problems(report)
    assert {(p[0], p[1]) for p in found} == {(signed.tid, "unknown_key")}
    assert found[0][2] == f"seq 1: signed by unknown key {signed.bot.key_id}"
    # Alice's own signature still verifies: only the agent's writes are unproved.
    assert not any(signed.alice.key_id in p[2] for p in found)
    assert cli(["--json", "verify-package", str(pkg), "--keys", str(alice_only)]) == 3
    answer = json.loads(capsys.readouterr().out)
    assert answer["error"]["category"] == "integrity"
    kinds = {p["kind"] for p in answer["error"]["details"]["report"]["problems"]}
    assert kinds == {"unknown_key"}
    # The package's own keyring is not trusted: a keys file with nobody in it proves nothing.
    nobody = signed.keys()
    report = ar.verify_package(pkg, read_keys_file(nobody))
    assert report.problems and {p.kind for p in report.problems} == {"unknown_key"}


def test_an_unsigned_package_imports_and_says_it_is_unsigned(
    store: Store, ws: Path, dst: Store, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tid = store.execute(
        c.CreateTask(title="T", owner="o", objective="x", scope_paths=[str(ws)]), BOT
    )
    store.execute(WriteCheckpoint(task_id=tid, reason="milestone"), BOT)
    pkg = ar.export_task(store, tid, tmp_path / "unsigned.tar.gz")
    m = manifest_of(read_members(pkg))
    assert m["signed"] is False and m["signature_count"] == 0
    keys = tmp_path / "keys.txt"
    key = SigningKey.generate()
    keys.write_text(f"{key.key_id} person:alice {key.public_text}\n")
    # Offline, with keys to check against, an unsigned package proves nothing.
    report = ar.verify_package(pkg, read_keys_file(keys))
    assert [(p.task_id, p.kind) for p in report.problems] == [(tid, "unsigned_package")]
    assert cli(["verify-package", str(pkg), "--keys", str(keys)]) == 3
    capsys.readouterr()

    where = ["--store", str(dst.location.directory)]
    if dst.location.sqlite_file is None:
        where += ["--url", dst.engine.url.render_as_string(hide_password=False)]
    assert cli([*where, "import", str(pkg)]) == 0
    out, err = capsys.readouterr()
    assert f"imported task {tid}" in out and "unsigned package" in err
    assert dst.task_ids() == [tid]


def test_a_format_1_package_still_imports_as_unsigned(
    store: Store, ws: Path, dst: Store, tmp_path: Path
) -> None:
    tid = store.execute(
        c.CreateTask(title="T", owner="o", objective="x", scope_paths=[str(ws)]), BOT
    )
    pkg = ar.export_task(store, tid, tmp_path / "new.tar.gz")
    # The package an older Boris wrote: no keyring or signatures members, format 1.
    members = [m for m in read_members(pkg) if m.name not in {"keyring.json", "signatures.jsonl"}]
    m = manifest_of(members)
    m["format_version"] = 1
    del m["signed"], m["signature_count"]
    set_manifest(members, m)
    fix_digests(members)
    old = write_package(tmp_path / "old.tar.gz", members)
    result = ar.import_package(dst, old)
    assert result["signed"] is False and dst.task_ids() == [tid]
    # A format 2 package must carry them.
    members = [m for m in read_members(pkg) if m.name != "signatures.jsonl"]
    fix_digests(members)
    with pytest.raises(ar.PackageRefused, match=r"has no member 'signatures\.jsonl'"):
        ar.import_package(dst, write_package(tmp_path / "cut.tar.gz", members))
    # A format 3 package must carry passkeys.json (empty here: no decision by passkey).
    members = read_members(pkg)
    assert json.loads(get(members, "passkeys.json").data) == {"entries": []}
    members = [m for m in members if m.name != "passkeys.json"]
    fix_digests(members)
    with pytest.raises(ar.PackageRefused, match=r"has no member 'passkeys\.json'"):
        ar.import_package(dst, write_package(tmp_path / "cut3.tar.gz", members))


def test_a_format_2_package_still_imports_and_verifies(
    signed: Signed, dst: Store, tmp_path: Path
) -> None:
    """The package an earlier Boris wrote (no passkeys.json) still verifies offline and imports."""
    pkg = signed.export()
    members = [m for m in read_members(pkg) if m.name != "passkeys.json"]
    m = manifest_of(members)
    m["format_version"] = 2
    set_manifest(members, m)
    fix_digests(members)
    old = write_package(tmp_path / "format2.tar.gz", members)
    report = ar.verify_package(old, read_keys_file(signed.keys("alice", "bot")))
    assert report.ok and report.signed
    assert ar.import_package(dst, old)["signed"] is True


def test_a_signed_store_keeps_an_imported_tasks_signatures_as_history(
    signed: Signed, dst: Store
) -> None:
    pkg = signed.export()
    carol = SigningKey.generate()
    CAROL = Actor(kind="person", id="carol")
    require(dst, carol, CAROL)
    # Keys this store does not trust: refused, each named with the actor it claims.
    before = snapshot(dst)
    with pytest.raises(ar.PackageKeyUntrusted) as untrusted:
        ar.import_package(dst, pkg)
    assert untrusted.value.keys == {
        signed.alice.key_id: "person:alice",
        signed.bot.key_id: "agent:bot",
    }
    assert snapshot(dst) == before
    vouched = [signed.alice.key_id, signed.bot.key_id]
    # Without the importer's key a signed store cannot vouch for the package's keys.
    with pytest.raises(SignatureRefused) as err:
        ar.import_package(dst, pkg, trust=vouched)
    assert err.value.code == "signature_required" and snapshot(dst) == before

    dst.signer = carol
    result = ar.import_package(dst, pkg, trust=vouched)
    assert result["signatures_kept"] == len(signatures_of(pkg))
    report = verify(dst, remember=False)
    assert report.ok and report.signed, problems(report)
    with dst.read() as conn:
        ring = keyring.load(conn)
    assert {k: (b.actor, b.imported_at is not None) for k, b in ring.bindings.items()} == {
        carol.key_id: ("person:carol", False),
        signed.alice.key_id: ("person:alice", True),
        signed.bot.key_id: ("agent:bot", True),
    }
    # Out of band, this store's record checks against the three public keys alone.
    keys = signed.keys("alice", "bot")
    with keys.open("a") as f:
        f.write(f"{carol.key_id} person:carol {carol.public_text}\n")
    assert verify(dst, remember=False, keys=read_keys_file(keys)).ok

    # The imported keys prove history only: they sign nothing new here, nor vouch for keys.
    dst.signer = signed.bot
    with pytest.raises(SignatureRefused) as err:
        dst.execute(c.AddCriterion(task_id=signed.tid, text="late"), BOT)
    assert err.value.code == "revoked_key" and "imported with a task" in str(err.value)
    with pytest.raises(KeyringRefused):
        add_key(dst, signed.alice, SigningKey.generate().public_raw, BOT)


def where(store: Store) -> list[str]:
    args = ["--store", str(store.location.directory)]
    if store.location.sqlite_file is None:
        args += ["--url", store.engine.url.render_as_string(hide_password=False)]
    return args


def test_a_package_re_signed_with_a_forgers_keys_is_not_the_persons_decision(
    store: Store, ws: Path, dst: Store, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 31, 1: a forger makes a history whose approval is decided by person:alice and
    signs all of it with keys of their own (a keyring binding their key to person:alice):
    its chain, signatures and keyring all hold. Alice's own signed store refuses it, naming
    the key and the actor it claims; her store still verifies; `verify-package` with her
    real keys reports the forger's keys; only an explicit --trust-key imports it."""
    alice = SigningKey.generate()
    require(dst, alice, ALICE)
    dst.signer = alice
    forged = Signed(store, ws, tmp_path)  # its "alice" key is the forger's
    decided = [e for e in forged.store.events(forged.tid) if e["type"] == "approval.decided"]
    assert decided and decided[0]["actor"]["id"] == "alice"
    pkg = forged.export()
    assert ar.verify_package(pkg, read_keys_file(forged.keys("alice", "bot"))).ok

    before = snapshot(dst)
    with pytest.raises(ar.PackageKeyUntrusted) as err:
        ar.import_package(dst, pkg)
    assert err.value.keys == {forged.alice.key_id: "person:alice", forged.bot.key_id: "agent:bot"}
    assert f"{forged.alice.key_id} (claims person:alice)" in str(err.value)
    assert snapshot(dst) == before and dst.task_ids() == []
    assert verify(dst, remember=False).ok
    with dst.read() as conn:
        assert set(keyring.load(conn).bindings) == {alice.key_id}

    capsys.readouterr()
    assert cli([*where(dst), "--actor", "person:alice", "import", str(pkg)]) == 1
    out, err_text = capsys.readouterr()
    assert out == "" and len(err_text.strip().splitlines()) == 1
    assert forged.alice.key_id in err_text and "person:alice" in err_text
    assert cli([*where(dst), "--json", "--actor", "person:alice", "import", str(pkg)]) == 1
    assert json.loads(capsys.readouterr().out)["error"]["code"] == "package_key_untrusted"

    # Out of band, against Alice's real key: the forger's keys prove nothing.
    real = tmp_path / "alice.keys"
    real.write_text(f"{alice.key_id} person:alice {alice.public_text}\n")
    report = ar.verify_package(pkg, read_keys_file(real))
    assert {p.kind for p in report.problems} == {"unknown_key"}
    assert any(forged.alice.key_id in p.message for p in report.problems)
    assert cli(["verify-package", str(pkg), "--keys", str(real)]) == 3
    assert f"unknown key {forged.alice.key_id}" in capsys.readouterr().out

    # Naming one key is not enough; a person who vouches for both imports it, as history.
    with pytest.raises(ar.PackageKeyUntrusted) as err:
        ar.import_package(dst, pkg, trust=[forged.bot.key_id])
    assert err.value.keys == {forged.alice.key_id: "person:alice"}
    alice_pem = tmp_path / "alice.pem"
    alice_pem.write_bytes(
        alice.private.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    vouch = ["--trust-key", forged.alice.key_id, "--trust-key", forged.bot.key_id]
    as_alice = [*where(dst), "--json", "--actor", "person:alice", "--key", str(alice_pem)]
    capsys.readouterr()
    assert cli([*as_alice, "import", str(pkg), *vouch]) == 0
    result = json.loads(capsys.readouterr().out)["result"]
    assert result["task_id"] == forged.tid and verify(dst, remember=False).ok
    with dst.read() as conn:
        bound = keyring.load(conn).bindings[forged.alice.key_id]
    assert bound.imported_at is not None  # signs history only, never a new write here


def test_a_key_the_store_already_trusts_needs_no_vouching(
    signed: Signed, dst: Store, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Alice's store trusts her key and the agent's (added with `keys add`): the package
    they signed imports with no --trust-key."""
    carol = SigningKey.generate()
    require(dst, carol, Actor(kind="person", id="carol"))
    add_key(dst, carol, signed.alice.public_raw, ALICE)
    add_key(dst, carol, signed.bot.public_raw, BOT)
    dst.signer = carol
    result = ar.import_package(dst, signed.export())
    assert result["signed"] and verify(dst, remember=False).ok


def test_an_unsigned_package_is_refused_by_a_signed_store(
    store: Store, ws: Path, dst: Store, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 31, 5: its events would stand unproved here (an unsigned tail, the importer's
    own signature over others' events): refused in one line, nothing written, the store
    still verifies. An unsigned store takes it (test_an_unsigned_package_imports…)."""
    tid = store.execute(
        c.CreateTask(title="T", owner="o", objective="x", scope_paths=[str(ws)]), BOT
    )
    store.execute(RequestApproval(task_id=tid, payload={"x": 1}, consequence="c", policy="p"), BOT)
    pkg = ar.export_task(store, tid, tmp_path / "unsigned.tar.gz")
    rita = SigningKey.generate()
    require(dst, rita, Actor(kind="person", id="rita"))
    dst.signer = rita
    before = snapshot(dst)
    with pytest.raises(ar.PackageUnsigned, match="carries no signatures, and this store is signed"):
        ar.import_package(dst, pkg)
    assert snapshot(dst) == before and verify(dst, remember=False).ok
    pem = tmp_path / "rita.pem"
    pem.write_bytes(
        rita.private.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    capsys.readouterr()
    argv = [*where(dst), "--actor", "person:rita", "--key", str(pem), "import", str(pkg)]
    assert cli(argv) == 1
    out, err = capsys.readouterr()
    assert out == "" and len(err.strip().splitlines()) == 1 and "carries no signatures" in err
    assert dst.task_ids() == [] and verify(dst, remember=False).ok
