"""`canonical.parse_json` reads every JSON text as the standard library does: by orjson
where it can, by `json` where orjson refuses (issue 44: the head read's state)."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as hs

from store.canonical import parse_json

values = hs.recursive(
    hs.none()
    | hs.booleans()
    | hs.integers(min_value=-(2**80), max_value=2**80)
    | hs.floats()
    | hs.text(),
    lambda inner: hs.lists(inner, max_size=4) | hs.dictionaries(hs.text(), inner, max_size=4),
    max_leaves=20,
)


def _same(a: Any, b: Any) -> bool:
    """Equal, NaN included, and of the same types throughout (1 is not 1.0 here)."""
    if isinstance(a, float) and isinstance(b, float) and a != a:
        return b != b
    if type(a) is not type(b):
        return False
    if isinstance(a, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict):
        return list(a) == list(b) and all(_same(a[k], b[k]) for k in a)
    return bool(a == b)


@settings(max_examples=300)
@given(values, hs.booleans())
def test_parse_json_reads_as_the_standard_library(value: Any, ascii_only: bool) -> None:
    text = json.dumps(value, ensure_ascii=ascii_only)
    assert _same(parse_json(text), json.loads(text))
    if ascii_only:
        assert _same(parse_json(text.encode()), json.loads(text))


def test_what_orjson_refuses_is_read_by_json() -> None:
    for text in (
        "NaN",
        "[Infinity, -Infinity, 1]",
        str(2**70),
        '"\\ud800"',
        "[" * 200 + "]" * 200,
        '{"a": 1, "a": 2}',
        " [1.5e-7, 0.1, 1e400] ",
    ):
        assert _same(parse_json(text), json.loads(text)), text
