"""Reviewer actions: every command runs through `store.execute` on a worker, as the reviewer.

`ActionDialog` is the shape every action dialog shares: what will happen, the fields the
reviewer fills in, a red line for the store's refusal, and buttons that are disabled while the
command runs. A refusal reaches the dialog as the store's typed exception, through the loader (`CommandRejected`
and its kinds: `TargetChanged`, `AuthorityRefused`, …), handled by its type, never by
reading its words; the window reloads so the reviewer sees why. Success closes the dialog.

Decisions that cannot be undone (approve, reject, a reconciliation verdict, stop, a final
checkpoint) are made deliberately: no button is the default (Return in a field never
presses one), focus starts in the note, and the decision buttons are armed only a second
after the dialog opened or the content it shows last changed. Browsers arm their install
prompts the same way: a reviewer typing a note when the dialog appears, or pressing Space a
moment after the content changed under them, cannot decide by accident; a reviewer who
reads and then clicks never notices the delay.

Every dialog fits the screen it opens on, down to 1024×700: its content scrolls, the row of
decision buttons stays below it in sight, and the dialog is no taller than the screen's
available room (an Approve dialog 760 px high put its buttons below a 700-high screen).

Tab visits what the dialog shows in the order it is read: top to bottom, a row left to right,
the buttons last (the layouts' order, `tab_stops`); the scrolled content is not a stop of its
own, a hidden or disabled widget is skipped. Text the person typed is not thrown away
unasked: Escape, Cancel and the window's close button ask first (`unsaved`); a typed
confirmation (a task id) is not such text.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator
from typing import Any

from PySide6.QtCore import QSize, Qt, QTimer
from PySide6.QtWidgets import (
    QDialog,
    QDialogButtonBox,
    QFrame,
    QLayout,
    QLineEdit,
    QMessageBox,
    QPlainTextEdit,
    QPushButton,
    QScrollArea,
    QSizePolicy,
    QVBoxLayout,
    QWidget,
)

from boris_desktop import screen_fit, settings
from boris_desktop.host import Host
from boris_desktop.ui.widgets import error_label, plain_label

_serial = itertools.count(1)

#: How long after the dialog opened, or its content last changed, a decision is armed.
ARM_MS = 1000
#: A field whose text is a typed confirmation (the task id), not the person's words: leaving
#: the dialog does not ask for it (`confirmation`).
CONFIRMATION = "confirmation"


def confirmation(field: QLineEdit) -> QLineEdit:
    """Mark `field` as a typed confirmation: closing the dialog throws nothing away with it."""
    field.setProperty(CONFIRMATION, True)
    return field


def tab_stops(layout: QLayout | None) -> Iterator[QWidget]:
    """The widgets Tab may stop at under `layout`, in the order they are read: the layouts'
    own order (top to bottom, a row left to right), into nested layouts and the scrolled
    content; a scroll area holding content is not a stop itself."""
    if layout is None:
        return
    for i in range(layout.count()):
        item = layout.itemAt(i)
        if item is None:
            continue
        widget, inner = item.widget(), item.layout()
        if widget is not None:
            yield from _widget_stops(widget)
        elif inner is not None:
            yield from tab_stops(inner)


def _widget_stops(widget: QWidget) -> Iterator[QWidget]:
    if isinstance(widget, QScrollArea):
        content = widget.widget()
        if content is not None:
            yield from _widget_stops(content)
        return
    if widget.focusPolicy() & Qt.FocusPolicy.TabFocus:
        yield widget
    yield from tab_stops(widget.layout())


def typed(field: QWidget) -> bool:
    """Whether the person changed the field's text (a text set by the dialog is not typed:
    setting it clears the field's modified mark)."""
    if isinstance(field, QLineEdit):
        return not field.isReadOnly() and field.isModified()
    if isinstance(field, QPlainTextEdit):
        return not field.isReadOnly() and field.document().isModified()
    return False


def reviewer_actor() -> Any:
    """The reviewer as the store's Actor, or None before they have said who they are."""
    from store.api import Actor

    who = settings.reviewer()
    if who is None:
        return None
    name, rid = who
    return Actor(kind="person", id=rid, name=name)


def execute_as(store: Any, command: Any, actor: Any) -> Any:
    """Run `command` as the reviewer, signed with their key where the store is signed (the
    store decides: `Store.sign_as`). Called on a worker: it reads the store. A list of
    commands (one decision that is several, as a new limit and a released reservation) is
    written in one transaction: all of it, or none."""
    store.sign_as(actor)
    if isinstance(command, list):
        return store.execute_all(command, actor)
    return store.execute(command, actor)


def run_command(
    host: Host,
    make: Callable[[], Any],
    on_done: Callable[[Any], None],
    on_error: Callable[[Exception], None],
) -> bool:
    """Build the command (a validation error is a refusal too) and execute it on a worker.

    Returns False when nothing ran (no reviewer yet, or the command did not validate).
    """
    from pydantic import ValidationError

    from store.api import CommandRejected, StoreError

    store = host.store
    actor = reviewer_actor()
    if store is None:
        on_error(StoreError("no store is open"))
        return False
    if actor is None:
        on_error(
            StoreError("say who you are first (File → Reviewer…): decisions are attributed to you")
        )
        host.ask_reviewer()
        return False
    try:
        command = make()
    except ValidationError as exc:
        errs = exc.errors()
        on_error(
            CommandRejected("; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in errs))
        )
        return False
    except ValueError as exc:
        on_error(CommandRejected(str(exc)))
        return False

    def done(result: Any) -> None:
        on_done(result)
        host.reload()

    def failed(error: Exception) -> None:
        on_error(error)
        host.reload()

    # Told before it runs: the queue may read the write's outcome before `done` is called.
    own_write = getattr(host, "own_write", None)
    first = command[0] if isinstance(command, list) and command else command
    task_id = getattr(first, "task_id", None)
    if callable(own_write) and isinstance(task_id, str):
        own_write(task_id)
    host.loader.submit(
        f"act:{next(_serial)}", lambda: execute_as(store, command, actor), done, failed
    )
    return True


class ContentScroll(QScrollArea):
    """The dialog's content, scrolled when the screen is shorter than it. It asks for the
    content's whole size (QScrollArea asks for at most 24 lines), so a dialog with room
    shows everything without a scroll bar."""

    def __init__(self, content: QWidget) -> None:
        super().__init__()
        self.setWidget(content)
        self.setWidgetResizable(True)
        self.setFrameShape(QFrame.Shape.NoFrame)
        self.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAsNeeded)

    def sizeHint(self) -> QSize:
        content = self.widget()
        if content is None:
            return super().sizeHint()
        hint = content.sizeHint()
        bar = self.verticalScrollBar().sizeHint().width()
        return QSize(hint.width() + bar, hint.height())

    def minimumSizeHint(self) -> QSize:
        # Any height: the content scrolls. As wide as the content's least width, so that
        # only a screen narrower than that scrolls sideways.
        content = self.widget()
        width = content.minimumSizeHint().width() if content is not None else 0
        return QSize(width + self.verticalScrollBar().sizeHint().width(), 60)


def no_default(button: QPushButton) -> QPushButton:
    """Never the default button: Return in a field never presses it; only a click, its
    mnemonic, or Space or Return with the focus on it (ActionDialog.keyPressEvent)."""
    button.setAutoDefault(False)
    button.setDefault(False)
    return button


class ActionDialog(QDialog):
    """A non-modal dialog for one action; `act()` runs it, the store's refusal stays visible."""

    #: A decision that cannot be undone: armed only ARM_MS after the content last changed.
    irreversible = False

    def __init__(self, host: Host, title: str, ok_text: str) -> None:
        super().__init__(host if isinstance(host, QWidget) else None)
        self.host = host
        self.setWindowTitle(title)
        self.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose, False)
        self.result_value: Any = None
        self.running = False
        self.error = error_label("Why the store refused")
        self.error.hide()
        self.last_error: Exception | None = None
        self.buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Cancel)
        cancel = self.buttons.button(QDialogButtonBox.StandardButton.Cancel)
        if cancel is not None:
            no_default(cancel)
        self.ok = no_default(QPushButton(ok_text))
        self.ok.setAccessibleName(ok_text.replace("&", ""))
        self.buttons.addButton(self.ok, QDialogButtonBox.ButtonRole.AcceptRole)
        self.ok.clicked.connect(self.act)
        # Cancel asks first when the person typed something (`leave`).
        self.buttons.rejected.connect(self.leave)
        #: The question asked before typed text is thrown away, while it is open.
        self.discard_box: QMessageBox | None = None
        self.body_widget = QWidget()
        self.body = QVBoxLayout(self.body_widget)
        self.body.setContentsMargins(0, 0, 0, 0)
        self.body_scroll = ContentScroll(self.body_widget)
        # Not a stop of its own: Tab goes to what it holds (which it scrolls into sight).
        self.body_scroll.setFocusPolicy(Qt.FocusPolicy.NoFocus)
        layout = QVBoxLayout(self)
        layout.addWidget(self.body_scroll, 1)
        layout.addWidget(self.error)
        layout.addWidget(self.buttons)
        screen_fit.cap_height(self)
        self.armed = not self.irreversible
        self._arm_timer = QTimer(self)
        self._arm_timer.setSingleShot(True)
        self._arm_timer.setInterval(ARM_MS)
        self._arm_timer.timeout.connect(self._arm)
        if self.irreversible:
            self._arm_timer.start()

    def add(self, widget: QWidget, stretch: int = 0) -> QWidget:
        self.body.addWidget(widget, stretch)
        return widget

    def reason_field(self, placeholder: str) -> QLineEdit:
        """The person's reason, labelled and added: the decision is re-judged as it is typed
        (a reason the dialog requires keeps its button disabled until there is one)."""
        field = QLineEdit()
        field.setAccessibleName("Reason")
        field.setPlaceholderText(placeholder)
        field.textChanged.connect(self.refresh_buttons)
        self.add(plain_label("Reason:"))
        self.add(field)
        return field

    def add_button(self, text: str, tip: str = "") -> QPushButton:
        """A further button beside OK, never the default (`no_default`)."""
        b = no_default(QPushButton(text))
        b.setAccessibleName(text.replace("&", ""))
        if tip:
            b.setToolTip(tip)
        self.buttons.addButton(b, QDialogButtonBox.ButtonRole.ActionRole)
        return b

    def first_field(self) -> QWidget | None:
        """Where focus starts: the note (or the first field), never a decision button."""
        return None

    def showEvent(self, event: Any) -> None:
        # A dialog of labels and one-line fields keeps them together at the top when made
        # taller, rather than spreading them down the window.
        if not any(self.body.stretch(i) for i in range(self.body.count())):
            self.body.addStretch(1)
        self.fit_screen()
        super().showEvent(event)
        # QDialogButtonBox makes its first accept button the default when it is shown:
        # undo that, so that Return in a field never presses a button.
        for button in self.findChildren(QPushButton):
            no_default(button)
        self.order_tabs()
        field = self.first_field()
        if field is not None:
            field.setFocus(Qt.FocusReason.OtherFocusReason)

    def order_tabs(self) -> None:
        """Tab follows the reading order (`tab_stops`), widgets added since included."""
        stops = list(tab_stops(self.layout()))
        for first, second in itertools.pairwise(stops):
            QWidget.setTabOrder(first, second)

    def focusNextPrevChild(self, next: bool) -> bool:
        # Ordered again at each Tab: a dialog adds rows (heads, choices) as the store changes.
        self.order_tabs()
        return super().focusNextPrevChild(next)

    # --- leaving -------------------------------------------------------------------------

    def unsaved(self) -> bool:
        """Whether the person typed text that closing the dialog would throw away."""
        fields = [*self.findChildren(QLineEdit), *self.findChildren(QPlainTextEdit)]
        return any(typed(f) and not f.property(CONFIRMATION) for f in fields)

    def leave(self) -> None:
        """The person's Escape or Cancel: close, asking first if they typed something."""
        if not self._ask_first():
            self.reject()

    def _ask_first(self) -> bool:
        """True when leaving waits for the person's answer (the question is shown)."""
        if self.running or not self.isVisible() or not self.unsaved():
            return False
        box = self.discard_box
        if box is None:
            box = QMessageBox(
                QMessageBox.Icon.Question,
                "Discard your text?",
                "You typed text in this dialog that is not saved. Closing it discards it.",
                QMessageBox.StandardButton.Discard | QMessageBox.StandardButton.Cancel,
                self,
            )
            box.setTextFormat(Qt.TextFormat.PlainText)
            keep = box.button(QMessageBox.StandardButton.Cancel)
            if keep is not None:
                keep.setText("&Keep editing")
            # Return or Escape in the question keeps the text: only a click discards it.
            box.setDefaultButton(QMessageBox.StandardButton.Cancel)
            box.setEscapeButton(QMessageBox.StandardButton.Cancel)
            box.finished.connect(self._answered)
            self.discard_box = box
        box.open()
        return True

    def _answered(self, answer: int) -> None:
        if answer == QMessageBox.StandardButton.Discard:
            self.reject()

    def closeEvent(self, event: Any) -> None:
        # The window's close button: as Cancel.
        if self._ask_first():
            event.ignore()
            return
        super().closeEvent(event)

    def keyPressEvent(self, event: Any) -> None:
        if event.key() == Qt.Key.Key_Escape and event.modifiers() in (
            Qt.KeyboardModifier.NoModifier,
            Qt.KeyboardModifier.KeypadModifier,
        ):
            self.leave()
            return
        # Return on a button the reviewer moved the focus to presses it, as Space does (no
        # button is a default one, so Qt would ignore it). Only an enabled button: a
        # decision is disabled until armed, so a stray Return as the dialog opens decides
        # nothing, and Return in a field still presses no button.
        if event.key() in (Qt.Key.Key_Return, Qt.Key.Key_Enter) and event.modifiers() in (
            Qt.KeyboardModifier.NoModifier,
            Qt.KeyboardModifier.KeypadModifier,
        ):
            focused = self.focusWidget()
            if isinstance(focused, QPushButton) and focused.isEnabled():
                focused.click()
                return
        super().keyPressEvent(event)

    def fit_screen(self, room: Any = None) -> None:
        """No larger than the available room of the screen it opens on (`room`, a QRect, in
        tests); the content scrolls, the buttons stay in sight."""
        parent = self.parentWidget()
        room = room if room is not None else screen_fit.available(parent or self)
        screen_fit.cap_height(self, room)
        limit = self.maximumSize()
        if self.width() > limit.width() or self.height() > limit.height():
            self.resize(min(self.width(), limit.width()), min(self.height(), limit.height()))

    def fit(self, min_width: int = 480, max_width: int = 900) -> None:
        """Size the dialog to its content: wide enough for its lines and placeholders."""
        self.adjustSize()
        hint = self.sizeHint()
        self.resize(max(min_width, min(hint.width(), max_width)), hint.height())
        self.setSizePolicy(QSizePolicy.Policy.Preferred, QSizePolicy.Policy.Preferred)

    # --- arming --------------------------------------------------------------------------

    def rearm(self) -> None:
        """The content shown changed: decisions wait ARM_MS again before they are armed."""
        if not self.irreversible:
            return
        self.armed = False
        self._arm_timer.start()
        self.refresh_buttons()

    def _arm(self) -> None:
        self.armed = True
        self.refresh_buttons()

    # --- to override ---------------------------------------------------------------------

    def command(self) -> Any:
        """The store command this dialog's fields describe. Every dialog defines it (a test
        checks); the base class has no command of its own to send."""
        raise NotImplementedError(f"{type(self).__name__} does not say which command it sends")

    def ready(self) -> bool:
        return True

    # --- running -------------------------------------------------------------------------

    def can_decide(self) -> bool:
        return not self.running and self.armed and self.ready()

    def refresh_buttons(self) -> None:
        self.ok.setEnabled(self.can_decide())

    def refuse(self, message: str) -> None:
        self.error.setText(message)
        self.error.show()

    def act(self) -> None:
        self.run(self.command)

    def run(self, make: Callable[[], Any]) -> None:
        if self.running or not self.can_decide():
            return
        self.running = True
        self.refresh_buttons()
        self.error.hide()
        if not run_command(self.host, make, self._done, self._failed):
            self.running = False
            self.refresh_buttons()

    def _done(self, result: Any) -> None:
        self.running = False
        self.result_value = result
        self.host.statusBar().showMessage(f"{self.windowTitle()}: done", 5000)
        self.accept()

    def _failed(self, error: Exception) -> None:
        self.running = False
        self.last_error = error
        self.refuse(str(error))
        self.refresh_buttons()
        self.host.statusBar().showMessage(f"{self.windowTitle()}: refused — {error}", 10000)
