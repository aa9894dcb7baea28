"""A streaming reader of tar archives, written here rather than borrowed from `tarfile`.

An importer's limits must hold whichever `tarfile` the interpreter ships: distributions patch
it (Debian's fix for CVE-2025-13462 moved header parsing to a private method, so an override
of `TarInfo.frombuf` was silently never called). This reader parses every header itself and
states each limit where the size is first known:

- an extended header (pax `x`/`g`/`X`, GNU long name `L` / long link `K`) larger than
  `max_header` is refused from its header block, before a byte of it is read;
- a member's size is known from its header (and pax `size`) before its content is read, so the
  caller refuses an oversized member without reading it;
- content is handed out in chunks of at most `CHUNK` bytes; nothing holds a whole member.

It reads ustar, pax and GNU headers; it never writes, extracts or follows anything. Anything it
cannot parse is a `TarFormatError`. Counting the total bytes decompressed is the caller's
stream's job (it wraps the gzip reader).
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterator
from typing import Protocol

BLOCK = 512
CHUNK = 1024 * 1024

REGULAR = (b"0", b"\x00")
_PAX = (b"x", b"g", b"X")
_GNU_LONG = (b"L", b"K")
_POSIX_MAGIC = b"ustar\x0000"
_PAX_RECORD = re.compile(rb"(\d+) ([^=\n]+)=")


class Readable(Protocol):
    def read(self, n: int = -1, /) -> bytes: ...


class TarFormatError(Exception):
    """The stream is not a tar archive this reader can parse."""


class HeaderTooLarge(Exception):
    """An extended header is larger than the reader's limit; `size` is what it declared."""

    def __init__(self, size: int, limit: int) -> None:
        super().__init__(f"an extended tar header of {size} bytes (the limit is {limit})")
        self.size = size
        self.limit = limit


@dataclasses.dataclass(frozen=True)
class Entry:
    name: str
    #: The tar type flag as one byte: b"0" or b"\0" for a regular file, b"2" a symbolic link...
    type: bytes
    size: int
    linkname: str
    #: True when a pax header describes a GNU sparse file (never a regular file here).
    sparse: bool = False

    @property
    def is_regular(self) -> bool:
        return self.type in REGULAR and not self.sparse and not self.name.endswith("/")


def _text(raw: bytes) -> str:
    return raw.split(b"\x00", 1)[0].decode("utf-8", "surrogateescape")


def _number(field: bytes) -> int:
    if field[:1] in (b"\x80", b"\xff"):  # GNU base-256
        n = int.from_bytes(field[1:], "big")
        return n - 256 ** (len(field) - 1) if field[:1] == b"\xff" else n
    digits = field.split(b"\x00", 1)[0].strip(b" ")
    try:
        return int(digits or b"0", 8)
    except ValueError:
        raise TarFormatError(f"a header has an invalid number field {field!r}") from None


def _check_sum(block: bytes) -> None:
    stored = _number(block[148:156])
    unsigned = sum(block[:148]) + 8 * 32 + sum(block[156:])
    signed = sum(b - 256 if b > 127 else b for b in block[:148] + block[156:]) + 8 * 32
    if stored not in (unsigned, signed):
        raise TarFormatError("a tar header's checksum does not match (a corrupt header)")


def _pax_records(data: bytes) -> dict[str, str]:
    out: dict[str, str] = {}
    pos = 0
    while pos < len(data) and data[pos : pos + 1] != b"\x00":
        m = _PAX_RECORD.match(data, pos)
        if m is None:
            raise TarFormatError("a pax header is malformed")
        length = int(m.group(1))
        end = pos + length
        if length <= 0 or end > len(data) or end <= m.end() or data[end - 1 : end] != b"\n":
            raise TarFormatError("a pax header record has a wrong length")
        key = m.group(2).decode("utf-8", "surrogateescape")
        out[key] = data[m.end() : end - 1].decode("utf-8", "surrogateescape")
        pos = end
    return out


def _padding(size: int) -> int:
    return -size % BLOCK


class TarReader:
    """Iterate the entries; read the current entry's content with `chunks()` (what is not read
    is skipped, in chunks, before the next header)."""

    def __init__(self, stream: Readable, *, max_header: int) -> None:
        self._stream = stream
        self._max_header = max_header
        self._left = 0  # content bytes of the current entry not yet read
        self._pad = 0  # padding after the current entry's content
        self._globals: dict[str, str] = {}

    def _exact(self, n: int) -> bytes:
        parts: list[bytes] = []
        got = 0
        while got < n:
            data = self._stream.read(min(n - got, CHUNK))
            if not data:
                raise TarFormatError("unexpected end of data (the archive is truncated)")
            parts.append(data)
            got += len(data)
        return b"".join(parts)

    def _skip(self, n: int) -> None:
        while n > 0:
            n -= len(self._exact(min(n, CHUNK)))

    def _block(self) -> bytes | None:
        """The next header block, or None at a clean end of the stream."""
        first = self._stream.read(BLOCK)
        if not first:
            return None
        return first + self._exact(BLOCK - len(first)) if len(first) < BLOCK else first

    def __iter__(self) -> Iterator[Entry]:
        count = 0
        while True:
            self._skip(self._left + self._pad)
            self._left = self._pad = 0
            entry = self._next()
            if entry is None:
                if count == 0:
                    raise TarFormatError("the archive holds no member")
                return
            count += 1
            # A link, directory or device has no content; a size declared there anyway is
            # skipped as data, as the header says (every such member is refused regardless).
            self._left, self._pad = entry.size, _padding(entry.size)
            yield entry

    def _next(self) -> Entry | None:
        local: dict[str, str] = {}
        long_name: str | None = None
        long_link: str | None = None
        while True:
            block = self._block()
            if block is None or block == bytes(BLOCK):
                return None
            _check_sum(block)
            kind = block[156:157]
            size = _number(block[124:136])
            if size < 0:
                raise TarFormatError("a tar header declares a negative size")
            if kind in _PAX or kind in _GNU_LONG:
                if size > self._max_header:
                    raise HeaderTooLarge(size, self._max_header)
                data = self._exact(size)
                self._skip(_padding(size))
                if kind == b"g":
                    self._globals.update(_pax_records(data))
                elif kind in _PAX:
                    local.update(_pax_records(data))
                elif kind == b"L":
                    long_name = _text(data)
                else:
                    long_link = _text(data)
                continue
            return self._entry(block, kind, size, {**self._globals, **local}, long_name, long_link)

    @staticmethod
    def _entry(
        block: bytes,
        kind: bytes,
        size: int,
        pax: dict[str, str],
        long_name: str | None,
        long_link: str | None,
    ) -> Entry:
        name = _text(block[0:100])
        prefix = _text(block[345:500])
        if block[257:265] == _POSIX_MAGIC and prefix:
            name = f"{prefix}/{name}"
        linkname = _text(block[157:257])
        name = pax.get("path", long_name if long_name is not None else name)
        linkname = pax.get("linkpath", long_link if long_link is not None else linkname)
        if "size" in pax:
            try:
                size = int(pax["size"])
            except ValueError:
                raise TarFormatError("a pax header has an invalid size") from None
            if size < 0:
                raise TarFormatError("a pax header declares a negative size")
        sparse = any(k.startswith("GNU.sparse.") for k in pax)
        return Entry(name, kind, size, linkname, sparse)

    def chunks(self) -> Iterator[bytes]:
        """The current entry's content, in chunks of at most CHUNK bytes."""
        while self._left > 0:
            data = self._exact(min(self._left, CHUNK))
            self._left -= len(data)
            yield data
