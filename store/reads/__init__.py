"""Read models: plain functions over a connection, returning dicts and frozen rows.

`queries` (tasks, events, phases), `state` (a task's whole state for readers), `checkpoints`
(checkpoint rows as readers see them) and `heads` (the kept-connection head reader). They
import only the schema, `db`, `rules` and `blobs`: never a command, a transaction or the store.
"""
