"""What every `boris` subcommand shares: who is acting, printing (`--json` or a line for
people), and running one command as a subcommand."""

from __future__ import annotations

import argparse
import json
import os
from typing import Any

from ..model import Actor
from ..store import Store


def _actor(text: str | None) -> Actor:
    raw = text or os.environ.get("BORIS_ACTOR") or f"person:{os.environ.get('USER', 'reviewer')}"
    return Actor.parse(raw)


def _print(args: argparse.Namespace, value: Any, human: str) -> None:
    if args.json:
        print(json.dumps(value, indent=2, default=str, sort_keys=True))
    else:
        print(human)


def _write(build: Any) -> Any:
    def run(store: Store, args: argparse.Namespace) -> None:
        result = store.execute(build(args), _actor(args.actor))
        _print(args, {"result": result}, str(result) if result is not None else "ok")

    return run


def _global_options(p: argparse.ArgumentParser, default: Any) -> None:
    p.add_argument(
        "--store",
        default=default,
        help="store directory (default: BORIS_STORE or the user data dir)",
    )
    p.add_argument(
        "--url",
        default=default,
        help="database URL (e.g. postgresql+psycopg://…); blobs stay in --store",
    )
    p.add_argument("--json", action="store_true", default=default, help="machine-readable output")
    p.add_argument(
        "--actor",
        default=default,
        help="who acts: kind:id[:name] (default BORIS_ACTOR or person:$USER)",
    )
    p.add_argument(
        "--key",
        default=default,
        help="the signing key file of the actor (an agent's; default BORIS_KEY, or a "
        "person's own key in the user config dir)",
    )
