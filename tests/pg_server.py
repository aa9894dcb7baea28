"""A throw-away PostgreSQL server for the tests and benchmarks: a temporary data directory,
a loopback port, started as a non-root user (the server refuses to run as root), stopped after.

Used by tests/conftest.py (when BORIS_TEST_PG_URL does not name a running server) and by
.ci/run, which starts one for the whole run:

    eval "$(.venv/bin/python tests/pg_server.py start DIR)"   # exports BORIS_TEST_PG_URL
    .venv/bin/python tests/pg_server.py stop DIR
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import socket
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

SUPERUSER = "boris"


def find_bin(name: str) -> str | None:
    """`name` from PATH, else from Debian's versioned directory (the newest version)."""
    on_path = shutil.which(name)
    if on_path:
        return on_path
    found = sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"), key=_version_key)
    return found[-1] if found else None


def _version_key(path: str) -> tuple[int, ...]:
    version = Path(path).parent.parent.name
    return tuple(int(p) for p in version.split(".") if p.isdigit())


def available() -> bool:
    return all(find_bin(n) for n in ("initdb", "pg_ctl", "postgres"))


def _run_as() -> str | None:
    """The non-root account to run the server as; None when we are not root."""
    if os.geteuid() != 0:
        return None
    for name in (os.environ.get("BORIS_PG_USER"), "postgres", "borispg", "nobody"):
        if not name:
            continue
        try:
            pwd.getpwnam(name)
        except KeyError:
            continue
        return name
    raise RuntimeError("running as root and no non-root account to run PostgreSQL as")


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class PgServer:
    root: Path
    port: int
    user: str | None

    @property
    def data(self) -> Path:
        return self.root / "data"

    def url(self, database: str = "postgres") -> str:
        return f"postgresql+psycopg://{SUPERUSER}@127.0.0.1:{self.port}/{database}"

    def _cmd(self, *argv: str) -> list[str]:
        return ["runuser", "-u", self.user, "--", *argv] if self.user else list(argv)

    @classmethod
    def start(cls, root: Path | None = None, *, durable: bool = False) -> PgServer:
        """initdb and start a server; `durable=False` (the tests) turns fsync off."""
        initdb, pg_ctl = find_bin("initdb"), find_bin("pg_ctl")
        if not (initdb and pg_ctl):
            raise RuntimeError("PostgreSQL's initdb/pg_ctl are not installed")
        if root is None:
            # A test server (fsync off) on tmpfs where there is one: packaging/test.sh says why.
            shm = Path("/dev/shm")
            scratch = shm if not durable and shm.is_dir() and os.access(shm, os.W_OK) else None
            root = Path(tempfile.mkdtemp(prefix="boris-pg-", dir=scratch))
        root = Path(root)
        root.mkdir(parents=True, exist_ok=True)
        user = _run_as()
        if user:
            entry = pwd.getpwnam(user)
            os.chown(root, entry.pw_uid, entry.pw_gid)
            os.chmod(root, 0o700)
            # The account must reach the directory: open its parents for traversal only.
            for parent in root.parents:
                if parent == Path("/"):
                    break
                mode = parent.stat().st_mode
                if not mode & 0o001:
                    os.chmod(parent, mode | 0o001)
        server = cls(root=root, port=_free_port(), user=user)
        subprocess.run(
            server._cmd(
                initdb,
                "-D",
                str(server.data),
                "-U",
                SUPERUSER,
                "-A",
                "trust",
                "-E",
                "UTF8",
                "--no-instructions",
                "--locale=C",
            ),
            check=True,
            stdout=subprocess.DEVNULL,
        )
        options = [
            f"-p {server.port}",
            "-c listen_addresses=127.0.0.1",
            f"-c unix_socket_directories={root}",
            "-c max_connections=200",
            # Tests make deadlocks on purpose: find them sooner than the default 1 s.
            "-c deadlock_timeout=100ms",
        ]
        if not durable:
            options += ["-c fsync=off", "-c synchronous_commit=off", "-c full_page_writes=off"]
        subprocess.run(
            server._cmd(
                pg_ctl,
                "-D",
                str(server.data),
                "-l",
                str(root / "server.log"),
                "-w",
                "-t",
                "60",
                "-o",
                " ".join(options),
                "start",
            ),
            check=True,
            stdout=subprocess.DEVNULL,
        )
        return server

    @classmethod
    def at(cls, root: Path) -> PgServer:
        """The server started earlier in `root` (for `stop`)."""
        port = int((root / "data" / "postmaster.pid").read_text().splitlines()[3])
        return cls(root=root, port=port, user=_run_as())

    def stop(self, *, remove: bool = True) -> None:
        pg_ctl = find_bin("pg_ctl")
        if pg_ctl and (self.data / "postmaster.pid").exists():
            subprocess.run(
                self._cmd(pg_ctl, "-D", str(self.data), "-m", "fast", "-w", "stop"),
                check=False,
                stdout=subprocess.DEVNULL,
            )
        if remove:
            shutil.rmtree(self.root, ignore_errors=True)


def main(argv: list[str]) -> int:
    if len(argv) != 2 or argv[0] not in ("start", "stop"):
        print("usage: pg_server.py start|stop DIR", file=sys.stderr)
        return 2
    root = Path(argv[1]).absolute()
    if argv[0] == "start":
        server = PgServer.start(root)
        print(f"export BORIS_TEST_PG_URL={server.url()}")
    else:
        PgServer.at(root).stop()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
