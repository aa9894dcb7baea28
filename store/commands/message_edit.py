"""A reviewer's edit of a message before approving it: its subject and body, as text.

A message is either a payload with `subject`/`body` fields or an RFC 822 message held as a
blob (a mail effect's content). Either way the edit yields a new object (a new digest): the
other headers (recipients among them) are kept as they were, so an edit of the words never
changes who receives it.
"""

from __future__ import annotations

from email import message_from_bytes
from email.policy import compat32
from typing import Any

from ..errors import CommandRejected

#: What of a message a reviewer may edit (the decision view offers these).
MESSAGE_FIELDS = ("subject", "body")


def edited_fields(payload: dict[str, Any], fields: dict[str, str]) -> dict[str, Any]:
    """A payload with `subject`/`body` fields, with the person's words in them. Only a
    field the payload has is edited: a new key would be a different message, not an edit."""
    missing = [k for k in fields if not isinstance(payload.get(k), str)]
    if missing:
        raise CommandRejected(f"this message has no {', '.join(missing)} field to edit")
    return {**payload, **fields}


def edited_message(raw: bytes, fields: dict[str, str]) -> str:
    """An RFC 822 message with the person's subject and body; every other header kept, in
    its order. A multipart message is not edited here (its parts are not plain text)."""
    msg = message_from_bytes(raw, policy=compat32)
    if msg.is_multipart():
        raise CommandRejected("a multipart message cannot be edited here; send it back instead")
    headers: list[tuple[str, str]] = []
    subject = fields.get("subject")
    for name, value in msg.items():
        if name.lower() == "subject" and subject is not None:
            value, subject = subject, None
        headers.append((name, str(value)))
    if subject is not None:
        headers.insert(0, ("Subject", subject))
    body = fields.get("body")
    if body is None:
        payload = msg.get_payload(decode=True)
        body = payload.decode("utf-8", "replace") if isinstance(payload, bytes) else ""
    for name, value in headers:
        if "\n" in value or "\r" in value:
            raise CommandRejected(f"the {name} header cannot span lines")
    return "".join(f"{name}: {value}\n" for name, value in headers) + "\n" + body
