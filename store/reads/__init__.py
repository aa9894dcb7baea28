"""Read models: plain functions over a connection, returning dicts and frozen rows.

`queries` (tasks, events, phases), `state` (a task's whole state for readers), `checkpoints`
(checkpoint rows as readers see them), `heads` (the kept-connection head reader), and
`decision_views` with `changes` (what a person decides, as frozen typed views). They
import only the schema, `db`, `rules` and `blobs`: never a command, a transaction or the store.
"""
