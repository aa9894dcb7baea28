"""The main window, in parts (see `window`): `from boris_desktop.main_window import
MainWindow`.

PAGED_FROM is read from here at each count (`paging.paged_from`), so a test or a benchmark
that sets `boris_desktop.main_window.PAGED_FROM` is heeded.
"""

from boris_desktop.main_window.frame import (
    COLUMN_TITLES,
    EMPTY,
    NO_DECISION,
    NOTHING,
    TASK,
)
from boris_desktop.main_window.inbox_pane import (
    COLUMN_CAP,
    COLUMN_WIDEST,
    SEARCH_PAUSE_MS,
    WORKING_TICK_MS,
)
from boris_desktop.main_window.paging import PAGED_FROM, PAGED_VARIABLE, paged_mode
from boris_desktop.main_window.startup import WARM_UP
from boris_desktop.main_window.window import MainWindow
from boris_desktop.runtime import jobs

__all__ = [
    "COLUMN_CAP",
    "COLUMN_TITLES",
    "COLUMN_WIDEST",
    "EMPTY",
    "NOTHING",
    "NO_DECISION",
    "PAGED_FROM",
    "PAGED_VARIABLE",
    "SEARCH_PAUSE_MS",
    "TASK",
    "WARM_UP",
    "WORKING_TICK_MS",
    "MainWindow",
    "jobs",
    "paged_mode",
]
