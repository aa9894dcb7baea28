"""Times on the database's clock, as the store writes them (text that compares as time).

A time without a zone is refused: which clock it is on would be a guess.
"""

from __future__ import annotations

import datetime as _dt


def iso_instant(text: str) -> _dt.datetime:
    """An ISO 8601 time with its zone (Z or an offset) as an aware UTC datetime. A time
    without a zone is refused: which clock it is on would be a guess."""
    value = _dt.datetime.fromisoformat(text.strip())
    if value.tzinfo is None:
        raise ValueError(f"{text!r} names no time zone: add Z (UTC) or an offset")
    return value.astimezone(_dt.UTC)


def store_time(value: _dt.datetime) -> str:
    """A datetime as the store writes times (store.clock): UTC, microseconds, Z; so that
    times compare as text, the way the database's clock is compared everywhere."""
    return f"{value.astimezone(_dt.UTC):%Y-%m-%dT%H:%M:%S.%f}Z"


def store_time_after(now: str, seconds: float) -> str:
    """`seconds` after the store time `now` (the database's clock, read in the transaction)."""
    return store_time(iso_instant(now) + _dt.timedelta(seconds=seconds))
