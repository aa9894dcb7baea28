"""The window's parts: the loader's stale-result rule, highlighting, the inbox's filter and
keyboard, the reviewer's identity, the empty store's offer, a picture of every tab."""

from __future__ import annotations

import itertools
import os
import shutil
import threading
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import pytest
from PySide6.QtCore import Qt
from PySide6.QtGui import QImage
from test_desktop_actions import WAIT_MS

from store import Store
from store.errors import CommandRejected
from store.services.demo import fill_demo


@pytest.fixture(autouse=True)
def _own_settings(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("BORIS_DESKTOP_SETTINGS", str(tmp_path / "settings.ini"))


def _refuse() -> None:
    raise CommandRejected("changed")


def test_loader_drops_superseded_results_and_runs_off_the_gui_thread(qtbot) -> None:
    from boris_desktop.runtime.loader import Loader

    loader = Loader()
    gate = threading.Event()
    got: list[str] = []
    threads: list[bool] = []

    def slow() -> str:
        gate.wait(2)
        threads.append(threading.current_thread() is threading.main_thread())
        return "old"

    loader.submit("k", slow, got.append)
    loader.submit("k", lambda: "new", got.append)
    qtbot.waitUntil(lambda: got == ["new"], timeout=WAIT_MS)
    gate.set()
    qtbot.wait(200)
    assert got == ["new"]  # the slow, superseded result arrived and was dropped
    assert threads == [False]
    # A failure reaches the window as the exception itself, typed, never as its text.
    errors: list[Exception] = []
    loader.submit("e", lambda: 1 / 0, got.append, errors.append)
    qtbot.waitUntil(lambda: bool(errors), timeout=WAIT_MS)
    assert isinstance(errors[0], ZeroDivisionError)
    refused: list[Exception] = []
    loader.submit("r", _refuse, got.append, refused.append)
    qtbot.waitUntil(lambda: bool(refused), timeout=WAIT_MS)
    assert type(refused[0]) is CommandRejected and str(refused[0]) == "changed"


def test_results_that_arrive_together_are_handed_over_one_per_turn(qtbot) -> None:
    """Two windows' loaders (the inbox, the queue) finishing together: each result is
    handled in a turn of the event loop of its own, so a timer (the reviewer's input, a
    paint) gets its turn between them; a result superseded while it waited is dropped, and
    one for a loader that is gone is skipped.

    No step depends on how fast anything runs: the jobs run on a pool of the test's own (one
    thread, so they finish in order, and nothing else's work delays them) and are waited
    for without a time limit; "nothing more arrives" is a last result handed over after all
    the others, never a pause."""
    import shiboken6
    from PySide6.QtCore import QCoreApplication, QThreadPool, QTimer

    from boris_desktop.runtime import loader as loading

    pool = QThreadPool()
    pool.setMaxThreadCount(1)

    def loader() -> loading.Loader:
        made = loading.Loader()
        made.pool = pool
        return made

    def all_posted() -> None:
        assert pool.waitForDone(-1)  # every result is posted to the GUI thread

    def turns_idle() -> bool:
        turns = loading._the_turns()
        return not turns._waiting and not turns._turn.isActive()

    first, second, gone = loader(), loader(), loader()
    order: list[str] = []
    ticks = 0
    ticks_at: list[int] = []

    def handed(value: str) -> None:
        order.append(value)
        ticks_at.append(ticks)

    def tick() -> None:
        nonlocal ticks
        ticks += 1

    timer = QTimer()
    timer.setInterval(0)
    timer.timeout.connect(tick)
    qtbot.waitUntil(turns_idle, timeout=30_000)
    first.submit("a", lambda: "a", handed)
    second.submit("b", lambda: "b", handed)
    second.submit("c", lambda: "c", handed)
    gone.submit("d", lambda: "d", handed)
    first.submit("z", lambda: "z", handed)  # the last: when it is handed over, all were
    all_posted()
    QCoreApplication.sendPostedEvents()  # all five arrive in one pass: one is handed over
    assert order == ["a"]
    shiboken6.delete(gone)  # its window closes while "d" waits its turn
    timer.start()
    qtbot.waitUntil(lambda: "z" in order, timeout=30_000)
    timer.stop()
    assert order == ["a", "b", "c", "z"]  # "d": its loader is gone
    # Never two handed over between two ticks of a timer.
    assert all(b > a for a, b in itertools.pairwise(ticks_at[1:])), ticks_at
    # Superseded while waiting its turn: the newer request's result is the one delivered.
    qtbot.waitUntil(turns_idle, timeout=30_000)
    got: list[str] = []
    second.submit("y", lambda: "y", got.append)
    first.submit("x", lambda: "x1", got.append)
    all_posted()
    QCoreApplication.sendPostedEvents()  # "y" is handed over; "x1" waits for the next turn
    assert got == ["y"]
    first.submit("x", lambda: "x2", got.append)
    qtbot.waitUntil(lambda: "x2" in got, timeout=30_000)
    assert got == ["y", "x2"]  # "x1" came before "x2" in the queue, and was dropped
    qtbot.waitUntil(turns_idle, timeout=30_000)
    pool.waitForDone(-1)


def test_lex_spans_per_line_and_never_html() -> None:
    from boris_desktop.runtime.lexing import lex

    spans = lex('{\n  "a": "x<b>",\n  "n": 1\n}', "json")
    assert {s[2] for line in spans.values() for s in line} >= {"key", "string", "number"}
    assert spans[1][0][0] == 2  # the key starts at column 2 of line 1
    md = lex("# Title\n\ntext", "text/markdown")
    assert md[0][0][2] == "heading"
    assert lex("a\u00e9\U0001f600b", "text/plain") == {}  # plain text: nothing to colour


def test_a_long_text_is_coloured_a_chunk_at_a_time_top_first(qtbot) -> None:
    from boris_desktop.runtime.lexing import HIGHLIGHT_CAP, lex
    from boris_desktop.runtime.loader import Loader
    from boris_desktop.ui.highlight import SpanHighlighter
    from boris_desktop.ui.widgets import TextPane

    text = '{"key": "value", "n": 1}\n' * 20_000  # 500,000 characters, 20,000 lines
    pane = TextPane(Loader(), "preview")
    qtbot.addWidget(pane)
    pane.show_text(text)  # no media type: shown plain at once, nothing lexed
    spans = lex(text, "application/json")
    coloured = len(spans)
    assert coloured == HIGHLIGHT_CAP // 25  # lines of 25 characters: only the first CAP

    def has_colour(line: int) -> bool:
        return bool(pane.document().findBlockByNumber(line).layout().formats())

    pane.highlighter.set_spans(spans)
    # The top is coloured before the event loop runs again; the rest follows turn by turn.
    assert has_colour(0) and has_colour(SpanHighlighter.CHUNK - 1)
    assert not has_colour(SpanHighlighter.CHUNK) and pane.highlighter.pending()
    qtbot.waitUntil(lambda: not pane.loading() and not pane.highlighter.pending(), timeout=WAIT_MS)
    assert has_colour(coloured - 1) and not has_colour(coloured)
    # New text before the colours are all applied: the old spans never land on it.
    pane.highlighter.set_spans(spans)
    pane.show_text("plain\n" * 10_000)
    assert not pane.highlighter.pending()
    qtbot.waitUntil(lambda: not pane.loading(), timeout=WAIT_MS)  # all its pieces are in
    assert not pane.highlighter.pending()
    assert not any(has_colour(i) for i in range(0, 10_000, 997))


def test_a_long_text_goes_in_a_piece_at_a_time_and_comes_out_whole(qtbot) -> None:
    from boris_desktop.runtime.loader import Loader
    from boris_desktop.ui.widgets import TextPane

    pane = TextPane(Loader(), "preview")
    qtbot.addWidget(pane)
    pane.resize(600, 400)
    pane.show()
    text = "".join(f"line {i}\n" for i in range(30_000))  # about 250 KB
    pane.show_text(text, keep=False)
    assert pane.loading() and len(pane.toPlainText()) < TextPane.PIECE < len(text)
    qtbot.waitUntil(lambda: not pane.loading(), timeout=WAIT_MS)
    assert pane.toPlainText() == text
    assert pane.verticalScrollBar().value() == 0  # the pieces did not pull the view down
    assert pane.document().blockCount() == 30_001
    # One line longer than a piece goes in whole, and nothing is split inside a line.
    long_line = "x" * (3 * TextPane.PIECE)
    pane.show_text(f"a\n{long_line}\nb\n")
    qtbot.waitUntil(lambda: not pane.loading(), timeout=WAIT_MS)
    assert pane.toPlainText().split("\n") == ["a", long_line, "b", ""]
    # New text while pieces of the old are still going in: nothing of the old is left.
    pane.show_text(text)
    pane.show_text("short")
    qtbot.wait(30)
    assert pane.toPlainText() == "short" and not pane.loading()


def _version(digest: str, version: int) -> object:
    """A version of a file the store holds, as the diff reads one (its digest and number)."""
    from types import SimpleNamespace

    return SimpleNamespace(digest=digest, version=version)


def test_a_large_artifact_and_a_long_diff_are_shown_in_part(store: Store, ws: Path) -> None:
    from boris_desktop.runtime.preview import PREVIEW_CAP, diff, preview

    old = "".join(f"line {i}\n" for i in range(200_000))
    new = "".join(f"line {i} changed\n" for i in range(200_000))
    digests = [store.blobs.put_bytes(x.encode())[0] for x in (old, new)]
    shown = preview(store, digests[0], "text/plain", "big.txt")
    assert len(shown["text"]) == PREVIEW_CAP
    assert shown["note"] == f"showing the first 256 KiB of {len(old):,} bytes"
    d = diff(store, _version(digests[0], 1), _version(digests[1], 2), "big")
    assert len(d["text"]) <= PREVIEW_CAP and d["text"].endswith("\n")
    assert d["text"].startswith("--- big v1\n+++ big v2\n")
    assert "showing the first" in d["note"] and "characters of the diff" in d["note"]
    assert d["note"].endswith("(the first 1,024 KiB of each version compared)")


def test_a_diff_cut_at_its_cap_compares_whole_lines(store: Store, monkeypatch) -> None:
    from boris_desktop.runtime import preview

    monkeypatch.setattr(preview, "DIFF_CAP", 64)
    old = "".join(f"line {i:02d}\n" for i in range(40))  # 8 bytes a line
    new = old.replace("line 03\n", "line three\n")
    digests = [store.blobs.put_bytes(x.encode())[0] for x in (old, new)]
    d = preview.diff(store, _version(digests[0], 1), _version(digests[1], 2), "f")
    changed = [x for x in d["text"].splitlines() if x[:1] in "+-" and x[:3] not in ("---", "+++")]
    # The real change is there, and no fragment of the line each side was cut in.
    assert changed[:2] == ["-line 03", "+line three"]
    whole = set(old.splitlines()) | set(new.splitlines())
    assert all(x[1:] in whole for x in changed)
    assert "(the first 0 KiB of each version compared)" in d["note"]


def test_inbox_sort_filter_search_and_keyboard(qtbot, store: Store, qtmodeltester) -> None:
    from boris_desktop.main_window import MainWindow

    fill_demo(store)
    w = MainWindow(store)
    qtbot.addWidget(w)
    w.show()
    w.reload_now()
    p = w.proxy
    assert p.index(0, 0).data().startswith("Reference guide")
    needs = p.index(0, 2).data()
    assert "1 effect to reconcile" in needs and "forked lineage" in needs
    assert "missing blob" in needs and "stale criterion" in needs
    assert p.index(1, 2).data().startswith("1 approval pending")
    assert p.index(0, 3).data() == "95% near limit"
    with qtbot.waitSignal(w.searched, timeout=WAIT_MS):  # debounced, on a worker
        w.search.setText("weekly note")
    assert p.rowCount() == 1 and p.index(0, 0).data() == "Save the weekly project note"
    with qtbot.waitSignal(w.searched, timeout=WAIT_MS):  # debounced, on a worker
        w.search.clear()
    p.set_status("completed")
    assert p.rowCount() == 0
    w.status_filter.setCurrentIndex(w.status_filter.findData("outcome_unknown"))
    assert p.rowCount() == 2
    w.status_filter.setCurrentIndex(w.status_filter.findData(p.NEEDS_YOU))
    assert p.rowCount() == 2
    qtmodeltester.check(p)
    w.table.setFocus()
    # The search left only the note: it became the selected task, and stays selected.
    assert w.selected == "note"
    qtbot.keyClick(w.table, Qt.Key.Key_Home)
    qtbot.waitUntil(lambda: w.task_view.task_id == "guide", timeout=WAIT_MS)
    qtbot.keyClick(w.table, Qt.Key.Key_Down)
    qtbot.waitUntil(lambda: w.task_view.task_id == "note", timeout=WAIT_MS)
    assert w.task_view.header.title.text() == "Save the weekly project note"
    w.close()


def test_reviewer_identity_is_asked_and_kept(qtbot) -> None:
    from PySide6.QtWidgets import QDialogButtonBox

    from boris_desktop import settings
    from boris_desktop.identity import ReviewerDialog

    assert settings.reviewer() is None
    dlg = ReviewerDialog()
    qtbot.addWidget(dlg)
    ok = dlg.buttons.button(QDialogButtonBox.StandardButton.Ok)
    assert not ok.isEnabled()
    dlg.name.setText("Ada Reviewer")
    dlg.reviewer_id.setText("ada")
    assert ok.isEnabled()
    qtbot.mouseClick(ok, Qt.MouseButton.LeftButton)
    assert dlg.result() == ReviewerDialog.DialogCode.Accepted
    assert settings.reviewer() == ("Ada Reviewer", "ada")
    again = ReviewerDialog()
    qtbot.addWidget(again)
    assert again.name.text() == "Ada Reviewer"


def test_the_reviewer_id_is_suggested_from_the_name_until_typed(qtbot) -> None:
    from boris_desktop.identity import ReviewerDialog

    dlg = ReviewerDialog()
    qtbot.addWidget(dlg)
    qtbot.keyClicks(dlg.name, "Grace O'Hara")
    assert dlg.reviewer_id.text() == "grace"
    dlg.reviewer_id.clear()
    qtbot.keyClicks(dlg.reviewer_id, "gohara")
    qtbot.keyClicks(dlg.name, " Jr")
    assert dlg.reviewer_id.text() == "gohara"  # typed by the reviewer: left alone


def test_empty_store_offers_the_demo_and_store_opens_on_a_worker(qtbot, tmp_path: Path) -> None:
    from boris_desktop import settings
    from boris_desktop.main_window import EMPTY, TASK, MainWindow

    w = MainWindow()
    qtbot.addWidget(w)
    w.show()
    with qtbot.waitSignal(w.store_opened, timeout=WAIT_MS):
        w.open_store(str(tmp_path / "fresh"))
    qtbot.waitUntil(lambda: w.right.currentIndex() == EMPTY, timeout=WAIT_MS)
    assert w.empty_button.isVisible()
    assert settings.recent_stores() == [str(tmp_path / "fresh")]
    qtbot.mouseClick(w.empty_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: w.inbox.rowCount() == 2, timeout=WAIT_MS)
    qtbot.waitUntil(lambda: w.right.currentIndex() == TASK, timeout=WAIT_MS)
    qtbot.waitUntil(lambda: w.task_view.task_id == "guide", timeout=WAIT_MS)
    w.close()
    qtbot.waitUntil(lambda: not w.loader._pending, timeout=WAIT_MS)
    w.store.close()


def test_a_staged_window_opens_its_store_after_the_first_paint_and_closes_at_any_time(
    qtbot, tmp_path: Path
) -> None:
    from boris_desktop.main_window import TASK, MainWindow

    with Store.open(tmp_path / "store") as opened:
        fill_demo(opened)
    # Closed before it was ever painted (the reviewer quit at once): nothing breaks.
    early = MainWindow(staged=True)
    qtbot.addWidget(early)
    early.open_store(str(tmp_path / "store"))
    early.close()
    assert not early.loader._pending  # the store was never asked for

    w = MainWindow(staged=True)
    qtbot.addWidget(w)
    w.resize(1280, 780)
    w.open_store(str(tmp_path / "store"))
    assert not w.loader._pending  # no worker competes with the first paint for the GIL
    with qtbot.waitSignal(w.finished, timeout=WAIT_MS):
        w.show()
    qtbot.waitUntil(lambda: w.right.currentIndex() == TASK, timeout=WAIT_MS)
    assert w.inbox.rowCount() == 2
    w.close()
    qtbot.waitUntil(lambda: not w.loader._pending, timeout=WAIT_MS)
    if w.store is not None:
        w.store.close()


def test_the_tasks_are_listed_before_the_store_opens_and_nothing_acts_on_them(
    qtbot, tmp_path: Path, monkeypatch
) -> None:
    """The first look (store.reads.peek) lists the tasks while the store's modules load;
    the reviewer's choice among them is kept, and the task opens once the store is there."""
    from boris_desktop.inbox.table import ID_ROLE
    from boris_desktop.main_window import TASK, MainWindow
    from boris_desktop.runtime import jobs

    with Store.open(tmp_path / "store") as opened:
        fill_demo(opened)
        listed = opened.tasks()
    gate = threading.Event()
    real_open = jobs.open_store

    def held_open(directory: str | None) -> Store:
        assert gate.wait(10)
        return real_open(directory)

    monkeypatch.setattr(jobs, "open_store", held_open)
    w = MainWindow()
    qtbot.addWidget(w)
    w.show()
    with qtbot.waitSignal(w.peeked, timeout=WAIT_MS):
        w.open_store(str(tmp_path / "store"))
    assert w.store is None
    assert [w.inbox.index(i, 0).data(ID_ROLE) for i in range(w.inbox.rowCount())] == [
        t["id"] for t in listed
    ]
    assert "opening the store" in w.statusBar().currentMessage()
    for act in (
        w.menu_actions.approve_action,
        w.menu_actions.reconcile_action,
        w.menu_actions.stop_action,
        w.menu_actions.checkpoint_action,
    ):
        assert not act.isEnabled()
    # The reviewer picks the second task before the store is open: it is the one shown.
    second = w.proxy.index(1, 0)
    w.table.setCurrentIndex(second)
    chosen = second.data(ID_ROLE)
    gate.set()
    qtbot.waitUntil(lambda: w.store is not None, timeout=WAIT_MS)
    qtbot.waitUntil(lambda: w.right.currentIndex() == TASK, timeout=WAIT_MS)
    qtbot.waitUntil(lambda: w.task_view.task_id == chosen, timeout=WAIT_MS)
    assert w.inbox.rowCount() == len(listed)
    w.close()
    qtbot.waitUntil(lambda: not w.loader._pending, timeout=WAIT_MS)
    w.store.close()


def test_a_staged_window_paints_first_then_builds_and_takes_the_store(
    qtbot, tmp_path: Path
) -> None:
    """Start-up builds only what the first paint shows; the rest follows that paint, and a
    store that opened before it is taken then. The first picture already names the columns."""
    from boris_desktop.inbox.table import COLUMNS
    from boris_desktop.main_window import COLUMN_TITLES, TASK, MainWindow

    assert COLUMN_TITLES == COLUMNS
    w = MainWindow(staged=True)
    qtbot.addWidget(w)
    w.resize(1280, 780)
    assert not w._built and not hasattr(w, "inbox")
    header = w.table.model()
    assert [header.headerData(i, Qt.Orientation.Horizontal) for i in range(len(COLUMNS))] == list(
        COLUMNS
    )
    with Store.open(tmp_path / "store") as opened:
        fill_demo(opened)
    store = Store.open(tmp_path / "store")
    w.set_store(store)  # the worker was quicker than the first paint
    assert w.store is None
    with qtbot.waitSignal(w.finished, timeout=WAIT_MS):
        w.show()
    assert w.table.model() is w.proxy
    qtbot.waitUntil(lambda: w.inbox.rowCount() == 2, timeout=WAIT_MS)
    qtbot.waitUntil(lambda: w.right.currentIndex() == TASK, timeout=WAIT_MS)
    assert w.store is store and w.menuBar().actions()
    w.close()
    qtbot.waitUntil(lambda: not w.loader._pending, timeout=WAIT_MS)
    store.close()


def test_every_tab_renders_to_png(qtbot, store: Store, tmp_path: Path) -> None:
    """A picture of each main view. With BORIS_DESKTOP_SHOTS=DIR they are kept there."""
    from boris_desktop.main_window import MainWindow

    fill_demo(store)
    w = MainWindow(store)
    qtbot.addWidget(w)
    w.resize(1280, 780)
    w.show()
    w.reload_now()
    keep = os.environ.get("BORIS_DESKTOP_SHOTS")
    for i, title in enumerate(w.task_view.panels):
        w.task_view.tabs.setCurrentIndex(i)
        qtbot.waitUntil(lambda: not w.loader._pending, timeout=WAIT_MS)
        qtbot.wait(20)
        png = tmp_path / f"{i:02d}-{title.lower()}.png"
        assert w.grab().save(str(png))
        img = QImage(str(png))
        assert img.width() >= 1280 and img.height() >= 780
        if keep:
            Path(keep).mkdir(parents=True, exist_ok=True)
            shutil.copy(png, Path(keep) / png.name)
    w.close()


def test_a_dark_system_palette_is_followed(qtbot, store: Store) -> None:
    """Nothing paints a light background of its own on a dark desktop, and the colours the
    app does choose (refusals, warnings, highlighting) switch to their dark-palette variants."""
    from PySide6.QtGui import QColor, QPalette
    from PySide6.QtWidgets import QApplication

    from boris_desktop.main_window import MainWindow
    from boris_desktop.ui.widgets import error_label, notice_banner

    app = QApplication.instance()
    assert isinstance(app, QApplication)
    light = app.palette()
    dark = QPalette(light)
    for role, colour in (
        (QPalette.ColorRole.Window, "#2b2b2b"),
        (QPalette.ColorRole.WindowText, "#e0e0e0"),
        (QPalette.ColorRole.Base, "#1e1e1e"),
        (QPalette.ColorRole.AlternateBase, "#262626"),
        (QPalette.ColorRole.Text, "#e0e0e0"),
        (QPalette.ColorRole.Button, "#353535"),
        (QPalette.ColorRole.ButtonText, "#e0e0e0"),
    ):
        dark.setColor(role, QColor(colour))
    app.setPalette(dark)
    try:
        assert QColor(error_label("e").styleSheet().split("color: ")[1][:7]).lightness() > 128
        assert (
            QColor(notice_banner("b").styleSheet().split("background: ")[1][:7]).lightness() < 128
        )
        fill_demo(store)
        w = MainWindow(store)
        qtbot.addWidget(w)
        w.resize(1280, 780)
        w.show()
        w.reload_now()
        qtbot.waitUntil(lambda: not w.loader._pending, timeout=WAIT_MS)
        img = w.grab().toImage()
        # Sample a grid: most of the window must be dark, as the palette asks.
        samples = [
            img.pixelColor(x, y).lightness()
            for x in range(5, img.width(), 40)
            for y in range(5, img.height(), 40)
        ]
        assert sum(v < 100 for v in samples) / len(samples) > 0.8
        w.close()
        qtbot.waitUntil(lambda: not w.loader._pending, timeout=WAIT_MS)
    finally:
        app.setPalette(light)


def test_a_long_list_takes_new_rows_above_and_below_without_moving_the_reviewer(
    qtbot, qtmodeltester
) -> None:
    from PySide6.QtCore import QPoint

    from boris_desktop.ui.records import Node, RecordTable

    def rows(seqs: range) -> list[Node]:
        return [Node(key=str(s), cells=(str(s), f"event {s}")) for s in seqs]

    view = RecordTable(("Seq", "What"), "events")
    qtbot.addWidget(view)
    view.resize(400, 300)
    view.show()
    loaded = rows(range(1000, 500, -1))  # newest first
    view.set_nodes(loaded)
    resets: list[bool] = []
    view.records.modelReset.connect(lambda: resets.append(True))
    view.setCurrentIndex(view.index_at(("800",)))
    view.scrollTo(view.currentIndex())

    def top_row() -> str:
        return view.records.node(view.indexAt(QPoint(5, 5))).key  # type: ignore[union-attr]

    looking_at = top_row()
    inserted: list[tuple[int, int]] = []
    view.records.rowsInserted.connect(lambda _p, a, b: inserted.append((a, b)))
    # Ten newer events on top and a page of older ones below, in two updates.
    view.set_nodes(rows(range(1010, 1000, -1)) + loaded)
    view.set_nodes(rows(range(1010, 200, -1)))
    assert inserted == [(0, 9), (510, 809)]  # inserted, not reset
    assert not resets
    assert view.current_node().key == "800"  # type: ignore[union-attr]
    assert top_row() == looking_at
    qtmodeltester.check(view.records)
    # A filter shows other rows: the model is reset, the selection kept when it is still there.
    view.set_nodes([n for n in rows(range(1010, 200, -1)) if int(n.key) % 2 == 0])
    assert view.current_node().key == "800"  # type: ignore[union-attr]
    assert view.records.rowCount() == 405
