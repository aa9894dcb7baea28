"""Pygments tokens as spans per line, off the GUI thread and off its GIL.

Pygments (`lex`, about 0.5 MB/s of Python here) returns spans per line in UTF-16 columns;
the highlighter only maps them to formats. Only the first `HIGHLIGHT_CAP` characters are
coloured; the rest stays plain. No Qt here: this module is what the lexing process imports.

Why a process: a worker thread lexing a 64 KiB page holds the GIL for ~150 ms, and the GUI
thread then waits up to a switch interval each time it calls into Python (every block the
highlighter formats, every model cell), so opening an approval over a 20 MB upload stalled
the window 70-95 ms (benchmarks/bench_dialogs.py). In its own process Pygments runs beside
the GUI on another core and the stall fell to the GUI thread's own work. Where a process
cannot be started (no writable /dev/shm for its queues, say), lexing falls back to the
worker thread, said once in the log. The process ends with the window: at a clean exit the
executor is shut down, and if the window dies without one (SIGKILL) the process sees its
parent gone and exits.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import Any

HIGHLIGHT_CAP = 200_000
#: How often the lexing process looks whether its window is still there.
PARENT_POLL_SECONDS = 0.5

log = logging.getLogger(__name__)

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


_import_lock = threading.Lock()


def _pygments_lexers() -> Any:
    """`pygments.lexers`, its first import under a lock: the module replaces itself with a
    lazy one at the end of its import, and a second thread importing from it meanwhile gets
    "cannot import name 'TextLexer'". Without the lexing process the worker threads lex side
    by side, so two first imports at once happen."""
    with _import_lock:
        import pygments.lexers

        return pygments.lexers


def _lexer(media_type: str | None, name: str | None, text: str) -> Any:
    from pygments.util import ClassNotFound

    lexers = _pygments_lexers()
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
        return lexers.get_lexer_by_name(aliases[media_type], **opts)
    finders = ((lexers.get_lexer_for_mimetype, media_type), (lexers.get_lexer_for_filename, name))
    for finder, arg in finders:
        if arg:
            try:
                return finder(arg, **opts)
            except ClassNotFound:
                pass
    if media_type and media_type.endswith("+json"):
        return lexers.JsonLexer(**opts)
    return lexers.TextLexer(**opts)


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
    """Spans for the first HIGHLIGHT_CAP characters of `text` (already normalized), from
    the lexing process; on the calling thread where there is none."""
    pool = _pool()
    if pool is not None:
        try:
            result: Spans = pool.submit(spans_of, text, media_type, name).result()
            return result
        except (BrokenProcessPool, OSError, RuntimeError):
            _give_up()
    from boris_desktop.runtime.interpreter import paused

    with paused():  # a tuple per token: see runtime
        return spans_of(text, media_type, name)


def warm() -> None:
    """Start the lexing process and its Pygments before the first preview needs them (call
    it from a worker: it waits for the process)."""
    pool = _pool()
    if pool is not None:
        try:
            pool.submit(spans_of, "x = 1\n", None, "warm.py").result()
        except (BrokenProcessPool, OSError, RuntimeError):
            _give_up()


_lock = threading.Lock()
_executor: ProcessPoolExecutor | None = None
_unavailable = False


def _pool() -> ProcessPoolExecutor | None:
    global _executor, _unavailable
    with _lock:
        if _executor is None and not _unavailable:
            import multiprocessing

            try:
                # spawn, not fork: a forked copy of a process running Qt threads may hold
                # their locks forever.
                _executor = ProcessPoolExecutor(
                    1,
                    mp_context=multiprocessing.get_context("spawn"),
                    initializer=watch_parent,
                    initargs=(os.getpid(),),
                )
            except (OSError, ImportError, NotImplementedError) as exc:
                # No semaphores (/dev/shm not writable), no _multiprocessing: lex here.
                _unavailable = True
                log.warning("highlighting runs in the window's own process: %s", exc)
        return _executor


def _give_up() -> None:
    global _executor, _unavailable
    with _lock:
        _unavailable = True
        pool, _executor = _executor, None
    if pool is not None:
        pool.shutdown(wait=False, cancel_futures=True)


def watch_parent(parent: int) -> None:
    """In the lexing process: exit as soon as the window that started it is gone (its pipes
    outlive it, since the process holds both ends, so it would never read an end of file)."""

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(PARENT_POLL_SECONDS)
        os._exit(0)

    threading.Thread(target=watch, name="watch-window", daemon=True).start()


def spans_of(text: str, media_type: str | None, name: str | None) -> Spans:
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
