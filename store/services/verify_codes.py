"""What kind of problem each of verify's findings is: a small, stable set a script branches on.

A finding's `kind` is the precise word for what was found (`event_hash`, `bad_signature`, …)
and may grow; its `code` says which part of the record's proof failed, from the few below,
so a script need not know every kind. `boris schema` lists the codes (`x-outputs`).
"""

from __future__ import annotations

from enum import StrEnum


class ProblemCode(StrEnum):
    """Which proof a finding is about."""

    #: The hash chain does not hold: an event changed after it was written, a link or a seq
    #: missing, an event that cannot be read, the task's head not the log's.
    CHAIN = "chain"
    #: The log is older than a head verify once found clean: truncated or rolled back.
    ROLLBACK = "rollback"
    #: The tables do not match a replay of the log.
    PROJECTION = "projection"
    #: A blob an event names is missing or does not hash to its name.
    BLOB = "blob"
    #: The checkpoints' lineage: initial, boundaries, digests, supersedes, forks.
    LINEAGE = "lineage"
    #: An approval decided or used against its rules.
    APPROVAL = "approval"
    #: A budget's used amount is not the sum of its charges.
    BUDGET = "budget"
    #: A signature that does not prove its events: a bad or unknown key, a revoked one, a key
    #: of another actor, the keyring's own chain.
    SIGNATURE = "signature"
    #: Events that no signature covers.
    UNSIGNED = "unsigned"
    #: A team store's event its database role could not have written.
    ROLE = "role"
    #: An event its actor could not have written then, by the rules the commands enforce: a
    #: person's decision by anyone else, a lease taken beside its holder, an agent's event
    #: while a person holds the task, a `system:` event the store did not write.
    AUTHORITY = "authority"
    #: A package that is not a readable, consistent Boris package.
    PACKAGE = "package"


_KINDS: dict[ProblemCode, tuple[str, ...]] = {
    ProblemCode.CHAIN: ("event_hash", "chain_link", "seq_gap", "event_unreadable", "task_head"),
    # A task absent by a person's deletion (its receipt, issue 35 part D) is a log gone on
    # purpose: `task_deleted` (info) when its receipt holds, `deletion_receipt` when not.
    ProblemCode.ROLLBACK: (
        "head_rolled_back",
        "head_rewritten",
        "task_deleted",
        "deletion_receipt",
    ),
    ProblemCode.PROJECTION: ("projection", "replay_failed"),
    # `blob_retired` (info): gone by its retention class, its tombstone kept (issue 35 part R).
    ProblemCode.BLOB: ("blob_missing", "blob_corrupt", "blob_absent", "blob_retired"),
    ProblemCode.LINEAGE: (
        "checkpoint_boundary",
        "checkpoint_digest",
        "lineage_duplicate",
        "lineage_initial",
        "lineage_cycle",
        "lineage_forward",
        "lineage_unresolved",
        "fork",
    ),
    ProblemCode.APPROVAL: (
        "approval_unknown",
        "approval_decider",
        "approval_redecided",
        "approval_reused",
        # A decision made with a passkey whose assertion does not verify (issue 43).
        "passkey_assertion",
        "passkey_unknown_here",
    ),
    ProblemCode.BUDGET: ("budget",),
    ProblemCode.SIGNATURE: (
        "unknown_key",
        "bad_signature",
        "revoked_key",
        "key_names_another_actor",
        # A transaction of the store's own events (system:) not signed by a person's key.
        "system_signer",
        "signature_without_event",
        "keyring",
        "signed_by",
    ),
    ProblemCode.UNSIGNED: ("unsigned_tail", "unsigned", "unsigned_package"),
    ProblemCode.ROLE: ("role_could_not_write",),
    # store.rules.event_authority: `not_by_the_store` for a system: event, else
    # `not_authorized` (and a deleted task's receipt that names no person).
    ProblemCode.AUTHORITY: ("not_authorized", "not_by_the_store"),
    ProblemCode.PACKAGE: ("package_refused",),
}

#: Every finding's kind -> its code. A kind missing here is a bug (tests/test_verify_fields.py
#: reads the kinds the sources write and checks each is here).
CODE_OF_KIND: dict[str, ProblemCode] = {k: code for code, ks in _KINDS.items() for k in ks}


def code_of(kind: str) -> ProblemCode:
    return CODE_OF_KIND[kind]
