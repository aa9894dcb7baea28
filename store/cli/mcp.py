"""`boris mcp`: serve the record to an agent over the Model Context Protocol."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

from ..adapters.claude_code import READ_ONLY_TOOLS, PromptSettings
from ..model import Actor
from ..services.answers import UsageError
from ..store import Store


def agent_actor(text: str | None) -> Actor:
    """The server's agent identity: --actor or BORIS_ACTOR, never guessed, never a person."""
    raw = text or os.environ.get("BORIS_ACTOR")
    if not raw:
        raise UsageError(
            "boris mcp needs the agent it acts for: add --actor agent:ID "
            "(or set BORIS_ACTOR=agent:ID)"
        )
    actor = Actor.parse(raw)
    if actor.kind != "agent":
        raise UsageError(
            f"boris mcp acts for an agent, not a {actor.kind} ({raw}): "
            "people decide in Boris Desktop or with the boris CLI"
        )
    return actor


def _prompts(args: argparse.Namespace) -> PromptSettings:
    """How Claude Code's permission prompt is answered: --task (or BORIS_TASK), the longest
    wait for a person, and the tools allowed without one (--auto-allow or BORIS_AUTO_ALLOW)."""
    auto = args.auto_allow if args.auto_allow is not None else os.environ.get("BORIS_AUTO_ALLOW")
    if args.permission_timeout <= 0:
        raise UsageError("--permission-timeout must be a positive number of seconds")
    return PromptSettings(
        task_id=args.task or os.environ.get("BORIS_TASK") or None,
        timeout_seconds=args.permission_timeout,
        auto_allow=frozenset(n.strip() for n in (auto or "").split(",") if n.strip()),
    )


def _serve_team(store: Store, args: argparse.Namespace) -> None:
    """`boris mcp --http --team`: every agent, each by its own token (store.mcp.team)."""
    from ..mcp.server import LOOPBACK
    from ..mcp.team import TeamServer, serve_team

    if not args.http:
        raise UsageError("boris mcp --team serves agents over HTTP: add --http")
    if args.actor:
        raise UsageError(
            "boris mcp --team acts for the agent each request's token names: drop --actor"
        )
    if args.key or os.environ.get("BORIS_KEY"):
        raise UsageError(
            "boris mcp --team signs each agent's writes with that agent's own key from --keys "
            "DIR: drop --key and unset BORIS_KEY (one key names one actor)"
        )
    keys = Path(args.keys).expanduser().absolute() if args.keys else None
    if keys is not None and not keys.is_dir():
        raise UsageError(f"--keys {args.keys}: no such directory")
    if keys is None and store.is_signed():
        raise UsageError(
            "this store signs its records: give --keys DIR, the directory holding each agent's "
            "key as agent-ID.pem (boris keys new DIR/agent-ID.pem; a person trusts it: "
            "boris keys add DIR/agent-ID.pem --for agent:ID)"
        )
    if args.host not in LOOPBACK:
        print(
            f"boris mcp: serving agents on {args.host} in plain HTTP: their tokens would cross "
            "the network in the clear; put TLS in front (a reverse proxy terminating HTTPS) "
            "and let agents reach only that",
            file=sys.stderr,
            flush=True,
        )
    server = TeamServer(
        store,
        host=args.host,
        keys=keys,
        max_wait_seconds=args.max_wait,
        prompts=_prompts(args),
    )

    def ready(address: str) -> None:
        print(
            f"boris mcp: streamable HTTP at {address} for every agent with a token "
            "(Authorization: Bearer TOKEN)",
            file=sys.stderr,
            flush=True,
        )

    serve_team(server, args.host, args.port, ready)


def cmd_mcp(store: Store, args: argparse.Namespace) -> None:
    import anyio

    from ..mcp.server import BorisServer, serve_http, serve_stdio

    if args.team:
        _serve_team(store, args)
        return
    server = BorisServer(
        store, agent_actor(args.actor), max_wait_seconds=args.max_wait, prompts=_prompts(args)
    )
    if args.http:

        def ready(address: str) -> None:
            print(f"boris mcp: streamable HTTP at {address}", file=sys.stderr, flush=True)

        serve_http(server, args.host, args.port, ready)
    else:
        anyio.run(serve_stdio, server)


def register(add: Any) -> None:
    sp = add(
        "mcp",
        cmd_mcp,
    )
    sp.add_argument(
        "--http",
        action="store_true",
        help="serve streamable HTTP at http://HOST:PORT/mcp instead of stdio",
    )
    sp.add_argument(
        "--team",
        action="store_true",
        help="with --http: serve every agent of a team store, each request acting for the agent "
        "its Authorization: Bearer token names (boris agent-token issue); this process holds "
        "the database login, agents none",
    )
    sp.add_argument(
        "--keys",
        metavar="DIR",
        help="with --team: the directory holding each agent's signing key as agent-ID.pem "
        "(needed on a signed store)",
    )
    sp.add_argument(
        "--host",
        default="127.0.0.1",
        help="address to listen on with --http: 127.0.0.1 (default), ::1 or localhost; with "
        "--team any address, behind TLS",
    )
    sp.add_argument(
        "--port",
        type=int,
        default=8765,
        help="port to listen on with --http (default 8765; 0 picks a free one, printed on stderr)",
    )
    sp.add_argument(
        "--max-wait",
        type=float,
        default=900.0,
        help="the longest wait_for_approval may wait, in seconds (default 900)",
    )
    sp.add_argument(
        "--task",
        help="the task Claude Code's permission prompts (the permission_prompt tool) are "
        "recorded in (else BORIS_TASK; without one every prompt is denied)",
    )
    sp.add_argument(
        "--permission-timeout",
        type=float,
        default=600.0,
        help="how long a permission prompt waits for a person before it denies, in seconds "
        "(default 600; at most --max-wait)",
    )
    sp.add_argument(
        "--auto-allow",
        metavar="TOOLS",
        help="comma-separated tools a permission prompt allows without a person, still "
        f"recorded (else BORIS_AUTO_ALLOW; default none; e.g. {','.join(READ_ONLY_TOOLS)})",
    )
