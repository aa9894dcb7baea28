"""`boris`, the command line: `entry` (main: parse, open the store, run), `parser` (the
global options and the table of subcommands), `output` (shared by every area), and one module
per area of the record, imported when one of its subcommands is used (`app` holds the task
commands). Run it as `boris` or `python -m store.cli`."""

from .entry import main
from .parser import build_parser

__all__ = ["build_parser", "main"]
