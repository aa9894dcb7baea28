"""The base of every read model the store hands across its public face (store.api).

A read answers frozen, typed objects, as LangGraph's savers answer `CheckpointTuple` and
eventsourcing's recorders answer typed records: the window reads attributes, so mypy finds
a renamed field before a user does. Each model forbids fields it does not declare, so the
shape the window reads, the JSON the CLI prints (`to_json`) and the schema `boris schema`
documents are one shape.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict


class ReadModel(BaseModel):
    """A frozen answer of a read: attributes, the store's enums, no undeclared field."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    def to_json(self) -> dict[str, Any]:
        """The model as JSON-ready data: what the CLI prints and MCP answers."""
        return self.model_dump(mode="json")

    if not TYPE_CHECKING:
        # Run time only: tests and scripts written against the JSON shape still read a
        # string key. The type checker sees attributes only, so a subscript in store/ or
        # boris_desktop/ fails mypy (strict) and a renamed field is found there.
        def __getitem__(self, key: str) -> Any:
            if key not in type(self).model_fields:
                raise KeyError(key)
            return getattr(self, key)

        def get(self, key: str, default: Any = None) -> Any:
            return getattr(self, key) if key in type(self).model_fields else default

        def __contains__(self, key: object) -> bool:
            return key in type(self).model_fields

        def __eq__(self, other: object) -> bool:
            # A model equals the JSON it prints, as the dicts it replaces did: a test that
            # compares a read with a literal still holds. Frozen subclasses stay hashable
            # (pydantic gives each its hash).
            if isinstance(other, dict):
                return self.to_json() == other
            return super().__eq__(other)
