"""A reviewer's passkeys, as the window's File › Reviewer… shows them (issue 43).

The list and the revocation are the ones `boris passkeys list|revoke` make (the store's signed
entries, `store.reads.passkeys`; a revocation signed by the person's desktop key,
`store.commands.passkeys.revoke_passkey`). A registration link is one-time and lives in the
`boris serve` process that printed it (`store.web.site.Site.invite`): nothing else can make
one that server honours, so the window runs that very command (`serve_argv`) and reads its
link from what it prints (`registration_link`); the link works while that server runs.
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass

from ..commands.passkeys import revoke_passkey
from ..db import database_now
from ..errors import CommandRejected
from ..model import Actor
from ..reads import passkeys as pk
from ..store import Store

#: What `boris serve` prints the one-time link in (store.cli.web.cmd_serve).
_LINK = re.compile(r"^register a passkey for (\S+) .*?: (\S+/register\?token=\S+)\s*$")
#: And where the page is.
_PAGE = re.compile(r"^boris serve: decisions at (\S+)\s*$")
#: The port `boris serve` listens on unless told otherwise.
DEFAULT_PORT = 8765


@dataclass(frozen=True)
class ReviewerPasskeys:
    """A person's passkeys (revoked ones too, newest first) as the store's signed entries
    say; `problems`: entries that count for nothing; `now`: the database clock then."""

    actor: Actor
    passkeys: tuple[pk.Passkey, ...]
    problems: tuple[str, ...]
    now: str

    def active(self) -> tuple[pk.Passkey, ...]:
        return tuple(p for p in self.passkeys if p.active(self.now))


def _person(person: Actor | str) -> Actor:
    actor = person if isinstance(person, Actor) else Actor.parse(person)
    if actor.kind != "person":
        raise CommandRejected(f"passkeys decide for a person, not {actor.kind}:{actor.id}")
    return actor


def reviewer_passkeys(store: Store, person: Actor | str) -> ReviewerPasskeys:
    """The passkeys registered for `person` (a person)."""
    actor = _person(person)
    with store.read() as conn:
        reg = pk.registry(conn)
        now = database_now(conn)
    mine = [p for p in reg.passkeys.values() if (p.actor_kind, p.actor_id) == ("person", actor.id)]
    mine.sort(key=lambda p: p.added_at, reverse=True)
    return ReviewerPasskeys(actor, tuple(mine), reg.problems, now)


def revoke_reviewer_passkey(store: Store, person: Actor | str, credential_id: str) -> pk.Passkey:
    """Revoke one of `person`'s passkeys now, signed by their desktop key (as
    `boris passkeys revoke`). PasskeyRefused: unknown, another person's, revoked already."""
    actor = _person(person)
    store.sign_as(actor)
    with store.transaction() as tx:
        return revoke_passkey(tx.conn, store.signer, actor, credential_id, database_now(tx.conn))


def serve_argv(store: Store, person: Actor | str, port: int = DEFAULT_PORT) -> list[str]:
    """The `boris serve` that makes a one-time registration link for `person` on this store
    (loopback: the phone reaches it through a reverse proxy or a private network)."""
    actor = _person(person)
    where = store.location
    argv = [sys.executable, "-m", "store.cli", "--store", str(where.directory)]
    if where.sqlite_file is None:
        argv += ["--url", where.url]
    return [*argv, "--actor", f"person:{actor.id}", "serve", "--port", str(port)]


@dataclass(frozen=True)
class ServeLine:
    """What one line `boris serve` printed says: the page's address, or the link."""

    page: str | None = None
    link: str | None = None
    link_for: str | None = None


def serve_line(line: str) -> ServeLine:
    """Read one line of `boris serve`'s output (an empty ServeLine: neither)."""
    found = _LINK.match(line.strip())
    if found:
        return ServeLine(link=found.group(2), link_for=found.group(1))
    page = _PAGE.match(line.strip())
    return ServeLine(page=page.group(1)) if page else ServeLine()
