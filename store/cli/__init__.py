"""`boris`, the command line: `entry` (main: parse, open the store, run), `parser` (the
global options and the table of subcommands), `output` (shared by every area), one module
per area of the record, imported when one of its subcommands is used (`app` holds the task
commands), and `resident` (the process that runs commands in a fork of itself). Run it as
`boris` or `python -m store.cli`."""

from __future__ import annotations

import sys

TYPE_CHECKING = False  # typing unimported, as in store/__init__.py
if TYPE_CHECKING:
    from collections.abc import Sequence

    from .parser import build_parser


def main(argv: Sequence[str] | None = None) -> int:
    """`boris`: a process's own command line (argv None) goes to the resident process
    when there is one (store.cli.resident), else runs here; a list runs here."""
    if argv is None:
        if sys.argv[1:] == ["--version"]:  # what it prints, with nothing else imported
            from ..version import __version__

            print(f"boris {__version__}")
            return 0
        from .resident.client import hand_over

        code = hand_over(sys.argv[1:])
        if code is not None:
            return code
    from .entry import main as run

    return run(argv)


def __getattr__(name: str) -> object:
    if name == "build_parser":
        from .parser import build_parser

        return build_parser
    raise AttributeError(f"module 'store.cli' has no attribute {name!r}")


__all__ = ["build_parser", "main"]
