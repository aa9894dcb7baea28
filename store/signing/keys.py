"""Ed25519 keys that name actors.

A key file is a PKCS#8 PEM private key, created on first use with mode 0600. Its key id is
the fingerprint of the raw public key (`sha256`, first 32 hex digits), so anyone holding
the public key computes the same id. Who signs is one rule, `signer_for`, used by the CLI,
`boris mcp`, `Store.open`/`Store.sign_as`, the adapters and the window: the key given
(`signer=`, `--key`), else BORIS_KEY, else for a person their own key in the user's config
directory (one file per actor id, never in the store). An agent's key is only ever given.

Signing and verifying go through libsodium (PyNaCl): Ed25519 is deterministic, so its
signatures are byte for byte those `cryptography` (OpenSSL) makes, in about 60% of the time
to sign and half the time to verify (benchmarks/bench_signing.py measures both in one run;
tests/test_signing_binding.py holds them equal). `cryptography` keeps the key files (PEM).
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

from ..errors import StoreError

if TYPE_CHECKING:
    from nacl.signing import SigningKey as _SodiumKey

    from ..model import Actor

_SAFE = re.compile(r"[^A-Za-z0-9._@-]")


class KeyFileError(StoreError):
    """A key file that cannot be read, created or parsed."""

    code = "key_file"


class KeyNotFound(KeyFileError):
    """No key file at the path given, where one was needed (it is not created there)."""

    code = "key_not_found"
    category = "not_found"


def key_id_of(public_raw: bytes) -> str:
    return hashlib.sha256(public_raw).hexdigest()[:32]


def encode_public(public_raw: bytes) -> str:
    return base64.b64encode(public_raw).decode("ascii")


def decode_public(text: str) -> bytes:
    raw = base64.b64decode(text.encode("ascii"), validate=True)
    if len(raw) != 32:
        raise ValueError("an Ed25519 public key is 32 bytes")
    return raw


def check_signature(public_raw: bytes, signature: bytes, message: bytes) -> bool:
    # Imported here: loading libsodium costs 10-20 ms that a process which never signs nor
    # verifies (most reads) should not pay at start-up.
    from nacl.exceptions import BadSignatureError
    from nacl.signing import VerifyKey

    # libsodium (with its defaults) also refuses the small-order public keys and R points
    # OpenSSL accepts; no key this program makes is one, so no signature it made differs.
    try:
        VerifyKey(public_raw).verify(message, signature)
    except (BadSignatureError, ValueError, TypeError):  # a forged one; a key or signature of
        return False  # the wrong length (nacl's exceptions derive from ValueError/TypeError)
    return True


def check_signature_openssl(public_raw: bytes, signature: bytes, message: bytes) -> bool:
    """`check_signature` through `cryptography` (OpenSSL): the binding it replaced, kept for
    the tests and the benchmark that compare the two."""
    try:
        Ed25519PublicKey.from_public_bytes(public_raw).verify(signature, message)
    except (InvalidSignature, ValueError):
        return False
    return True


@dataclass(frozen=True)
class SigningKey:
    """A private key in hand: signs messages, names itself by its key id."""

    private: Ed25519PrivateKey
    path: Path | None = None

    # Cached: a signed write names its key twice (the keyring check, the signature row).
    @cached_property
    def public_raw(self) -> bytes:
        return self.private.public_key().public_bytes(
            serialization.Encoding.Raw, serialization.PublicFormat.Raw
        )

    @property
    def public_text(self) -> str:
        return encode_public(self.public_raw)

    @cached_property
    def key_id(self) -> str:
        return key_id_of(self.public_raw)

    @cached_property
    def _sodium(self) -> _SodiumKey:
        from nacl.signing import SigningKey as SodiumKey  # on first use: see check_signature

        seed = self.private.private_bytes(
            serialization.Encoding.Raw,
            serialization.PrivateFormat.Raw,
            serialization.NoEncryption(),
        )
        return SodiumKey(seed)

    def sign(self, message: bytes) -> bytes:
        return self._sodium.sign(message).signature

    def sign_openssl(self, message: bytes) -> bytes:
        """`sign` through `cryptography`: the binding it replaced (tests, benchmark)."""
        return self.private.sign(message)

    @classmethod
    def generate(cls) -> SigningKey:
        return cls(Ed25519PrivateKey.generate())


#: A PEM Ed25519 private key is about 120 bytes; a key file is read no further than this.
MAX_KEY_FILE_BYTES = 64 * 1024


def load_key(path: Path) -> SigningKey:
    try:
        with path.open("rb") as f:
            data = f.read(MAX_KEY_FILE_BYTES + 1)  # never a whole /dev/zero or a large file
    except FileNotFoundError as exc:
        raise KeyNotFound(f"no key file at {path}") from exc
    except OSError as exc:
        raise KeyFileError(f"cannot read the key {path}: {exc.strerror}") from exc
    if len(data) > MAX_KEY_FILE_BYTES:
        raise KeyFileError(
            f"{path} is not an unencrypted PEM private key (it is more than "
            f"{MAX_KEY_FILE_BYTES} bytes)"
        )
    try:
        key = serialization.load_pem_private_key(data, password=None)
    except (ValueError, TypeError) as exc:
        raise KeyFileError(f"{path} is not an unencrypted PEM private key") from exc
    if not isinstance(key, Ed25519PrivateKey):
        raise KeyFileError(f"{path} is not an Ed25519 key")
    return SigningKey(key, path)


def load_or_create(path: Path) -> SigningKey:
    """The key at `path`, created (mode 0600, parents 0700) when there is none.

    Written whole to a temporary name, then linked to `path` (which fails if it exists):
    a process racing this one (two `boris init` at once) sees no key or a whole one, never
    an empty file, and the first link wins for both."""
    if path.exists():
        return load_key(path)
    key = SigningKey.generate()
    pem = key.private.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    part = path.with_name(f".{path.name}.{os.getpid()}.{os.urandom(4).hex()}.part")
    try:
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        _write_new(part, pem)
        try:
            os.link(part, path)
        except FileExistsError:
            raise
        except OSError:  # a file system without hard links: exclusive create in place
            _write_new(path, pem)
    except FileExistsError:  # another process made it first: use theirs
        return load_key(path)
    except OSError as exc:
        raise KeyFileError(f"cannot create the key {path}: {exc.strerror}") from exc
    finally:
        with contextlib.suppress(OSError):
            os.unlink(part)
    return SigningKey(key.private, path)


def _write_new(path: Path, data: bytes) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())


def config_dir() -> Path:
    import platformdirs

    return Path(platformdirs.user_config_dir("boris"))


def person_key_path(actor_id: str) -> Path:
    """Where a person's key lives: the user's config directory, one file per actor id."""
    return config_dir() / "keys" / f"person-{_SAFE.sub('_', actor_id)}.pem"


def person_key(actor_id: str) -> SigningKey:
    """The person's key, created on first use."""
    return load_or_create(person_key_path(actor_id))


def agent_key_path(actor_id: str) -> Path:
    """Where a refusal suggests making an agent's key (`boris keys new`): the user's config
    directory. Only a suggestion: an agent's key is given to it (`--key`, BORIS_KEY), never
    looked up there."""
    return config_dir() / "keys" / f"agent-{_SAFE.sub('_', actor_id)}.pem"


def signer_for(
    actor: Actor | None,
    given: SigningKey | str | os.PathLike[str] | None = None,
    *,
    store_signed: bool | Callable[[], bool] = False,
) -> SigningKey | None:
    """THE rule for who signs a write by `actor`, everywhere (CLI, `boris mcp`, `Store.open`,
    `Store.sign_as`, the adapters, the window):

    1. the key given (`signer=` in Python, `--key` on the command line), a key in hand or a
       key file's path;
    2. else the key file BORIS_KEY names;
    3. else, for a person only and only where the store is signed (`store_signed`, a bool or
       a callable asked only then), the person's own key in the user's config directory,
       created on first use;
    4. else none: an unsigned write, which a store that requires signatures refuses with the
       next step (seal.check_signer).

    An agent's key is never taken from a config directory nor from a person's key: no
    borrowed authority. A key file given by path is created (mode 0600) when there is none,
    as `boris keys new` would; until a person trusts it the store refuses it, saying how."""
    if isinstance(given, SigningKey):
        return given
    chosen = os.fspath(given) if given else os.environ.get("BORIS_KEY")
    if chosen:
        return load_or_create(Path(chosen).expanduser())
    if actor is None or actor.kind != "person":
        return None
    signed = store_signed() if callable(store_signed) else store_signed
    return person_key(actor.id) if signed else None
