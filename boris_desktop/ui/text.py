"""Words for record values: actors, digests, sizes, times; tooltips that stay plain text."""

from __future__ import annotations

import html
from collections.abc import Mapping
from datetime import datetime
from typing import TYPE_CHECKING, Any, Union, overload

from PySide6.QtGui import Qt

if TYPE_CHECKING:
    from store.api import ActorRef


@overload
def tip(text: str) -> str: ...
@overload
def tip(text: None) -> None: ...
def tip(text: str | None) -> str | None:
    """A tooltip that shows `text` literally. Qt renders a tooltip as rich text whenever
    Qt.mightBeRichText says so (a tag on its first line: `<b>`, `<img src=…>`, `<a href=…>`):
    such text is escaped into rich text whose rendering is exactly `text`. Every tooltip that
    carries text from a task goes through here (widgets' setToolTip and models' ToolTipRole)."""
    if not text or not Qt.mightBeRichText(text):
        return text
    return f'<p style="white-space:pre-wrap">{html.escape(text, quote=False)}</p>'


def count(n: int, one: str, many: str) -> str:
    """`n` and the noun in the right number: "1 criterion", "2 criteria", "0 criteria"."""
    return f"{n:,} {one if n == 1 else many}"


#: An actor as a read names it (store.api.ActorRef), or as an event's free-form JSON holds one.
Named = Union["ActorRef", Mapping[str, Any], None]


def _actor_fields(a: ActorRef | Mapping[str, Any]) -> tuple[str, str, str]:
    """(kind, id, name) of an actor."""
    if isinstance(a, Mapping):  # {kind, id, name} JSON: decoded by the store's own rule
        from store.api import ActorRef

        try:
            decoded = ActorRef.of(a)
        except (KeyError, ValueError):  # not an actor as the store writes one
            decoded = None
        if decoded is None:
            return "", "", ""
        a = decoded
    return str(a.kind), a.id, a.name


def actor(a: Named) -> str:
    if not a:
        return "—"
    kind, id_, name = _actor_fields(a)
    return f"{name} ({kind} {id_})" if name else f"{kind} {id_}"


def actor_short(a: Named) -> str:
    if not a:
        return "—"
    _kind, id_, name = _actor_fields(a)
    return name or id_


def digest(d: str | None, n: int = 12) -> str:
    if not d:
        return "—"
    algo, _, hexpart = d.partition(":")
    return f"{algo}:{hexpart[:n]}…" if hexpart else d[:n]


def size(n: float | None) -> str:
    if n is None:
        return "—"
    value = float(n)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if value < 1024 or unit == "GiB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{n} B"


def when(at: str | None) -> str:
    return at[:19].replace("T", " ") if at else "—"


def parse(at: str) -> datetime:
    return datetime.fromisoformat(at.replace("Z", "+00:00"))


def duration(seconds: float) -> str:
    s = int(abs(seconds))
    h, rem = divmod(s, 3600)
    m, sec = divmod(rem, 60)
    if h >= 48:
        return f"{h // 24} d {h % 24} h"
    if h:
        return f"{h} h {m:02d} min {sec:02d} s"
    if m:
        return f"{m} min {sec:02d} s"
    return f"{sec} s"


def number(x: float | None) -> str:
    if x is None:
        return "—"
    return f"{x:,.10g}"


def failure(error: BaseException) -> str:
    """One line for a failure: the store's refusal in its own words; anything else (a bug,
    whose traceback the loader logged) with its type, so it is never mistaken for a rule."""
    from store.api import StoreError

    text = str(error).strip()
    first = text.splitlines()[0] if text else "failed"
    return first if isinstance(error, StoreError) else f"{type(error).__name__}: {first}"
