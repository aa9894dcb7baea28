"""Canonical JSON and digests: the form that hashes and approvals bind to.

The form is the standard library's `json` with sorted keys, no insignificant white space and
UTF-8 kept as is (sqlite-utils' form): every stored hash was made with it. orjson writes the
same bytes for almost every value, about ten times faster, so it writes them; the classes of
value where its output differs, or may, go to the standard library instead
(tests/test_canonical_orjson.py proves both halves):

- a float below 1e-4 in size: Python writes `1e-05`, orjson `0.00001` or `1e-7`. Its output
  is checked for a digit before `e-` and for `0.0000` (a string holding them costs only the
  slower path);
- NaN and the infinities: Python writes `NaN`/`Infinity`, orjson `null`. Output holding a
  `null` is read back and compared with the value, which a non-finite float fails;
- what orjson refuses: an integer beyond 64 bits, a key that is not a string, a lone
  surrogate, nesting deeper than 254, a type json does not know either (both refuse it).
  A lone surrogate is no UTF-8 text, so no digest is made of it: `NotText`, the caller's
  usage error naming where it is (store.limits.lone_surrogate).
"""

from __future__ import annotations

import hashlib
import json
import re
from typing import Any

import orjson

from .errors import NotText
from .limits import lone_surrogate

# One encoder for the process: json.dumps with any option builds a new encoder per call,
# which costs as much as encoding a small payload (and every event is small).
_CANONICAL = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False)

# Dates and dataclasses are not JSON to `json`: orjson must refuse them too (`_refuse`).
_OPTIONS = orjson.OPT_SORT_KEYS | orjson.OPT_PASSTHROUGH_DATETIME | orjson.OPT_PASSTHROUGH_DATACLASS
# Where a float below 1e-4 may be: orjson's `1e-7` / `2.5e-5` or its `0.00001`.
_SMALL_FLOAT = re.compile(rb"[0-9]e-|0\.0000")


def _refuse(value: Any) -> Any:
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


def _suspect(out: bytes) -> bool:
    """Whether orjson's output may differ from the standard library's: a cheap first look
    (substring searches, which most payloads pass) before `_differs` runs the pattern."""
    return b"e-" in out or b"0.0000" in out or b"null" in out


def _differs(out: bytes, value: Any) -> bool:
    """Whether orjson's output differs, or may, from the standard library's (see above). The
    pattern runs only where its substrings are (it costs ten times them on a 1 KB state)."""
    if (b"e-" in out or b"0.0000" in out) and _SMALL_FLOAT.search(out) is not None:
        return True
    return b"null" in out and orjson.loads(out) != value


def canonical_bytes(value: Any) -> bytes:
    """`canonical_json(value)` encoded as UTF-8: what digests and hashes are taken of."""
    try:
        out = orjson.dumps(value, default=_refuse, option=_OPTIONS)
    except TypeError:  # orjson.JSONEncodeError: the standard library says what it makes of it
        return _text(_CANONICAL.encode(value), value).encode("utf-8")
    if _suspect(out) and _differs(out, value):
        return _CANONICAL.encode(value).encode("utf-8")
    return out


def canonical_json(value: Any) -> str:
    """Sorted keys, no insignificant white space, UTF-8 kept as is (sqlite-utils' form)."""
    try:
        out = orjson.dumps(value, default=_refuse, option=_OPTIONS)
    except TypeError:
        return _text(_CANONICAL.encode(value), value)
    if _suspect(out) and _differs(out, value):
        return _CANONICAL.encode(value)
    return out.decode("utf-8")


def same_json(a: Any, b: Any) -> bool:
    """Whether `a` and `b` have the same canonical JSON, without making it: equal values with
    equal orjson output. Equality alone takes 1 for 1.0 and -0.0 for 0.0, which are written
    apart; orjson's output alone takes NaN and the infinities for null, which `==` tells
    apart from None. A NaN, unequal even to itself, may make it false where the JSON is the
    same: the caller then makes the JSON. tests/test_canonical_orjson.py checks both."""
    if a != b:
        return False
    try:
        return orjson.dumps(a, default=_refuse, option=_OPTIONS) == orjson.dumps(
            b, default=_refuse, option=_OPTIONS
        )
    except TypeError:
        return canonical_json(a) == canonical_json(b)


def canonical_text_object(members: dict[str, str]) -> str:
    """`canonical_json` of an object whose values are all text: orjson writes every string
    as json does (the differences above are numbers and nulls), so no look for them; a lone
    surrogate, which orjson refuses, goes the general way (`NotText`)."""
    try:
        return orjson.dumps(members, option=orjson.OPT_SORT_KEYS).decode("utf-8")
    except TypeError:
        return canonical_json(members)


def _text(encoded: str, value: Any) -> str:
    """The standard library's JSON of `value`, refused as the caller's input when it is not
    UTF-8 text (a lone surrogate, which orjson refuses and json writes as it is): no digest
    or stored form is made of it (store.limits says where it is)."""
    if encoded.isascii():
        return encoded
    try:
        encoded.encode("utf-8")
    except UnicodeEncodeError:
        raise NotText(lone_surrogate(value) or "the input is not UTF-8 text") from None
    return encoded


def _string(text: str) -> str:
    """A JSON string literal (orjson's equals json's for every string it accepts)."""
    try:
        return orjson.dumps(text).decode("utf-8")
    except TypeError:  # a lone surrogate: as json writes it
        return _CANONICAL.encode(text)


def canonical_object(members: dict[str, str]) -> str:
    """The canonical JSON of an object whose member values are canonical JSON texts already:
    so a large member encoded once (a checkpoint's state) is not encoded again inside it."""
    return "{" + ",".join(f"{_string(k)}:{members[k]}" for k in sorted(members)) + "}"


def parse_json(text: str | bytes) -> Any:
    """What `json.loads` makes of `text`, by orjson where it can (a few times faster: a
    checkpoint's state on every head read), and by the standard library where orjson refuses
    what it reads (NaN and the infinities, a lone surrogate, nesting too deep) or would read
    otherwise: an integer beyond 64 bits, which orjson makes a float, has 19 digits or more,
    so such a run anywhere (in a string too: a false alarm costs only the slower read) is
    left to `json`. tests/test_parse_json.py compares the two."""
    try:
        data = text.encode("utf-8") if isinstance(text, str) else text
    except UnicodeEncodeError:  # a lone surrogate
        return json.loads(text)
    if _LONG_RUN not in data.translate(_DIGITS_AS_ZEROS):
        try:
            return orjson.loads(data)
        except orjson.JSONDecodeError:
            pass
    return json.loads(text)


# Every digit as "0", every other byte as " ": a run of 19 digits is then a run of zeros
# (bytes.translate and `in`: a microsecond on a checkpoint's state, where a regex takes ten).
_DIGITS_AS_ZEROS = bytes(0x30 if 0x30 <= i <= 0x39 else 0x20 for i in range(256))
_LONG_RUN = b"0" * 19


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def digest_of(value: Any) -> str:
    """The digest of a JSON-able value's canonical form, prefixed with its algorithm."""
    return "sha256:" + sha256_hex(canonical_bytes(value))


def chain_hash(prev_hash: str, event_body: dict[str, Any]) -> str:
    """Each event's hash covers the previous hash and the event's canonical JSON."""
    h = hashlib.sha256()
    h.update(prev_hash.encode("ascii"))
    h.update(b"\n")
    h.update(canonical_bytes(event_body))
    return h.hexdigest()


def chain_hash_of_parts(
    prev_hash: str,
    *,
    actor_json: str,
    at: str,
    fmt: int,
    payload_json: str,
    seq: int,
    task_id: str,
    type_name: str,
) -> str:
    """`chain_hash` of an event body given as its already-canonical parts.

    The append path has the payload's canonical JSON anyway (it is what is stored), so the
    body's canonical form is assembled around it, keys in sorted order, instead of
    serializing the payload a second time. A test checks it equals `chain_hash`.
    """
    if _PLAIN.fullmatch(f"{at}{task_id}{type_name}") is not None:
        # All three plain (as the store's times, ids and type names are): one look for all.
        text = (
            f'{prev_hash}\n{{"actor":{actor_json},"at":"{at}","format":{fmt},'
            f'"payload":{payload_json},"seq":{seq},'
            f'"task_id":"{task_id}",'
            f'"type":"{type_name}"}}'
        )
    else:
        dumps = _plain_string
        text = (
            f'{prev_hash}\n{{"actor":{actor_json},"at":{dumps(at)},"format":{fmt},'
            f'"payload":{payload_json},"seq":{seq},'
            f'"task_id":{dumps(task_id)},'
            f'"type":{dumps(type_name)}}}'
        )
    # One buffer, one call: the same bytes as updating with each part (prev_hash is ASCII).
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


# Text JSON writes as it is between quotes: printable ASCII but the quote and the backslash
# (times, ids and type names always are). Anything else goes to `_string`.
_PLAIN = re.compile(r"[ !#-\[\]-~]*")


def _plain_string(text: str) -> str:
    if _PLAIN.fullmatch(text) is not None:
        return f'"{text}"'
    return _string(text)


GENESIS_HASH = "0" * 64
