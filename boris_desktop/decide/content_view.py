"""The thing decided, as the reviewer will recognise it: what an approval authorizes.

An email shows its headers and body; a file write shows a diff against the file as it is
now; an upload (or any other content) shows its text, highlighted, or, when binary, its
size and digest with a hex peek. The content is the intended blob the store holds; it is
read a page at a time (PAGE bytes) on a worker, so a 20 MB upload never blocks the window,
and the digest stays beside it. `content_page` is plain Python (no Qt): the workers run it.
"""

from __future__ import annotations

import itertools
import os
from typing import Any

from PySide6.QtWidgets import QHBoxLayout, QPushButton, QVBoxLayout, QWidget

from . import text as t
from .host import Host
from .preview import HEX_CAP, _hexdump, _looks_binary
from .widgets import TextPane, plain_label

PAGE = 64 * 1024
DIFF_CAP = 1024 * 1024
_serial = itertools.count(1)


def subject_of(effect_or_payload: dict[str, Any], kind: str | None = None) -> dict[str, Any]:
    """What an approval or effect authorizes: kind, target and the intended content's
    identity ({"exists", "digest", "size"}), from its prepared payload or its intent."""
    if "intent" in effect_or_payload:  # an effect
        intent = effect_or_payload["intent"] or {}
        return {
            "kind": effect_or_payload.get("kind") or kind,
            "target": effect_or_payload.get("target", ""),
            "intended": intent.get("intended") or {},
        }
    p = effect_or_payload
    return {
        "kind": p.get("kind") or kind,
        "target": p.get("target", ""),
        "intended": p.get("intended") or {},
    }


def is_email(subject: dict[str, Any]) -> bool:
    target = str(subject.get("target", "")).lower()
    return subject.get("kind") in {"send", "email", "mail"} or target.startswith(
        ("mailto:", "smtp://", "smtps://")
    )


def _recipient(target: str) -> str:
    if target.lower().startswith("mailto:"):
        return target[len("mailto:") :].split("?", 1)[0]
    return target.rstrip("/").rsplit("/", 1)[-1]


def _read_range(store: Any, digest: str, offset: int, n: int) -> tuple[bytes, int]:
    path = store.blobs.path_of(digest)
    with open(path, "rb") as f:
        f.seek(offset)
        data = f.read(n)
        total = os.fstat(f.fileno()).st_size
    return data, total


def _email(data: bytes, target: str) -> str:
    from email import policy
    from email.parser import BytesParser

    msg = BytesParser(policy=policy.default).parsebytes(data)
    lines = []
    if "To" not in msg:
        lines.append(f"To: {_recipient(target)}    (the authorized target)")
    for name, value in msg.items():
        lines.append(f"{name}: {value}")
    try:
        body_part = msg.get_body(preferencelist=("plain", "html"))
        body = body_part.get_content() if body_part is not None else ""
    except (KeyError, LookupError):
        body = msg.get_payload(decode=False) or ""
    attachments = [
        f"Attachment: {p.get_filename() or '(unnamed)'} ({p.get_content_type()})"
        for p in msg.iter_attachments()
    ]
    return "\n".join(lines + attachments) + "\n\n" + str(body)


def _file_diff(intended: bytes, current: bytes | None, target: str, cut: bool) -> str:
    import difflib

    from .runtime import paused

    name = os.path.basename(target)
    new = intended.decode("utf-8").splitlines(keepends=True)
    old = [] if current is None else current.decode("utf-8").splitlines(keepends=True)
    with paused():  # difflib makes a container per line: see runtime
        lines = list(
            difflib.unified_diff(
                old,
                new,
                f"{name} as it is now" if current is not None else "(no file there now)",
                f"{name} as it will be",
            )
        )
    text = "".join(x if x.endswith("\n") else x + "\n" for x in lines)
    if cut:
        text += f"\n(the first {DIFF_CAP // 1024:,} KiB of each side compared)\n"
    return text or "(the file already holds exactly this content)"


def content_page(store: Any, subject: dict[str, Any], page: int = 0) -> dict[str, Any]:
    """On a worker: one page of the content `subject` authorizes, shown as the reviewer
    will recognise it. {"title", "text", "media_type", "name", "note", "page", "pages",
    "digest", "size", "problem"}."""
    from store.rules import is_destination

    intended = subject.get("intended") or {}
    target = str(subject.get("target", ""))
    digest = intended.get("digest")
    out: dict[str, Any] = {
        "digest": digest,
        "size": intended.get("size"),
        "page": 0,
        "pages": 1,
        "media_type": None,
        "name": os.path.basename(target) or None,
        "note": "",
        "problem": None,
    }
    if not intended.get("exists", True) or not digest:
        out.update(title=f"Remove {target}", text="(the target is to be removed: no content)")
        return out
    try:
        head, total = _read_range(store, digest, page * PAGE, PAGE)
    except OSError as exc:
        out.update(
            title=f"Content for {target}",
            text="",
            problem=f"the intended content {digest} cannot be read: {exc.strerror or exc}",
        )
        return out
    pages = max(1, -(-total // PAGE))
    out.update(size=total, page=min(page, pages - 1), pages=pages)
    binary = _looks_binary(head)
    if is_email(subject) and not binary and total <= DIFF_CAP:
        data, _ = _read_range(store, digest, 0, total)
        out.update(
            title=f"Email to {_recipient(target)}",
            text=_email(data, target),
            media_type=None,
            name=None,
            pages=1,
            page=0,
            note=f"the whole message, {t.size(total)}",
        )
        return out
    if not is_destination(target) and not binary:
        data, _ = _read_range(store, digest, 0, DIFF_CAP)
        current: bytes | None = None
        try:
            with open(target, "rb") as f:
                current = f.read(DIFF_CAP + 1)
        except FileNotFoundError:
            current = None
        except OSError as exc:
            out["problem"] = f"the file as it is now cannot be read: {exc.strerror}"
        cut = total > DIFF_CAP or (current is not None and len(current) > DIFF_CAP)
        try:
            text = _file_diff(data, None if current is None else current[:DIFF_CAP], target, cut)
        except UnicodeDecodeError:
            text = "(binary content: no text diff)"
        from .preview import capped

        text, more = capped(text)
        out.update(
            title=f"Write {target}: the change against the file as it is now",
            text=text,
            media_type="diff",
            name=None,
            pages=1,
            page=0,
            note="a new file" if current is None else f"diff of {t.size(total)}{more}",
        )
        return out
    if binary:
        out.update(
            title=f"Upload to {target}" if is_destination(target) else f"Write {target}",
            text=_hexdump(head[:HEX_CAP]),
            media_type=None,
            name=None,
            pages=1,
            page=0,
            note=f"binary content, {t.size(total)} ({total:,} bytes): the first "
            f"{min(total, HEX_CAP):,} bytes as hex",
        )
        return out
    # A page is PAGE bytes of the blob: a character cut at its edge shows as a replacement.
    text = head.decode("utf-8", "replace")
    out.update(
        title=f"Upload to {target}" if is_destination(target) else f"Content for {target}",
        text=text,
        note=(
            f"the whole content, {t.size(total)}"
            if pages == 1
            else f"page {out['page'] + 1} of {pages} ({PAGE // 1024} KiB each, {t.size(total)})"
        ),
    )
    return out


class ContentView(QWidget):
    """The content an approval authorizes, with its digest beside it, paged on a worker."""

    def __init__(self, host: Host, name: str = "Content you are deciding") -> None:
        super().__init__()
        self.host = host
        self._kind = f"content:{next(_serial)}"
        self.subject: dict[str, Any] | None = None
        self.result: dict[str, Any] | None = None
        self.title = plain_label("Reading the content…", name="What it authorizes")
        font = self.title.font()
        font.setBold(True)
        self.title.setFont(font)
        self.digest = plain_label("", wrap=False, name="Digest")
        self.pane = TextPane(host.loader, name)
        self.note = plain_label("", name="How much is shown")
        self.prev = QPushButton("◀ Previous page")
        self.prev.setAccessibleName("Previous page")
        self.next = QPushButton("Next page ▶")
        self.next.setAccessibleName("Next page")
        for b in (self.prev, self.next):
            b.setAutoDefault(False)
            b.setDefault(False)
        self._page: int = 0
        self.prev.clicked.connect(lambda: self.show_page(self._page - 1))
        self.next.clicked.connect(lambda: self.show_page(self._page + 1))
        top = QHBoxLayout()
        top.addWidget(self.title, 1)
        top.addWidget(self.digest)
        bottom = QHBoxLayout()
        bottom.addWidget(self.note, 1)
        bottom.addWidget(self.prev)
        bottom.addWidget(self.next)
        col = QVBoxLayout(self)
        col.setContentsMargins(0, 0, 0, 0)
        col.addLayout(top)
        col.addWidget(self.pane, 1)
        col.addLayout(bottom)
        self.prev.hide()
        self.next.hide()

    def show_subject(self, subject: dict[str, Any]) -> None:
        """Show what `subject` authorizes (read again if it changed)."""
        if subject == self.subject and self.result is not None:
            return
        self.subject = subject
        digest = (subject.get("intended") or {}).get("digest")
        self.digest.setText(f"Digest {t.digest(digest, 16)}")
        self.digest.setToolTip(digest or "")
        self.show_page(0)

    def loading(self) -> bool:
        return self.host.loader.busy(self._kind) or self.pane.loading()

    def show_page(self, page: int) -> None:
        store, subject = self.host.store, self.subject
        if store is None or subject is None:
            return
        self._page = max(page, 0)
        self.host.loader.submit(
            self._kind,
            lambda: content_page(store, subject, self._page),
            self._shown,
            lambda err: self._shown({"title": "Content", "text": "", "problem": err}),
        )

    def _shown(self, r: dict[str, Any]) -> None:
        self.result = r
        self.title.setText(r.get("title") or "Content")
        if r.get("problem"):
            self.note.setText(f"⚠ {str(r['problem']).splitlines()[0]}")
        else:
            self.note.setText(r.get("note") or "")
        self.pane.show_text(r.get("text") or "", r.get("media_type"), r.get("name"), keep=False)
        pages = int(r.get("pages") or 1)
        self._page = int(r.get("page") or 0)
        for b in (self.prev, self.next):
            b.setVisible(pages > 1)
        self.prev.setEnabled(self._page > 0)
        self.next.setEnabled(self._page + 1 < pages)
