"""Signed records (store.signing): keys name actors, every write is signed, verify names the
task, seq and key of any signature that fails, against the keyring or out-of-band keys."""

from __future__ import annotations

import base64
import json
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from cryptography.hazmat.primitives import serialization

from store import commands as c
from store import schema as t
from store import store as store_module
from store.cli import main as cli
from store.commands.approvals import DecideApproval, RequestApproval
from store.commands.checkpoints import WriteCheckpoint
from store.model import Actor
from store.services.verify import verify
from store.signing import KeysFileError, SignatureRefused, SigningKey, keyring, read_keys_file
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
    refused = capsys.readouterr().err
    assert "requires signatures and agent:bot has no key here" in refused
    assert "boris keys add " in refused and " --for agent:bot --actor person:alice" in refused
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
    import getpass

    def no_login() -> str:
        raise OSError("no login name")

    # Nobody named and no login name to act as (bare `boris init` acts as the login).
    monkeypatch.delenv("BORIS_ACTOR", raising=False)
    monkeypatch.setattr(getpass, "getuser", no_login)
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


def pem(key: SigningKey, path: Path) -> Path:
    """The key as a key file, as `boris keys new` writes one."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(
        key.private.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return path


def where(store: Store) -> list[str]:
    args = ["--store", str(store.location.directory)]
    if store.location.sqlite_file is None:
        args += ["--url", store.engine.url.render_as_string(hide_password=False)]
    return args


def test_no_caller_writes_as_the_system(
    store: Store, ws: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`system:` is the store's own name: an agent naming it (with its own key, which signs
    any system event) is refused, from the CLI and from execute; the store still writes it."""
    from store.errors import AuthorityRefused
    from store.model import SYSTEM
    from store.services.narratives import record_summary

    keys = Keys(store)
    tid, _ = task_with_approval(store, keys, ws)
    with pytest.raises(AuthorityRefused) as err:
        as_(store, keys.bot, c.AddCriterion(task_id=tid, text="by the system?"), SYSTEM)
    assert err.value.rule == "system_is_the_stores"
    agent_file = tmp_path / "agent.pem"
    pem(keys.bot, agent_file)
    capsys.readouterr()
    as_system = [*where(store), "--json", "--actor", "system:boris", "--key", str(agent_file)]
    assert cli([*as_system, "add-criterion", tid, "--text", "by the system?"]) == 1
    out, err_text = capsys.readouterr()
    answer = json.loads(out)["error"]
    assert (answer["code"], answer["rule"]) == ("authority_refused", "system_is_the_stores")
    assert len(err_text.strip().splitlines()) == 1 and "Traceback" not in err_text
    assert [e for e in store.events(tid) if e["actor"]["kind"] == "system"] == []
    # The store's own write (a generated summary) is still the system's.
    store.signer = keys.alice
    record_summary(store, tid)
    assert store.events(tid)[-1]["actor"]["kind"] == "system"
    assert found(store) == []


def _sign_with(key: SigningKey) -> Any:
    """A seal that signs the transaction's last event with `key`, whatever the keyring says
    (a stolen key used after its revocation, past the command layer)."""

    def seal(conn: Any, policy: Any, signer: Any, emitted: Any, now: str) -> None:
        e = emitted[-1]
        conn.execute(
            sa.insert(t.signatures).values(
                task_id=e.task_id,
                seq=e.seq,
                key_id=key.key_id,
                signature=encode_signature(key.sign(record_message(e.task_id, e.seq, e.hash))),
            )
        )

    return seal


def test_a_revoked_keys_earlier_history_verifies_against_the_keys_file(
    store: Store, ws: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`keys export --all` says since when a key is revoked: `verify --keys` and
    `verify-package --keys` accept what it signed before and report what came after."""
    from store.services import archive as ar

    keys = Keys(store)
    tid, _ = task_with_approval(store, keys, ws)
    as_(store, keys.bot, c.AddCriterion(task_id=tid, text="before"), BOT)
    pem(keys.alice, person_key_path("alice"))  # Alice's own key, where the CLI finds it
    capsys.readouterr()
    assert cli([*where(store), "--actor", "person:alice", "keys", "revoke", keys.bot.key_id]) == 0
    assert capsys.readouterr().out.startswith(f"{keys.bot.key_id} revoked at ")
    assert cli([*where(store), "keys", "export", "--all"]) == 0
    exported = capsys.readouterr().out
    bot_line = next(line for line in exported.splitlines() if keys.bot.key_id in line)
    assert " revoked=" in bot_line
    keys_file = tmp_path / "trusted.keys"
    keys_file.write_text(exported)
    ring = read_keys_file(keys_file)
    assert ring.bindings[keys.bot.key_id].revoked_at == bot_line.split("revoked=")[1]
    assert found(store, keys=ring) == []
    assert cli([*where(store), "verify", "--no-remember", "--keys", str(keys_file)]) == 0
    assert ar.verify_package(ar.export_task(store, tid, tmp_path / "a.tar.gz"), ring).ok

    # The revoked key used afterwards (forged past the command layer): that seq is named.
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(store_module, "seal", _sign_with(keys.bot))
        as_(store, keys.bot, c.AddCriterion(task_id=tid, text="after"), BOT)
    late = store.events(tid)[-1]["seq"]
    problems = found(store, keys=ring)
    assert [(p[0], p[1]) for p in problems] == [(tid, "revoked_key")]
    assert problems[0][2].startswith(f"seq {late}:") and keys.bot.key_id in problems[0][2]
    capsys.readouterr()
    assert cli([*where(store), "verify", "--no-remember", "--keys", str(keys_file)]) == 3
    assert f"{tid}: revoked_key: seq {late}:" in capsys.readouterr().out
    report = ar.verify_package(ar.export_task(store, tid, tmp_path / "b.tar.gz"), ring)
    assert [(p.kind, p.message.split(":")[0]) for p in report.problems] == [
        ("revoked_key", f"seq {late}")
    ]


def test_a_keys_file_line_names_what_it_cannot_read(tmp_path: Path) -> None:
    key = SigningKey.generate()
    path = tmp_path / "k.keys"
    path.write_text(f"{key.key_id} agent:bot {key.public_text} expires=tomorrow\n")
    with pytest.raises(KeysFileError, match="'expires=tomorrow' is not revoked=TIME"):
        read_keys_file(path)


def test_the_keys_commands_answer_in_one_line_or_json(
    store: Store, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    keys = Keys(store)
    pem(keys.alice, person_key_path("alice"))
    st = [*where(store), "--actor", "person:alice"]
    capsys.readouterr()
    # A key file that is not there: one line naming it, exit 4, no traceback.
    assert cli([*st, "keys", "add", "/nonexistent.pem", "--for", "agent:x"]) == 4
    _, err = capsys.readouterr()
    assert err.strip().splitlines() == [
        "boris: no key file at /nonexistent.pem, and '/nonexistent.pem' is not a base64 "
        "Ed25519 public key; nothing was added"
    ]
    assert cli([*st, "--json", "keys", "add", "/nonexistent.pem", "--for", "agent:x"]) == 4
    assert json.loads(capsys.readouterr().out)["error"]["code"] == "key_not_found"

    # `keys new` makes a key file and needs no store (the README shows it without one).
    nowhere = tmp_path / "no-store"
    agent = tmp_path / "agent-7.pem"
    assert cli(["--store", str(nowhere), "--json", "keys", "new", str(agent)]) == 0
    made = json.loads(capsys.readouterr().out)["result"]
    assert made["key_id"] == load_or_create(agent).key_id and not nowhere.exists()

    # Every keys command honours --json: one object, {"ok": true, "result": …}.
    def answer(*argv: str) -> Any:
        assert cli([*st, "--json", "keys", *argv]) == 0
        value = json.loads(capsys.readouterr().out)
        assert value["ok"] is True
        return value["result"]

    added = answer("add", str(agent), "--for", "agent:drafter-7")
    assert (added["key_id"], added["actor_id"]) == (made["key_id"], "drafter-7")
    assert answer("add", str(agent), "--for", "agent:drafter-7")["seq"] == added["seq"]  # again
    listed = answer("list")
    assert listed["signatures_required"] is True and len(listed["entries"]) == 3
    revoked = answer("revoke", made["key_id"])
    assert revoked["action"] == "revoked"
    exported = {k["key_id"]: k for k in answer("export", "--all")["keys"]}
    assert exported[made["key_id"]]["revoked_at"] == revoked["at"]
    assert answer("export")["keys"][0]["actor"] == "person:alice"


def _boris_at_once(runs: list[list[str]]) -> list[tuple[int, str]]:
    """Each argv run by the real `boris` in its own process, all started together."""
    exe = Path(sys.executable).with_name("boris")
    procs = [
        subprocess.Popen(
            [str(exe), *argv], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        for argv in runs
    ]
    errs = [p.communicate(timeout=120)[1] for p in procs]
    return [(p.returncode, err) for p, err in zip(procs, errs, strict=True)]


def test_concurrent_signed_inits_and_key_adds_all_succeed(
    store_dir: Path, store_url: str | None, tmp_path: Path
) -> None:
    """Eight `boris init` at once (one person, one new key file), then eight `keys add` at
    once (six keys, one of them added three times): every one exits 0, no traceback, and
    the keyring holds one root and six keys (issue 31: UniqueViolation keyring_pkey)."""
    st = ["--store", str(store_dir), *(["--url", store_url] if store_url else [])]
    rita = [*st, "--actor", "person:rita"]
    done = _boris_at_once([[*rita, "init"]] * 8)
    assert [code for code, _ in done] == [0] * 8, [err for _, err in done]
    agents = [load_or_create(tmp_path / f"agent-{n}.pem") for n in range(6)]
    adds = [
        [*rita, "keys", "add", str(k.path), "--for", f"agent:a{n}"] for n, k in enumerate(agents)
    ]
    done = _boris_at_once([*adds, adds[0], adds[0]])
    assert [code for code, _ in done] == [0] * 8, [err for _, err in done]
    assert not any("Traceback" in err for _, err in done)
    with Store.open(store_dir, url=store_url) as s, s.read() as conn:
        ring = keyring.load(conn)
        assert keyring.required(conn)
    assert ring.problems == []
    assert sorted(b.actor for b in ring.bindings.values()) == sorted(
        ["person:rita", *(f"agent:a{n}" for n in range(6))]
    )
