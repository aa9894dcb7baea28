"""Who signed a record, in words and an icon (never colour alone).

What counts as signed, unsigned or signed by an unknown key is the store's word
(`store.reads.signers`, over `store.signing`); this module only says it. It is imported
with the panels, after the first paint; the store's module is imported when a signer is
first said, by then loaded on a worker with the record it describes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from store.api import LastSignature, SignatureSummary, Signer

#: A key's short fingerprint: the first hex digits of its key id, as git shortens a hash.
SHORT = 8


def fingerprint(key_id: str) -> str:
    return key_id[:SHORT]


def _who(mark: Signer | LastSignature) -> str:
    actor = mark.actor or ""
    return mark.name or actor.partition(":")[2] or actor


def signer_words(mark: Signer | None) -> tuple[str, str | None, str]:
    """(cell text, icon name or None, tooltip) for an event's or a decision's signer."""
    from store import api

    if mark is None:
        return "—", None, ""
    state = mark.state
    key = mark.key_id or ""
    if state == api.SignatureState.STORE_UNSIGNED:
        return "—", None, "This store does not sign its records (an unsigned store)."
    if state == api.SignatureState.UNSIGNED:
        return (
            "unsigned",
            "attention",
            "Not signed by any key: written after the task's last signature.",
        )
    if state == api.SignatureState.UNKNOWN_KEY:
        return (
            f"unknown key {fingerprint(key)}",
            "failed",
            f"Signed by key {key}, which this store's keyring does not know.",
        )
    who = _who(mark)
    if state == api.SignatureState.REVOKED_KEY:
        return (
            f"revoked key: {who} · {fingerprint(key)}",
            "failed",
            f"Signed by key {key} of {mark.actor} after that key was revoked.",
        )
    if state == api.SignatureState.OTHER_ACTOR:
        return (
            f"another's key: {who} · {fingerprint(key)}",
            "failed",
            f"Signed by key {key}, bound to {mark.actor}, not to the actor of this record.",
        )
    return f"{who} · {fingerprint(key)}", "signed", f"Signed by {mark.actor} with key {key}."


def summary_words(summary: SignatureSummary | None) -> tuple[str, str]:
    """(the task's signatures in a line, an alarm line or "")."""
    if summary is None:
        return "—", ""
    if not summary.signed:
        return "unsigned store: its writes are not signed by any key", ""
    n = summary.count
    line = f"{n:,} signed write{'s' if n != 1 else ''}"
    if summary.required:
        line = "required · " + line
    last = summary.last
    if last is not None:
        fp = fingerprint(last.key_id)
        who = f"{_who(last)} · key {fp}" if last.known else f"an unknown key {fp}"
        line += f", the last by {who} (seq {last.seq})"
    alarms = []
    tail = summary.unsigned_after
    if tail is not None:
        alarms.append(
            f"Events after seq {tail} are not signed by any key."
            if tail
            else "None of this task's events is signed by any key."
        )
    if last is not None and not last.known:
        alarms.append(f"The last signature is by key {last.key_id}, unknown to the keyring.")
    if summary.keyring_problems:
        alarms.append("The store's keyring does not verify: run `boris verify`.")
    return line, " ".join(alarms)
