"""The time as the store writes it: UTC, microseconds, ISO 8601 with a Z.

Its own module, with nothing but the standard library: `store.reads.peek` reads the inbox
before SQLAlchemy is imported, and judges expiry by the same clock as the store.
"""

from __future__ import annotations

import calendar
import time
from typing import Any

_second: list[Any] = [None, ""]  # the last whole second formatted, and its text


def system_now() -> str:
    """This process's system clock, which is also SQLite's 'now' (its VFS asks the OS)."""
    micros = time.time_ns() // 1000
    second, fraction = divmod(micros, 1_000_000)
    if _second[0] != second:
        _second[1] = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(second))
        _second[0] = second
    return f"{_second[1]}.{fraction:06d}Z"


def format_micros(micros: int) -> str:
    """A time given in microseconds since the epoch, written as the store writes times."""
    second, fraction = divmod(micros, 1_000_000)
    return f"{time.strftime('%Y-%m-%dT%H:%M:%S', time.gmtime(second))}.{fraction:06d}Z"


def micros_of(text: str) -> int:
    """The inverse of `format_micros` (a time the store wrote, or the database's clock)."""
    whole, _, fraction = text.rstrip("Z").partition(".")
    second = calendar.timegm(time.strptime(whole, "%Y-%m-%dT%H:%M:%S"))
    return second * 1_000_000 + int(fraction.ljust(6, "0")[:6] or 0)
