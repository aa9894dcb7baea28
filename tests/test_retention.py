"""Retention and tombstones (issue 35 part R): content may expire sooner than the run.

An item (artifact version, evidence, note kept as content) carries a retention class set when
it is recorded or changed later; `expire` retires what is due on the database's clock: its
blob goes (unless a live item still names the digest) and a tombstone keeps digest, size,
media type and what it proved. Verify accepts a tombstoned digest and still catches a blob
that vanished without one; the brief blocks on a retired required item and degrades on an
optional one. Every store test runs on SQLite and PostgreSQL (the `store` fixture).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from store import Actor, Store, events, rules
from store import commands as c
from store import schema as t
from store.commands.retention import ExpireContent, SetRetention
from store.errors import AuthorityRefused, CommandRejected, UnknownEventFormat
from store.reads.retention import retention
from store.services import retention as service
from store.services.resume import brief_markdown, resume_brief
from store.services.verify import verify

ROOT = Path(__file__).resolve().parent.parent
AGENT = Actor(kind="agent", id="drafter-7")
OTHER = Actor(kind="agent", id="helper-2")
RITA = Actor(kind="person", id="rita")
TID = "report"


@pytest.fixture
def tid(store: Store) -> str:
    store.execute(
        c.CreateTask(task_id=TID, title="Write the report", owner="rita", objective="A report"),
        AGENT,
    )
    for cid, text in (("C1", "the report is right"), ("C2", "the build log is clean")):
        store.execute(c.AddCriterion(task_id=TID, criterion_id=cid, text=text), AGENT)
    return TID


def _record(store: Store, retain: str | None = "0h") -> None:
    """report v1 (judged on), ev1 backing C1 satisfied, ev2 (diagnostics) on C2 unjudged,
    and a note kept as content: every one due at once (`0h`)."""
    content = c.Content(text="# Report\nall good\n", media_type="text/markdown")
    store.execute(
        c.RecordArtifact(task_id=TID, name="report.md", content=content, retain=retain), AGENT
    )
    for eid, cid, text in (("ev1", "C1", "tests: 12 passed"), ("ev2", "C2", "debug: 3 warns")):
        store.execute(
            c.AttachEvidence(
                task_id=TID, criterion_id=cid, kind="command_output", evidence_id=eid,
                content=c.Content(text=text), retain=retain,
            ),
            AGENT,
        )  # fmt: skip
    store.execute(
        c.JudgeCriterion(
            task_id=TID, criterion_id="C1", status="satisfied", artifact_id="report.md",
            evidence_ids=["ev1"],
        ),
        AGENT,
    )  # fmt: skip


def _problems(store: Store) -> list[tuple[str, str]]:
    report = verify(store)
    return [(f.kind, f.message) for f in report.problems]


def _info_kinds(store: Store) -> list[str]:
    return [f.kind for f in verify(store).info]


def _blob_gone(store: Store, digest: str) -> bool:
    return store.blobs.problem(digest, verify=False) == "missing"


# --- expiry to tombstone, verify, brief -----------------------------------------------------


def test_expiry_writes_tombstones_removes_blobs_and_verify_accepts_them(
    store: Store, tid: str
) -> None:
    _record(store)
    note_id = store.execute(
        c.RecordNote(task_id=tid, text="reviewer: the intro is weak", retain="0h"), RITA
    )
    assert isinstance(note_id, str) and note_id.startswith("note-")
    items = {x["item_id"]: x for x in retention(store, tid)["items"]}
    assert set(items) == {"report.md@1", "ev1", "ev2", note_id}
    assert all(x["due"] and x["state"] == "live" for x in items.values())
    digests = {k: v["digest"] for k, v in items.items()}

    # Dry run: said, nothing written.
    due = service.due_now(store, tid)
    assert {x["item_id"] for x in due} == set(items)
    assert [e["type"] for e in store.events(tid)].count("content.retired") == 0

    done = service.expire(store, RITA, tid)
    assert {x["item_id"] for x in done["retired"]} == set(items)
    assert sorted(done["blobs_removed"]) == sorted(set(digests.values()))
    assert all(_blob_gone(store, d) for d in digests.values())

    # The tombstone keeps digest, size, media type, what the item was and what it proved.
    stones = {
        e["payload"]["item_id"]: e for e in store.events(tid) if e["type"] == "content.retired"
    }
    art = stones["report.md@1"]["payload"]
    assert art["digest"] == digests["report.md@1"]
    assert art["media_type"] == "text/markdown" and art["size"] == len("# Report\nall good\n")
    assert art["item_kind"] == "artifact_version"
    assert art["proved"] == ["criterion C1 satisfied on report.md v1"]
    assert stones["ev1"]["payload"]["proved"] == ["criterion C1 satisfied on report.md v1"]
    assert stones["ev2"]["payload"]["proved"] == []
    assert stones["ev1"]["actor"]["id"] == "rita"

    # Verify: every tombstoned digest accepted (info), no "missing blob" problem.
    assert _problems(store) == []
    assert _info_kinds(store).count("blob_retired") == 4

    # The state says "retired", never "missing".
    state = store.task(tid)
    assert state["problems"] == []
    ev = {e["evidence_id"]: e for cr in state["criteria"] for e in cr["evidence"]}
    assert ev["ev1"]["blob_problem"] == "retired"
    assert ev["ev1"]["retired"]["words"].startswith("retired on ")
    version = state["artifacts"][0]["versions"][0]
    assert version["blob_problem"] == "retired" and version["retired"]["size"] == 18

    # The brief: the required ones block, the optional ones degrade.
    brief = resume_brief(store, tid)
    blocking = {b["id"] for b in brief["blockers"] if b["kind"] == "retired_required"}
    assert blocking == {"report.md@1", "ev1"}
    assert {d["id"] for d in brief["degraded"]} == {"ev2", note_id}
    assert not [b for b in brief["blockers"] if "ev2" in b["message"]]
    assert not [b for b in brief["blockers"] if "missing" in b["kind"] and b.get("id") == "ev1"]
    text = brief_markdown(brief)
    assert "## Degraded (retired optional content)" in text
    assert "evidence ev1 was retired on " in text and "criterion C1" in text

    # Expired once: nothing is due again, and the class of a retired item is history.
    assert service.expire(store, RITA, tid) == {"retired": [], "blobs_removed": []}
    with pytest.raises(AuthorityRefused, match="retired"):
        store.execute(SetRetention(task_id=tid, item="ev1", retain="keep"), RITA)


def test_a_blob_deleted_without_a_tombstone_is_still_caught(store: Store, tid: str) -> None:
    _record(store, retain=None)  # kept: no class at all
    row = store.task(tid)["criteria"][0]["evidence"][0]
    store.blobs.remove(row["digest"])
    problems = _problems(store)
    assert [k for k, _ in problems] == ["blob_missing"]
    assert "evidence ev1" in problems[0][1]
    assert store.task(tid)["problems"][0]["problem"] == "missing"


def test_a_digest_another_live_item_names_keeps_its_blob(store: Store, tid: str) -> None:
    """Two items with the same bytes: retiring one leaves the blob for the other; removing it
    by hand afterwards is caught, since a live item still names it."""
    for eid, retain in (("old", "0h"), ("new", None)):
        store.execute(
            c.AttachEvidence(
                task_id=tid, criterion_id="C2", kind="command_output", evidence_id=eid,
                content=c.Content(text="same log"), retain=retain,
            ),
            AGENT,
        )  # fmt: skip
    done = service.expire(store, RITA, tid)
    assert [x["item_id"] for x in done["retired"]] == ["old"]
    assert done["blobs_removed"] == []
    digest = done["retired"][0]["digest"]
    assert not _blob_gone(store, digest)
    assert _problems(store) == []
    store.blobs.remove(digest)
    assert [k for k, _ in _problems(store)] == ["blob_missing"]


# --- who may ----------------------------------------------------------------------------------


def test_who_may_change_a_class_and_who_may_expire(store: Store, tid: str) -> None:
    store.execute(
        c.AttachEvidence(
            task_id=tid, criterion_id="C1", kind="review", evidence_id="rev",
            content=c.Content(text="looks right"),
        ),
        RITA,
    )  # fmt: skip
    store.execute(
        c.AttachEvidence(
            task_id=tid, criterion_id="C2", kind="command_output", evidence_id="log",
            content=c.Content(text="build log"), retain="30d",
        ),
        AGENT,
    )  # fmt: skip
    # An agent changes only what it wrote; a person's review is not its to shorten.
    with pytest.raises(AuthorityRefused, match="only of content it wrote itself") as refused:
        store.execute(SetRetention(task_id=tid, item="rev", retain="0h"), AGENT)
    assert refused.value.rule == "retention_of_anothers_is_a_persons"
    with pytest.raises(AuthorityRefused):
        store.execute(SetRetention(task_id=tid, item="log", retain="0h"), OTHER)
    store.execute(SetRetention(task_id=tid, item="log", retain="12h"), AGENT)
    store.execute(SetRetention(task_id=tid, item="rev", retain="7d", reason="privacy"), RITA)
    # Expiry is a person's act.
    with pytest.raises(AuthorityRefused, match="only a person expires") as refused:
        store.execute(ExpireContent(task_id=tid), AGENT)
    assert refused.value.rule == "expiry_is_a_persons"
    # Nothing written by the refusals; the classes as set.
    items = {x["item_id"]: x for x in retention(store, tid)["items"]}
    assert items["log"]["retain"] == "12h" and items["log"]["set_by"]["id"] == "drafter-7"
    assert items["rev"]["retain"] == "7d" and items["rev"]["written_by"]["id"] == "rita"
    assert not any(x["due"] for x in items.values())
    # Bad input is refused, nothing written.
    with pytest.raises(CommandRejected, match="is not keep, a duration"):
        store.execute(SetRetention(task_id=tid, item="log", retain="soon"), RITA)
    with pytest.raises(CommandRejected, match="has no item"):
        store.execute(SetRetention(task_id=tid, item="nope", retain="1d"), RITA)


def test_until_completion_is_not_due_while_the_task_runs(store: Store, tid: str) -> None:
    store.execute(
        c.RecordNote(task_id=tid, text="diagnostics", retain="until-completion+0d"), AGENT
    )
    (item,) = retention(store, tid)["items"]
    assert item["due_at"] is None and not item["due"]
    assert service.expire(store, RITA, tid)["retired"] == []
    # After completion plus N, on the database's clock.
    cls = rules.retention_class("until-completion+7d")
    done = "2026-12-06T12:00:00.000000Z"
    assert rules.retention_due(cls, done, None) is None
    assert rules.retention_due(cls, done, done) == "2026-12-13T12:00:00.000000Z"
    assert rules.retention_class("keep").keeps


def test_a_rebuild_gives_the_rows_the_writes_made(store: Store, tid: str) -> None:
    _record(store)
    store.execute(SetRetention(task_id=tid, item="ev2", retain="30d"), AGENT)
    service.expire(store, RITA, tid)
    before = store.projection_dump(tid)
    assert before["retention"]
    store.rebuild(tid)
    assert store.projection_dump(tid) == before


# --- record format, migration -----------------------------------------------------------------


def test_a_program_that_does_not_know_the_new_events_refuses_them_in_one_line(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    stone = {
        "item_kind": "evidence", "item_id": "ev1", "digest": "sha256:" + "0" * 64, "size": 3,
        "media_type": "text/plain", "retain": "0h", "due_at": "2026-12-06T12:00:00.000000Z",
    }  # fmt: skip
    assert isinstance(events.decode("content.retired", 1, stone), events.ContentRetired)
    for name in ("content.retired", "retention.set", "note.stored"):
        monkeypatch.delitem(events._REGISTRY, name)  # the program before retention
        with pytest.raises(UnknownEventFormat) as refused:
            events.decode(name, 1, stone)
        assert str(refused.value) == f"unknown event type {name!r}"


def test_a_store_at_schema_0013_migrates(
    store: Store, tid: str, open_store: Callable[..., Store]
) -> None:
    from alembic import command
    from alembic.config import Config

    from store import migrate

    cfg = Config()
    cfg.set_main_option("script_location", str(migrate.MIGRATIONS_DIR))
    with store.engine.begin() as conn:
        cfg.attributes["connection"] = conn
        command.downgrade(cfg, "0013")
        assert not sa.inspect(conn).has_table("retention")
    store.close()
    with open_store() as again:
        assert migrate.current_revision(again.engine) == migrate.HEAD
        _record(again)
        assert len(retention(again, tid)["items"]) == 3
        assert _problems(again) == []


# --- the real CLI -----------------------------------------------------------------------------


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("BORIS_")}
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    return env


def _boris(store: Store, *argv: str) -> subprocess.CompletedProcess[str]:
    where = ["--store", str(store.location.directory)]
    if not store.location.sqlite_file:
        where += ["--url", store.location.url]
    return subprocess.run(
        [sys.executable, "-m", "store.cli", *argv, *where],
        env=_env(), cwd=ROOT, capture_output=True, text=True, timeout=120,
    )  # fmt: skip


def test_the_cli_sets_changes_lists_and_expires(store: Store, tid: str) -> None:
    ok = _boris(
        store, "record-artifact", tid, "report.md", "--text", "draft", "--retain", "0h",
        "--actor", "agent:drafter-7",
    )  # fmt: skip
    assert ok.returncode == 0, ok.stderr
    ok = _boris(
        store, "attach-evidence", tid, "C2", "--kind", "command_output", "--text", "log",
        "--id", "log", "--retain", "30d", "--actor", "agent:drafter-7",
    )  # fmt: skip
    assert ok.returncode == 0, ok.stderr
    bad = _boris(store, "attach-evidence", tid, "C2", "--kind", "other", "--text", "x",
                 "--retain", "forever", "--actor", "agent:drafter-7")  # fmt: skip
    assert bad.returncode != 0 and "is not keep, a duration" in bad.stderr
    refused = _boris(store, "retain", tid, "log", "--class", "0h", "--actor", "agent:helper-2")
    assert refused.returncode != 0
    assert refused.stderr.strip().splitlines() == [
        "boris: an agent changes the retention only of content it wrote itself; this was "
        "written by agent:drafter-7: ask a person to do it"
    ]
    listed = _boris(store, "retention", tid)
    assert "report.md@1" in listed.stdout and "due since" in listed.stdout
    dry = _boris(store, "expire", "--task", tid, "--dry-run")
    assert dry.stdout.strip() == f"would retire {tid} artifact_version report.md@1"
    agent = _boris(store, "expire", "--task", tid, "--actor", "agent:drafter-7")
    assert agent.returncode != 0 and "only a person expires content" in agent.stderr
    done = _boris(store, "expire", "--task", tid, "--actor", "person:rita", "--json")
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)["result"]
    assert [x["item_id"] for x in result["retired"]] == ["report.md@1"]
    assert len(result["blobs_removed"]) == 1
    listed = _boris(store, "retention", tid, "--json")
    items = {x["item_id"]: x for x in json.loads(listed.stdout)["result"]["items"]}
    assert items["report.md@1"]["state"] == "retired"
    assert items["report.md@1"]["weight"] == "blocking"  # the current version of report.md
    assert items["log"]["state"] == "live"
    checked = _boris(store, "verify")
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "blob_retired" in checked.stdout
    brief = _boris(store, "resume", tid)
    assert "artifact version report.md@1 was retired on " in brief.stdout
    with store.read() as conn:
        n = conn.execute(
            sa.select(sa.func.count())
            .select_from(t.events)
            .where(t.events.c.task_id == tid, t.events.c.type == "content.retired")
        ).scalar_one()
    assert n == 1


# --- the real MCP client ----------------------------------------------------------------------


def test_an_agent_sets_retention_over_mcp_and_may_not_expire(store: Store, tid: str) -> None:
    import anyio
    from mcp import ClientSession, StdioServerParameters, stdio_client

    where = ["--store", str(store.location.directory)]
    if not store.location.sqlite_file:
        where += ["--url", store.location.url]
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "store.cli", "mcp", *where, "--actor", "agent:drafter-7"],
        env=_env(),
        cwd=str(ROOT),
    )

    async def call(session: ClientSession, tool: str, **arguments: Any) -> Any:
        result = await session.call_tool(tool, arguments)
        return result.structured_content

    async def scenario() -> None:
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            tools = {x.name: x for x in (await session.list_tools()).tools}
            assert "set_retention" in tools and "expire_content" not in tools
            for name in ("record_artifact", "attach_evidence", "record_note"):
                assert "retain" in tools[name].input_schema["properties"], name
            attached = await call(
                session, "attach_evidence", task_id=tid, criterion_id="C2",
                kind="command_output", evidence_id="log", content={"text": "build log"},
                retain="until-completion+7d",
            )  # fmt: skip
            assert attached == {"ok": True, "result": "log"}
            noted = await call(session, "record_note", task_id=tid, text="why", retain="30d")
            assert noted["ok"] and noted["result"].startswith("note-")
            changed = await call(session, "set_retention", task_id=tid, item="log", retain="1d")
            assert changed["ok"] is True
            bad = await call(session, "set_retention", task_id=tid, item="log", retain="later")
            assert bad["ok"] is False and bad["error"]["rule"] == "retention_class"

    anyio.run(scenario)
    items = {x["item_id"]: x for x in retention(store, tid)["items"]}
    assert items["log"]["retain"] == "1d" and items["log"]["due_at"] is not None
    assert len(items) == 2


# --- a package carries the tombstone, not the content -------------------------------------------


def test_an_export_carries_tombstones_and_imports_where_verify_accepts_them(
    store: Store, tid: str, tmp_path: Path
) -> None:
    from store.services import archive

    _record(store)
    store.execute(
        c.AttachEvidence(
            task_id=tid, criterion_id="C2", kind="other", evidence_id="kept",
            content=c.Content(text="kept for good"),
        ),
        AGENT,
    )  # fmt: skip
    service.expire(store, RITA, tid)
    pkg = archive.export_task(store, tid, tmp_path / "report.tar.gz")
    with Store.open(tmp_path / "other") as there:
        archive.import_package(there, pkg)
        assert _problems(there) == []
        assert _info_kinds(there).count("blob_retired") == 3
        items = {x["item_id"]: x["state"] for x in retention(there, tid)["items"]}
        assert items == {"report.md@1": "retired", "ev1": "retired", "ev2": "retired"}
        brief = resume_brief(there, tid)
        assert {b["id"] for b in brief["blockers"] if b["kind"] == "retired_required"} == {
            "report.md@1",
            "ev1",
        }
    # A blob gone without a tombstone still refuses the export.
    kept = next(
        e
        for cr in store.task(tid)["criteria"]
        for e in cr["evidence"]
        if e["evidence_id"] == "kept"
    )
    store.blobs.remove(kept["digest"])
    with pytest.raises(archive.ExportFailed, match="evidence kept"):
        archive.export_task(store, tid, tmp_path / "again.tar.gz")
