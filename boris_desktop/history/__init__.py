"""What I decided: the reviewer's own decisions across tasks."""
