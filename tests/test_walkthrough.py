"""docs/reviewing.md's walkthrough, followed top to bottom on the signed demo store (issues 32
and 39).

The demo store is made as `boris-desktop --demo` makes it: the window, asked to load the demo
into a new store, makes it as `boris init` would (signatures required, the reviewer's key its
root, the demo's actors' keys in demo-workspace/keys/). Then, in the page's order: the tour's
bullets, each dialog opened by the shortcut the page names on the row it names (the note's
approval, reconciliation and handoff; the guide stopped, which picks no head and so leaves a
third one, and resumed; the budget and cancel dialogs looked at and closed), and "Finishing
the reference guide", each numbered step under a comment quoting it. Step 5 runs the page's
```sh block as written, by bash, in the store's folder (~ is this test's home). The last
step's Final must tick every head but the one it continues from; it completes the task with
one head, and the window's inbox and the real `boris tasks` say so. Both engines.
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
from test_desktop_actions import WAIT_MS, armed, done, settle

from store import Store

PAGE = Path(__file__).resolve().parent.parent / "docs" / "reviewing.md"
BORIS = Path(sys.executable).parent / "boris"
TASK = "guide"
#: Where the page says the demo store is: `~/.local/share/boris/demo-store`, under HOME.
DEMO_STORE = Path(".local", "share", "boris", "demo-store")


def _words(text: str) -> str:
    return " ".join(text.split())


PAGE_TEXT = _words(PAGE.read_text(encoding="utf-8"))


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return tmp_path / "home"


@pytest.fixture
def store_dir(home: Path) -> Path:
    """The test's store is where the page puts the demo store (the conftest's `store`, on
    both engines, opens it here)."""
    return home / DEMO_STORE


@pytest.fixture(autouse=True)
def _reviewer(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BORIS_DESKTOP_SETTINGS", str(tmp_path / "settings.ini"))
    from boris_desktop import settings

    settings.set_reviewer("Rita Reviewer", "rita")


@pytest.fixture
def demo(qtbot: Any, store: Store) -> Iterator[Store]:
    assert store.task_ids() == [] and not store.is_signed()  # a new store
    yield store
    # The window's last reads finish on the pool before the store closes (a team store's
    # connection is never left to the collector).
    from PySide6.QtCore import QThreadPool

    QThreadPool.globalInstance().waitForDone(10_000)


# --- the page --------------------------------------------------------------------------------


def _section(start: str, end: str) -> list[str]:
    text = PAGE.read_text(encoding="utf-8")
    return text.split(start, 1)[1].split(end, 1)[0].splitlines()


def tour() -> list[str]:
    """The bullets after "Select *Save the weekly project note*:", one string each."""
    bullets: list[str] = []
    for line in _section("*Save the weekly project note*:", "**Finishing"):
        if line.startswith("- "):
            bullets.append(line[2:])
        elif bullets and line.startswith("  "):
            bullets[-1] += " " + line.strip()
    return [_words(b) for b in bullets]


def walkthrough() -> list[str]:
    """The numbered steps under "Finishing the reference guide", one string each, without
    the code blocks they hold (`shell_block`)."""
    steps: list[str] = []
    fenced = False
    for line in _section("**Finishing the reference guide.**", "![The reference guide")[1:]:
        if line.strip().startswith("```"):
            fenced = not fenced
        elif fenced:
            continue
        elif re.match(r"\d+\. ", line):
            steps.append(line)
        elif steps and line.startswith("   "):
            steps[-1] += " " + line.strip()
    return [_words(s) for s in steps]


def shell_block(step: int) -> str:
    """The ```sh block in the numbered step, as the page shows it."""
    text = PAGE.read_text(encoding="utf-8").split("**Finishing the reference guide.**", 1)[1]
    part = re.split(rf"(?m)^{step}\. ", text, maxsplit=1)[1]
    part = re.split(rf"(?m)^{step + 1}\. ", part, maxsplit=1)[0]
    (block,) = re.findall(r"(?ms)^ *```sh\n(.*?)^ *```", part)
    return "\n".join(line.strip() for line in block.splitlines())


def test_the_page_has_the_tour_and_the_six_steps_this_test_follows() -> None:
    from boris_desktop.decide.menu import ACTIONS

    entries = {spec[1].replace("&", ""): spec[2] for spec in ACTIONS if spec is not None}
    named = [re.findall(r"Actions › (.+?) \((Ctrl[^)]*)\)", b) for b in tour()]
    assert [n[0][0] for n in named] == [
        "Approve / Reject…",
        "Reconcile Effect…",
        "Checkpoint / Handoff…",
        "Stop the Run…",
        "Resume the Run…",
        "Change Budget…",
        "Cancel a Planned Effect…",
        "Complete Phase…",
        "Attach Evidence…",
    ]
    steps = walkthrough()
    assert [s.split(".", 1)[0] for s in steps] == ["1", "2", "3", "4", "5", "6"]
    # Every entry and shortcut the page names is the app's own (`ACTIONS`).
    for name, keys in [x for n in named for x in n] + re.findall(
        r"Actions › (.+?) \((Ctrl[^)]*)\)", " ".join(steps)
    ):
        assert entries.get(name) == keys, (name, keys)
    assert " ".join(steps).count("Actions ›") == 6
    # The tour's phase and evidence bullets are the steps' own: done there, once.
    assert "step 3 below" in tour()[7] and "step 4 below" in tour()[8]


def test_each_step_is_quoted_above_the_block_that_follows_it() -> None:
    """One to one: the comment over each block below is the page's step, word for word."""
    source = Path(__file__).read_text(encoding="utf-8")
    quoted = []
    for block in re.findall(r"((?:    # .*\n)+)", source):
        words = _words(" ".join(line.strip()[2:] for line in block.splitlines()))
        if re.match(r'\d\. "', words):
            quoted.append(words)
    assert quoted == [f'{s[:2]} "{s[3:]}"' for s in walkthrough()]


def test_step_5_runs_the_agents_render_and_signs_with_its_key() -> None:
    block = shell_block(5)
    assert block.splitlines() == [
        "cd ~/.local/share/boris/demo-store",
        "sh demo-workspace/reference-guide/render.sh",
        "boris --store . --actor agent:drafter-7 --key demo-workspace/keys/agent-drafter-7.pem "
        "record-artifact guide build.log --id build-log --role log "
        "--file demo-workspace/reference-guide/out/build.log",
    ]


# --- the window ------------------------------------------------------------------------------


def _task(s: Store, task_id: str = TASK) -> dict[str, Any]:
    return s.task(task_id)


def _open(qtbot: Any, w: Any, part: str, key: Any, action: str) -> Any:
    """Select the row in the part, then press the Actions menu entry's shortcut, the one the
    page names beside it."""
    if part == "Budgets":
        panel = w.task_view.panels["Budgets"]
        w.task_view.tabs.setCurrentWidget(panel)
        settle(qtbot, w)
        qtbot.waitUntil(lambda: key in panel.rows, timeout=WAIT_MS)
        qtbot.mouseClick(panel.rows[key][1], Qt.MouseButton.LeftButton)
        assert w.current_key(part) == key
    elif part:
        w.task_view.show_part(part, key)
        assert w.current_key(part) == key
    w.menu_actions.update()
    act = getattr(w.menu_actions, action)
    assert act.isEnabled(), action
    # The shortcut the page names for the entry, pressed on the window.
    keys = act.shortcut()
    assert f"Actions › {act.text().replace('&', '')} ({keys.toString()})" in PAGE_TEXT
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


def test_the_walkthrough_finishes_the_reference_guide(
    qtbot: Any, demo: Store, home: Path, store_dir: Path, store_url: str | None, tmp_path: Path
) -> None:
    store = demo
    steps, bullets = walkthrough(), tour()

    # The demo store, as `boris-desktop --demo` makes it on first use: the window loads the
    # demo into a new store, made as `boris init` would (the reviewer's key its root).
    assert "boris-desktop --demo" in PAGE_TEXT
    w = _window(qtbot, store)
    w.demo_store = True
    w.load_demo()
    qtbot.waitUntil(lambda: w.inbox.rowCount() == 2, timeout=WAIT_MS)
    assert store.is_signed()
    from store.signing import keyring

    with store.read() as conn:
        ring = keyring.rows(conn)
    assert (ring[0]["actor_kind"], ring[0]["actor_id"]) == ("person", "rita")
    assert (store_dir / "demo-workspace/keys/agent-drafter-7.pem").is_file()
    w.menu_actions.dialog = None

    # The tour, on *Save the weekly project note*: approve the email, reconcile the save,
    # write the handoff (Final waits while work is pending).
    _click_task(qtbot, w, "Save the weekly project note", "note")
    assert w.task_view.header.signatures.text().startswith("required · ")
    assert not w.task_view.header.unsigned.isVisible()  # the window no longer says unsigned
    assert bullets[0].startswith("**Actions › Approve / Reject… (Ctrl+Return)** shows the exact")
    d = _open(qtbot, w, "Approvals", "apr-note-mail", "approve_action")
    qtbot.waitUntil(lambda: d.decision is not None, timeout=WAIT_MS)
    assert d.fields.digest.text().startswith("sha256:")
    qtbot.keyClicks(d.note, "the summary matches the note; send it")
    _send(qtbot, w, d, d.ok)
    (mail,) = [a for a in _task(store, "note")["approvals"] if a["approval_id"] == "apr-note-mail"]
    assert (mail["state"], mail["decided_by"]["id"]) == ("approved", "rita")

    assert "the file is unchanged. Choose Present / Absent / Conflict" in bullets[1]
    d = _open(qtbot, w, "Effects", "save-note", "reconcile_action")
    qtbot.waitUntil(lambda: d.observation is not None, timeout=WAIT_MS)
    qtbot.keyClicks(d.note, "the note on disk is unchanged: the tool's 'saved' was wrong")
    _send(qtbot, w, d, d.decide_buttons["absent"])
    save = next(e for e in _task(store, "note")["effects"] if e["effect_id"] == "save-note")
    assert save["reconciliation"]["verdict"] == "absent"

    assert "*Final* is offered only when nothing is pending" in bullets[2]
    d = _open(qtbot, w, "", None, "checkpoint_action")
    assert d.pending and not d.radios["final"].isEnabled() and d.radios["handoff"].isChecked()
    qtbot.keyClicks(d.note, "the mail is approved; send it once the note is saved")
    _send(qtbot, w, d, d.ok)
    assert _task(store, "note")["checkpoints"]["checkpoints"][-1]["reason"] == "handoff"

    # Stop on *Reference guide…*: the stop picks no head, so the stopped checkpoint is a third
    # head beside the fork's two. Then Resume.
    assert "a stop picks no head for you" in bullets[3]
    assert "the stopped checkpoint is a third head" in bullets[3]
    _click_task(qtbot, w, "Reference guide", TASK)
    d = _open(qtbot, w, "", None, "stop_action")
    assert d.heads.heads == ("ckpt-milestone", "ckpt-handoff")
    assert d.heads.radios[None].isChecked() and d.heads.chosen() is None  # Continue from none
    qtbot.keyClicks(d.reason, "the owner looks at the docs site first")
    qtbot.keyClicks(d.confirm, TASK)
    _send(qtbot, w, d, d.ok)
    task = _task(store)
    stopped = task["checkpoints"]["checkpoints"][-1]["checkpoint_id"]
    assert task["status"] == "stopped"
    assert task["checkpoints"]["heads"] == ["ckpt-milestone", "ckpt-handoff", stopped]

    assert "Resume the guide if you stopped it" in bullets[4]
    settle(qtbot, w)
    d = _open(qtbot, w, "", None, "resume_action")
    qtbot.keyClicks(d.reason, "the upload is reconciled next")
    _send(qtbot, w, d, d.ok)
    assert _task(store)["status"] == "outcome_unknown"  # the upload is still in doubt

    # Change Budget and Cancel a Planned Effect: what each would do, looked at, not sent.
    assert "before you send it" in bullets[5]
    d = _open(qtbot, w, "Budgets", "model_calls", "budget_action")
    qtbot.waitUntil(lambda: d.view is not None, timeout=WAIT_MS)
    assert "171 used" in d.now.text() and "limit 180" in d.now.text()
    d.reject()
    assert "(the note's email)" in bullets[6]
    _click_task(qtbot, w, "Save the weekly project note", "note")
    d = _open(qtbot, w, "Effects", "mail-note", "cancel_effect_action")
    qtbot.waitUntil(lambda: d.view is not None, timeout=WAIT_MS)
    assert "apr-note-mail" in d.what.text()
    d.reject()
    settle(qtbot, w)
    _click_task(qtbot, w, "Reference guide", TASK)

    # 1. "*Reference guide…*, Effects tab, *upload-guide*: **Actions › Reconcile Effect…
    #    (Ctrl+R)**; the store cannot read the docs site: look there, then **Present**, with a
    #    note."
    assert steps[0].startswith("1. *Reference guide…*, Effects tab, *upload-guide*")
    assert w.task_view.task_id == TASK
    assert TASK in _needs_you(qtbot, w)
    d = _open(qtbot, w, "Effects", "upload-guide", "reconcile_action")
    qtbot.waitUntil(lambda: d.observation is not None, timeout=WAIT_MS)
    assert "cannot read" in d.obs_label.text()
    qtbot.keyClicks(d.note, "guide v2 is on docs.example.org/upload/reference-guide.md")
    _send(qtbot, w, d, d.ok)  # Present
    upload = next(e for e in _task(store)["effects"] if e["effect_id"] == "upload-guide")
    rec = upload["reconciliation"]
    assert (rec["verdict"], rec["by"]["id"], upload["outcome"]) == ("present", "rita", "succeeded")

    # 2. "Artifacts tab, *guide.md*: **Actions › Edit Artifact Text… (Ctrl+Shift+E)**:
    #    "[citation needed: policy P-12]" becomes "(policy P-12)"; **Save as a new version**
    #    (v3)."
    assert '"[citation needed: policy P-12]" becomes "(policy P-12)"' in steps[1]
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
    assert "(`~/.local/share/boris/demo-store`)" in steps[3]
    notes = home / DEMO_STORE / "demo-workspace/reference-guide/out/review.txt"
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

    # 5. "The lost build log (*1 missing blob*) only the agent can make again. In the store's
    #    folder it renders the guide again with its renderer (`render.sh` writes
    #    `out/build.log`) and records the log, signing with its own key (the store requires
    #    signatures):"
    assert _inbox_row(w).needs.missing_blobs == 1
    assert "1 missing blob" in _shown_needs(w)
    log = store_dir / "demo-workspace/reference-guide/out/build.log"
    assert not log.exists()  # lost with its blob: the agent's render makes it again
    _shell(shell_block(5), home, store_url)
    assert log.read_text(encoding="utf-8").startswith("render guide.md -> guide.html\n")
    build = next(a for a in _task(store)["artifacts"] if a["artifact_id"] == "build-log")
    assert build["current"]["version"] == 2 and build["role"] == "log"
    assert store.blobs.read(build["current"]["digest"]) == log.read_bytes()
    signer = json.loads(_cli(store_dir, store_url, "--json", "events", TASK))["result"][-1]
    assert signer["actor"]["id"] == "drafter-7"
    qtbot.waitUntil(lambda: _inbox_row(w).needs.missing_blobs == 0, timeout=WAIT_MS)

    # 6. "**Actions › Checkpoint / Handoff… (Ctrl+K)**: *Final* (nothing is pending). The
    #    lineage is forked, and Final closes it: continue from *ckpt-milestone* and tick every
    #    other head to merge it — *ckpt-handoff*, and the stopped checkpoint if you stopped
    #    the run above (until each is ticked the dialog says which head is left, in the
    #    store's words, and **Write checkpoint** waits); a note, **Write checkpoint**. The
    #    task is *completed*, with one head: it leaves "needs you"; `boris tasks` says so."
    d = _open(qtbot, w, "", None, "checkpoint_action")
    assert d.radios["final"].isChecked() and d.radios["final"].isEnabled()
    assert d.heads.heads == ("ckpt-milestone", "ckpt-handoff", stopped)
    qtbot.keyClicks(d.note, "finished: upload checked, citation fixed, both criteria on v3")
    d.heads.radios["ckpt-milestone"].click()
    d.heads.merges["ckpt-handoff"].click()
    qtbot.waitUntil(lambda: d.armed, timeout=WAIT_MS)
    # The stopped checkpoint not ticked: the store's refusal, and Write waits.
    assert not d.ok.isEnabled()
    assert f"{stopped} would stay a head" in d.final_fork.text()
    _shot(d, tmp_path)
    d.heads.merges[stopped].click()
    _send(qtbot, w, d, d.ok)
    task = _task(store)
    assert task["status"] == "completed"
    last = task["checkpoints"]["checkpoints"][-1]
    assert last["reason"] == "final" and task["checkpoints"]["heads"] == [last["checkpoint_id"]]
    assert (last["supersedes"], last["merged"]) == (["ckpt-milestone"], ["ckpt-handoff", stopped])
    assert task["checkpoints"]["forks"] == []
    settle(qtbot, w)
    qtbot.waitUntil(lambda: _inbox_row(w).status == "completed", timeout=WAIT_MS)
    assert _shown_status(w) == "completed"
    assert TASK not in _needs_you(qtbot, w)  # it left "needs you"
    rows = json.loads(_cli(store_dir, store_url, "tasks", "--json"))["result"]
    (row,) = [r for r in rows if r["id"] == TASK]
    assert row["status"] == "completed" and row["attention"] <= 0
    assert "completed" in _cli(store_dir, store_url, "tasks").split(TASK, 1)[1].split("\n")[0]
    w.close()  # its followers stop; the fixture waits for their last reads


def _window(qtbot: Any, store: Store) -> Any:
    from boris_desktop.main_window import MainWindow

    w = MainWindow(store)
    qtbot.addWidget(w)
    w.resize(1200, 760)
    w.show()
    w.reload_now()
    settle(qtbot, w)
    return w


def _shot(d: Any, tmp_path: Path) -> None:
    """The Checkpoint dialog with a head left, on a 1024×700 screen (BORIS_WALK_PNG: where)."""
    from PySide6.QtCore import QRect

    d.fit_screen(QRect(0, 0, 1024, 700))
    d.resize(min(d.width(), 1024), min(d.height(), 700))
    out = Path(os.environ.get("BORIS_WALK_PNG") or tmp_path / "final-fork.png")
    assert d.grab().save(str(out))


def _shell(block: str, home: Path, store_url: str | None) -> None:
    """The page's block, as written, run by bash with this test's home (so `~` is where the
    store is); a team store's database named the way the page names one: BORIS_STORE_URL."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("BORIS_")}
    env["PATH"] = f"{BORIS.parent}{os.pathsep}{env.get('PATH', '')}"
    env["HOME"] = str(home)
    if store_url:
        env["BORIS_STORE_URL"] = store_url
    run = subprocess.run(
        ["bash", "-c", "set -eo pipefail\n" + block],
        cwd=home,
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


def _click_task(qtbot: Any, w: Any, title: str, task_id: str) -> None:
    """Click the inbox row whose title starts so."""
    for i in range(w.proxy.rowCount()):
        index = w.proxy.index(i, 0)
        if str(index.data()).startswith(title):
            rect = w.table.visualRect(index)
            qtbot.mouseClick(w.table.viewport(), Qt.MouseButton.LeftButton, pos=rect.center())
            break
    else:
        raise AssertionError(f"no task titled {title}…")
    qtbot.waitUntil(lambda: w.task_view.task_id == task_id, timeout=WAIT_MS)
    settle(qtbot, w)


def _inbox_row(w: Any) -> Any:
    """The task's row in the inbox: the store's TaskRow the window lists."""
    return w.inbox.rows[w.inbox.row_of(TASK)]


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
