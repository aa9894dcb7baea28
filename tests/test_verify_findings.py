"""verify's findings as a program reads them: the seq, key and blob concerned as fields (the
message still names them); the witness written where the directory does not exist yet; and a
package's carried blob never reported absent by verify-package."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from cli_args import store_args

from store import Actor, Store
from store import commands as c
from store.cli import main as cli
from store.commands.effects import PlanEffect
from store.services import archive as ar
from store.services import verified_heads
from store.services.verify import verify
from store.signing import SigningKey, read_keys_file
from store.signing.keyring import Keyring
from store.signing.trust import add_key, require

ROOT = Path(__file__).resolve().parent.parent
RITA = Actor(kind="person", id="rita")
BOT = Actor(kind="agent", id="bot")


def test_a_finding_carries_its_seq_and_key_as_fields(
    store: Store, ws: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rita, bot = SigningKey.generate(), SigningKey.generate()
    require(store, rita, RITA)
    add_key(store, rita, bot.public_raw, BOT)
    store.signer = bot
    tid = store.execute(c.CreateTask(title="T", owner="rita", objective="x"), BOT)
    store.execute(c.AddCriterion(task_id=tid, text="c"), BOT)

    # Against a keys file that knows only rita: every write of the bot is by an unknown key.
    keys = tmp_path / "keys.txt"
    keys.write_text(f"{rita.key_id} person:rita {rita.public_text}\n")
    report = verify(store, tid, keys=read_keys_file(keys), remember=False)
    unknown = [p for p in report.problems if p.kind == "unknown_key"]
    assert [p.seq for p in unknown] == [1, 2]
    assert {p.key_id for p in unknown} == {bot.key_id}
    assert all(f"seq {p.seq}" in p.message and bot.key_id in p.message for p in unknown)

    assert cli([*store_args(store), "verify", tid, "--keys", str(keys), "--json"]) == 3
    answer = json.loads(capsys.readouterr().out)
    listed = answer["error"]["details"]["report"]["problems"]
    assert [(p["kind"], p["seq"], p["key_id"]) for p in listed] == [
        ("unknown_key", 1, bot.key_id),
        ("unknown_key", 2, bot.key_id),
    ]

    # A finding about an event without a key: the head verify remembered is gone.
    assert verify(store, tid).ok
    witness = verified_heads.witness_path(store.location)
    data = json.loads(witness.read_text())
    data["tasks"][tid]["seq"] = 9
    witness.write_text(json.dumps(data))
    (gone,) = verify(store, tid, remember=False).problems
    assert (gone.kind, gone.seq, gone.key_id) == ("head_rolled_back", 9, None)
    assert gone.to_json()["seq"] == 9


def test_verify_creates_the_directory_of_its_witness(
    store: Store, tmp_path: Path, ws: Path
) -> None:
    """A machine that never used this database: the local directory (the default data
    directory, under XDG_DATA_HOME, a team store's cache) does not exist yet."""
    tid = store.execute(c.CreateTask(title="T", owner="rita", objective="x"), BOT)
    url = store.location.url
    fresh = tmp_path / "fresh-machine"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("BORIS_", "XDG_"))}
    env.update(
        PYTHONPATH=str(ROOT),
        XDG_DATA_HOME=str(fresh / "data"),
        XDG_CACHE_HOME=str(fresh / "cache"),
        XDG_CONFIG_HOME=str(fresh / "config"),
    )
    done = subprocess.run(
        [sys.executable, "-m", "store.cli", "verify", "--url", url, "--json"],
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)["result"]
    assert result["remember_error"] is None
    assert result["remembered"] == [tid]
    written = list((fresh / "data" / "boris").glob("verified-heads-*.json"))
    assert len(written) == 1 and tid in json.loads(written[0].read_text())["tasks"]


def test_verify_package_does_not_call_a_carried_blob_absent(
    store: Store, ws: Path, tmp_path: Path
) -> None:
    tid = store.execute(
        c.CreateTask(title="T", owner="rita", objective="x", scope_paths=[str(ws)]), BOT
    )
    store.execute(
        PlanEffect(
            task_id=tid,
            target=str(ws / "out.md"),
            consequence="write out.md",
            content=c.Content(text="the intended text"),
        ),
        BOT,
    )
    # The store itself has the intended content: verify notes nothing absent.
    assert [i.kind for i in verify(store, tid).info if i.kind == "blob_absent"] == []
    pkg = ar.export_task(store, tid, tmp_path / "task.tar.gz")
    report = ar.verify_package(pkg, Keyring())
    assert [i.message for i in report.info if i.kind == "blob_absent"] == []
    assert [p.kind for p in report.problems] == ["unsigned_package"]
