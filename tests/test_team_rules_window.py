"""Ana's open window applies her standing rule to the call an agents' login asked (issue 42,
team stores): the window's own escalation timer decides it by her rule, in her name, and the
queue drops it without anyone clicking. PostgreSQL with the team's roles
(tests/test_team_roles `team` fixture); the window opens the store through ana's reviewers'
login, pytest-qt."""

from __future__ import annotations

import os
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import pytest
from test_desktop_actions import WAIT_MS, open_window
from test_routing_team import _agent, _ask, _reviewer, _state, task  # noqa: F401
from test_team_roles import PERSON, Team, team  # noqa: F401  (the fixtures)

from store.commands.standing_rules import GrantStandingRule
from store.events import ApprovalRuled
from store.services.verify import verify


def test_anas_open_window_decides_by_her_rule_what_the_agent_login_asked(
    qtbot,
    team: Team,  # noqa: F811
    tmp_path: Path,
    task: str,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("BORIS_DESKTOP_SETTINGS", str(tmp_path / "settings-ana.ini"))
    from boris_desktop import settings

    settings.set_reviewer(PERSON.name, PERSON.id)
    with _agent(team, tmp_path) as s:
        lint = _ask(s, 1, "Lint")  # no rule covers it: it stays for a person
    window_store = _reviewer(team, tmp_path)
    w = None
    try:
        w = open_window(qtbot, window_store)
        w.queue.escalations.timer.setInterval(100)  # the window's own timer, sooner
        window_store.execute(
            GrantStandingRule(task_id=task, tool="Bash", expires_in_seconds=3600), PERSON
        )
        with _agent(team, tmp_path) as s:
            bash = _ask(s, 2, "Bash")
            assert _state(s, bash) == "pending"  # the agents' login may not decide it
        w.views.setCurrentWidget(w.queue)
        qtbot.waitUntil(lambda: _state(window_store, bash) == "approved", timeout=WAIT_MS)
        keys = lambda: [r.key for r in w.queue.model.rows]  # noqa: E731
        qtbot.waitUntil(lambda: bash not in keys() and lint in keys(), timeout=WAIT_MS)
        qtbot.wait(400)  # the timer goes on ticking: decided once
        ruled = [e for e in window_store.events(task) if e["type"] == ApprovalRuled.TYPE]
        assert [(e["payload"]["approval_id"], e["actor"]["id"]) for e in ruled] == [
            (bash, PERSON.id)
        ]
        assert _state(window_store, lint) == "pending"
        report = verify(window_store, remember=False)
        assert report.ok, [p.line() for p in report.problems]
    finally:
        from PySide6.QtCore import QThreadPool

        if w is not None:  # before the team's roles are dropped: no tick after the test
            w.queue.escalations.timer.stop()
            w.close()
        QThreadPool.globalInstance().waitForDone(10_000)
        window_store.close()
