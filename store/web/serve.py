"""Running the decision page: where it listens, and only over TLS beyond loopback.

The page is reached from a phone through a private network or a reverse proxy that
terminates TLS in front of a loopback server (docs/phone.md); the server itself never needs
to be public. Bound to any address but loopback it refuses to start without a certificate
and key: passkeys, session cookies and decisions never cross a network in clear.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from urllib.parse import urlsplit

from ..errors import StoreError


class ServeRefused(StoreError):
    """`boris serve` will not listen as asked (an address beyond loopback without TLS)."""

    code = "serve_refused"
    category = "usage"


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


@dataclass(frozen=True)
class Listen:
    host: str
    port: int
    certfile: str | None
    keyfile: str | None
    #: The address the phone's browser opens (a proxy's, when one is in front).
    origin: str

    @property
    def rp_id(self) -> str:
        return urlsplit(self.origin).hostname or "localhost"

    @property
    def secure(self) -> bool:
        return self.certfile is not None


def listen(
    host: str, port: int, certfile: str | None, keyfile: str | None, origin: str | None
) -> Listen:
    """Where to listen, refused beyond loopback without TLS. `origin`: what the browser
    opens (by default, http://localhost:PORT on loopback, https://HOST:PORT with TLS)."""
    if (certfile is None) != (keyfile is None):
        raise ServeRefused("give both --cert and --key, or neither")
    if certfile is None and not is_loopback(host):
        raise ServeRefused(
            f"refusing to serve on {host} without TLS: give --cert and --key, or bind "
            "127.0.0.1 behind a reverse proxy that terminates TLS"
        )
    if origin is None:
        scheme = "https" if certfile else "http"
        name = "localhost" if is_loopback(host) else host
        origin = f"{scheme}://{name}:{port}"
    parts = urlsplit(origin)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ServeRefused(f"--origin {origin} is not an http(s) address")
    if parts.scheme == "http" and parts.hostname != "localhost":
        raise ServeRefused("a passkey needs a secure origin: https, or http://localhost")
    return Listen(host, port, certfile, keyfile, origin.rstrip("/"))
