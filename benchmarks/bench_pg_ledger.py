"""The team store's write paths against LangGraph's PostgresSaver on the same server (not part
of the test run): durable appends/s and checkpoint writes/s, one commit each.

Run: .venv/bin/pip install -e ".[bench,postgres]" && .venv/bin/python benchmarks/bench_pg_ledger.py

Without --url (or BORIS_TEST_PG_URL) it starts a throw-away server (tests/pg_server.py) with
fsync on, as a team store would run. Each contender gets its own database on that server:

- Boris append: `execute(RecordNote)`, one event per commit (the hash chain, the task's row
  lock for the seq, the projections, the signature policy check);
- Boris checkpoint: `execute(WriteCheckpoint)` on the task bench_ledger.py uses (criteria,
  artifacts, budgets: the state is assembled from the projections in the transaction);
- the same two through the login of a team's MCP server (`boris mcp --http --team`), an
  agents' role with the grants `boris roles-sql` prints: how every agent's write reaches a
  team store, each projection row checked by the server's guard (store.team);
- PostgresSaver.put: a checkpoint whose channel values are that same state, as a graph's loop
  hands it over each step;
- bare commit: psycopg inserting one row of the checkpoint's size per commit, the floor.

- Boris's own statements, raw: the exact text Boris sent for each write (its one simple
  query of EXECUTEs), recorded and replayed by psycopg on a copy of the database as it was
  before the writes: Boris's floor, the server's work a write needs with no Python of
  Boris's around it (issue 44);
- pipelined floor: psycopg sending a write's own statements (row lock, event insert, task
  row update, NOTIFY, COMMIT) in one pipeline per commit, as store.db sends a write: the
  least a chained write costs (the "floor" column);
- one-query floor: the same statements and the row read back as one simple query, quoted by
  the driver and never prepared: the server plans each statement anew. store.db sends a
  write the same way, as one simple query, but as EXECUTEs of statements the connection
  prepared once (issue 44).

Every contender talks to the server through benchmarks/pg_delay_proxy.py, which adds 0, 1
and 5 ms each way (`--delays`) and counts round trips (the client's flights) per write.
Interleaved rounds, the median of `--rounds` for each (the best beside it), so a noisy
neighbour costs everyone alike; the load average and each write's CPU in this process
(the client's and the proxy thread's) and the server's (its processes' CPU from /proc, when
it runs on this machine) are printed;
at a delay the writes per round are divided by (1 + delay) to keep a run short.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))
sys.path.insert(0, str(HERE))

from bench_ledger import AGENT, LangGraphLoop, boris_task  # noqa: E402
from pg_delay_proxy import DelayProxy  # noqa: E402
from pg_server import PgServer  # noqa: E402

from store import Store  # noqa: E402
from store import commands as c  # noqa: E402
from store.canonical import canonical_json  # noqa: E402
from store.commands.checkpoints import WriteCheckpoint  # noqa: E402


def _plain(url: str) -> str:
    from sqlalchemy.engine import make_url

    return make_url(url).set(drivername="postgresql").render_as_string(hide_password=False)


def _admin(url: str, sql: str) -> None:
    import psycopg

    with psycopg.connect(_plain(url), autocommit=True) as conn:
        conn.execute(sql)


#: One write's figures: writes/s, round trips per write (through the proxy), this
#: process's CPU per write in µs (the client's, with the proxy's thread, alike for all) and
#: the server's (all its processes, read from /proc; NaN where they cannot be read).
Result = tuple[float, float, float, float]


class Via:
    """Connections through the delay proxy; counts round trips of the timed loop only."""

    def __init__(self, proxy: DelayProxy, admin_url: str) -> None:
        self.proxy = proxy
        self.admin_url = admin_url

    def __call__(self, url: str) -> str:
        return self.proxy.url_for(url)

    def timed(self, n: int, write: Callable[[], object]) -> Result:
        pids = _server_pids(self.admin_url)
        self.proxy.reset()
        s0 = _cpu_s(pids)
        c0 = time.process_time()
        t0 = time.perf_counter()
        for _ in range(n):
            write()
        rate = n / (time.perf_counter() - t0)
        cpu = (time.process_time() - c0) / n * 1e6
        server = (_cpu_s(pids) - s0) / n * 1e6
        return rate, self.proxy.counts()[0] / n, cpu, server


def _server_pids(admin_url: str) -> list[int]:
    """Every process of the server (backends and its own workers: WAL writer, checkpointer)."""
    import psycopg

    with psycopg.connect(_plain(admin_url), autocommit=True) as conn:
        mine = conn.info.backend_pid
        return [int(r[0]) for r in conn.execute("SELECT pid FROM pg_stat_activity") if r[0] != mine]


def _cpu_s(pids: list[int]) -> float:
    """User and system CPU seconds of `pids` so far (NaN if the server is not on this machine
    or not ours to read)."""
    total = 0
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except FileNotFoundError:
            continue  # ended meanwhile
        except OSError:
            return float("nan")
        total += int(fields[11]) + int(fields[12])
    return total / os.sysconf("SC_CLK_TCK")


class Database:
    """A fresh database on the server for one contender, dropped afterwards."""

    serial = 0

    def __init__(self, admin_url: str, template: str = "") -> None:
        from sqlalchemy.engine import make_url

        Database.serial += 1
        self.admin_url = admin_url
        self.name = f"boris_bench_{os.getpid()}_{Database.serial}"
        like = f" TEMPLATE {template}" if template else ""
        _admin(admin_url, f"CREATE DATABASE {self.name}{like}")
        self.url = make_url(admin_url).set(database=self.name).render_as_string(hide_password=False)

    def __enter__(self) -> Database:
        return self

    def __exit__(self, *exc: object) -> None:
        _admin(self.admin_url, f"DROP DATABASE IF EXISTS {self.name} WITH (FORCE)")


def boris_appends(admin_url: str, via: Via, n: int) -> Result:
    with (
        Database(admin_url) as db,
        tempfile.TemporaryDirectory() as tmp,
        Store.open(Path(tmp) / "s", url=via(db.url)) as s,
    ):
        tid = s.execute(c.CreateTask(title="bench", owner="o", objective="x"), AGENT)
        note = c.RecordNote(task_id=tid, text="a step")
        s.execute(note, AGENT)
        return via.timed(n, lambda: s.execute(note, AGENT))


def boris_checkpoints(admin_url: str, via: Via, n: int) -> tuple[Result, dict[str, Any]]:
    with (
        Database(admin_url) as db,
        tempfile.TemporaryDirectory() as tmp,
        Store.open(Path(tmp) / "s", url=via(db.url)) as s,
    ):
        tid = boris_task(s, Path(tmp) / "scope")
        cmd = WriteCheckpoint(task_id=tid, reason="milestone", note="")
        s.execute(cmd, AGENT)
        result = via.timed(n, lambda: s.execute(cmd, AGENT))
        head = s.head_checkpoint(tid)
        assert head is not None
        return result, head["state"]


#: The login the benchmark writes through as a team's MCP server would (`boris mcp --http
#: --team`): a member of the service role, an agents' role. Made once on the server, kept.
TEAM_LOGIN = "boris_bench_server"


def _as_team_server(admin_url: str, db: Database) -> str:
    """`db`'s URL as the team server's login, after the admin ran `boris roles-sql`'s SQL on
    it (docs/team-store.md): its writes pass the server's guards as every agent's do, the
    projection guard's check of each row included (store.team)."""
    from sqlalchemy.engine import make_url

    from store.team import DEFAULT_SERVICE, roles_sql

    _admin(db.url, roles_sql(database=db.name))
    _admin(
        admin_url,
        f"DO $$ BEGIN CREATE ROLE {TEAM_LOGIN} LOGIN PASSWORD 'bench' IN ROLE {DEFAULT_SERVICE};"
        " EXCEPTION WHEN duplicate_object THEN NULL; END $$",
    )
    return make_url(db.url).set(username=TEAM_LOGIN, password="bench").render_as_string(False)


def boris_team_writes(admin_url: str, via: Via, n: int, kind: str) -> Result:
    """Boris's appends or checkpoints as agents write on a team store: through the team
    server's login, on a store its owner made (`boris init`) and gave the team's roles."""
    with Database(admin_url) as db, tempfile.TemporaryDirectory() as tmp:
        Store.open(Path(tmp) / "owner", url=db.url).close()  # made and migrated by its owner
        url = _as_team_server(admin_url, db)
        with Store.open(Path(tmp) / "s", url=via(url)) as s:
            if kind == "append":
                tid = s.execute(c.CreateTask(title="bench", owner="o", objective="x"), AGENT)
            else:
                tid = boris_task(s, Path(tmp) / "scope")
            write = _boris_write(kind, tid)
            s.execute(write, AGENT)
            with s.engine.connect() as conn:
                who = conn.exec_driver_sql("SELECT current_user").scalar()
            assert who == TEAM_LOGIN, who
            return via.timed(n, lambda: s.execute(write, AGENT))


def boris_statements(admin_url: str, via: Via, n: int, kind: str) -> Result:
    """Boris's own statements, by raw psycopg: the exact text each of `n` writes (appends or
    checkpoints) sent as Boris sent it (one simple query of EXECUTEs a write, the statements'
    PREPAREs sent first, untimed), recorded on one database and replayed on a copy made
    before the writes (so every guard, hash and seq holds), with no Python of Boris's around
    them: the floor for Boris's writes. Only the guard's allowed clock slack is widened
    (the recorded times are seconds old when replayed), and the task row's version the
    guard expects is the one the replay's previous write left (`_replay`: the copy's
    transactions are not the recorded ones)."""
    import psycopg

    with Database(admin_url) as src, tempfile.TemporaryDirectory() as tmp:
        with Store.open(Path(tmp) / "s", url=src.url) as s:
            if kind == "append":  # as boris_appends makes it
                tid = s.execute(c.CreateTask(title="bench", owner="o", objective="x"), AGENT)
            else:
                tid = boris_task(s, Path(tmp) / "scope")
            for _ in range(3):
                s.execute(_boris_write(kind, tid), AGENT)
        with Database(admin_url, template=src.name) as copy:
            with Store.open(Path(tmp) / "s", url=src.url) as s:
                # The first write of a process waits twice: replayed, not timed.
                sent, first = _recorded(lambda: s.execute(_boris_write(kind, tid), AGENT), n)
            prepares, texts = _replayable(sent)
            conns = {
                conn_id: psycopg.connect(_plain(via(copy.url)), autocommit=True)
                for conn_id in prepares
            }
            try:
                for conn_id, conn in conns.items():
                    for statement in prepares[conn_id]:
                        conn.execute(statement)
                xid: list[str] = []  # the task row's version as the replay left it
                for conn_id, text in texts[:first]:
                    _replay(conns[conn_id], text, xid)
                rest = iter(texts[first:])
                per_write, odd = divmod(len(texts) - first, n)
                assert not odd, "every write sends as many exchanges"

                def write() -> None:
                    for _ in range(per_write):
                        conn_id, text = next(rest)
                        _replay(conns[conn_id], text, xid)

                return via.timed(n, write)
            finally:
                for conn in conns.values():
                    conn.close()


#: A write's guard names the row versions it was built on (store.tx._FINGERPRINT): first the
#: task row's xmin, which on the copy is the replayed transaction's, not the recorded one's.
_VERSION = re.compile(r"E'\d+:(\d+:[^']*)'")
_XID = re.compile(r"\d+(?=:\d+:|$)")


def _replay(conn: Any, text: str, xid: list[str]) -> None:
    """Send one recorded exchange as it was sent, its guard's task-row version (if any) the
    one the replay's previous write left (`xid`), and keep the version the exchange's
    read-back answers (its last row naming one) for the next."""
    if xid:
        text = _VERSION.sub(lambda m: f"E'{xid[0]}:{m.group(1)}'", text, count=1)
    cur = conn.execute(text)
    seen = None
    while True:
        if cur.description is not None:
            for row in cur.fetchall():
                for value in row[-2:]:
                    m = _XID.match(value) if isinstance(value, str) else None
                    if m is not None:
                        seen = m.group(0)
        if not cur.nextset():
            break
    if seen is not None:
        xid[:] = [seen]


def _recorded(write: Callable[[], object], n: int) -> tuple[list[tuple[int, str]], int]:
    """The simple queries (connection, text) of one write and then `n` more, and how many
    the first took."""
    from store import db as store_db

    sent: list[tuple[int, str]] = []
    real = store_db._simple_query

    def recording(raw: Any, text: str) -> list[Any]:
        sent.append((id(raw), text))
        return real(raw, text)

    store_db._simple_query = recording  # type: ignore[assignment]
    try:
        write()
        first = len(sent)
        for _ in range(n):
            write()
    finally:
        store_db._simple_query = real  # type: ignore[assignment]
    return sent, first


def _replayable(sent: list[tuple[int, str]]) -> tuple[dict[int, list[str]], list[tuple[int, str]]]:
    """The PREPAREs per connection, and the texts without them, the guard's slack widened."""
    prepares: dict[int, list[str]] = {}
    guards: set[str] = set()
    stripped: list[tuple[int, list[str]]] = []
    for conn_id, text in sent:
        kept = []
        for statement in text.split(";\n"):
            if statement.startswith("PREPARE"):
                prepares.setdefault(conn_id, []).append(statement)
                guards.update(re.findall(r"PREPARE (\w+) AS SELECT boris_write_guard", statement))
            else:
                kept.append(statement)
        stripped.append((conn_id, kept))
    names = "|".join(guards) or "-"
    slack = re.compile(rf"^(EXECUTE (?:{names})\(.*)'1000'\)$")
    texts = [
        (conn_id, ";\n".join(slack.sub(r"\1'86400000')", q) for q in kept))
        for conn_id, kept in stripped
    ]
    return prepares, texts


def _boris_write(kind: str, tid: str) -> Any:
    if kind == "append":
        return c.RecordNote(task_id=tid, text="a step")
    return WriteCheckpoint(task_id=tid, reason="milestone", note="")


def postgres_saver(admin_url: str, via: Via, n: int, state: dict[str, Any]) -> Result:
    from langgraph.checkpoint.postgres import PostgresSaver

    with Database(admin_url) as db, PostgresSaver.from_conn_string(_plain(via(db.url))) as saver:
        saver.setup()
        loop = LangGraphLoop(saver, state)
        loop.put()
        return via.timed(n, loop.put)


def bare_commits(admin_url: str, via: Via, n: int, size: int) -> Result:
    import psycopg

    with Database(admin_url) as db, psycopg.connect(_plain(via(db.url)), autocommit=True) as conn:
        conn.execute("CREATE TABLE t (id bigserial PRIMARY KEY, body bytea)")
        body = b"x" * size
        return via.timed(n, lambda: conn.execute("INSERT INTO t (body) VALUES (%s)", (body,)))


def pipelined_floor(admin_url: str, via: Via, n: int) -> Result:
    """A chained write's own statements in one pipeline: lock and check the head, insert the
    event, move the head, notify, commit. What one round trip a write can reach."""
    import hashlib

    import psycopg

    with (
        Database(admin_url) as db,
        psycopg.connect(_plain(via(db.url)), autocommit=True) as conn,
    ):
        conn.execute("CREATE TABLE task (id text PRIMARY KEY, seq int, head text)")
        conn.execute(
            "CREATE TABLE ev (task text, seq int, payload text, prev text, hash text, "
            "PRIMARY KEY (task, seq))"
        )
        conn.execute("INSERT INTO task VALUES ('t', 0, '')")
        state = {"seq": 0, "head": ""}

        def write() -> None:
            # BEGIN and COMMIT are ours (autocommit): the driver's own BEGIN would wait.
            seq, prev = int(state["seq"]) + 1, str(state["head"])
            digest = hashlib.sha256(f"{prev}{seq}a step".encode()).hexdigest()
            with conn.pipeline(), conn.cursor() as cur:
                cur.execute("BEGIN")
                cur.execute("SELECT 1 FROM task WHERE id = 't' AND seq = %s FOR UPDATE", (seq - 1,))
                cur.execute(
                    "INSERT INTO ev VALUES ('t', %s, 'a step', %s, %s)", (seq, prev, digest)
                )
                cur.execute("UPDATE task SET seq = %s, head = %s WHERE id = 't'", (seq, digest))
                cur.execute("SELECT pg_notify('bench', 't')")
                cur.execute("COMMIT")
            state["seq"], state["head"] = seq, digest

        return via.timed(n, write)


def one_query_floor(admin_url: str, via: Via, n: int) -> Result:
    """The same statements as `pipelined_floor`, and the row read back for the next write, as
    one simple query quoted by the driver (store.db says why a write is not sent so)."""
    import hashlib

    import psycopg

    with (
        Database(admin_url) as db,
        psycopg.connect(_plain(via(db.url)), autocommit=True) as conn,
    ):
        conn.execute("CREATE TABLE task (id text PRIMARY KEY, seq int, head text)")
        conn.execute(
            "CREATE TABLE ev (task text, seq int, payload text, prev text, hash text, "
            "PRIMARY KEY (task, seq))"
        )
        conn.execute("INSERT INTO task VALUES ('t', 0, '')")
        state = {"seq": 0, "head": ""}
        quoting = psycopg.ClientCursor(conn)
        cur = conn.cursor()

        def write() -> None:
            seq, prev = int(state["seq"]) + 1, str(state["head"])
            digest = hashlib.sha256(f"{prev}{seq}a step".encode()).hexdigest()
            statements = [
                ("BEGIN", ()),
                ("SELECT 1 FROM task WHERE id = 't' AND seq = %s FOR UPDATE", (seq - 1,)),
                ("INSERT INTO ev VALUES ('t', %s, 'a step', %s, %s)", (seq, prev, digest)),
                ("UPDATE task SET seq = %s, head = %s WHERE id = 't'", (seq, digest)),
                ("SELECT pg_notify('bench', 't')", ()),
                ("SELECT seq, head FROM task WHERE id = 't'", ()),
                ("COMMIT", ()),
            ]
            cur.execute("; ".join(quoting.mogrify(q, a) for q, a in statements))
            state["seq"], state["head"] = seq, digest

        return via.timed(n, write)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--writes", type=int, default=300, help="writes per contender per round")
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--delays", type=float, nargs="+", default=[0, 1, 5], help="ms each way")
    p.add_argument("--url", default=os.environ.get("BORIS_TEST_PG_URL"))
    args = p.parse_args()
    server = None
    url = args.url
    if not url:
        server = PgServer.start(durable=True)
        url = server.url()
    try:
        from sqlalchemy.engine import make_url

        where = make_url(url)
        durable = "fsync on" if server is not None else "as configured"
        print(f"PostgreSQL at {url.split('@')[-1]} ({durable}); medians of {args.rounds} rounds")
        for delay in args.delays:
            proxy = DelayProxy(where.host or "127.0.0.1", where.port or 5432, delay_ms=delay)
            via = Via(proxy.start(), url)
            try:
                run_delay(url, via, delay, max(20, int(args.writes / (1 + delay))), args.rounds)
            finally:
                proxy.stop()
    finally:
        if server is not None:
            server.stop()
    return 0


def run_delay(url: str, via: Via, delay: float, n: int, rounds: int) -> None:
    _, state = boris_checkpoints(url, via, 1)
    size = len(canonical_json(state).encode())
    contenders: dict[str, Callable[[], Result]] = {
        "Boris append (one event a commit)": lambda: boris_appends(url, via, n),
        "Boris checkpoint write": lambda: boris_checkpoints(url, via, n)[0],
        "Boris append, team server's login": lambda: boris_team_writes(url, via, n, "append"),
        "Boris checkpoint, team server's login": lambda: boris_team_writes(
            url, via, n, "checkpoint"
        ),
        "LangGraph PostgresSaver.put": lambda: postgres_saver(url, via, n, state),
        "Boris's append statements, raw": lambda: boris_statements(url, via, n, "append"),
        "Boris's checkpoint statements, raw": lambda: boris_statements(url, via, n, "checkpoint"),
        "pipelined floor (own statements)": lambda: pipelined_floor(url, via, n),
        "one-query floor (own statements)": lambda: one_query_floor(url, via, n),
        f"bare commit of a {size}-byte row": lambda: bare_commits(url, via, n, size),
    }
    runs: dict[str, list[Result]] = {}
    for _ in range(rounds):
        for name, run in contenders.items():
            runs.setdefault(name, []).append(run())
    print(f"+{delay:g} ms each way, {n} writes a round (load {os.getloadavg()[0]:.1f}):")
    median = {name: _median(got) for name, got in runs.items()}
    saver = median["LangGraph PostgresSaver.put"][0]
    floor = median["pipelined floor (own statements)"][0]
    for name, (rate, trips, cpu, server) in median.items():
        best = max(r[0] for r in runs[name])
        print(
            f"  {name:<36}{rate:>6.0f}/s (best {best:.0f})  {trips:3.1f} round trips  "
            f"{rate / saver:5.2f}x PostgresSaver  {rate / floor:5.2f}x floor  "
            f"CPU a write: {cpu:5.0f} µs here, {server:5.0f} µs the server's"
        )
    for kind in ("append", "checkpoint"):
        own = median[f"Boris's {kind} statements, raw"][0]
        print(
            f"  Boris {kind}: {median[_BORIS[kind]][0] / own:4.2f}x its own statements, raw; "
            f"they are {own / saver:4.2f}x PostgresSaver"
        )


_BORIS = {"append": "Boris append (one event a commit)", "checkpoint": "Boris checkpoint write"}


def _median(got: list[Result]) -> Result:
    """Each figure's median over the rounds (rounds interleave the contenders)."""
    mid = len(got) // 2
    rate, trips, cpu, server = (sorted(x[i] for x in got)[mid] for i in range(4))
    return rate, trips, cpu, server


if __name__ == "__main__":
    sys.exit(main())
