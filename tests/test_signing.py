"""Signed records (store.signing): keys name actors, every write is signed, verify names the
task, seq and key of any signature that fails, against the keyring or out-of-band keys."""

from __future__ import annotations

import base64
import stat
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from store import commands as c
from store import schema as t
from store import store as store_module
from store.cli import main as cli
from store.commands.approvals import DecideApproval, RequestApproval
from store.commands.checkpoints import WriteCheckpoint
from store.model import Actor
from store.services.verify import verify
from store.signing import SignatureRefused, SigningKey, read_keys_file
from store.signing.keyring import KeyringRefused
from store.signing.keys import load_or_create, person_key_path
from store.signing.seal import encode_signature, record_message
from store.signing.trust import add_key, require, revoke_key
from store.store import Store

ALICE = Actor(kind="person", id="alice", name="Alice")
BOB = Actor(kind="person", id="bob")
BOT = Actor(kind="agent", id="bot")


class Keys:
    def __init__(self, store: Store) -> None:
        self.alice = SigningKey.generate()
        self.bot = SigningKey.generate()
        require(store, self.alice, ALICE)
        add_key(store, self.alice, self.bot.public_raw, BOT)

    def file(self, tmp: Path, *keys: tuple[SigningKey, Actor]) -> Path:
        path = tmp / "keys.txt"
        path.write_text("".join(f"{k.key_id} {a.kind}:{a.id} {k.public_text}\n" for k, a in keys))
        return path


def as_(store: Store, key: SigningKey | None, command: Any, actor: Actor) -> Any:
    store.signer = key
    return store.execute(command, actor)


def task_with_approval(store: Store, keys: Keys, ws: Path) -> tuple[str, str]:
    tid = as_(
        store,
        keys.bot,
        c.CreateTask(title="T", owner="alice", objective="x", scope_paths=[str(ws)]),
        BOT,
    )
    aid = as_(
        store,
        keys.bot,
        RequestApproval(task_id=tid, payload={"x": 1}, consequence="sends x", policy="p"),
        BOT,
    )
    return tid, aid


def found(store: Store, **kw: Any) -> list[tuple[str, str, str]]:
    report = verify(store, remember=False, **kw)
    return [(p.task_id, p.kind, p.message) for p in report.problems]


def test_signed_writes_verify_and_by_out_of_band_keys(
    store: Store, ws: Path, tmp_path: Path
) -> None:
    keys = Keys(store)
    tid, aid = task_with_approval(store, keys, ws)
    as_(store, keys.alice, DecideApproval(task_id=tid, approval_id=aid, decision="approved"), ALICE)
    as_(store, keys.bot, WriteCheckpoint(task_id=tid, reason="milestone"), BOT)
    assert found(store) == []
    both = keys.file(tmp_path, (keys.alice, ALICE), (keys.bot, BOT))
    assert found(store, keys=read_keys_file(both)) == []
    # Only Alice's key out of band: the agent's signatures are by a key nobody vouched for.
    only_alice = keys.file(tmp_path, (keys.alice, ALICE))
    problems = found(store, keys=read_keys_file(only_alice))
    assert {(p[0], p[1]) for p in problems} == {(tid, "unknown_key")}
    assert any(keys.bot.key_id in p[2] and "seq 1" in p[2] for p in problems)


def test_unsigned_writes_are_refused_where_signatures_are_required(store: Store, ws: Path) -> None:
    keys = Keys(store)
    tid, _ = task_with_approval(store, keys, ws)
    with pytest.raises(SignatureRefused) as err:
        as_(store, None, c.AddCriterion(task_id=tid, text="x"), BOT)
    assert err.value.code == "signature_required"
    stranger = SigningKey.generate()
    with pytest.raises(SignatureRefused) as err:
        as_(store, stranger, c.AddCriterion(task_id=tid, text="x"), BOT)
    assert err.value.code == "unknown_key" and stranger.key_id in str(err.value)
    assert found(store) == []


def test_an_agent_key_cannot_sign_a_persons_approval(store: Store, ws: Path) -> None:
    keys = Keys(store)
    tid, aid = task_with_approval(store, keys, ws)
    decide = DecideApproval(task_id=tid, approval_id=aid, decision="approved")
    with pytest.raises(SignatureRefused) as err:
        as_(store, keys.bot, decide, ALICE)
    assert err.value.code == "key_names_another_actor"
    assert keys.bot.key_id in str(err.value) and "agent:bot" in str(err.value)
    assert [e["actor"]["kind"] for e in store.events(tid)].count("person") == 0

    # Forged past the command layer: the approval written in Alice's name, signed with the
    # agent's key. Verify names the seq and the key.
    def sign_as_bot(conn: Any, policy: Any, signer: Any, emitted: Any, now: str) -> None:
        e = emitted[-1]
        conn.execute(
            sa.insert(t.signatures).values(
                task_id=e.task_id,
                seq=e.seq,
                key_id=keys.bot.key_id,
                signature=encode_signature(keys.bot.sign(record_message(e.task_id, e.seq, e.hash))),
            )
        )

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(store_module, "seal", sign_as_bot)
        as_(store, keys.bot, decide, ALICE)
    alices = [e["seq"] for e in store.events(tid) if e["actor"]["kind"] == "person"]
    problems = found(store)
    assert alices and {(p[0], p[1]) for p in problems} == {(tid, "key_names_another_actor")}
    assert [p[2].split(":")[0] for p in problems] == [f"seq {n}" for n in alices]
    assert all("person:alice" in p[2] and keys.bot.key_id in p[2] for p in problems)


def test_an_event_forged_into_the_database_is_an_unsigned_tail(store: Store, ws: Path) -> None:
    keys = Keys(store)
    tid, aid = task_with_approval(store, keys, ws)
    # Written straight into the database (chain hash and projections right), with no key.
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(store_module, "seal", lambda *a: None)
        as_(store, None, DecideApproval(task_id=tid, approval_id=aid, decision="approved"), ALICE)
    forged = [e["seq"] for e in store.events(tid) if e["actor"]["kind"] == "person"]
    problems = found(store)
    assert [(p[0], p[1]) for p in problems] == [(tid, "unsigned_tail")]
    assert problems[0][2].startswith(f"seq {forged[0]}..{forged[-1]}:")


def test_a_tampered_signature_is_named(store: Store, ws: Path) -> None:
    keys = Keys(store)
    tid, _ = task_with_approval(store, keys, ws)
    with store.engine.begin() as conn:
        seq, sig = conn.execute(
            sa.select(t.signatures.c.seq, t.signatures.c.signature).order_by(
                t.signatures.c.seq.desc()
            )
        ).first()  # type: ignore[misc]
        raw = bytearray(base64.b64decode(sig))
        raw[0] ^= 1
        conn.execute(
            sa.update(t.signatures)
            .where(t.signatures.c.seq == seq)
            .values(signature=base64.b64encode(bytes(raw)).decode())
        )
    problems = found(store)
    assert [(p[0], p[1]) for p in problems] == [(tid, "bad_signature")]
    assert problems[0][2].startswith(f"seq {seq}:") and keys.bot.key_id in problems[0][2]


def test_a_revoked_key_is_refused_after_its_revocation(store: Store, ws: Path) -> None:
    keys = Keys(store)
    tid, _ = task_with_approval(store, keys, ws)
    revoke_key(store, keys.alice, keys.bot.key_id)
    with pytest.raises(SignatureRefused) as err:
        as_(store, keys.bot, c.AddCriterion(task_id=tid, text="late"), BOT)
    assert err.value.code == "revoked_key"
    assert found(store) == []  # what it signed before its revocation still stands
    # Its signature forged onto a write after the revocation: named.
    with pytest.MonkeyPatch.context() as mp:

        def sign_revoked(conn: Any, policy: Any, signer: Any, emitted: Any, now: str) -> None:
            e = emitted[-1]
            msg = record_message(e.task_id, e.seq, e.hash)
            conn.execute(
                sa.insert(t.signatures).values(
                    task_id=e.task_id,
                    seq=e.seq,
                    key_id=keys.bot.key_id,
                    signature=encode_signature(keys.bot.sign(msg)),
                )
            )

        mp.setattr(store_module, "seal", sign_revoked)
        as_(store, keys.bot, c.AddCriterion(task_id=tid, text="late"), BOT)
    late = store.events(tid)[-1]["seq"]
    problems = found(store)
    assert [(p[0], p[1]) for p in problems] == [(tid, "revoked_key")]
    assert problems[0][2].startswith(f"seq {late}:") and keys.bot.key_id in problems[0][2]


def test_only_a_trusted_person_changes_the_keyring_and_succession_is_recorded(
    store: Store,
) -> None:
    keys = Keys(store)
    with pytest.raises(KeyringRefused):
        add_key(store, keys.bot, SigningKey.generate().public_raw, BOT)  # an agent's key
    successor = SigningKey.generate()
    row = add_key(store, keys.alice, successor.public_raw, BOT)
    assert row["succeeds"] == keys.bot.key_id
    bob = SigningKey.generate()
    add_key(store, keys.alice, bob.public_raw, BOB)
    # Bob, trusted now, may revoke; a key edited into the keyring breaks its chain.
    revoke_key(store, bob, successor.key_id)
    with store.engine.begin() as conn:
        conn.execute(sa.update(t.keyring).where(t.keyring.c.seq == 2).values(actor_id="mallory"))
    assert any(p[1] == "keyring" and "entry 2" in p[2] for p in found(store))


def test_an_unsigned_store_keeps_working_and_says_so(
    store: Store, ws: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tid = store.execute(
        c.CreateTask(title="T", owner="o", objective="x", scope_paths=[str(ws)]), BOT
    )
    report = verify(store, remember=False)
    assert report.ok and not report.signed
    assert report.to_json()["signed"] is False
    where = ["--store", str(store.location.directory)]
    if store.location.sqlite_file is None:
        where += ["--url", store.engine.url.render_as_string(hide_password=False)]
    assert cli([*where, "show", tid]) == 0
    assert "signatures: unsigned store" in capsys.readouterr().out
    assert cli([*where, "verify", "--no-remember"]) == 0
    out, err = capsys.readouterr()
    assert out == "ok\n" and "unsigned store" in err
    # No key file was made for using it.
    assert not person_key_path("reviewer").exists()


def test_boris_init_requires_signatures_with_the_persons_key(
    tmp_path: Path, ws: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    st = ["--store", str(tmp_path / "s"), "--actor", "person:alice"]
    assert cli([*st, "init"]) == 0
    key_file = person_key_path("alice")
    assert stat.S_IMODE(key_file.stat().st_mode) == 0o600
    agent_file = tmp_path / "agent.pem"
    assert cli([*st, "keys", "new", str(agent_file)]) == 0
    assert cli([*st, "keys", "add", str(agent_file), "--for", "agent:bot"]) == 0
    capsys.readouterr()
    bot = ["--store", str(tmp_path / "s"), "--actor", "agent:bot"]
    new_task = ["create-task", "--id", "t1", "--title", "T", "--owner", "o"]
    new_task += ["--objective", "x", "--scope", str(ws)]
    assert cli([*bot, *new_task]) == 1  # no key: refused
    assert "requires every write to be signed" in capsys.readouterr().err
    assert cli([*bot, "--key", str(agent_file), *new_task]) == 0
    assert cli([*st, "add-criterion", "t1", "--text", "by alice"]) == 0
    assert cli([*st, "verify"]) == 0
    capsys.readouterr()
    assert cli([*st, "keys", "export", "--all"]) == 0
    keys_file = tmp_path / "keys.txt"
    keys_file.write_text(capsys.readouterr().out)
    assert cli([*st, "verify", "--keys", str(keys_file)]) == 0
    alice_only = tmp_path / "alice.txt"
    capsys.readouterr()
    assert cli([*st, "keys", "export"]) == 0
    alice_only.write_text(capsys.readouterr().out)
    assert cli([*st, "verify", "--keys", str(alice_only)]) == 3
    out = capsys.readouterr().out
    assert "t1: unknown_key: seq 1" in out and load_or_create(agent_file).key_id in out


def test_boris_init_without_an_actor_makes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("BORIS_ACTOR", raising=False)
    where = tmp_path / "new-store"
    assert cli(["--store", str(where), "init"]) == 2
    assert "--actor person:" in capsys.readouterr().err
    assert not where.exists()


def test_signatures_of_a_store_at_schema_0007_survive_the_upgrade(tmp_path: Path, ws: Path) -> None:
    """0008 clusters the signatures table on its key (one b-tree a signed commit instead of
    two): every signature a store had is there after, and still verifies."""
    from alembic import command
    from alembic.config import Config

    from store import migrate

    with Store.open(tmp_path / "s") as s:
        keys = Keys(s)
        tid, aid = task_with_approval(s, keys, ws)
        as_(s, keys.alice, DecideApproval(task_id=tid, approval_id=aid, decision="approved"), ALICE)
        with s.read() as conn:
            before = conn.execute(sa.select(t.signatures).order_by("task_id", "seq")).all()
        cfg = Config()
        cfg.set_main_option("script_location", str(migrate.MIGRATIONS_DIR))
        with s.engine.begin() as conn:
            cfg.attributes["connection"] = conn
            command.downgrade(cfg, "0007")
            sql = conn.exec_driver_sql(
                "SELECT sql FROM sqlite_master WHERE name = 'signatures'"
            ).scalar_one()
            assert "WITHOUT ROWID" not in sql
    assert len(before) == 3

    with Store.open(tmp_path / "s") as s:
        assert migrate.current_revision(s.engine) == migrate.HEAD
        with s.read() as conn:
            after = conn.execute(sa.select(t.signatures).order_by("task_id", "seq")).all()
            sql = conn.exec_driver_sql(
                "SELECT sql FROM sqlite_master WHERE name = 'signatures'"
            ).scalar_one()
        assert after == before
        assert sql.rstrip().endswith("WITHOUT ROWID")
        assert found(s) == []
