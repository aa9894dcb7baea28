"""File › Reviewer Passkeys… (issue 43), on the store `boris init` makes: who the reviewer is,
their passkeys (revoked only after a confirmation, signed by their desktop key as `boris
passkeys revoke` is; a refusal of the store shown), and a one-time registration link made by
the real `boris serve` the dialog runs, which the page honours while the dialog is open.
"""

from __future__ import annotations

import json
import os
import socket
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import pytest
from PySide6.QtCore import Qt
from PySide6.QtGui import QAction
from signed_default import PERSON, Signed, signed_default_store
from test_desktop_actions import WAIT_MS, open_window, store_for_window

from store import Store
from store.commands.passkeys import add_passkey
from store.db import database_now
from store.model import Actor

AGENT = "agent:claude"
RITA = Actor(kind="person", id="rita", name="Rita Reviewer")


@pytest.fixture
def signed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Signed:
    found = signed_default_store(tmp_path / "home", AGENT)
    found.use_here(monkeypatch, key=False)  # rita's desktop: her home, her own key
    monkeypatch.setenv("BORIS_DESKTOP_SETTINGS", str(tmp_path / "settings.ini"))
    from boris_desktop import settings

    settings.set_reviewer("Rita Reviewer", "rita")
    return found


@pytest.fixture
def window_store(signed: Signed) -> Iterator[Store]:
    with store_for_window(signed.store_dir, create=False) as s:
        yield s


def _registered(store: Store, credential_id: str) -> None:
    """A passkey as the page records a verified registration (store.web.site)."""
    store.sign_as(RITA)
    with store.transaction() as tx:
        add_passkey(
            tx.conn,
            store.signer,
            RITA,
            credential_id=credential_id,
            public_key="pQECAyYgASFYIA",
            rp_id="localhost",
            origin="http://localhost:8765",
            now=database_now(tx.conn),
        )


def _open_dialog(qtbot, w):
    (action,) = [a for a in w.owner().findChildren(QAction) if a.text() == "Reviewer &Passkeys…"]
    action.trigger()
    d = w.menus.passkeys_dialog
    qtbot.addWidget(d)
    return d


def _page(qtbot, link: str) -> str:
    """The page at `link` (boris serve prints it a moment before uvicorn listens)."""
    for _ in range(100):
        try:
            with urllib.request.urlopen(link, timeout=10) as page:
                return str(page.read().decode())
        except urllib.error.URLError:
            qtbot.wait(200)
    raise AssertionError(f"nothing answers at {link}")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_revoke_a_passkey_only_after_confirming_it(qtbot, signed: Signed, window_store) -> None:
    w = open_window(qtbot, window_store)
    d = _open_dialog(qtbot, w)
    keys = d.passkeys
    qtbot.waitUntil(lambda: keys.found is not None, timeout=WAIT_MS)
    assert "person:rita" in d.who.text()
    assert "No passkey registered yet" in keys.summary.text()

    _registered(window_store, "cred-phone")
    _registered(window_store, "-cred-tablet")
    qtbot.mouseClick(keys.reload_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: keys.table.rowCount() == 2, timeout=WAIT_MS)
    assert "2 passkeys registered for person:rita, 2 deciding now" in keys.summary.text()
    assert not keys.revoke_button.isEnabled()  # nothing selected

    row = [keys.table.item(n, 0).text() for n in range(2)].index("cred-phone")
    keys.table.selectRow(row)
    qtbot.mouseClick(keys.revoke_button, Qt.MouseButton.LeftButton)
    assert keys.confirm.isVisible() and "cred-phone" in keys.confirm_text.text()
    qtbot.mouseClick(keys.keep_it, Qt.MouseButton.LeftButton)
    assert not keys.confirm.isVisible()
    qtbot.wait(200)
    assert _cli_list(signed)["cred-phone"] is None

    qtbot.mouseClick(keys.revoke_button, Qt.MouseButton.LeftButton)
    qtbot.mouseClick(keys.revoke_it, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: "1 deciding now" in keys.summary.text(), timeout=WAIT_MS)
    assert d.last_error is None
    assert _cli_list(signed)["cred-phone"] is not None  # revoked, as the CLI reads it

    # Revoked behind the dialog's back: the store refuses the second revocation, shown.
    tablet = [keys.table.item(n, 0).text() for n in range(2)].index("-cred-tablet")
    keys.table.selectRow(tablet)
    # base64url ids may begin with "-": after `--`, as docs/phone.md shows
    signed.ok("--actor", PERSON, "passkeys", "revoke", "--", "-cred-tablet")
    qtbot.mouseClick(keys.revoke_button, Qt.MouseButton.LeftButton)
    qtbot.mouseClick(keys.revoke_it, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(d.error.isVisible, timeout=WAIT_MS)
    assert "already revoked" in d.error.text()
    qtbot.waitUntil(lambda: "0 deciding now" in keys.summary.text(), timeout=WAIT_MS)
    assert not keys.revoke_button.isEnabled()
    d.close()
    w.close()


def _cli_list(signed: Signed) -> dict[str, str | None]:
    said = json.loads(signed.ok("passkeys", "list", "--json"))["result"]
    return {p["credential_id"]: p["revoked_at"] for p in said["passkeys"]}


def test_register_link_comes_from_boris_serve_while_the_dialog_is_open(
    qtbot, signed: Signed, window_store
) -> None:
    pytest.importorskip("uvicorn")
    w = open_window(qtbot, window_store)
    d = _open_dialog(qtbot, w)
    reg = d.register
    assert "works only while that server runs" in " ".join(
        label.text() for label in reg.findChildren(type(reg.status))
    )
    port = _free_port()
    reg.port.setValue(port)
    qtbot.mouseClick(reg.start_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: bool(reg.link.text()), timeout=60_000)
    link = reg.link.text()
    assert link.startswith(f"http://localhost:{port}/register?token=")
    assert f"localhost:{port}" in reg.status.text() and "Stop" in reg.start_button.text()
    body = _page(qtbot, link)
    assert "Register a passkey" in body and "person:rita" in body

    # Closing the dialog stops the server: the link no longer works.
    d.close()
    qtbot.waitUntil(lambda: reg.process is None, timeout=WAIT_MS)
    with pytest.raises(urllib.error.URLError):
        urllib.request.urlopen(link, timeout=5)

    # A port already taken: boris serve's own refusal, shown plainly.
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        d = _open_dialog(qtbot, w)
        d.register.port.setValue(taken.getsockname()[1])
        qtbot.mouseClick(d.register.start_button, Qt.MouseButton.LeftButton)
        qtbot.waitUntil(d.register.error.isVisible, timeout=60_000)
        assert "boris serve stopped" in d.register.error.text()
        assert not d.register.link.text()
    d.close()
    w.close()
