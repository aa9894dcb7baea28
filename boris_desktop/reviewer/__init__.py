"""File › Reviewer Passkeys… (issue 43): the reviewer's actor, their passkeys (revoked with a
confirmation), and a one-time link that registers a passkey on their phone."""

from boris_desktop.reviewer.dialog import PasskeysDialog

__all__ = ["PasskeysDialog"]
