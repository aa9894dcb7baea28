"""The window's file watcher: the files of the task on screen, real files in its scope."""

from __future__ import annotations

import os
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import pytest
from test_desktop_actions import WAIT_MS, until_seen

from store import Actor, Store
from store import commands as c
from store.commands import effects as L

AGENT = Actor(kind="agent", id="a")


@pytest.fixture(autouse=True)
def _reviewer(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("BORIS_DESKTOP_SETTINGS", str(tmp_path / "settings.ini"))
    from boris_desktop import settings

    settings.set_reviewer("Rita Reviewer", "rita")


@pytest.fixture
def task(store: Store, ws: Path) -> dict[str, Path]:
    """An artifact recorded from a file, a criterion satisfied against it, and an unresolved
    file effect (dispatched, the executor's word only)."""
    store.execute(c.CreateTask(task_id="t", title="T", owner="o", objective="x",
                               scope_paths=[str(ws)]), AGENT)  # fmt: skip
    report, out = ws / "report.md", ws / "out.md"
    report.write_text("# Report\n", encoding="utf-8")
    store.execute(c.RecordArtifact(task_id="t", artifact_id="report", name="report.md",
                                   content=c.Content(path=str(report))), AGENT)  # fmt: skip
    store.execute(c.AddCriterion(task_id="t", criterion_id="good", text="good"), AGENT)
    ev = store.execute(c.AttachEvidence(task_id="t", criterion_id="good", kind="review",
                                        content=c.Content(text="read it")), AGENT)  # fmt: skip
    store.execute(c.JudgeCriterion(task_id="t", criterion_id="good", status="satisfied",
                                   artifact_id="report", artifact_version=1,
                                   evidence_ids=[ev]), AGENT)  # fmt: skip
    out.write_text("old\n", encoding="utf-8")
    store.execute(L.PlanEffect(task_id="t", effect_id="write-out", target=str(out),
                               consequence="Write out.md", content=c.Content(text="new\n")),
                  AGENT)  # fmt: skip
    store.execute(L.DispatchEffect(task_id="t", effect_id="write-out", executor="x"), AGENT)
    store.execute(L.RecordResponse(task_id="t", effect_id="write-out",
                                   reported="reported_success"), AGENT)  # fmt: skip
    return {"report": report, "out": out}


def open_window(qtbot, store: Store):
    from boris_desktop.main_window import MainWindow

    w = MainWindow(store)
    qtbot.addWidget(w)
    w.resize(1200, 760)
    w.show()
    w.reload_now()
    qtbot.waitUntil(lambda: w.task_view.task_id == "t", timeout=WAIT_MS)
    qtbot.waitUntil(lambda: w.file_watch.checks > 0 and not w.loader._pending, timeout=WAIT_MS)
    return w


def atomic_save(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


def cell(w, panel: str, path: tuple[str, ...], col: int) -> str:
    tree = w.task_view.panel(panel).tree
    ix = tree.index_at(path)
    assert ix.isValid(), path
    return ix.siblingAtColumn(col).data()


def artifact_marks(w) -> str:
    return cell(w, "Artifacts", ("report", "v1"), 1)


def criterion_status(w) -> str:
    return cell(w, "Criteria", ("good",), 1)


def effect_what(w) -> str:
    return cell(w, "Effects", ("write-out",), 3)


def watch_observations(store: Store) -> list[dict]:
    eff = store.task("t")["effects"][0]
    return [o for o in eff["observations"] if o["purpose"] == "watch"]


def test_atomic_save_marks_stale_and_records_a_watch_observation(qtbot, store: Store, task) -> None:
    w = open_window(qtbot, store)
    assert "changed on disk" not in artifact_marks(w)
    assert criterion_status(w) == "satisfied"
    assert "· target" not in effect_what(w)
    assert w.file_watch.indicator.text.text() == "watching 2 files (inotify)"
    assert not watch_observations(store)
    atomic_save(task["report"], "# Report\n\nedited elsewhere\n")
    atomic_save(task["out"], "someone else's\n")
    qtbot.waitUntil(lambda: "changed on disk" in artifact_marks(w), timeout=WAIT_MS)
    qtbot.waitUntil(lambda: "stale on disk" in criterion_status(w), timeout=WAIT_MS)
    qtbot.waitUntil(lambda: "target changed" in effect_what(w), timeout=WAIT_MS)
    qtbot.waitUntil(lambda: bool(watch_observations(store)), timeout=WAIT_MS)
    obs = watch_observations(store)
    assert len(obs) == 1
    assert obs[0]["observer"]["id"] == "rita" and obs[0]["observer"]["kind"] == "person"
    assert obs[0]["exists"] and obs[0]["digest"] != store.task("t")["effects"][0]["intent"][
        "pre_state"]["digest"]  # fmt: skip
    # The view reloads: the observation is on screen, and the marks stay.
    qtbot.waitUntil(
        lambda: bool(w.task_view.bundle["task"]["effects"][0]["observations"]), timeout=WAIT_MS
    )
    qtbot.waitUntil(lambda: not w.loader._pending, timeout=WAIT_MS)
    assert "target changed" in effect_what(w)
    assert "stale on disk" in criterion_status(w)
    assert len(watch_observations(store)) == 1  # the reload does not record it again
    w.close()


def test_delete_shows_missing(qtbot, store: Store, task) -> None:
    w = open_window(qtbot, store)
    task["report"].unlink()
    qtbot.waitUntil(lambda: "missing on disk" in artifact_marks(w), timeout=WAIT_MS)
    qtbot.waitUntil(lambda: "stale on disk" in criterion_status(w), timeout=WAIT_MS)
    task["out"].unlink()
    qtbot.waitUntil(lambda: "target missing" in effect_what(w), timeout=WAIT_MS)
    qtbot.waitUntil(lambda: bool(watch_observations(store)), timeout=WAIT_MS)
    assert not watch_observations(store)[-1]["exists"]
    w.close()


def test_edit_made_while_closed_is_found_at_load(qtbot, store: Store, task) -> None:
    task["report"].write_text("# Report\n\nedited while the app was closed\n", encoding="utf-8")
    w = open_window(qtbot, store)
    qtbot.waitUntil(lambda: "changed on disk" in artifact_marks(w), timeout=WAIT_MS)
    assert "stale on disk" in criterion_status(w)
    detail = w.task_view.panel("Criteria").tree.index_at(("good",)).data(0x0003)  # tooltip role
    assert "report changed on disk" in detail and "loaded" in detail
    assert "· target" not in effect_what(w)  # out.md holds its pre-state
    assert not watch_observations(store)
    w.close()


def test_polling_fallback_still_detects(qtbot, store: Store, task, monkeypatch) -> None:
    import watchdog.observers

    def limited(self) -> None:
        raise OSError(28, "inotify watch limit reached")

    monkeypatch.setattr(watchdog.observers.Observer, "start", limited)
    w = open_window(qtbot, store)
    assert w.file_watch.indicator.text.text() == (
        "watching 2 files (polling: inotify limit reached)"
    )
    # Saved again until seen: the polling observer sees what changed after its first
    # snapshot, whenever a loaded machine takes it.
    until_seen(
        qtbot,
        lambda n: atomic_save(task["report"], f"# Report\n\npolled {n}\n"),
        lambda: "changed on disk" in artifact_marks(w),
    )
    assert "stale on disk" in criterion_status(w)
    w.close()


def test_watcher_stopped_is_shown(qtbot, store: Store, task, monkeypatch) -> None:
    from boris_desktop.runtime import watch

    def broken(self, dirs, polling):
        raise OSError(24, "Too many open files")

    monkeypatch.setattr(watch.FileWatcher, "_start", broken)
    w = open_window(qtbot, store)
    assert w.file_watch.indicator.text.text().startswith("watcher stopped: ")
    assert "Too many open files" in w.file_watch.indicator.text.text()
    w.close()


def test_handler_raising_does_not_stop_the_watcher(qtbot, store: Store, task, monkeypatch) -> None:
    from boris_desktop.runtime.task_watch import TaskFileWatcher

    w = open_window(qtbot, store)
    real = TaskFileWatcher._hashed
    calls = {"n": 0}

    def flaky(self, *args):
        calls["n"] += 1
        if calls["n"] == 1:
            raise RuntimeError("handler bug")
        return real(self, *args)

    monkeypatch.setattr(TaskFileWatcher, "_hashed", flaky)
    atomic_save(task["report"], "# Report\n\nfirst edit\n")
    qtbot.waitUntil(lambda: calls["n"] >= 1 and w.file_watch.handler_errors == 1, timeout=WAIT_MS)
    until_seen(
        qtbot,
        lambda n: atomic_save(task["report"], f"# Report\n\nedit {n + 2}\n"),
        lambda: "changed on disk" in artifact_marks(w),
    )
    assert w.file_watch.watcher.state == "watching"
    assert "handler error" in w.file_watch.indicator.toolTip()
    w.close()


def test_reconcile_dialog_holds_watch_observations(qtbot, store: Store, task) -> None:
    """While the reviewer reconciles, the watcher marks changes but records nothing between
    the dialog's observation and the decision."""
    w = open_window(qtbot, store)
    d = w.menu_actions.reconcile()
    qtbot.waitUntil(lambda: d.observation is not None, timeout=WAIT_MS)
    atomic_save(task["out"], "someone else's\n")
    qtbot.waitUntil(lambda: d.banner.isVisible(), timeout=WAIT_MS)
    qtbot.waitUntil(lambda: "target changed" in effect_what(w), timeout=WAIT_MS)
    qtbot.wait(300)
    assert not watch_observations(store)
    d.reject()
    assert "write-out" not in w.file_watch.hold
    w.close()


def test_without_a_reviewer_the_system_observes(
    qtbot, store: Store, task, tmp_path, monkeypatch
) -> None:
    monkeypatch.setenv("BORIS_DESKTOP_SETTINGS", str(tmp_path / "nobody.ini"))
    w = open_window(qtbot, store)
    atomic_save(task["out"], "someone else's\n")
    qtbot.waitUntil(lambda: bool(watch_observations(store)), timeout=WAIT_MS)
    who = watch_observations(store)[0]["observer"]
    assert (who["kind"], who["id"]) == ("system", "boris-desktop-watch")
    w.close()


def test_the_indicator_counts_one_file_in_the_singular(qtbot, store: Store, task) -> None:
    w = open_window(qtbot, store)
    one = dict(list(w.file_watch.files.items())[:1])
    w.file_watch.files = one
    w.file_watch._show_state()
    assert w.file_watch.indicator.text.text() == "watching 1 file (inotify)"


def test_the_desktop_never_hashes_the_database_of_an_open_store(tmp_path: Path) -> None:
    """An effect recorded before the scope refused the store's own files may name one;
    watching or re-hashing it says why instead of reading it (which would drop SQLite's
    locks in this process)."""
    from boris_desktop.decide.content_view import file_state
    from boris_desktop.runtime.task_watch import hash_paths
    from store import ScopeViolation

    db = str(tmp_path / "s" / "boris.sqlite")
    with Store.open(tmp_path / "s"):
        with pytest.raises(ScopeViolation, match="the store's own database"):
            file_state(db)
        got = hash_paths([db, db + "-wal"])
        assert all(not x["exists"] and "own database" in x["error"] for x in got.values())
    assert file_state(db).exists  # closed, it is an ordinary file again
