"""The command layer: every write, from every caller, goes through `execute`.

`core` holds the machinery (`Command`, `handles`, `prepares`, `execute`, the authority check)
and the task's own contract: objective, criteria, artifacts, evidence, phases, budgets,
status and notes. `effects` (the effect ledger), `approvals`, `checkpoints` (with
`checkpoint_state`, what a checkpoint records) and `narrative` each register their handlers
when imported, which this package does once, below. Modules inside it import `.core`,
never this package.
"""

from . import approvals, checkpoints, effects, narrative
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
from .narrative import ClaimIn, RecordNarrative

# Every command has this documented home (`from store.commands import DispatchEffect`),
# wherever its handler lives.
__all__ = [
    "AddCriterion",
    "AddPhase",
    "AmendObjective",
    "AttachEvidence",
    "CancelEffect",
    "ChangeCriterion",
    "ChargeBudget",
    "ClaimIn",
    "CloseTask",
    "Command",
    "CompletePhase",
    "Content",
    "CreateTask",
    "DecideApproval",
    "DispatchEffect",
    "Ident",
    "JudgeCriterion",
    "ObserveEffect",
    "PlanEffect",
    "Reading",
    "ReconcileEffect",
    "RecordArtifact",
    "RecordNarrative",
    "RecordNote",
    "RecordResponse",
    "ReleaseBudget",
    "RequestApproval",
    "ReserveBudget",
    "ReviseEffect",
    "SetApprovalPolicy",
    "SetBudget",
    "SetStatus",
    "StopRun",
    "TaskCommand",
    "WriteCheckpoint",
    "approvals",
    "authorize",
    "checkpoints",
    "command_classes",
    "effects",
    "execute",
    "handles",
    "narrative",
    "new_id",
    "prepare",
    "prepares",
]
