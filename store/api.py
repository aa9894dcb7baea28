"""The store's one public face for the window: what Boris Desktop may import from `store`.

The desktop imports this module and nothing deeper (an import-linter contract and
tests/test_architecture.py hold it to that), as qutebrowser's components import only its
`api` package: the window learns the store's answers — its read models, its rules' verdicts,
its commands and its typed errors — never its tables, transactions or internal modules.
A rule the window needs (is this request decidable, what does stopping do, what is pending)
is asked here, never copied into the window.

Every name is loaded on first use (PEP 562), as `store/__init__` does: the window's first
paint must not wait for SQLAlchemy and pydantic, and a dialog that is never opened never
imports its command.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

# name -> the module that defines it. Grouped by what the window does with it.
_WHERE: dict[str, str] = {
    # opening the record
    "Store": "store.store",
    "Actor": "store.model",
    "default_directory": "store.location",
    "resolve": "store.location",
    "is_store_file": "store.scope",
    "__version__": "store.version",
    # errors: the environment's and the command's refusals, by type
    "StoreError": "store.errors",
    "CommandRejected": "store.errors",
    "ScopeViolation": "store.errors",
    "PhaseBlocked": "store.errors",
    "ForkOpen": "store.errors",
    "TargetChanged": "store.errors",
    "AuthorityRefused": "store.errors",
    "Conflict": "store.errors",
    "OlderEvidence": "store.errors",
    # commands: a reviewer's decision, as the CLI and MCP send it
    "AmendObjective": "store.commands.core",
    "AddCriterion": "store.commands.core",
    "ChangeCriterion": "store.commands.core",
    "Content": "store.commands.core",
    "RecordArtifact": "store.commands.core",
    "JudgeCriterion": "store.commands.core",
    "AttachEvidence": "store.commands.core",
    "CompletePhase": "store.commands.core",
    "DecideApproval": "store.commands.approvals",
    "ObserveEffect": "store.commands.effects",
    "ReconcileEffect": "store.commands.effects",
    "WriteCheckpoint": "store.commands.checkpoints",
    "StopRun": "store.commands.checkpoints",
    "CloseTask": "store.commands.checkpoints",
    "SetStatus": "store.commands.core",
    "TakeOver": "store.commands.leases",
    "CancelWait": "store.commands.waits",
    "FileState": "store.events",
    # rules: the store's verdicts and its states as enums
    "ApprovalState": "store.rules",
    "ActorKind": "store.rules",
    "CriterionState": "store.rules",
    "EffectStage": "store.rules",
    "PhaseReadiness": "store.rules",
    "RunStatus": "store.rules",
    "BudgetStanding": "store.rules",
    "BUDGET_AT_LIMIT": "store.rules",
    "EXPIRING": "store.rules",
    "LeaseStanding": "store.rules",
    "lease_standing": "store.rules",
    "WaitState": "store.rules",
    "State": "store.rules",
    "StopPlan": "store.rules",
    "Verdict": "store.rules",
    "budget_left": "store.rules",
    "budget_standing": "store.rules",
    "conflict_undecided": "store.rules",
    "criterion_done": "store.rules",
    "criterion_stales_on_change": "store.rules",
    "decider_refusal": "store.rules",
    "may_decide": "store.rules",
    "decision_refusal": "store.rules",
    "effect_reconcilable": "store.rules",
    "effect_to_reconcile": "store.rules",
    "effect_unresolved": "store.rules",
    "is_destination": "store.rules",
    "pending_work": "store.rules",
    "record_open": "store.rules",
    "recovery": "store.rules",
    "same_state": "store.rules",
    "stop_plan": "store.rules",
    "final_fork_refusal": "store.rules",
    "final_left_open": "store.rules",
    "why_undecidable": "store.rules",
    "can_stop": "store.status",
    "can_resume": "store.rules",
    "close_targets": "store.rules",
    # reads: what the views show
    "decisions": "store.reads.decisions",
    "DecisionKind": "store.reads.decisions",
    "history": "store.reads.history",
    "HISTORY_FIELDS": "store.reads.history",
    "peek_tasks": "store.reads.peek",
    "signers": "store.reads.signers",
    "decision_signers": "store.reads.signers",
    "SignatureState": "store.reads.signers",
    "resume_brief": "store.services.resume",
    # the resume brief's read model (store.services.brief.models): the window reads it
    "ApprovalBrief": "store.services.brief.models",
    "ArtifactBrief": "store.services.brief.models",
    "BriefAction": "store.services.brief.models",
    "CriterionBrief": "store.services.brief.models",
    "EffectBrief": "store.services.brief.models",
    "FileObservation": "store.services.brief.models",
    "LeaseBrief": "store.services.brief.models",
    "ResumeBrief": "store.services.brief.models",
    "WaitBrief": "store.services.brief.models",
    # decision views: what a person decides, built by the store (the window renders them)
    "ApprovalDecision": "store.reads.decision_views",
    "ApprovalVerdict": "store.reads.decision_views",
    "OfferedRule": "store.reads.offered_rules",
    # a reviewer's passkeys (issue 43): File › Reviewer…
    "Passkey": "store.reads.passkeys",
    "PasskeyRefused": "store.commands.passkeys",
    "ReviewerPasskeys": "store.services.reviewer",
    "ServeLine": "store.services.reviewer",
    "reviewer_passkeys": "store.services.reviewer",
    "revoke_reviewer_passkey": "store.services.reviewer",
    "serve_argv": "store.services.reviewer",
    "serve_line": "store.services.reviewer",
    "Change": "store.reads.changes",
    "Send": "store.reads.changes",
    "Write": "store.reads.changes",
    "Replace": "store.reads.changes",
    "Delete": "store.reads.changes",
    "Upload": "store.reads.changes",
    "Opaque": "store.reads.changes",
    "WriteDiff": "store.reads.changes",
    "write_diff": "store.reads.changes",
    "read_blob_range": "store.reads.changes",
    "UnknownApproval": "store.errors",
    "BlobProblem": "store.errors",
    "JudgeDecision": "store.reads.judging",
    "PhaseCompletion": "store.reads.phase_views",
    "PhaseOutcome": "store.reads.phase_views",
    "PhaseInputView": "store.reads.phase_views",
    "EvidenceTarget": "store.reads.evidence_views",
    "EVIDENCE_KINDS": "store.reads.evidence_views",
    "EvidenceOffered": "store.reads.judging",
    "EvidenceOrigin": "store.reads.judging",
    "ArtifactOffered": "store.reads.judging",
    "VersionChange": "store.reads.judging",
    "VerdictNeeds": "store.rules",
    "brief_markdown": "store.services.resume",
    "narratives": "store.services.narratives",
    "summary_markdown": "store.services.narratives",
    "observe_and_judge": "store.services.reconcile",
    "reconcile_by_hand": "store.services.reconcile",
    "fill_demo": "store.services.demo",
    "fill_demo_store": "store.services.demo",
    # a budget changed, a planned effect cancelled: by a person, what each does said first
    "SetBudget": "store.commands.core",
    "BUDGET_COUNTERS": "store.model",
    "ReleaseBudget": "store.commands.core",
    "CancelEffect": "store.commands.effects",
    "BudgetView": "store.reads.budget_views",
    "BudgetChange": "store.reads.budget_views",
    "CounterLine": "store.reads.budget_views",
    "budget_view": "store.reads.budget_views",
    "budget_change": "store.reads.budget_views",
    "most_pressing_counter": "store.reads.budget_views",
    "CancelEffectView": "store.reads.effect_views",
    "RevokedApproval": "store.reads.effect_views",
    "cancel_effect_view": "store.reads.effect_views",
    "effect_cancellable": "store.rules",
    "why_not_cancellable": "store.rules",
    # the reviewer's key
    "keyring": "store.signing",
    "person_key_line": "store.signing.export",
    # retention (issue 35 part R)
    "RetiredWeight": "store.rules",
    # deletion and visibility (issue 35 part D)
    "DeletionPlan": "store.services.deletion",
    "plan_deletion": "store.services.deletion",
    "delete_task": "store.services.deletion",
    "TaskDeleted": "store.errors",
    # late changes (issue 35 part L)
    "AcknowledgeLateChanges": "store.commands.late",
    "OpenFollowup": "store.commands.late",
    "late_view": "store.reads.late",
    # context manifests and configuration (issue 35 part M)
    "model_saw": "store.reads.manifests",
    # the inbox in pages (issue 36 part W)
    "PagedInbox": "store.reads.inbox_pages",
    "InboxPageKey": "store.reads.inbox_pages",
    "peek_inbox_page": "store.reads.inbox_pages",
    "inbox_fetcher": "store.reads.queries",
    # the decision queue in pages (issue 36 part B)
    "decision_page": "store.reads.queue_pages",
    "QueuePageKey": "store.reads.queue_pages",
    # read models (issue 41): the task's state, its checkpoints, waits, events
    "TaskState": "store.reads.state_models",
    "ShownTask": "store.reads.state_models",
    "TaskSignatures": "store.reads.state_models",
    "SignedWrite": "store.reads.state_models",
    "ObjectiveRevision": "store.reads.state_models",
    "Criterion": "store.reads.state_models",
    "Evidence": "store.reads.state_models",
    "Artifact": "store.reads.state_models",
    "ArtifactVersion": "store.reads.state_models",
    "Producer": "store.reads.state_models",
    "Phase": "store.reads.state_models",
    "PhaseInput": "store.reads.state_models",
    "PhaseResult": "store.reads.state_models",
    "PhaseHistoryEntry": "store.reads.state_models",
    "Budget": "store.reads.state_models",
    "Effect": "store.reads.state_models",
    "Intent": "store.reads.state_models",
    "TargetState": "store.reads.state_models",
    "Attempt": "store.reads.state_models",
    "AttemptInputs": "store.reads.state_models",
    "Observation": "store.reads.state_models",
    "Reconciliation": "store.reads.state_models",
    "Approval": "store.reads.state_models",
    "Problem": "store.reads.state_models",
    "ArtifactVersionOwner": "store.reads.state_models",
    "EvidenceOwner": "store.reads.state_models",
    "Checkpoint": "store.reads.checkpoints",
    "Checkpoints": "store.reads.checkpoints",
    "Wait": "store.reads.waits",
    "WaitReservation": "store.reads.waits",
    "WaitCondition": "store.reads.waits",
    "TaskWaits": "store.reads.waits",
    "LateChanges": "store.reads.late",
    "LateFact": "store.reads.late",
    "LateAnswer": "store.reads.late",
    "TaskOrigin": "store.reads.late",
    "Tombstone": "store.reads.retention",
    "RetiredItem": "store.reads.retention",
    "RetentionItem": "store.reads.retention",
    "Retention": "store.reads.retention",
    "EventRow": "store.reads.queries",
    "EventFacets": "store.reads.queries",
    # read models (issue 41): the queue, the inbox, history and signatures, as attributes
    "ActorRef": "store.reads.actors",
    "TaskRow": "store.reads.inbox",
    "TaskNeeds": "store.reads.inbox",
    "Lease": "store.reads.inbox",
    "Decision": "store.reads.decisions",
    "Decisions": "store.reads.decisions",
    "DecisionPage": "store.reads.queue_pages",
    "QueueCounts": "store.reads.queue_pages",
    "PastDecision": "store.reads.history",
    "DecisionHistory": "store.reads.history",
    "Signer": "store.reads.signers",
    "LastSignature": "store.reads.signers",
    "SignatureSummary": "store.reads.signers",
    "DecisionSigners": "store.reads.signers",
    "InboxFirstPage": "store.reads.inbox_pages",
    "Narrative": "store.services.narratives",
    "NarrativeClaim": "store.services.narratives",
    "Discrepancy": "store.services.narratives",
    "Manifest": "store.reads.manifests",
    "ContextItem": "store.reads.manifests",
    "LedTo": "store.reads.manifests",
    "ModelUsed": "store.reads.manifests",
    "ToolUsed": "store.reads.manifests",
    "ConfigurationUsed": "store.reads.manifests",
    "ConfigurationTransition": "store.reads.manifests",
    "ToolDrift": "store.reads.manifests",
    "ModelSaw": "store.reads.manifests",
    "ConfigurationRead": "store.reads.manifests",
    # standing rules (issue 42): a person's "allow calls like this", listed and revoked
    "StandingRule": "store.reads.standing_rules",
    "StandingRules": "store.reads.standing_rules",
    "RuleStanding": "store.rules.standing_rules",
    "RuleScope": "store.rules.standing_rules",
    "RuleVerdict": "store.rules.standing_rules",
    "GrantStandingRule": "store.commands.standing_rules",
    "RevokeStandingRule": "store.commands.standing_rules",
    "UnknownRule": "store.commands.standing_rules",
    "list_standing_rules": "store.services.standing_rules",
    "grant_standing_rule": "store.services.standing_rules",
    "revoke_standing_rule": "store.services.standing_rules",
    "rule_from_answer": "store.services.standing_rules",
    "rule_draft": "store.services.standing_rules",
    "RuleDraft": "store.services.standing_rules",
    # answer as the tool, and batches (issue 42)
    "RespondToApproval": "store.commands.respond",
    "AnsweredResult": "store.services.respond",
    "respond": "store.services.respond",
    "answered_result": "store.services.respond",
    "BatchItem": "store.services.batch",
    "BatchRow": "store.services.batch",
    "BatchResults": "store.services.batch",
    "BatchItemResult": "store.services.batch",
    "BatchConflict": "store.services.batch",
    "StaleDecision": "store.services.batch",
    "batch_preflight": "store.services.batch",
    "decide_batch": "store.services.batch",
    # routing: the escalations that come due, recorded by whatever runs (issue 42)
    "escalate_due": "store.services.escalations",
}

# Names that differ from their defining module's (the window's word on the left).
_AS: dict[str, str] = {
    "HISTORY_FIELDS": "FIELDS",
    "InboxPageKey": "PageKey",
    "peek_inbox_page": "peek_first_page",
    "InboxFirstPage": "FirstPage",
}

if TYPE_CHECKING:
    from store.commands.approvals import DecideApproval
    from store.commands.checkpoints import CloseTask, StopRun, WriteCheckpoint
    from store.commands.core import (
        AddCriterion,
        AmendObjective,
        AttachEvidence,
        ChangeCriterion,
        CompletePhase,
        Content,
        JudgeCriterion,
        RecordArtifact,
        ReleaseBudget,
        SetBudget,
        SetStatus,
    )
    from store.commands.effects import CancelEffect, ObserveEffect, ReconcileEffect
    from store.commands.late import AcknowledgeLateChanges, OpenFollowup  # part L
    from store.commands.leases import TakeOver
    from store.commands.passkeys import PasskeyRefused  # issue 43
    from store.commands.respond import RespondToApproval

    # standing rules (issue 42)
    from store.commands.standing_rules import GrantStandingRule, RevokeStandingRule, UnknownRule
    from store.commands.waits import CancelWait
    from store.errors import (
        AuthorityRefused,
        BlobProblem,
        CommandRejected,
        Conflict,
        ForkOpen,
        OlderEvidence,
        PhaseBlocked,
        ScopeViolation,
        StoreError,
        TargetChanged,
        TaskDeleted,
        UnknownApproval,
    )
    from store.events import FileState
    from store.location import default_directory, resolve
    from store.model import BUDGET_COUNTERS, Actor
    from store.reads.actors import ActorRef  # issue 41
    from store.reads.budget_views import (
        BudgetChange,
        BudgetView,
        CounterLine,
        budget_change,
        budget_view,
        most_pressing_counter,
    )
    from store.reads.changes import (
        Change,
        Delete,
        Opaque,
        Replace,
        Send,
        Upload,
        Write,
        WriteDiff,
        read_blob_range,
        write_diff,
    )
    from store.reads.checkpoints import (  # issue 41
        Checkpoint,
        Checkpoints,
    )
    from store.reads.decision_views import ApprovalDecision, ApprovalVerdict
    from store.reads.decisions import Decision, DecisionKind, Decisions, decisions
    from store.reads.effect_views import CancelEffectView, RevokedApproval, cancel_effect_view
    from store.reads.evidence_views import EVIDENCE_KINDS, EvidenceTarget
    from store.reads.history import FIELDS as HISTORY_FIELDS
    from store.reads.history import DecisionHistory, PastDecision, history
    from store.reads.inbox import Lease, TaskNeeds, TaskRow  # issue 41
    from store.reads.inbox_pages import FirstPage as InboxFirstPage  # issue 41
    from store.reads.inbox_pages import PagedInbox  # part W
    from store.reads.inbox_pages import PageKey as InboxPageKey  # part W
    from store.reads.inbox_pages import peek_first_page as peek_inbox_page  # part W
    from store.reads.judging import (
        ArtifactOffered,
        EvidenceOffered,
        EvidenceOrigin,
        JudgeDecision,
        VersionChange,
    )
    from store.reads.late import (  # issue 41
        LateAnswer,
        LateChanges,
        LateFact,
        TaskOrigin,
        late_view,  # part L
    )
    from store.reads.manifests import (
        ConfigurationRead,
        ConfigurationTransition,
        ConfigurationUsed,
        ContextItem,
        LedTo,
        Manifest,
        ModelSaw,
        ModelUsed,
        ToolDrift,
        ToolUsed,
        model_saw,
    )
    from store.reads.offered_rules import OfferedRule
    from store.reads.passkeys import Passkey  # issue 43
    from store.reads.peek import peek_tasks
    from store.reads.phase_views import PhaseCompletion, PhaseInputView, PhaseOutcome
    from store.reads.queries import (  # issue 41
        EventFacets,
        EventRow,
        inbox_fetcher,  # part W
    )
    from store.reads.queue_pages import (  # part B
        DecisionPage,
        QueueCounts,
        QueuePageKey,
        decision_page,
    )
    from store.reads.retention import (  # issue 41
        Retention,
        RetentionItem,
        RetiredItem,
        Tombstone,
    )
    from store.reads.signers import (
        DecisionSigners,
        LastSignature,
        SignatureState,
        SignatureSummary,
        Signer,
        decision_signers,
        signers,
    )
    from store.reads.standing_rules import StandingRule, StandingRules
    from store.reads.state_models import (  # issue 41
        Approval,
        Artifact,
        ArtifactVersion,
        ArtifactVersionOwner,
        Attempt,
        AttemptInputs,
        Budget,
        Criterion,
        Effect,
        Evidence,
        EvidenceOwner,
        Intent,
        ObjectiveRevision,
        Observation,
        Phase,
        PhaseHistoryEntry,
        PhaseInput,
        PhaseResult,
        Problem,
        Producer,
        Reconciliation,
        ShownTask,
        SignedWrite,
        TargetState,
        TaskSignatures,
        TaskState,
    )
    from store.reads.waits import (  # issue 41
        TaskWaits,
        Wait,
        WaitCondition,
        WaitReservation,
    )
    from store.rules import (
        BUDGET_AT_LIMIT,
        EXPIRING,
        ActorKind,
        ApprovalState,
        BudgetStanding,
        CriterionState,
        EffectStage,
        LeaseStanding,
        PhaseReadiness,
        RetiredWeight,
        RunStatus,
        State,
        StopPlan,
        Verdict,
        VerdictNeeds,
        WaitState,
        budget_left,
        budget_standing,
        can_resume,
        close_targets,
        conflict_undecided,
        criterion_done,
        criterion_stales_on_change,
        decider_refusal,
        decision_refusal,
        effect_cancellable,
        effect_reconcilable,
        effect_to_reconcile,
        effect_unresolved,
        final_fork_refusal,
        final_left_open,
        is_destination,
        lease_standing,
        may_decide,
        pending_work,
        record_open,
        recovery,
        same_state,
        stop_plan,
        why_not_cancellable,
        why_undecidable,
    )
    from store.rules.standing_rules import RuleScope, RuleStanding, RuleVerdict
    from store.scope import is_store_file
    from store.services.batch import (
        BatchConflict,
        BatchItem,
        BatchItemResult,
        BatchResults,
        BatchRow,
        StaleDecision,
        batch_preflight,
        decide_batch,
    )
    from store.services.brief.models import (
        ApprovalBrief,
        ArtifactBrief,
        BriefAction,
        CriterionBrief,
        EffectBrief,
        FileObservation,
        LeaseBrief,
        ResumeBrief,
        WaitBrief,
    )
    from store.services.deletion import DeletionPlan, delete_task, plan_deletion
    from store.services.demo import fill_demo, fill_demo_store
    from store.services.escalations import escalate_due
    from store.services.narratives import (
        Discrepancy,
        Narrative,
        NarrativeClaim,
        narratives,
        summary_markdown,
    )
    from store.services.reconcile import observe_and_judge, reconcile_by_hand
    from store.services.respond import AnsweredResult, answered_result, respond
    from store.services.resume import brief_markdown, resume_brief
    from store.services.reviewer import (  # issue 43
        ReviewerPasskeys,
        ServeLine,
        reviewer_passkeys,
        revoke_reviewer_passkey,
        serve_argv,
        serve_line,
    )
    from store.services.standing_rules import (
        RuleDraft,
        grant_standing_rule,
        list_standing_rules,
        revoke_standing_rule,
        rule_draft,
        rule_from_answer,
    )
    from store.signing import keyring
    from store.signing.export import person_key_line
    from store.status import can_stop
    from store.store import Store
    from store.version import __version__


if not TYPE_CHECKING:
    # Hidden from the type checker: a module-level __getattr__ would type every name it does
    # not know as Any, so a misspelled `api.X` in the window would pass mypy. The checker sees
    # the imports above; the interpreter loads each name here on first use.
    def __getattr__(name: str) -> Any:
        where = _WHERE.get(name)
        if where is None:
            raise AttributeError(f"module 'store.api' has no attribute {name!r}")
        module = importlib.import_module(where)
        value = getattr(module, _AS.get(name, name))
        globals()[name] = value  # looked up once
        return value


# Spelled out for the type checker and linters; tests/test_architecture.py checks it is _WHERE.
__all__ = [
    "BUDGET_AT_LIMIT",
    "BUDGET_COUNTERS",
    "EVIDENCE_KINDS",
    "EXPIRING",
    "HISTORY_FIELDS",
    "AcknowledgeLateChanges",  # part L
    "Actor",
    "ActorKind",
    "ActorRef",  # issue 41
    "AddCriterion",
    "AmendObjective",
    "AnsweredResult",  # issue 42
    "Approval",  # issue 41
    "ApprovalBrief",  # issue 41
    "ApprovalDecision",
    "ApprovalState",
    "ApprovalVerdict",
    "Artifact",  # issue 41
    "ArtifactBrief",  # issue 41
    "ArtifactOffered",
    "ArtifactVersion",  # issue 41
    "ArtifactVersionOwner",  # issue 41
    "AttachEvidence",
    "Attempt",  # issue 41
    "AttemptInputs",  # issue 41
    "AuthorityRefused",
    "BatchConflict",  # issue 42
    "BatchItem",  # issue 42
    "BatchItemResult",  # issue 42
    "BatchResults",  # issue 42
    "BatchRow",  # issue 42
    "BlobProblem",
    "BriefAction",  # issue 41
    "Budget",  # issue 41
    "BudgetChange",
    "BudgetStanding",
    "BudgetView",
    "CancelEffect",
    "CancelEffectView",
    "CancelWait",
    "Change",
    "ChangeCriterion",
    "Checkpoint",  # issue 41
    "Checkpoints",  # issue 41
    "CloseTask",
    "CommandRejected",
    "CompletePhase",
    "ConfigurationRead",  # issue 41
    "ConfigurationTransition",  # issue 41
    "ConfigurationUsed",  # issue 41
    "Conflict",
    "Content",
    "ContextItem",  # issue 41
    "CounterLine",
    "Criterion",  # issue 41
    "CriterionBrief",  # issue 41
    "CriterionState",
    "DecideApproval",
    "Decision",  # issue 41
    "DecisionHistory",  # issue 41
    "DecisionKind",
    "DecisionPage",  # issue 41
    "DecisionSigners",  # issue 41
    "Decisions",  # issue 41
    "Delete",
    "DeletionPlan",  # part D
    "Discrepancy",  # issue 41
    "Effect",  # issue 41
    "EffectBrief",  # issue 41
    "EffectStage",
    "EventFacets",  # issue 41
    "EventRow",  # issue 41
    "Evidence",  # issue 41
    "EvidenceOffered",
    "EvidenceOrigin",
    "EvidenceOwner",  # issue 41
    "EvidenceTarget",
    "FileObservation",  # issue 41
    "FileState",
    "ForkOpen",
    "GrantStandingRule",  # issue 42
    "InboxFirstPage",  # issue 41
    "InboxPageKey",  # part W
    "Intent",  # issue 41
    "JudgeCriterion",
    "JudgeDecision",
    "LastSignature",  # issue 41
    "LateAnswer",  # issue 41
    "LateChanges",  # issue 41
    "LateFact",  # issue 41
    "Lease",  # issue 41
    "LeaseBrief",  # issue 41
    "LeaseStanding",
    "LedTo",  # issue 41
    "Manifest",  # issue 41
    "ModelSaw",  # issue 41
    "ModelUsed",  # issue 41
    "Narrative",  # issue 41
    "NarrativeClaim",  # issue 41
    "ObjectiveRevision",  # issue 41
    "Observation",  # issue 41
    "ObserveEffect",
    "OfferedRule",  # issue 42
    "OlderEvidence",
    "Opaque",
    "OpenFollowup",  # part L
    "PagedInbox",  # part W
    "Passkey",  # issue 43
    "PasskeyRefused",  # issue 43
    "PastDecision",  # issue 41
    "Phase",  # issue 41
    "PhaseBlocked",
    "PhaseCompletion",
    "PhaseHistoryEntry",  # issue 41
    "PhaseInput",  # issue 41
    "PhaseInputView",
    "PhaseOutcome",
    "PhaseReadiness",
    "PhaseResult",  # issue 41
    "Problem",  # issue 41
    "Producer",  # issue 41
    "QueueCounts",  # issue 41
    "QueuePageKey",  # part B
    "ReconcileEffect",
    "Reconciliation",  # issue 41
    "RecordArtifact",
    "ReleaseBudget",
    "Replace",
    "RespondToApproval",  # issue 42
    "ResumeBrief",  # issue 41
    "Retention",  # issue 41
    "RetentionItem",  # issue 41
    "RetiredItem",  # issue 41
    "RetiredWeight",  # part R
    "ReviewerPasskeys",  # issue 43
    "RevokeStandingRule",  # issue 42
    "RevokedApproval",
    "RuleDraft",  # issue 42
    "RuleScope",  # issue 42
    "RuleStanding",  # issue 42
    "RuleVerdict",  # issue 42
    "RunStatus",
    "ScopeViolation",
    "Send",
    "ServeLine",  # issue 43
    "SetBudget",
    "SetStatus",
    "ShownTask",  # issue 41
    "SignatureState",
    "SignatureSummary",  # issue 41
    "SignedWrite",  # issue 41
    "Signer",  # issue 41
    "StaleDecision",  # issue 42
    "StandingRule",  # issue 42
    "StandingRules",  # issue 42
    "State",
    "StopPlan",
    "StopRun",
    "Store",
    "StoreError",
    "TakeOver",
    "TargetChanged",
    "TargetState",  # issue 41
    "TaskDeleted",  # part D
    "TaskNeeds",  # issue 41
    "TaskOrigin",  # issue 41
    "TaskRow",  # issue 41
    "TaskSignatures",  # issue 41
    "TaskState",  # issue 41
    "TaskWaits",  # issue 41
    "Tombstone",  # issue 41
    "ToolDrift",  # issue 41
    "ToolUsed",  # issue 41
    "UnknownApproval",
    "UnknownRule",  # issue 42
    "Upload",
    "Verdict",
    "VerdictNeeds",
    "VersionChange",
    "Wait",  # issue 41
    "WaitBrief",  # issue 41
    "WaitCondition",  # issue 41
    "WaitReservation",  # issue 41
    "WaitState",
    "Write",
    "WriteCheckpoint",
    "WriteDiff",
    "__version__",
    "answered_result",  # issue 42
    "batch_preflight",  # issue 42
    "brief_markdown",
    "budget_change",
    "budget_left",
    "budget_standing",
    "budget_view",
    "can_resume",
    "can_stop",
    "cancel_effect_view",
    "close_targets",
    "conflict_undecided",
    "criterion_done",
    "criterion_stales_on_change",
    "decide_batch",  # issue 42
    "decider_refusal",
    "decision_page",  # part B
    "decision_refusal",
    "decision_signers",
    "decisions",
    "default_directory",
    "delete_task",  # part D
    "effect_cancellable",
    "effect_reconcilable",
    "effect_to_reconcile",
    "effect_unresolved",
    "escalate_due",  # issue 42
    "fill_demo",
    "fill_demo_store",
    "final_fork_refusal",
    "final_left_open",
    "grant_standing_rule",  # issue 42
    "history",
    "inbox_fetcher",  # part W
    "is_destination",
    "is_store_file",
    "keyring",
    "late_view",  # part L
    "lease_standing",
    "list_standing_rules",  # issue 42
    "may_decide",
    "model_saw",  # part M
    "most_pressing_counter",
    "narratives",
    "observe_and_judge",
    "peek_inbox_page",  # part W
    "peek_tasks",
    "pending_work",
    "person_key_line",
    "plan_deletion",  # part D
    "read_blob_range",
    "reconcile_by_hand",
    "record_open",
    "recovery",
    "resolve",
    "respond",  # issue 42
    "resume_brief",
    "reviewer_passkeys",  # issue 43
    "revoke_reviewer_passkey",  # issue 43
    "revoke_standing_rule",  # issue 42
    "rule_draft",  # issue 42
    "rule_from_answer",  # issue 42
    "same_state",
    "serve_argv",  # issue 43
    "serve_line",  # issue 43
    "signers",
    "stop_plan",
    "summary_markdown",
    "why_not_cancellable",
    "why_undecidable",
    "write_diff",
    # retention (issue 35 part R)
    # deletion and visibility (issue 35 part D)
    # late changes (issue 35 part L): AcknowledgeLateChanges, OpenFollowup, late_view (sorted above)
    # context manifests and configuration (issue 35 part M)
    # the decision queue in pages (issue 36 part B): QueuePageKey, decision_page (sorted above)
]
