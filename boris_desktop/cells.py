"""One call into Python per cell painted, not one per role.

Qt's views paint a cell by asking its model for a dozen roles (text, icon, font, colours,
alignment, check state...). With a Python model each ask is a call into Python, and each
such call first takes the interpreter lock: while a worker reads (10,000 tasks for the inbox,
2,000 decisions for the queue) the GUI thread waits up to the switch interval for it every
time, so a table's paint took 30-150 ms (benchmarks/bench_queue.py). `multiData`, which Qt's
delegate calls once per cell with every role it wants, answers them all in that one call.
"""

from __future__ import annotations

from collections.abc import Iterable

from PySide6.QtCore import QModelIndex, QModelRoleData, QModelRoleDataSpan, QPersistentModelIndex


class CellsInOneCall:
    """Mixed into a QAbstractItemModel (before it) whose `data` answers every role."""

    def multiData(
        self,
        index: QModelIndex | QPersistentModelIndex,
        roleDataSpan: QModelRoleDataSpan | QModelRoleData,
    ) -> None:
        span: Iterable[QModelRoleData] = (
            [roleDataSpan] if isinstance(roleDataSpan, QModelRoleData) else roleDataSpan  # type: ignore[assignment]
        )  # a span iterates over its QModelRoleData (not in PySide's type stubs)
        for role_data in span:
            role_data.setData(self.data(index, role_data.role()))  # type: ignore[attr-defined]
