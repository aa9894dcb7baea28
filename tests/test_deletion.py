"""Verified deletion (issue 35 part D): a person deletes a task and nothing of it is readable
afterwards, from the store, its tables, the PostgreSQL blob tables, the local cache, an
export or the MCP tools; the store keeps a receipt that `boris verify` accepts; an agent is
refused. Every test runs on both engines; the deletion itself goes through the real CLI.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import anyio
import pytest
import sqlalchemy as sa
from cli_args import store_args
from mcp import ClientSession, StdioServerParameters, stdio_client

from store import Actor, Store, rules
from store import commands as c
from store import events as ev
from store.commands.effects import DispatchEffect, PlanEffect, RecordResponse
from store.errors import (
    DeletionRefused,
    ReceiptFormatUnknown,
    TaskDeleted,
    UnknownEventFormat,
    UnknownTask,
)
from store.reads.decisions import decisions
from store.services import deletion
from store.services.verify import verify
from store.signing.keys import SigningKey
from store.signing.trust import require

ROOT = Path(__file__).resolve().parent.parent
AGENT = Actor(kind="agent", id="drafter-7")
RITA = Actor(kind="person", id="rita", name="Rita")
TID = "doomed"
OTHER = "keeper"


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("BORIS_")}
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    return env


def _boris(store: Store, *argv: str) -> subprocess.CompletedProcess[str]:
    """The real `boris`, in a process of its own."""
    return subprocess.run(
        [sys.executable, "-m", "store.cli", *argv, *store_args(store)],
        env=_env(),
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )


def _answer(done: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    out: dict[str, Any] = json.loads(done.stdout)
    return out


class Doomed:
    """A task with something in every part of the record, and the unique strings to scan for."""

    def __init__(self, store: Store, ws: Path) -> None:
        mark = uuid.uuid4().hex
        self.title = f"Zebra title {mark}"
        self.content = f"unique content {mark}"
        self.secret = f"private words {mark}"
        self.shared = f"content both tasks hold {mark}"
        s = store
        s.execute(
            c.CreateTask(
                task_id=TID, title=self.title, owner="rita", objective=f"objective {mark}",
                scope_paths=[str(ws)],
            ),
            AGENT,
        )  # fmt: skip
        s.execute(c.AddCriterion(task_id=TID, text="done", criterion_id="done"), AGENT)
        s.execute(
            c.RecordArtifact(
                task_id=TID, artifact_id="draft", name="draft.md",
                content=c.Content(text=self.content),
            ),
            AGENT,
        )  # fmt: skip
        s.execute(
            c.AttachEvidence(
                task_id=TID, criterion_id="done", kind="command_output",
                content=c.Content(text=self.shared),
            ),
            AGENT,
        )  # fmt: skip
        s.execute(c.SetBudget(task_id=TID, counter="tool_calls", limit=5), RITA)
        s.execute(c.WriteCheckpoint(task_id=TID, reason="initial"), AGENT)
        s.execute(
            c.RequestApproval(task_id=TID, payload={"send": mark}, consequence="send", policy="p"),
            AGENT,
        )
        s.execute(c.RecordWait(task_id=TID, kind="rate_limit", ref="api", after_seconds=60), AGENT)
        token = s.execute(c.AcquireLease(task_id=TID, session_id="s1"), AGENT)["token"]
        s.execute(c.ReleaseLease(task_id=TID, lease_token=token), AGENT)
        s.execute(
            c.RecordNote(task_id=TID, text=self.secret, visibility=rules.Visibility.PRIVATE),
            RITA,
        )
        # Another task holding one blob with the doomed one: it must stay.
        s.execute(
            c.CreateTask(
                task_id=OTHER, title="keeper", owner="rita", objective="keep",
                scope_paths=[str(ws)],
            ),
            AGENT,
        )  # fmt: skip
        s.execute(
            c.RecordArtifact(
                task_id=OTHER, artifact_id="same", name="same.txt",
                content=c.Content(text=self.shared),
            ),
            AGENT,
        )  # fmt: skip
        self.digests = {
            name: "sha256:" + hashlib.sha256(text.encode()).hexdigest()
            for name, text in (
                ("content", self.content),
                ("secret", self.secret),
                ("shared", self.shared),
            )
        }


@pytest.fixture
def doomed(store: Store, ws: Path) -> Doomed:
    return Doomed(store, ws)


def _all_rows(store: Store) -> dict[str, list[tuple[Any, ...]]]:
    """Every row of every table of the store's database, as stored."""
    meta = sa.MetaData()
    with store.engine.connect() as conn:
        meta.reflect(bind=conn)
        return {
            name: [tuple(r) for r in conn.execute(sa.select(tb))]
            for name, tb in meta.tables.items()
        }


def _holds(value: Any, needle: str) -> bool:
    if isinstance(value, bytes | bytearray | memoryview):
        return needle.encode() in bytes(value)
    return needle in str(value)


def _files_holding(directory: Path, needle: str) -> list[Path]:
    found = []
    for path in directory.rglob("*"):
        if path.is_file() and needle.encode() in path.read_bytes():
            found.append(path)
    return found


# --- deleting ----------------------------------------------------------------------------------


def test_a_persons_deletion_leaves_nothing_of_the_task_readable(
    store: Store, doomed: Doomed, tmp_path: Path
) -> None:
    # Read once through every cache first: the head reader, the blob cache (PostgreSQL).
    assert store.head_checkpoint(TID) is not None
    assert store.blobs.local_file(doomed.digests["content"]).is_file()
    assert _boris(store, "verify").returncode == 0  # the witness remembers its head
    plan = deletion.plan_deletion(store, TID)
    assert plan.refusal is None
    assert doomed.digests["shared"] not in plan.blobs  # the keeper still names it
    assert {doomed.digests["content"], doomed.digests["secret"]} <= set(plan.blobs)

    done = _boris(
        store, "--json", "--actor", "person:rita", "delete-task", TID, "--confirm", TID,
        "--reason", "the client withdrew consent",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    receipt = _answer(done)["result"]
    assert receipt["counts"]["events"] == plan.tables["events"]
    assert receipt["counts"]["blobs"] == len(plan.blobs)
    assert receipt["counts"]["checkpoints"] == 1 and receipt["counts"]["approvals"] == 1
    assert receipt["deleted_by"] == "person:rita"
    assert receipt["title_digest"] == "sha256:" + hashlib.sha256(doomed.title.encode()).hexdigest()
    assert (receipt["head_seq"], receipt["head_hash"]) == (plan.head_seq, plan.head_hash)

    # Every reader says deleted, when and by whom.
    for argv in (("show", TID), ("events", TID), ("export", TID, str(tmp_path / "x.tar.gz"))):
        refused = _boris(store, "--json", *argv)
        assert refused.returncode == 4, argv
        error = _answer(refused)["error"]
        assert error["code"] == "task_deleted"
        assert error["message"] == (
            f"task {TID!r} was deleted on {receipt['deleted_at']} by person:rita"
        )
    listed = _answer(_boris(store, "--json", "tasks"))["result"]
    assert [t["id"] for t in listed] == [OTHER]
    with pytest.raises(TaskDeleted) as caught:
        store.task(TID)
    assert isinstance(caught.value, UnknownTask)
    assert store.head_checkpoint(TID) is None
    assert all(d.get("task_id") != TID for d in decisions(store)["decisions"])
    assert TID not in store.task_ids()

    # Nothing of it in any table (the receipt keeps its id, never its title or content) ...
    for table, found in _all_rows(store).items():
        for row in found:
            for needle in (doomed.title, doomed.content, doomed.secret):
                assert not any(_holds(v, needle) for v in row), (table, needle)
            if table != "deletion_receipts":
                assert not any(_holds(v, TID) for v in row), (table, row)
    # ... nor in any file of the store's directory (blobs, the PostgreSQL cache, the database).
    for needle in (doomed.title, doomed.content, doomed.secret):
        assert _files_holding(store.location.directory, needle) == [], needle
    for name in ("content", "secret"):
        assert not store.blobs.has(doomed.digests[name])
    assert store.blobs.has(doomed.digests["shared"])  # the keeper's stays

    # verify accepts the absence: the receipt names it.
    checked = _boris(store, "--json", "verify")
    assert checked.returncode == 0, checked.stdout
    report = _answer(checked)["result"]
    assert report["ok"] and report["problems"] == []
    assert [(i["task_id"], i["kind"]) for i in report["info"]] == [(TID, "task_deleted")]
    assert _boris(store, "verify", TID).returncode == 0
    shown = _answer(_boris(store, "--json", "receipts"))["result"]
    assert [(r["task_id"], r["reason"]) for r in shown] == [(TID, "the client withdrew consent")]
    assert doomed.title not in json.dumps(shown)


def test_the_mcp_tools_say_the_task_was_deleted(store: Store, doomed: Doomed) -> None:
    receipt = deletion.delete_task(store, TID, RITA, confirm=TID, reason="gone")
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "store.cli", "mcp", *store_args(store), "--actor", "agent:drafter-7"],
        env=_env(),
        cwd=str(ROOT),
    )

    async def scenario() -> None:
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            for tool in ("task_state", "record_note"):
                args: dict[str, Any] = {"task_id": TID}
                if tool == "record_note":
                    args["text"] = "still there?"
                answer = (await session.call_tool(tool, args)).structured_content
                assert answer is not None and answer["ok"] is False, tool
                assert answer["error"]["code"] == "task_deleted", answer
                assert (
                    f"deleted on {receipt.deleted_at} by person:rita" in answer["error"]["message"]
                )
            tasks = (await session.call_tool("list_tasks", {})).structured_content
            assert tasks is not None
            assert TID not in json.dumps(tasks)
            # An agent's private note, over MCP: kept as a blob, out of exports by default.
            args = {"task_id": OTHER, "text": "only here", "visibility": "private"}
            noted = (await session.call_tool("record_note", args)).structured_content
            assert noted is not None and noted["ok"] is True, noted

    anyio.run(scenario)
    last = store.events(OTHER)[-1]
    assert last["type"] == "note.private" and "only here" not in json.dumps(last.to_json())


# --- refused ----------------------------------------------------------------------------------


def test_an_agent_cannot_delete_a_task_and_nothing_is_removed(store: Store, doomed: Doomed) -> None:
    before = store.projection_dump(TID)
    done = _boris(
        store, "--json", "--actor", "agent:drafter-7", "delete-task", TID, "--confirm", TID,
        "--reason", "cleanup",
    )  # fmt: skip
    assert done.returncode != 0
    error = _answer(done)["error"]
    assert (error["code"], error["rule"]) == ("deletion_refused", "deletion_is_a_persons")
    assert store.projection_dump(TID) == before
    assert deletion.receipts(store) == []


def test_a_deletion_needs_the_id_typed_a_reason_no_live_agent_and_no_effect_in_doubt(
    store: Store, ws: Path
) -> None:
    store.execute(
        c.CreateTask(task_id=TID, title="t", owner="rita", objective="o", scope_paths=[str(ws)]),
        AGENT,
    )

    def refused(confirm: str = TID, reason: str = "r") -> str:
        with pytest.raises(DeletionRefused) as caught:
            deletion.delete_task(store, TID, RITA, confirm=confirm, reason=reason)
        return str(caught.value.rule)

    assert refused(confirm="doomd") == "deletion_needs_the_task_id_typed"
    assert refused(reason="  ") == "deletion_needs_a_reason"
    token = store.execute(c.AcquireLease(task_id=TID, session_id="s1"), AGENT)["token"]
    assert refused() == "deletion_waits_for_the_agent"
    store.execute(c.ReleaseLease(task_id=TID, lease_token=token), AGENT)
    eid = store.execute(
        PlanEffect(task_id=TID, target="out.md", consequence="write", content=c.Content(text="x")),
        AGENT,
    )
    store.execute(DispatchEffect(task_id=TID, effect_id=eid, executor="tool:save"), AGENT)
    store.execute(
        RecordResponse(task_id=TID, effect_id=eid, reported="timeout", response={}), AGENT
    )
    assert refused() == "deletion_waits_for_reconciliation"
    assert store.task_ids() == [TID]  # still all there


def test_the_database_refuses_to_remove_an_event_no_receipt_covers(
    store: Store, doomed: Doomed
) -> None:
    with pytest.raises(sa.exc.DBAPIError, match="append-only"), store.engine.begin() as conn:
        conn.execute(sa.text("DELETE FROM events WHERE task_id = :t"), {"t": TID})
    assert len(store.events(TID)) > 5


# --- the receipt and verify -----------------------------------------------------------------


def test_verify_names_a_receipt_that_was_changed(store: Store, doomed: Doomed) -> None:
    deletion.delete_task(store, TID, RITA, confirm=TID, reason="gone")
    assert verify(store).ok
    with store.engine.begin() as conn:
        conn.execute(sa.text("UPDATE deletion_receipts SET reason = 'tidy up'"))
    report = verify(store)
    assert [(p.task_id, p.kind, p.code.value) for p in report.problems] == [
        (TID, "deletion_receipt", "rollback")
    ]
    assert "does not match its hash" in report.problems[0].message


def test_a_signed_stores_receipt_is_signed_by_the_person_and_verified(
    store: Store, doomed: Doomed
) -> None:
    key = SigningKey.generate()
    require(store, key, RITA)
    store.signer = key
    receipt = deletion.delete_task(store, TID, RITA, confirm=TID, reason="gone")
    assert receipt.key_id == key.key_id and receipt.signature
    report = verify(store)
    assert [p for p in report.problems if p.task_id == TID] == []  # (the keeper is unsigned)
    assert [i.key_id for i in report.info if i.task_id == TID] == [key.key_id]
    forged = SigningKey.generate().sign(deletion.RECEIPT_DOMAIN + receipt.body_hash.encode())
    import base64

    with store.engine.begin() as conn:
        conn.execute(
            sa.text("UPDATE deletion_receipts SET signature = :s"),
            {"s": base64.b64encode(forged).decode()},
        )
    problems = [p for p in verify(store).problems if p.task_id == TID]
    assert [p.kind for p in problems] == ["deletion_receipt"]
    assert "does not verify" in problems[0].message


def test_a_crash_before_the_blobs_go_leaves_orphans_never_a_dangling_reference(
    store: Store, doomed: Doomed, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(deletion, "_remove_blobs", lambda *a: [])  # killed after the commit
    deletion.delete_task(store, TID, RITA, confirm=TID, reason="gone")
    assert verify(store).ok  # nothing names a missing blob
    orphans = _answer(_boris(store, "--json", "receipts", "--orphans"))["result"]
    assert {doomed.digests["content"], doomed.digests["secret"]} <= set(orphans)
    assert doomed.digests["shared"] not in orphans


def test_a_newer_receipt_format_and_an_unknown_event_type_are_refused_in_one_line(
    store: Store, doomed: Doomed, monkeypatch: pytest.MonkeyPatch
) -> None:
    deletion.delete_task(store, TID, RITA, confirm=TID, reason="gone")
    with store.engine.begin() as conn:
        conn.execute(sa.text("UPDATE deletion_receipts SET format = 2"))
    with pytest.raises(ReceiptFormatUnknown) as caught:
        deletion.receipts(store)
    assert str(caught.value) == (
        f"the deletion receipt of task {TID} is in format 2; this program reads receipts up "
        "to format 1"
    )
    # A program from before `note.private` refuses the event by name, never reads it as a note.
    monkeypatch.delitem(ev._REGISTRY, "note.private")
    with pytest.raises(UnknownEventFormat) as unknown:
        ev.decode("note.private", 1, {"digest": doomed.digests["secret"], "size": 3})
    assert str(unknown.value) == "unknown event type 'note.private'"
