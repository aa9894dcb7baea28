"""Leases: who works on a task now, and the fence every write passes.

A lease's standing is judged at read time on the database's clock (never written). The token
orders writers, it is not a credential: an agent writes under the current lease only, and
while a person holds the task no agent writes at all.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from .states import ActorKind, Refusal


class LeaseStanding(StrEnum):
    """How a task's lease stands now, judged at read time on the database's clock (never
    written, like an approval's expiry): `alive` (held, not past its expiry; a person's lease
    has none), `expired` (held, but no heartbeat came in time: nobody is working on it, and
    another session may acquire it), `ended` (released or taken over), `none` (never leased)."""

    ALIVE = "alive"
    EXPIRED = "expired"
    ENDED = "ended"
    NONE = "none"


#: How long a lease lasts without a heartbeat when the acquirer names no time, and the bounds.
LEASE_TTL_DEFAULT = 60
LEASE_TTL_MAX = 86400


def lease_expiry(
    granted_expires_at: str | None,
    token: int,
    heartbeat_token: int | None,
    heartbeat_expires_at: str | None,
) -> str | None:
    """When the lease lapses: the expiry its acquisition granted, pushed out by its newest
    heartbeat (store.schema.lease_heartbeats) only while that heartbeat is this lease's
    (its token), so a late heartbeat of an older lease never extends a newer one. None: a
    person's lease, held until released."""
    if granted_expires_at is None:
        return None
    if heartbeat_token == token and heartbeat_expires_at is not None:
        return max(granted_expires_at, heartbeat_expires_at)
    return granted_expires_at


def lease_standing(ended_at: str | None, expires_at: str | None, now: str) -> LeaseStanding:
    """The lease's standing now (`expires_at` as `lease_expiry` gives it)."""
    if ended_at is not None:
        return LeaseStanding.ENDED
    if expires_at is not None and expires_at <= now:
        return LeaseStanding.EXPIRED
    return LeaseStanding.ALIVE


@dataclass(frozen=True)
class LeaseView:
    """A task's current (or last) lease as the rules need it."""

    token: int
    holder_kind: str
    holder_id: str
    session_id: str
    standing: LeaseStanding


@dataclass(frozen=True)
class FenceRefusal(Refusal):
    """Why a write is refused by the task's lease: `lost` (its token is not the current
    lease's: the writer no longer works on the task) or not (another holds it: LeaseHeld)."""

    lost: bool


def fence_refusal(
    actor_kind: str, token: int | None, lease: LeaseView | None
) -> FenceRefusal | None:
    """Whether a write to a task is refused by the task's lease. The one rule, for every
    command (store.commands.core.fence):

    - a person's and the store's writes are never fenced by an agent's lease (a person who
      took the task over holds it; one who did not still decides what is theirs to decide);
    - an agent's write with a token is accepted only when the token is the task's current
      lease's and that lease has not ended (released or taken over). A current lease that
      merely expired still accepts it: nobody took a newer token, so nobody can be written
      beside (the token orders writers; it is not a credential, the actor is);
    - an agent's write without a token is refused while another lease is held and alive,
      or held by a person (taken over): an agent works on a leased task only under the
      lease. With no lease, an ended one or an expired one, it is accepted as before leases;
    - a person's lease is theirs: while a person holds the task, no agent writes, whatever
      token it sends (the person's own token included: it orders writers, and the person
      took the task over from every agent).
    """
    if actor_kind != ActorKind.AGENT:
        return None
    if token is None:
        # A person's lease never expires: while they hold the task, it is alive.
        if lease is None or lease.standing != LeaseStanding.ALIVE:
            return None
        who = f"{lease.holder_kind}:{lease.holder_id}"
        return FenceRefusal(
            "write_under_the_lease",
            f"{who} holds this task's lease (token {lease.token}): an agent writes to a leased "
            "task only under its own lease; acquire it once it is released or expired, and "
            "send its token with every write; nothing was written",
            lost=False,
        )
    if lease is None:
        return FenceRefusal(
            "write_under_the_current_lease",
            f"lease token {token} was never granted on this task (it has no lease); "
            "nothing was written",
            lost=True,
        )
    who = f"{lease.holder_kind}:{lease.holder_id}"
    if token < lease.token:
        how = "took the task over" if lease.holder_kind == ActorKind.PERSON else "holds it now"
        return FenceRefusal(
            "write_under_the_current_lease",
            f"lease token {token} is stale: the task's lease is at token {lease.token} and "
            f"{who} {how}; stop working on it (resume only from a new lease); nothing was "
            "written",
            lost=True,
        )
    if token > lease.token:
        return FenceRefusal(
            "write_under_the_current_lease",
            f"lease token {token} was never granted on this task (its lease is at token "
            f"{lease.token}); nothing was written",
            lost=True,
        )
    if lease.standing == LeaseStanding.ENDED:
        return FenceRefusal(
            "write_under_the_current_lease",
            f"the lease of token {token} was released: acquire a new lease before writing; "
            "nothing was written",
            lost=True,
        )
    if lease.holder_kind == ActorKind.PERSON:
        return FenceRefusal(
            "write_under_the_current_lease",
            f"lease token {token} is {who}'s, who took the task over: an agent never writes "
            "under a person's lease; stop working on it (resume only from a new lease once "
            "they release it); nothing was written",
            lost=True,
        )
    return None


def fence_refuses_every_token(actor_kind: str, lease: LeaseView | None) -> FenceRefusal | None:
    """The fence's refusal of a write whatever token it carried, or None when some token (or
    none) would have been accepted: what a log can judge, since it records who wrote an
    event but not the token sent with it. A token older or newer than the lease's is always
    refused, so a write refused both without a token and with the lease's own is refused
    with any: an agent's write while a person holds the task."""
    refused = fence_refusal(actor_kind, None, lease)
    if refused is None or lease is None or fence_refusal(actor_kind, lease.token, lease) is None:
        return None
    return refused


def same_lease_session(
    lease: LeaseView | None, actor_kind: str, actor_id: str, session_id: str
) -> bool:
    """Whether the lease is this actor's, in this session: asking for it again renews it."""
    return lease is not None and (lease.holder_kind, lease.holder_id, lease.session_id) == (
        actor_kind,
        actor_id,
        session_id,
    )


def acquire_refusal(
    lease: LeaseView | None, actor_kind: str, actor_id: str, session_id: str
) -> Refusal | None:
    """Whether a session may take the task's lease now (store.commands.leases.AcquireLease):
    refused while another holder's lease is alive, and a person's (taken over, no expiry) is
    alive until they release it. The same session asking again while its lease is alive is
    given that lease, renewed: no new one."""
    if lease is None or lease.standing != LeaseStanding.ALIVE:
        return None
    if same_lease_session(lease, actor_kind, actor_id, session_id):
        return None
    return Refusal(
        "lease_held",
        f"{lease.holder_kind}:{lease.holder_id} holds the task's lease (token {lease.token}, "
        f"session {lease.session_id or '-'}): nobody else acquires it until it is released "
        "or expires",
    )
