"""Decisions made with a passkey (issue 43), proved again offline: each `approval.decided`
that carries a WebAuthn assertion must verify, with the `webauthn` library, against a passkey
the store's signed entries register for the person who decided (store.reads.passkeys), not
revoked at the decision's time, over the challenge of exactly that decision (this store, the
task, the approval, the digest it bound then, the verdict, the note, the nonce), no nonce
spent twice. A passkey this store does not register at all (an imported task's, registered
where it came from) is noted, not judged: the decision's own signature still proves it."""

from __future__ import annotations

from sqlalchemy.engine import Connection

from ... import events as ev
from ...reads import passkeys as pk
from ...record import Event
from ...signing import keyring
from .findings import TaskFindings


class PasskeysCheck:
    def __init__(
        self, found: TaskFindings, conn: Connection, keys: keyring.Keyring | None = None
    ) -> None:
        self.found = found
        self.conn = conn
        #: The keys given out of band (`verify --keys`, `verify-package`): the entries'
        #: signatures are checked against these only, as the writes' are.
        self.keys = keys
        #: What each approval binds as the log streams by (its request, then an edit).
        self.binds: dict[str, str] = {}
        self.decided: list[tuple[Event, ev.ApprovalDecided, str | None]] = []

    def see(self, e: Event) -> None:
        p = e.payload
        if isinstance(p, ev.ApprovalRequested):
            self.binds[p.approval_id] = p.payload_digest
        elif isinstance(p, ev.ApprovalDecided):
            if p.assertion is not None:
                self.decided.append((e, p, self.binds.get(p.approval_id)))
            if p.edited_digest is not None:
                self.binds[p.approval_id] = p.edited_digest

    def check(self) -> None:
        if not self.decided:
            return
        registry = pk.registry(self.conn, self.keys)
        store_id = pk.store_identity(self.conn)
        nonces: set[str] = set()
        for e, p, bound in self.decided:
            cred = str((p.assertion or {}).get("credential_id"))
            if registry.get(cred) is None and cred not in registry.refused:
                # An imported task's: the passkey was registered in the store it came from.
                # The decision's own signature (its writer's key) still proves who decided.
                self.found.note(
                    "passkey_unknown_here",
                    f"seq {e.seq}: approval {p.approval_id} was decided with passkey {cred}, "
                    "which this store does not register: its assertion is not checked here",
                )
                continue
            why = self._why(e, p, bound, registry, store_id, nonces)
            if why is not None:
                self.found.problem(
                    "passkey_assertion",
                    f"seq {e.seq}: {e.actor.kind}:{e.actor.id}'s decision of approval "
                    f"{p.approval_id} by passkey does not verify: {why}",
                    e.seq,
                )

    @staticmethod
    def _why(
        e: Event,
        p: ev.ApprovalDecided,
        bound: str | None,
        registry: pk.Registry,
        store_id: str,
        nonces: set[str],
    ) -> str | None:
        try:
            a = pk.PasskeyAssertion.model_validate(p.assertion)
        except ValueError:
            return "the assertion recorded is malformed"
        if a.nonce in nonces:
            return f"its nonce was spent by an earlier decision ({a.nonce})"
        nonces.add(a.nonce)
        found = registry.get(a.credential_id)
        if found is None:
            why = registry.refused.get(a.credential_id, "no entry")
            return f"passkey {a.credential_id}'s entry counts for nothing ({why})"
        if (found.actor_kind, found.actor_id) != (str(e.actor.kind), e.actor.id):
            return f"passkey {a.credential_id} is {found.actor}'s"
        if not found.active(e.at):
            return f"passkey {a.credential_id} was revoked at {found.revoked_at}"
        if bound is None or a.digest != bound:
            return f"it was made for digest {a.digest}, the approval bound {bound}"
        challenge = pk.decision_challenge(
            store_id, e.task_id, p.approval_id, bound, p.decision, p.note, a.nonce
        )
        return pk.webauthn_problem(found, a, challenge)
