"""Projections: current state folded from events, one small function per event type.

`apply` runs inside the transaction that appends the event, and again, unchanged, when a
rebuild replays the log; so a rebuild gives the same rows by construction. `core` holds the
registry and the task's own tables, `ledger` the effect ledger's, approvals' and
checkpoints'; importing this package registers both. Modules inside it import `.core`,
never this package.
"""

from . import leases as _leases  # noqa: F401  (registers the leases' apply functions)
from . import ledger as _ledger  # noqa: F401  (registers the ledger's apply functions)
from . import respond as _respond  # noqa: F401  (an answer in the tool's place, issue 42)
from . import retention as _retention  # noqa: F401  (registers retention's apply functions)
from . import routing as _routing  # noqa: F401  (an escalation's new expiry, issue 42)
from . import standing_rules as _standing_rules  # noqa: F401  (a rule's decision, issue 42)
from . import waits as _waits  # noqa: F401  (registers the waits' apply functions)
from .core import Apply, applies, apply, clear, dump, only_advances_head

__all__ = ["Apply", "applies", "apply", "clear", "dump", "only_advances_head"]
