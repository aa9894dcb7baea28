"""Shared fixtures: temporary stores and workspaces, never the user's directories.

The `store` fixture (and `s`, and `store_url`) runs each test on both engines: the embedded
SQLite file and a PostgreSQL database created for that test on a throw-away server (the one
BORIS_TEST_PG_URL names, as .ci/run starts it, else one started here). A test about the
SQLite file itself is marked `sqlite_only`. Without a server the PostgreSQL half is skipped on
a developer's machine and fails under CI (CI=true): a store test never passes by not running.
"""

from __future__ import annotations

import gc
import itertools
import os
import sys
import tempfile
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from pg_server import PgServer, available

from store import Store

if TYPE_CHECKING:
    from pg_delay_proxy import DelayProxy
    from test_respond import Signed

ENGINES = ("sqlite", "postgresql")
BENCHMARKS = Path(__file__).resolve().parent.parent / "benchmarks"


#: The collector's thresholds in a test process (the processes the tests start, and the app,
#: keep Python's). A worker holds a thousand tests' modules, windows and reports: with the
#: default (700, 10, 10) it collected ~4,500 times in four test files and spent 12.9 s of
#: CPU there, 10.5 s of it in full collections of that heap; at these, 3.0 s.
TEST_GC_THRESHOLDS = (100_000, 50, 50)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "sqlite_only: about the SQLite file itself; the store fixture uses SQLite only"
    )
    gc.set_threshold(*TEST_GC_THRESHOLDS)


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "store_engine" in metafunc.fixturenames:
        # The desktop's tests open "another process's" store by directory, which is the
        # SQLite file's way; they run on SQLite only. Windows on a team store (PostgreSQL
        # LISTEN/NOTIFY) are tested in test_desktop_live.py, which opens its stores on
        # `pg_url` itself.
        only = metafunc.definition.get_closest_marker("sqlite_only") or (
            metafunc.module.__name__.startswith("test_desktop_")
        )
        metafunc.parametrize("store_engine", ["sqlite"] if only else ENGINES, indirect=True)


@pytest.fixture(autouse=True)
def _no_user_store(monkeypatch: pytest.MonkeyPatch) -> None:
    # A user's BORIS_STORE_URL must never send a test's store to their database.
    monkeypatch.delenv("BORIS_STORE_URL", raising=False)
    monkeypatch.delenv("BORIS_STORE", raising=False)
    # Nor may a user's BORIS_ACTOR stand in for the actor a test names.
    monkeypatch.delenv("BORIS_ACTOR", raising=False)


@pytest.fixture(autouse=True)
def _no_user_keys(
    monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory
) -> None:
    # A person's signing key lives in the user config dir (store.signing.keys): never the
    # user's own in a test.
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path_factory.mktemp("config")))
    monkeypatch.delenv("BORIS_KEY", raising=False)


# --- PostgreSQL ----------------------------------------------------------------------------


class PgCluster:
    """A running server we may create and drop databases on.

    Copying the migrated template takes the server about half a second, so the copy the next
    test will get is made while this one runs (one at a time, in a thread of this worker):
    every test still gets a database no other test touched, in the template's state."""

    def __init__(self, admin_url: str) -> None:
        from sqlalchemy.engine import make_url

        self.admin_url = admin_url
        self._url = make_url(admin_url)
        self._names = itertools.count()
        self.template: str | None = None
        self._version = 0  # the server's, known once the template is made
        self._copier = ThreadPoolExecutor(max_workers=1, thread_name_prefix="pg-template-copy")
        self._next: Future[str] | None = None

    def url(self, database: str) -> str:
        return self._url.set(database=database).render_as_string(hide_password=False)

    def _admin(self, sql: str) -> int:
        """Run `sql` on the server's maintenance database; the server's version number."""
        import psycopg

        plain = self._url.set(drivername="postgresql").render_as_string(hide_password=False)
        with psycopg.connect(plain, autocommit=True) as conn:
            conn.execute(sql)
            return conn.info.server_version

    def _copy(self, source: str) -> str:
        name = f"boris_t{os.getpid()}_{next(self._names)}"
        # FILE_COPY copies the template's files: half the server's CPU of PostgreSQL 15's
        # default (WAL_LOG, every block through the WAL: 172 against 90 ms a database, and
        # its drop 27 against 12 ms), once per test on the team store. Older servers copy
        # files anyway and know no STRATEGY.
        strategy = " STRATEGY FILE_COPY" if self._version >= 150000 else ""
        self._admin(f"CREATE DATABASE {name} TEMPLATE {source}{strategy}")
        return name

    def create(self, *, migrated: bool = True) -> str:
        """A new database: a copy of the migrated template, or empty (`migrated=False`)."""
        if not migrated:
            return self._copy("template0")
        if self.template is None:
            template = f"boris_tmpl{os.getpid()}"
            self._version = self._admin(f"CREATE DATABASE {template} TEMPLATE template0")
            with tempfile.TemporaryDirectory() as blobs:
                Store.open(blobs, url=self.url(template)).close()
            self.template = template
        ready = self._next or self._copier.submit(self._copy, self.template)
        self._next = self._copier.submit(self._copy, self.template)
        return ready.result()

    def drop(self, name: str) -> None:
        self._admin(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")

    def close(self) -> None:
        """Drop the copy no test took, then the template."""
        if self._next is not None:
            self.drop(self._next.result())
        self._copier.shutdown()
        if self.template is not None:
            self.drop(self.template)


@pytest.fixture(scope="session")
def pg_cluster() -> Iterator[PgCluster]:
    given = os.environ.get("BORIS_TEST_PG_URL")
    server: PgServer | None = None
    if given:
        cluster = PgCluster(given)
    elif available():
        server = PgServer.start()
        cluster = PgCluster(server.url())
    else:
        message = "no PostgreSQL: set BORIS_TEST_PG_URL or install initdb/pg_ctl"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    try:
        yield cluster
    finally:
        cluster.close()
        if server is not None:
            server.stop()


@pytest.fixture
def pg_url(pg_cluster: PgCluster) -> Iterator[str]:
    """A fresh PostgreSQL database at this program's schema, dropped after the test."""
    name = pg_cluster.create()
    yield pg_cluster.url(name)
    _collect_leaks()
    pg_cluster.drop(name)


@pytest.fixture(params=["sqlite", "postgresql"])
def engine_url(request: pytest.FixtureRequest) -> str | None:
    """Each engine, for a test that opens the store itself: the agent's and the window's
    (`signed`, `window_store`). None: SQLite."""
    return str(request.getfixturevalue("pg_url")) if request.param == "postgresql" else None


@pytest.fixture
def signed(
    engine_url: str | None, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> Iterator[Signed]:
    """The agent's store on each engine, signed as `boris init` makes it (it signs with the
    agent's key); a module's own `signed` fixture takes its place."""
    from test_respond import Signed

    s = Store.open(tmp_path / "store", url=engine_url)
    yield Signed(s, tmp_path, capsys)
    s.close()


@pytest.fixture
def window_store(signed: Signed, engine_url: str | None, tmp_path: Path) -> Iterator[Store]:
    """The same store as the reviewer's window opens it (she signs with her own key)."""
    from test_desktop_actions import store_for_window

    with store_for_window(tmp_path / "store", engine_url) as s:
        yield s


@pytest.fixture
def proxy(pg_url: str) -> Iterator[DelayProxy]:
    """A proxy between this test's stores and its database that counts the round trips
    (benchmarks/pg_delay_proxy.py): the team store's tests of what a write waits for."""
    from sqlalchemy.engine import make_url

    if str(BENCHMARKS) not in sys.path:
        sys.path.insert(0, str(BENCHMARKS))
    from pg_delay_proxy import DelayProxy

    u = make_url(pg_url)
    p = DelayProxy(u.host or "127.0.0.1", u.port or 5432).start()
    yield p
    p.stop()


@pytest.fixture
def via(proxy: DelayProxy, pg_url: str, tmp_path: Path) -> Iterator[Store]:
    """The test's store, reaching its database through `proxy`."""
    with Store.open(tmp_path / "s", url=proxy.url_for(pg_url)) as s:
        yield s


@pytest.fixture
def empty_pg_url(pg_cluster: PgCluster) -> Iterator[str]:
    """A fresh, empty PostgreSQL database (no schema yet), dropped after the test."""
    name = pg_cluster.create(migrated=False)
    yield pg_cluster.url(name)
    _collect_leaks()
    pg_cluster.drop(name)


def _collect_leaks() -> None:
    # The window's reads of this test's database end before it is dropped. (A full
    # gc.collect here, to charge a leaked connection to the test that left it, cost up to a
    # second a test once the run held a thousand tests' objects: the suite took twice as long.)
    quiet_workers()


def quiet_workers() -> None:
    """Let the window's jobs still running finish before their store closes, as the app does
    on exit (boris_desktop/app.py): a read that ends after `Store.close` hands its connection
    back to a pool nobody holds, and it is closed only by the garbage collector, later."""
    qtcore = sys.modules.get("PySide6.QtCore")
    if qtcore is not None:
        qtcore.QThreadPool.globalInstance().waitForDone(10_000)


# --- stores on both engines ----------------------------------------------------------------


@pytest.fixture
def store_engine(request: pytest.FixtureRequest) -> str:
    return str(getattr(request, "param", "sqlite"))


@pytest.fixture
def store_url(store_engine: str, request: pytest.FixtureRequest) -> str | None:
    """The test store's database URL: None for SQLite (the file in the store's directory)."""
    if store_engine == "sqlite":
        return None
    return str(request.getfixturevalue("pg_url"))


@pytest.fixture
def store_dir(tmp_path: Path) -> Path:
    return tmp_path / "store"


@pytest.fixture
def open_store(store_dir: Path, store_url: str | None) -> Callable[..., Store]:
    """Open the test's store (again): the same directory and database as `store`."""

    def opener(directory: Path | None = None, **kw: object) -> Store:
        return Store.open(directory or store_dir, url=store_url, **kw)  # type: ignore[arg-type]

    return opener


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    """A task's workspace: the root of its resource scope."""
    w = tmp_path / "workspace"
    w.mkdir()
    return w


@pytest.fixture
def store(open_store: Callable[..., Store]) -> Iterator[Store]:
    s = open_store()
    yield s
    quiet_workers()
    s.close()


@pytest.fixture
def s(store: Store) -> Store:
    return store
