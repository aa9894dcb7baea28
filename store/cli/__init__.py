"""`boris`, the command line: `app` (parser, task commands, dispatch), `output` (shared by
every area), and one module per area of the record. Run it as `boris` or `python -m store.cli`."""

from .app import build_parser, main

__all__ = ["build_parser", "main"]
