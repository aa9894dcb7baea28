"""What a prepared object changes in the world, said by the store: the change a person decides.

An approval binds a prepared object, an untyped JSON object an agent wrote. The window must
not guess what it does from its keys (a message once showed as a deletion because it had no
`intended` field): the store classifies it here, once, into one of a few typed changes, and
the window renders the variant it is given.

- `Send`: a message, with its recipients, subject and body as text (a payload with to/subject/
  body fields, a mailto:/smtp target, or an RFC 822 message held as a blob).
- `Write`: new content for a file; the diff against the file as it is now is `write_diff`,
  computed on the caller's worker.
- `Replace`: new content for a destination that already holds something (a remote document).
- `Delete`: only when the object says so explicitly (`intended.exists` is false).
- `Upload`: content sent to a destination.
- `Opaque`: anything else, shown as its JSON: never read as a deletion or as anything else.

Plain Python over the blob store and the file system; no SQL (the caller read the rows).
"""

from __future__ import annotations

import difflib
import email.utils
import json
import mimetypes
import os
from collections.abc import Mapping
from dataclasses import dataclass
from email import policy as email_policy
from email.message import EmailMessage
from email.parser import BytesParser
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

from ..blobs import BlobStore, hash_file
from ..errors import BlobProblem
from ..events import FileState
from ..rules import State, is_destination, same_state

#: How much of a message or a file the store reads to show it: a change bigger than this is
#: shown cut, and says so.
SHOW_CAP = 1024 * 1024

_MAIL_KINDS = frozenset({"send", "email", "mail", "message"})
_MAIL_SCHEMES = ("mailto:", "smtp://", "smtps://")


@dataclass(frozen=True)
class Send:
    """A message. `to`, `cc`, `bcc` are addresses as written ("Name <a@b>"); `headers` the
    other headers, in order; `body` the text a recipient reads (an HTML-only body is its
    source, never rendered). `digest`/`size`: the blob holding the whole message, when it
    is one; None when the message is the prepared object's own fields."""

    target: str
    to: tuple[str, ...]
    cc: tuple[str, ...] = ()
    bcc: tuple[str, ...] = ()
    sender: str = ""
    subject: str = ""
    body: str = ""
    headers: tuple[tuple[str, str], ...] = ()
    attachments: tuple[str, ...] = ()
    digest: str | None = None
    size: int | None = None
    #: What the reviewer should know about how it is shown (the To taken from the target,
    #: an HTML body shown as source, a cut body).
    notes: tuple[str, ...] = ()
    #: Why the message cannot be shown (its blob is missing or unreadable), or None.
    problem: str | None = None


@dataclass(frozen=True)
class Write:
    """New content for a file target. `before`: the file as it was when the write was
    planned (None when not known); the file as it is now is read by `write_diff`."""

    target: str
    digest: str
    size: int | None
    media_type: str | None
    before: FileState | None = None


@dataclass(frozen=True)
class Replace:
    """New content for a destination that already holds something: `before` is what the
    writer saw there (the store cannot read a destination itself)."""

    target: str
    digest: str
    size: int | None
    media_type: str | None
    before: FileState | None = None


@dataclass(frozen=True)
class Delete:
    """The target is to be removed: the prepared object says so (`intended.exists` false)."""

    target: str
    before: FileState | None = None


@dataclass(frozen=True)
class Upload:
    """Content sent to a destination that holds nothing there yet (as far as is known)."""

    target: str
    digest: str
    size: int | None
    media_type: str | None


@dataclass(frozen=True)
class Opaque:
    """A prepared object the store cannot classify: shown as its JSON, nothing inferred."""

    payload_json: str
    why: str


Change = Send | Write | Replace | Delete | Upload | Opaque


@dataclass(frozen=True)
class Facts:
    """What the effect an approval is for says of it, when the approval still binds the
    effect's prepared object (a revised effect's new intent is not what was asked)."""

    kind: str
    target: str
    intended: Mapping[str, Any] | None
    pre_state: Mapping[str, Any] | None


def pretty_json(value: Any) -> str:
    return json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False, default=str)


# --- classifying ---------------------------------------------------------------------------


def change_of(payload: Mapping[str, Any], facts: Facts | None, blobs: BlobStore) -> Change:
    """The change `payload` (an approval's prepared object) makes. Reads the message blob
    of a mail effect (at most SHOW_CAP) to show its headers and body."""
    kind = str(payload.get("kind") or (facts.kind if facts else "") or "").lower()
    target = str(payload.get("target") or (facts.target if facts else "") or "")
    intended = _mapping(payload.get("intended")) or (facts.intended if facts else None)
    pre = _state(payload.get("pre_state")) or _state(facts.pre_state if facts else None)
    if intended is not None and intended.get("exists") is False:
        return Delete(target, pre)
    if _is_message(payload, kind, target, intended):
        return _message(payload, target, intended, blobs)
    digest = intended.get("digest") if intended is not None else None
    if target and intended is not None and intended.get("exists", True) and digest:
        size = _int(intended.get("size"))
        media = _media_type(payload, intended, target)
        if not is_destination(target) and kind not in {"upload"}:
            return Write(target, str(digest), size, media, pre)
        if kind == "replace" or (kind != "upload" and pre is not None and pre.exists):
            return Replace(target, str(digest), size, media, pre)
        return Upload(target, str(digest), size, media)
    return Opaque(pretty_json(dict(payload)), _why_opaque(target, intended))


def _why_opaque(target: str, intended: Mapping[str, Any] | None) -> str:
    if not target:
        return "it names no target and is not a message"
    if intended is None:
        return f"it names {target} but not the content it intends there"
    return f"it names {target} but no digest of the content it intends there"


def _mapping(x: Any) -> Mapping[str, Any] | None:
    return x if isinstance(x, Mapping) else None


def _state(x: Any) -> FileState | None:
    if not isinstance(x, Mapping) or not isinstance(x.get("exists"), bool):
        return None
    digest = x.get("digest")
    return FileState(
        exists=x["exists"], digest=str(digest) if digest else None, size=_int(x.get("size"))
    )


def _int(x: Any) -> int | None:
    return x if isinstance(x, int) and not isinstance(x, bool) else None


def _media_type(payload: Mapping[str, Any], intended: Mapping[str, Any], target: str) -> str | None:
    given = payload.get("media_type") or intended.get("media_type")
    if given:
        return str(given)
    path = urlsplit(target).path if is_destination(target) else target
    return mimetypes.guess_type(path)[0]


def _is_message(
    payload: Mapping[str, Any], kind: str, target: str, intended: Mapping[str, Any] | None
) -> bool:
    if target.lower().startswith(_MAIL_SCHEMES) or isinstance(payload.get("rfc822"), str):
        return True
    fields = [k for k in ("to", "subject", "body", "text", "html") if k in payload]
    if kind in _MAIL_KINDS:
        # A "send" that names no recipient, no text and no message blob shows nothing a
        # person could check: it is shown as the object it is, not as an empty email.
        return bool(fields) or bool(target) or (intended is not None and "digest" in intended)
    return "to" in payload and len(fields) > 1


# --- messages ------------------------------------------------------------------------------


def _addresses(x: Any) -> tuple[str, ...]:
    if x is None or x == "":
        return ()
    items = [str(i) for i in x] if isinstance(x, list | tuple) else [str(x)]
    pairs = email.utils.getaddresses(items)
    return tuple(email.utils.formataddr(p) if p[1] else p[0] for p in pairs if p[0] or p[1])


def _mailto(target: str) -> dict[str, Any]:
    """A mailto: URI's recipients and fields (RFC 6068)."""
    if not target.lower().startswith("mailto:"):
        return {}
    parts = urlsplit(target)
    out: dict[str, Any] = {"to": unquote(parts.path)} if parts.path else {}
    for name, values in parse_qs(parts.query).items():
        out[name.lower()] = ", ".join(values)
    return out


def _recipient(target: str) -> str:
    """Who a destination names: mailto:a@b, or smtp://host/a@b's last part."""
    if target.lower().startswith("mailto:"):
        return unquote(urlsplit(target).path)
    return unquote(target.rstrip("/").rsplit("/", 1)[-1])


def _message(
    payload: Mapping[str, Any],
    target: str,
    intended: Mapping[str, Any] | None,
    blobs: BlobStore,
) -> Send:
    if isinstance(payload.get("rfc822"), str):
        raw = str(payload["rfc822"]).encode("utf-8")
        return _parsed(raw, target, None, len(raw), cut=False)
    fields = {**_mailto(target), **payload}
    # The message itself, when the effect carries one, is what is sent: a mailto: target's
    # recipient (always there) does not make the payload a message of fields.
    has_fields = any(k in payload for k in ("to", "subject", "body", "text", "html"))
    digest = intended.get("digest") if intended is not None else None
    if digest and not has_fields:
        try:
            size = blobs.size_of(str(digest))
            data = _read_head(blobs, str(digest), SHOW_CAP)
        except (BlobProblem, OSError) as exc:
            problem = str(exc) if isinstance(exc, BlobProblem) else exc.strerror
            return Send(
                target,
                _addresses(_recipient(target)),
                digest=str(digest),
                problem=f"the message {digest} cannot be read: {problem}",
            )
        return _parsed(data, target, str(digest), size, cut=size > SHOW_CAP)
    return _from_fields(fields, target)


def _from_fields(p: Mapping[str, Any], target: str) -> Send:
    notes: list[str] = []
    to = _addresses(p.get("to"))
    if not to and target:
        to = _addresses(_recipient(target))
        notes.append("To is the authorized target")
    body = p.get("body")
    if body is None:
        body = p.get("text")
    if body is None and p.get("html") is not None:
        body = p.get("html")
        notes.append("the body is HTML, shown as its source")
    headers = _mapping(p.get("headers")) or {}
    return Send(
        target=target,
        to=to,
        cc=_addresses(p.get("cc")),
        bcc=_addresses(p.get("bcc")),
        sender=str(p.get("from") or p.get("sender") or ""),
        subject=str(p.get("subject") or ""),
        body="" if body is None else str(body),
        headers=tuple((str(k), str(v)) for k, v in headers.items()),
        attachments=tuple(_attachment(a) for a in p.get("attachments") or ()),
        notes=tuple(notes),
    )


def _attachment(a: Any) -> str:
    if isinstance(a, Mapping):
        name = a.get("name") or a.get("filename") or "(unnamed)"
        extra = ", ".join(str(a[k]) for k in ("media_type", "digest") if a.get(k))
        return f"{name} ({extra})" if extra else str(name)
    return str(a)


_ADDRESS_HEADERS = {"to", "cc", "bcc", "from", "subject"}


def _parsed(data: bytes, target: str, digest: str | None, size: int, *, cut: bool) -> Send:
    """An RFC 822 message (or plain text, which is all body) as its fields."""
    msg = BytesParser(policy=email_policy.default).parsebytes(data)
    notes: list[str] = []
    if not isinstance(msg, EmailMessage) or not msg.keys():
        body = data.decode("utf-8", "replace")
        to = _addresses(_recipient(target)) if target else ()
        notes.append("the message has no headers; To is the authorized target")
        return Send(target, to, body=body, digest=digest, size=size, notes=tuple(notes))
    to = _addresses(msg.get_all("to", []))
    if not to and target:
        to = _addresses(_recipient(target))
        notes.append("To is the authorized target")
    body, html = _body(msg)
    if html:
        notes.append("the body is HTML, shown as its source")
    if cut:
        notes.append(f"the first {SHOW_CAP // 1024:,} KiB of the message are shown")
    return Send(
        target=target,
        to=to,
        cc=_addresses(msg.get_all("cc", [])),
        bcc=_addresses(msg.get_all("bcc", [])),
        sender=str(msg.get("from") or ""),
        subject=str(msg.get("subject") or ""),
        body=body,
        headers=tuple(
            (str(k), str(v)) for k, v in msg.items() if k.lower() not in _ADDRESS_HEADERS
        ),
        attachments=tuple(
            f"{p.get_filename() or '(unnamed)'} ({p.get_content_type()})"
            for p in msg.iter_attachments()
        ),
        digest=digest,
        size=size,
        notes=tuple(notes),
    )


def _body(msg: EmailMessage) -> tuple[str, bool]:
    """The text a recipient reads, and whether it is HTML (shown as source)."""
    try:
        part = msg.get_body(preferencelist=("plain", "html"))
        if part is None:
            return "", False
        content = part.get_content()
        return str(content), part.get_content_subtype() == "html"
    except (KeyError, LookupError):
        raw = msg.get_payload(decode=False)
        return (raw if isinstance(raw, str) else ""), False


# --- reading content -------------------------------------------------------------------------


def _read_head(blobs: BlobStore, digest: str, n: int) -> bytes:
    data, _total = read_blob_range(blobs, digest, 0, n)
    return data


def read_blob_range(blobs: BlobStore, digest: str, offset: int, n: int) -> tuple[bytes, int]:
    """`n` bytes of a blob from `offset`, and the blob's whole size: a page of a large
    upload is read without the rest. A missing blob is a BlobProblem."""
    path = blobs.local_file(digest)
    try:
        with open(path, "rb") as f:
            f.seek(offset)
            data = f.read(n)
            total = os.fstat(f.fileno()).st_size
    except FileNotFoundError:
        raise BlobProblem(digest, "missing") from None
    except OSError as exc:
        raise BlobProblem(digest, f"unreadable ({exc.strerror})") from None
    return data, total


@dataclass(frozen=True)
class WriteDiff:
    """A write against the file as it is now: `text` is a unified diff (or a sentence when
    there is none to show); `now` the file's state as just read (None when it could not be);
    `moved`: the file is no longer what it was when the write was planned."""

    text: str
    now: FileState | None
    new_file: bool = False
    unchanged: bool = False
    binary: bool = False
    cut: bool = False
    moved: bool = False
    problem: str | None = None


def write_diff(blobs: BlobStore, change: Write, cap: int = SHOW_CAP) -> WriteDiff:
    """On a worker: `change` as a diff against its target as it is now (each side read up to
    `cap` bytes; the file is hashed whole, so `now` is exact)."""
    try:
        intended, _size = read_blob_range(blobs, change.digest, 0, cap + 1)
    except BlobProblem as exc:
        return WriteDiff("", None, problem=f"the intended content cannot be read: {exc}")
    target = Path(change.target)
    current: bytes | None = None
    now: FileState | None
    try:
        with open(target, "rb") as f:
            current = f.read(cap + 1)
        digest, size = hash_file(target)
        now = FileState(exists=True, digest=digest, size=size)
    except FileNotFoundError:
        now = FileState(exists=False)
    except OSError as exc:
        return WriteDiff(
            "", None, problem=f"the file as it is now cannot be read: {exc.strerror or exc}"
        )
    moved = change.before is not None and not same_state(_rule(change.before), _rule(now))
    cut = len(intended) > cap or (current is not None and len(current) > cap)
    if now.exists and now.digest == change.digest:
        return WriteDiff(
            "(the file already holds exactly this content)", now, unchanged=True, moved=moved
        )
    try:
        new = intended[:cap].decode("utf-8").splitlines(keepends=True)
        old = [] if current is None else current[:cap].decode("utf-8").splitlines(keepends=True)
    except UnicodeDecodeError:
        return WriteDiff(
            "(binary content: no text diff)",
            now,
            new_file=not now.exists,
            binary=True,
            moved=moved,
        )
    name = os.path.basename(change.target)
    lines = difflib.unified_diff(
        old,
        new,
        f"{name} as it is now" if now.exists else "(no file there now)",
        f"{name} as it will be",
    )
    text = "".join(x if x.endswith("\n") else x + "\n" for x in lines)
    if cut:
        text += f"\n(the first {cap // 1024:,} KiB of each side compared)\n"
    return WriteDiff(text, now, new_file=not now.exists, cut=cut, moved=moved)


def _rule(s: FileState) -> State:
    return State(s.exists, s.digest)
