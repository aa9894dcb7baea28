"""The base of the read models read before pydantic is loaded: the inbox's rows.

`store.reads.peek` lists a SQLite store's tasks with the standard library's sqlite3 while
the store opens, and imports neither SQLAlchemy nor pydantic (tests/test_peek.py): pydantic
alone is some 150 ms of the window's first paint. So the inbox's rows are frozen, slotted
dataclasses, not `ReadModel`s, with the same face: attributes for the type checker, the
store's enums, `to_json()` for the CLI, a string key at run time only. They are also the
cheapest rows to build (a page of 200 is built in a fraction of a millisecond), and pydantic
still validates them and documents them (`boris schema`): each class says
`__pydantic_config__ = FORBID`, so a field it does not declare is refused.
"""

from __future__ import annotations

from enum import Enum
from typing import TYPE_CHECKING, Any, ClassVar

#: pydantic's config for a dataclass row (a plain dict, so pydantic need not be imported).
FORBID: Any = {"extra": "forbid"}


def jsonable(value: Any) -> Any:
    """A row's value as JSON-ready data: rows as objects, enums as their values."""
    if isinstance(value, ReadRow):
        return value.to_json()
    if isinstance(value, Enum):
        return value.value
    if isinstance(value, list | tuple):
        return [jsonable(v) for v in value]
    if isinstance(value, dict):
        return {k: jsonable(v) for k, v in value.items()}
    return value


class ReadRow:
    """A frozen answer of a read, as a dataclass: subclasses are
    `@dataclass(frozen=True, slots=True)`."""

    __slots__ = ()

    def to_json(self) -> dict[str, Any]:
        """The row as JSON-ready data: what the CLI prints and MCP answers."""
        return {name: jsonable(getattr(self, name)) for name in self.__dataclass_fields__}

    if TYPE_CHECKING:
        __dataclass_fields__: ClassVar[dict[str, Any]]
    else:
        # Run time only, as ReadModel's: scripts and tests written against the JSON shape
        # still read a string key; the type checker sees attributes only.
        def __getitem__(self, key: str) -> Any:
            if key not in self.__dataclass_fields__:
                raise KeyError(key)
            return getattr(self, key)

        def get(self, key: str, default: Any = None) -> Any:
            return getattr(self, key) if key in self.__dataclass_fields__ else default

        def __contains__(self, key: object) -> bool:
            return key in self.__dataclass_fields__
