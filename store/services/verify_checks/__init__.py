"""The checks `boris verify` runs over one task (store.services.verify runs them per task).

`task.TaskCheck` streams the task's log once and hands each row to the checks that watch
it, then runs what each check kept: `chain` (the hash chain, the task's head, the head
verify last found clean), `authority` (the log replayed through the rules the commands
enforce), `replay` (the projections replayed in a scratch database and compared),
`lineage` (the checkpoints), `approvals`, `budgets` and `blobs`. Each says what it finds
in the task's `findings.TaskFindings`, in the order the checks run.
"""
