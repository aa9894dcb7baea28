"""Errors at the store boundary.

Two families, as in qutebrowser's sql module: `StoreError` subclasses are the user's environment
or input (a clear message, nothing lost); anything else escaping the store is a bug.
"""

from __future__ import annotations

from typing import ClassVar


class StoreError(Exception):
    """A problem the user can act on. The message is one line, meant to be shown as is.

    Each class names what a program reading the refusal needs (`store.services.answers` turns them
    into a JSON object and an exit code): `code`, stable and specific; `category`, the class of
    problem (refused, not_found, integrity, busy, environment); `rule`, the rule that
    refused, where one did. `code` is a class's, or an instance's where one class refuses
    for several named reasons (a signature: required, unknown key, revoked key)."""

    code: str = "store_error"
    category: ClassVar[str] = "environment"
    rule: str | None = None


class NotText(StoreError):
    """A value holds what is not UTF-8 text (a lone surrogate: a JSON `\\ud800`, or a byte
    that is not UTF-8 as Python reads an argument, a file name or stdin), so no digest,
    hash or record can be made of it: the caller's input is malformed. Nothing was written."""

    code = "invalid_input"
    category = "usage"


class CommandRejected(StoreError):
    """A command broke an invariant. Nothing was written."""

    code = "rejected"
    category = "refused"

    def __init__(self, message: str = "", *, rule: str | None = None) -> None:
        super().__init__(message)
        if rule is not None:
            self.rule = rule


class UnknownTask(CommandRejected):
    code = "unknown_task"
    category = "not_found"

    def __init__(self, task_id: str) -> None:
        super().__init__(f"no task with id {task_id!r}")
        self.task_id = task_id


class UnknownApproval(CommandRejected):
    code = "unknown_approval"
    category = "not_found"

    def __init__(self, task_id: str, approval_id: str) -> None:
        super().__init__(f"task {task_id} has no approval {approval_id!r}")
        self.task_id = task_id
        self.approval_id = approval_id


class AuthorityRefused(CommandRejected):
    """The actor's kind may not run this command (a rule of `store.rules.AUTHORITY`): an agent
    asks a person to do it."""

    code = "authority_refused"

    def __init__(self, rule: str, message: str) -> None:
        super().__init__(message)
        self.rule = rule


class RoleRefused(AuthorityRefused):
    """The database server refused the write for the role the connection logged in as (a
    team store's agents' role writing a person's event, or a role without the privilege):
    whatever actor the writer named. Nothing was written. `role` is the database role."""

    code = "role_refused"

    def __init__(self, rule: str, message: str, role: str) -> None:
        super().__init__(rule, message)
        self.role = role


class BudgetBinds(CommandRejected):
    """The command would spend a budget that is exhausted while the run is budget_exhausted."""

    code = "budget_binds"
    rule = "budget_binds"

    def __init__(self, counter: str, message: str) -> None:
        super().__init__(message)
        self.counter = counter


class TargetChanged(CommandRejected):
    """The effect's target changed since the observation a decision rests on: observe again."""

    code = "target_changed"
    rule = "decide_on_current_observation"

    def __init__(self, observation_id: str, message: str) -> None:
        super().__init__(message)
        self.observation_id = observation_id


class ConflictUndecided(CommandRejected):
    """A reconciliation found a conflict that only a person's decision settles."""

    code = "conflict_undecided"
    rule = "conflict_is_decided_by_a_person"

    def __init__(self, effect_id: str, message: str) -> None:
        super().__init__(message)
        self.effect_id = effect_id


class ObservationOverride(CommandRejected):
    """A hand decision contradicts the store's own observation of a file and was not given as
    an explicit override with a reason."""

    code = "observation_override"
    rule = "observation_overrides_need_override"


class EvidenceMissing(CommandRejected):
    """Evidence a criterion rests on cannot be read now, so the task cannot complete."""

    code = "evidence_missing"
    rule = "evidence_must_be_readable"

    def __init__(self, criteria: list[str], message: str) -> None:
        super().__init__(message)
        self.criteria = criteria


class PendingWork(CommandRejected):
    """A final checkpoint (or completion) asked for while work is still pending."""

    code = "pending_work"
    rule = "final_has_no_pending_work"

    def __init__(self, pending: list[str], message: str) -> None:
        super().__init__(message)
        self.pending = pending


class ForkOpen(CommandRejected):
    """A final checkpoint (or completion) asked for while the lineage would keep a head
    beside it: a person names every head first, the one continued from and each other
    merged (`rules.final_fork_refusal`). `heads`: the lineage's heads; `left_open`: those
    the request left. Nothing was written."""

    code = "fork_open"
    rule = "final_closes_the_lineage"

    def __init__(self, heads: list[str], left_open: list[str], message: str) -> None:
        super().__init__(message)
        self.heads = heads
        self.left_open = left_open


class PhaseBlocked(CommandRejected):
    """A phase asked to be completed while an input it needs is missing (`blocked_by`, in
    the store's words): nothing was written (`rules.phase_completion_refusal`)."""

    code = "phase_blocked"
    rule = "phase_needs_its_inputs"

    def __init__(self, phase_id: str, blocked_by: list[str], message: str) -> None:
        super().__init__(message)
        self.phase_id = phase_id
        self.blocked_by = blocked_by


class ScopeViolation(CommandRejected):
    """A path or destination outside the task's resource scope."""

    code = "scope_violation"
    rule = "within_scope"


class StoreTooNew(StoreError):
    """The store was written by a newer program; it is left untouched."""

    code = "store_too_new"
    category = "environment"


class MigrationFailed(StoreError):
    """Bringing the store to this program's schema failed; it was left at its old schema."""

    code = "migration_failed"
    category = "environment"


class StoreCorrupt(StoreError):
    """The store file cannot be read as a Boris store."""

    code = "store_corrupt"
    category = "integrity"


class StoreBusy(StoreError):
    """Another process held the write lock for longer than the busy timeout."""

    code = "busy"
    category = "busy"


class BlobProblem(StoreError):
    """A blob that is missing or whose content does not match its digest."""

    code = "blob_problem"
    category = "integrity"

    def __init__(self, digest: str, problem: str, owner: str = "") -> None:
        where = f" (owned by {owner})" if owner else ""
        super().__init__(f"blob {digest} is {problem}{where}")
        self.digest = digest
        self.problem = problem
        self.owner = owner


class UnknownEventFormat(StoreError):
    """An event payload in a format this program does not know; never filled with defaults."""

    code = "unknown_event_format"
    category = "integrity"


class StoreMissing(StoreError):
    """A command that only reads (or writes into an existing store) found no store there."""

    code = "store_missing"
    category = "not_found"

    def __init__(self, where: str) -> None:
        super().__init__(f"no store at {where} (boris init creates one)")
        self.where = where


class StoreLocationInvalid(StoreError):
    """The store's directory or database URL cannot be used (a file, an unknown URL form)."""

    code = "store_location_invalid"
    category = "environment"


class StoreReadOnly(StoreError):
    """The store can be read here but not written (a read-only mount or permissions)."""

    code = "store_read_only"
    category = "environment"


class StoreFull(StoreError):
    """The disk (or quota) holding the store is full. Nothing was written; the same store
    object works again once space is freed."""

    code = "store_full"
    category = "environment"


class UnsafeDestination(ScopeViolation):
    """A destination written in a form that servers read differently (a backslash, an
    encoded dot, slash, backslash or percent): refused before any scope comparison."""

    code = "unsafe_destination"
    rule = "unambiguous_destination"


class WriteConflict(StoreError):
    """Writers sharing a database server collided: a deadlock, a serialization failure, or a
    seq another writer took first. Nothing was written; `Store.execute` retries these itself
    and raises this only when a write keeps colliding. Never reported as "busy"."""

    code = "write_conflict"
    category = "busy"

    def __init__(self, kind: str, detail: str) -> None:
        super().__init__(f"the write collided with another writer ({kind}); nothing was written")
        self.kind = kind
        self.detail = detail


class Conflict(CommandRejected):
    """A decision was based on a version of its subject that is no longer current: somebody
    changed it since. Nothing was written; the person looks again and decides on what is
    there now. Never an overwrite.

    Fields for code: `subject_kind` (criterion, artifact, objective, budget, effect),
    `subject_id`, `based_on` (the version the decision saw), `current` (the version now),
    `changed_by` (the actor's label; `actor` the actor itself), `changed_at`, and `change`
    (what they did, in words)."""

    code = "conflict"
    rule = "decide_on_the_current_version"

    def __init__(
        self,
        subject_kind: str,
        subject_id: str,
        based_on: int,
        current: int,
        *,
        changed_by: str = "",
        changed_at: str = "",
        change: str = "",
        actor: dict[str, str] | None = None,
    ) -> None:
        who = f" by {changed_by}" if changed_by else ""
        when = f" at {changed_at}" if changed_at else ""
        what = f" ({change})" if change else ""
        super().__init__(
            f"{subject_kind} {subject_id} changed since you read it: you based your decision on "
            f"version {based_on}, it is now version {current}, changed{who}{when}{what}; "
            "look at it again and decide on what is there now"
        )
        self.subject_kind = subject_kind
        self.subject_id = subject_id
        self.based_on = based_on
        self.current = current
        self.changed_by = changed_by
        self.changed_at = changed_at
        self.change = change
        #: The actor who changed it, as events store one (kind, id, name), where known.
        self.actor = actor


class OlderEvidence(CommandRejected):
    """Satisfied judged on evidence made on an older version of the artifact than the one
    judged, without the person saying why that evidence still holds."""

    code = "older_evidence"
    rule = "satisfied_on_evidence_of_the_version_judged"

    def __init__(self, evidence_ids: list[str], message: str) -> None:
        super().__init__(message)
        self.evidence_ids = evidence_ids


class UnknownWait(CommandRejected):
    code = "unknown_wait"
    category = "not_found"

    def __init__(self, task_id: str, wait_id: str) -> None:
        super().__init__(f"task {task_id} has no wait {wait_id!r}")
        self.task_id = task_id
        self.wait_id = wait_id


class WaitOver(CommandRejected):
    """The wait is no longer open (settled, cancelled, or retired by a stop or by its
    condition coming true): nothing more is done to it. `state`: its state now."""

    code = "wait_over"
    rule = "only_an_open_wait_changes"

    def __init__(self, task_id: str, wait_id: str, state: str, why: str = "") -> None:
        super().__init__(
            f"wait {wait_id} of task {task_id} is {state}" + (f": {why}" if why else "")
        )
        self.task_id = task_id
        self.wait_id = wait_id
        self.state = state


class AlreadyApproved(CommandRejected):
    """A person approved a request they had already approved: a quorum counts distinct
    people, so one person's second approval would count for nobody."""

    code = "already_approved"
    rule = "one_person_counts_once"

    def __init__(self, approval_id: str, person: str, words: str) -> None:
        super().__init__(
            f"you ({person}) already approved approval {approval_id}: one person counts once; "
            f"{words}, so another person must approve it"
        )
        self.approval_id = approval_id
        self.person = person


class LeaseHeld(CommandRejected):
    """Another session holds the task's lease and it is alive (or a person took the task
    over): an agent acquires it only once it is released or expired, and writes to the task
    only under it. Nothing was written. `holder` is the holder as events name an actor,
    `lease_token` the lease's token, `expires_at` when it lapses (None: a person's, held
    until released)."""

    code = "lease_held"
    rule = "one_holder_at_a_time"

    def __init__(
        self,
        task_id: str,
        message: str,
        *,
        holder: dict[str, str] | None = None,
        lease_token: int | None = None,
        expires_at: str | None = None,
    ) -> None:
        super().__init__(message)
        self.task_id = task_id
        self.holder = holder
        self.lease_token = lease_token
        self.expires_at = expires_at


class LeaseLost(CommandRejected):
    """The write carried a fencing token that is not the task's current lease's (a person
    took the task over, another session acquired it after this one lapsed, or it was
    released): the session no longer works on the task, and nothing it sent was written.
    Its own exit code, so a waking agent stops rather than retries. `lease_token` is the
    token sent, `current_token` the task's, `holder` who holds it now (None: nobody)."""

    code = "lease_lost"
    category = "lease_lost"
    rule = "write_under_the_current_lease"

    def __init__(
        self,
        task_id: str,
        message: str,
        *,
        lease_token: int | None = None,
        current_token: int | None = None,
        holder: dict[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.task_id = task_id
        self.lease_token = lease_token
        self.current_token = current_token
        self.holder = holder


# --- retention (issue 35 part R) ------------------------------------------------------


class ContentRetired(StoreError):
    """The item's content was retired by its retention class (a tombstone keeps its digest,
    size and media type): a typed absence, not a missing blob, and not an integrity problem."""

    code = "retired"
    category = "not_found"

    def __init__(self, item: str, digest: str, retired_at: str) -> None:
        super().__init__(f"{item} was retired on {retired_at[:10]} (kept: digest {digest})")
        self.item = item
        self.digest = digest
        self.retired_at = retired_at


# --- deletion and visibility (issue 35 part D) ----------------------------------------


class TaskDeleted(UnknownTask):
    """The task was deleted by a person (store.services.deletion): nothing of it is readable,
    and its receipt says when and by whom. An `UnknownTask`, so every caller that handles an
    absent task handles this one; `code` tells them apart."""

    code = "task_deleted"

    def __init__(self, task_id: str, deleted_at: str, deleted_by: str) -> None:
        super().__init__(task_id)
        self.args = (f"task {task_id!r} was deleted on {deleted_at} by {deleted_by}",)
        self.deleted_at = deleted_at
        self.deleted_by = deleted_by


class DeletionRefused(CommandRejected):
    """`delete-task` refused (store.rules.deletion_refusal names the rule); nothing was
    removed."""

    code = "deletion_refused"


class ReceiptFormatUnknown(StoreError):
    """A deletion receipt written by a newer program, in a format this one does not read."""

    code = "receipt_format_unknown"
    category = "integrity"


# --- late changes (issue 35 part L) ---------------------------------------------------


# --- context manifests and configuration (issue 35 part M) ----------------------------


class ToolDefinitionChanged(CommandRejected):
    """A dispatch refused: the intent was planned under an older definition of its tool
    than the task's current configuration (store.rules.pinned_tool_refusal)."""

    code = "tool_definition_changed"

    def __init__(self, effect_id: str, tool: str, message: str) -> None:
        super().__init__(f"effect {effect_id}: {message}", rule="tool_definition_changed")
        self.effect_id = effect_id
        self.tool = tool


class UnknownManifest(CommandRejected):
    code = "unknown_manifest"
    category = "not_found"

    def __init__(self, task_id: str, manifest_id: str) -> None:
        super().__init__(f"task {task_id} has no context manifest {manifest_id!r}")
        self.task_id = task_id
        self.manifest_id = manifest_id
