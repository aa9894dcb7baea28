"""Two approvers from the window (issue 32): a 2-of-2 quorum, completed by a second process.

The window approves as one person (maria): the request stays pending, "1 of 2", and a
dispatch is refused. A second process, the real `boris` CLI acting as another person (ben),
approves it: the open dialog follows the store and shows it approved, and the dispatch is
accepted. On both engines: the desktop's tests use SQLite by default (see conftest), so the
store here is opened on a PostgreSQL team store too (`pg_url`), as test_desktop_live does.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import pytest
from PySide6.QtCore import QPoint, QRect
from PySide6.QtWidgets import QPushButton
from test_desktop_actions import WAIT_MS, armed, done, open_window

from store import Actor, CommandRejected, Store
from store import commands as c
from store.commands.approvals import RequestApproval, SetApprovalPolicy
from store.commands.effects import DispatchEffect, PlanEffect

AGENT = Actor(kind="agent", id="writer-7")
OWNER = Actor(kind="person", id="owner")
POLICY = "payments need two people"
ROOT = Path(__file__).resolve().parent.parent
BORIS = Path(sys.executable).with_name("boris")


@pytest.fixture(autouse=True)
def _reviewer(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("BORIS_DESKTOP_SETTINGS", str(tmp_path / "settings.ini"))
    from boris_desktop import settings

    settings.set_reviewer("Maria Rossi", "maria")


@pytest.fixture(params=["sqlite", "postgresql"])
def engine_store(
    request: pytest.FixtureRequest, tmp_path: Path
) -> Iterator[tuple[Store, Path, str | None]]:
    """A store on each engine, and where a second process finds it (directory, URL)."""
    url = str(request.getfixturevalue("pg_url")) if request.param == "postgresql" else None
    directory = tmp_path / "store"
    s = Store.open(directory, url=url)
    yield s, directory, url
    # The window's last reads finish on the pool before the store closes (test_desktop_live).
    from PySide6.QtCore import QThreadPool

    QThreadPool.globalInstance().waitForDone(10_000)
    s.close()


def _asked(store: Store, ws: Path) -> tuple[str, str, str]:
    """A payment email under a policy the owner set to two people: (task, effect, approval)."""
    store.execute(SetApprovalPolicy(policy=POLICY, approvers=2), OWNER)
    tid: str = store.execute(
        c.CreateTask(
            title="Pay the invoice",
            owner="maria",
            objective="send the payment order",
            scope_paths=[str(ws)],
            destinations=["mailto:accounts@example.org"],
        ),
        AGENT,
    )
    eid: str = store.execute(
        PlanEffect(
            task_id=tid,
            kind="send",
            target="mailto:accounts@example.org",
            consequence="order the payment of 1200 EUR",
            intended={"exists": True},
            prepared={
                "to": ["accounts@example.org"],
                "subject": "Payment order",
                "body": "Please pay invoice 2026-118: 1200 EUR.",
            },
            requires_approval=True,
            policy=POLICY,
        ),
        AGENT,
    )
    aid: str = store.execute(RequestApproval(task_id=tid, effect_id=eid, policy=POLICY), AGENT)
    return tid, eid, aid


def _dispatch(store: Store, tid: str, eid: str) -> int:
    n: int = store.execute(DispatchEffect(task_id=tid, effect_id=eid, executor="mailer"), AGENT)
    return n


def _state(store: Store, tid: str, aid: str) -> str:
    return str(next(a for a in store.task(tid)["approvals"] if a["approval_id"] == aid)["state"])


def test_two_of_two_the_window_then_a_second_reviewers_cli(
    qtbot, engine_store: tuple[Store, Path, str | None], ws: Path
) -> None:
    from boris_desktop.decide.approve import ApproveDialog

    store, store_dir, store_url = engine_store

    tid, eid, aid = _asked(store, ws)
    w = open_window(qtbot, store, tid)
    d = ApproveDialog(w, tid, aid)
    qtbot.addWidget(d)
    d.show()
    qtbot.waitUntil(lambda: d.decision is not None, timeout=WAIT_MS)
    assert d.fields.approved.isVisibleTo(d)
    assert d.fields.approved.text() == "nobody yet (0 of 2)"
    assert d.ok.text().replace("&", "") == "Approve (1st of 2)"
    armed(qtbot, d.ok)
    d.ok.click()  # maria, from the window
    done(qtbot, w, d)
    assert _state(store, tid, aid) == "pending"
    with pytest.raises(CommandRejected, match="1 of 2 approved by maria"):
        _dispatch(store, tid, eid)

    # Opened again by maria: who approved so far, and no second approval of hers offered.
    again = ApproveDialog(w, tid, aid)
    qtbot.addWidget(again)
    again.show()
    qtbot.waitUntil(lambda: again.decision is not None, timeout=WAIT_MS)
    assert again.fields.approved.text().startswith("maria (1 of 2)")
    assert "another person must approve" in again.fields.approved.text()
    assert again.ok.text().replace("&", "") == "Approve (2nd of 2)"
    # Past the arming delay: still not offered, it is hers already.
    qtbot.waitUntil(lambda: again.armed, timeout=WAIT_MS)
    assert not again.ok.isEnabled()
    assert again.reject_button.isEnabled()  # a rejection by any one, hers too, ends it

    # A second reviewer, in another process: the real CLI.
    where = ["--store", str(store_dir)] + (["--url", store_url] if store_url else [])
    ben = subprocess.run(
        [str(BORIS), "approve", tid, aid, "--actor", "person:ben", "--note", "Checked", *where],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert ben.returncode == 0, ben.stderr
    # The open dialog follows the store: approved, by ben, now nothing left to decide.
    qtbot.waitUntil(lambda: again.decision.state == "approved", timeout=WAIT_MS)
    assert [a.id for a in again.decision.approved_by] == ["maria", "ben"]
    assert "approved" in again.changed.text().lower()
    assert not again.ok.isEnabled()
    assert _dispatch(store, tid, eid) == 1
    again.reject()
    w.close()  # its server connection (a team store's listener) closes with it


def test_the_quorum_dialog_keeps_its_buttons_on_a_1024x700_screen(
    qtbot, store: Store, ws: Path
) -> None:
    from boris_desktop.decide.approve import ApproveDialog

    tid, _, aid = _asked(store, ws)
    w = open_window(qtbot, store, tid)
    d = ApproveDialog(w, tid, aid)
    qtbot.addWidget(d)
    d.show()
    qtbot.waitUntil(lambda: d.decision is not None, timeout=WAIT_MS)
    room = QRect(0, 0, 1024, 700 - 40)
    d.setMaximumSize(room.width() - 16, room.height() - 40)
    d.resize(d.maximumSize())
    d.fit_screen(room)
    qtbot.wait(50)
    shown = d.rect()
    outside = [
        b.text()
        for b in d.findChildren(QPushButton)
        if b.isVisibleTo(d) and not shown.contains(QRect(b.mapTo(d, QPoint(0, 0)), b.size()))
    ]
    assert not outside
    assert d.height() <= room.height() - 40
    d.reject()
