"""Use cases built on the store: each opens or is given a `Store` and works through its
public face (`execute`, `read`, `task`), never below it.

`resume` (the brief a resuming agent gets), `narratives` (checking accounts, summaries),
`reconcile` (observe an effect, then judge), `verify` with `verified_heads` (the chain and
its remembered heads), `demo` (the demo task) and `archive` (export and import).
"""
