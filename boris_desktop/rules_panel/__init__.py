"""The Rules panel (issue 42): the standing rules on record, granted and revoked by a person.

`RulesDialog` lists what `store.api.list_standing_rules` reads (what each rule covers, its
verdict, until when, how many calls it decided, whether the record proves it a person's) and
sends the person's grant and revocation through the store's commands, as the reviewer. A
revocation names the rule's version the person saw: one someone else changed since is the
store's `Conflict`, shown in the dialog, and the list is read again.
"""

from boris_desktop.rules_panel.dialog import RulesDialog

__all__ = ["RulesDialog"]
