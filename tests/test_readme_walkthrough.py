"""The README's walkthrough "Finishing the reference guide", followed step by step (issue 32).

Each numbered step of the README is one block below, under a comment quoting its line: the
test selects the row the step names, opens the dialog through the Actions menu entry it names,
types and clicks as the reader would, then reads the store's record back. The last step's
final checkpoint completes the task: the window's inbox and the real `boris tasks` say so.
Both engines (the conftest's `store`).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import pytest
from PySide6.QtCore import Qt
from test_desktop_actions import WAIT_MS, armed, done, open_window, settle

from store import Store
from store.services.demo import fill_demo

README = Path(__file__).resolve().parent.parent / "README.md"
BORIS = Path(sys.executable).parent / "boris"
TASK = "guide"
README_TEXT = " ".join(README.read_text(encoding="utf-8").split())


@pytest.fixture(autouse=True)
def _reviewer(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BORIS_DESKTOP_SETTINGS", str(tmp_path / "settings.ini"))
    from boris_desktop import settings

    settings.set_reviewer("Rita Reviewer", "rita")


@pytest.fixture
def demo(qtbot: Any, store: Store) -> Iterator[Store]:
    fill_demo(store)
    yield store
    # The window's last reads finish on the pool before the store closes (a team store's
    # connection is never left to the collector).
    from PySide6.QtCore import QThreadPool

    QThreadPool.globalInstance().waitForDone(10_000)


def walkthrough() -> list[str]:
    """The README's numbered steps under "Finishing the reference guide", one string each."""
    text = README.read_text(encoding="utf-8")
    part = text.split("**Finishing the reference guide.**", 1)[1]
    steps: list[str] = []
    for line in part.splitlines()[1:]:
        if re.match(r"\d+\. ", line):
            steps.append(line)
        elif steps and line.startswith("   "):
            steps[-1] += " " + line.strip()
        elif steps:
            break
    return steps


def _task(s: Store) -> dict[str, Any]:
    return s.task(TASK)


def _open(qtbot: Any, w: Any, part: str, key: Any, action: str) -> Any:
    """Select the row in the part, then press the Actions menu entry's shortcut, the one the
    README names beside it."""
    if part:
        w.task_view.show_part(part, key)
        assert w.current_key(part) == key
    w.menu_actions.update()
    act = getattr(w.menu_actions, action)
    assert act.isEnabled(), action
    # The shortcut the README names for the entry, pressed on the window.
    keys = act.shortcut()
    assert act.text().replace("&", "") + f" ({keys.toString()})" in README_TEXT
    w.activateWindow()
    qtbot.waitUntil(w.isActiveWindow, timeout=WAIT_MS)
    before = w.menu_actions.dialog
    qtbot.keySequence(w, keys)

    def shown() -> bool:
        d = w.menu_actions.dialog
        return d is not None and d is not before and d.isVisible()

    qtbot.waitUntil(shown, timeout=WAIT_MS)
    return w.menu_actions.dialog


def _send(qtbot: Any, w: Any, d: Any, button: Any) -> None:
    armed(qtbot, button)
    qtbot.mouseClick(button, Qt.MouseButton.LeftButton)
    done(qtbot, w, d)
    assert d.result() == d.DialogCode.Accepted, d.error.text()


def _cli(store_dir: Path, store_url: str | None, *argv: str) -> str:
    where = ["--store", str(store_dir), *(["--url", store_url] if store_url else [])]
    run = subprocess.run(
        [str(BORIS), *where, *argv], capture_output=True, text=True, timeout=60, check=False
    )
    assert run.returncode == 0, run.stderr
    return run.stdout


def test_the_readme_has_the_six_steps_this_test_follows() -> None:
    steps = walkthrough()
    assert [s.split(".", 1)[0] for s in steps] == ["1", "2", "3", "4", "5", "6"]
    for words in (
        "Reconcile Effect… (Ctrl+R)",
        "Edit Artifact Text… (Ctrl+Shift+E)",
        "Complete Phase… (Ctrl+Shift+P)",
        "Attach Evidence… (Ctrl+Shift+V)",
        "Judge Criterion… (Ctrl+J)",
        "Checkpoint / Handoff… (Ctrl+K)",
    ):
        assert any(words in " ".join(x.split()) for x in steps), words


def test_each_readme_step_is_quoted_above_the_block_that_follows_it() -> None:
    """One to one: the comment over each block below is the README's step, word for word."""
    source = Path(__file__).read_text(encoding="utf-8")
    quoted = []
    for block in re.findall(r"((?:    # .*\n)+)", source):
        words = " ".join(line.strip()[2:] for line in block.splitlines())
        if re.match(r'\d\. "', words):
            quoted.append(" ".join(words.split()))
    assert quoted == [f'{s[:2]} "{" ".join(s[3:].split())}"' for s in walkthrough()]


def test_the_menu_says_what_the_readme_says() -> None:
    """The walkthrough's menu entries and shortcuts are the app's own (`ACTIONS`)."""
    from boris_desktop.decide.menu import ACTIONS

    text = " ".join(" ".join(walkthrough()).split())
    entries = {spec[1].replace("&", ""): spec[2] for spec in ACTIONS if spec is not None}
    named = re.findall(r"Actions › (.+?) \((Ctrl[^)]*)\)", text)
    assert len(named) == 6 == text.count("Actions ›")
    for name, keys in named:
        assert entries.get(name) == keys, (name, keys)


def test_the_readme_steps_finish_the_reference_guide(
    qtbot: Any, demo: Store, store_dir: Path, store_url: str | None
) -> None:
    store = demo
    steps = walkthrough()
    w = open_window(qtbot, store)
    w.menu_actions.dialog = None

    # 1. "*Reference guide…*, Effects tab, *upload-guide*: **Actions › Reconcile Effect…
    #    (Ctrl+R)**; the store cannot read the docs site: look there, then **Present**, with a
    #    note."
    assert steps[0].startswith("1. *Reference guide…*, Effects tab, *upload-guide*")
    _click_task(qtbot, w, "Reference guide")
    assert w.task_view.task_id == TASK
    assert TASK in _needs_you(qtbot, w)
    d = _open(qtbot, w, "Effects", "upload-guide", "reconcile_action")
    qtbot.waitUntil(lambda: d.observation is not None, timeout=WAIT_MS)
    assert "cannot read" in d.obs_label.text()
    qtbot.keyClicks(d.note, "guide v2 is on docs.example.org/upload/reference-guide.md")
    _send(qtbot, w, d, d.ok)  # Present
    upload = next(e for e in _task(store)["effects"] if e["effect_id"] == "upload-guide")
    assert upload["reconciliation"]["verdict"] == "present"
    rec = upload["reconciliation"]
    assert (rec["verdict"], rec["by"]["id"], upload["outcome"]) == ("present", "rita", "succeeded")

    # 2. "Artifacts tab, *guide.md*: **Actions › Edit Artifact Text… (Ctrl+Shift+E)**:
    #    "[citation needed: policy P-12]" becomes "(policy P-12)"; **Save as a new version**
    #    (v3)."
    assert '"[citation needed: policy P-12]" becomes "(policy P-12)"' in " ".join(steps[1].split())
    d = _open(qtbot, w, "Artifacts", "guide", "edit_artifact_action")
    text = d.editor.toPlainText()
    assert "[citation needed: policy P-12]" in text
    d.editor.setPlainText(text.replace("[citation needed: policy P-12]", "(policy P-12)"))
    _send(qtbot, w, d, d.ok)
    guide = next(a for a in _task(store)["artifacts"] if a["artifact_id"] == "guide")
    assert guide["current"]["version"] == 3
    assert store.blobs.read(guide["current"]["digest"]).count(b"(policy P-12)") == 1

    # 3. "Dependencies tab, *Structural review*: **Actions › Complete Phase… (Ctrl+Shift+P)**:
    #    *Done*, a summary."
    d = _open(qtbot, w, "Dependencies", "review", "phase_action")
    qtbot.waitUntil(lambda: d.view is not None, timeout=WAIT_MS)
    assert d.radios[True].isChecked()
    qtbot.keyClicks(d.summary, "read v3 section by section: one per source")
    _send(qtbot, w, d, d.ok)
    review = next(p for p in _task(store)["phases"] if p["phase_id"] == "review")
    assert review["readiness"] == "done" and review["result"]["actor"]["id"] == "rita"

    # 4. "Save your review notes as `demo-workspace/reference-guide/out/review.txt` in the
    #    store's folder (`~/.local/share/boris/demo-store`). Criteria tab, *structure*, then
    #    *citations*: **Actions › Attach Evidence… (Ctrl+Shift+V)**, that file, kind *review*:
    #    made on guide v3; then **Actions › Judge Criterion… (Ctrl+J)**: *satisfied* against
    #    guide v3, evidence ticked."
    notes = store.location.directory / "demo-workspace/reference-guide/out/review.txt"
    assert "`demo-workspace/reference-guide/out/review.txt`" in steps[3]
    notes.write_text(
        "guide v3: six numbered sections, one per source; the one retention figure "
        "(90 days) cites policy P-12.\n",
        encoding="utf-8",
    )
    for cid in ("structure", "citations"):
        d = _open_evidence(qtbot, w, cid, notes)
        assert d.made_on.text() == "The evidence is made on guide v3."
        d.set_kind("review")
        qtbot.keyClicks(d.description, "the reviewer read guide v3")
        _send(qtbot, w, d, d.ok)
        crit = next(x for x in _task(store)["criteria"] if x["criterion_id"] == cid)
        ev = crit["evidence"][-1]
        assert (ev["artifact_id"], ev["artifact_version"], ev["kind"]) == ("guide", 3, "review")
        assert ev["actor"]["id"] == "rita"

        d = _open(qtbot, w, "Criteria", cid, "judge_action")
        qtbot.waitUntil(lambda d=d: d.decision is not None, timeout=WAIT_MS)
        d.set_status("satisfied")
        d.artifact.setCurrentIndex(d.artifact.findText("guide v3"))  # against guide v3
        _tick(d, ev["evidence_id"])
        _send(qtbot, w, d, d.ok)
        crit = next(x for x in _task(store)["criteria"] if x["criterion_id"] == cid)
        assert crit["status"] == "satisfied", crit
        assert (crit["artifact_id"], crit["artifact_version"]) == ("guide", 3), crit
    assert _task(store)["pending_work"] == []
    assert TASK in _needs_you(qtbot, w)  # the lost build log still needs a person

    # 5. "The lost build log (*1 missing blob*) only the agent can make again: it renders the
    #    guide and, in the store's folder, runs `boris --store . --actor agent:drafter-7
    #    record-artifact guide build.log --id build-log --role log --file
    #    demo-workspace/reference-guide/out/build.log`."
    assert _inbox_row(w)["needs"]["missing_blobs"] == 1
    assert "1 missing blob" in _shown_needs(w)
    (command,) = re.findall(r"`(boris [^`]*)`", steps[4])
    log = store.location.directory / "demo-workspace/reference-guide/out/build.log"
    log.write_text("render guide.md -> guide.pdf\nOK\n", encoding="utf-8")  # the agent's render
    _shell(command, store_dir, store_url)
    build = next(a for a in _task(store)["artifacts"] if a["artifact_id"] == "build-log")
    assert build["current"]["version"] == 2 and build["role"] == "log"
    assert store.blobs.read(build["current"]["digest"]) == log.read_bytes()
    qtbot.waitUntil(lambda: _inbox_row(w)["needs"]["missing_blobs"] == 0, timeout=WAIT_MS)

    # 6. "**Actions › Checkpoint / Handoff… (Ctrl+K)**: *Final* (nothing is pending); the
    #    lineage is forked: continue from *ckpt-milestone*, tick *ckpt-handoff* to merge it, a
    #    note, **Write checkpoint**. The task is *completed*: it leaves "needs you"; `boris
    #    tasks` says so."
    d = _open(qtbot, w, "", None, "checkpoint_action")
    assert d.radios["final"].isChecked() and d.radios["final"].isEnabled()
    d.heads.radios["ckpt-milestone"].click()
    d.heads.merges["ckpt-handoff"].click()
    qtbot.keyClicks(d.note, "finished: upload checked, citation fixed, both criteria on v3")
    _send(qtbot, w, d, d.ok)
    task = _task(store)
    assert task["status"] == "completed"
    last = task["checkpoints"]["checkpoints"][-1]
    assert last["reason"] == "final" and task["checkpoints"]["heads"] == [last["checkpoint_id"]]
    settle(qtbot, w)
    qtbot.waitUntil(lambda: _inbox_row(w)["status"] == "completed", timeout=WAIT_MS)
    assert _shown_status(w) == "completed"
    assert TASK not in _needs_you(qtbot, w)  # it left "needs you"
    rows = json.loads(_cli(store_dir, store_url, "tasks", "--json"))["result"]
    (row,) = [r for r in rows if r["id"] == TASK]
    assert row["status"] == "completed" and row["attention"] <= 0
    assert "completed" in _cli(store_dir, store_url, "tasks").split(TASK, 1)[1].split("\n")[0]
    w.close()  # its followers stop; the fixture waits for their last reads


def _shell(command: str, store_dir: Path, store_url: str | None) -> None:
    """The README's line, as written, run by bash in the store's folder (a team store's
    database named the way the README names one: BORIS_STORE_URL)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("BORIS_")}
    env["PATH"] = f"{BORIS.parent}{os.pathsep}{env.get('PATH', '')}"
    if store_url:
        env["BORIS_STORE_URL"] = store_url
    run = subprocess.run(
        ["bash", "-c", "set -e\n" + command],
        cwd=store_dir,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert run.returncode == 0, run.stderr


def _open_evidence(qtbot: Any, w: Any, cid: str, path: Path) -> Any:
    """Attach Evidence's file picker answers with the reviewer's notes file."""
    from PySide6.QtWidgets import QFileDialog

    mp = pytest.MonkeyPatch()
    mp.setattr(QFileDialog, "getOpenFileName", lambda *a, **k: (str(path), ""))
    try:
        d = _open(qtbot, w, "Criteria", cid, "evidence_action")
    finally:
        mp.undo()
    qtbot.waitUntil(lambda: d.target is not None, timeout=WAIT_MS)
    return d


def _tick(d: Any, evidence_id: str) -> None:
    for i in range(d.evidence.count()):
        item = d.evidence.item(i)
        on = item.data(Qt.ItemDataRole.UserRole) == evidence_id
        item.setCheckState(Qt.CheckState.Checked if on else Qt.CheckState.Unchecked)


def _click_task(qtbot: Any, w: Any, title: str) -> None:
    """Click the inbox row whose title starts so."""
    for i in range(w.proxy.rowCount()):
        index = w.proxy.index(i, 0)
        if str(index.data()).startswith(title):
            rect = w.table.visualRect(index)
            qtbot.mouseClick(w.table.viewport(), Qt.MouseButton.LeftButton, pos=rect.center())
            break
    else:
        raise AssertionError(f"no task titled {title}…")
    qtbot.waitUntil(lambda: w.task_view.task_id == TASK, timeout=WAIT_MS)
    settle(qtbot, w)


def _inbox_row(w: Any) -> dict[str, Any]:
    return dict(w.inbox.rows[w.inbox.row_of(TASK)])


def _shown_status(w: Any) -> str:
    """The inbox's Status cell, as the reader sees it."""
    row = w.inbox.row_of(TASK)
    return str(w.inbox.data(w.inbox.index(row, 1), Qt.ItemDataRole.DisplayRole))


def _shown_needs(w: Any) -> str:
    """The inbox's "Needs you" cell, as the reader sees it."""
    from boris_desktop.inbox.table import COLUMNS

    index = w.inbox.index(w.inbox.row_of(TASK), COLUMNS.index("Needs you"))
    return str(w.inbox.data(index, Qt.ItemDataRole.DisplayRole))


def _needs_you(qtbot: Any, w: Any) -> list[str]:
    """The tasks the inbox lists under its "Needs you" filter (chosen as a person does)."""
    f = w.status_filter
    before = f.currentIndex()
    f.setCurrentIndex(f.findText("Needs you"))
    qtbot.waitUntil(lambda: w.proxy.status == w.proxy.NEEDS_YOU, timeout=WAIT_MS)
    ids = [
        w.inbox.rows[w.proxy.mapToSource(w.proxy.index(i, 0)).row()]["id"]
        for i in range(w.proxy.rowCount())
    ]
    f.setCurrentIndex(before)
    qtbot.waitUntil(lambda: w.proxy.status != w.proxy.NEEDS_YOU, timeout=WAIT_MS)
    return ids
