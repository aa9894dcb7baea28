"""Verify proves authority, not just authorship (issue 40).

Each forged history is written as an attacker holding the store's own Python and a trusted
agent's key would write it: a transaction (`store.transaction()`), the real event classes
`emit`ted into it, signed with the agent's key (by hand where the store's own seal refuses
the write: the attacker holds the key and the rows). The store is signed as `boris init`
makes it: a person's key its root, signatures required, the agent's key trusted by that
person. `boris verify --json` must exit 3 naming the task, the seq, the actor and the code;
honest histories (the demo, and the lease, take-over, retention, deletion, late-change,
budget, summary and import flows) verify clean. On both engines.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from test_verify import _append_raw

from store import Actor, Store, rules
from store import commands as c
from store import events as ev
from store import schema as t
from store import store as store_module
from store.cli import main as cli
from store.commands.approvals import RequestApproval
from store.commands.checkpoints import StopRun, WriteCheckpoint
from store.commands.late import AcknowledgeLateChanges
from store.commands.leases import AcquireLease, ReleaseLease, TakeOver
from store.commands.retention import ExpireContent, SetRetention
from store.commands.waits import CancelWait, RecordWait
from store.errors import LeaseHeld, LeaseLost
from store.model import SYSTEM
from store.services import archive as ar
from store.services.deletion import delete_task
from store.services.narratives import record_summary
from store.signing import SignatureRefused, SigningKey, keyring
from store.signing.seal import encode_signature, record_message
from store.signing.trust import add_key, require, revoke_key

RITA = Actor(kind="person", id="rita", name="Rita")
BOT = Actor(kind="agent", id="bot")
OTHER_BOT = Actor(kind="agent", id="helper")
BORIS = Path(sys.executable).with_name("boris")


class Signed:
    """A store as `boris init --actor person:rita` leaves it (rita's key its root,
    signatures required), the agents' keys trusted by rita (`boris keys add`)."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.rita, self.bot, self.helper = (SigningKey.generate() for _ in range(3))
        require(store, self.rita, RITA)
        add_key(store, self.rita, self.bot.public_raw, BOT)
        add_key(store, self.rita, self.helper.public_raw, OTHER_BOT)

    def key_of(self, actor: Actor) -> SigningKey:
        return {"rita": self.rita, "bot": self.bot, "helper": self.helper}[actor.id]

    def do(self, actor: Actor, command: Any) -> Any:
        """A command as the actor, signed with its own key (as boris and the adapters do)."""
        self.store.signer = self.key_of(actor)
        return self.store.execute(command, actor)

    def forge(self, task_id: str, *events: tuple[ev.Payload, Actor]) -> list[int]:
        """The events appended in one transaction past the command layer, signed with the
        agent's key whatever the store's policy says. Their seqs."""
        return forge(self.store, self.bot, task_id, *events)

    def task(self, task_id: str = "t", *, by: Actor = RITA) -> str:
        return str(
            self.do(by, c.CreateTask(task_id=task_id, title="T", owner="rita", objective="o"))
        )


def forge(
    store: Store, key: SigningKey, task_id: str, *events: tuple[ev.Payload, Actor]
) -> list[int]:
    def sign(conn: Any, policy: Any, signer: Any, emitted: Any, now: str) -> None:
        e = emitted[-1]
        conn.execute(
            sa.insert(t.signatures).values(
                task_id=e.task_id,
                seq=e.seq,
                key_id=key.key_id,
                signature=encode_signature(key.sign(record_message(e.task_id, e.seq, e.hash))),
            )
        )

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(store_module, "seal", sign)
        with store.transaction() as tx:
            return [tx.emit(task_id, payload, actor).seq for payload, actor in events]


@pytest.fixture
def signed(store: Store) -> Signed:
    return Signed(store)


def where(store: Store) -> list[str]:
    args = ["--store", str(store.location.directory)]
    if store.location.sqlite_file is None:
        args += ["--url", store.engine.url.render_as_string(hide_password=False)]
    return args


def verify_json(store: Store, capsys: pytest.CaptureFixture[str], exit_code: int) -> dict[str, Any]:
    """`boris verify --json` as a script runs it: its exit code, and its report."""
    capsys.readouterr()
    assert cli([*where(store), "--json", "verify", "--no-remember"]) == exit_code
    out = json.loads(capsys.readouterr().out)
    report: dict[str, Any] = out["result"] if exit_code == 0 else out["error"]["details"]["report"]
    return report


def named(report: dict[str, Any]) -> list[tuple[str, str, str, int | None, str | None]]:
    """Each problem as (code, kind, task, seq, actor)."""
    return [(p["code"], p["kind"], p["task_id"], p["seq"], p["actor"]) for p in report["problems"]]


def now() -> str:
    return rules.store_time(dt.datetime.now(dt.UTC))


def clean(store: Store, capsys: pytest.CaptureFixture[str]) -> None:
    report = verify_json(store, capsys, 0)
    assert report["ok"] and report["signed"] and report["problems"] == []


# --- leases ------------------------------------------------------------------------------


def lease_taken_over(s: Signed) -> tuple[str, int]:
    """The agent worked under a lease (token 1); rita took the task over (token 2)."""
    tid = s.task()
    lease = s.do(BOT, AcquireLease(task_id=tid, session_id="s1"))
    s.do(BOT, c.RecordNote(task_id=tid, text="working", lease_token=lease["token"]))
    taken = s.do(RITA, TakeOver(task_id=tid, reason="I will finish it"))
    return tid, int(taken["token"])


def test_an_agent_that_acquires_the_lease_a_person_took_over_is_named(
    signed: Signed, capsys: pytest.CaptureFixture[str]
) -> None:
    tid, token = lease_taken_over(signed)
    clean(signed.store, capsys)
    (seq,) = signed.forge(
        tid,
        (
            ev.LeaseAcquired(
                token=token + 1,
                session_id="s1",
                ttl_seconds=60,
                expires_at=rules.store_time_after(now(), 60),
            ),
            BOT,
        ),
    )
    report = verify_json(signed.store, capsys, 3)
    assert named(report) == [("authority", "not_authorized", tid, seq, "agent:bot")]
    (p,) = report["problems"]
    assert p["rule"] == "lease_held" and "person:rita holds the task's lease" in p["message"]


def test_an_agent_writing_while_a_person_holds_the_task_is_named_and_refused(
    signed: Signed, capsys: pytest.CaptureFixture[str]
) -> None:
    tid, token = lease_taken_over(signed)
    # The fence refuses the agent whatever token it sends: its own (stale), none, and the
    # person's (a token orders writers; the person took the task over from every agent).
    for sent in (1, None, token):
        with pytest.raises(LeaseLost if sent else LeaseHeld):
            signed.do(BOT, c.RecordNote(task_id=tid, text="still here", lease_token=sent))
    (seq,) = signed.forge(tid, (ev.NoteRecorded(text="still here"), BOT))
    report = verify_json(signed.store, capsys, 3)
    assert named(report) == [("authority", "not_authorized", tid, seq, "agent:bot")]
    assert report["problems"][0]["rule"] == "write_under_the_lease"


def test_the_lease_flows_verify_clean(signed: Signed, capsys: pytest.CaptureFixture[str]) -> None:
    tid, token = lease_taken_over(signed)
    signed.do(RITA, c.RecordNote(task_id=tid, text="mine for now"))
    signed.do(RITA, WriteCheckpoint(task_id=tid, reason="handoff", note="back to you"))
    signed.do(RITA, ReleaseLease(task_id=tid, lease_token=token))
    lease = signed.do(BOT, AcquireLease(task_id=tid, session_id="s2"))
    signed.do(BOT, c.RecordNote(task_id=tid, text="again", lease_token=lease["token"]))
    signed.do(BOT, ReleaseLease(task_id=tid, lease_token=lease["token"]))
    # A person's stop ends the agent's lease, as that person.
    lease = signed.do(OTHER_BOT, AcquireLease(task_id=tid, session_id="s3"))
    signed.do(RITA, StopRun(task_id=tid, reason="enough"))
    clean(signed.store, capsys)


# --- a person's decisions, written by an agent ------------------------------------------


def _evidence(s: Signed, tid: str, by: Actor) -> dict[str, Any]:
    s.do(by, c.AddCriterion(task_id=tid, criterion_id="C1", text="right"))
    s.do(
        by,
        c.AttachEvidence(
            task_id=tid,
            criterion_id="C1",
            evidence_id="ev1",
            kind="command_output",
            content=c.Content(text="12 passed"),
        ),
    )
    return dict(s.store.task(tid)["criteria"][0]["evidence"][0])


def _retire_evidence(s: Signed, tid: str) -> list[tuple[ev.Payload, Actor]]:
    item = _evidence(s, tid, RITA)
    return [
        (
            ev.ContentRetired(
                item_kind="evidence",
                item_id="ev1",
                digest=item["digest"],
                size=item["size"],
                media_type=item["media_type"],
                retain="keep",
                due_at=now(),
            ),
            BOT,
        )
    ]


def _take_over(s: Signed, tid: str) -> list[tuple[ev.Payload, Actor]]:
    return [(ev.LeaseTakenOver(token=1, reason="mine"), BOT)]


def _waive(s: Signed, tid: str) -> list[tuple[ev.Payload, Actor]]:
    s.do(BOT, c.AddCriterion(task_id=tid, criterion_id="C1", text="right"))
    return [(ev.CriterionJudged(criterion_id="C1", status="waived", note="not needed"), BOT)]


def _acknowledge(s: Signed, tid: str) -> list[tuple[ev.Payload, Actor]]:
    s.do(BOT, c.RecordArtifact(task_id=tid, artifact_id="r", name="r", content=c.Content(text="1")))
    s.do(BOT, WriteCheckpoint(task_id=tid, reason="final"))
    assert s.store.task(tid)["status"] == "completed"
    s.do(BOT, c.RecordArtifact(task_id=tid, artifact_id="r", name="r", content=c.Content(text="2")))
    seq = int(s.store.events(tid)[-1]["seq"])
    return [(ev.LateChangesAcknowledged(through_seq=seq, based_on=seq, note="fine"), BOT)]


def _reopen(s: Signed, tid: str) -> list[tuple[ev.Payload, Actor]]:
    s.do(RITA, StopRun(task_id=tid, reason="enough"))
    return [(ev.RunStatusChanged(from_status="stopped", to_status="running"), BOT)]


def _raise_limit(s: Signed, tid: str) -> list[tuple[ev.Payload, Actor]]:
    s.do(RITA, c.SetBudget(task_id=tid, counter="tool_calls", limit=10))
    return [(ev.BudgetLimitSet(counter="tool_calls", limit=1000), BOT)]


def _cancel_anothers_wait(s: Signed, tid: str) -> list[tuple[ev.Payload, Actor]]:
    wid = s.do(OTHER_BOT, RecordWait(task_id=tid, kind="time", after_seconds=600))
    return [(ev.WaitEnded(wait_id=wid, state="cancelled", reason="no"), BOT)]


def _retention_of_anothers(s: Signed, tid: str) -> list[tuple[ev.Payload, Actor]]:
    item = _evidence(s, tid, RITA)
    return [
        (
            ev.RetentionSet(
                item_kind="evidence",
                item_id="ev1",
                digest=item["digest"],
                size=item["size"],
                media_type=item["media_type"],
                written_by=RITA,
                retain="0h",
                due_at=now(),
            ),
            BOT,
        )
    ]


DECISIONS: dict[str, tuple[Callable[[Signed, str], list[tuple[ev.Payload, Actor]]], str]] = {
    "retirement": (_retire_evidence, "expiry_is_a_persons"),
    "take-over": (_take_over, "taking_over_is_a_persons"),
    "waiver": (_waive, "waiver_is_a_persons"),
    "acknowledgement": (_acknowledge, "late_changes_are_a_persons"),
    "reopening": (_reopen, "reopening_is_a_persons"),
    "raised limit": (_raise_limit, "raising_a_limit_is_a_persons"),
    "another's wait cancelled": (
        _cancel_anothers_wait,
        "wait_cancelled_by_its_recorder_or_a_person",
    ),
    "another's retention": (_retention_of_anothers, "retention_of_anothers_is_a_persons"),
}


@pytest.mark.parametrize("decision", list(DECISIONS))
def test_a_persons_decision_written_by_an_agent_is_named(
    signed: Signed, capsys: pytest.CaptureFixture[str], decision: str
) -> None:
    setup, rule = DECISIONS[decision]
    tid = signed.task()
    forged = setup(signed, tid)
    (*_, seq) = signed.forge(tid, *forged)
    report = verify_json(signed.store, capsys, 3)
    assert named(report) == [("authority", "not_authorized", tid, seq, "agent:bot")]
    assert report["problems"][0]["rule"] == rule


def test_an_approval_decided_by_an_agent_names_its_actor(
    signed: Signed, capsys: pytest.CaptureFixture[str]
) -> None:
    tid = signed.task()
    aid = signed.do(
        OTHER_BOT, RequestApproval(task_id=tid, payload={"x": 1}, consequence="c", policy="p")
    )
    (seq,) = signed.forge(tid, (ev.ApprovalDecided(approval_id=aid, decision="approved"), BOT))
    report = verify_json(signed.store, capsys, 3)
    assert named(report) == [("approval", "approval_decider", tid, seq, "agent:bot")]
    assert report["problems"][0]["rule"] == "approval_decided_by_person"


def test_a_deletion_by_an_agent_is_named(
    signed: Signed, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    tid = signed.task(by=BOT)
    head = len(signed.store.events(tid))
    # Past the command's refusal, as an attacker with the store's Python would go.
    monkeypatch.setattr(rules, "deletion_refusal", lambda *a, **k: None)
    signed.store.signer = signed.bot
    delete_task(signed.store, tid, BOT, confirm=tid, reason="gone")
    report = verify_json(signed.store, capsys, 3)
    assert named(report) == [("authority", "not_authorized", tid, head, "agent:bot")]
    assert report["problems"][0]["rule"] == "deletion_is_a_persons"


# --- the store's own events ---------------------------------------------------------------


def test_a_completion_in_the_stores_name_signed_by_an_agent_is_named(
    signed: Signed, capsys: pytest.CaptureFixture[str]
) -> None:
    tid = signed.task(by=BOT)
    signed.do(BOT, c.AddCriterion(task_id=tid, text="never met"))
    # The store refuses to sign a write in its own name with an agent's key.
    signed.store.signer = signed.bot
    with pytest.raises(SignatureRefused, match="a person's key signs it"):
        record_summary(signed.store, tid)
    (seq,) = signed.forge(
        tid, (ev.RunStatusChanged(from_status="running", to_status="completed"), SYSTEM)
    )
    report = verify_json(signed.store, capsys, 3)
    assert sorted(named(report)) == [
        ("authority", "not_by_the_store", tid, seq, "system:boris"),
        ("signature", "system_signer", tid, seq, "system:boris"),
    ]
    by_kind = {p["kind"]: p for p in report["problems"]}
    assert by_kind["system_signer"]["key_id"] == signed.bot.key_id
    assert by_kind["not_by_the_store"]["rule"] == "system_is_the_stores"


@pytest.mark.parametrize("release_first", [True, False])
def test_an_imports_lease_release_forged_by_an_agent_is_named(
    signed: Signed, capsys: pytest.CaptureFixture[str], release_first: bool
) -> None:
    """What an import writes to end a lease, written in the agent's own transaction to end
    a person's take-over: the store's action is a transaction of its own."""
    tid, token = lease_taken_over(signed)
    release = (ev.LeaseReleased(token=token, note=rules.IMPORT_LEASE_NOTE), SYSTEM)
    note = (ev.NoteRecorded(text="mine again"), BOT)
    if release_first:
        release_seq, note_seq = signed.forge(tid, release, note)
        expected = [("authority", "not_authorized", tid, note_seq, "agent:bot")]
    else:
        note_seq, release_seq = signed.forge(tid, note, release)
        expected = [
            ("authority", "not_authorized", tid, note_seq, "agent:bot"),  # beside rita
            ("authority", "not_by_the_store", tid, release_seq, "system:boris"),
        ]
    report = verify_json(signed.store, capsys, 3)
    assert named(report) == expected
    assert {p["rule"] for p in report["problems"]} <= {
        "system_is_the_stores",
        "write_under_the_lease",
    }


def test_an_imports_lease_release_alone_signed_by_an_agent_is_named(
    signed: Signed, capsys: pytest.CaptureFixture[str]
) -> None:
    tid, token = lease_taken_over(signed)
    release = ev.LeaseReleased(token=token, note=rules.IMPORT_LEASE_NOTE)
    (seq,) = signed.forge(tid, (release, SYSTEM))
    report = verify_json(signed.store, capsys, 3)
    assert named(report) == [("signature", "system_signer", tid, seq, "system:boris")]


def test_a_status_change_inserted_raw_in_the_stores_name_is_named(
    store: Store, capsys: pytest.CaptureFixture[str]
) -> None:
    """On an unsigned store, whatever wrote the row (an INSERT of a team store's agents'
    login): a completion the store never made."""
    tid = store.execute(c.CreateTask(title="T", owner="rita", objective="o"), BOT)
    store.execute(c.AddCriterion(task_id=tid, text="never met"), BOT)
    seq = _append_raw(
        store, tid, ev.RunStatusChanged(from_status="running", to_status="completed"), SYSTEM
    )
    store.rebuild(tid)
    report = verify_json(store, capsys, 3)
    assert named(report) == [("authority", "not_by_the_store", tid, seq, "system:boris")]


# --- honest histories -------------------------------------------------------------------------


def test_retention_and_expiry_by_their_people_verify_clean(
    signed: Signed, capsys: pytest.CaptureFixture[str]
) -> None:
    tid = signed.task(by=BOT)
    signed.do(BOT, c.AddCriterion(task_id=tid, criterion_id="C1", text="right"))
    signed.do(
        BOT,
        c.RecordArtifact(task_id=tid, name="report.md", content=c.Content(text="r"), retain="0h"),
    )
    signed.do(
        BOT,
        c.AttachEvidence(
            task_id=tid,
            criterion_id="C1",
            evidence_id="ev1",
            kind="command_output",
            content=c.Content(text="log"),
            retain="30d",
        ),
    )
    signed.do(BOT, SetRetention(task_id=tid, item="ev1", retain="1h"))  # its own
    signed.do(RITA, c.RecordNote(task_id=tid, text="a note", retain="30d"))
    signed.do(RITA, SetRetention(task_id=tid, item="ev1", retain="0h"))  # anyone's
    retired = signed.do(RITA, ExpireContent(task_id=tid))
    assert {r["item_id"] for r in retired} == {"report.md@1", "ev1"}
    clean(signed.store, capsys)


def test_waits_budgets_and_late_changes_by_their_people_verify_clean(
    signed: Signed, capsys: pytest.CaptureFixture[str]
) -> None:
    tid = signed.task(by=BOT)
    wid = signed.do(BOT, RecordWait(task_id=tid, kind="time", after_seconds=600))
    signed.do(BOT, CancelWait(task_id=tid, wait_id=wid))
    wid = signed.do(BOT, RecordWait(task_id=tid, kind="time", after_seconds=600))
    signed.do(RITA, CancelWait(task_id=tid, wait_id=wid, reason="not needed"))
    signed.do(BOT, c.SetBudget(task_id=tid, counter="tool_calls", limit=2))
    signed.do(BOT, c.ChargeBudget(task_id=tid, counter="tool_calls", amount=3))
    assert signed.store.task(tid)["status"] == "budget_exhausted"
    signed.do(RITA, c.SetBudget(task_id=tid, counter="tool_calls", limit=100))
    assert signed.store.task(tid)["status"] == "running"
    # The store's summary, signed by the person who asked for it: its bytes charged too.
    signed.do(BOT, c.SetBudget(task_id=tid, counter="artifact_bytes", limit=1e9))
    signed.store.signer = signed.rita
    record_summary(signed.store, tid)
    assert signed.store.events(tid)[-1]["type"] == "budget.charged"
    signed.do(
        BOT, c.RecordArtifact(task_id=tid, artifact_id="r", name="r", content=c.Content(text="1"))
    )
    signed.do(BOT, WriteCheckpoint(task_id=tid, reason="final"))
    signed.do(
        BOT, c.RecordArtifact(task_id=tid, artifact_id="r", name="r", content=c.Content(text="2"))
    )
    late = max(e["seq"] for e in signed.store.events(tid) if e["type"].startswith("artifact."))
    signed.do(RITA, AcknowledgeLateChanges(task_id=tid, through_seq=late, note="fine as is"))
    clean(signed.store, capsys)


def test_a_persons_deletion_verifies_clean(
    signed: Signed, capsys: pytest.CaptureFixture[str]
) -> None:
    tid = signed.task(by=BOT)
    signed.store.signer = signed.rita
    delete_task(signed.store, tid, RITA, confirm=tid, reason="a test task")
    report = verify_json(signed.store, capsys, 0)
    assert [i["kind"] for i in report["info"]] == ["task_deleted"]


@pytest.fixture
def other(tmp_path: Path, store_engine: str, request: pytest.FixtureRequest) -> Iterator[Store]:
    """A second store on the test's engine, with a database of its own."""
    if store_engine == "sqlite":
        s = Store.open(tmp_path / "other")
        yield s
        s.close()
        return
    cluster = request.getfixturevalue("pg_cluster")
    name = cluster.create()
    s = Store.open(tmp_path / "other", url=cluster.url(name))
    yield s
    s.close()
    cluster.drop(name)


def test_an_import_retiring_approvals_and_ending_a_lease_verifies_clean(
    signed: Signed, other: Store, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tid = signed.task(by=BOT)
    lease = signed.do(BOT, AcquireLease(task_id=tid, session_id="s1", ttl_seconds=3600))
    aid = signed.do(
        BOT,
        RequestApproval(
            task_id=tid, payload={"x": 1}, consequence="c", policy="p", lease_token=lease["token"]
        ),
    )
    pkg = ar.export_task(signed.store, tid, tmp_path / "t.tar.gz")
    # Into a store where rita and the agent are trusted too: she imports it, with her key.
    require(other, signed.rita, RITA)
    add_key(other, signed.rita, signed.bot.public_raw, BOT)
    other.signer = signed.rita
    done = ar.import_package(other, pkg)
    assert done["approvals_revoked"] == [aid] and done["events_appended"] >= 2
    events = other.events(tid)[-done["events_appended"] :]
    assert {e["actor"]["kind"] for e in events} == {"system"}
    clean(other, capsys)


def test_the_demo_store_has_no_authority_problem(store_dir: Path, store_url: str | None) -> None:
    env = {**os.environ, "BORIS_STORE": str(store_dir), "BORIS_ACTOR": "person:me"}
    if store_url:
        env["BORIS_STORE_URL"] = store_url
    for argv in (["init"], ["demo"]):
        done = subprocess.run([str(BORIS), *argv], capture_output=True, text=True, env=env)
        assert done.returncode == 0, done.stderr
    done = subprocess.run(
        [str(BORIS), "--json", "verify", "--no-remember"], capture_output=True, text=True, env=env
    )
    report = json.loads(done.stdout)["error"]["details"]["report"]
    assert report["signed"]
    # The demo's one problem is on purpose: the build log the agent lost.
    assert [(p["code"], p["kind"], p["task_id"]) for p in report["problems"]] == [
        ("blob", "blob_missing", "guide")
    ]


# --- revocations carried by an imported package -----------------------------------------


class Elsewhere:
    """Another signed store (omar's) that trusts the same agent key and revoked it."""

    def __init__(self, store: Store, bot: SigningKey) -> None:
        self.store = store
        self.omar = SigningKey.generate()
        require(store, self.omar, Actor(kind="person", id="omar"))
        add_key(store, self.omar, bot.public_raw, BOT)
        store.signer = bot
        self.tid = str(store.execute(c.CreateTask(title="T", owner="omar", objective="o"), BOT))
        store.execute(c.AddCriterion(task_id=self.tid, text="right"), BOT)

    def revoke(self, bot: SigningKey) -> str:
        entry = revoke_key(self.store, self.omar, bot.key_id)
        return str(entry["at"])


def test_a_revocation_an_imported_package_carries_is_applied(
    signed: Signed, other: Store, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    mine = signed.task(by=BOT)
    there = Elsewhere(other, signed.bot)
    since = there.revoke(signed.bot)
    pkg = ar.export_task(other, there.tid, tmp_path / "t.tar.gz")
    signed.store.signer = signed.rita
    done = ar.import_package(signed.store, pkg)
    assert done["revocations_imported"] == [signed.bot.key_id]
    with signed.store.read() as conn:
        entry = keyring.rows(conn)[-1]
    assert (entry["action"], entry["key_id"], entry["at"]) == (
        keyring.REVOKED_IMPORTED,
        signed.bot.key_id,
        since,
    )
    assert entry["signer_key_id"] == signed.rita.key_id
    # The key signs nothing here from then on: refused by the store, named by verify.
    with pytest.raises(SignatureRefused, match="revoked"):
        signed.do(BOT, c.RecordNote(task_id=mine, text="after"))
    (seq,) = signed.forge(mine, (ev.NoteRecorded(text="after"), BOT))
    report = verify_json(signed.store, capsys, 3)
    assert named(report) == [("signature", "revoked_key", mine, seq, None)]


def test_a_package_signed_after_its_keys_revocation_is_refused(
    signed: Signed, other: Store, tmp_path: Path
) -> None:
    there = Elsewhere(other, signed.bot)
    there.revoke(signed.bot)
    (seq,) = forge(other, signed.bot, there.tid, (ev.NoteRecorded(text="after"), BOT))
    pkg = ar.export_task(other, there.tid, tmp_path / "t.tar.gz")
    signed.store.signer = signed.rita
    with pytest.raises(ar.PackageSignaturesFail, match=f"revoked_key: seq {seq}"):
        ar.import_package(signed.store, pkg)
    assert there.tid not in signed.store.task_ids()
