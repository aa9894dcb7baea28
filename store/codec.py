"""The one way a stored event row becomes an `Event`: for the store's reads, the archive's
import and verify alike (eventsourcing's single mapper), so the three cannot drift apart.

A payload in its type's current format is validated straight from its JSON text (one pass
in pydantic's parser); one that needs upcasting, or does not validate, goes the long way
(`events.decode`), which upcasts it or explains what is wrong. Actors repeat: each is
validated once per decoder.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable
from typing import Any

from . import events as ev
from .errors import StoreError
from .model import Actor
from .record import Event


class EventDecoder:
    """Stored payload text and actor columns as objects; keep one per pass over a log."""

    def __init__(self) -> None:
        self._current: dict[str, tuple[int, Callable[[str], ev.Payload]]] = {}
        self._actors: dict[tuple[str, str, str | None], Actor] = {}

    def payload(self, type_: str, fmt: int, text: str) -> ev.Payload:
        """The payload, upcast to its current format. Raises ValueError (bad JSON, a
        payload that does not validate) or StoreError (an unknown type or format)."""
        known = self._current.get(type_)
        if known is None:
            with contextlib.suppress(StoreError):
                cls = ev.payload_class(type_)
                known = self._current[type_] = (cls.FORMAT, cls.model_validate_json)
        if known is not None and known[0] == fmt:
            try:  # not contextlib.suppress: this runs once per event
                return known[1](text)
            except ValueError:  # pydantic's ValidationError: the long way says why
                pass
        data = json.loads(text)
        if not isinstance(data, dict):
            raise ValueError("the payload is not a JSON object")
        return ev.decode(type_, fmt, data)

    def actor(self, kind: str, actor_id: str, name: str | None) -> Actor:
        key = (kind, actor_id, name)
        actor = self._actors.get(key)
        if actor is None:
            actor = self._actors[key] = Actor.model_validate(
                {"kind": kind, "id": actor_id, "name": name}
            )
        return actor

    def __call__(
        self, type_: str, fmt: int, payload: str, kind: str, actor_id: str, name: str | None
    ) -> tuple[ev.Payload, Actor]:
        return self.payload(type_, fmt, payload), self.actor(kind, actor_id, name)

    def event(self, row: Any) -> Event:
        """A row of the `events` table (or one shaped like it) as an Event."""
        payload, actor = self(
            row.type, row.format, row.payload, row.actor_kind, row.actor_id, row.actor_name
        )
        return Event(
            row.task_id, row.seq, row.type, payload, actor, row.at, row.prev_hash, row.hash
        )
