"""Less Python around each SQLite write (issue 36, part A) changes no byte: the shortcuts on
the append and checkpoint paths give what the general code gives, for every text, the
awkward ones (quotes, backslashes, control characters, non-ASCII) included."""

from __future__ import annotations

import hashlib
import json
import warnings

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from store import events as ev
from store.canonical import GENESIS_HASH, canonical_json, chain_hash, chain_hash_of_parts
from store.commands.checkpoints import payload_json
from store.errors import NotText
from store.projections.ledger import _ids_json
from store.tx import _dumps_fields, _payload_json

_AWKWARD = st.sampled_from(['"', "\\", "\n", "\x00", "\x1f", "\x7f", "é", "😀", "\u2028", "~", " "])
_TEXT = st.lists(st.one_of(st.characters(exclude_categories=["Cs"]), _AWKWARD), max_size=10).map(
    "".join
)


@settings(max_examples=500, deadline=None)
@given(at=_TEXT, task_id=_TEXT, type_name=_TEXT, text=_TEXT)
def test_chain_hash_of_parts_is_the_chain_hash(
    at: str, task_id: str, type_name: str, text: str
) -> None:
    actor = {"id": "a", "kind": "agent", "name": ""}
    payload = {"kind": "note", "text": text}
    body = {"actor": actor, "at": at, "format": 1, "payload": payload, "seq": 3,
            "task_id": task_id, "type": type_name}  # fmt: skip
    parts = chain_hash_of_parts(
        GENESIS_HASH,
        actor_json=canonical_json(actor),
        at=at,
        fmt=1,
        payload_json=canonical_json(payload),
        seq=3,
        task_id=task_id,
        type_name=type_name,
    )
    assert parts == chain_hash(GENESIS_HASH, body)
    reference = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    assert parts == hashlib.sha256(f"{GENESIS_HASH}\n{reference}".encode()).hexdigest()


@settings(max_examples=500, deadline=None)
@given(ids=st.lists(_TEXT, max_size=4))
def test_checkpoint_id_lists_are_written_as_json_dumps_writes_them(ids: list[str]) -> None:
    assert _ids_json(ids) == json.dumps(ids)
    assert _ids_json(tuple(ids)) == json.dumps(ids)


@settings(max_examples=300, deadline=None)
@given(
    cid=_TEXT,
    supersedes=st.lists(_TEXT, max_size=2),
    merged=st.lists(_TEXT, max_size=2),
    note=_TEXT,
    external=st.one_of(st.none(), st.dictionaries(_TEXT, _TEXT, min_size=1, max_size=2)),
)
def test_checkpoint_payload_read_off_the_model_is_its_dump(
    cid: str,
    supersedes: list[str],
    merged: list[str],
    note: str,
    external: dict[str, str] | None,
) -> None:
    state = {"z": [1, 2.5, None, True], "a": {"ü": "✓"}, "pending_work": []}
    payload = ev.CheckpointWritten(
        checkpoint_id=cid,
        reason="handoff",
        supersedes=tuple(supersedes),
        merged=tuple(merged),
        boundary_seq=7,
        boundary_hash="ab" * 32,
        state=state,
        state_digest="sha256:" + "0" * 64,
        note=note,
        external=external,
    )
    assert payload_json(payload, canonical_json(state)) == canonical_json(
        payload.model_dump(mode="json")
    )


def _payload_types() -> list[type[ev.Payload]]:
    seen: set[type[ev.Payload]] = set()
    stack: list[type[ev.Payload]] = [ev.Payload]
    while stack:
        for kind in stack.pop().__subclasses__():
            if kind not in seen:
                seen.add(kind)
                stack.append(kind)
    return sorted((k for k in seen if hasattr(k, "TYPE")), key=lambda k: k.TYPE)


@settings(max_examples=300, deadline=None)
@given(text=_TEXT, kind=st.sampled_from(["note", "message"]))
def test_a_notes_payload_is_written_as_its_dump_writes_it(text: str, kind: str) -> None:
    payload = ev.NoteRecorded(text=text, kind=kind)  # type: ignore[arg-type]
    assert _payload_json(payload) == canonical_json(payload.model_dump(mode="json"))


@settings(max_examples=100, deadline=None)
@given(text=_TEXT)
def test_every_payload_of_text_is_written_as_its_dump_writes_it(text: str) -> None:
    # Built without validation: every field text, whatever its type says (a Literal, an
    # int): where the shortcut applies, it writes what model_dump and canonical_json write.
    shortcut = [kind for kind in _payload_types() if _dumps_fields(kind)]
    assert ev.NoteRecorded in shortcut
    assert not any(issubclass(kind, ev.Additive) for kind in shortcut)
    for kind in shortcut:
        payload = kind.model_construct(**dict.fromkeys(kind.model_fields, text))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # pydantic: "expected int, got str"
            dumped = canonical_json(payload.model_dump(mode="json"))
        assert _payload_json(payload) == dumped, kind.TYPE


def test_a_lone_surrogate_is_refused_as_the_general_way_refuses_it() -> None:
    payload = ev.NoteRecorded.model_construct(text="\ud800", kind="note")
    with pytest.raises(NotText):
        canonical_json(payload.model_dump(mode="json"))
    with pytest.raises(NotText):
        _payload_json(payload)
