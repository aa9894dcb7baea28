"""The base classes' hooks are defined by every concrete dialog and panel, so none of them
reaches the base class's refusal when a reviewer opens it."""

from __future__ import annotations

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import boris_desktop.decide.approve
import boris_desktop.decide.checkpoint
import boris_desktop.decide.edits
import boris_desktop.decide.judge
import boris_desktop.decide.reconcile
import boris_desktop.decide.stop  # noqa: F401
from boris_desktop.decide.base import ActionDialog
from boris_desktop.decide.following import Following
from boris_desktop.task.panels.base import Panel, TreePanel


def _all(cls: type) -> list[type]:
    out = []
    for sub in cls.__subclasses__():
        out += [sub, *_all(sub)]
    return out


def test_every_dialog_says_which_command_it_sends() -> None:
    # Intermediate bases (a dialog that follows the store) send nothing themselves.
    dialogs = [d for d in _all(ActionDialog) if d is not Following]
    assert len(dialogs) >= 8
    assert all(d.command is not ActionDialog.command for d in dialogs)


def test_every_dialog_that_follows_the_store_shows_what_changed() -> None:
    following = _all(Following)
    assert len(following) >= 3
    assert all(d.task_changed is not Following.task_changed for d in following)


def test_every_panel_shows_a_task_and_every_tree_panel_has_rows() -> None:
    import inspect

    import boris_desktop.task.view as tv

    panels = [p for p in _all(Panel) if p is not TreePanel]
    # Every panel the task view shows is checked, not only those imported here.
    shown = {c for _, c in inspect.getmembers(tv, inspect.isclass) if issubclass(c, Panel)}
    assert shown - {Panel, TreePanel} <= set(panels)
    assert len(panels) >= 9
    for p in panels:
        if issubclass(p, TreePanel):
            assert p.nodes is not TreePanel.nodes, p
        else:
            assert p.show_task is not Panel.show_task, p
