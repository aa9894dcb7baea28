"""Change a budget: raise or lower a counter's limit, or release part of its reservation.

What is shown is the store's `BudgetView` of the counter (used, reserved, limit, standing, who
set the limit last), followed while the dialog is open; what the change does is the store's
`budget_change`, said before anything is sent (the limit, the reservation and the standing
before and after, and what becomes of the run: raising the limit of a run whose budget ran
out lets it go on, by the store's rule). The new limit carries the revision the person saw
(`based_on`): a limit changed meanwhile is a conflict shown here, never an overwrite. The
numbers are spin boxes: no negative, infinite or not-a-number value can be typed.
"""

from __future__ import annotations

from typing import Any

from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDoubleSpinBox,
    QFormLayout,
    QLineEdit,
    QWidget,
)

from boris_desktop.decide.following import Following
from boris_desktop.decide.versioned import Versioned
from boris_desktop.host import Host
from boris_desktop.ui import text as t
from boris_desktop.ui.widgets import heading, plain_label
from store import api

#: The largest number a spin box takes: far below the store's bound (store.limits), and
#: exact in a double to the cent.
SPIN_MAX = 1e12


def _spin(name: str) -> QDoubleSpinBox:
    box = QDoubleSpinBox()
    box.setAccessibleName(name)
    box.setDecimals(2)
    box.setRange(0.0, SPIN_MAX)
    box.setGroupSeparatorShown(True)
    box.setKeyboardTracking(True)
    return box


def _words(s: str) -> str:
    return s.replace("_", " ")


class BudgetDialog(Versioned, Following):
    """One counter of a task: a new limit (or none), a reservation released with a reason."""

    acting = "changing the limit"

    def __init__(
        self, host: Host, task: api.TaskState, counter: str, *, raise_limit: bool = False
    ) -> None:
        """`raise_limit`: opened to raise the limit (a run whose budget ran out, from the
        decision queue): "Set a new limit" starts ticked, the person types the number."""
        super().__init__(host, f"Budget of {task.id}", "Change the &budget")
        self.task_id = task.id
        self.counter = counter
        self.view: api.BudgetView | None = None
        self.newest: api.BudgetView | None = None
        self.plan: api.BudgetChange | None = None
        self.follow(self.task_id, fetch=self._read)
        self.keep_versions(
            "&Look at it now", "Show the limit as it is now; your numbers and reason stay"
        )
        self.add(self.changed)
        self.counter_box = QComboBox()
        self.counter_box.setAccessibleName("Budget counter")
        names = [b.counter for b in task.budgets]
        names += [c for c in api.BUDGET_COUNTERS if c not in names]
        for name in names:
            self.counter_box.addItem(_words(name), name)
        self.counter_box.setCurrentIndex(max(names.index(counter), 0) if counter in names else 0)
        self.counter_box.currentIndexChanged.connect(self._counter_chosen)
        self.now = plain_label("Reading the budget…", name="The budget now")
        self.set_limit = QCheckBox("Set a new &limit")
        self.set_limit.setAccessibleName("Set a new limit")
        self.limit = _spin("New limit")
        self.no_limit = QCheckBox("&No limit")
        self.no_limit.setAccessibleName("No limit")
        self.release = _spin("Release from the reservation")
        self.reason = QLineEdit()
        self.reason.setAccessibleName("Reason")
        self.reason.setPlaceholderText("Why (required to release a reservation)")
        form = QFormLayout()
        form.addRow("Counter:", self.counter_box)
        form.addRow("Now:", self.now)
        form.addRow("", self.set_limit)
        form.addRow("New limit:", self.limit)
        form.addRow("", self.no_limit)
        form.addRow("Release:", self.release)
        form.addRow("Reason:", self.reason)
        box = QWidget()
        box.setLayout(form)
        self.add(box)
        self.add(heading("What it changes"))
        self.what = plain_label("", name="What it changes")
        self.add(self.what)
        self.why_not = plain_label("", name="Why it cannot be sent")
        self.add(self.why_not)
        self.or_resume = plain_label(
            "Or resume the run as it is (Actions › Resume the Run): its next charge of an "
            "exhausted counter stops it again.",
            name="Or resume",
        )
        self.or_resume.hide()
        self.add(self.or_resume)
        for w in (self.set_limit, self.no_limit):
            w.toggled.connect(self._inputs_changed)
        for s in (self.limit, self.release):
            s.valueChanged.connect(self._inputs_changed)
        self.reason.textChanged.connect(self._inputs_changed)
        self.set_limit.setChecked(raise_limit)
        self._enable_fields()
        self.follower.force()  # the first read fills the dialog
        self.fit(560)

    def first_field(self) -> QWidget:
        return self.limit if self.limit.isEnabled() else self.set_limit

    def _read(self, store: Any) -> api.BudgetView:
        return api.budget_view(store, self.task_id, self.counter)

    # --- what the store says ------------------------------------------------------------

    def task_changed(self, task: Any) -> None:
        view: api.BudgetView = task
        if view.counter != self.counter:
            return  # a read for the counter chosen before
        self.newest = view
        if self.view is None or view.limit_rev == self.based_on:
            # The limit the person looks at is current: the numbers move with the store.
            self._show(view, fresh=self.view is None)
            return
        change = view.last_change
        self.moved(
            view.limit_rev,
            (
                f"{t.actor(change.actor)} {change.what} at {t.when(change.at)}"
                if change is not None
                else "The limit changed"
            )
            + ", while this was open",
        )
        self._inputs_changed()

    def rebased(self) -> None:
        if self.newest is not None:
            self._show(self.newest, fresh=False)

    def _show(self, view: api.BudgetView, *, fresh: bool) -> None:
        self.view = view
        self.based_on = view.limit_rev
        set_by = view.last_change
        self.now.setText(
            f"{t.number(view.used)} used · {t.number(view.reserved)} reserved · limit "
            + ("none" if view.limit is None else t.number(view.limit))
            + f" · {_words(view.standing)}"
            + (
                f"\nLimit set by {t.actor(set_by.actor)} {t.when(set_by.at)}"
                if set_by is not None
                else "\nNo limit was ever set on it"
            )
            + f"\nThe run is {_words(view.status)}"
            + (f": {view.status_reason}" if view.status_reason else "")
        )
        if fresh:
            self.limit.setValue(view.limit if view.limit is not None else 0.0)
        self.release.setMaximum(max(view.reserved, 0.0))
        self.release.setEnabled(view.reserved > 0)
        self.or_resume.setVisible(view.status == api.RunStatus.BUDGET_EXHAUSTED)
        self._inputs_changed()
        if fresh and self.isVisible():
            # Sized again for what the first read filled in (the dialog opened empty).
            self.body_scroll.updateGeometry()  # the content's new size, past the scroll area
            self.fit(560)
            self.fit_screen()

    def _counter_chosen(self) -> None:
        counter = self.counter_box.currentData()
        if not counter or counter == self.counter:
            return
        self.counter = str(counter)
        self.view = self.newest = self.plan = None
        self.based_on, self.latest = None, None
        self.rebase.hide()
        self.changed.hide()
        self.error.hide()
        self.set_limit.setChecked(False)
        self.no_limit.setChecked(False)
        self.release.setValue(0.0)
        self.now.setText("Reading the budget…")
        self._inputs_changed()
        self.follower.force()

    # --- what the person asks -----------------------------------------------------------

    def _enable_fields(self) -> None:
        setting = self.set_limit.isChecked()
        self.no_limit.setEnabled(setting)
        self.limit.setEnabled(setting and not self.no_limit.isChecked())

    def _inputs_changed(self) -> None:
        self._enable_fields()
        view = self.view
        if view is None:
            self.plan = None
            self.what.setText("")
            self.why_not.hide()
            self.refresh_buttons()
            return
        self.plan = api.budget_change(
            view,
            set_limit=self.set_limit.isChecked(),
            limit=None if self.no_limit.isChecked() else self.limit.value(),
            release=self.release.value(),
            reason=self.reason.text(),
        )
        self.what.setText("\n".join(f"• {x}" for x in self.plan.lines))
        self.why_not.setText(self.plan.refusal or "")
        self.why_not.setVisible(self.plan.refusal is not None)
        self.refresh_buttons()

    def ready(self) -> bool:
        return (
            self.view is not None
            and self.plan is not None
            and self.plan.refusal is None
            and self.latest is None
        )

    def command(self) -> Any:
        from store.api import ReleaseBudget, SetBudget

        assert self.view is not None
        out: list[Any] = []
        if self.set_limit.isChecked():
            out.append(
                SetBudget(
                    task_id=self.task_id,
                    counter=self.counter,
                    limit=None if self.no_limit.isChecked() else self.limit.value(),
                    based_on=self.based_on,
                )
            )
        if self.release.value() > 0:
            out.append(
                ReleaseBudget(
                    task_id=self.task_id,
                    counter=self.counter,
                    amount=self.release.value(),
                    reason=self.reason.text().strip(),
                )
            )
        return out
