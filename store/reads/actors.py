"""An actor as the reads name it: who asked for an approval, who holds or ended a lease.

The record stores an actor as `{kind, id, name}` (store.model.Actor's JSON); a read hands it
across the face as this row, so the window reads `requester.id`, never `requester["id"]`.
A dataclass (store.reads.read_row), not a pydantic model: the inbox's lease names one, and
the inbox is read before pydantic is loaded.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..rules import ActorKind
from .read_row import FORBID, ReadRow


@dataclass(frozen=True, slots=True)
class ActorRef(ReadRow):
    """Who did or asked something: an agent, a person or the store (`system`)."""

    __pydantic_config__ = FORBID

    kind: ActorKind
    id: str
    name: str = ""

    @classmethod
    def of(cls, data: Any) -> ActorRef | None:
        """The actor a JSON column holds, decoded (None: none)."""
        if data is None:
            return None
        return cls(ActorKind(data["kind"]), str(data["id"]), str(data.get("name") or ""))
