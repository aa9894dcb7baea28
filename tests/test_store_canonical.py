"""The append path assembles an event's canonical body from parts; it must hash the same
as canonicalizing the whole body, for any text (quotes, backslashes, non-ASCII)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from store.canonical import canonical_json, chain_hash, chain_hash_of_parts

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(), inner, max_size=3),
    max_leaves=8,
)


@given(
    payload=st.dictionaries(st.text(), json_values, max_size=4),
    task_id=st.text(min_size=1),
    type_name=st.text(min_size=1),
    at=st.text(),
    seq=st.integers(min_value=1),
    fmt=st.integers(min_value=1, max_value=9),
    actor=st.fixed_dictionaries({"kind": st.text(), "id": st.text(), "name": st.text()}),
)
def test_hash_of_parts_equals_hash_of_body(
    payload: dict[str, object],
    task_id: str,
    type_name: str,
    at: str,
    seq: int,
    fmt: int,
    actor: dict[str, str],
) -> None:
    body = {
        "task_id": task_id,
        "seq": seq,
        "type": type_name,
        "format": fmt,
        "payload": payload,
        "actor": actor,
        "at": at,
    }
    prev = "ab" * 32
    assert chain_hash_of_parts(
        prev,
        actor_json=canonical_json(actor),
        at=at,
        fmt=fmt,
        payload_json=canonical_json(payload),
        seq=seq,
        task_id=task_id,
        type_name=type_name,
    ) == chain_hash(prev, body)
