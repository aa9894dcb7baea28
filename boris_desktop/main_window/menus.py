"""The window's menus and their shortcuts: File (stores, the demo, the reviewer, their key),
View (reload, find, the tabs, the parts of the task), Actions (boris_desktop.decide.menu)
and Help."""

from __future__ import annotations

from typing import TYPE_CHECKING

from PySide6.QtCore import QObject

from boris_desktop import settings
from boris_desktop.main_window.frame import TASK

if TYPE_CHECKING:
    from PySide6.QtWidgets import QMenu

    from boris_desktop.main_window.face import Window


class Menus(QObject):
    """Fills the menus whose titles the first paint showed."""

    def __init__(self, window: Window) -> None:
        super().__init__(window.owner())
        self.w = window

    def build(self) -> None:
        from boris_desktop.decide.menu import Actions

        file, view, actions, help_ = self.w.menu_titles
        self._file(file)
        self._view(view)
        self.w.menu_actions = Actions(self.w, actions)
        self._help(help_)

    def _file(self, file: QMenu) -> None:
        from PySide6.QtGui import QAction, QKeySequence

        w, owner = self.w, self.w.owner()
        act = QAction("&Open Store…", owner)
        act.setShortcut(QKeySequence.StandardKey.Open)
        act.triggered.connect(self._choose_store)
        file.addAction(act)
        self.recent_menu = file.addMenu("Open &Recent")
        self.recent_menu.aboutToShow.connect(self._fill_recent)
        self.demo_action = QAction("Load &Demo Tasks", owner)
        self.demo_action.triggered.connect(w.load_demo)
        file.addAction(self.demo_action)
        file.addSeparator()
        who = QAction("&Reviewer…", owner)
        who.triggered.connect(w.ask_reviewer)
        file.addAction(who)
        passkeys = QAction("Reviewer &Passkeys…", owner)  # issue 43: decide on the phone
        passkeys.triggered.connect(self.show_passkeys)
        file.addAction(passkeys)
        self.export_key_action = QAction("Export My Public &Key…", owner)
        self.export_key_action.setToolTip(
            "Your public key as a keys-file line, for others to trust or verify your decisions"
        )
        self.export_key_action.triggered.connect(w.export_public_key)
        file.addAction(self.export_key_action)
        file.addSeparator()
        quit_ = QAction("&Quit", owner)
        quit_.setShortcut(QKeySequence.StandardKey.Quit)
        quit_.triggered.connect(owner.close)
        file.addAction(quit_)

    def _view(self, view: QMenu) -> None:
        from PySide6.QtCore import Qt
        from PySide6.QtGui import QAction, QKeySequence

        w, owner = self.w, self.w.owner()
        reload_ = QAction("&Reload", owner)
        # F5 (and a keyboard's Refresh key) on every desktop, never the platform's Refresh
        # binding: on GNOME that is Ctrl+R as well, Reconcile's key, and a key two actions
        # share opens nothing. Reconcile keeps Ctrl+R (Actions menu), Resume Ctrl+Shift+R.
        reload_.setShortcuts([QKeySequence(Qt.Key.Key_F5), QKeySequence(Qt.Key.Key_Refresh)])
        reload_.triggered.connect(w.reload)
        view.addAction(reload_)
        for text, key, then in (
            ("&Find Task", QKeySequence(QKeySequence.StandardKey.Find), self._find_task),
            ("Go to &Inbox", QKeySequence("Ctrl+L"), w.table.setFocus),
            ("Go to the &Decision Queue", QKeySequence("Ctrl+D"), w.show_queue),
            ("&What I Decided", QKeySequence("Ctrl+Shift+D"), w.show_history),
        ):
            act = QAction(text, owner)
            act.setShortcut(key)
            act.triggered.connect(then)
            view.addAction(act)
        notify = QAction("&Notifications…", owner)
        notify.triggered.connect(w.notification_settings)
        view.addAction(notify)
        self.rules_action = QAction("Standing R&ules…", owner)
        self.rules_action.setToolTip("The rules that decide calls like one without asking")
        self.rules_action.triggered.connect(self.show_rules)
        view.addAction(self.rules_action)
        view.addSeparator()
        # Ctrl+Tab and Ctrl+PgDown as in browsers and editors; from anywhere in the window,
        # the inbox included.
        for text, sequences, step in (
            ("&Next Part of the Task", ("Ctrl+Tab", "Ctrl+PgDown"), 1),
            ("&Previous Part of the Task", ("Ctrl+Shift+Tab", "Ctrl+PgUp"), -1),
        ):
            act = QAction(text, owner)
            act.setShortcuts([QKeySequence(k) for k in sequences])
            act.triggered.connect(lambda _=False, step=step: self.step_tab(step))
            view.addAction(act)

    def _help(self, help_: QMenu) -> None:
        from PySide6.QtGui import QAction, QKeySequence

        owner = self.w.owner()
        keys = QAction("&Keyboard Shortcuts", owner)
        keys.setShortcut(QKeySequence("Ctrl+/"))
        keys.triggered.connect(self.w.menu_actions.show_shortcuts)
        help_.addAction(keys)
        about = QAction("&About Boris Desktop", owner)
        about.triggered.connect(self.w.show_about)
        help_.addAction(about)

    def step_tab(self, step: int) -> None:
        """Show the next (1) or previous (-1) part of the task, wrapping around."""
        tv = self.w._task_view
        if tv is None or self.w.right.currentIndex() != TASK:
            return
        tv.tabs.setCurrentIndex((tv.tabs.currentIndex() + step) % tv.tabs.count())

    def show_rules(self) -> None:
        """The Rules panel (issue 42), one at a time."""
        from boris_desktop.rules_panel import RulesDialog

        open_ = getattr(self, "rules_dialog", None)
        if open_ is not None and open_.isVisible():
            open_.raise_()
            return
        self.rules_dialog = RulesDialog(self.w)
        self.rules_dialog.show()

    def show_passkeys(self) -> None:
        """The reviewer's passkeys (issue 43), one dialog at a time."""
        from boris_desktop.reviewer import PasskeysDialog

        open_ = getattr(self, "passkeys_dialog", None)
        if open_ is not None and open_.isVisible():
            open_.raise_()
            return
        self.passkeys_dialog = PasskeysDialog(self.w)
        self.passkeys_dialog.show()

    def _find_task(self) -> None:
        self.w.search.setFocus()
        self.w.search.selectAll()

    def _fill_recent(self) -> None:
        self.recent_menu.clear()
        for d in settings.recent_stores():
            act = self.recent_menu.addAction(d)
            act.triggered.connect(lambda _=False, d=d: self.w.open_store(d))
        if self.recent_menu.isEmpty():
            self.recent_menu.addAction("(none yet)").setEnabled(False)

    def _choose_store(self) -> None:
        from PySide6.QtWidgets import QFileDialog

        d = QFileDialog.getExistingDirectory(self.w.owner(), "Open a Boris store")
        if d:
            self.w.open_store(d)
