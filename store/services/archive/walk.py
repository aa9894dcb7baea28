"""Reading a package: every member streamed once through a visitor, anything hostile refused
from its header before its content is read."""

from __future__ import annotations

import gzip
import re
import zlib
from collections.abc import Callable, Iterator
from typing import BinaryIO

from .common import BLOB_MEMBER, TEXT_MEMBERS, Limits, PackageTooLarge, refuse
from .tarstream import Entry, HeaderTooLarge, TarFormatError, TarReader


class _Counted:
    """The decompressed stream, counted: it refuses to hand out more than `limit` bytes."""

    def __init__(self, gz: gzip.GzipFile, limit: int) -> None:
        self._gz = gz
        self._limit = limit
        self.streamed = 0
        self.member = ""

    def read(self, n: int = -1, /) -> bytes:
        allowance = self._limit - self.streamed
        want = allowance + 1 if n < 0 else min(n, allowance + 1)
        data = self._gz.read(want)
        self.streamed += len(data)
        if self.streamed > self._limit:
            where = f" (in member {self.member!r})" if self.member else ""
            raise PackageTooLarge(
                f"the package decompresses to more than {self._limit} bytes{where}; "
                "reading stopped there (a compression bomb?); nothing was imported",
                self.streamed,
            )
        return data


def name_problem(name: str) -> str | None:
    if not name:
        return "has an empty name"
    if "\x00" in name:
        return "has a NUL byte in its name"
    if "\\" in name:
        return "has a backslash in its name"
    if name.startswith("/") or re.match(r"[A-Za-z]:", name):
        return "is an absolute path"
    if ".." in name.split("/"):
        return "climbs out of the package (..)"
    if name not in TEXT_MEMBERS and not BLOB_MEMBER.fullmatch(name):
        return "is not a member a Boris package has"
    return None


def _type_problem(entry: Entry) -> str | None:
    kind = entry.type
    if kind == b"2":
        return f"is a symbolic link (to {entry.linkname!r})"
    if kind == b"1":
        return f"is a hard link (to {entry.linkname!r})"
    if kind == b"5" or entry.name.endswith("/"):
        return "is a directory where a file is expected"
    if kind in (b"3", b"4"):
        return "is a device"
    if kind == b"6":
        return "is a named pipe"
    if not entry.is_regular:
        return f"is not a regular file (tar type {kind!r})"
    return None


def too_large(name: str, size: int, limit: int) -> str:
    return f"member {name!r} is larger than the limit of {limit} bytes ({size})"


Visit = Callable[[Entry, Iterator[bytes]], None]


def walk(label: str, raw: BinaryIO, limits: Limits, visit: Visit) -> None:
    """Stream every member of the package through `visit`, refusing anything hostile: the
    member's name, type, count and size are checked from its header before it is read."""
    raw.seek(0)
    try:
        with gzip.GzipFile(fileobj=raw, mode="rb") as gz:
            counted = _Counted(gz, limits.total_bytes)
            reader = TarReader(counted, max_header=limits.header_bytes)
            seen: set[str] = set()
            for entry in reader:
                name = entry.name
                counted.member = name
                problem = _type_problem(entry) or name_problem(name)
                if problem is not None:
                    raise refuse(f"member {name!r} {problem}")
                if name in seen:
                    raise refuse(f"member {name!r} appears twice")
                seen.add(name)
                if len(seen) > limits.members:
                    raise refuse(f"the package has more than {limits.members} members")
                if entry.size > limits.member_bytes:
                    raise refuse(too_large(name, entry.size, limits.member_bytes))
                visit(entry, reader.chunks())
    except HeaderTooLarge as exc:
        raise refuse(f"the package has {exc}") from None
    except (TarFormatError, EOFError, zlib.error, gzip.BadGzipFile) as exc:
        raise refuse(f"{label} is not a readable .tar.gz package ({exc})") from None
