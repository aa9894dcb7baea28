"""The task view's panels: one module per part of the record."""
