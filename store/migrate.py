"""Schema versions: Alembic migrations shipped in the package, run on open after a backup.

The fast path (the store is at this program's head) never imports Alembic, which costs about
360 ms; it only reads `alembic_version`. A store at a revision this program does not know was
written by a newer program: it is refused and nothing in it changes.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import sqlalchemy as sa
from sqlalchemy.engine import Engine

from . import db, open_lock
from .errors import MigrationFailed, StoreCorrupt, StoreError, StoreTooNew
from .version import SCHEMA_REVISIONS, __version__

MIGRATIONS_DIR = Path(__file__).with_name("migrations")
#: Every revision this program knows, oldest first; the last one is the head.
REVISIONS: tuple[str, ...] = SCHEMA_REVISIONS
HEAD = REVISIONS[-1]


def current_revision(engine: Engine) -> str | None:
    try:
        with engine.connect() as conn:
            names = set(sa.inspect(conn).get_table_names())
            if "alembic_version" not in names:
                if names - {"sqlite_sequence"}:
                    raise StoreCorrupt(
                        "the database has tables but no schema version: not a Boris store"
                    )
                return None
            rev = conn.exec_driver_sql("SELECT version_num FROM alembic_version").scalar()
            if rev is None:
                if names - {"alembic_version"}:
                    raise StoreCorrupt(
                        "the database has tables but an empty schema version: not a Boris store"
                    )
                return None
            return str(rev)
    except sa.exc.DatabaseError as exc:
        raise StoreCorrupt(f"cannot read the store: {exc.orig}") from exc


def _written_by(engine: Engine) -> str:
    try:
        with engine.connect() as conn:
            value = conn.exec_driver_sql(
                "SELECT value FROM store_meta WHERE key = 'written_by'"
            ).scalar()
            return str(value) if value else "an unknown version"
    except sa.exc.DatabaseError:
        return "an unknown version"


def refuse_if_newer_sqlite(db_file: Path) -> None:
    """Judge an existing SQLite store through a read-only connection, before the engine's
    connect-time pragmas (journal mode) could change a single byte of a store we must refuse."""
    import sqlite3

    try:
        conn = sqlite3.connect(f"{db_file.as_uri()}?mode=ro", uri=True)
    except sqlite3.Error:
        return  # let the normal open report it
    try:
        rev = conn.execute("SELECT version_num FROM alembic_version").fetchone()
        row = conn.execute("SELECT value FROM store_meta WHERE key = 'written_by'").fetchone()
    except sqlite3.Error:
        return
    finally:
        conn.close()
    if rev and rev[0] not in REVISIONS:
        _refuse(str(rev[0]), str(row[0]) if row else "an unknown version")


def _refuse(rev: str, written_by: str) -> None:
    raise StoreTooNew(
        f"this store has schema {rev}, written by Boris {written_by}; "
        f"this program (Boris {__version__}) reads schema up to {HEAD}. "
        "Update Boris Desktop to open it; the store was not changed."
    )


def ensure_current(engine: Engine, backup_dir: Path | None) -> str | None:
    """Bring the store to HEAD. Returns the backup's path when a migration ran on a copy.

    An existing SQLite store is first copied whole into `backup_dir` (VACUUM INTO, never a
    file copy). Every migration step and the new `written_by` then run in one write
    transaction: if any step fails, none of them is kept, the store stays at its old schema,
    and `MigrationFailed` says which step failed and where the backup is.
    """
    rev = current_revision(engine)
    if rev == HEAD:
        return None
    if not db.is_sqlite(engine):
        # Several first openers of a server store at once: one migrates, the others wait and
        # then find it current (SQLite's openers queue on open_lock.opening instead).
        with open_lock.migrating(engine):
            return _bring_to_head(engine, current_revision(engine), backup_dir)
    return _bring_to_head(engine, rev, backup_dir)


def _bring_to_head(engine: Engine, rev: str | None, backup_dir: Path | None) -> str | None:
    if rev == HEAD:
        return None
    if rev is not None and rev not in REVISIONS:
        _refuse(rev, _written_by(engine))
    backup: Path | None = None
    if rev is not None and backup_dir is not None and db.is_sqlite(engine):
        stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%S%fZ")
        backup = backup_dir / f"boris-schema{rev}-{stamp}.sqlite"
        try:
            db.backup_sqlite(engine, backup)
        except (OSError, sa.exc.DBAPIError) as exc:
            raise MigrationFailed(
                f"could not back up the store before upgrading it from schema {rev} to "
                f"{HEAD}: {_reason(exc)}; the store was not changed"
            ) from exc
    try:
        if rev is None and db.is_sqlite(engine) and _create_at_head(engine):
            return None
        _upgrade(engine)
    except StoreError:
        raise
    except Exception as exc:
        raise MigrationFailed(_failure(engine, rev, exc, backup)) from exc
    return str(backup) if backup else None


def _reason(exc: BaseException) -> str:
    if isinstance(exc, sa.exc.DBAPIError):
        return f"{type(exc.orig).__name__}: {exc.orig}"
    return f"{type(exc).__name__}: {exc}"


def _failure(engine: Engine, rev: str | None, exc: BaseException, backup: Path | None) -> str:
    if rev is None:
        return f"could not create the store's schema {HEAD}: {_reason(exc)}"
    try:
        now = current_revision(engine)
    except StoreError:
        now = None
    kept = (
        f"the store was left unchanged at schema {rev}"
        if now == rev
        else f"the store is now at schema {now or 'unknown'}"
    )
    where = f"; a copy made before the upgrade is at {backup}" if backup else ""
    return f"upgrading the store from schema {rev} to {HEAD} failed ({_reason(exc)}); {kept}{where}"


#: A new SQLite store's schema at HEAD, as the migrations leave it (`sqlite_schema`): made
#: in one step from this file instead of 21 steps through Alembic, which `boris init`, the
#: demo and every test's new store paid (about 200 ms of migrating, 360 of importing
#: Alembic). Rails loads schema.rb and Alembic's cookbook does create_all + stamp for the
#: same reason. tests/test_migrations_snapshot.py holds it to the migrations; a snapshot of
#: another revision is not used, so a new migration without one is only slower, never wrong.
SNAPSHOT = MIGRATIONS_DIR / "sqlite_head.json"
#: The order a schema is made in: a table before its indexes and the triggers on it.
_KINDS = ("table", "index", "trigger", "view")


def _create_at_head(engine: Engine) -> bool:
    """Make a new SQLite store's schema from SNAPSHOT in one write transaction; False when
    the snapshot is missing or of another revision (the migrations then run)."""
    import json

    try:
        snapshot = json.loads(SNAPSHOT.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    if snapshot.get("revision") != HEAD:
        return False
    with db.writer(engine).begin() as conn:
        for statement in snapshot["statements"]:
            conn.exec_driver_sql(statement)
        conn.execute(sa.text("INSERT INTO alembic_version (version_num) VALUES (:v)"), {"v": HEAD})
        conn.execute(
            sa.text("INSERT INTO store_meta (key, value) VALUES ('written_by', :v)"),
            {"v": __version__},
        )
    return True


def sqlite_schema(engine: Engine) -> list[str]:
    """The statements that make `engine`'s SQLite schema: each table, index, trigger and view
    as SQLite keeps it, in the order they can be made in (SQLite's own tables and the
    indexes it makes for a constraint are made with their table)."""
    with engine.connect() as conn:
        rows = conn.exec_driver_sql(
            "SELECT type, name, sql FROM sqlite_master WHERE sql IS NOT NULL "
            "AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\' ORDER BY rowid"
        ).all()
    ordered = sorted(rows, key=lambda row: _KINDS.index(row[0]))  # stable: rowid within a kind
    return [str(row[2]) for row in ordered]


def migrated_sqlite_schema() -> list[str]:
    """The schema the migrations make on a new SQLite database."""
    import tempfile

    with tempfile.TemporaryDirectory() as scratch:
        engine = db.create_engine(f"sqlite:///{Path(scratch) / 'schema.sqlite'}")
        try:
            _upgrade(engine)
            return sqlite_schema(engine)
        finally:
            engine.dispose()


def write_snapshot() -> None:
    """Write SNAPSHOT from the migrations: `python -m store.migrate` after adding one."""
    import json

    text = json.dumps({"revision": HEAD, "statements": migrated_sqlite_schema()}, indent=1)
    SNAPSHOT.write_text(text + "\n", encoding="utf-8")


def _upgrade(engine: Engine) -> None:
    from alembic import command
    from alembic.config import Config

    cfg = Config()
    # ConfigParser interpolates %: a directory name containing one must not break the upgrade.
    cfg.set_main_option("script_location", str(MIGRATIONS_DIR).replace("%", "%%"))
    # One write transaction (BEGIN IMMEDIATE on SQLite) around every step: Alembic sees an
    # external transaction and leaves it to us, so a failed step takes the earlier ones back
    # with it, and a second program opening the same old store waits for the lock and then
    # finds nothing left to do. The target is this program's HEAD, not the scripts' "head".
    with db.writer(engine).begin() as conn:
        cfg.attributes["connection"] = conn
        command.upgrade(cfg, HEAD)
        conn.execute(sa.text("DELETE FROM store_meta WHERE key = 'written_by'"))
        conn.execute(
            sa.text("INSERT INTO store_meta (key, value) VALUES ('written_by', :v)"),
            {"v": __version__},
        )


if __name__ == "__main__":
    write_snapshot()
