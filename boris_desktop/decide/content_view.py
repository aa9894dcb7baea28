"""The change decided, as the reviewer will recognise it: the store's `Change`, rendered.

What a request changes is the store's word (`store.api.Send`, `Write`, `Replace`, `Delete`,
`Upload`, `Opaque`); this module only shows the variant it is given. A message shows its
recipients, subject and body as plain text (never rendered HTML); a write shows a diff
against the file as it is now (`store.api.write_diff`, on a worker); an upload or a
replacement shows its content, highlighted, or, when binary, its size and digest with a hex
peek, read a page at a time (PAGE bytes) on a worker so that a 20 MB upload never blocks the
window; a removal says so in words; anything the store cannot classify shows its JSON. The
digest stays beside the content. `render` is plain Python (no Qt): the workers run it. A write's
rendering carries the file's state (its hash) as it was read for the diff, so that whoever
shows it can tell when the file has moved on since (`Shown.target_state`, `file_state`).
"""

from __future__ import annotations

import hashlib
import itertools
import os
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Protocol

from PySide6.QtCore import Signal
from PySide6.QtWidgets import QHBoxLayout, QPushButton, QVBoxLayout, QWidget

from boris_desktop.host import Host
from boris_desktop.runtime.preview import HEX_CAP, _hexdump, _looks_binary, capped
from boris_desktop.ui import text as t
from boris_desktop.ui.widgets import TextPane, elided_label, plain_label
from store.api import (
    BlobProblem,
    Change,
    Delete,
    Opaque,
    Replace,
    ScopeViolation,
    Send,
    Upload,
    Write,
    is_store_file,
    read_blob_range,
    write_diff,
)

if TYPE_CHECKING:
    from store.api import FileState

PAGE = 64 * 1024
#: How much of each side the reconcile dialog's diff compares (decide/reconcile.py).
DIFF_CAP = 1024 * 1024
CHUNK = 1 << 20
_serial = itertools.count(1)


@dataclass(frozen=True)
class Shown:
    """One rendering of a change: what the view puts on screen."""

    title: str
    text: str
    media_type: str | None = None
    name: str | None = None
    note: str = ""
    page: int = 0
    pages: int = 1
    digest: str | None = None
    problem: str | None = None
    # A write's target as it was when the diff was read (`file_state`).
    target_state: FileState | None = None


class Seen(Protocol):
    """A target's state as something saw it: the store's `FileState`, an observation."""

    @property
    def exists(self) -> bool: ...
    @property
    def digest(self) -> str | None: ...


def file_state(path: str, report: Callable[[int, int], None] | None = None) -> FileState:
    """The target's state now, in the store's own type: exists, sha256 digest, size
    (streamed). The database of an open store is refused (ScopeViolation), as the store
    refuses it in a task's scope: only a record written before that rule names one, and
    reading it would drop SQLite's locks."""
    from store.api import FileState

    if is_store_file(path):
        raise ScopeViolation(f"{path} is the store's own database: it is never read as a target")
    try:
        size = os.stat(path).st_size
    except FileNotFoundError:
        return FileState(exists=False)
    h = hashlib.sha256()
    done = 0
    with open(path, "rb") as f:
        while chunk := f.read(CHUNK):
            h.update(chunk)
            done += len(chunk)
            if report is not None:
                report(done // 1024, max(size // 1024, 1))
    return FileState(exists=True, digest="sha256:" + h.hexdigest(), size=done)


def same(a: Seen | None, b: Seen | None) -> bool:
    """Whether two states of a target are the same, by the store's rule (`api.same_state`)."""
    from store import api

    if a is None or b is None:
        return False
    return api.same_state(api.State(a.exists, a.digest), api.State(b.exists, b.digest))


def _file_diff(intended: bytes, current: bytes | None, target: str, cut: bool) -> str:
    """A diff of two texts, for the reconcile dialog (which compares what it observed)."""
    import difflib

    from boris_desktop.runtime.interpreter import paused

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


# --- rendering, on a worker ------------------------------------------------------------------


def render(store: Any, change: Change, page: int = 0) -> Shown:
    """On a worker: `change` as the reviewer will recognise it (one page of content)."""
    match change:
        case Send():
            return _message(change)
        case Write():
            return _write(store, change, page)
        case Replace():
            before = change.before.digest if change.before is not None else None
            shown = _content(store, f"Replace the content at {change.target}", change, page)
            was = f"it holds {t.digest(before, 16)} now (as the writer saw it)" if before else ""
            return replace(shown, note="; ".join(x for x in (shown.note, was) if x))
        case Upload():
            return _content(store, f"Upload to {change.target}", change, page)
        case Delete():
            return _removal(change)
        case Opaque():
            return Shown(
                title="The prepared object, as the agent wrote it (JSON)",
                text=change.payload_json,
                media_type="json",
                note=f"Not a message, a write, an upload or a removal the store can read: "
                f"{change.why}. Approve only what the JSON says.",
            )


def _line(name: str, values: tuple[str, ...]) -> list[str]:
    return [f"{name}: {', '.join(values)}"] if values else []


def _message(m: Send) -> Shown:
    to_note = "    (the authorized target)" if any("To is" in n for n in m.notes) else ""
    head = [f"To: {', '.join(m.to) or '(no recipient)'}{to_note}"]
    head += _line("Cc", m.cc) + _line("Bcc", m.bcc)
    if m.sender:
        head.append(f"From: {m.sender}")
    head.append(f"Subject: {m.subject or '(no subject)'}")
    head += [f"{k}: {v}" for k, v in m.headers]
    head += [f"Attachment: {a}" for a in m.attachments]
    whole = (
        f"the whole message, {t.size(m.size)}"
        if m.digest is not None
        else "the whole message, from the prepared object's fields (its digest is above)"
    )
    return Shown(
        title=f"Email to {', '.join(m.to) or '(no recipient)'}",
        text="\n".join(head) + "\n\n" + m.body,
        note="; ".join((whole, *m.notes)),
        digest=m.digest,
        problem=m.problem,
    )


def _removal(d: Delete) -> Shown:
    lines = [
        f"Approving this removes {d.target}.",
        "",
        "Nothing is written in its place: the prepared object says the target",
        "is not to exist afterwards (intended: exists = false).",
    ]
    if d.before is not None and d.before.exists:
        lines += [
            "",
            "When this was planned it held",
            f"{d.before.digest} ({t.size(d.before.size)}).",
        ]
    return Shown(title=f"Remove {d.target}", text="\n".join(lines), note="a removal")


def _write(store: Any, w: Write, page: int) -> Shown:
    from boris_desktop.runtime.interpreter import paused

    title = f"Write {w.target}: the change against the file as it is now"
    try:  # read before the diff: a change between the two is seen as a change after it
        state: FileState | None = file_state(w.target)
    except (OSError, ScopeViolation):
        state = None
    with paused():  # difflib makes a container per line: see runtime
        diff = write_diff(store.blobs, w)
    if diff.binary:
        return replace(_content(store, f"Write {w.target}", w, page), target_state=state)
    if diff.problem is not None:
        return Shown(
            title=title, text="", digest=w.digest, problem=diff.problem, target_state=state
        )
    text, more = capped(diff.text)
    note = "a new file" if diff.new_file else f"diff of {t.size(w.size)}{more}"
    if diff.moved:
        note += "; the file changed after this write was planned"
    return Shown(
        title=title, text=text, media_type="diff", note=note, digest=w.digest, target_state=state
    )


def _content(store: Any, title: str, c: Write | Replace | Upload, page: int) -> Shown:
    name = os.path.basename(c.target.rstrip("/")) or None
    try:
        head, total = read_blob_range(store.blobs, c.digest, page * PAGE, PAGE)
    except BlobProblem as exc:
        return Shown(
            title=title, text="", digest=c.digest, problem=f"the content cannot be read: {exc}"
        )
    pages = max(1, -(-total // PAGE))
    if _looks_binary(head):
        return Shown(
            title=title,
            text=_hexdump(head[:HEX_CAP]),
            note=f"binary content, {t.size(total)} ({total:,} bytes): the first "
            f"{min(total, HEX_CAP):,} bytes as hex",
            digest=c.digest,
        )
    # A page is PAGE bytes of the blob: a character cut at its edge shows as a replacement.
    page = min(page, pages - 1)
    return Shown(
        title=title,
        text=head.decode("utf-8", "replace"),
        media_type=c.media_type,
        name=name,
        note=(
            f"the whole content, {t.size(total)}"
            if pages == 1
            else f"page {page + 1} of {pages} ({PAGE // 1024} KiB each, {t.size(total)})"
        ),
        page=page,
        pages=pages,
        digest=c.digest,
    )


# --- the view --------------------------------------------------------------------------------


class ContentView(QWidget):
    """The change a request makes, with its digest beside it, paged on a worker."""

    #: A rendering is on screen (the first, a page turned, or one read again).
    shown = Signal()

    def __init__(self, host: Host, name: str = "Content you are deciding") -> None:
        super().__init__()
        self.host = host
        self._kind = f"content:{next(_serial)}"
        self.change: Change | None = None
        self.result: Shown | None = None
        # One line, elided in the middle: the title names the target, whose length must not
        # set the dialog's width (the whole title is in its tooltip).
        self.title = elided_label("Reading the content…", name="What it authorizes", bold=True)
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

    def show_change(self, change: Change) -> None:
        """Show `change` (read again only if it is a different change)."""
        if change == self.change and self.result is not None:
            return
        self.change = change
        self.show_page(0)

    def loading(self) -> bool:
        return self.host.loader.busy(self._kind) or self.pane.loading()

    def refresh(self) -> None:
        """Read the change again as it is now (a write's file moved on): the same page."""
        self.show_page(self._page)

    def show_page(self, page: int) -> None:
        store, change = self.host.store, self.change
        if store is None or change is None:
            return
        self._page = max(page, 0)
        wanted = self._page
        self.host.loader.submit(
            self._kind,
            lambda: render(store, change, wanted),
            self._shown,
            lambda err: self._shown(Shown("Content", "", problem=t.failure(err))),
        )

    def _shown(self, r: Shown) -> None:
        self.result = r
        self.title.setText(r.title)
        self.digest.setVisible(r.digest is not None)
        self.digest.setText(f"Digest {t.digest(r.digest, 16)}")
        self.digest.setToolTip(r.digest or "")
        self.note.setText(f"⚠ {r.problem.splitlines()[0]}" if r.problem else r.note)
        self.pane.show_text(r.text, r.media_type, r.name, keep=False)
        self._page = r.page
        for b in (self.prev, self.next):
            b.setVisible(r.pages > 1)
        self.prev.setEnabled(r.page > 0)
        self.next.setEnabled(r.page + 1 < r.pages)
        self.shown.emit()
