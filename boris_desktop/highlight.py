"""Syntax colours from Pygments tokens, applied by a QSyntaxHighlighter.

Pygments runs on a worker (`lex`, ~1 MB/s): it returns spans per line in UTF-16 columns,
and the highlighter only maps them to formats. Text is never turned into HTML. Only the
first `HIGHLIGHT_CAP` characters are coloured; the rest stays plain.
"""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import QTimer
from PySide6.QtGui import (
    QColor,
    QFont,
    QPalette,
    QSyntaxHighlighter,
    QTextCharFormat,
    QTextDocument,
)

HIGHLIGHT_CAP = 200_000

Spans = dict[int, list[tuple[int, int, str]]]  # line -> [(utf-16 column, length, style)]

# Pygments token type (by name prefix) -> our style; the longest matching prefix wins.
_STYLES = (
    ("Token.Name.Tag", "key"),
    ("Token.Name.Attribute", "key"),
    ("Token.Name.Function", "name"),
    ("Token.Name.Class", "name"),
    ("Token.Name.Builtin", "builtin"),
    ("Token.Name.Decorator", "builtin"),
    ("Token.Keyword", "keyword"),
    ("Token.Literal.String", "string"),
    ("Token.Literal.Number", "number"),
    ("Token.Comment", "comment"),
    ("Token.Generic.Heading", "heading"),
    ("Token.Generic.Subheading", "heading"),
    ("Token.Generic.Inserted", "inserted"),
    ("Token.Generic.Deleted", "deleted"),
    ("Token.Generic.Strong", "strong"),
    ("Token.Generic.Emph", "emph"),
    ("Token.Generic.Prompt", "comment"),
)


def normalize(text: str) -> str:
    """Line ends as QPlainTextEdit splits blocks, so line numbers agree with blocks."""
    return text.replace("\r\n", "\n").replace("\r", "\n").replace("\u2029", "\n")


def _lexer(media_type: str | None, name: str | None, text: str) -> Any:
    from pygments.lexers import TextLexer, get_lexer_for_filename, get_lexer_for_mimetype
    from pygments.util import ClassNotFound

    opts = {"stripnl": False, "ensurenl": False, "stripall": False}
    aliases = {
        "diff": "diff",
        "json": "json",
        "markdown": "markdown",
        "text/markdown": "markdown",
        "text/x-markdown": "markdown",
        "application/json": "json",
    }
    if media_type in aliases:
        from pygments.lexers import get_lexer_by_name

        return get_lexer_by_name(aliases[media_type], **opts)
    for finder, arg in ((get_lexer_for_mimetype, media_type), (get_lexer_for_filename, name)):
        if arg:
            try:
                return finder(arg, **opts)
            except ClassNotFound:
                pass
    if media_type and media_type.endswith("+json"):
        from pygments.lexers import JsonLexer

        return JsonLexer(**opts)
    return TextLexer(**opts)


def _style_of(ttype: Any, cache: dict[Any, str | None]) -> str | None:
    if ttype not in cache:
        name = str(ttype)
        best = None
        for prefix, style in _STYLES:
            if (name == prefix or name.startswith(prefix + ".")) and (
                best is None or len(prefix) > len(best[0])
            ):
                best = (prefix, style)
        cache[ttype] = best[1] if best else None
    return cache[ttype]


def lex(text: str, media_type: str | None = None, name: str | None = None) -> Spans:
    """Spans for the first HIGHLIGHT_CAP characters of `text` (already normalized)."""
    from .runtime import paused

    with paused():  # a tuple per token: see runtime
        return _lex(text, media_type, name)


def _lex(text: str, media_type: str | None, name: str | None) -> Spans:
    head = text[:HIGHLIGHT_CAP]
    lexer = _lexer(media_type, name, head)
    spans: Spans = {}
    cache: dict[Any, str | None] = {}
    line, col16 = 0, 0
    for ttype, value in lexer.get_tokens(head):
        style = _style_of(ttype, cache)
        parts = value.split("\n")
        for i, part in enumerate(parts):
            if i:
                line, col16 = line + 1, 0
            n = len(part) if part.isascii() else len(part.encode("utf-16-le")) // 2
            if style and n:
                spans.setdefault(line, []).append((col16, n, style))
            col16 += n
    return spans


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
