"""Syntax colours applied by a QSyntaxHighlighter from spans that `lexing` computed.

The highlighter only maps spans to formats: Pygments runs in another process (see
`lexing`). Text is never turned into HTML.
"""

from __future__ import annotations

from PySide6.QtCore import QTimer
from PySide6.QtGui import (
    QColor,
    QFont,
    QPalette,
    QSyntaxHighlighter,
    QTextCharFormat,
    QTextDocument,
)

from boris_desktop.runtime.lexing import Spans


def _formats(palette: QPalette) -> dict[str, QTextCharFormat]:
    dark = palette.color(QPalette.ColorRole.Base).lightness() < 128
    colours = {
        "key": ("#1f5fa8", "#8cc4ff"),
        "name": ("#6a3fa0", "#d2a8ff"),
        "builtin": ("#005c66", "#7ee0e8"),
        "keyword": ("#8a1f6c", "#ff9ad5"),
        "string": ("#2a6b1f", "#a5e07a"),
        "number": ("#9a4a00", "#ffb86b"),
        "comment": ("#6b6b6b", "#9a9a9a"),
        "heading": ("#1f5fa8", "#8cc4ff"),
        "inserted": ("#1d6b2d", "#7fe08f"),
        "deleted": ("#a31d1d", "#ff8a80"),
        "strong": (None, None),
        "emph": (None, None),
    }
    out = {}
    for style, (light, darkc) in colours.items():
        f = QTextCharFormat()
        colour = darkc if dark else light
        if colour:
            f.setForeground(QColor(colour))
        if style in {"heading", "strong"}:
            f.setFontWeight(QFont.Weight.Bold)
        if style == "emph":
            f.setFontItalic(True)
        if style == "comment":
            f.setFontItalic(True)
        out[style] = f
    return out


class SpanHighlighter(QSyntaxHighlighter):
    """Applies precomputed spans; does no lexing itself.

    New spans are applied a few hundred lines per turn of the event loop, top first (where a
    preview opens): `rehighlight()` over a 200,000-character preview held the GUI thread for
    about 45 ms in one go."""

    #: Lines re-formatted per turn of the event loop: about 3 ms here.
    CHUNK = 150

    def __init__(self, document: QTextDocument, palette: QPalette) -> None:
        super().__init__(document)
        self.spans: Spans = {}
        self._formats = _formats(palette)
        self._todo: list[int] = []
        self._next = 0
        self._timer = QTimer(self)
        self._timer.setInterval(0)
        self._timer.timeout.connect(self._apply_some)

    def set_spans(self, spans: Spans) -> None:
        """Colour the document's lines from `spans`; its lines must carry no earlier spans
        (the text was just set, or `reset` was called)."""
        self.spans = spans
        self._todo = sorted(spans)
        self._next = 0
        self._apply_some()
        if self._next < len(self._todo):
            self._timer.start()

    def pending(self) -> bool:
        """Whether some lines still wait for their colours."""
        return self._next < len(self._todo)

    def reset(self) -> None:
        """Forget the spans before the document's text is replaced."""
        self._timer.stop()
        self._todo, self._next = [], 0
        self.spans = {}

    def clear_spans(self) -> None:
        if self.spans:
            self.reset()
            self.rehighlight()

    def _apply_some(self) -> None:
        doc = self.document()
        end = min(len(self._todo), self._next + self.CHUNK)
        for number in self._todo[self._next : end]:
            block = doc.findBlockByNumber(number)
            if block.isValid():
                self.rehighlightBlock(block)
        self._next = end
        if end >= len(self._todo):
            self._timer.stop()

    def highlightBlock(self, text: str) -> None:
        for col, n, style in self.spans.get(self.currentBlock().blockNumber(), ()):
            fmt = self._formats.get(style)
            if fmt is not None:
                self.setFormat(col, n, fmt)
