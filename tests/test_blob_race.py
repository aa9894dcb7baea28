"""Removing a blob never takes one a concurrent writer's acknowledged item names (issue 40).

`boris expire` and `boris delete-task` remove a blob once nothing live names its digest. A
writer recording the same content in another task at that moment decides that the blob is
"already stored" and only names it: that decision and the removal's check are serialized
(store.blob_db, Store.remove_blob), so either the remover sees the writer's item and keeps
the blob, or the writer sees the blob gone and stores it again. Never an acknowledged item
naming a blob that is gone.

Each round, on both engines: a task holds an item whose content is due to go (retired by
`expire`, or the whole task deleted), and a writer in a thread of its own, with a store of
its own, records an artifact version or evidence with exactly that content in another task,
started at a random moment within the remover's run. After the round the writer's item must
read back; after all rounds `verify` finds nothing wrong. Then each order held open on
purpose: a removal waits for a write holding the blob (and keeps it), a write waits for a
removal under way (and stores the blob again); on PostgreSQL two writes holding one blob do
not wait for each other.
"""

from __future__ import annotations

import hashlib
import random
import threading
import time
import uuid
from collections.abc import Callable
from typing import Any

import pytest
from sqlalchemy.engine import Connection

from store import Actor, Store
from store import commands as c
from store import commands as cmds
from store.services import deletion
from store.services import retention as service
from store.services.verify import verify

AGENT = Actor(kind="agent", id="writer-1")
RITA = Actor(kind="person", id="rita")
WRITER_TASK = "writer"
VICTIM_TASK = "victim"
ROUNDS = {"sqlite": 20, "postgresql": 40}


def _content(r: int) -> str:
    return f"round {r}: content both tasks hold {uuid.uuid4().hex}"


class Writer:
    """A thread with a store of its own: each round, after a pause, one write naming the
    round's content; what the store acknowledged (or refused) is kept for the round."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.start = threading.Barrier(2, timeout=60)
        self.done = threading.Event()
        self.round = -1
        self.text = ""
        self.delay = 0.0
        self.acknowledged: str | None = None  # the digest the acknowledged item names
        self.error: BaseException | None = None

    def write(self) -> None:
        self.start.wait()
        time.sleep(self.delay)
        r = self.round
        try:
            if r % 2 == 0:
                got = self.store.execute(
                    c.RecordArtifact(
                        task_id=WRITER_TASK, artifact_id=f"w{r}", name=f"w{r}.txt",
                        content=c.Content(text=self.text),
                    ),
                    AGENT,
                )  # fmt: skip
                self.acknowledged = str(got["digest"])
            else:
                self.store.execute(
                    c.AttachEvidence(
                        task_id=WRITER_TASK, criterion_id="C1", kind="command_output",
                        evidence_id=f"e{r}", content=c.Content(text=self.text),
                    ),
                    AGENT,
                )  # fmt: skip
                self.acknowledged = "sha256:" + hashlib.sha256(self.text.encode()).hexdigest()
        except BaseException as exc:  # reported by the round
            self.error = exc
        finally:
            self.done.set()


def _setup(store: Store) -> None:
    store.execute(c.CreateTask(task_id=WRITER_TASK, title="w", owner="o", objective="x"), AGENT)
    store.execute(c.AddCriterion(task_id=WRITER_TASK, criterion_id="C1", text="ok"), AGENT)
    store.execute(c.CreateTask(task_id=VICTIM_TASK, title="v", owner="o", objective="x"), AGENT)


def _expire_round(store: Store, r: int, text: str) -> Callable[[], object]:
    """The victim's item with the content, due at once; the remover expires it."""
    store.execute(
        c.RecordArtifact(
            task_id=VICTIM_TASK, artifact_id=f"v{r}", name=f"v{r}.txt",
            content=c.Content(text=text), retain="0h",
        ),
        AGENT,
    )  # fmt: skip

    def remove() -> object:
        return service.expire(store, RITA, VICTIM_TASK)

    return remove


def _delete_round(store: Store, r: int, text: str) -> Callable[[], object]:
    """A task of its own holding the content; the remover deletes the task."""
    tid = f"doomed-{r}"
    store.execute(c.CreateTask(task_id=tid, title="d", owner="o", objective="x"), AGENT)
    store.execute(
        c.RecordArtifact(task_id=tid, artifact_id="d", name="d.txt", content=c.Content(text=text)),
        AGENT,
    )

    def remove() -> object:
        return deletion.delete_task(store, tid, RITA, confirm=tid, reason="race round")

    return remove


@pytest.mark.parametrize("remover", ["expire", "delete-task"])
def test_a_blob_an_acknowledged_write_names_is_never_removed(
    store: Store,
    open_store: Callable[..., Store],
    store_engine: str,
    remover: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _setup(store)
    removed: list[str] = []  # the blobs the remover took: the writer came after
    remove_blob = store.remove_blob

    def counted(digest: str, in_use: Callable[[Connection], bool]) -> bool:
        gone = remove_blob(digest, in_use)
        if gone:
            removed.append(digest)
        return gone

    monkeypatch.setattr(store, "remove_blob", counted)
    rounds = ROUNDS[store_engine]
    prepare = _expire_round if remover == "expire" else _delete_round
    rng = random.Random(40)
    lost: list[str] = []
    refused: list[str] = []
    took = 0.03  # the remover's run, learned as the rounds go: the writer starts within it
    with open_store() as mine:
        writer = Writer(mine)
        for r in range(rounds):
            text = _content(r)
            remove = prepare(store, r, text)
            writer.round, writer.text, writer.acknowledged, writer.error = r, text, None, None
            # Every fourth round the writer may start at once: on a loaded machine the others
            # can all land after the removal's question, and the rounds must straddle it
            # (asserted below).
            writer.delay = rng.uniform(0.0 if r % 4 == 3 else 0.3 * took, took)
            writer.done.clear()
            thread = threading.Thread(target=writer.write)
            thread.start()
            writer.start.wait()
            t0 = time.perf_counter()
            remove()
            took = 0.7 * took + 0.3 * (time.perf_counter() - t0)
            thread.join(60)
            assert writer.done.is_set(), f"round {r}: the writer did not finish"
            if writer.error is not None:
                refused.append(f"round {r}: {type(writer.error).__name__}: {writer.error}")
                continue
            digest = writer.acknowledged
            assert digest is not None
            try:
                assert store.blobs.read(digest).decode() == text
            except Exception as exc:
                lost.append(f"round {r}: {exc}")
    print(f"{len(removed)} of {rounds} removed; remover ~{took * 1000:.0f} ms")
    assert refused == [], refused
    assert lost == [], f"{len(lost)} of {rounds} rounds lost a blob an item names: {lost[:3]}"
    # The writer came both before the removal's question (the blob stayed) and after it
    # (the blob went, and the writer stored it again): the rounds straddle the removal.
    assert 0 < len(removed) < rounds, f"{len(removed)} of {rounds} rounds removed the blob"
    problems = [(p.kind, p.task_id, p.message) for p in verify(store).problems]
    assert problems == []


# --- the two orders, each held open -----------------------------------------------------------


def _digest(text: str) -> str:
    return "sha256:" + hashlib.sha256(text.encode()).hexdigest()


def _record(text: str, task_id: str = WRITER_TASK, artifact_id: str = "w") -> c.RecordArtifact:
    return c.RecordArtifact(
        task_id=task_id, artifact_id=artifact_id, name=f"{artifact_id}.txt",
        content=c.Content(text=text),
    )  # fmt: skip


def test_a_removal_waits_for_a_write_holding_the_blob_and_then_keeps_it(
    store: Store, open_store: Callable[..., Store]
) -> None:
    """The writer found the blob stored and has not committed yet: `expire` waits for it
    (on PostgreSQL at the blob's row, on SQLite at the write lock), then sees its item."""
    _setup(store)
    text = _content(0)
    _expire_round(store, 0, text)
    done: dict[str, Any] = {}
    with open_store() as mine:
        with mine.transaction() as tx:
            cmds.execute(tx, _record(text), AGENT)
            remover = threading.Thread(
                target=lambda: done.update(service.expire(store, RITA, VICTIM_TASK))
            )
            remover.start()
            remover.join(1.0)
            assert remover.is_alive(), "the removal did not wait for the write holding the blob"
        remover.join(60)
    assert [x["item_id"] for x in done["retired"]] == ["v0@1"]
    assert done["blobs_removed"] == []
    assert store.blobs.read(_digest(text)).decode() == text
    assert verify(store).problems == []


def test_a_write_waits_for_a_removal_under_way_and_then_stores_the_blob_again(
    store: Store, open_store: Callable[..., Store]
) -> None:
    """The removal has asked whether anything names the blob and not committed yet: a
    writer recording the same content waits for it, then finds the blob gone and stores
    it again."""
    _setup(store)
    text = _content(0)
    _expire_round(store, 0, text)
    asked, answer = threading.Event(), threading.Event()
    removed: list[bool] = []

    def in_use(_conn: Connection) -> bool:
        asked.set()
        answer.wait(60)
        return False

    remover = threading.Thread(
        target=lambda: removed.append(store.remove_blob(_digest(text), in_use))
    )
    remover.start()
    assert asked.wait(60)
    wrote: list[Any] = []
    with open_store() as mine:
        writer = threading.Thread(target=lambda: wrote.append(mine.execute(_record(text), AGENT)))
        writer.start()
        writer.join(1.0)
        assert writer.is_alive(), "the write did not wait for the removal under way"
        answer.set()
        remover.join(60)
        writer.join(60)
    assert removed == [True]
    assert [w["digest"] for w in wrote] == [_digest(text)]
    assert store.blobs.read(_digest(text)).decode() == text


def test_writers_holding_one_stored_blob_do_not_wait_for_each_other(
    store: Store, open_store: Callable[..., Store], store_engine: str
) -> None:
    """On PostgreSQL a write holds a blob it found with a share lock: another write naming
    the same content (in another task) goes on meanwhile. (SQLite serializes every write.)"""
    if store_engine == "sqlite":
        pytest.skip("SQLite serializes whole write transactions")
    _setup(store)
    text = _content(0)
    _expire_round(store, 0, text)  # stored, and named by the victim
    with open_store() as first, open_store() as second, first.transaction() as tx:
        cmds.execute(tx, _record(text), AGENT)
        other = threading.Thread(
            target=lambda: second.execute(_record(text, VICTIM_TASK, "again"), AGENT)
        )
        other.start()
        other.join(30)
        assert not other.is_alive(), "the second write waited for the first"
    assert store.blobs.read(_digest(text)).decode() == text
