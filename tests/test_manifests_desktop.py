"""The window shows what the model saw (issue 35 part M) beside the effect and the checkpoint
it led to: the model, what was included and what was left out with why, by digest, a note
holding HTML as literal text; a checkpoint's detail says "model changed from X to Y at
checkpoint C"; an intent planned under an older tool definition says so first. Both engines.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import pytest
from test_desktop_actions import open_window, settle
from test_desktop_panels import rows, select

from store import Actor, Store
from store import commands as c
from store.commands import manifests as m

AGENT = Actor(kind="agent", id="drafter-7")
WAIT_MS = 20_000
SHOTS = Path(__file__).resolve().parent.parent / "docs" / "dialogs"


def _d(text: str) -> str:
    return "sha256:" + hashlib.sha256(text.encode()).hexdigest()


@pytest.fixture(autouse=True)
def _reviewer(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BORIS_DESKTOP_SETTINGS", str(tmp_path / "settings.ini"))
    from boris_desktop import settings

    settings.set_reviewer("Rita Reviewer", "rita")


def _task(store: Store, ws: Path) -> None:
    store.execute(
        c.CreateTask(
            task_id="rep", title="Write the report", owner="rita", objective="A report",
            scope_paths=[str(ws)],
        ),
        AGENT,
    )  # fmt: skip
    store.execute(c.WriteCheckpoint(task_id="rep", reason="initial", checkpoint_id="c1"), AGENT)
    tools = [m.ToolIn(name="write_file", digest=_d("w1"))]
    store.execute(
        m.RecordConfiguration(task_id="rep", checkpoint_id="c1", provider="openai",
                              model="gpt-a", tools=tools),
        AGENT,
    )  # fmt: skip
    store.execute(
        c.PlanEffect(
            task_id="rep", effect_id="e1", target=str(ws / "report.md"),
            consequence="writes report.md", content=c.Content(text="# Report\n"),
            tool="write_file",
        ),
        AGENT,
    )  # fmt: skip
    store.execute(
        m.RecordManifest(
            task_id="rep", manifest_id="m1", provider="openai", model="gpt-a",
            purpose="choose how to write the report",
            included=[
                m.ItemIn(kind="instruction", ref="objective@1", digest=_d("o"), size=9, tokens=3),
                m.ItemIn(kind="tool_result", ref="search#4", digest=_d("r"), size=812),
            ],
            omitted=[
                m.OmittedIn(kind="file", ref="build.log", digest=_d("l"), size=99_000,
                            reason="budget", note="<b>too long</b> for the window"),
            ],
            led_to=m.LedToIn(kind="effect", id="e1"),
        ),
        AGENT,
    )  # fmt: skip
    store.execute(c.WriteCheckpoint(task_id="rep", reason="milestone", checkpoint_id="c2"), AGENT)
    store.execute(
        m.RecordConfiguration(task_id="rep", checkpoint_id="c2", provider="openai",
                              model="gpt-b", tools=[m.ToolIn(name="write_file", digest=_d("w2"))]),
        AGENT,
    )  # fmt: skip
    store.execute(
        m.RecordManifest(task_id="rep", manifest_id="m2", provider="openai", model="gpt-b",
                         led_to=m.LedToIn(kind="checkpoint", id="c2")),
        AGENT,
    )  # fmt: skip


def _form(panel) -> list[list[str]]:
    """Every row of the detail form, depth first."""
    out: list[list[str]] = []

    def walk(parent=None) -> None:
        for r in rows(panel.form, parent):
            out.append(r)
        from PySide6.QtCore import QModelIndex

        model = panel.form.records
        parent = parent or QModelIndex()
        for i in range(model.rowCount(parent)):
            walk(model.index(i, 0, parent))

    walk()
    return out


def _shot(w, name: str, size: tuple[int, int], tmp_path: Path, qtbot, panel=None) -> Path:
    w.resize(*size)
    settle(qtbot, w)
    if panel is not None:  # the inbox as small as it goes, the detail as a reviewer drags it
        w.split.setSizes([1, 10_000])
        panel.split.setSizes([1, 1, 10_000] if panel.split.count() == 3 else [120, 10_000])
        settle(qtbot, w)
    png = tmp_path / name
    assert w.grab().save(str(png))
    keep = os.environ.get("BORIS_DESKTOP_SHOTS")
    if keep:
        Path(keep).mkdir(parents=True, exist_ok=True)
        (Path(keep) / name).write_bytes(png.read_bytes())
    return png


def test_the_manifest_is_shown_beside_its_effect_and_checkpoint(
    qtbot, store: Store, ws: Path, tmp_path: Path
) -> None:
    _task(store, ws)
    w = open_window(qtbot, store, "rep")
    w.resize(1024, 700)
    effects = w.task_view.panel("Effects")
    w.task_view.show_part("Effects")
    kids = {r[0]: r for r in rows(effects.tree, effects.tree.index_at(("e1",)))}
    seen = kids["what the model saw"]
    assert seen[1] == "m1"
    assert seen[3] == "openai gpt-a: 2 items included, 1 left out (budget)"

    # The effect's own detail: the tool drift first, then what the model saw, as fields.
    select(effects.tree, "e1")
    settle(qtbot, w)
    form = _form(effects)
    assert form[0][0] == "Tool definition"
    assert form[0][1].startswith("planned under an older definition of write_file: migrate")
    assert ["Model", "openai gpt-a"] in [r[:2] for r in form]

    select(effects.tree, "e1", "manifest:m1")
    settle(qtbot, w)
    form = _form(effects)
    texts = [r[1] for r in form]
    assert form[0][:2] == ["Id", "m1"]
    assert ["Model", "openai gpt-a"] in [r[:2] for r in form]
    assert "choose how to write the report" in texts
    assert _d("l") in texts and "budget" in texts  # by digest, and why it was left out
    assert "<b>too long</b> for the window" in texts  # HTML shown literally
    assert "objective@1" in texts and "search#4" in texts
    _shot(w, "manifest-effect-1024x700.png", (1024, 700), tmp_path, qtbot)
    _shot(w, "manifest-effect-1366x768.png", (1366, 768), tmp_path, qtbot)
    _shot(w, "manifest-effect-detail-1024x700.png", (1024, 700), tmp_path, qtbot, effects)

    checkpoints = w.task_view.panel("Checkpoints")
    w.task_view.show_part("Checkpoints")
    select(checkpoints.tree, *checkpoints.path_to("c2"))
    settle(qtbot, w)
    texts = [r[1] for r in _form(checkpoints)]
    assert "model changed from gpt-a to gpt-b at checkpoint c2" in texts
    assert "openai gpt-b" in texts  # the manifest that led to it
    _shot(w, "manifest-checkpoint-1024x700.png", (1024, 700), tmp_path, qtbot, checkpoints)
