"""Every input is finite and bounded, the same on every path (issue 31, items 7 to 9).

Non-finite numbers (inf, nan, a JSON 1e400) and NUL in text are refused with one line on
both engines, whether the command comes from the CLI's arguments, `--payload-json`, ingest,
the MCP server or the Python API; an imported package carrying them is refused too. One size
limit per field (store.limits) is shared by all of them and by export and import, so the
largest note a command accepts is exported and imported again.
"""

from __future__ import annotations

import io
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from pydantic import ValidationError
from test_archive import (
    event_rows,
    fix_digests,
    read_members,
    refused,
    set_events,
    write_package,
)
from test_mcp_e2e import Agent, mcp_session

from store import Actor, Store
from store import commands as c
from store.cli import main
from store.commands.approvals import RequestApproval
from store.commands.effects import DispatchEffect, RecordResponse
from store.limits import MAX_COMMAND_BYTES, MAX_TEXT_BYTES, input_problem
from store.services import archive as ar
from store.services.verify import verify

AGENT = Actor(kind="agent", id="a1")
PERSON = "person:tester"


def _strict(text: str) -> Any:
    """JSON as a strict parser reads it: NaN and Infinity are not JSON."""

    def refuse(name: str) -> Any:
        raise ValueError(f"{name} is not JSON")

    return json.loads(text, parse_constant=refuse)


@pytest.fixture
def task(store: Store, ws: Path) -> str:
    return str(
        store.execute(
            c.CreateTask(title="t", owner="ana", objective="o", scope_paths=[str(ws)]), AGENT
        )
    )


def _cli(
    capsys: pytest.CaptureFixture[str],
    store: Store,
    store_dir: Path,
    store_url: str | None,
    *args: str,
    stdin: str | None = None,
    monkeypatch: pytest.MonkeyPatch | None = None,
) -> tuple[int, str, str]:
    if stdin is not None:
        assert monkeypatch is not None
        monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(stdin.encode())))
    where = ["--store", str(store_dir)] + (["--url", store_url] if store_url else [])
    rc = main([*args, *where, "--actor", PERSON])
    out = capsys.readouterr()
    return rc, out.out, out.err


def _one_line(err: str, *words: str) -> None:
    assert err.startswith("boris: ") and err.count("\n") == 1, err
    assert "Traceback" not in err
    for w in words:
        assert w in err, err


def _events(store: Store, task_id: str) -> int:
    return len(store.events(task_id))


# --- 7: non-finite numbers ---------------------------------------------------------------------

NON_FINITE_MODELS = [
    lambda: c.ChargeBudget(task_id="t", counter="tool_calls", amount=float("inf")),
    lambda: c.ChargeBudget(task_id="t", counter="tool_calls", amount="inf"),  # type: ignore[arg-type]
    lambda: c.ChargeBudget(task_id="t", counter="tool_calls", amount=float("nan")),
    lambda: c.SetBudget(task_id="t", counter="tool_calls", limit=float("inf")),
    lambda: c.SetBudget(task_id="t", counter="tool_calls", limit=-float("inf")),
    lambda: RequestApproval(
        task_id="t", payload={"x": [1, {"y": float("inf")}]}, consequence="c", policy="p"
    ),
    lambda: RequestApproval.model_validate_json(
        '{"task_id": "t", "payload": {"x": 1e400}, "consequence": "c", "policy": "p"}'
    ),
    lambda: RequestApproval.model_validate_json(
        '{"task_id": "t", "payload": {"x": NaN}, "consequence": "c", "policy": "p"}'
    ),
    lambda: DispatchEffect(task_id="t", effect_id="e", executor="x", inputs={"n": -float("inf")}),
    lambda: RecordResponse(
        task_id="t", effect_id="e", reported="failed", response={"t": float("nan")}
    ),
    lambda: RequestApproval(task_id="t", payload={"x": 10**30}, consequence="c", policy="p"),
]


@pytest.mark.parametrize("build", NON_FINITE_MODELS)
def test_a_command_model_refuses_a_number_that_is_not_finite(build: Any) -> None:
    with pytest.raises(ValidationError, match=r"finite|out of range|Infinity|NaN|JSON"):
        build()


def test_charging_inf_on_the_command_line_is_refused_in_one_line(
    store: Store,
    store_dir: Path,
    store_url: str | None,
    task: str,
    capsys: pytest.CaptureFixture[str],
) -> None:
    for args in (["charge", task, "tool_calls", "inf"], ["set-budget", task, "tool_calls", "nan"]):
        rc, out, err = _cli(capsys, store, store_dir, store_url, *args)
        assert rc == 2, (out, err)
        _one_line(err, "finite")
    rc, out, _ = _cli(capsys, store, store_dir, store_url, "show", task, "--json")
    assert rc == 0
    _strict(out)  # no Infinity anywhere
    rc, out, _ = _cli(capsys, store, store_dir, store_url, "events", task, "--json")
    assert rc == 0 and _strict(out)["ok"] is True
    assert verify(store).ok


@pytest.mark.parametrize("number", ["1e400", "-1e400", "NaN", "Infinity"])
def test_a_payload_with_a_non_finite_number_is_refused_on_every_path(
    store: Store,
    store_dir: Path,
    store_url: str | None,
    task: str,
    number: str,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    before = _events(store, task)
    payload = '{"rate": ' + number + "}"
    rc, out, err = _cli(
        capsys,
        store,
        store_dir,
        store_url,
        "request-approval",
        task,
        "--payload-json",
        payload,
        "--consequence",
        "c",
        "--policy",
        "p",
    )
    assert rc == 2, (out, err)
    _one_line(err, "finite")
    line = f'{{"type": "request_approval", "task_id": "{task}", "payload": {payload}, '
    line += '"consequence": "c", "policy": "p"}\n'
    rc, out, err = _cli(
        capsys,
        store,
        store_dir,
        store_url,
        "ingest",
        "-",
        stdin=line,
        monkeypatch=monkeypatch,
    )
    assert rc == 2, (out, err)
    _one_line(err, "line 1", "finite")
    assert _events(store, task) == before
    assert verify(store).ok


def test_the_json_printer_never_writes_infinity() -> None:
    from store.cli.output import strict_json

    text = strict_json({"ok": True, "result": {"used": float("inf"), "list": [float("nan"), 1.5]}})
    assert _strict(text) == {"ok": True, "result": {"used": None, "list": [None, 1.5]}}


# --- 8: NUL in text ----------------------------------------------------------------------------


def _nul_commands(task: str) -> list[dict[str, Any]]:
    return [
        {"type": "create_task", "title": "a\u0000b", "owner": "ana", "objective": "o"},
        {"type": "add_criterion", "task_id": task, "criterion_id": "C9", "text": "x\u0000"},
        {
            "type": "record_artifact",
            "task_id": task,
            "name": "draft\u0000.md",
            "role": "draft",
            "content": {"text": "body"},
        },
        {"type": "record_note", "task_id": task, "text": "note \u0000 here"},
        {
            "type": "request_approval",
            "task_id": task,
            "payload": {"to": "x\u0000y"},
            "consequence": "c",
            "policy": "p",
        },
        {
            "type": "request_approval",
            "task_id": task,
            "payload": {"k\u0000": 1},
            "consequence": "c",
            "policy": "p",
        },
    ]


@pytest.mark.parametrize("n", range(6))
def test_nul_in_any_text_is_refused_in_one_line_on_both_engines(
    store: Store,
    store_dir: Path,
    store_url: str | None,
    task: str,
    n: int,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    tasks_before, before = store.task_ids(), _events(store, task)
    line = json.dumps(_nul_commands(task)[n]) + "\n"
    rc, out, err = _cli(
        capsys, store, store_dir, store_url, "ingest", "-", stdin=line, monkeypatch=monkeypatch
    )
    assert rc == 2, (out, err)
    _one_line(err, "line 1", "NUL")
    assert store.task_ids() == tasks_before and _events(store, task) == before
    with pytest.raises(ValidationError, match="NUL"):  # the same refusal from the Python API
        store.execute(_model(_nul_commands(task)[n]), AGENT)


def _model(data: dict[str, Any]) -> c.Command:
    from pydantic import TypeAdapter

    from store.cli.app import _command_adapter

    adapter: TypeAdapter[c.Command] = _command_adapter()
    return adapter.validate_python(data)


def test_a_content_blob_may_hold_a_nul_byte(store: Store, task: str) -> None:
    # Content becomes a blob, not text in the record: a NUL there is just a byte.
    cmd = c.RecordArtifact(
        task_id=task, name="bin.dat", role="other", content=c.Content(text="a\u0000b")
    )
    assert store.execute(cmd, AGENT)


# --- 7 and 8 over MCP --------------------------------------------------------------------------


def test_mcp_tool_arguments_are_held_to_the_same_rules(
    store: Store, store_dir: Path, store_url: str | None, task: str
) -> None:
    store.close()

    async def scenario() -> None:
        async with mcp_session(store_dir, store_url) as session:
            agent = Agent(session)
            bad = await agent.refused(
                "charge_budget", task_id=task, counter="tool_calls", amount="inf"
            )
            assert bad["error"]["category"] == "usage" and "finite" in bad["error"]["message"]
            bad = await agent.refused("record_note", task_id=task, text="a\u0000b")
            assert bad["error"]["category"] == "usage" and "NUL" in bad["error"]["message"]
            bad = await agent.refused("record_note", task_id=task, text="n" * (MAX_TEXT_BYTES + 1))
            assert bad["error"]["category"] == "usage"
            assert str(MAX_TEXT_BYTES) in bad["error"]["message"]
            ok = await agent("record_note", task_id=task, text="n" * MAX_TEXT_BYTES)
            assert ok["ok"] is True

    anyio.run(scenario)


# --- 7 and 8 on import ---------------------------------------------------------------------------


@pytest.fixture
def exported(tmp_path: Path) -> Iterator[Path]:
    with Store.open(tmp_path / "src") as s:
        tid = s.execute(c.CreateTask(title="t", owner="ana", objective="o"), AGENT)
        s.execute(
            RequestApproval(task_id=tid, payload={"rate": 1}, consequence="c", policy="p"),
            AGENT,
        )
        yield ar.export_task(s, tid, tmp_path / "task.tar.gz")


@pytest.mark.parametrize("value", ["NaN", "Infinity", "-Infinity", '"x\\u0000y"'])
def test_a_package_carrying_what_no_command_accepts_is_refused(
    exported: Path, tmp_path: Path, value: str, store: Store
) -> None:
    # Re-chained as a forger (or an older program) would: the only fault is the value.
    members = read_members(exported)
    rows = event_rows(members)
    asked = next(r for r in rows if r["type"] == "approval.requested")
    assert '"rate":1' in asked["payload"]
    asked["payload"] = asked["payload"].replace('"rate":1', f'"rate":{value}')
    set_events(members, rows, rechain=True)
    fix_digests(members)
    pkg = write_package(tmp_path / "hostile.tar.gz", members)
    refused(store, pkg, r"approval.requested\): payload.rate (is|contains a NUL)")


def test_a_package_row_with_nul_is_refused(exported: Path, tmp_path: Path, store: Store) -> None:
    members = read_members(exported)
    rows = event_rows(members)
    rows[1]["actor_name"] = "a\u0000b"
    set_events(members, rows, rechain=False)
    fix_digests(members)
    pkg = write_package(tmp_path / "hostile.tar.gz", members)
    refused(store, pkg, "actor_name contains a NUL character")


# --- 9: one size limit per field ---------------------------------------------------------------


def test_an_oversized_note_is_refused_in_one_line_at_the_command(
    store: Store,
    store_dir: Path,
    store_url: str | None,
    task: str,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    before = _events(store, task)
    line = json.dumps({"type": "record_note", "task_id": task, "text": "x" * (MAX_TEXT_BYTES + 1)})
    rc, out, err = _cli(
        capsys,
        store,
        store_dir,
        store_url,
        "ingest",
        "-",
        stdin=line + "\n",
        monkeypatch=monkeypatch,
    )
    assert rc == 2, (out, err)
    _one_line(err, "line 1", f"limit of {MAX_TEXT_BYTES} bytes")
    # A multi-byte text is measured in UTF-8 bytes, as the record stores it.
    with pytest.raises(ValidationError, match="for one text"):
        c.RecordNote(task_id=task, text="é" * (MAX_TEXT_BYTES // 2 + 1))
    # Many texts each within the limit, together over the command's limit.
    many = {str(n): "x" * (MAX_TEXT_BYTES - 10) for n in range(4)}
    with pytest.raises(ValidationError, match="for one command"):
        RequestApproval(task_id=task, payload=many, consequence="c", policy="p")
    assert _events(store, task) == before


def test_the_largest_accepted_notes_round_trip_through_export_and_import(
    store: Store, tmp_path: Path
) -> None:
    # The worst cases for an exported line: quotes and backslashes are escaped twice (in
    # the payload, then in the line), control characters take six bytes each.
    quotes = ('"\\' * MAX_TEXT_BYTES)[:MAX_TEXT_BYTES]
    controls = "\u0001" * (MAX_COMMAND_BYTES // 6 - 4096)
    wide = "\U0001f600" * (MAX_TEXT_BYTES // 4)
    texts = [quotes, controls, wide]
    with Store.open(tmp_path / "src") as src:
        tid = src.execute(c.CreateTask(title="big", owner="ana", objective="o"), AGENT)
        for text in texts:
            assert input_problem(c.RecordNote(task_id=tid, text=text)) is None
            src.execute(c.RecordNote(task_id=tid, text=text), AGENT)
        pkg = ar.export_task(src, tid, tmp_path / "big.tar.gz")
    ar.import_package(store, pkg)
    notes = [e["payload"]["text"] for e in store.events(tid) if e["type"] == "note.recorded"]
    assert notes == texts
    assert verify(store).ok
