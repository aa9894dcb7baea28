"""Small building blocks: plain-text labels (one elided in the middle for a path, a URL, a
digest), a read-only text pane highlighted off-thread."""

from __future__ import annotations

import json
from typing import Any

from PySide6.QtCore import QEvent, QSize, Qt, QTimer
from PySide6.QtGui import (
    QClipboard,
    QContextMenuEvent,
    QFontDatabase,
    QGuiApplication,
    QKeyEvent,
    QKeySequence,
    QMouseEvent,
    QPalette,
    QResizeEvent,
    QTextCursor,
)
from PySide6.QtWidgets import QFrame, QLabel, QMenu, QPlainTextEdit, QSizePolicy, QWidget

from boris_desktop.runtime.lexing import lex, normalize
from boris_desktop.runtime.loader import Loader
from boris_desktop.ui.highlight import SpanHighlighter
from boris_desktop.ui.text import tip


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


ELLIPSIS = "\u2026"


class ElidedLabel(QLabel):
    """One line that may be long and unbroken (a path, a URL, a digest, an id), elided in the
    middle to the width the layout gives it. Its size never depends on the text's length: a
    label that named a path whole made the Reconcile dialog 1,149 px wide under a non-root
    user's pytest temp dir, past a 1024-wide screen.

    The whole text is its `text()`, its tooltip and its accessible description; it stays
    selectable, and a selection that takes in the elision copies the whole text (Ctrl+C, the
    context menu, the X11 selection), as does the menu's "Copy the whole text"."""

    #: It asks for no more than this many characters' width, and needs only MIN_CHARS'.
    HINT_CHARS = 110
    MIN_CHARS = 12

    def __init__(self, text: str = "", *, name: str = "") -> None:
        super().__init__()
        self.setTextFormat(Qt.TextFormat.PlainText)
        self.setOpenExternalLinks(False)
        self.setWordWrap(False)
        self.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.setSizePolicy(QSizePolicy.Policy.Preferred, QSizePolicy.Policy.Fixed)
        if name:
            self.setAccessibleName(name)
        self._whole = ""
        self._line = ""
        self.setText(text)

    def setText(self, text: str, /, tooltip: str | None = None) -> None:
        """Show `text` (elided to fit); its tooltip is `tooltip`, else the whole text."""
        self._whole = text
        self._line = " ".join(text.splitlines())
        self.setToolTip(tip(text if tooltip is None else tooltip))
        self.setAccessibleDescription(text)
        self._elide()
        self.updateGeometry()

    def text(self) -> str:
        """The whole text, as given (what the label shows may be elided: `shown`)."""
        return self._whole

    def shown(self) -> str:
        return super().text()

    def elided(self) -> bool:
        return self.shown() != self._line

    def _elide(self) -> None:
        width = max(self.contentsRect().width() - 2 * self.margin(), 0)
        line = self._line
        if self.fontMetrics().horizontalAdvance(line) > width:
            line = self.fontMetrics().elidedText(line, Qt.TextElideMode.ElideMiddle, width)
        if line != super().text():
            super().setText(line)

    def _size(self, chars: int) -> QSize:
        fm = self.fontMetrics()
        width = min(fm.horizontalAdvance(self._line), fm.averageCharWidth() * chars)
        m, extra = self.contentsMargins(), 2 * self.margin()
        return QSize(
            width + m.left() + m.right() + extra, fm.height() + m.top() + m.bottom() + extra
        )

    def sizeHint(self) -> QSize:
        return self._size(self.HINT_CHARS)

    def minimumSizeHint(self) -> QSize:
        return self._size(self.MIN_CHARS)

    def resizeEvent(self, event: QResizeEvent) -> None:
        super().resizeEvent(event)
        self._elide()

    def changeEvent(self, event: QEvent) -> None:
        super().changeEvent(event)
        if event.type() == QEvent.Type.FontChange:
            self._elide()
            self.updateGeometry()

    # --- copying the whole text --------------------------------------------------------------

    def selection(self) -> str:
        """What the selection stands for: the whole text where it takes in the elision."""
        chosen = self.selectedText()
        return self._whole if self.elided() and ELLIPSIS in chosen else chosen

    def copy(self, mode: QClipboard.Mode = QClipboard.Mode.Clipboard) -> None:
        if self.hasSelectedText():
            QGuiApplication.clipboard().setText(self.selection(), mode)

    def copy_whole(self) -> None:
        QGuiApplication.clipboard().setText(self._whole)

    def keyPressEvent(self, event: QKeyEvent) -> None:
        if event.matches(QKeySequence.StandardKey.Copy) and self.hasSelectedText():
            self.copy()
            event.accept()
            return
        super().keyPressEvent(event)

    def mouseReleaseEvent(self, event: QMouseEvent) -> None:
        super().mouseReleaseEvent(event)  # Qt puts the selection shown in X11's selection
        if QGuiApplication.clipboard().supportsSelection() and self.hasSelectedText():
            self.copy(QClipboard.Mode.Selection)

    def context_menu(self) -> QMenu:
        menu = QMenu(self)
        copy = menu.addAction("&Copy")
        copy.setEnabled(self.hasSelectedText())
        copy.triggered.connect(lambda: self.copy())
        menu.addAction("Copy the &whole text").triggered.connect(self.copy_whole)
        menu.addAction("Select &All").triggered.connect(
            lambda: self.setSelection(0, len(self.shown()))
        )
        return menu

    def contextMenuEvent(self, event: QContextMenuEvent) -> None:
        menu = self.context_menu()
        menu.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        menu.popup(event.globalPos())


def elided_label(text: str = "", *, name: str = "", bold: bool = False) -> ElidedLabel:
    """A one-line label for a path, a URL, a digest or an id: elided in the middle, never
    wider for a longer text (`ElidedLabel`)."""
    label = ElidedLabel(text, name=name)
    if bold:
        font = label.font()
        font.setBold(True)
        label.setFont(font)
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
    return json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False, default=_as_json)


def _as_json(value: Any) -> Any:
    """A store read model as the JSON it prints (its `to_json`); anything else as text."""
    to_json = getattr(value, "to_json", None)
    return to_json() if callable(to_json) else str(value)


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
