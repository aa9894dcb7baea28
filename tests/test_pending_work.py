"""The task's pending work is the store's answer, read with the task: the window shows it
and writes no rule of its own; it agrees with what a checkpoint written now would record."""

from __future__ import annotations

from store import Store
from store.commands.checkpoint_state import task_checkpoint_state
from store.services.demo import fill_demo


def test_the_pending_work_read_with_a_task_is_a_checkpoint_s(store: Store) -> None:
    ids = fill_demo(store)
    seen_some = False
    for task_id in ids:
        shown = store.task(task_id)["pending_work"]
        with store.transaction() as tx:
            written = task_checkpoint_state(tx, task_id)["pending_work"]
        assert sorted(shown) == sorted(written), task_id
        seen_some |= bool(shown)
    assert seen_some  # the demo has unfinished work to compare
