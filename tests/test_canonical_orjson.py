"""Canonical JSON by orjson (issue 36, part F): byte for byte the standard library's form,
which every stored hash and approval digest was made with.

The property tests draw the shapes the record holds (nested objects and arrays, unicode with
astral characters and escapes, floats of every size, ints written as floats, big ints, empty
containers) and compare `canonical_json` with the standard library's encoder. The classes
where orjson alone would differ are shown going to the standard library. Then every event of
the committed fixtures and of a demo store written through the real CLI hashes as before.
"""

from __future__ import annotations

import json
import math
import os
import sqlite3
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from store import Store
from store.canonical import (
    GENESIS_HASH,
    canonical_bytes,
    canonical_json,
    canonical_object,
    chain_hash_of_parts,
    digest_of,
    same_json,
)

BORIS = Path(sys.executable).with_name("boris")
FIXTURES = Path(__file__).parent / "fixtures"

# The reference: the encoder every stored hash was made with.
_OLD = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def old_form(value: Any) -> str:
    return _OLD.encode(value)


# Text as the record holds it: any code point but lone surrogates (which no UTF-8 record
# holds), weighted towards escapes, astral characters and look-alikes of numbers.
_TRICKY = st.sampled_from(
    ['"', "\\", "\n", "\t", "\b", "\f", "\r", "\x00", "\x1f", "\x7f", "\u2028", "\u2029",
     "\ud7ff", "\ue000", "\uffff", "😀", "\U0010ffff", "é", "e-7", "0.00001", "null", "NaN"]
)  # fmt: skip
_TEXT = st.lists(st.one_of(st.characters(exclude_categories=["Cs"]), _TRICKY), max_size=12).map(
    "".join
)
_FLOATS = st.one_of(
    st.floats(allow_nan=False, allow_infinity=False),
    st.integers(min_value=-(2**53), max_value=2**53).map(float),  # ints written as floats
    st.sampled_from([0.0, -0.0, 1e-4, 9.99e-5, 1e-5, 1e-7, 5e-324, 1e16, 1e15, 1e21, 1e22,
                     1.7976931348623157e308, 2.5e-5, 0.1, 123456789012345.6]),
)  # fmt: skip
_INTS = st.one_of(
    st.integers(min_value=-(2**63), max_value=2**64 - 1),
    st.integers(min_value=2**64, max_value=2**200),  # big: beyond orjson
    st.integers(max_value=-(2**63) - 1, min_value=-(2**200)),
)
_SCALARS = st.one_of(st.none(), st.booleans(), _INTS, _FLOATS, _TEXT)
_VALUES = st.recursive(
    _SCALARS,
    lambda inner: st.one_of(
        st.lists(inner, max_size=5),
        st.dictionaries(_TEXT, inner, max_size=5),
    ),
    max_leaves=40,
)


@settings(max_examples=800, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_VALUES)
def test_canonical_json_is_the_standard_librarys_form(value: Any) -> None:
    assert canonical_json(value) == old_form(value)
    assert canonical_bytes(value) == old_form(value).encode("utf-8")


_NEAR = st.sampled_from([None, 0, 0.0, -0.0, 1, 1.0, True, math.nan, math.inf, -math.inf, "1"])


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.one_of(
        st.tuples(_VALUES, _VALUES),
        _VALUES.map(lambda v: (v, json.loads(old_form(v)))),  # mostly the same, read back
        st.tuples(st.lists(_NEAR, max_size=3), st.lists(_NEAR, max_size=3)),
        st.lists(_NEAR, max_size=3).map(
            lambda v: (v, [float("nan") if x is math.nan else x for x in v])
        ),
    )
)
def test_same_json_is_the_same_canonical_json(pair: tuple[Any, Any]) -> None:
    """What a checkpoint compares a part read again by (store.commands.checkpoint_state):
    true only when the standard library writes both the same, the values orjson writes alike
    or `==` takes alike included (NaN and null, 1 and 1.0, -0.0 and 0.0, True and 1); and
    true whenever it does, but where a NaN is (unequal to itself: the JSON is made then)."""
    a, b = pair
    same = old_form(a) == old_form(b)
    if same_json(a, b):
        assert same
    elif "NaN" not in old_form(a):
        assert not same


@settings(max_examples=500, deadline=None)
@given(st.dictionaries(_TEXT, _FLOATS, max_size=6))
def test_floats_of_every_size(value: dict[str, float]) -> None:
    assert canonical_json(value) == old_form(value)


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(_TEXT, _TEXT, max_size=8))
def test_keys_sort_by_code_point_astral_included(value: dict[str, str]) -> None:
    # UTF-16 order would put an astral key before U+E000..U+FFFF; json sorts by code point.
    assert canonical_json(value) == old_form(value)
    members = {k: canonical_json(v) for k, v in value.items()}
    assert canonical_object(members) == old_form(value)


@pytest.mark.parametrize(
    "value",
    [
        {"f": 1e-05},  # orjson alone: 0.00001
        {"f": 1e-07},  # orjson alone: 1e-7
        {"f": [2.5e-05]},
        {"nan": math.nan},  # orjson alone: null
        {"inf": [math.inf, -math.inf]},
        {"big": 2**64},  # orjson refuses it
        {"neg": -(2**63) - 1},
        {1: "int key"},  # orjson refuses a key that is not a string
    ],
    ids=["1e-05", "1e-07", "2.5e-05", "nan", "inf", "2**64", "-2**63-1", "int-key"],
)  # fmt: skip
def test_where_orjson_differs_the_standard_library_writes(value: Any) -> None:
    try:
        alone: bytes | None = orjson.dumps(value, option=orjson.OPT_SORT_KEYS)
    except TypeError:
        alone = None  # refused
    expected = old_form(value)
    if alone is not None:
        assert alone.decode() != expected  # the class is real: orjson alone would differ
    assert canonical_json(value) == expected


def test_a_lone_surrogate_is_no_text_to_write() -> None:
    # orjson refuses it and json writes it as it is, but no UTF-8 form, digest or stored
    # event can be made of it: the caller's usage error, naming where (issue 40).
    from store.canonical import canonical_bytes
    from store.errors import NotText

    for write in (canonical_json, canonical_bytes):
        with pytest.raises(NotText, match="surrogate is not UTF-8 text"):
            write({"surrogate": "\ud800"})


def test_deep_nesting_past_orjsons_limit() -> None:
    value: Any = 0
    for _ in range(300):
        value = [value]
    with pytest.raises(TypeError):
        orjson.dumps(value)
    assert canonical_json(value) == old_form(value)


def test_types_json_refuses_are_refused() -> None:
    import datetime

    for value in ({"at": datetime.datetime(2026, 1, 1)}, {"d": datetime.date(2026, 1, 1)}):
        with pytest.raises(TypeError):
            old_form(value)
        with pytest.raises(TypeError):
            canonical_json(value)


def test_digests_and_chain_hash_unchanged() -> None:
    body = {"task_id": "t-1", "seq": 2, "type": "note.recorded", "format": 1,
            "payload": {"kind": "note", "text": "é 😀 \n"}, "actor": {"id": "a", "kind": "agent",
            "name": None}, "at": "2026-12-06T00:00:00.000000Z"}  # fmt: skip
    import hashlib

    old = hashlib.sha256(GENESIS_HASH.encode() + b"\n" + old_form(body).encode("utf-8")).hexdigest()
    parts = chain_hash_of_parts(
        GENESIS_HASH,
        actor_json=old_form(body["actor"]),
        at=str(body["at"]),
        fmt=1,
        payload_json=canonical_json(body["payload"]),
        seq=2,
        task_id="t-1",
        type_name="note.recorded",
    )
    assert parts == old
    assert digest_of(body) == "sha256:" + hashlib.sha256(old_form(body).encode()).hexdigest()


_COLUMNS = (
    "task_id, seq, type, format, payload, actor_kind, actor_id, actor_name, at, prev_hash, hash"
)


def _rehash(rows: list[Any]) -> int:
    """Each stored event's hash made again with the new canonical form: as stored; and each
    payload's new form is the standard library's."""
    import hashlib

    assert rows
    for task_id, seq, type_, fmt, payload, kind, actor_id, name, at, prev, digest in rows:
        data = json.loads(payload)
        assert canonical_json(data) == old_form(data)
        body = {
            "task_id": task_id,
            "seq": seq,
            "type": type_,
            "format": fmt,
            "payload": data,
            "actor": {"kind": kind, "id": actor_id, "name": name},
            "at": at,
        }
        made = hashlib.sha256(prev.encode() + b"\n" + canonical_bytes(body)).hexdigest()
        assert made == digest, (task_id, seq, type_)
    return len(rows)


@pytest.mark.parametrize("fixture", ["store-0001", "lineage-0003"])
def test_every_fixture_event_hashes_as_stored(fixture: str) -> None:
    conn = sqlite3.connect(FIXTURES / fixture / "boris.sqlite")
    try:
        rows = conn.execute(f"SELECT {_COLUMNS} FROM events ORDER BY task_id, seq").fetchall()
    finally:
        conn.close()
    assert _rehash(rows) > 10


def test_demo_store_hashes_as_the_standard_library_would(
    open_store: Callable[..., Store], store_dir: Path, store_url: str | None
) -> None:
    """The demo written through the real CLI (signed: `boris init` requires signatures), on
    both engines: every event hashes as the standard library's form would have it, its
    payload as stored is that form, and `boris verify` finds its chains and signatures whole."""
    env = {**os.environ, "BORIS_STORE": str(store_dir), "BORIS_ACTOR": "person:me"}
    if store_url:
        env["BORIS_STORE_URL"] = store_url
    for argv in (["init"], ["demo"]):
        done = subprocess.run([str(BORIS), *argv], capture_output=True, text=True, env=env)
        assert done.returncode == 0, (argv, done.stdout, done.stderr)
    verify = subprocess.run(
        [str(BORIS), "--json", "verify"], capture_output=True, text=True, env=env
    )
    report = json.loads(verify.stdout)["error"]["details"]["report"]
    # Chains and signatures hold; the one problem is the blob the demo leaves missing.
    assert report["signed"] is True
    assert [p["kind"] for p in report["problems"]] == ["blob_missing"]
    s = open_store()
    try:
        with s.read() as conn:
            rows = list(conn.exec_driver_sql(f"SELECT {_COLUMNS} FROM events ORDER BY id"))
    finally:
        s.close()
    assert all(canonical_json(json.loads(r[4])) == r[4] for r in rows)
    assert _rehash(rows) > 20


class _Counting(json.JSONEncoder):
    calls = 0

    def encode(self, o: Any) -> str:
        type(self).calls += 1
        return super().encode(o)


@pytest.mark.parametrize(
    ("value", "slow"),
    [
        ({"kind": "note", "text": "tick", "actor": {"id": "a", "name": None}}, False),
        ({"amount": 12.5, "limit": 1e6, "n": [1, 2.0, -0.0], "e": {}, "l": []}, False),
        ({"text": "a string holding e-7 and 0.00001"}, True),  # a look-alike: only slower
        ({"f": 1e-05}, True),
        ({"nan": math.nan, "none": None}, True),
        ({"big": 2**70}, True),
    ],
)
def test_the_record_s_usual_payloads_take_orjson(
    value: Any, slow: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The usual payloads never reach the standard library's encoder; the classes orjson
    would write otherwise do (tests above: and come out as it writes them)."""
    import store.canonical as canonical

    reference = old_form(value)
    monkeypatch.setattr(_Counting, "calls", 0)
    monkeypatch.setattr(
        canonical,
        "_CANONICAL",
        _Counting(sort_keys=True, separators=(",", ":"), ensure_ascii=False),
    )
    assert canonical_json(value) == reference
    assert canonical_bytes(value) == reference.encode("utf-8")
    assert _Counting.calls == (2 if slow else 0)


def test_every_decade_of_floats_both_signs() -> None:
    """Where Python's float text switches form (1e-4, 1e16) and every power of ten between
    the smallest subnormal and the largest float: orjson alone differs only below 1e-4."""
    differs_alone = set()
    for exponent in range(-330, 309):
        for mantissa in (1, 1.5, 2.5, 3.3333333333333335, 9.99999, 9.999999999999998):
            for sign in (1, -1):
                value = sign * mantissa * 10.0**exponent
                if not math.isfinite(value):
                    continue
                assert canonical_json([value]) == old_form([value]), value
                if orjson.dumps([value]).decode() != old_form([value]):
                    differs_alone.add(abs(value) < 1e-4 and value != 0)
    assert differs_alone == {True}
