"""`boris serve` (the decision page for a phone, store.web) and `boris passkeys` (list and
revoke the passkeys registered from it).

`boris serve --actor person:ID` runs as that person, on a machine that holds their desktop
key: it prints a one-time link that registers a passkey for them (the registration signed
by that key), and records each decision made on the page with its passkey's assertion.
"""

from __future__ import annotations

import argparse
import sys
import threading
from collections.abc import Callable
from typing import Any

from ..commands.passkeys import revoke_passkey
from ..db import database_now
from ..reads import passkeys as pk
from ..services import answers, escalations
from ..store import Store
from .output import _actor, _print
from .parser import global_options

Add = Callable[[str, Any], argparse.ArgumentParser]


def _person(args: argparse.Namespace) -> Any:
    actor = _actor(args.actor)
    if actor.kind != "person":
        raise answers.UsageError(f"passkeys decide for a person, not {actor.kind}:{actor.id}")
    return actor


def cmd_serve(store: Store, args: argparse.Namespace) -> None:
    try:
        import uvicorn

        from ..web.app import make_app
        from ..web.ceremony import RelyingParty
        from ..web.serve import listen
        from ..web.site import Site
    except ImportError as exc:
        raise answers.UsageError(
            f"boris serve needs the web extra ({exc.name}): pip install 'boris-desktop[web]'"
        ) from None
    person = _person(args)
    where = listen(args.host, args.port, args.cert, args.cert_key, args.origin)
    store.sign_as(person)
    site = Site(store, RelyingParty(where.origin, where.rp_id), secure_cookies=True, person=person)
    stop = _notifications(site, person, where.origin, args)
    token = site.invite(person)
    print(f"boris serve: decisions at {where.origin}/", flush=True)
    print(
        f"register a passkey for {person.kind}:{person.id} (once, within 15 minutes): "
        f"{where.origin}/register?token={token}",
        flush=True,
    )
    uvicorn.run(
        make_app(site),
        host=where.host,
        port=where.port,
        ssl_certfile=where.certfile,
        ssl_keyfile=where.keyfile,
        log_level="warning",
        server_header=False,
        proxy_headers=False,
    )
    stop.set()


def _notifications(
    site: Any, person: Any, origin: str, args: argparse.Namespace
) -> threading.Event:
    """The escalations' ticker (store.services.escalations); with --notify or
    --deny-on-timeout, a watcher thread too (store.web.notify)."""
    stop = threading.Event()
    # The escalations that come due while the page is served are recorded (issue 42).
    escalations.Ticker(site.store, person, lock=site.store_lock, stop=stop).start()
    if args.notify or args.notify_file or args.deny_on_timeout:
        from ..web.notify import Watcher, apprise_sender

        if args.notify_every <= 0:
            raise answers.UsageError("--notify-every must be a positive number of seconds")
        wanted = args.notify or args.notify_file
        send = apprise_sender(args.notify or [], args.notify_file or []) if wanted else None
        watcher = Watcher(site.store, person, origin, send, site.store_lock)
        if args.deny_on_timeout:
            # Two looks' time before the expiry, so that no look misses it.
            watcher.deny_within = 2 * args.notify_every + 1
        threading.Thread(
            target=watcher.run, args=(stop, args.notify_every), name="boris-notify", daemon=True
        ).start()
    return stop


def cmd_passkeys(store: Store, args: argparse.Namespace) -> None:
    if args.passkeys_cmd == "revoke":
        person = _person(args)
        store.sign_as(person)
        with store.transaction() as tx:
            now = database_now(tx.conn)
            gone = revoke_passkey(tx.conn, store.signer, person, args.credential_id, now)
        _print(args, _row(gone), f"revoked {gone.credential_id} ({gone.actor}) at {now}")
        return
    with store.read() as conn:
        reg = pk.registry(conn)
    rows = [_row(p) for p in reg.passkeys.values()]
    human = "\n".join(
        f"{p.credential_id}  {p.actor}  {p.rp_id}  added {p.added_at}"
        + (f"  revoked {p.revoked_at}" if p.revoked_at else "")
        for p in reg.passkeys.values()
    )
    _print(args, {"passkeys": rows, "problems": list(reg.problems)}, human or "(no passkeys)")
    for problem in reg.problems:
        print(problem, file=sys.stderr)


def _row(p: pk.Passkey) -> dict[str, Any]:
    return {
        "credential_id": p.credential_id,
        "actor": p.actor,
        "rp_id": p.rp_id,
        "origin": p.origin,
        "added_at": p.added_at,
        "revoked_at": p.revoked_at,
        "signer_key_id": p.signer_key_id,
    }


def register(add: Add) -> None:
    sp = add("serve", cmd_serve)
    sp.add_argument(
        "--host",
        default="127.0.0.1",
        help="address to listen on (default 127.0.0.1; beyond loopback only with --cert)",
    )
    sp.add_argument("--port", type=int, default=8765, help="port (default 8765)")
    sp.add_argument("--cert", help="TLS certificate (PEM); needed beyond loopback")
    sp.add_argument("--cert-key", help="the TLS certificate's private key (PEM)")
    sp.add_argument(
        "--origin",
        help="the address a phone's browser opens, when a reverse proxy is in front "
        "(e.g. https://boris.example.net); passkeys are bound to its host",
    )
    sp.add_argument(
        "--notify",
        action="append",
        metavar="URL",
        help="send new approvals and expiries to this Apprise URL (repeat for more): "
        "one plain-text line with the page's link",
    )
    sp.add_argument(
        "--notify-file",
        action="append",
        metavar="FILE",
        help="the same, with the URLs in an Apprise configuration file (one a line) readable "
        "by you alone: a URL's token is then not on the command line, where other processes "
        "can read it",
    )
    sp.add_argument(
        "--notify-every", type=float, default=5.0, help="seconds between looks (default 5)"
    )
    sp.add_argument(
        "--deny-on-timeout",
        action="store_true",
        help="your choice that silence means no: reject in your name (with a note saying so) "
        "each request you may decide that is about to expire unanswered",
    )
    sp = add("passkeys", cmd_passkeys)
    sub = sp.add_subparsers(dest="passkeys_cmd", required=True)
    common = argparse.ArgumentParser(add_help=False)
    global_options(common, argparse.SUPPRESS)
    sub.add_parser("list", help="the registered passkeys, revoked ones included", parents=[common])
    rv = sub.add_parser(
        "revoke", help="revoke a passkey: it decides nothing from now on", parents=[common]
    )
    # A base64url id may begin with "-", which argparse reads as an option: `--` before it.
    rv.add_argument(
        "credential_id",
        help="as `boris passkeys list` prints it; one that begins with '-' goes after --",
    )
