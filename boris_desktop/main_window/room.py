"""The window's room: where it opens on the screen, the split between the inbox and the
task, and each part's own split, as the reviewer last left them."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QObject

from boris_desktop import settings
from boris_desktop.main_window.startup import soon

if TYPE_CHECKING:
    from boris_desktop.main_window.face import Window

#: Inbox rows in sight at the default split (when the window is tall enough).
INBOX_ROWS = 8.5


class Room(QObject):
    """Sizes the split and remembers the layout the reviewer dragged."""

    def __init__(self, window: Window) -> None:
        super().__init__(window.owner())
        self.w = window
        self.layout_restored = False
        self.split_moved = False
        self.parts_moved: set[str] = set()  # parts whose split the reviewer dragged
        self.split_timer = soon(self, self._default_unless_moved)
        self.place_split()

    def place_split(self) -> None:
        """The split as the reviewer left it, or the default one (again at each resize until
        the reviewer moves it): from the first paint on, so the inbox's first rows, shown
        before the rest of the window is built, stay where they are once it is."""
        split = settings.layout("main/split")
        self.layout_restored = split is not None and self.w.split.restoreState(split)
        self.w.split.splitterMoved.connect(self._moved)
        if not self.layout_restored:
            self.default_split()

    def build(self) -> None:
        """The inbox's columns as the reviewer left them (the split is in place already)."""
        self.w.restore_columns()

    def _moved(self, *_: Any) -> None:
        self.split_moved = True

    def inbox_height(self, rows: float) -> int:
        """The inbox part's height that shows `rows` rows under the filters and header."""
        w = self.w
        frame = 2 * w.table.frameWidth()
        lay = w.left.layout()
        assert lay is not None  # set with the frame
        margins = lay.contentsMargins().top() + lay.contentsMargins().bottom() + lay.spacing()
        filters = max(w.search.sizeHint().height(), w.status_filter.sizeHint().height())
        header = w.table.horizontalHeader().sizeHint().height()
        row = w.table.verticalHeader().defaultSectionSize()
        tabs = w.views.tabBar().sizeHint().height()  # the Tasks / Decisions tabs
        return int(tabs + filters + margins + header + frame + rows * row + 1)

    def default_split(self) -> None:
        """The inbox shows INBOX_ROWS rows, but takes at most 42% of the window's height."""
        split = self.w.split
        total = split.height() if split.isVisible() else self.w.owner().height() - 60
        inbox = min(self.inbox_height(INBOX_ROWS), int(total * 0.42))
        split.setSizes([inbox, max(total - inbox, 1)])

    def _default_unless_moved(self) -> None:
        """The default split a turn after a resize, unless the reviewer dragged the handle
        meanwhile (a drag in the first moments after the window opened snapped back)."""
        if not self.layout_restored and not self.split_moved:
            self.default_split()

    def resized(self) -> None:
        """The window was shown or resized: the default split again, unless the reviewer's."""
        if not self.layout_restored and not self.split_moved:
            if not self.w._built:
                # Now, not a turn later: the first paint and the inbox's first rows may
                # come before that turn, in a split sized for the hidden window.
                self.default_split()
            # Once the layout has given the splitter its new height.
            self.split_timer.start()

    def fit_to_screen(self, room: Any = None) -> None:
        """Open sized to the screen's available room (`room`, a QRect, in tests): where the
        reviewer left the window if that still fits, else 1280×780 or less, centred."""
        from PySide6.QtCore import QRect

        from boris_desktop import screen_fit

        owner = self.w.owner()
        room = room if room is not None else screen_fit.available(owner)
        saved = settings.window_rect()
        screen_fit.place(owner, room, QRect(*saved) if saved is not None else None)
        if settings.window_maximized():
            from PySide6.QtCore import Qt

            owner.setWindowState(owner.windowState() | Qt.WindowState.WindowMaximized)

    def save(self) -> None:
        owner = self.w.owner()
        g = owner.normalGeometry() if owner.isMaximized() else owner.geometry()
        if g.isValid():
            settings.set_window_place((g.x(), g.y(), g.width(), g.height()), owner.isMaximized())
        states = {
            "main/split": self.w.split.saveState(),
            "main/inbox_columns": self.w.table.horizontalHeader().saveState(),
        }
        tv = self.w._task_view
        if tv is not None:
            for title in self.parts_moved:
                split = getattr(tv.panels[title], "split", None)
                if split is not None:
                    states[f"part/{title}/split"] = split.saveState()
        settings.set_layouts(states)

    def restore_part_splits(self) -> None:
        """Each part's split (list, detail; the lineage graph) as the reviewer last dragged
        it; a part never dragged keeps sizing itself to its content."""
        from boris_desktop.task.panels.checkpoints import CheckpointsPanel

        tv = self.w._task_view
        assert tv is not None
        for title, panel in tv.panels.items():
            split = getattr(panel, "split", None)
            if split is None:
                continue
            state = settings.layout(f"part/{title}/split")
            if state is not None and split.restoreState(state):
                self.parts_moved.add(title)
                if isinstance(panel, CheckpointsPanel):
                    panel.keep_graph_height()
            split.splitterMoved.connect(lambda *_, t=title: self.parts_moved.add(t))
