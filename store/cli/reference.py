"""The command reference (docs/cli-reference.md), generated from `boris`'s own parser.

Every command's help as `boris COMMAND --help` prints it, nested commands too, so the page
can never name an option the program does not have. tests/test_docs.py checks the page is
what this prints; after changing a command, write it again:

    .venv/bin/python -m store.cli.reference > docs/cli-reference.md
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Iterator

from .parser import EPILOG, build_parser

#: The width the help is wrapped to: the page must not depend on the terminal it was made in.
WIDTH = "100"

HEAD = """\
# Command reference

Generated from `boris` itself (`python -m store.cli.reference`): each command's `--help`.
The global options (`--store`, `--url`, `--json`, `--actor`, `--key`, `--lease-token`) go
before or after the command. [The command line](cli.md) explains who acts, `--json` answers
and refusals; `boris schema` gives the JSON Schema of every command and output.
"""


def _commands(parser: argparse.ArgumentParser, path: str) -> Iterator[tuple[str, str]]:
    for action in getattr(parser, "nested", []):
        choices = action.choices
        assert isinstance(choices, dict)
        for name, sub in choices.items():
            full = f"{path} {name}"
            yield full, sub.format_help()
            yield from _commands(sub, full)


def markdown() -> str:
    saved = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = WIDTH
    try:
        parser = build_parser()
        parts = [HEAD, "## Exit codes\n", "```text\n" + EPILOG.rstrip() + "\n```\n"]
        for name, text in _commands(parser, "boris"):
            parts.append(f"## `{name}`\n")
            parts.append("```text\n" + text.rstrip() + "\n```\n")
        return "\n".join(parts)
    finally:
        if saved is None:
            del os.environ["COLUMNS"]
        else:
            os.environ["COLUMNS"] = saved


if __name__ == "__main__":
    print(markdown(), end="")
