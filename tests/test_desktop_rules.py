"""The Rules panel (issue 42): View → Standing Rules… lists the rules on record, grants one as
the reviewer and revokes it; a revocation based on a version someone else changed since is
refused, the conflict shown. The agent's next call is decided by the rule the window granted,
and no longer once the window revoked it."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import pytest
from cli_args import store_args
from PySide6.QtCore import Qt
from test_desktop_actions import WAIT_MS, open_window

from store import Actor, Store
from store import commands as c
from store.cli import main as cli
from store.commands import approvals as ap
from store.commands import effects as lg
from store.events import FileState

BOT = Actor(kind="agent", id="bot")
TOOLS = "claude-code://tools/"


@pytest.fixture(autouse=True)
def _reviewer(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BORIS_DESKTOP_SETTINGS", str(tmp_path / "settings.ini"))
    from boris_desktop import settings

    settings.set_reviewer("Maria Rossi", "maria")


def _task(store: Store) -> str:
    tid: str = store.execute(
        c.CreateTask(task_id="t1", title="Fix the build", owner="maria", objective="x",
                     destinations=[TOOLS]),
        BOT,
    )  # fmt: skip
    return tid


def _ask(store: Store, n: int, tool: str, payload: dict[str, str]) -> str:
    """The agent asks for a tool call, as an adapter does: the approval's state after."""
    store.execute_all(
        [
            lg.PlanEffect(
                task_id="t1", effect_id=f"eff-{n}", kind="other", target=TOOLS + tool,
                prepared=payload, intended=FileState(exists=True, digest="sha256:" + "0" * 64),
                requires_approval=True, consequence=f"runs {tool}", idempotency_key=f"k{n}",
            ),
            ap.RequestApproval(
                task_id="t1", approval_id=f"apr-{n}", effect_id=f"eff-{n}", policy="tools"
            ),
        ],
        BOT,
    )  # fmt: skip
    approvals = store.task("t1")["approvals"]
    return str(next(a for a in approvals if a["approval_id"] == f"apr-{n}")["state"])


def _open_rules(qtbot, w):
    """View → Standing Rules…, as the reviewer clicks it."""
    from boris_desktop.rules_panel import RulesDialog

    view = next(m for m in w.menuBar().findChildren(type(w.menuBar().addMenu("x")))
                if m.title().replace("&", "") == "View")  # fmt: skip
    action = next(a for a in view.actions() if a.text().replace("&", "") == "Standing Rules…")
    action.trigger()
    d = w.menus.rules_dialog
    assert isinstance(d, RulesDialog)
    qtbot.addWidget(d)
    qtbot.waitUntil(lambda: not d.reading, timeout=WAIT_MS)
    return d


def _rows(d) -> list[list[str]]:
    return [
        [d.table.item(r, col).text() for col in range(d.table.columnCount())]
        for r in range(d.table.rowCount())
    ]


@pytest.fixture(params=["sqlite", "postgresql"])
def engine_store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    """The test's store on each engine (the desktop's tests use SQLite by default: see
    conftest; a team store's window is opened on PostgreSQL here, as test_desktop_quorum)."""
    url = str(request.getfixturevalue("pg_url")) if request.param == "postgresql" else None
    s = Store.open(tmp_path / "store", url=url)
    yield s
    from PySide6.QtCore import QThreadPool

    QThreadPool.globalInstance().waitForDone(10_000)
    s.close()


def test_grant_from_the_window_decides_the_next_call_then_revoke_stops_it(
    qtbot, engine_store: Store
) -> None:
    store = engine_store
    _task(store)
    w = open_window(qtbot, store)
    d = _open_rules(qtbot, w)
    assert d.table.rowCount() == 0 and "No standing rules" in d.summary.text()
    assert not d.grant_button.isEnabled()

    qtbot.keyClicks(d.form.task, "t1")
    d.form.tool.clear()
    qtbot.keyClicks(d.form.tool, "Bash")
    qtbot.keyClicks(d.form.payload, '{"command": "git *"}')
    qtbot.keyClicks(d.form.note, "read-only git")
    assert d.grant_button.isEnabled()
    qtbot.mouseClick(d.grant_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: d.table.rowCount() == 1, timeout=WAIT_MS)
    row = _rows(d)[0]
    # The rule's words are the store's labels, never its values (approved, task).
    assert row[1] == "active" and row[2] == "approve" and row[3] == "task t1"
    assert row[4] == "Bash" and row[6] == '{"command": "git *"}' and row[7] == "maria"
    assert "1 deciding now" in d.summary.text()

    assert _ask(store, 1, "Bash", {"command": "git status"}) == "approved"
    assert _ask(store, 2, "Bash", {"command": "make clean"}) == "pending"

    # Revoke it: read again (the rule decided a call meanwhile), select the row, say why, click.
    qtbot.mouseClick(d.reload_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: not d.reading and _rows(d)[0][9] == "1", timeout=WAIT_MS)
    d.table.selectRow(0)
    assert not d.revoke_button.isEnabled()  # no reason yet
    qtbot.keyClicks(d.reason, "the build is fixed")
    assert d.revoke_button.isEnabled()
    qtbot.mouseClick(d.revoke_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: _rows(d)[0][1] == "revoked", timeout=WAIT_MS)
    assert "by maria" in _rows(d)[0][8] and d.error.isHidden()
    assert _ask(store, 3, "Bash", {"command": "git log"}) == "pending"
    d.close()
    w.close()  # its server connection (a team store's listener) closes with it


def test_a_stale_revocation_is_refused_and_the_conflict_shown(
    qtbot, store: Store, capsys: pytest.CaptureFixture[str]
) -> None:
    _task(store)
    assert cli([*store_args(store), "--actor", "person:rita", "rules", "add", "t1"]) == 0
    rule_id = capsys.readouterr().out.strip()
    w = open_window(qtbot, store)
    d = _open_rules(qtbot, w)
    assert [r[0] for r in _rows(d)] == [rule_id]
    d.select_rule(rule_id)
    qtbot.keyClicks(d.reason, "too broad")

    # Meanwhile rita revokes it from her shell.
    args = [*store_args(store), "--actor", "person:rita", "rules", "revoke", rule_id]
    assert cli([*args, "--reason", "mine to end"]) == 0
    capsys.readouterr()

    qtbot.mouseClick(d.revoke_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: d.last_error is not None, timeout=WAIT_MS)
    from store.api import Conflict

    assert isinstance(d.last_error, Conflict)
    assert d.error.isVisible() and "changed since you read it" in d.error.text()
    assert "person:rita" in d.error.text()
    qtbot.waitUntil(lambda: not d.reading and _rows(d)[0][1] == "revoked", timeout=WAIT_MS)
    assert "by rita" in _rows(d)[0][8]
    assert not d.revoke_button.isEnabled()  # nothing left to revoke


def test_the_decision_dialog_says_who_a_routed_request_waits_on(qtbot, store: Store) -> None:
    """Routing (issue 42), shown where the person decides: the request waits on ben, and
    maria's approval from the window is refused with the store's reason."""
    from test_desktop_actions import armed, done

    from boris_desktop.decide.approve import ApproveDialog
    from store.commands.routing import SetRoute

    _task(store)
    store.execute(
        SetRoute(policy="tools", deciders=["person:ben"], escalate_after_minutes=30,
                 escalate_to=["person:olga"]),
        Actor(kind="person", id="owner"),
    )  # fmt: skip
    assert _ask(store, 1, "Deploy", {"env": "prod"}) == "pending"
    w = open_window(qtbot, store, "t1")
    d = ApproveDialog(w, "t1", "apr-1")
    qtbot.addWidget(d)
    d.show()
    qtbot.waitUntil(lambda: d.decision is not None, timeout=WAIT_MS)
    policy = d.fields.policy.text()
    assert policy.startswith("tools — waiting on person:ben; escalates to person:olga at ")
    armed(qtbot, d.ok)
    d.ok.click()  # maria, from the window
    done(qtbot, w, d)
    from store.api import AuthorityRefused

    assert isinstance(d.last_error, AuthorityRefused)
    assert d.last_error.rule == "routed_to_named_people"
    assert "ben" in d.error.text()
    assert store.task("t1")["approvals"][0]["state"] == "pending"


def test_always_from_the_approve_dialog_answers_the_call_and_the_next_like_it(
    qtbot, store: Store
) -> None:
    """The Approve dialog's Always…: the Rules panel drafts a rule from the call (its task,
    tool and target exactly); the person names the field to match and grants it, the call
    itself decided with it in one transaction."""
    from boris_desktop.decide.approve import ApproveDialog

    _task(store)
    assert _ask(store, 1, "Bash", {"command": "npm test", "cwd": "/srv"}) == "pending"
    w = open_window(qtbot, store, "t1")
    d = ApproveDialog(w, "t1", "apr-1")
    qtbot.addWidget(d)
    d.show()
    qtbot.waitUntil(lambda: d.decision is not None, timeout=WAIT_MS)
    qtbot.mouseClick(d.always_button, Qt.MouseButton.LeftButton)
    rules = d.rules_dialog
    qtbot.addWidget(rules)
    qtbot.waitUntil(lambda: rules.draft is not None, timeout=WAIT_MS)
    assert rules.form.task.text() == "t1" and rules.form.tool.text() == "Bash"
    assert rules.form.target.text() == TOOLS + "Bash"
    assert "command, cwd" in rules.form.payload.placeholderText()
    assert rules.also.isVisible() and rules.also.isChecked()
    qtbot.keyClicks(rules.form.payload, '{"command": "npm test"}')
    rules.form.scope.setCurrentIndex(rules.form.scope.findText("one agent's calls"))
    qtbot.mouseClick(rules.grant_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: rules.table.rowCount() == 1, timeout=WAIT_MS)
    row = _rows(rules)[0]
    assert row[1] == "active" and row[3] == "agent:bot's calls" and row[7] == "maria"
    assert store.task("t1")["approvals"][0]["state"] == "approved"  # maria's own decision
    assert _ask(store, 2, "Bash", {"command": "npm test", "cwd": "/tmp"}) == "approved"
    assert _ask(store, 3, "Bash", {"command": "npm publish", "cwd": "/srv"}) == "pending"
