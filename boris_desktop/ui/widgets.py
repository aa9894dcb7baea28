"""Small building blocks: plain-text labels, a read-only text pane highlighted off-thread."""

from __future__ import annotations

import json
from typing import Any

from PySide6.QtCore import Qt, QTimer
from PySide6.QtGui import QFontDatabase, QPalette, QTextCursor
from PySide6.QtWidgets import QFrame, QLabel, QPlainTextEdit, QWidget

from boris_desktop.runtime.lexing import lex, normalize
from boris_desktop.runtime.loader import Loader
from boris_desktop.ui.highlight import SpanHighlighter


def plain_label(text: str = "", *, wrap: bool = True, name: str = "") -> QLabel:
    """A label that shows task content literally: never rich text, never a link."""
    label = QLabel()
    label.setTextFormat(Qt.TextFormat.PlainText)
    label.setOpenExternalLinks(False)
    label.setWordWrap(wrap)
    label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
    label.setText(text)
    if name:
        label.setAccessibleName(name)
    return label


def is_dark(widget: QWidget) -> bool:
    """Whether the system palette is a dark one (its window colour is dark)."""
    return widget.palette().color(QPalette.ColorRole.Window).lightness() < 128


def error_label(name: str) -> QLabel:
    """A refusal or failure, in a red that reads on the palette in force, and bold so that it
    does not rest on colour alone."""
    label = plain_label(name=name)
    colour = "#ff8a80" if is_dark(label) else "#b00020"
    label.setStyleSheet(f"color: {colour}; font-weight: bold;")
    return label


def notice_banner(name: str) -> QLabel:
    """A boxed warning (e.g. the target changed); amber on light palettes, dark amber on dark."""
    label = plain_label(name=name)
    bg, fg = ("#4a3a00", "#ffe08a") if is_dark(label) else ("#fff3cd", "#5c4400")
    label.setStyleSheet(f"background: {bg}; color: {fg}; padding: 6px;")
    return label


def heading(text: str) -> QLabel:
    label = plain_label(text, wrap=False)
    font = label.font()
    font.setBold(True)
    label.setFont(font)
    return label


def pretty_json(value: Any) -> str:
    return json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False, default=str)


def hline() -> QFrame:
    line = QFrame()
    line.setFrameShape(QFrame.Shape.HLine)
    line.setFrameShadow(QFrame.Shadow.Sunken)
    return line


def _piece(text: str, size: int) -> tuple[str, str]:
    """The first `size` characters of `text` or so, ending with a line, and the rest. A line
    longer than `size` goes in whole: growing one line piece by piece lays it out again
    each time."""
    if len(text) <= size:
        return text, ""
    cut = text.rfind("\n", 0, size) + 1 or text.find("\n", size) + 1 or len(text)
    return text[:cut], text[cut:]


class TextPane(QPlainTextEdit):
    """Read-only text; colours arrive later from a worker. Same text twice keeps the scroll.

    Long text goes in a piece per turn of the event loop: laying out 256 KiB at once held
    the GUI thread for about 30 ms; 16 KiB pieces still stalled a page turn up to 80 ms
    while the lexer ran beside it, 4 KiB pieces (lexing in its own process) 2-3 ms."""

    PIECE = 4 * 1024

    def __init__(self, loader: Loader, accessible_name: str, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.loader = loader
        self.setReadOnly(True)
        self.setUndoRedoEnabled(False)  # nothing to undo, and no copy of every piece kept
        self.setAccessibleName(accessible_name)
        self.setLineWrapMode(QPlainTextEdit.LineWrapMode.NoWrap)
        self.setFont(QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont))
        self.document().setDocumentMargin(8)
        self.highlighter = SpanHighlighter(self.document(), self.palette())
        self._kind = f"highlight:{id(self)}"
        self._shown: tuple[str, str | None, str | None] | None = None
        self._rest = ""
        self._scroll: tuple[int, int] | None = None  # where to be once the rest is in
        self._feeder = QTimer(self)
        self._feeder.setInterval(0)
        self._feeder.timeout.connect(self._feed)

    def show_text(
        self,
        text: str,
        media_type: str | None = None,
        name: str | None = None,
        *,
        keep: bool = True,
    ) -> None:
        """Show `text`; with `keep`, a change of content keeps the scroll position."""
        text = normalize(text)
        if self._shown == (text, media_type, name):
            return
        scroll = (self.verticalScrollBar().value(), self.horizontalScrollBar().value())
        self._shown = (text, media_type, name)
        self.highlighter.reset()
        first, self._rest = _piece(text, self.PIECE)
        self.setPlainText(first)
        self._scroll = scroll if keep else None
        if self._rest:
            self._feeder.start()
        else:
            self._feeder.stop()
            self._restore_scroll()
        if media_type is None and name is None:
            self.loader.cancel(self._kind)
            return
        self.loader.submit(self._kind, lambda: lex(text, media_type, name), self._coloured)

    def loading(self) -> bool:
        """Whether part of the text is still to go in."""
        return bool(self._rest)

    def _feed(self) -> None:
        piece, self._rest = _piece(self._rest, self.PIECE)
        # A cursor of its own: the view's cursor and scroll position stay where they are.
        end = QTextCursor(self.document())
        end.movePosition(QTextCursor.MoveOperation.End)
        end.insertText(piece)
        if not self._rest:
            self._feeder.stop()
            self._restore_scroll()

    def _restore_scroll(self) -> None:
        if self._scroll is not None:
            self.verticalScrollBar().setValue(self._scroll[0])
            self.horizontalScrollBar().setValue(self._scroll[1])
            self._scroll = None

    def _coloured(self, spans: Any) -> None:
        self.highlighter.set_spans(spans)
