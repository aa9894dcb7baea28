"""The in-memory form of one stored event."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .events import Payload
from .model import Actor


@dataclass(frozen=True, slots=True)
class Event:
    task_id: str
    seq: int
    type: str
    payload: Payload
    actor: Actor
    at: str
    prev_hash: str
    hash: str

    def body(self) -> dict[str, Any]:
        """What the chain hash covers: everything but the hashes themselves."""
        return event_body(self.task_id, self.seq, self.type, self.payload, self.actor, self.at)

    def to_json(self) -> dict[str, Any]:
        return {
            "task_id": self.task_id,
            "seq": self.seq,
            "type": self.type,
            "format": self.payload.FORMAT,
            "payload": self.payload.model_dump(mode="json"),
            "actor": self.actor.model_dump(mode="json"),
            "at": self.at,
            "prev_hash": self.prev_hash,
            "hash": self.hash,
        }


def event_body(
    task_id: str, seq: int, type_name: str, payload: Payload, actor: Actor, at: str
) -> dict[str, Any]:
    return stored_body(
        task_id, seq, type_name, payload.FORMAT, payload.model_dump(mode="json"), actor, at
    )


def stored_body(
    task_id: str,
    seq: int,
    type_name: str,
    fmt: int,
    payload: dict[str, Any],
    actor: Actor,
    at: str,
) -> dict[str, Any]:
    return {
        "task_id": task_id,
        "seq": seq,
        "type": type_name,
        "format": fmt,
        "payload": payload,
        "actor": actor.model_dump(mode="json"),
        "at": at,
    }
