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


# --- as a person reads them ------------------------------------------------------------------


def clock_words(at: str, now: str) -> str:
    """A time the store wrote, as a person reads it: "14:10 UTC" on `now`'s day, else
    "8 Dec 14:10 UTC". The store keeps UTC; a reader's own zone is their page's to add."""
    day, _, rest = at.partition("T")
    hhmm = rest[:5]
    if day == now.partition("T")[0]:
        return f"{hhmm} UTC"
    date = _dt.date.fromisoformat(day)
    return f"{date.day} {date:%b} {hhmm} UTC"


def span_words(seconds: float) -> str:
    """A span of time, rounded as a person says it: "40 s", "12 min", "2 h 5 min", "3 days"."""
    s = round(abs(seconds))
    if s < 60:
        return f"{s} s"
    if s < 3600:
        return f"{s // 60} min"
    if s < 86400:
        h, m = divmod(s // 60, 60)
        return f"{h} h {m} min" if m else f"{h} h"
    days = s // 86400
    return f"{days} day" + ("" if days == 1 else "s")


def expiry_words(expires_at: str, now: str) -> str:
    """ "expires 14:10 UTC, in 12 min", or "expired 14:10 UTC, 3 min ago" (by `now`, the
    database clock the page was read at)."""
    left = (iso_instant(expires_at) - iso_instant(now)).total_seconds()
    at = clock_words(expires_at, now)
    if left > 0:
        return f"expires {at}, in {span_words(left)}"
    return f"expired {at}, {span_words(left)} ago"
