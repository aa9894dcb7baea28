"""The window shows retired content (issue 35 part R): the evidence and artifact panels say
"retired on <date> (kept: digest, size, type)", blocking or degraded, instead of the content;
opening a retired item never reads its blob and never errors. Both engines."""

from __future__ import annotations

import os
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import pytest
from test_desktop_actions import open_window, settle
from test_desktop_panels import rows, select

from store import Actor, Store
from store import commands as c
from store.services import retention as service

AGENT = Actor(kind="agent", id="drafter-7")
RITA = Actor(kind="person", id="rita")
WAIT_MS = 20_000


@pytest.fixture(autouse=True)
def _reviewer(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BORIS_DESKTOP_SETTINGS", str(tmp_path / "settings.ini"))
    from boris_desktop import settings

    settings.set_reviewer("Rita Reviewer", "rita")


def _retired_task(store: Store) -> None:
    store.execute(
        c.CreateTask(task_id="rep", title="Write the report", owner="rita", objective="A report"),
        AGENT,
    )
    for cid in ("C1", "C2"):
        store.execute(c.AddCriterion(task_id="rep", criterion_id=cid, text=f"{cid} holds"), AGENT)
    content = c.Content(text="# Report\n", media_type="text/markdown")
    store.execute(c.RecordArtifact(task_id="rep", name="report.md", content=content), AGENT)
    store.execute(
        c.RecordArtifact(
            task_id="rep", name="report.md", content=c.Content(text="# Report v2\n"),
            retain="0h",
        ),
        AGENT,
    )  # fmt: skip
    store.execute(
        c.RecordArtifact(task_id="rep", name="debug.log", content=c.Content(text="x"), retain="0h"),
        AGENT,
    )
    store.execute(
        c.RecordArtifact(task_id="rep", name="debug.log", content=c.Content(text="y")), AGENT
    )
    for eid, cid in (("ev1", "C1"), ("ev2", "C2")):
        store.execute(
            c.AttachEvidence(
                task_id="rep", criterion_id=cid, kind="command_output", evidence_id=eid,
                content=c.Content(text=f"{eid}: 12 passed"), retain="0h",
            ),
            AGENT,
        )  # fmt: skip
    store.execute(
        c.JudgeCriterion(
            task_id="rep", criterion_id="C1", status="satisfied", artifact_id="report.md",
            evidence_ids=["ev1"],
        ),
        AGENT,
    )  # fmt: skip
    service.expire(store, RITA, "rep")


def test_the_window_shows_a_retired_item_as_blocking_or_degraded(
    qtbot, store: Store, tmp_path: Path
) -> None:
    _retired_task(store)
    w = open_window(qtbot, store, "rep")
    w.resize(1024, 700)
    notes = w.task_view.tab_notes(store.task("rep"))
    assert notes["Artifacts"] == "1 retired blocking, 1 retired degraded"

    crit = w.task_view.panel("Criteria")
    ev1 = rows(crit.tree, crit.tree.index_at(("C1",)))
    assert ev1[0][0] == "ev1" and ev1[0][1] == "retired · blocking"
    ev2 = rows(crit.tree, crit.tree.index_at(("C2",)))
    assert ev2[0][1] == "retired · degraded"
    select(crit.tree, "C1", "evidence:ev1")
    qtbot.waitUntil(lambda: "was retired on " in crit.detail.toPlainText(), timeout=WAIT_MS)
    text = crit.detail.toPlainText()
    assert "Kept: digest sha256:" in text and "text/plain" in text
    assert "Blocking: criterion C1 was judged satisfied on it" in text
    assert "criterion C1 satisfied on report.md v2" in text  # what it proved
    select(crit.tree, "C2", "evidence:ev2")
    qtbot.waitUntil(
        lambda: "Degraded: nothing rests on it" in crit.detail.toPlainText(), timeout=WAIT_MS
    )

    arts = w.task_view.panel("Artifacts")
    w.task_view.show_part("Artifacts")
    report = {r[0]: r for r in rows(arts.tree, arts.tree.index_at(("report.md",)))}
    assert "retired · blocking" in report["v2"][1] and "current" in report["v2"][1]
    log = {r[0]: r for r in rows(arts.tree, arts.tree.index_at(("debug.log",)))}
    assert "retired · degraded" in log["v1"][1]
    select(arts.tree, "report.md", "v1")
    qtbot.waitUntil(lambda: "# Report" in arts.detail.toPlainText(), timeout=WAIT_MS)
    # Comparing with the retired version says so instead of reading its blob.
    arts.compare.setCurrentIndex(arts.compare.findData(2))
    qtbot.waitUntil(
        lambda: "report.md v2 was retired on " in arts.detail.toPlainText(), timeout=WAIT_MS
    )
    select(arts.tree, "report.md", "v2")
    settle(qtbot, w)
    qtbot.waitUntil(lambda: "Blocking: " in arts.detail.toPlainText(), timeout=WAIT_MS)
    assert "it is the current version of report.md" in arts.detail.toPlainText()
    assert "(kept: digest sha256:" in arts.detail.toPlainText()

    png = tmp_path / "retired-artifact.png"
    assert w.grab().save(str(png))
    keep = os.environ.get("BORIS_DESKTOP_SHOTS")
    if keep:
        Path(keep).mkdir(parents=True, exist_ok=True)
        (Path(keep) / png.name).write_bytes(png.read_bytes())
