"""The inbox: every task, most-needing first."""
