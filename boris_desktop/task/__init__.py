"""The task view: the header above a tab per part of the record."""
