"""The `result` of commands whose `--json` output programs read, as JSON Schema: `boris
schema` prints them under `x-outputs` (command -> schema of `{"ok": true, "result": …}`'s
`result`). Each model forbids other fields, and tests check real output against it, so
the documented shape is the one printed. A read's model is declared beside the read that
builds it (the command prints its `to_json()`) and only named here; the shapes of commands
that are no read of the store's stay here.
"""

from __future__ import annotations

from typing import Any

from pydantic import Field, TypeAdapter

from ..reads.decisions import Decision, Decisions
from ..reads.inbox import Lease, TaskRow
from ..reads.manifests import ConfigurationRead, Manifest
from ..reads.read_model import ReadModel
from ..reads.routing import Routing
from ..reads.standing_rules import StandingRule, StandingRules
from ..services.brief.models import ResumeBrief
from ..services.narratives import Narrative
from ..services.verify_codes import ProblemCode

__all__ = [
    "OUTPUTS",
    "ConfigurationRead",
    "Decision",
    "Decisions",
    "Lease",
    "Manifest",
    "Narrative",
    "TaskRow",
    "output_schemas",
]


class _Shape(ReadModel):
    """A command's answer: frozen, no field it does not declare, printed as `to_json()`."""


class Problem(_Shape):
    """One of verify's findings (a problem, or an info item)."""

    task_id: str = Field(description="the task (verify-package: the package, if unreadable)")
    kind: str = Field(description="what was found, precisely (event_hash, bad_signature, …)")
    code: ProblemCode = Field(description="which proof it is about, one of a few")
    message: str = Field(description="for a person; names the seq, key or blob too")
    seq: int | None = Field(description="the event concerned, where there is one")
    key_id: str | None = Field(description="the signing key concerned, where there is one")
    digest: str | None = Field(description="the blob concerned, where there is one")
    actor: str | None = Field(
        description="the actor (kind:id) of the event concerned, where it is about who wrote it"
    )
    role: str | None = Field(None, description="role_could_not_write: the database role")
    rule: str | None = Field(
        None, description="role_could_not_write and authority findings: the rule that refuses it"
    )


class VerifyReport(_Shape):
    """`boris verify --json` and `boris verify-package --json`: the result when clean; when
    not, the refusal's `error.details.report` (exit 3)."""

    ok: bool
    summary: str
    tasks: list[str]
    problems: list[Problem] = Field(description="errors: any one makes the record not clean")
    info: list[Problem] = Field(description="true and worth saying, not errors")
    heads: dict[str, dict[str, Any]] = Field(description="task -> {seq, hash} as verified")
    remembered: list[str]
    remember_error: str | None
    signed: bool


class KeyringEntry(_Shape):
    """One entry of a store's keyring (its own signed chain): a key added or revoked."""

    seq: int
    action: str = Field(
        description="added, revoked, imported (a key that signed an imported task: history "
        "only) or revoked_imported (a revocation an imported package carried: `at` is when "
        "its store revoked the key)"
    )
    key_id: str
    public_key: str = Field(description="base64 Ed25519 public key")
    actor_kind: str
    actor_id: str
    actor_name: str
    succeeds: str | None = Field(description="the key this one replaces for the actor")
    at: str
    prev_hash: str
    hash: str
    signer_key_id: str = Field(description="the person key that signed this entry")
    signature: str


class KeyringProblem(_Shape):
    seq: int = Field(description="the keyring entry concerned")
    message: str


class KeysList(_Shape):
    """`boris keys --json` and `boris keys list --json`."""

    signatures_required: bool
    entries: list[KeyringEntry]
    problems: list[KeyringProblem] = Field(description="entries whose chain does not hold")


class KeyLine(_Shape):
    key_id: str
    actor: str = Field(description="kind:id")
    public_key: str
    revoked_at: str | None
    imported_at: str | None
    line: str = Field(description="the keys-file line (verify --keys, verify-package --keys)")


class KeysExport(_Shape):
    """`boris keys export --json` (your key, or with --all every key of the keyring)."""

    keys: list[KeyLine]


class KeyNew(_Shape):
    """`boris keys new PATH --json`."""

    key_id: str
    public_key: str
    path: str


class KeyTrusted(_Shape):
    """`boris keys trust --json`."""

    key_id: str
    actor: str = Field(description="kind:id")
    required: bool = Field(description="whether unsigned writes are refused from now on")


#: command -> the type of its `--json` result: a read's model (or a list of them), or a shape.
OUTPUTS: dict[str, Any] = {
    "decisions": Decisions,
    "tasks": list[TaskRow],
    "narrative": list[Narrative],
    "manifests": list[Manifest],
    "configuration": ConfigurationRead,
    "lease": Lease,
    "take-over": Lease,
    "resume": ResumeBrief,
    "verify": VerifyReport,
    "verify-package": VerifyReport,
    "keys": KeysList,
    "keys list": KeysList,
    "keys export": KeysExport,
    "keys new": KeyNew,
    "keys add": KeyringEntry,
    "keys revoke": KeyringEntry,
    "keys trust": KeyTrusted,
    "rules": StandingRules,
    "rules list": StandingRules,
    "rules add": StandingRule,
    "rules revoke": StandingRule,
    "route": Routing,
    "route list": Routing,
}


def output_schemas() -> dict[str, dict[str, Any]]:
    return {name: TypeAdapter(kind).json_schema() for name, kind in OUTPUTS.items()}
