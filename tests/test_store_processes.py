"""Two processes on one SQLite store, as the desktop and an agent are.

SQLite's locks on a database file are POSIX advisory locks, which a process loses when it
closes *any* descriptor of that file, even one SQLite never saw (sqlite.org/howtocorrupt.html
§2.2). A process that held connections and then read the file's header with a plain open()
lost the shared lock that tells other processes it is still reading: the next process to
close its last connection deleted the write-ahead log under it, and from then on this
process read the old log and never saw another write (bench_queue's "late arrival").
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from store import Actor, Store
from store import commands as c

ROOT = Path(__file__).resolve().parent.parent
AGENT = Actor(kind="agent", id="a")


def _write_elsewhere(directory: Path, task_id: str) -> None:
    code = (
        "import sys\n"
        "from store import Actor, Store\n"
        "from store import commands as c\n"
        "with Store.open(sys.argv[1]) as s:\n"
        "    s.execute(c.CreateTask(task_id=sys.argv[2], title='t', owner='o', objective='x'),"
        " Actor(kind='agent', id='b'))\n"
    )
    subprocess.run([sys.executable, "-c", code, str(directory), task_id], check=True, cwd=ROOT)


def _tasks_elsewhere(directory: Path) -> set[str]:
    code = (
        "import sys\n"
        "from store import Store\n"
        "with Store.open(sys.argv[1]) as s:\n"
        "    print(' '.join(t['id'] for t in s.tasks()))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, str(directory)],
        check=True, cwd=ROOT, capture_output=True, text=True,
    )  # fmt: skip
    return set(out.stdout.split())


def _create(store: Store, task_id: str) -> None:
    store.execute(c.CreateTask(task_id=task_id, title="t", owner="o", objective="x"), AGENT)


def test_opening_the_store_again_never_hides_another_process_s_writes(tmp_path: Path) -> None:
    with Store.open(tmp_path) as mine:
        _create(mine, "one")
        seen = mine.data_version()
        # The window opens the store a second time (its open after the first look, a
        # reopened store, a command run in-process) while its own connections are open.
        Store.open(tmp_path).close()
        _write_elsewhere(tmp_path, "two")
        # The other process's last connection closed: the log this one reads is still there.
        assert (tmp_path / "boris.sqlite-wal").exists()
        assert mine.data_version() > seen
        assert {t["id"] for t in mine.tasks()} == {"one", "two"}
        # What this process writes next, another process reads (it went to the shared log)...
        _create(mine, "three")
        assert _tasks_elsewhere(tmp_path) == {"one", "two", "three"}
        # ...and what another process writes next, this one reads.
        _write_elsewhere(tmp_path, "four")
        assert {t["id"] for t in mine.tasks()} == {"one", "two", "three", "four"}
    # Nothing was lost when the last connection closed.
    assert _tasks_elsewhere(tmp_path) == {"one", "two", "three", "four"}


def test_a_file_that_is_not_a_database_is_still_refused(tmp_path: Path) -> None:
    import pytest

    from store import StoreCorrupt

    (tmp_path / "boris.sqlite").write_bytes(b"<html>not a store</html>" * 100)
    with pytest.raises(StoreCorrupt, match="not an SQLite database"):
        Store.open(tmp_path)
    assert (tmp_path / "boris.sqlite").read_bytes() == b"<html>not a store</html>" * 100


def test_a_task_never_reads_the_store_s_own_database(tmp_path: Path) -> None:
    """A scope that holds the store's directory (a home directory, a workspace with the
    store inside) still never reaches its database: reading it would drop this process's
    locks as the header check did."""
    import pytest

    from store import ScopeViolation

    with Store.open(tmp_path / "store") as mine:
        mine.execute(
            c.CreateTask(
                task_id="wide", title="t", owner="o", objective="x", scope_paths=[str(tmp_path)]
            ),
            AGENT,
        )
        seen = mine.data_version()
        for name in ("boris.sqlite", "boris.sqlite-wal", "boris.sqlite-shm"):
            path = str(tmp_path / "store" / name)
            with pytest.raises(ScopeViolation, match="the store's own database"):
                mine.execute(
                    c.RecordArtifact(task_id="wide", name="db", content=c.Content(path=path)),
                    AGENT,
                )
            with pytest.raises(ScopeViolation, match="the store's own database"):
                mine.execute(
                    c.PlanEffect(task_id="wide", target=path, consequence="overwrite"), AGENT
                )
        assert mine.data_version() == seen
        _write_elsewhere(tmp_path / "store", "two")
        assert {t["id"] for t in mine.tasks()} == {"wide", "two"}
    # Closed, the database is an ordinary file again to this process.
    with Store.open(tmp_path / "other-store") as other:
        other.execute(
            c.CreateTask(
                task_id="wide", title="t", owner="o", objective="x", scope_paths=[str(tmp_path)]
            ),
            AGENT,
        )
        other.execute(
            c.RecordArtifact(
                task_id="wide",
                name="db",
                content=c.Content(path=str(tmp_path / "store" / "boris.sqlite")),
            ),
            AGENT,
        )
