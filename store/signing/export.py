"""A person's public key as others need it: one line of a keys file (`boris keys export`,
the desktop's File › Export My Public Key…), their key created on first use."""

from __future__ import annotations

from .keyring import Binding
from .keys import SigningKey, person_key


def person_key_line(actor_id: str) -> tuple[SigningKey, str]:
    """The person's key (created, mode 0600, in the user's config directory when they have
    none yet) and its keys-file line, `KEY_ID person:ID PUBLIC_KEY`."""
    key = person_key(actor_id)
    return key, Binding(key.key_id, key.public_raw, "person", actor_id).line()
