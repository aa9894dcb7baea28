"""The command layer: every write, from every caller, goes through `execute`.

`core` holds the machinery (`Command`, `handles`, `prepares`, `execute`, the authority check)
and the task's own contract: objective, criteria, artifacts, evidence, phases, budgets,
status and notes. `effects` (the effect ledger), `approvals`, `checkpoints` (with
`checkpoint_state`, what a checkpoint records), `narrative`, `leases`, `waits`, `retention`,
`late` (facts after completion) and `manifests` (what the model saw) each register their
handlers when imported, which this package does once, below. Modules inside it import `.core`,
never this package.
"""

from . import approvals, checkpoints, effects, leases, narrative, waits
from .approvals import DecideApproval, RequestApproval, SetApprovalPolicy
from .checkpoints import CloseTask, StopRun, WriteCheckpoint
from .core import (
    AddCriterion,
    AddPhase,
    AmendObjective,
    AttachEvidence,
    ChangeCriterion,
    ChargeBudget,
    Command,
    CompletePhase,
    Content,
    CreateTask,
    Ident,
    JudgeCriterion,
    Reading,
    RecordArtifact,
    RecordNote,
    ReleaseBudget,
    ReserveBudget,
    SetBudget,
    SetStatus,
    TaskCommand,
    authorize,
    command_classes,
    execute,
    handles,
    judge_fence,
    new_id,
    prepare,
    prepares,
)
from .effects import (
    CancelEffect,
    DispatchEffect,
    ObserveEffect,
    PlanEffect,
    ReconcileEffect,
    RecordResponse,
    ReviseEffect,
)
from .late import AcknowledgeLateChanges, OpenFollowup
from .leases import AcquireLease, ReleaseLease, RenewLease, TakeOver
from .manifests import LinkManifest, MigrateEffectTool, RecordConfiguration, RecordManifest
from .mcp_tasks import EndMcpTask, StartMcpTask
from .narrative import ClaimIn, RecordNarrative
from .respond import RespondToApproval
from .retention import ExpireContent, SetRetention
from .routing import EscalateDue, SetGroup, SetRoute
from .rule_ticks import DecideByStandingRules
from .standing_rules import GrantStandingRule, ReservePolicy, RevokeStandingRule
from .waits import CancelWait, RecordWait, SettleWait

# Every command has this documented home (`from store.commands import DispatchEffect`),
# wherever its handler lives.
__all__ = [
    "AcknowledgeLateChanges",
    "AcquireLease",
    "AddCriterion",
    "AddPhase",
    "AmendObjective",
    "AttachEvidence",
    "CancelEffect",
    "CancelWait",
    "ChangeCriterion",
    "ChargeBudget",
    "ClaimIn",
    "CloseTask",
    "Command",
    "CompletePhase",
    "Content",
    "CreateTask",
    "DecideApproval",
    "DecideByStandingRules",
    "DispatchEffect",
    "EndMcpTask",
    "EscalateDue",
    "ExpireContent",
    "GrantStandingRule",
    "Ident",
    "JudgeCriterion",
    "LinkManifest",
    "MigrateEffectTool",
    "ObserveEffect",
    "OpenFollowup",
    "PlanEffect",
    "Reading",
    "ReconcileEffect",
    "RecordArtifact",
    "RecordConfiguration",
    "RecordManifest",
    "RecordNarrative",
    "RecordNote",
    "RecordResponse",
    "RecordWait",
    "ReleaseBudget",
    "ReleaseLease",
    "RenewLease",
    "RequestApproval",
    "ReserveBudget",
    "ReservePolicy",
    "RespondToApproval",
    "ReviseEffect",
    "RevokeStandingRule",
    "SetApprovalPolicy",
    "SetBudget",
    "SetGroup",
    "SetRetention",
    "SetRoute",
    "SetStatus",
    "SettleWait",
    "StartMcpTask",
    "StopRun",
    "TakeOver",
    "TaskCommand",
    "WriteCheckpoint",
    "approvals",
    "authorize",
    "checkpoints",
    "command_classes",
    "effects",
    "execute",
    "handles",
    "judge_fence",
    "leases",
    "narrative",
    "new_id",
    "prepare",
    "prepares",
    "waits",
]
