"""The reviewer's passkeys dialog (File › Reviewer Passkeys…, issue 43).

Who the reviewer is (the actor their decisions are signed as), the passkeys the store
registers for them, read on a worker and revoked there after a confirmation (signed by their
desktop key, as `boris passkeys revoke`), and the registration of a new one on the phone
through `boris serve`'s one-time link. The store refuses what it refuses (PasskeyRefused and
the like, typed); the refusal is shown here.
"""

from __future__ import annotations

from PySide6.QtWidgets import QDialog, QVBoxLayout, QWidget

from boris_desktop.decide.base import reviewer_actor
from boris_desktop.host import Host
from boris_desktop.reviewer.passkey_list import PasskeyList
from boris_desktop.reviewer.register import RegisterPanel
from boris_desktop.ui.widgets import error_label, heading, plain_label
from store import api


class PasskeysDialog(QDialog):
    """The reviewer, their passkeys, and a way to register one on their phone."""

    def __init__(self, host: Host) -> None:
        super().__init__(host if isinstance(host, QWidget) else None)
        self.host = host
        self.setWindowTitle("Reviewer — Passkeys")
        layout = QVBoxLayout(self)
        self.who = plain_label("", name="You review as")
        layout.addWidget(self.who)
        layout.addSpacing(4)
        layout.addWidget(heading("Your passkeys: they decide for you on the decision page"))
        self.passkeys = PasskeyList(self.read)
        self.passkeys.revoke.connect(self.revoke)
        layout.addWidget(self.passkeys, 1)
        self.error = error_label("Why the store refused")
        self.error.hide()
        layout.addWidget(self.error)
        layout.addSpacing(8)
        layout.addWidget(heading("Register a passkey on your phone"))
        self.register = RegisterPanel()
        self.register.start_asked.connect(self.start_server)
        layout.addWidget(self.register)
        self.finished.connect(lambda _r: self.register.stop())
        self.last_error: Exception | None = None
        self.resize(860, 600)
        self.read()

    def actor(self) -> api.Actor | None:
        me: api.Actor | None = reviewer_actor()
        if me is None:
            self.who.setText("Say who you are first (File › Reviewer…): passkeys are a person's.")
        else:
            self.who.setText(
                f"You review as {me.name} (person:{me.id}): your decisions are signed as "
                "this actor, by your desktop key; a passkey lets your phone sign them too."
            )
        return me

    def read(self) -> None:
        store, me = self.host.store, self.actor()
        if store is None or me is None:
            self.passkeys.summary.setText("No store is open, or no reviewer: nothing to read.")
            return
        self.host.loader.submit(
            f"passkeys:{id(self)}",
            lambda: api.reviewer_passkeys(store, me),
            self.passkeys.show_passkeys,
            self.failed,
        )

    def revoke(self, credential_id: str) -> None:
        store, me = self.host.store, self.actor()
        if store is None or me is None:
            return
        self.error.hide()
        self.passkeys.busy = True
        self.passkeys.refresh()
        self.host.loader.submit(
            f"passkey-revoke:{id(self)}",
            lambda: api.revoke_reviewer_passkey(store, me, credential_id),
            self.revoked,
            self.failed,
        )

    def revoked(self, _gone: api.Passkey) -> None:
        self.passkeys.busy = False
        self.last_error = None
        self.read()

    def failed(self, error: Exception) -> None:
        self.passkeys.busy = False
        self.last_error = error
        self.error.setText(f"Refused: {error}")
        self.error.show()
        self.read()
        self.passkeys.refresh()

    def start_server(self) -> None:
        store, me = self.host.store, self.actor()
        if store is None or me is None:
            self.register.status.setText("Open a store and say who you are first.")
            return
        self.register.start(api.serve_argv(store, me, self.register.port.value()))
