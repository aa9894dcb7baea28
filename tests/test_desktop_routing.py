"""The window follows routing (issue 42): a routed approval shows under "Mine" only for the
people it waits on, and once nobody answered in time the open window records the escalation
by itself and shows "waiting on …; escalated to …", with no one clicking anything.

On a signed store as `boris init` makes it (rita its root; ben and olga with their own keys,
each in their user config directory, trusted by rita). The clocks are the test's
(test_desktop_actions.HeldClock): the database's (SQLite's 'now' is this process's) and the
window's, moved past the escalation time at once."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import pytest
from test_desktop_actions import WAIT_MS, HeldClock, open_window
from test_standing_rules import Signed, signed  # noqa: F401  (the fixture)

from store import Store
from store.events import ApprovalEscalated
from store.signing.keys import person_key_path


@pytest.fixture
def window_store(open_store) -> Iterator[Store]:
    """The store as the window opens it, apart from the agent's (which signs with the agent's
    key): the reviewer signs with their own."""
    s = open_store()
    try:
        yield s
    finally:
        from PySide6.QtCore import QThreadPool

        QThreadPool.globalInstance().waitForDone(10_000)
        s.close()


@pytest.fixture
def people(signed: Signed) -> Signed:  # noqa: F811
    """ben and olga's own keys, where the window looks for a person's key, trusted by rita."""
    for who in ("ben", "olga"):
        key = person_key_path(who)
        rc, _, err = signed.run("--actor", f"person:{who}", "keys", "new", str(key))
        assert rc == 0, err
        rc, _, err = signed.run(
            "--actor", "person:rita", "keys", "add", str(key), "--for", f"person:{who}"
        )
        assert rc == 0, err
    return signed


def _reviewer(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, who: str) -> None:
    monkeypatch.setenv("BORIS_DESKTOP_SETTINGS", str(tmp_path / f"settings-{who}.ini"))
    from boris_desktop import settings

    settings.set_reviewer(who.title(), who)


def _route(signed: Signed) -> tuple[str, str, str]:  # noqa: F811
    tid = signed.task("t1")
    signed.rita("route", "group", "release", "--member", "person:rita", "--member", "person:ben")
    signed.rita(
        "route", "set", "deploys", "--decider", "group:release",
        "--escalate-after", "1", "--escalate-to", "person:olga",
    )  # fmt: skip
    routed = signed.ask(tid, "Deploy", {"env": "prod"}, policy="deploys")
    plain = signed.ask(tid, "Lint", {"path": "src"})  # a policy nobody routed
    return tid, routed, plain


def _whys(w) -> dict[str, str]:
    from boris_desktop.queue.decisions import WHY

    m = w.queue.model
    return {r.key: m.data(m.index(i, WHY)) for i, r in enumerate(m.rows)}


def _mine(w) -> list[str]:
    """The approvals the queue shows with "Mine (I may decide)" chosen."""
    from boris_desktop.queue.decisions import ID_ROLE

    p = w.queue.proxy
    return sorted(str(p.index(r, 0).data(ID_ROLE)).rsplit(":", 1)[1] for r in range(p.rowCount()))


def _choose_mine(qtbot, w) -> None:
    w.views.setCurrentWidget(w.queue)
    qtbot.waitUntil(lambda: w.queue.loaded, timeout=WAIT_MS)
    w.queue.whose.setCurrentIndex(w.queue.whose.findData(True))


def test_mine_shows_a_routed_approval_only_to_the_people_it_waits_on(
    qtbot,
    people: Signed,
    store: Store,
    window_store: Store,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _tid, routed, plain = _route(people)
    _reviewer(monkeypatch, tmp_path, "ben")
    w = open_window(qtbot, window_store)
    _choose_mine(qtbot, w)
    qtbot.waitUntil(lambda: len(w.queue.model.rows) == 2, timeout=WAIT_MS)
    assert _mine(w) == sorted([routed, plain])  # ben is in the release group
    assert _whys(w)[routed].startswith("waiting on group:release (rita, ben); escalates to")
    w.close()

    _reviewer(monkeypatch, tmp_path, "olga")
    w = open_window(qtbot, window_store)
    _choose_mine(qtbot, w)
    qtbot.waitUntil(lambda: len(w.queue.model.rows) == 2, timeout=WAIT_MS)
    assert _mine(w) == [plain]  # not olga's: it waits on the release group
    w.queue.whose.setCurrentIndex(w.queue.whose.findData(False))
    assert w.queue.proxy.rowCount() == 2  # everyone's still lists it


def test_the_open_window_records_the_escalation_and_shows_it_without_a_click(
    qtbot,
    people: Signed,
    store: Store,
    window_store: Store,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    clock = HeldClock(monkeypatch)
    clock.hold()
    tid, routed, plain = _route(people)
    _reviewer(monkeypatch, tmp_path, "olga")
    w = open_window(qtbot, window_store)
    told: list[tuple[str, str, str]] = []
    w.notifier.shown.connect(lambda title, body, target: told.append((title, body, target)))
    _choose_mine(qtbot, w)
    qtbot.waitUntil(lambda: len(w.queue.model.rows) == 2, timeout=WAIT_MS)
    assert _mine(w) == [plain]
    w.queue.escalations.timer.setInterval(100)  # the window's own timer, sooner
    qtbot.wait(400)  # ticks: nothing is due, nothing is written
    assert [e for e in store.events(tid) if e["type"] == ApprovalEscalated.TYPE] == []

    clock.move(61)  # past the escalation time, on the database's clock and the window's
    qtbot.waitUntil(lambda: "escalated to person:olga" in _whys(w)[routed], timeout=WAIT_MS)
    assert _whys(w)[routed].startswith(
        "waiting on group:release (rita, ben); escalated to person:olga"
    )
    qtbot.waitUntil(lambda: _mine(w) == sorted([routed, plain]), timeout=WAIT_MS)
    # And olga is told: it waits on her now (the desktop's notification, as for a new one).
    qtbot.waitUntil(lambda: any("Deploy" in body for _t, body, _at in told), timeout=WAIT_MS)
    (escalated,) = [e for e in store.events(tid) if e["type"] == ApprovalEscalated.TYPE]
    assert escalated["payload"]["to"] == ["olga"]
    assert escalated["actor"]["kind"] == "system"  # the store's own, signed by olga's key
    qtbot.wait(400)  # the timer goes on ticking: recorded once
    assert len([e for e in store.events(tid) if e["type"] == ApprovalEscalated.TYPE]) == 1
    assert people.verify()[0] == 0


def test_the_rules_panel_and_the_batch_table_speak_the_stores_labels_not_its_values(
    qtbot,
    people: Signed,
    store: Store,
    window_store: Store,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Whose calls a rule covers and what it decides, and what a batch recorded, read as the
    store's labels (`RuleScope.label`, `RuleVerdict.label`, `ApprovalState.label`)."""
    from PySide6.QtCore import Qt
    from test_desktop_batch import _open_batch
    from test_desktop_rules import _open_rules

    from store.reads.decision_views import ApprovalVerdict

    tid = people.task("t1")
    sent_back = people.ask(tid, "Deploy", {"env": "prod"})
    _reviewer(monkeypatch, tmp_path, "rita")
    w = open_window(qtbot, window_store)
    qtbot.waitUntil(lambda: len(w.queue.model.rows) == 1, timeout=WAIT_MS)

    rules = _open_rules(qtbot, w)
    whose = [rules.form.scope.itemText(i) for i in range(rules.form.scope.count())]
    decide = [rules.form.verdict.itemText(i) for i in range(rules.form.verdict.count())]
    assert whose == ["this task's calls", "one agent's calls", "one session's calls"]
    assert decide == ["approve", "reject"]
    rules.close()

    d = _open_batch(qtbot, w)
    d.set_verdict(0, ApprovalVerdict.SEND_BACK)
    qtbot.keyClicks(d.note_field(0), "the canary first")
    qtbot.mouseClick(d.apply_button, Qt.MouseButton.LeftButton)
    qtbot.mouseClick(d.confirm_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: d.result_text(0) != "", timeout=WAIT_MS)
    assert d.result_text(0) == "Recorded: sent back for changes"
    assert people.approval(tid, sent_back)["state"] == "sent_back"  # the value, in the record


def test_a_window_opened_after_an_escalation_came_due_records_it_soon(
    qtbot,
    people: Signed,
    store: Store,
    window_store: Store,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Nothing ran while it came due; the window asks a moment after it opens, not a whole
    interval later."""
    from boris_desktop.queue.escalations import EVERY_MS, FIRST_MS

    assert FIRST_MS < EVERY_MS
    clock = HeldClock(monkeypatch)
    clock.hold()
    tid, routed, _plain = _route(people)
    clock.move(61)
    _reviewer(monkeypatch, tmp_path, "ben")
    w = open_window(qtbot, window_store)
    w.views.setCurrentWidget(w.queue)
    # Shown as escalated from the first read (who may decide is judged when read)...
    qtbot.waitUntil(lambda: "escalated to person:olga" in _whys(w).get(routed, ""), timeout=WAIT_MS)

    # ...and recorded by the window a moment after it opened, once.
    def recorded() -> int:
        return len([e for e in store.events(tid) if e["type"] == ApprovalEscalated.TYPE])

    qtbot.waitUntil(lambda: recorded() == 1, timeout=FIRST_MS + 8000)
    qtbot.wait(300)
    assert recorded() == 1
