"""What verify finds: the findings a report lists, and the list one task's checks add to."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from ..verify_codes import ProblemCode, code_of


@dataclass(frozen=True)
class Finding:
    """One thing verify found. `kind` is a stable word for what was found, `code` which proof
    it is about (one of a few: store.services.verify_codes); `message` names the seq,
    digest, checkpoint or approval concerned, for a person."""

    task_id: str
    kind: str
    message: str
    #: The event, the signing key and the blob concerned, for a finding about one (the
    #: message names them too): a script reads them here, never from the message.
    seq: int | None = None
    key_id: str | None = None
    digest: str | None = None
    #: The actor of the event concerned (`kind:id`), where the finding is about who wrote it.
    actor: str | None = None
    #: Which proof it is about, where `kind` alone does not say (a package refused for an
    #: event altered is a `chain` problem); else `code_of(kind)`.
    given_code: ProblemCode | None = field(default=None, repr=False)

    @property
    def code(self) -> ProblemCode:
        """Which proof failed, from a small stable set (store.services.verify_codes)."""
        return self.given_code or code_of(self.kind)

    def line(self) -> str:
        return f"{self.task_id}: {self.kind}: {self.message}"

    def to_json(self) -> dict[str, Any]:
        out = asdict(self)
        del out["given_code"]
        out["code"] = self.code.value
        return out


@dataclass(frozen=True)
class RoleFinding(Finding):
    """An event whose recorded database role (`events.db_role`, a team store's) could not
    have written it: `seq` is the event, `role` the role, `rule` the store.rules refusal."""

    role: str = ""
    rule: str = ""


@dataclass(frozen=True)
class AuthorityFinding(Finding):
    """An event its actor could not have written then (store.rules.event_authority): `seq`
    the event, `actor` who it names, `rule` the rule that refuses it."""

    rule: str = ""


@dataclass
class TaskFindings:
    """What the checks of one task found, in the order they found it: every check adds to
    the same two lists, so the report keeps the order verify always had."""

    task_id: str
    #: Errors: the record is not what it claims.
    problems: list[Finding] = field(default_factory=list)
    #: True and worth saying, not errors (a fork, an intended state never given).
    info: list[Finding] = field(default_factory=list)

    def problem(
        self, kind: str, message: str, seq: int | None = None, *, digest: str | None = None
    ) -> None:
        self.problems.append(Finding(self.task_id, kind, message, seq=seq, digest=digest))

    def note(self, kind: str, message: str, digest: str | None = None) -> None:
        self.info.append(Finding(self.task_id, kind, message, digest=digest))
