"""The decision queue: every open decision across tasks."""
