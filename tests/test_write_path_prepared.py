"""The hot writes run their statements prepared, on the driver (issue 36, part F).

An agent's append and checkpoint write build no SQLAlchemy Core statement per write: every
statement they send is compiled once (db.Prepared), the lease fence's read included (it was
built, compiled and wrapped by Core on every fenced write: about half of an append's CPU).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from store import commands as c
from store import db
from store import events as ev
from store import tx as tx_module
from store.commands.checkpoints import WriteCheckpoint
from store.commands.leases import AcquireLease, ReleaseLease
from store.errors import LeaseLost
from store.model import Actor
from store.reads import leases
from store.store import Store

AGENT = Actor(kind="agent", id="bot")


def _core_statements(store: Store, write: c.Command) -> list[str]:
    seen: list[str] = []

    def heard(conn: object, cursor: object, statement: str, *rest: object) -> None:
        seen.append(statement)

    sa.event.listen(store.engine, "before_cursor_execute", heard)
    try:
        store.execute(write, AGENT)
    finally:
        sa.event.remove(store.engine, "before_cursor_execute", heard)
    return seen


def test_the_fence_reads_the_lease_prepared(store: Store) -> None:
    tid = store.execute(c.CreateTask(title="T", owner="o", objective="x"), AGENT)
    note = c.RecordNote(task_id=tid, text="tick")
    store.execute(note, AGENT)  # warm: the first write also compiles
    core = _core_statements(store, note)
    assert not [s for s in core if "leases" in s]
    if db.is_sqlite(store.engine):
        assert core == []  # the whole append runs on the driver


def test_a_checkpoint_write_runs_on_the_driver(store: Store, ws: Path) -> None:
    tid = store.execute(
        c.CreateTask(title="T", owner="o", objective="x", scope_paths=[str(ws)]), AGENT
    )
    write = WriteCheckpoint(task_id=tid, reason="milestone", note="")
    store.execute(write, AGENT)
    store.execute(write, AGENT)
    core = _core_statements(store, write)
    assert not [s for s in core if "leases" in s]
    if db.is_sqlite(store.engine):
        assert core == []


@pytest.mark.parametrize("lease", ["never", "held", "released"])
def test_the_prepared_lease_row_reads_as_the_core_row(store: Store, lease: str) -> None:
    """Every column the lease reads use, as Core read it (JSON columns decoded on use)."""
    tid = store.execute(c.CreateTask(title="T", owner="o", objective="x"), AGENT)
    if lease != "never":
        got = store.execute(AcquireLease(task_id=tid, session_id="s-1", ttl_seconds=60), AGENT)
    if lease == "released":
        store.execute(ReleaseLease(task_id=tid, lease_token=got["token"], note="done"), AGENT)
    with store.read() as conn:
        row = leases.current(conn, tid)
        core = conn.execute(leases._CURRENT, {"task_id": tid}).first()
    if lease == "never":
        assert row is None and core is None
        return
    assert row is not None and core is not None
    assert row._fields == tuple(core._fields)
    now = "2026-01-01T00:00:00.000000Z"
    assert leases.lease_answer(row, now) == leases.lease_answer(core, now)
    assert leases.lease_view(row, now) == leases.lease_view(core, now)


class _Counted:
    """A payload class's validator, counting its validations."""

    def __init__(self, inner: Any) -> None:
        self.inner, self.calls = inner, 0

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self.inner, name)
        if name.startswith("validate"):

            def counted(*args: Any, **kw: Any) -> Any:
                self.calls += 1
                return attr(*args, **kw)

            return counted
        return attr


def test_an_append_validates_and_dumps_its_payload_once(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    tid = store.execute(c.CreateTask(title="T", owner="o", objective="x"), AGENT)
    note = c.RecordNote(task_id=tid, text="tick")
    store.execute(note, AGENT)
    validator = _Counted(ev.NoteRecorded.__pydantic_validator__)
    monkeypatch.setattr(ev.NoteRecorded, "__pydantic_validator__", validator)
    dumps: list[str] = []
    real_dump = ev.NoteRecorded.model_dump
    real_json = tx_module._payload_json

    def dump(self: ev.Payload, **kw: Any) -> dict[str, Any]:
        dumps.append(f"model_dump {type(self).__name__}")
        return real_dump(self, **kw)  # type: ignore[arg-type]

    def to_json(payload: ev.Payload) -> str:
        dumps.append(f"canonical JSON {type(payload).__name__}")
        return real_json(payload)

    monkeypatch.setattr(ev.NoteRecorded, "model_dump", dump)
    monkeypatch.setattr(tx_module, "_payload_json", to_json)
    store.execute(note, AGENT)
    assert validator.calls == 1  # built by the handler; never validated again
    # Made into its canonical JSON once, from its fields (a note's text only: no model_dump).
    assert dumps == ["canonical JSON NoteRecorded"]


def _driver_statements(store: Store, write: c.Command, actor: Actor) -> list[str]:
    """The statements the writer's SQLite connection runs for `write`, as the driver sees them."""
    with store.transaction() as tx:
        raw = tx.conn.connection.driver_connection
    seen: list[str] = []
    raw.set_trace_callback(seen.append)  # type: ignore[union-attr]
    try:
        store.execute(write, actor)
    finally:
        raw.set_trace_callback(None)  # type: ignore[union-attr]
    return seen


def _shape(statement: str) -> str:
    """A statement's verb and table: "INSERT INTO events", "UPDATE tasks", "SELECT tasks"."""
    words = statement.split()
    if words[0] == "SELECT":
        return "SELECT " + words[1].split(".")[0]
    return " ".join(words[:3] if words[0] == "INSERT" else words[:2])


@pytest.mark.sqlite_only
def test_a_signed_write_reads_its_task_lease_and_keyring_in_one_statement(
    tmp_path: Path, ws: Path
) -> None:
    """On a signed store an agent's fenced write opens with one read: the task's row, its lease
    (the fence) and the keyring's head (the seal's check), as on a server (issue 44)."""
    from store.signing import SigningKey
    from store.signing.trust import add_key, require

    person = Actor(kind="person", id="rita")
    with Store.open(tmp_path / "signed") as store:
        owner, agent_key = SigningKey.generate(), SigningKey.generate()
        require(store, owner, person)
        add_key(store, owner, agent_key.public_raw, AGENT)
        store.signer = agent_key
        tid = store.execute(
            c.CreateTask(title="T", owner="o", objective="x", scope_paths=[str(ws)]), AGENT
        )
        lease = store.execute(AcquireLease(task_id=tid, session_id="s-1", ttl_seconds=60), AGENT)
        note = c.RecordNote(task_id=tid, text="tick", lease_token=lease["token"])
        ckpt = WriteCheckpoint(task_id=tid, reason="milestone", note="", lease_token=lease["token"])
        store.execute(note, AGENT)
        store.execute(ckpt, AGENT)
        appended = _driver_statements(store, note, AGENT)
        assert [_shape(x) for x in appended] == [
            "BEGIN IMMEDIATE",
            "SELECT tasks",
            "INSERT INTO events",
            "UPDATE tasks",
            "INSERT INTO signatures",
            "COMMIT",
        ]
        assert "JOIN leases" in appended[1] and "FROM keyring" in appended[1]
        checkpointed = _driver_statements(store, ckpt, AGENT)
        assert [_shape(x) for x in checkpointed] == [
            "BEGIN IMMEDIATE",
            "SELECT tasks",
            "INSERT INTO events",
            "UPDATE tasks",
            "INSERT INTO checkpoints",
            "INSERT INTO signatures",
            "COMMIT",
        ]
        # A stale lease token is still refused by the fence read with the row.
        with pytest.raises(LeaseLost):
            store.execute(c.RecordNote(task_id=tid, text="x", lease_token=99), AGENT)
        from store.services.verify import verify

        report = verify(store)
        assert report.ok and report.signed, report.problems
