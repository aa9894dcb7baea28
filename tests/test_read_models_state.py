"""The task's state crosses the store's face as frozen, typed read models (issue 41): what
`Store.task()` answers is `TaskState`, `boris show --json` prints its `to_json()` (with the
record's signatures) in the shape `boris schema` documents, and every model refuses a field
it does not declare, so a renamed field is found by the type checker, not by a user."""

from __future__ import annotations

import json
from typing import Any

import jsonschema
import pytest
from cli_args import store_args
from pydantic import ValidationError

from store import Store
from store.api import (
    Checkpoint,
    Criterion,
    EventFacets,
    EventRow,
    Lease,
    ShownTask,
    TaskRow,
    TaskState,
    fill_demo,
)
from store.cli import main as cli


@pytest.fixture
def outputs(capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    assert cli(["schema"]) == 0
    documented: dict[str, Any] = json.loads(capsys.readouterr().out)["x-outputs"]
    return documented


def _result(capsys: pytest.CaptureFixture[str], argv: list[str]) -> Any:
    assert cli(argv) == 0, capsys.readouterr().err
    out, err = capsys.readouterr()
    assert err == ""
    value = json.loads(out)
    assert value["ok"] is True
    return value["result"]


def test_the_task_state_commands_print_their_documented_models(
    store: Store, capsys: pytest.CaptureFixture[str], outputs: dict[str, Any]
) -> None:
    guide, _note = fill_demo(store)
    st = store_args(store)
    shown = _result(capsys, [*st, "show", guide, "--json"])
    jsonschema.validate(shown, outputs["show"])
    # The printed object is the model's serialisation: read back, it is the same object.
    assert ShownTask.model_validate(shown).to_json() == shown
    # The state Store.task() answers, read again (at another `now`), plus the signatures.
    again = store.task(guide).to_json()
    assert {**shown, "now": again["now"]} == {**again, "signatures": shown["signatures"]}
    for command in ("events", "effects", "checkpoints", "waits", "retention"):
        jsonschema.validate(_result(capsys, [*st, command, guide, "--json"]), outputs[command])
    jsonschema.validate(_result(capsys, [*st, "tasks", "--json"]), outputs["tasks"])
    jsonschema.validate(_result(capsys, [*st, "approvals", "--json"]), outputs["approvals"])
    # The resume brief: the ResumeBrief model's JSON, the schema boris schema documents.
    for task in (guide, _note):
        jsonschema.validate(_result(capsys, [*st, "resume", task, "--json"]), outputs["resume"])


def test_the_reads_answer_frozen_models_with_the_stores_enums(store: Store) -> None:
    guide, _note = fill_demo(store)
    state = store.task(guide)
    assert isinstance(state, TaskState)
    assert state.status == "outcome_unknown" and state.status.value == "outcome_unknown"
    assert isinstance(state.criteria[0], Criterion)
    assert state.effects[0].attempts[0].inputs.prepared_digest.startswith("sha256:")
    assert state.checkpoints.heads and isinstance(state.checkpoints.checkpoints[0], Checkpoint)
    with pytest.raises(ValidationError):
        state.title = "renamed"  # type: ignore[misc]
    # Scripts written against the JSON shape still read a key at run time.
    assert state["criteria"][0]["criterion_id"] == state.criteria[0].criterion_id
    assert all(isinstance(r, TaskRow) for r in store.tasks())
    assert all(isinstance(e, EventRow) for e in store.events(guide))
    assert isinstance(store.event_facets(guide), EventFacets)
    head = store.head_checkpoint(guide)
    assert isinstance(head, Checkpoint) and head.id == head.checkpoint_id
    assert state.lease is None or isinstance(state.lease, Lease)


def test_every_model_refuses_a_field_it_does_not_declare(store: Store) -> None:
    guide, _note = fill_demo(store)
    data = store.task(guide).to_json()
    assert TaskState.model_validate(data).to_json() == data
    with pytest.raises(ValidationError, match="surprise"):
        TaskState.model_validate({**data, "surprise": 1})
    criterion = data["criteria"][0]
    with pytest.raises(ValidationError, match="surprise"):
        TaskState.model_validate({**data, "criteria": [{**criterion, "surprise": 1}]})
    effect = data["effects"][0]
    intent = {**effect["intent"], "surprise": 1}
    with pytest.raises(ValidationError, match="surprise"):
        TaskState.model_validate({**data, "effects": [{**effect, "intent": intent}]})
    with pytest.raises(ValidationError):
        TaskState.model_validate({**data, "status": "no_such_status"})
