"""What `--json` prints is the read's own model (issue 41): one shape, the one `boris schema`
documents. For each read command (decisions, tasks, narrative, manifests, configuration), the
printed result validates against the model the read answers and against the schema
`x-outputs` names, reads back equal to the read's own answer, and a field the model does not
declare is refused, for pydantic models and the inbox's dataclass rows alike. Both engines.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from cli_args import store_args
from pydantic import TypeAdapter, ValidationError

from store import Actor, Store
from store import commands as c
from store.cli import main as cli
from store.cli.shapes import OUTPUTS
from store.commands import manifests as m
from store.reads.decisions import decisions
from store.reads.inbox import TaskRow
from store.reads.manifests import read_configuration, read_manifests
from store.services.demo import fill_demo
from store.services.narratives import narratives

AGENT = Actor(kind="agent", id="drafter-7")
DIGEST = "sha256:" + "0" * 64


@pytest.fixture
def documented(capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    assert cli(["schema"]) == 0
    outputs: dict[str, Any] = json.loads(capsys.readouterr().out)["x-outputs"]
    return outputs


def _printed(capsys: pytest.CaptureFixture[str], store: Store, *argv: str) -> Any:
    assert cli([*store_args(store), "--json", *argv]) == 0, capsys.readouterr().err
    answer = json.loads(capsys.readouterr().out)
    assert answer["ok"] is True
    return answer["result"]


def _one_shape(command: str, printed: Any, answered: Any, documented: dict[str, Any]) -> None:
    """The printed JSON is the documented shape, and the model reads it back as answered."""
    jsonschema.validate(printed, documented[command])
    adapter: TypeAdapter[Any] = TypeAdapter(OUTPUTS[command])
    assert adapter.validate_python(printed) == answered
    assert adapter.dump_python(answered, mode="json") == printed


def _manifest_task(store: Store, ws: Path) -> str:
    store.execute(
        c.CreateTask(task_id="report", title="Report", owner="rita", objective="A report",
                     scope_paths=[str(ws)]),
        AGENT,
    )  # fmt: skip
    store.execute(c.WriteCheckpoint(task_id="report", reason="initial", checkpoint_id="c1"), AGENT)
    store.execute(
        m.RecordConfiguration(task_id="report", checkpoint_id="c1", provider="openai",
                              model="gpt-a", tools=[m.ToolIn(name="search", digest=DIGEST)]),
        AGENT,
    )  # fmt: skip
    store.execute(
        m.RecordManifest.model_validate(
            {
                "task_id": "report",
                "provider": "openai",
                "model": "gpt-a",
                "purpose": "choose how to write it",
                "included": [{"kind": "file", "ref": "a.md", "digest": DIGEST, "size": 3}],
                "omitted": [
                    {
                        "kind": "file",
                        "ref": "b.log",
                        "digest": DIGEST,
                        "size": 9,
                        "reason": "budget",
                    }
                ],
                "led_to": {"kind": "checkpoint", "id": "c1"},
            }
        ),
        AGENT,
    )
    return "report"


def test_each_read_prints_its_model_as_documented(
    store: Store, ws: Path, capsys: pytest.CaptureFixture[str], documented: dict[str, Any]
) -> None:
    ids = fill_demo(store)
    tid = _manifest_task(store, ws)

    got = _printed(capsys, store, "decisions")
    want = decisions(store)
    _one_shape("decisions", got, want.model_copy(update={"now": got["now"]}), documented)
    assert got["decisions"] and got["decider"] is None

    _one_shape("tasks", _printed(capsys, store, "tasks"), store.tasks(), documented)

    told = next(t for t in ids if narratives(store, t))
    _one_shape("narrative", _printed(capsys, store, "narrative", told), narratives(store, told),
               documented)  # fmt: skip

    listed = _printed(capsys, store, "manifests", tid)
    _one_shape("manifests", listed, read_manifests(store, tid), documented)
    assert [i["ref"] for i in listed[0]["omitted"]] == ["b.log"]
    configured = _printed(capsys, store, "configuration", tid)
    _one_shape("configuration", configured, read_configuration(store, tid), documented)
    assert configured["current"]["model"] == "gpt-a"

    held = _printed(capsys, store, "--actor", "agent:drafter-7", "lease", "acquire", tid)
    _one_shape("lease", held, store.task(tid).lease, documented)
    taken = _printed(capsys, store, "--actor", "person:rita", "take-over", tid, "--reason", "mine")
    _one_shape("take-over", taken, store.task(tid).lease, documented)
    assert (taken["holder"]["id"], taken["standing"]) == ("rita", "alive")


def test_a_field_the_model_does_not_declare_is_refused(store: Store) -> None:
    fill_demo(store)
    for command, answered in (("decisions", decisions(store)), ("tasks", store.tasks())):
        adapter: TypeAdapter[Any] = TypeAdapter(OUTPUTS[command])
        printed = adapter.dump_python(answered, mode="json")
        assert adapter.validate_python(printed) == answered
        row = printed["decisions"][0] if command == "decisions" else printed[0]
        row["renamed_field"] = 1
        with pytest.raises(ValidationError, match="renamed_field"):
            adapter.validate_python(printed)
    # The inbox's rows are dataclasses (read before pydantic loads), refused alike; and
    # frozen, like every read model.
    row = store.tasks()[0]
    with pytest.raises(ValidationError, match="extra"):
        TypeAdapter(TaskRow).validate_python({**row.to_json(), "extra": True})
    with pytest.raises(AttributeError):
        row.title = "changed"  # type: ignore[misc]
    with pytest.raises(ValidationError):
        decisions(store).decisions[0].why = "changed"  # type: ignore[misc]
