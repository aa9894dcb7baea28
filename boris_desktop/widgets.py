"""Small building blocks: plain-text labels, a read-only text pane highlighted off-thread."""

from __future__ import annotations

import json
from typing import Any

from PySide6.QtCore import Qt
from PySide6.QtGui import QFontDatabase, QPalette
from PySide6.QtWidgets import QFrame, QLabel, QPlainTextEdit, QWidget

from .highlight import SpanHighlighter, lex, normalize
from .loader import Loader


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


class TextPane(QPlainTextEdit):
    """Read-only text; colours arrive later from a worker. Same text twice keeps the scroll."""

    def __init__(self, loader: Loader, accessible_name: str, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.loader = loader
        self.setReadOnly(True)
        self.setAccessibleName(accessible_name)
        self.setLineWrapMode(QPlainTextEdit.LineWrapMode.NoWrap)
        self.setFont(QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont))
        self.document().setDocumentMargin(8)
        self.highlighter = SpanHighlighter(self.document(), self.palette())
        self._kind = f"highlight:{id(self)}"
        self._shown: tuple[str, str | None, str | None] | None = None

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
        self.setPlainText(text)
        if keep:
            self.verticalScrollBar().setValue(scroll[0])
            self.horizontalScrollBar().setValue(scroll[1])
        if media_type is None and name is None:
            self.loader.cancel(self._kind)
            return
        self.loader.submit(self._kind, lambda: lex(text, media_type, name), self._coloured)

    def _coloured(self, spans: Any) -> None:
        self.highlighter.set_spans(spans)
