"""The resource scope: which paths and destinations a task may touch.

A path is judged after `..`, absolute paths and symbolic links are resolved, so a link inside
the scope that points outside it is outside.
"""

from __future__ import annotations

import os
import re
import threading
import unicodedata
from collections import Counter
from pathlib import Path
from urllib.parse import unquote_to_bytes, urlsplit

from .errors import ScopeViolation, UnsafeDestination
from .model import Scope

# The SQLite files of the stores open in this process, by real path, with how many Store
# objects hold each. Reading one with open() and closing it drops every lock SQLite holds on
# it in this process (sqlite.org/howtocorrupt.html, 2.2); another process may then delete
# the write-ahead log under this one's connections, and commits are lost. So a task's path
# (an artifact's content, an effect's target, a file the brief observes) is never one.
_store_files: Counter[str] = Counter()
_store_files_lock = threading.Lock()
_SIDE_FILES = ("", "-wal", "-shm", "-journal")


def hold_store_files(db_file: Path) -> None:
    """A store on `db_file` opened in this process (Store does this)."""
    real = os.path.realpath(db_file)
    with _store_files_lock:
        for suffix in _SIDE_FILES:
            _store_files[real + suffix] += 1


def release_store_files(db_file: Path) -> None:
    real = os.path.realpath(db_file)
    with _store_files_lock:
        for suffix in _SIDE_FILES:
            _store_files[real + suffix] -= 1
            if _store_files[real + suffix] <= 0:
                del _store_files[real + suffix]


def is_store_file(path: str | os.PathLike[str]) -> bool:
    """Whether `path` is the database, or one of its side files, of a store open in this
    process: a file nothing but SQLite may open."""
    return os.path.realpath(path) in _store_files


def make_scope(paths: list[str] | tuple[str, ...], destinations: tuple[str, ...] = ()) -> Scope:
    roots = tuple(os.path.realpath(os.path.expanduser(p)) for p in paths)
    return Scope(paths=roots, destinations=tuple(destinations))


def workspace(scope: Scope) -> Path | None:
    """The first scope root: where a relative path in a command is taken from."""
    return Path(scope.paths[0]) if scope.paths else None


def resolve_path(scope: Scope, path: str) -> Path:
    """The real path of `path`, or ScopeViolation when it lies outside every root."""
    raw = os.path.expanduser(path)
    if not os.path.isabs(raw):
        base = workspace(scope)
        if base is None:
            raise ScopeViolation(f"{path!r} is relative and the task's scope has no paths")
        raw = os.path.join(base, raw)
    real = os.path.realpath(raw)
    if is_store_file(real):
        raise ScopeViolation(
            f"{path!r} is the store's own database ({real}): a task never reads or writes it"
        )
    for root in scope.paths:
        if real == root or real.startswith(root.rstrip(os.sep) + os.sep):
            return Path(real)
    raise ScopeViolation(f"{path!r} resolves to {real}, outside the task's scope")


def relative_label(scope: Scope, real: Path) -> str:
    """How a path inside the scope is recorded: relative to the workspace when it can be."""
    base = workspace(scope)
    if base is not None:
        try:
            return real.relative_to(base).as_posix()
        except ValueError:
            pass
    return str(real)


#: A URI's scheme (RFC 3986), two letters or more so that a drive letter ("C:") is not one.
_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]+:")


def is_destination(target: str) -> bool:
    """Whether `target` names a destination (a URI: https://…, smtp://…, mailto:…) rather
    than a file. `mailto:a@b` has no "//" and was once taken for a relative file name."""
    return _SCHEME.match(target) is not None


#: In a destination's host or path: a backslash, which WHATWG URL parsers (browsers,
#: Node, many HTTP clients) read as "/" for http(s), so `/upload/..\\admin` becomes `/admin`;
#: or a percent-encoded dot (%2e), slash (%2f), backslash (%5c) or percent sign (%25, the
#: start of every double encoding such as %252e%252e).
_AMBIGUOUS = re.compile(r"\\|%2e|%2f|%5c|%25", re.IGNORECASE)


def refuse_ambiguous_destination(target: str) -> None:
    """Raise UnsafeDestination when the destination's host or path holds a form that one
    reader takes for a path separator or a dot segment and another does not.

    Refused rather than normalized: a normalization would have to choose one reading (RFC
    3986's, WHATWG's, one server's that decodes %2f or decodes twice), and the HTTP client
    that carries out the effect, a proxy or the server may choose another; the scope would
    then approve one path and the effect reach a different one. A legitimate destination
    never needs these forms, so refusing them makes the checked path the path that is sent.
    The rest of the path is decoded as the most lenient server would (`normalised_segments`)
    and refused where that reading cannot be settled.
    A destination without a host (mailto:, tel:) is compared as a whole and not by path
    segments, so nothing in it can climb out; it is left alone.
    """
    parts = urlsplit(target)
    if not parts.netloc:
        return
    found = _AMBIGUOUS.search(parts.netloc + parts.path)
    if found is not None:
        what = "a backslash" if found.group() == "\\" else f"the encoded form {found.group()}"
        raise _unsafe(target, what)
    normalised_segments(parts.path, target)


def _unsafe(target: str, what: str) -> UnsafeDestination:
    return UnsafeDestination(
        f"destination {target!r} is refused: it contains {what}, which URL parsers and "
        "servers read differently (a backslash or encoded dot, slash, backslash or "
        "percent sign may climb out of the allowed path); write the path plainly"
    )


#: IIS's `%uXXXX`, one UTF-16 unit: `..%u002f` is `../` to it and `..%u002f` to others.
_PERCENT_U = re.compile(r"%u([0-9A-Fa-f]{4})")
#: A percent escape still there after one decoding: the path was encoded twice.
_STILL_ENCODED = re.compile(r"%(?:[0-9A-Fa-f]{2}|u[0-9A-Fa-f]{4})")


def _decoded(path: str, target: str) -> str:
    """The path as a lenient server reads it: `%uXXXX` and `%XX` decoded once, the bytes read
    as strict UTF-8 (an overlong `%c0%ae` is a dot to some decoders and invalid to others:
    refused), compatibility forms folded (NFKC: a fullwidth `．` is a dot). Refused when it is
    still encoded after that (double encoding) or holds a control or format character (NUL,
    tab: some servers cut or drop them, so `..%00` or `..%09` is `..` there)."""
    if re.search(r"%u(?![0-9A-Fa-f]{4})", path, re.IGNORECASE):
        raise _unsafe(target, "a %u escape that is not %u and four hex digits")
    try:
        text = _PERCENT_U.sub(lambda m: chr(int(m.group(1), 16)), path)
        text = unquote_to_bytes(text).decode("utf-8", "strict")
    except (UnicodeDecodeError, ValueError):
        raise _unsafe(
            target, "percent-encoded bytes that are not UTF-8 (an overlong or broken form)"
        ) from None
    found = _STILL_ENCODED.search(text)
    if found is not None:
        raise _unsafe(target, f"a double encoding ({found.group()} after decoding once)")
    text = unicodedata.normalize("NFKC", text)
    for ch in text:
        if unicodedata.category(ch) in ("Cc", "Cf", "Cs"):
            raise _unsafe(target, f"the control character U+{ord(ch):04X} (decoded)")
    if "\\" in text:
        raise _unsafe(target, "a backslash (decoded)")
    return text


def normalised_segments(path: str, target: str = "") -> list[str] | None:
    """The path's segments as the most lenient server reads them, or None when it climbs
    (a plain `..`): `;parameters` dropped (Tomcat reads `..;` as `..`), empty and `.`
    segments dropped. A segment only a lenient reading makes a climb of (`..;x`, `.. `,
    `...`, a decoded `..`) raises UnsafeDestination; so does a path `_decoded` refuses."""
    out: list[str] = []
    raw_segments = path.split("/")
    decoded = _decoded(path, target or path).split("/")
    if len(raw_segments) != len(decoded):  # a decoded slash (%u002f) makes a new segment
        raise _unsafe(target or path, "an encoded slash (decoded)")
    for raw, seg in zip(raw_segments, decoded, strict=True):
        core = seg.split(";", 1)[0].strip()
        if core in ("", "."):
            continue
        if set(core) == {"."}:
            if raw != "..":
                raise _unsafe(target or path, f"the segment {raw!r}, which servers read as ..")
            return None
        out.append(core)
    return out


def destination_within(target: str, allowed: str) -> bool:
    """Whether the destination `target` lies within the scope's destination `allowed`: the
    same scheme and host, and a path at or below the allowed one, judged by whole segments
    as the most lenient server reads them (`normalised_segments`). (By string prefix,
    https://docs.example.org would admit https://docs.example.org.evil/.)
    A target in an ambiguous form (see `refuse_ambiguous_destination`) is never within."""
    try:
        refuse_ambiguous_destination(target)
    except UnsafeDestination:
        return False
    t, a = urlsplit(target), urlsplit(allowed)
    if t.scheme.lower() != a.scheme.lower() or t.netloc.lower() != a.netloc.lower():
        return False
    if not a.netloc:  # mailto:, tel:, …: the address itself
        return t.path.lower() == a.path.lower() and not t.query and not t.fragment
    if a.query or a.fragment:
        return target == allowed
    try:
        base = normalised_segments(a.path, allowed)
    except UnsafeDestination:
        return False
    path = normalised_segments(t.path, target)
    if path is None or base is None:
        return False  # no climbing out of the allowed path, however the server reads it
    return path[: len(base)] == base


def check_target(scope: Scope, target: str) -> str:
    """A normalized effect target: a destination URI inside the scope, or a scoped path."""
    if is_destination(target):
        refuse_ambiguous_destination(target)
        if any(destination_within(target, allowed) for allowed in scope.destinations):
            return target
        raise ScopeViolation(
            f"destination {target!r} is outside the task's scope (a name with a colon before "
            "any slash reads as a URI: write ./name for a file)"
        )
    return str(resolve_path(scope, target))
