"""Signed records: Ed25519 keys name actors, every write transaction is signed, and a
task's history verifies offline against out-of-band public keys (see README, "Keys, trust
and offline verification")."""

from __future__ import annotations

from .check import KeysFileError, read_keys_file
from .keyring import Binding, Keyring, KeyringRefused
from .keys import (
    KeyFileError,
    SigningKey,
    agent_key_path,
    person_key,
    person_key_path,
    signer_for,
)
from .seal import SignatureRefused

__all__ = [
    "Binding",
    "KeyFileError",
    "Keyring",
    "KeyringRefused",
    "KeysFileError",
    "SignatureRefused",
    "SigningKey",
    "agent_key_path",
    "person_key",
    "person_key_path",
    "read_keys_file",
    "signer_for",
]
