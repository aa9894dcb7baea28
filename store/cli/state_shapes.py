"""The `--json` result of the commands that print the task's state and its parts, as JSON
Schema: `boris schema` prints them under `x-outputs` beside store.cli.shapes' own. Each is the
read model the command prints (its `to_json()`), so the documented shape is the printed one,
and each model forbids fields it does not declare.
"""

from __future__ import annotations

from typing import Any

from pydantic import TypeAdapter

from ..reads.checkpoints import Checkpoints
from ..reads.inbox import TaskRow
from ..reads.late import LateChanges
from ..reads.queries import EventRow
from ..reads.retention import Retention
from ..reads.state_models import Approval, Effect, ShownTask
from ..reads.waits import TaskWaits

#: command -> the type of its `{"ok": true, "result": …}`'s `result`.
OUTPUTS: dict[str, Any] = {
    "show": ShownTask,
    "tasks": list[TaskRow],
    "events": list[EventRow],
    "effects": list[Effect],
    "approvals": list[Approval],
    "checkpoints": Checkpoints,
    "waits": TaskWaits,
    "retention": Retention,
    "late": LateChanges,
}


def output_schemas() -> dict[str, dict[str, Any]]:
    """Each command's result as JSON Schema (pydantic's, in serialization mode: the JSON)."""
    return {
        name: TypeAdapter(kind).json_schema(mode="serialization") for name, kind in OUTPUTS.items()
    }
