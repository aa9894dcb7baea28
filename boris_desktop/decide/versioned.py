"""A person's edit names the version of its subject it was based on, and never overwrites.

A dialog that edits or judges something (a criterion, an artifact, the objective) follows
the store while open. When the subject moves on under it (another reviewer's judgement, an
agent's new version), it says so at once, naming who and what, and keeps the person's text;
its command still carries the version the person saw, so a click can only be refused by the
store (`api.Conflict`, shown in the dialog), never overwrite. "Decide on what is there now"
is the person's explicit step onto the new version; who changed it, what they did, when and
why stay in sight after it, so a click on what is there now overrules them knowingly.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from boris_desktop.ui import text as t
from store import api

if TYPE_CHECKING:
    from boris_desktop.decide.following import Following as _Dialog
else:
    _Dialog = object


def change_words(change: api.VersionChange | None, otherwise: str) -> str:
    """Who changed the subject, what they did, when, and why in their words."""
    if change is None:
        return otherwise
    why = f" (“{change.why}”)" if change.why else ""
    return f"{t.actor(change.actor)} {change.what} at {t.when(change.at)}{why}"


class Versioned(_Dialog):
    """Mixed into a `Following` dialog (`class D(Versioned, Following)`) whose command
    carries `based_on`. A mixin, not a base: every concrete dialog still defines what it
    shows when the store changes (`task_changed`) and what it sends (`command`)."""

    #: The version of the subject the person is looking at (the command's `based_on`).
    based_on: int | None = None
    #: A newer version the store has, once seen (None: what the person looks at is current).
    latest: int | None = None

    #: What the dialog's button does, for the banner ("saving", "judging").
    acting = "deciding"
    #: Who changed the subject, how, when and why, as last told (kept after the step).
    moved_what: str = ""

    def keep_versions(self, rebase_text: str, rebase_tip: str) -> None:
        """Call once, after `follow`: adds the (hidden) step onto the newer version."""
        self.rebase = self.add_button(rebase_text, rebase_tip)
        self.rebase.hide()
        self.rebase.clicked.connect(self._rebase)

    def moved(self, latest: int, what: str, *, beside: bool = False) -> None:
        """The store has the subject at `latest`: if that is not what the person looks at,
        tell them (`what`: who changed it, how, when, why) and offer the step onto it.
        `beside`: what the decision rests on moved (an artifact's newer version) while the
        subject's own version did not."""
        if self.based_on is None or (latest == self.based_on and not beside):
            return
        self.moved_what = what
        words = (
            f"{what}. Your text is kept; {self.acting} now is refused until you look at what "
            "is there now."
        )
        if latest == self.latest and self.changed.isVisible():
            self.tell_change(words)  # the same change, told more fully (its reason, read)
            return
        self.latest = latest
        self.tell_change(words)
        self.rebase.show()
        self.refresh_buttons()

    def _rebase(self) -> None:
        if self.latest is None:
            return
        self.based_on, self.latest = self.latest, None
        self.rebase.hide()
        self.error.hide()
        # Who changed it and why stay in sight: what the person does now goes over that.
        self.tell_change(
            f"{self.moved_what}. It is shown as it is now, your text kept: {self.acting} now "
            "goes over that change."
        )
        self.rebased()
        self.refresh_buttons()

    def rebased(self) -> None:
        """Show the subject as it is now (the newest read); the person's input stays."""

    def _failed(self, error: Exception) -> None:
        super()._failed(error)
        if isinstance(error, api.Conflict):
            self.moved(
                error.current,
                f"{t.actor(error.actor) if error.actor else 'Somebody'} "
                f"{error.change or 'changed it'} at "
                f"{t.when(error.changed_at)}, while this was open",
            )
            self.follower.force()  # read what is there now, to show it on the step
