"""A string key answered at run time only, by the window's own frozen dataclasses.

As the store's read models do (store.reads.read_model): tests and code written against the
old dict shape still read `x["key"]`, `x.get("key")` and `"key" in x` while the window
moves to attributes; the type checker sees attributes only, so a subscript fails mypy. A
field that is None answers `in` as the key the old dict left out.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any


class Keyed:
    """Run time only: `result["key"]`, `result.get("key")` and `"key" in result`."""

    if not TYPE_CHECKING:

        def __getitem__(self, key: str) -> Any:
            if key not in self.__dataclass_fields__:
                raise KeyError(key)
            return getattr(self, key)

        def get(self, key: str, default: Any = None) -> Any:
            return getattr(self, key, default) if key in self.__dataclass_fields__ else default

        def __contains__(self, key: object) -> bool:
            return key in self.__dataclass_fields__ and getattr(self, key) is not None
