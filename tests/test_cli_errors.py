"""The command line's refusals: one line naming what is wrong, a non-zero exit, nothing made."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from store import Actor, Store, StoreMissing
from store import commands as c
from store.cli import main

AGENT = Actor(kind="agent", id="a1")


@pytest.fixture(autouse=True)
def _reviewer(monkeypatch: pytest.MonkeyPatch) -> None:
    # Every write names who acts (never guessed); here through BORIS_ACTOR.
    monkeypatch.setenv("BORIS_ACTOR", "person:tester")


def _cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    rc = main(list(args))
    out = capsys.readouterr()
    return rc, out.out, out.err


def _one_line(err: str) -> str:
    assert err.startswith("boris: ") and err.count("\n") == 1, err
    assert "Traceback" not in err
    return err


READS = [
    ["tasks"],
    ["verify"],
    ["show", "t"],
    ["events", "t"],
    ["resume", "t"],
    ["summary", "t"],
    ["effects", "t"],
    ["approvals"],
    ["checkpoints", "t"],
    ["export", "t", "out.tar.gz"],
    ["ingest", "-"],
    ["amend", "t", "--text", "x", "--reason", "r"],
]


@pytest.mark.parametrize("command", READS, ids=lambda a: a[0])
def test_a_command_on_a_missing_store_creates_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], command: list[str]
) -> None:
    where = tmp_path / "no-such-store"
    rc, out, err = _cli(capsys, "--store", str(where), *command)
    assert rc == 4 and out == ""  # not found
    assert _one_line(err) == f"boris: no store at {where} (boris init creates one)\n"
    assert not where.exists()


@pytest.mark.parametrize(
    "command",
    [["init"], ["demo"], ["create-task", "--title", "T", "--owner", "o", "--objective", "x"]],
    ids=lambda a: a[0],
)
def test_the_creating_commands_make_the_store(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], command: list[str]
) -> None:
    where = tmp_path / "new"
    assert _cli(capsys, "--store", str(where), *command)[0] == 0
    assert (where / "boris.sqlite").is_file()
    assert _cli(capsys, "--store", str(where), "tasks")[0] == 0


def test_store_open_without_create_raises_store_missing(tmp_path: Path) -> None:
    where = tmp_path / "absent"
    with pytest.raises(StoreMissing, match="no store at"):
        Store.open(where, create=False)
    assert not where.exists()
    # An existing directory without a database is no store either, and stays empty.
    where.mkdir()
    with pytest.raises(StoreMissing):
        Store.open(where, create=False)
    assert list(where.iterdir()) == []


def test_a_store_path_that_is_a_file_is_named_in_words(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    afile = tmp_path / "notes.txt"
    afile.write_text("mine\n")
    for command in (["tasks"], ["init"]):
        rc, _, err = _cli(capsys, "--store", str(afile), *command)
        assert rc == 6  # the store cannot be used here
        assert _one_line(err) == f"boris: {afile} is a file, not a store directory\n"
    rc, _, err = _cli(capsys, "--store", str(afile / "sub"), "init")
    assert rc == 6 and f"{afile} is a file, not a directory" in _one_line(err)
    assert "Errno" not in err
    assert afile.read_text() == "mine\n"


@pytest.mark.parametrize(
    "url", ["foo", "mysql://user:secret@db.example.org/boris", "sqlite://", "oracle://x"]
)
def test_an_unsupported_url_names_the_forms_that_work(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], url: str
) -> None:
    rc, _, err = _cli(capsys, "--store", str(tmp_path / "s"), "--url", url, "tasks")
    assert rc != 0
    _one_line(err)
    assert "sqlite:///PATH" in err and "postgresql+psycopg://" in err
    assert "secret" not in err


def test_an_sqlite_url_is_a_store_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db_file = tmp_path / "other.db"
    st = ["--store", str(tmp_path / "s"), "--url", f"sqlite:///{db_file}"]
    rc, _, err = _cli(capsys, *st, "tasks")
    assert rc == 4 and f"no store at {db_file}" in _one_line(err)
    assert _cli(capsys, *st, "init")[0] == 0 and db_file.is_file()
    assert _cli(capsys, *st, "tasks")[1] == "(no tasks)\n"


def _store_with_task(tmp_path: Path, ws: Path) -> Path:
    where = tmp_path / "s"
    with Store.open(where) as s:
        s.execute(
            c.CreateTask(task_id="t", title="T", owner="o", objective="x", scope_paths=[str(ws)]),
            AGENT,
        )
    return where


def _blob_files(where: Path) -> set[Path]:
    return {p for p in (where / "blobs").rglob("*") if p.is_file()}


def test_ingest_of_invalid_utf8_names_the_line(
    tmp_path: Path, ws: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    where = _store_with_task(tmp_path, ws)
    lines = tmp_path / "cmds.jsonl"
    lines.write_bytes(
        b'{"type": "add_criterion", "task_id": "t", "text": "a"}\n'
        b'{"type": "add_criterion", "task_id": "t", "text": "caf\xe9"}\n'
    )
    rc, _, err = _cli(capsys, "--store", str(where), "ingest", str(lines))
    assert rc == 2  # malformed input
    assert "line 2" in _one_line(err) and "UTF-8" in err and "nothing was written" in err
    assert _cli(capsys, "--store", str(where), "show", "t", "--json")[0] == 0


def test_a_failed_ingest_leaves_no_blob(
    tmp_path: Path, ws: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    where = _store_with_task(tmp_path, ws)
    shared = "kept by an earlier, committed artifact"
    with Store.open(where) as s:
        s.execute(c.RecordArtifact(task_id="t", name="a", content=c.Content(text=shared)), AGENT)
    before = _blob_files(where)
    lines = tmp_path / "cmds.jsonl"
    lines.write_text(
        json.dumps(
            {"type": "record_artifact", "task_id": "t", "name": "b", "content": {"text": "new"}}
        )
        + "\n"
        + json.dumps(
            {"type": "record_artifact", "task_id": "t", "name": "c", "content": {"text": shared}}
        )
        + "\n"
        + json.dumps({"type": "judge_criterion", "task_id": "t", "criterion_id": "nope"})
        + "\n"
    )
    rc, _, err = _cli(capsys, "--store", str(where), "ingest", str(lines))
    assert rc == 2 and "nothing was written" in _one_line(err)
    # The new content's blob is gone; the shared one, referenced before, is untouched.
    assert _blob_files(where) == before
    with Store.open(where) as s:
        assert [a["name"] for a in s.task("t")["artifacts"]] == ["a"]
        digest = s.task("t")["artifacts"][0]["current"]["digest"]
        assert s.blobs.read(digest) == shared.encode()


@settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    st.lists(
        st.one_of(
            st.binary(max_size=60),
            st.sampled_from(
                [
                    b'{"type": "add_criterion", "task_id": "t", "text": "a"}',
                    b'{"type": "record_artifact", "task_id": "t", "name": "n", '
                    b'"content": {"text": "x"}}',
                    b'{"type": "set_status", "task_id": "t", "status": "completed"}',
                    b"{}",
                    b"[]",
                    b"null",
                    b'"\\ud800"',
                ]
            ),
        ),
        max_size=4,
    ).map(lambda parts: b"\n".join(parts))
)
def test_ingest_of_any_bytes_succeeds_or_fails_in_one_line(
    tmp_path: Path, ws: Path, capsys: pytest.CaptureFixture[str], data: bytes
) -> None:
    where = tmp_path / "fuzz"
    if not where.exists():
        with Store.open(where) as s:
            s.execute(
                c.CreateTask(
                    task_id="t", title="T", owner="o", objective="x", scope_paths=[str(ws)]
                ),
                AGENT,
            )
    lines = tmp_path / "fuzz.jsonl"
    lines.write_bytes(data)
    with Store.open(where) as s:
        events_before = len(s.events("t"))
    blobs_before = _blob_files(where)
    rc, _, err = _cli(capsys, "--store", str(where), "ingest", str(lines))
    if rc != 0:
        assert rc in (1, 2)
        _one_line(err)
        with Store.open(where) as s:
            assert len(s.events("t")) == events_before
        assert _blob_files(where) == blobs_before
    else:
        assert err == ""


def test_show_prints_budgets_as_a_person_reads_them(
    tmp_path: Path, ws: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    where = _store_with_task(tmp_path, ws)
    st_ = ["--store", str(where)]
    assert _cli(capsys, *st_, "charge", "t", "effects", "2")[0] == 0
    assert _cli(capsys, *st_, "set-budget", "t", "tool_calls", "20")[0] == 0
    assert _cli(capsys, *st_, "charge", "t", "tool_calls", "17")[0] == 0
    assert _cli(capsys, *st_, "set-budget", "t", "compute_seconds", "2.5")[0] == 0
    assert _cli(capsys, *st_, "charge", "t", "compute_seconds", "0.25")[0] == 0
    rc, out, _ = _cli(capsys, *st_, "show", "t")
    assert rc == 0
    budgets = {line.strip() for line in out.splitlines() if line.strip().startswith("budget ")}
    assert budgets == {
        "budget effects: 2 (no limit)",
        "budget tool_calls: 17 / 20",
        "budget compute_seconds: 0.25 / 2.5",
    }
