"""A spare: a child of the resident process forked ahead of the next command, its copy of
the pages a command writes made before the command comes (Android's pool of unspecialised
app processes, a pre-forking server's idle worker).

A forked child shares the server's memory until it writes to it, and a command writes to
thousands of pages it only reads (each object it touches has its reference count changed):
the kernel copies each one on first write, ~3,300 faults a recorded hook, a third of the
command's time in a fork. `written_pages` learns once which pages those are: a probe child
runs a hook's commands and reads, from /proc/self/pagemap, which of the server's pages it
now holds a copy of (mapped by it alone). A spare has the kernel copy them in a few calls
(`populate`: madvise MADV_POPULATE_WRITE, Linux 5.14, which faults pages in as a write would
without writing), then waits for its command. It holds nothing a command could see: no
connection, thread, store or caller's environment; what it receives is the caller's
connection, standard streams and request, as a child forked for the request would.

The server's end of the spare's channel closing (the server ended, or discarded it) ends
the spare: it never outlives its server.
"""

from __future__ import annotations

import contextlib
import errno
import os
import socket
import struct
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from . import wire

#: madvise(2)'s advice to fault pages in writable, as a write would, without writing.
MADV_POPULATE_WRITE = 23
_PAGE = os.sysconf("SC_PAGE_SIZE")
_RANGE = struct.Struct("=QQ")
_PRESENT = 1 << 63
_EXCLUSIVE = 1 << 56  # pagemap: "page exclusively mapped" (Linux 4.2)

#: A run of pages, as (first address, length in bytes).
Pages = list[tuple[int, int]]
#: libc's madvise, once written_pages has looked it up.
_madvise: Any = None


@dataclass
class Spare:
    """The server's handle on its spare."""

    pid: int
    pidfd: int
    #: The server's end: the request goes down it; closed, it ends the spare.
    channel: socket.socket


def written_pages(run: Callable[[], object]) -> Pages:
    """The pages of this process that a fork of it writes to while `run` runs in it: a
    probe child runs it, then lists the pages of this process's private writable mappings
    it holds alone (copied on write, or first touched). Empty where /proc cannot say.
    madvise is looked up here, once, not in every spare."""
    global _madvise
    import ctypes

    _madvise = ctypes.CDLL(None, use_errno=True).madvise
    _madvise.argtypes = (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int)
    reader, writer = os.pipe()
    pid = os.fork()
    if pid == 0:  # the probe: it only ever writes to the pipe, then ends
        os.close(reader)
        code = 1
        try:
            mappings = _writable_mappings()
            with contextlib.suppress(Exception, SystemExit):
                run()
            with open(writer, "wb", closefd=False) as pipe:
                for start, length in _held_alone(mappings):
                    pipe.write(_RANGE.pack(start, length))
            code = 0
        finally:
            os._exit(code)
    os.close(writer)
    with open(reader, "rb") as pipe:
        data = pipe.read()
    _, status = os.waitpid(pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        return []
    return [(start, length) for start, length in _RANGE.iter_unpack(data)]


def _writable_mappings() -> Pages:
    """This process's private writable mappings (heap, arenas, libraries' data)."""
    mappings = []
    with open("/proc/self/maps") as maps:
        for line in maps:
            span, perms = line.split(maxsplit=2)[:2]
            if perms.startswith("rw") and perms[3] == "p":
                start, end = (int(address, 16) for address in span.split("-"))
                mappings.append((start, end - start))
    return mappings


def _held_alone(mappings: Pages) -> Pages:
    """The pages of `mappings` present and mapped by this process only, run by run."""
    runs: list[list[int]] = []
    with open("/proc/self/pagemap", "rb", buffering=0) as pagemap:
        for start, length in mappings:
            pagemap.seek(start // _PAGE * 8)
            entries = pagemap.read(length // _PAGE * 8)
            for index, (entry,) in enumerate(struct.iter_unpack("=Q", entries)):
                if entry & _PRESENT and entry & _EXCLUSIVE:
                    page = start + index * _PAGE
                    if runs and runs[-1][0] + runs[-1][1] == page:
                        runs[-1][1] += _PAGE
                    else:
                        runs.append([page, _PAGE])
    return [(start, length) for start, length in runs]


def populate(pages: Pages) -> None:
    """Have the kernel copy `pages` for this process now, as writing to them would, without
    writing: what they hold is unchanged. A run no longer mapped, or a kernel without the
    advice, is refused by madvise and left alone (the command then copies it itself)."""
    if _madvise is None:
        return
    import ctypes  # imported by written_pages, before the fork

    for index, (start, length) in enumerate(pages):
        refused = _madvise(start, length, MADV_POPULATE_WRITE) != 0
        if refused and index == 0 and ctypes.get_errno() == errno.EINVAL:
            return  # a kernel before 5.14: no use asking again


def hand(spare: Spare, conn: socket.socket, fds: list[int], body: bytes) -> None:
    """Give the spare its command: the caller's connection and streams, and the request's
    body as the caller sent it. OSError when the spare is gone."""
    socket.send_fds(spare.channel, [wire.HEADER.pack(len(body))], [conn.fileno(), *fds])
    spare.channel.sendall(body)


def wait(channel: socket.socket) -> tuple[socket.socket, list[int], bytes] | None:
    """In the spare: its command (the caller's connection, its streams, the request's
    body), or None when the server's end closed first."""
    header, fds, _, _ = socket.recv_fds(channel, wire.HEADER.size, 1 + len(wire.STDIO))
    if len(header) != wire.HEADER.size or len(fds) != 1 + len(wire.STDIO):
        return None
    (size,) = wire.HEADER.unpack(header)
    body = bytearray()
    while len(body) < size:
        chunk = channel.recv(size - len(body))
        if not chunk:
            return None
        body += chunk
    return socket.socket(fileno=fds[0]), fds[1:], bytes(body)
