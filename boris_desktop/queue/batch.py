"""The batch table (issue 42): several pending approvals decided in one pass.

The Decisions tab's "Decide several…" opens it over the approvals the queue shows. It is a
pre-flight table the store builds (`store.api.batch_preflight`): each request's task, what
approving it would do, its target and the digest a decision binds; the reviewer sets a verdict
per row (none is set: "Leave" decides nothing) and a note where one is needed, then Apply, then
Confirm: two clicks, never Return, so nothing is decided by a stray keystroke. A row the
store offers for editing (a message's words, a tool call's arguments: the Approve dialog's
Edit) can be approved with the reviewer's edit: Edit… (queue.batch_edit). The store records
each row on its own (`store.api.decide_batch`) and every row shows its own result: a row whose
request changed since the table was read is refused with its conflict, the others recorded.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from PySide6.QtCore import Qt
from PySide6.QtGui import QKeyEvent
from PySide6.QtWidgets import (
    QAbstractItemView,
    QComboBox,
    QDialog,
    QHBoxLayout,
    QHeaderView,
    QLineEdit,
    QPushButton,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from boris_desktop.decide.base import no_default, reviewer_actor
from boris_desktop.host import Host
from boris_desktop.ui import text as t
from boris_desktop.ui.widgets import error_label, plain_label
from store import api

if TYPE_CHECKING:
    from boris_desktop.queue.batch_edit import EditDialog, RowEdit
    from store.api import BatchItemResult, BatchResults, BatchRow

#: The table's columns, in order.
COLUMNS = ("Task", "Approval", "What it would do", "Target", "Digest", "Verdict", "Note", "Result")
TASK, APPROVAL, WHAT, TARGET, DIGEST, VERDICT, NOTE, RESULT = range(len(COLUMNS))

#: The verdicts a row offers, each shown by its label (the store's words); an answer as the
#: tool is given in the request's own dialog, where its result is written and checked.
BATCH_VERDICTS = (
    api.ApprovalVerdict.APPROVE,
    api.ApprovalVerdict.REJECT,
    api.ApprovalVerdict.SEND_BACK,
)


def short_digest(digest: str) -> str:
    """sha256:0123456789ab… as the table shows it (the whole digest is its tooltip)."""
    algorithm, _, hexed = digest.partition(":")
    return f"{algorithm}:{hexed[:12]}…" if hexed else digest


class BatchDialog(QDialog):
    """The pre-flight table of `refs` (task id, approval id): read on a worker, decided as
    the reviewer, each row's result shown."""

    def __init__(self, host: Host, refs: Sequence[tuple[str, str]]) -> None:
        super().__init__(host if isinstance(host, QWidget) else None)
        self.host = host
        self.refs = list(refs)
        self.rows: list[BatchRow] = []
        self.results: list[BatchItemResult] = []
        #: Per row, the editor the reviewer opened, and the edit they chose to approve the
        #: row with (what the editor said at their last Use this).
        self.editors: dict[int, EditDialog] = {}
        self.words: dict[int, RowEdit] = {}
        self.editor: EditDialog | None = None
        self.reading = False
        self.running = False
        self.setWindowTitle("Decide several")
        layout = QVBoxLayout(self)
        self.summary = plain_label("Reading the requests…", name="Batch summary")
        layout.addWidget(self.summary)
        self.table = QTableWidget(0, len(COLUMNS))
        self.table.setAccessibleName("Pending requests to decide")
        self.table.setHorizontalHeaderLabels(list(COLUMNS))
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.currentCellChanged.connect(lambda *_: self.refresh())
        self.table.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.Interactive)
        self.table.horizontalHeader().setStretchLastSection(True)
        layout.addWidget(self.table, 1)
        self.confirm_text = plain_label("", name="Confirm the batch")
        self.confirm_text.hide()
        layout.addWidget(self.confirm_text)
        layout.addLayout(self._buttons())
        self.error = error_label("Why the batch was not applied")
        self.error.hide()
        layout.addWidget(self.error)
        self.resize(1100, 520)
        self.read()

    def _buttons(self) -> QHBoxLayout:
        row = QHBoxLayout()
        self.edit_button = no_default(QPushButton("&Edit…"))
        self.edit_button.setAccessibleName("Edit the selected request")
        self.edit_button.setToolTip(
            "Approve the selected request with your edit (a message's words, a call's arguments)"
        )
        self.edit_button.clicked.connect(self.edit_selected)
        row.addWidget(self.edit_button)
        row.addStretch(1)
        self.apply_button = no_default(QPushButton("&Apply…"))
        self.apply_button.setAccessibleName("Apply")
        self.apply_button.clicked.connect(self.ask_confirm)
        self.confirm_button = no_default(QPushButton("&Confirm"))
        self.confirm_button.setAccessibleName("Confirm")
        self.confirm_button.clicked.connect(self.apply)
        self.confirm_button.hide()
        self.back_button = no_default(QPushButton("&Back"))
        self.back_button.setAccessibleName("Back")
        self.back_button.clicked.connect(self.cancel_confirm)
        self.back_button.hide()
        self.close_button = no_default(QPushButton("C&lose"))
        self.close_button.clicked.connect(self.reject)
        for b in (self.apply_button, self.confirm_button, self.back_button, self.close_button):
            row.addWidget(b)
        return row

    # --- reading -------------------------------------------------------------------------

    def read(self) -> None:
        store = self.host.store
        if store is None:
            return
        refs = list(self.refs)
        self.reading = True
        self.host.loader.submit(
            f"batch-read:{id(self)}",
            lambda: api.batch_preflight(store, refs),
            self.show_rows,
            self.failed,
        )

    def show_rows(self, rows: list[BatchRow]) -> None:
        self.reading = False
        self.rows = rows
        self.results = []
        self.editors, self.words = {}, {}
        self.table.setRowCount(len(rows))
        for r, row in enumerate(rows):
            self._fill(r, row)
        self.table.resizeColumnsToContents()
        self.refresh()

    def _fill(self, r: int, row: BatchRow) -> None:
        v = row.view
        cells = {
            TASK: (row.task_title or v.task_id, v.task_id),
            APPROVAL: (v.approval_id, v.policy),
            WHAT: (v.consequence, v.consequence),
            TARGET: (row.target or "—", row.target),
            DIGEST: (short_digest(v.payload_digest), v.payload_digest),
            RESULT: ("" if v.decidable else f"Cannot be decided: {v.why_not}", v.why_not or ""),
        }
        for col, (text, tip) in cells.items():
            item = QTableWidgetItem(text)
            item.setToolTip(tip)
            self.table.setItem(r, col, item)
        verdict = QComboBox()
        verdict.setAccessibleName(f"Verdict for {v.approval_id}")
        verdict.addItem("Leave", None)
        for allowed in v.verdicts:
            if allowed in BATCH_VERDICTS:
                verdict.addItem(allowed.label, allowed)
        verdict.setEnabled(v.decidable)
        verdict.currentIndexChanged.connect(self.refresh)
        self.table.setCellWidget(r, VERDICT, verdict)
        note = QLineEdit()
        note.setAccessibleName(f"Note for {v.approval_id}")
        note.setPlaceholderText("Note (needed to send back)")
        note.textChanged.connect(self.refresh)
        self.table.setCellWidget(r, NOTE, note)

    # --- the reviewer's verdicts -----------------------------------------------------------

    def verdict_box(self, r: int) -> QComboBox:
        box = self.table.cellWidget(r, VERDICT)
        assert isinstance(box, QComboBox)
        return box

    def note_field(self, r: int) -> QLineEdit:
        field = self.table.cellWidget(r, NOTE)
        assert isinstance(field, QLineEdit)
        return field

    def set_verdict(self, r: int, verdict: api.ApprovalVerdict) -> None:
        box = self.verdict_box(r)
        box.setCurrentIndex(box.findData(verdict))

    def chosen(self) -> list[tuple[int, api.ApprovalVerdict]]:
        """The rows with a verdict set, not yet recorded."""
        done = {(x.task_id, x.approval_id) for x in self.results if x.recorded}
        out = []
        for r, row in enumerate(self.rows):
            verdict = self.verdict_box(r).currentData()
            if verdict is not None and (row.view.task_id, row.view.approval_id) not in done:
                out.append((r, api.ApprovalVerdict(verdict)))
        return out

    def missing_note(self) -> int | None:
        """The first row sent back without a note (the store refuses it; said before)."""
        for r, verdict in self.chosen():
            if verdict == api.ApprovalVerdict.SEND_BACK and not self.note_field(r).text().strip():
                return r
        return None

    def refresh(self) -> None:
        n, chosen = len(self.rows), len(self.chosen())
        if not self.reading:
            text = f"{t.count(n, 'pending request', 'pending requests')}"
            text += f" · {chosen:,} to decide"
            recorded = sum(x.recorded for x in self.results)
            if self.results:
                text += f" · {recorded:,} recorded, {len(self.results) - recorded:,} refused"
            self.summary.setText(text)
        ready = chosen > 0 and self.missing_note() is None and not self.running
        self.apply_button.setEnabled(ready and self.confirm_button.isHidden())
        self.edit_button.setEnabled(
            self.editable_row() is not None and not self.running and self.confirm_button.isHidden()
        )
        self.confirm_button.setEnabled(ready)

    def ask_confirm(self) -> None:
        """Apply asks first: what will be decided, in words, and a Confirm to click."""
        chosen = self.chosen()
        if not chosen:
            return
        counts: dict[str, int] = {}
        for r, verdict in chosen:
            word = verdict.label + (" edited" if self.edited(r, verdict) else "")
            counts[word] = counts.get(word, 0) + 1
        said = ", ".join(f"{word} {n}" for word, n in counts.items())
        self.confirm_text.setText(
            f"Decide {t.count(len(chosen), 'request', 'requests')} as set ({said}), each "
            "signed as you? Rows set to Leave stay pending."
        )
        for w in (self.confirm_text, self.confirm_button, self.back_button):
            w.show()
        self.table.setEnabled(False)
        self.refresh()

    def cancel_confirm(self) -> None:
        for w in (self.confirm_text, self.confirm_button, self.back_button):
            w.hide()
        self.table.setEnabled(True)
        self.refresh()

    # --- applying --------------------------------------------------------------------------

    def apply(self) -> None:
        store, person = self.host.store, reviewer_actor()
        if store is None or person is None:
            if person is None:
                self.host.ask_reviewer()
            return
        items = [self._item(r, verdict) for r, verdict in self.chosen()]
        self.cancel_confirm()
        self.running = True
        self.error.hide()
        self.refresh()
        self.host.loader.submit(
            f"batch-apply:{id(self)}",
            lambda: api.decide_batch(store, person, items),
            self.show_results,
            self.failed,
        )

    def _item(self, r: int, verdict: api.ApprovalVerdict) -> api.BatchItem:
        v, edit = self.rows[r].view, self.edited(r, verdict)
        # Validated as a line of `boris decide-batch` is.
        return api.BatchItem.model_validate(
            {
                "task_id": v.task_id,
                "approval_id": v.approval_id,
                "verdict": verdict.value,
                "based_on": v.payload_digest,
                "note": self.note_field(r).text().strip(),
                "edited_message": edit.message if edit else None,
                "edited": edit.call if edit else None,
            }
        )

    # --- a row approved with the reviewer's own edit ----------------------------------------

    def editable_row(self) -> int | None:
        """The selected row, where it may be edited and it is not yet recorded."""
        r = self.table.currentRow()
        if not 0 <= r < len(self.rows) or not self.table.isEnabled():
            return None
        v = self.rows[r].view
        done = any(
            x.recorded and (x.task_id, x.approval_id) == (v.task_id, v.approval_id)
            for x in self.results
        )
        return r if v.decidable and (v.editable or v.edits_call) and not done else None

    def edit_selected(self) -> None:
        from boris_desktop.queue.batch_edit import EditDialog

        r = self.editable_row()
        if r is None:
            return
        if r not in self.editors:
            editor = EditDialog(self, self.rows[r].view)
            editor.accepted.connect(lambda row=r: self._words_used(row))
            self.editors[r] = editor
        self.editor = self.editors[r]
        self.editor.open()

    def _words_used(self, r: int) -> None:
        """Edit's Use this: the row is approved with the edit (as asked, if unchanged)."""
        changed = self.editors[r].edit()
        self.words.pop(r, None)
        if changed is not None:
            self.words[r] = changed
            self.set_verdict(r, api.ApprovalVerdict.APPROVE)
        v = self.rows[r].view
        what = v.consequence + (f" — with {changed.what()}" if changed is not None else "")
        item = QTableWidgetItem(what)
        item.setToolTip(what)
        self.table.setItem(r, WHAT, item)
        self.refresh()

    def edited(self, r: int, verdict: api.ApprovalVerdict) -> RowEdit | None:
        """The reviewer's edit of row `r`, when it is approved with it."""
        return self.words.get(r) if verdict == api.ApprovalVerdict.APPROVE else None

    def show_results(self, done: BatchResults) -> None:
        self.running = False
        self.results = [*self.results, *done.results]
        where = {(row.view.task_id, row.view.approval_id): r for r, row in enumerate(self.rows)}
        for x in done.results:
            r = where.get((x.task_id, x.approval_id))
            if r is None:
                continue
            text = (
                f"Recorded: {api.ApprovalState(x.state).label}"
                if x.recorded and x.state
                else f"Refused: {x.message}"
            )
            item = QTableWidgetItem(text)
            item.setToolTip(text)
            self.table.setItem(r, RESULT, item)
            if x.recorded:
                self.verdict_box(r).setEnabled(False)
                self.note_field(r).setReadOnly(True)
        self.host.reload()
        self.refresh()

    def failed(self, error: Exception) -> None:
        self.running = self.reading = False
        self.error.setText(t.failure(error))
        self.error.show()
        self.refresh()

    def result_text(self, r: int) -> str:
        item = self.table.item(r, RESULT)
        return item.text() if item is not None else ""

    def keyPressEvent(self, event: QKeyEvent) -> None:
        """Return and Enter decide nothing here: only a click (or a button's mnemonic)."""
        if event.key() in (Qt.Key.Key_Return, Qt.Key.Key_Enter):
            event.accept()
            return
        super().keyPressEvent(event)
