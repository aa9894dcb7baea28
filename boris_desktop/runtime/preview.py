"""Reading blobs for preview and diff: worker-side functions, bounded in size.

A large blob is shown in part (the first PREVIEW_CAP bytes), and so is a long diff; a binary
blob as a hex dump of its start. The cap is what the GUI thread lays out without a pause:
512 KiB of text in a QPlainTextEdit took about 60 ms here (TextPane now feeds it in pieces).
A diff compares whole lines from the first DIFF_CAP bytes of each version: difflib on 2 MiB
a side took about a second of a worker's time. Nothing here touches Qt.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from boris_desktop.runtime.keyed import Keyed

PREVIEW_CAP = 256 * 1024
DIFF_CAP = 1024 * 1024
HEX_CAP = 4096


class BlobVersion(Protocol):
    """A version of a file whose content the store holds (store.api.ArtifactVersion)."""

    @property
    def digest(self) -> str: ...
    @property
    def version(self) -> int: ...


@dataclass(frozen=True)
class Preview(Keyed):
    """What a pane shows of a blob or of a diff: its text (in part: `note` says which part)
    and how to highlight it, or why it cannot be shown (`problem`, the text then empty)."""

    text: str
    media_type: str | None = None  # "diff" for a diff; None: no highlighting (hex, binary)
    name: str | None = None  # the file's name, which picks a highlighter
    note: str = ""
    problem: str | None = None


def _read_head(store: Any, digest: str, cap: int) -> tuple[bytes, int]:
    path = store.blobs.path_of(digest)
    with open(path, "rb") as f:
        data = f.read(cap + 1)
        total = path.stat().st_size
    return data, total


def _looks_binary(data: bytes) -> bool:
    return b"\x00" in data[:8192]


def _hexdump(data: bytes) -> str:
    lines = []
    for off in range(0, len(data), 16):
        chunk = data[off : off + 16]
        hexes = " ".join(f"{b:02x}" for b in chunk)
        text = "".join(chr(b) if 32 <= b < 127 else "." for b in chunk)
        lines.append(f"{off:08x}  {hexes:<47}  {text}")
    return "\n".join(lines)


def preview(store: Any, digest: str, media_type: str | None, name: str | None) -> Preview:
    """The start of the blob, decoded as text (or a hex dump of a binary one's)."""
    from boris_desktop.runtime.lexing import normalize

    try:
        data, total = _read_head(store, digest, PREVIEW_CAP)
    except FileNotFoundError:
        return Preview("", problem=f"the retained copy of {digest} is missing")
    except OSError as exc:
        why = f"the retained copy of {digest} is unreadable: {exc.strerror}"
        return Preview("", problem=why)
    if _looks_binary(data):
        shown = min(total, HEX_CAP)
        note = f"binary content, {total:,} bytes: the first {shown:,} as hex"
        return Preview(_hexdump(data[:HEX_CAP]), note=note)
    cut = len(data) > PREVIEW_CAP
    text = normalize(data[:PREVIEW_CAP].decode("utf-8", "replace"))
    note = "the whole content"
    if cut:
        note = f"showing the first {PREVIEW_CAP // 1024} KiB of {total:,} bytes"
    return Preview(text, media_type, name, note)


def diff(store: Any, old: BlobVersion, new: BlobVersion, label: str) -> Preview:
    """A unified diff between two versions of a file."""
    from boris_desktop.runtime.interpreter import paused

    with paused():  # difflib makes a container per line: see runtime
        return _diff(store, old, new, label)


def _diff(store: Any, old: BlobVersion, new: BlobVersion, label: str) -> Preview:
    import difflib

    texts, partial = [], False
    for v in (old, new):
        try:
            data, total = _read_head(store, v.digest, DIFF_CAP)
        except OSError as exc:
            return Preview("", problem=f"v{v.version} cannot be read: {exc}")
        if _looks_binary(data):
            return Preview("", problem=f"v{v.version} is binary: no text diff")
        if total > DIFF_CAP:
            # Whole lines only: a line cut at the cap would show as a change it is not.
            data = data[:DIFF_CAP]
            data = data[: data.rfind(b"\n") + 1 or DIFF_CAP]
            partial = True
        texts.append(data.decode("utf-8", "replace").splitlines(keepends=True))
    lines = list(
        difflib.unified_diff(
            texts[0], texts[1], f"{label} v{old.version}", f"{label} v{new.version}"
        )
    )
    text = "".join(x if x.endswith("\n") else x + "\n" for x in lines)
    text, cut = capped(text)
    note = f"changes from v{old.version} to v{new.version}{cut}"
    if partial:
        note += f" (the first {DIFF_CAP // 1024:,} KiB of each version compared)"
    return Preview(text or "(no difference in content)", "diff", note=note)


def capped(text: str) -> tuple[str, str]:
    """At most PREVIEW_CAP characters of `text`, ending with a whole line, and what to add to
    the note when some was left out."""
    if len(text) <= PREVIEW_CAP:
        return text, ""
    cut = text.rfind("\n", 0, PREVIEW_CAP) + 1 or PREVIEW_CAP
    return text[:cut], f": showing the first {cut:,} of {len(text):,} characters of the diff"
