"""The resident `boris`: one process per login and interpreter that has imported the
command layer, and forks a child to run each `boris` command given to it, so a command
(a Claude Code hook before each tool call, a shell script's writes) starts in a fork, not
in a second of imports — the way language servers and `ruff server` stay resident.

`client` hands a command over (or says it cannot, and the command runs where it was
started, as before); `server` is the resident process; `wire` what the two agree on.
BORIS_RESIDENT=off turns it off.
"""
