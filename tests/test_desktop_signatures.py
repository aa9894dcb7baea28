"""The window shows who signed the record: each event's signer in the timeline, each
decision's and checkpoint's in their panels, anything unsigned or signed by an unknown key
marked in words and an icon; and File › Export My Public Key… hands out the reviewer's key."""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Any

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import pytest
import sqlalchemy as sa
from test_desktop_actions import WAIT_MS, done, open_window, settle

from store import Actor, Store
from store import commands as c
from store import schema as t
from store import store as store_module
from store.commands.approvals import DecideApproval, RequestApproval
from store.commands.checkpoints import WriteCheckpoint
from store.services.demo import fill_demo
from store.signing.keys import SigningKey, person_key, person_key_path
from store.signing.seal import encode_signature, record_message
from store.signing.trust import add_key, require

BOT = Actor(kind="agent", id="bot", name="Builder Bot")
RITA = Actor(kind="person", id="rita", name="Rita Reviewer")


@pytest.fixture(autouse=True)
def _reviewer(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("BORIS_DESKTOP_SETTINGS", str(tmp_path / "settings.ini"))
    from boris_desktop import settings

    settings.set_reviewer("Rita Reviewer", "rita")


class Signed:
    """A store that requires signatures: Rita (the reviewer, her own key) is its root and
    trusts the agent's key; the agent writes a task with an approval and a checkpoint."""

    def __init__(self, store: Store, ws: Path) -> None:
        self.store = store
        self.rita = person_key("rita")
        self.bot = SigningKey.generate()
        require(store, self.rita, RITA)
        add_key(store, self.rita, self.bot.public_raw, BOT)
        self.tid = self.as_(
            self.bot,
            c.CreateTask(title="Signed", owner="rita", objective="x", scope_paths=[str(ws)]),
            BOT,
        )
        self.aid = self.as_(
            self.bot,
            RequestApproval(
                task_id=self.tid, payload={"to": "x"}, consequence="sends x", policy="p"
            ),
            BOT,
        )
        self.as_(
            self.rita,
            DecideApproval(task_id=self.tid, approval_id=self.aid, decision="approved"),
            RITA,
        )
        self.as_(self.bot, WriteCheckpoint(task_id=self.tid, reason="milestone"), BOT)
        (self.cid,) = store.task(self.tid)["checkpoints"]["heads"]

    def as_(self, key: SigningKey | None, command: Any, actor: Actor) -> Any:
        self.store.signer = key
        try:
            return self.store.execute(command, actor)
        finally:
            self.store.signer = None


def signed_by(panel: Any, column: int) -> dict[str, tuple[str, str]]:
    """Each row's key -> (the signer cell's words, its icon's name) as the view shows them."""
    from PySide6.QtCore import QModelIndex, Qt

    from boris_desktop.ui.icons import icon

    model = panel.tree.records
    names = ("signed", "attention", "failed")
    out = {}
    parents = [QModelIndex()]
    while parents:
        parent = parents.pop()
        for row in range(model.rowCount(parent)):
            ix = model.index(row, column, parent)
            deco = ix.data(Qt.ItemDataRole.DecorationRole)
            name = next(
                (n for n in names if deco is not None and deco.cacheKey() == icon(n).cacheKey()),
                "",
            )
            out[model.node(ix).key] = (ix.data(), name)
            parents.append(ix.siblingAtColumn(0))
    return out


def shown(panel: Any) -> set[str]:
    return {n.key for n in panel.tree.records.roots}


def column(panel: Any, title: str) -> int:
    return panel.headers.index(title)


def events_by(store: Store, tid: str) -> dict[str, list[int]]:
    out: dict[str, list[int]] = {}
    for e in store.events(tid):
        out.setdefault(e["actor"]["id"], []).append(e["seq"])
    return out


def test_a_signed_store_shows_who_signed_each_event_decision_and_checkpoint(
    qtbot, store: Store, ws: Path
) -> None:
    s = Signed(store, ws)
    w = open_window(qtbot, store, s.tid)
    bot_fp, rita_fp = s.bot.key_id[:8], s.rita.key_id[:8]

    timeline = w.task_view.panel("Timeline")
    cells = signed_by(timeline, column(timeline, "Signed by"))
    by = events_by(store, s.tid)
    assert set(by) == {"bot", "rita"}
    for seq in by["bot"]:
        assert cells[str(seq)] == (f"Builder Bot · {bot_fp}", "signed")
    for seq in by["rita"]:
        assert cells[str(seq)] == (f"Rita Reviewer · {rita_fp}", "signed")
    ix = timeline.tree.records.index(0, column(timeline, "Signed by"))
    from PySide6.QtCore import Qt

    assert s.bot.key_id in ix.data(Qt.ItemDataRole.ToolTipRole)  # the whole fingerprint

    approvals = w.task_view.panel("Approvals")
    assert signed_by(approvals, column(approvals, "Decision signed by")) == {
        s.aid: (f"Rita Reviewer · {rita_fp}", "signed")
    }
    checkpoints = w.task_view.panel("Checkpoints")
    cps = signed_by(checkpoints, column(checkpoints, "Signed by"))
    assert cps[s.cid] == (f"Builder Bot · {bot_fp}", "signed")
    assert len(cps) == len(store.task(s.tid)["checkpoints"]["checkpoints"])
    header = w.task_view.header
    assert header.signatures.text().startswith(
        "required · 4 signed writes, the last by Builder Bot"
    )
    assert not header.unsigned.isVisible()
    # Her key, as the store trusts it.
    key = w.export_public_key()
    qtbot.waitUntil(key.copy.isEnabled, timeout=WAIT_MS)
    assert key.line.startswith(f"{s.rita.key_id} person:rita ")
    assert "keyring trusts this key for you" in key.trust.text()
    key.reject()

    # The reviewer's own decision from the window is signed with her key, and shown so.
    w.menu_actions.amend_action.trigger()
    d = w.menu_actions.dialog
    d.text.setPlainText("y")
    d.reason.setText("clearer")
    d.ok.click()
    done(qtbot, w, d)
    newest = store.events(s.tid)[-1]["seq"]
    qtbot.waitUntil(lambda: str(newest) in shown(timeline), timeout=WAIT_MS)
    assert signed_by(timeline, column(timeline, "Signed by"))[str(newest)] == (
        f"Rita Reviewer · {rita_fp}",
        "signed",
    )


def test_events_past_the_last_signature_are_marked_unsigned(qtbot, store: Store, ws: Path) -> None:
    s = Signed(store, ws)
    # Written straight past the signing (as a forger with the database file would): the
    # store's chain is right, but no key covers the events.
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(store_module, "seal", lambda *a: None)
        s.as_(None, c.AddCriterion(task_id=s.tid, text="forged"), BOT)
    tail = store.events(s.tid)[-1]["seq"]
    w = open_window(qtbot, store, s.tid)
    timeline = w.task_view.panel("Timeline")
    cells = signed_by(timeline, column(timeline, "Signed by"))
    assert cells[str(tail)] == ("unsigned", "attention")
    assert cells[str(tail - 1)] == (f"Builder Bot · {s.bot.key_id[:8]}", "signed")
    banner = w.task_view.header.unsigned
    assert banner.isVisible()
    assert banner.label.text() == f"Events after seq {tail - 1} are not signed by any key."
    # The decision and the checkpoint before it are still shown signed.
    approvals = w.task_view.panel("Approvals")
    assert signed_by(approvals, column(approvals, "Decision signed by"))[s.aid][1] == "signed"


def test_a_signature_by_a_key_the_keyring_does_not_know_is_marked_unknown(
    qtbot, store: Store, ws: Path
) -> None:
    s = Signed(store, ws)
    stranger = SigningKey.generate()

    def sign_as_stranger(conn: Any, policy: Any, signer: Any, emitted: Any, now: str) -> None:
        e = emitted[-1]
        conn.execute(
            sa.insert(t.signatures).values(
                task_id=e.task_id,
                seq=e.seq,
                key_id=stranger.key_id,
                signature=encode_signature(stranger.sign(record_message(e.task_id, e.seq, e.hash))),
            )
        )

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(store_module, "seal", sign_as_stranger)
        s.as_(None, WriteCheckpoint(task_id=s.tid, reason="milestone", note="by a stranger"), BOT)
    forged_cp = store.task(s.tid)["checkpoints"]["heads"][0]
    seq = store.events(s.tid)[-1]["seq"]
    w = open_window(qtbot, store, s.tid)
    timeline = w.task_view.panel("Timeline")
    unknown = (f"unknown key {stranger.key_id[:8]}", "failed")
    assert signed_by(timeline, column(timeline, "Signed by"))[str(seq)] == unknown
    checkpoints = w.task_view.panel("Checkpoints")
    marks = signed_by(checkpoints, column(checkpoints, "Signed by"))
    assert marks[forged_cp] == unknown
    assert marks[s.cid] == (f"Builder Bot · {s.bot.key_id[:8]}", "signed")
    header = w.task_view.header
    assert f"the last by an unknown key {stranger.key_id[:8]}" in header.signatures.text()
    assert stranger.key_id in header.unsigned.label.text() and header.unsigned.isVisible()


def test_an_unsigned_store_raises_no_alarm_and_says_it_is_unsigned(qtbot, store: Store) -> None:
    fill_demo(store)
    w = open_window(qtbot, store, "guide")  # decided approval, checkpoints
    header = w.task_view.header
    assert header.signatures.text() == "unsigned store: its writes are not signed by any key"
    assert not header.unsigned.isVisible()
    for title, col in (
        ("Timeline", "Signed by"),
        ("Checkpoints", "Signed by"),
        ("Approvals", "Decision signed by"),
    ):
        panel = w.task_view.panel(title)
        cells = signed_by(panel, column(panel, col))
        assert cells and set(cells.values()) == {("—", "")}
    assert not person_key_path("rita").exists()  # looking makes no key


def test_export_my_public_key_saves_and_copies_the_keys_file_line(
    qtbot, store: Store, tmp_path: Path, monkeypatch, capsys
) -> None:
    from PySide6.QtGui import QGuiApplication
    from PySide6.QtWidgets import QFileDialog

    from store.cli import main as cli

    fill_demo(store)
    w = open_window(qtbot, store)
    assert not person_key_path("rita").exists()
    target = tmp_path / "rita.keys"
    asked: list[tuple[Any, ...]] = []

    def save_as(*args: Any, **kw: Any) -> tuple[str, str]:
        asked.append(args)
        return str(target), ""

    monkeypatch.setattr(QFileDialog, "getSaveFileName", save_as)
    file_menu = w.menuBar().actions()[0].menu()
    entry = next(a for a in file_menu.actions() if a.text() == "Export My Public &Key…")
    entry.trigger()
    d = w.key_dialog
    qtbot.waitUntil(d.save.isEnabled, timeout=WAIT_MS)
    # Created on first use, private to the user.
    assert stat.S_IMODE(person_key_path("rita").stat().st_mode) == 0o600
    assert "The open store does not sign its records" in d.trust.text()
    d.save.click()
    qtbot.waitUntil(lambda: d.saved_to is not None, timeout=WAIT_MS)
    assert asked and d.trust.text() == f"Saved to {target}."
    # The same line `boris keys export` prints for her.
    capsys.readouterr()
    where = ["--store", str(store.location.directory), "--actor", "person:rita"]
    assert cli([*where, "keys", "export"]) == 0
    printed = capsys.readouterr().out
    line = target.read_text()
    assert line == printed and line.startswith(person_key("rita").key_id + " person:rita ")
    d.copy.click()
    assert QGuiApplication.clipboard().text() == line
    d.buttons.rejected.emit()
    settle(qtbot, w)


def test_export_asks_who_the_reviewer_is_first(qtbot, store: Store, monkeypatch) -> None:
    from boris_desktop import settings

    fill_demo(store)
    monkeypatch.setenv("BORIS_DESKTOP_SETTINGS", str(Path(os.environ["XDG_CONFIG_HOME"]) / "s.ini"))
    assert settings.reviewer() is None
    w = open_window(qtbot, store)
    who = w.export_public_key()
    who.name.setText("Maria Keller")
    who.reviewer_id.setText("maria")
    who.buttons.accepted.emit()
    d = w.key_dialog
    qtbot.waitUntil(d.copy.isEnabled, timeout=WAIT_MS)
    assert d.line.split()[1] == "person:maria"
    assert person_key_path("maria").exists()


def test_a_later_signature_covering_the_unsigned_tail_is_shown_live(
    qtbot, store: Store, ws: Path
) -> None:
    s = Signed(store, ws)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(store_module, "seal", lambda *a: None)
        s.as_(None, c.AddCriterion(task_id=s.tid, text="unsigned for now"), BOT)
    tail = store.events(s.tid)[-1]["seq"]
    w = open_window(qtbot, store, s.tid)
    timeline = w.task_view.panel("Timeline")
    signer = column(timeline, "Signed by")
    assert signed_by(timeline, signer)[str(tail)] == ("unsigned", "attention")
    assert w.task_view.header.unsigned.isVisible()
    # The agent's next signed write signs the chain hash it reaches, which commits to the
    # tail: the store now counts the tail as covered by that signature.
    s.as_(s.bot, c.AddCriterion(task_id=s.tid, text="signed"), BOT)
    w.reload_now()
    qtbot.waitUntil(lambda: str(tail + 1) in shown(timeline), timeout=WAIT_MS)
    settle(qtbot, w)
    marks = signed_by(timeline, signer)
    assert (
        marks[str(tail)] == marks[str(tail + 1)] == (f"Builder Bot · {s.bot.key_id[:8]}", "signed")
    )
    assert not w.task_view.header.unsigned.isVisible()
