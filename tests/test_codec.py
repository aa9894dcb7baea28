"""One row -> event decoder (`store.codec`) for the store, the archive and verify: the three
read the same log into the same events, on both engines."""

from __future__ import annotations

import sqlalchemy as sa

from store import Store
from store import schema as t
from store.codec import EventDecoder
from store.services.archive.scan import event_of
from store.services.demo import fill_demo


def test_the_store_the_archive_and_verify_decode_a_log_alike(store: Store) -> None:
    ids = fill_demo(store)
    task_id = ids[0]
    with store.read() as conn:
        loaded = list(store.load_events(conn, task_id))
        rows = list(
            conn.execute(
                sa.select(t.events).where(t.events.c.task_id == task_id).order_by(t.events.c.seq)
            )
        )
    assert len(loaded) == len(rows) > 5
    decoder = EventDecoder()
    for event, row in zip(loaded, rows, strict=True):
        assert event_of(row) == event
        payload, actor = decoder(
            row.type, row.format, row.payload, row.actor_kind, row.actor_id, row.actor_name
        )
        assert (payload, actor) == (event.payload, event.actor)
        assert event.body() == event_of(row).body()


def test_a_decoder_reuses_one_actor_object_per_actor() -> None:
    decoder = EventDecoder()
    a = decoder.actor("agent", "drafter", "")
    assert decoder.actor("agent", "drafter", "") is a
    assert decoder.actor("person", "rita", "Rita") is not a
