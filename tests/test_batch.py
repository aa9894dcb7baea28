"""Batches (issue 42): several pending approvals, across tasks, decided in one pass.

On a signed store as `boris init` makes it, on both engines, through the real
`boris decide-batch`: five parallel calls of one agent and one call of another task decided
3 approve / 1 edit / 1 reject / 1 respond, each item recorded on its own, signed by the person;
an item whose approval changed since the digest it names is refused with its conflict while
the others are recorded; a malformed line refuses the batch before anything is written."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest
from test_respond import WEATHER_SCHEMA, Signed

from store import Store
from store.events import ApprovalAnswered, ApprovalDecided
from store.services.batch import BatchItem, batch_preflight


@pytest.fixture
def signed(store: Store, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Signed:
    return Signed(store, tmp_path, capsys)


def _digest(signed: Signed, task_id: str, approval_id: str) -> str:
    return str(signed.approval(task_id, approval_id)["payload_digest"])


def _batch(tmp_path: Path, items: list[dict[str, Any]]) -> str:
    path = tmp_path / "batch.jsonl"
    path.write_text("".join(json.dumps(i) + "\n" for i in items))
    return str(path)


def test_a_batch_across_tasks_each_item_recorded(signed: Signed, tmp_path: Path) -> None:
    one, two = signed.task("t1"), signed.task("t2")
    calls = [signed.ask(one, f"tool{i}", {"n": i}) for i in range(5)]
    other = signed.ask(two, "weather", {"city": "Oslo", "result_schema": WEATHER_SCHEMA})

    rows = batch_preflight(signed.store, [(one, a) for a in calls] + [(two, other)])
    assert [r.view.approval_id for r in rows] == [*calls, other]
    assert rows[0].target == "langgraph://tools/tool0" and rows[0].task_title == "T"
    assert rows[0].view.payload_digest == _digest(signed, one, calls[0])

    verdicts = ["approve", "approve", "approve", "approve", "reject"]
    items: list[dict[str, Any]] = [
        {
            "task_id": one,
            "approval_id": a,
            "verdict": v,
            "based_on": _digest(signed, one, a),
            "note": f"item {i}",
        }
        for i, (a, v) in enumerate(zip(calls, verdicts, strict=True))
    ]
    items[3]["edited"] = {"n": 33}
    items.append(
        {
            "task_id": two,
            "approval_id": other,
            "verdict": "respond",
            "based_on": _digest(signed, two, other),
            "result": {"temperature_c": 2},
        }
    )
    answer = signed.ok("--actor", "person:rita", "decide-batch", _batch(tmp_path, items))
    assert answer["recorded"] == 6 and answer["refused"] == 0
    got = [(r["approval_id"], r["recorded"], r["state"]) for r in answer["result"]["results"]]
    assert got == [
        (calls[0], True, "approved"),
        (calls[1], True, "approved"),
        (calls[2], True, "approved"),
        (calls[3], True, "approved"),
        (calls[4], True, "rejected"),
        (other, True, "answered"),
    ]
    # The edit is the person's revision: the approval binds it.
    assert signed.approval(one, calls[3])["payload"] == {"n": 33}
    decided = [e for e in signed.store.events(one) if e["type"] == ApprovalDecided.TYPE]
    assert len(decided) == 5 and all(e["actor"]["id"] == "rita" for e in decided)
    answered = [e for e in signed.store.events(two) if e["type"] == ApprovalAnswered.TYPE]
    assert len(answered) == 1 and answered[0]["actor"]["id"] == "rita"
    rc, problems = signed.verify()
    assert rc == 0, problems


def test_a_stale_item_is_refused_with_its_conflict_the_others_recorded(
    signed: Signed, tmp_path: Path
) -> None:
    tid = signed.task("t1")
    first, second, third = (signed.ask(tid, "tool", {"n": i}) for i in range(3))
    seen = {a: _digest(signed, tid, a) for a in (first, second, third)}
    # The second is decided meanwhile (from another window, `boris reject`).
    signed.ok("--actor", "person:rita", "reject", tid, second, "--note", "no")
    items = [
        {"task_id": tid, "approval_id": a, "verdict": "approve", "based_on": seen[a]}
        for a in (first, second, third)
    ]
    items[2]["based_on"] = "sha256:" + "9" * 64  # decided on an object that is not this one
    rc, out, _ = signed.run("--actor", "person:rita", "decide-batch", _batch(tmp_path, items))
    assert rc == 0
    lines = out.splitlines()
    assert lines[0] == f"recorded  {tid} {first} approved -> approved"
    assert lines[1].startswith(f"REFUSED   {tid} {second} approved: conflict:")
    assert "it was rejected by rita meanwhile" in lines[1]
    assert "not sha256:9999" in lines[2]
    assert lines[-1] == "1 recorded, 2 refused"

    results = signed.ok("approvals", tid)["result"]
    states = {r["id"]: r["state"] for r in results}
    assert states == {first: "approved", second: "rejected", third: "pending"}


def test_the_json_answer_names_each_conflict(
    signed: Signed, monkeypatch: pytest.MonkeyPatch
) -> None:
    tid = signed.task("t1")
    a = signed.ask(tid, "tool", {"n": 1})
    stale = json.dumps(
        {"task_id": tid, "approval_id": a, "verdict": "approve", "based_on": "sha256:" + "0" * 64}
    )
    monkeypatch.setattr("sys.stdin", io.StringIO(stale + "\n"))
    answer = signed.ok("--actor", "person:rita", "decide-batch", "-")
    (result,) = answer["result"]["results"]
    assert result["recorded"] is False and result["code"] == "conflict"
    assert result["conflict"]["current"] == _digest(signed, tid, a)
    assert result["conflict"]["state"] == "pending"


def test_a_malformed_line_refuses_the_batch_before_anything(signed: Signed, tmp_path: Path) -> None:
    tid = signed.task("t1")
    a = signed.ask(tid, "tool", {"n": 1})
    digest = _digest(signed, tid, a)
    good = {"task_id": tid, "approval_id": a, "verdict": "approve", "based_on": digest}
    path = tmp_path / "bad.jsonl"
    path.write_text(json.dumps(good) + "\n" + json.dumps({**good, "verdict": "maybe"}) + "\n")
    error = signed.refused("--actor", "person:rita", "decide-batch", str(path))
    assert error["code"] == "usage" or error["category"] == "usage"
    assert "line 2" in error["message"]
    assert signed.approval(tid, a)["state"] == "pending"
    assert BatchItem.model_validate({**good, "verdict": "send-back"}).verdict == "sent_back"
