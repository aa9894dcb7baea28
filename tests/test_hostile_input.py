"""Hostile input (issue 40): what no text may hold, and what a size counts.

A lone surrogate (a JSON `"\\ud800"`, or a byte that is not UTF-8 in an argument, a file name
or stdin, which Python carries as `\\udcff`) is refused in one line as a usage error (exit
2) with nothing written: from every JSON flag, every path flag, stdin, `boris ingest`, the
Python API and an imported package, on both engines (over MCP: tests/test_mcp_hostile.py).
JSON flags that do not parse or nest too deep are usage lines too, never a traceback.

The size of a command counts what its JSON costs (its encoded size, exactly): a small integer
is a byte or two, not 24, so "one command at most 3 MiB of JSON" means what it says.
"""

from __future__ import annotations

import io
import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError
from signed_default import PERSON
from test_archive import event_rows, fix_digests, read_members, refused, set_events, write_package

from store import Actor, Store
from store import commands as c
from store.canonical import canonical_bytes
from store.cli import main
from store.commands.approvals import RequestApproval
from store.limits import MAX_COMMAND_BYTES, MAX_COMMAND_ITEMS, input_problem, json_cost
from store.services import archive as ar

AGENT = Actor(kind="agent", id="a1")
NOT_UTF8 = os.fsdecode(b"report-\xff.md")  # as Python gives a file name with byte 0xff


@pytest.fixture
def task(store: Store, ws: Path) -> str:
    return str(
        store.execute(
            c.CreateTask(title="t", owner="ana", objective="o", scope_paths=[str(ws)]), AGENT
        )
    )


def _cli(
    capsys: pytest.CaptureFixture[str],
    store_dir: Path,
    store_url: str | None,
    *args: str,
    actor: str = PERSON,
) -> tuple[int, str, str]:
    where = ["--store", str(store_dir)] + (["--url", store_url] if store_url else [])
    rc = main([*args, *where, "--actor", actor])
    out = capsys.readouterr()
    return rc, out.out, out.err


def _stdin(monkeypatch: pytest.MonkeyPatch, data: bytes) -> None:
    """stdin as a process has it: bytes underneath, decoded as Python decodes a pipe."""
    monkeypatch.setattr(
        sys, "stdin", io.TextIOWrapper(io.BytesIO(data), encoding="utf-8", errors="surrogateescape")
    )


def _one_line(err: str, *words: str) -> None:
    assert err.startswith("boris: ") and err.count("\n") == 1, err
    assert "Traceback" not in err
    for w in words:
        assert w in err, err


def _count(store: Store) -> tuple[list[str], int]:
    """What a refusal must leave as it was: the tasks, and every event of every task."""
    ids = store.task_ids()
    return ids, sum(len(store.events(t)) for t in ids)


# --- 1. lone surrogates and names that are not UTF-8 ---------------------------------------

SURROGATE = '{"x": "\\ud800"}'  # valid JSON; the string it makes is not UTF-8 text
SURROGATE_KEY = '{"\\udfff": 1}'


def _json_flags(task: str) -> list[list[str]]:
    """Every command line that takes JSON, each given a lone surrogate. The ids need not
    exist: the command is refused before anything is looked up."""
    return [
        [
            "request-approval",
            task,
            "--payload-json",
            SURROGATE,
            "--consequence",
            "c",
            "--policy",
            "p",
        ],
        [
            "request-approval",
            task,
            "--payload-json",
            SURROGATE_KEY,
            "--consequence",
            "c",
            "--policy",
            "p",
        ],
        ["approve", task, "A1", "--edited-json", SURROGATE],
        ["dispatch", task, "E1", "--executor", "x", "--inputs-json", SURROGATE],
        ["record-response", task, "E1", "partial", "--response-json", SURROGATE],
        ["observe", task, "E1", "--state-json", '{"exists": true, "digest": "\\ud800"}'],
    ]


@pytest.mark.parametrize("n", range(6))
def test_a_lone_surrogate_in_any_json_flag_is_one_usage_line(
    store: Store,
    store_dir: Path,
    store_url: str | None,
    task: str,
    n: int,
    capsys: pytest.CaptureFixture[str],
) -> None:
    before = _count(store)
    rc, out, err = _cli(capsys, store_dir, store_url, *_json_flags(task)[n])
    assert rc == 2, (out, err)
    _one_line(err, "lone surrogate", "not UTF-8")
    assert _count(store) == before


def test_json_flags_that_do_not_parse_or_nest_too_deep_are_usage_lines(
    store: Store,
    store_dir: Path,
    store_url: str | None,
    task: str,
    capsys: pytest.CaptureFixture[str],
) -> None:
    before = _count(store)
    deep = "[" * 5000 + "]" * 5000
    for said, argv in (
        (
            "deep",
            [
                "request-approval",
                task,
                "--payload-json",
                deep,
                "--consequence",
                "c",
                "--policy",
                "p",
            ],
        ),
        ("not valid JSON", ["approve", task, "A1", "--edited-json", "{"]),
        ("deep", ["approve", task, "A1", "--edited-json", deep]),
        ("deep", ["dispatch", task, "E1", "--executor", "x", "--inputs-json", deep]),
    ):
        rc, out, err = _cli(capsys, store_dir, store_url, *argv)
        assert rc == 2, (argv[:3], out, err)
        _one_line(err, said)
    assert _count(store) == before


def test_a_manifest_file_with_a_lone_surrogate_is_one_usage_line(
    store: Store,
    store_dir: Path,
    store_url: str | None,
    task: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    before = _count(store)
    source = tmp_path / "manifest.json"
    source.write_text('{"provider": "p", "model": "m\\udc80", "items": []}')
    rc, out, err = _cli(
        capsys, store_dir, store_url, "record-manifest", task, str(source), actor="agent:a1"
    )
    assert rc == 2, (out, err)
    _one_line(err, "model", "lone surrogate")
    deep = tmp_path / "deep.json"
    deep.write_text('{"provider": "p", "parameters": ' + "[" * 5000 + "]" * 5000 + "}")
    rc, out, err = _cli(
        capsys, store_dir, store_url, "record-manifest", task, str(deep), actor="agent:a1"
    )
    assert rc == 2, (out, err)
    _one_line(err, "deep")
    assert _count(store) == before


def test_a_byte_that_is_not_utf8_in_a_text_argument_is_one_usage_line(
    store: Store,
    store_dir: Path,
    store_url: str | None,
    task: str,
    capsys: pytest.CaptureFixture[str],
) -> None:
    before = _count(store)
    for argv in (
        ["note", task, os.fsdecode(b"caf\xe9")],
        ["add-criterion", task, "--text", os.fsdecode(b"\xff")],
        ["create-task", "--title", os.fsdecode(b"t\xfe"), "--owner", "o", "--objective", "o"],
    ):
        rc, out, err = _cli(capsys, store_dir, store_url, *argv)
        assert rc == 2, (argv, out, err)
        _one_line(err, "not UTF-8", "byte 0x")
    assert _count(store) == before


def test_a_file_name_that_is_not_utf8_is_one_usage_line_for_every_path_flag(
    store: Store,
    store_dir: Path,
    store_url: str | None,
    task: str,
    ws: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    named = ws / NOT_UTF8
    named.write_text("the report\n")
    before = _count(store)
    for flag, argv in (
        ("--file", ["record-artifact", task, "report.md", "--file", str(named)]),
        (
            "--file",
            ["attach-evidence", task, "C1", "--kind", "other", "--file", str(named)],
        ),
        ("--scope", ["create-task", "--title", "t", "--owner", "o", "--objective", "o"]),
        (
            "--target",
            [
                "plan-effect",
                task,
                "--kind",
                "file_write",
                "--target",
                str(named),
                "--consequence",
                "c",
                "--text",
                "x",
            ],
        ),
        (
            "--file",
            [
                "plan-effect",
                task,
                "--kind",
                "file_write",
                "--target",
                str(ws / "ok.md"),
                "--consequence",
                "c",
                "--file",
                str(named),
            ],
        ),
        ("--file", ["approve", task, "A1", "--file", str(named)]),
    ):
        if flag == "--scope":
            argv = [*argv, "--scope", str(named)]
        rc, out, err = _cli(capsys, store_dir, store_url, *argv)
        assert rc == 2, (argv, out, err)
        _one_line(err, flag, "not UTF-8", "0xff", "report-\\xff.md")
    assert _count(store) == before


def test_content_on_stdin_that_is_not_utf8_is_one_usage_line(
    store: Store,
    store_dir: Path,
    store_url: str | None,
    task: str,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    before = _count(store)
    _stdin(monkeypatch, b"half a picture \x89PNG\xff")
    rc, out, err = _cli(capsys, store_dir, store_url, "record-artifact", task, "pic.png")
    assert rc == 2, (out, err)
    _one_line(err, "stdin", "not UTF-8", "--file")
    assert _count(store) == before


def test_ingest_names_the_lone_surrogate_and_writes_nothing(
    store: Store,
    store_dir: Path,
    store_url: str | None,
    task: str,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    before = _count(store)
    good = json.dumps({"type": "record_note", "task_id": task, "text": "fine"})
    for bad in (
        f'{{"type": "record_note", "task_id": "{task}", "text": "a\\ud800b"}}',
        f'{{"type": "request_approval", "task_id": "{task}", "payload": {{"k": ["\\udc00"]}}, '
        '"consequence": "c", "policy": "p"}',
    ):
        _stdin(monkeypatch, (good + "\n" + bad + "\n").encode())
        rc, out, err = _cli(capsys, store_dir, store_url, "ingest", "-")
        assert rc == 2, (out, err)
        _one_line(err, "line 2", "lone surrogate", "nothing was written")
    assert _count(store) == before


def test_the_python_api_refuses_a_lone_surrogate_as_it_refuses_nul(store: Store, task: str) -> None:
    # A field typed `str` is refused by pydantic itself (string_unicode, which the CLI and
    # MCP say in the record's words: answers.refusal); every other text, by the record's rule.
    for build in (
        lambda: c.RecordNote(task_id=task, text="a\ud800"),
        lambda: RequestApproval(
            task_id=task, payload={"x": ["\udcff"]}, consequence="c", policy="p"
        ),
        lambda: RequestApproval(task_id=task, payload={"\ud800": 1}, consequence="c", policy="p"),
        lambda: c.RecordArtifact(task_id=task, name="n", content=c.Content(path="/a/\udcff")),
        lambda: c.RecordArtifact(task_id=task, name="n", content=c.Content(text="a\ud800")),
    ):
        with pytest.raises(ValidationError, match=r"lone surrogate|string_unicode"):
            build()
    # A pair is one character, not a lone surrogate: text as any other.
    store.execute(c.RecordNote(task_id=task, text="\U0001f600 ok"), AGENT)
    assert store.events(task)[-1]["payload"]["text"] == "\U0001f600 ok"


def test_a_package_carrying_a_lone_surrogate_is_refused_naming_it(
    tmp_path: Path, store: Store
) -> None:
    with Store.open(tmp_path / "src") as s:
        tid = s.execute(c.CreateTask(title="t", owner="ana", objective="o"), AGENT)
        s.execute(
            RequestApproval(task_id=tid, payload={"rate": 1}, consequence="c", policy="p"),
            AGENT,
        )
        pkg = ar.export_task(s, tid, tmp_path / "task.tar.gz")
    members = read_members(pkg)
    rows = event_rows(members)
    asked = next(r for r in rows if r["type"] == "approval.requested")
    asked["payload"] = asked["payload"].replace('"rate":1', '"rate":"\\ud800"')
    set_events(members, rows, rechain=False)
    fix_digests(members)
    hostile = write_package(tmp_path / "hostile.tar.gz", members)
    refused(store, hostile, r"approval.requested\): payload.rate is not UTF-8 text")


# --- 3. the size of a command is what its JSON costs ---------------------------------------

JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**63) + 1, max_value=2**63 - 1)
    | st.floats(min_value=-(2.0**62), max_value=2.0**62)
    | st.text(st.characters(blacklist_categories=["Cs"], blacklist_characters="\x00")),
    lambda inner: (
        st.lists(inner, max_size=5)
        | st.dictionaries(
            st.text(st.characters(blacklist_categories=["Cs"], blacklist_characters="\x00")),
            inner,
            max_size=5,
        )
    ),
    max_leaves=30,
)


@settings(max_examples=300, deadline=None)
@given(JSON_VALUES)
def test_the_size_counted_is_the_size_of_the_json(value: Any) -> None:
    size, _ = json_cost(value)
    assert size == len(canonical_bytes(value))


def test_small_integers_cost_what_they_take_as_json(store: Store, task: str) -> None:
    # 140,000 small integers are 280 KB of JSON: accepted (they were counted as 3.5 MB).
    ints = RequestApproval(task_id=task, payload={"n": [1] * 140_000}, consequence="c", policy="p")
    assert len(canonical_bytes(ints.payload)) < 300_000
    assert store.execute(ints, AGENT)
    # The limit still means what it says: just over 3 MiB of numbers is refused, in bytes.
    wide = [10**18] * (MAX_COMMAND_BYTES // 20 + 1)
    assert len(wide) < MAX_COMMAND_ITEMS
    with pytest.raises(ValidationError, match=f"limit of {MAX_COMMAND_BYTES} bytes"):
        RequestApproval(task_id=task, payload={"n": wide}, consequence="c", policy="p")
    problem = input_problem({"n": wide})
    assert problem is not None
    assert f"is {len(canonical_bytes({'n': wide}))} bytes as JSON" in problem


def test_a_package_is_exported_to_a_file_name_that_is_not_utf8_and_imported_again(
    store: Store,
    store_dir: Path,
    store_url: str | None,
    task: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    # The package's name is no text of the record: only its README names it, as shown.
    out = tmp_path / os.fsdecode(b"task-\xff.tar.gz")
    rc, _, err = _cli(capsys, store_dir, store_url, "export", task, str(out))
    assert rc == 0, err
    rc, _, err = _cli(capsys, tmp_path / "other", None, "import", str(out))
    assert rc == 0, err
    with Store.open(tmp_path / "other") as other:
        assert other.task_ids() == [task]


def test_a_hook_input_with_a_lone_surrogate_is_refused_in_one_line(
    store: Store,
    store_dir: Path,
    store_url: str | None,
    task: str,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    before = _count(store)
    hook_input = (
        '{"hook_event_name": "PreToolUse", "session_id": "s", "tool_use_id": "u1", '
        '"tool_name": "Bash", "tool_input": {"command": "echo \\ud800"}}'
    )
    _stdin(monkeypatch, hook_input.encode())
    rc, out, err = _cli(
        capsys, store_dir, store_url, "hook", "pre-tool-use", "--task", task, actor="agent:a1"
    )
    assert rc == 1, (out, err)  # Claude Code's non-blocking error: the input, not Boris
    assert err.startswith("boris hook: ") and err.count("\n") == 1, err
    assert "tool_input.command" in err and "lone surrogate" in err, err
    assert _count(store) == before


def test_no_digest_is_made_of_what_is_not_text() -> None:
    # The adapters digest a tool call's input before any command model sees it: a lone
    # surrogate there is the caller's usage error, naming where it is, never an encoding
    # error from deep inside.
    from store.canonical import canonical_json, digest_of
    from store.errors import StoreError

    for make in (digest_of, canonical_json, canonical_bytes):
        with pytest.raises(StoreError, match=r"args\[1\] is not UTF-8 text") as info:
            make({"args": ["fine", "bad \udcff"]})
        assert info.value.category == "usage"
