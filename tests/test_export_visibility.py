"""Exports by visibility (issue 35 part D): a private note's text stays out of a package
unless asked for (`--include private`), the manifest names the classes carried and the notes
withheld, the package imports and verifies either way, and no package carries credentials
or live authority (private keys, a live lease). Both engines, the real CLI.
"""

from __future__ import annotations

import base64
import gzip
import json
import os
import subprocess
import sys
import tarfile
import uuid
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives import serialization
from test_signing import pem

from store import Actor, Store, rules
from store import commands as c
from store.signing.keys import SigningKey, person_key_path
from store.signing.trust import add_key, require

ROOT = Path(__file__).resolve().parent.parent
AGENT = Actor(kind="agent", id="drafter-7")
RITA = Actor(kind="person", id="rita")
TID = "report"


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("BORIS_")}
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    return env


def _boris(where: list[str], *argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "store.cli", *argv, *where],
        env=_env(),
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )


def _where(store: Store) -> list[str]:
    args = ["--store", str(store.location.directory)]
    return args if store.location.sqlite_file else [*args, "--url", store.location.url]


def _members(package: Path) -> dict[str, bytes]:
    with gzip.open(package) as gz, tarfile.open(fileobj=gz, mode="r|") as tar:
        out = {}
        for m in tar:
            f = tar.extractfile(m)
            assert f is not None
            out[m.name] = f.read()
        return out


class Noted:
    def __init__(self, store: Store, ws: Path) -> None:
        mark = uuid.uuid4().hex
        self.private_text = f"the reviewer's private doubt {mark}"
        self.shared_text = f"a note for everyone {mark}"
        store.execute(
            c.CreateTask(
                task_id=TID, title="Report", owner="rita", objective="o", scope_paths=[str(ws)]
            ),
            AGENT,
        )
        store.execute(c.RecordNote(task_id=TID, text=self.shared_text), AGENT)
        done = _boris(
            _where(store), "--actor", "person:rita", "note", TID, self.private_text, "--private"
        )
        assert done.returncode == 0, done.stderr
        self.private_seq = store.events(TID)[-1]["seq"]
        # An agent still holds the task's lease when it is exported.
        store.execute(c.AcquireLease(task_id=TID, session_id="s1", ttl_seconds=3600), AGENT)


@pytest.fixture
def noted(store: Store, ws: Path) -> Noted:
    return Noted(store, ws)


def _export(store: Store, out: Path, *extra: str) -> dict[str, Any]:
    done = _boris(_where(store), "--json", "export", TID, str(out), *extra)
    assert done.returncode == 0, done.stderr
    result: dict[str, Any] = json.loads(done.stdout)["result"]
    return result


def _import_and_verify(package: Path, tmp: Path) -> list[str]:
    where = ["--store", str(tmp)]
    done = _boris(where, "--actor", "person:ida", "import", str(package))
    assert done.returncode == 0, done.stderr
    checked = _boris(where, "--json", "verify")
    assert checked.returncode == 0, checked.stdout
    assert json.loads(checked.stdout)["result"]["ok"]
    return [where[1]]


def test_a_private_notes_text_stays_out_of_an_export_and_the_package_still_verifies(
    store: Store, noted: Noted, tmp_path: Path
) -> None:
    result = _export(store, tmp_path / "p.tar.gz")
    assert result["visibility"] == {
        "carried": ["shared"],
        "withheld": {"private": [noted.private_seq]},
    }
    members = _members(tmp_path / "p.tar.gz")
    everything = b"".join(members.values())
    assert noted.private_text.encode() not in everything
    assert noted.shared_text.encode() in members["events.jsonl"]
    manifest = json.loads(members["manifest.json"])
    assert manifest["visibility"]["carried"] == ["shared"]
    # The private note's event stays (it holds only the digest): the chain is whole.
    types = [json.loads(line)["type"] for line in members["events.jsonl"].splitlines()]
    assert types.count("note.private") == 1

    _import_and_verify(tmp_path / "p.tar.gz", tmp_path / "here")
    with Store.open(tmp_path / "here", create=False) as here:
        note = next(e for e in here.events(TID) if e["type"] == "note.private")
        assert not here.blobs.has(note["payload"]["digest"])  # withheld, not lost


def test_include_private_carries_the_text_and_it_imports(
    store: Store, noted: Noted, tmp_path: Path
) -> None:
    result = _export(store, tmp_path / "all.tar.gz", "--include", "private")
    assert result["visibility"] == {"carried": ["shared", "private"], "withheld": {"private": []}}
    everything = b"".join(_members(tmp_path / "all.tar.gz").values())
    assert noted.private_text.encode() in everything
    _import_and_verify(tmp_path / "all.tar.gz", tmp_path / "here")
    with Store.open(tmp_path / "here", create=False) as here:
        note = next(e for e in here.events(TID) if e["type"] == "note.private")
        assert here.blobs.read(note["payload"]["digest"]).decode() == noted.private_text


def test_no_package_carries_credentials_or_live_authority(
    store: Store, ws: Path, tmp_path: Path
) -> None:
    rita, bot = SigningKey.generate(), SigningKey.generate()
    require(store, rita, RITA)
    add_key(store, rita, bot.public_raw, AGENT)
    store.signer = bot
    pem(rita, person_key_path("rita"))  # Rita's own key, where the CLI signs her note with it
    Noted(store, ws)
    package = tmp_path / "p.tar.gz"
    result = _export(store, package, "--include", "private")
    assert result["visibility"]["carried"] == ["shared", "private"]
    everything = b"".join(_members(package).values())
    for key in (rita, bot):
        raw = key.private.private_bytes(
            serialization.Encoding.Raw,
            serialization.PrivateFormat.Raw,
            serialization.NoEncryption(),
        )
        for form in (raw, base64.b64encode(raw), raw.hex().encode()):
            assert form not in everything
        assert b"PRIVATE KEY" not in everything
    ring = json.loads(_members(package)["keyring.json"])
    assert {e["public_key"] for e in ring["entries"]} <= {rita.public_text, bot.public_text}

    # The agent's live lease arrives ended: whoever held it there holds nothing here.
    here = tmp_path / "here"
    done = _boris(
        ["--store", str(here)],
        "--actor",
        "person:ida",
        "import",
        str(package),
        "--keys",
        str(_keys(tmp_path, rita, bot)),
    )
    assert done.returncode == 0, done.stderr
    with Store.open(here, create=False) as target:
        lease = target.task(TID)["lease"]
        assert lease["standing"] == rules.LeaseStanding.ENDED
        assert lease["ended_by"]["kind"] == "system"


def _keys(tmp: Path, rita: SigningKey, bot: SigningKey) -> Path:
    path = tmp / "keys.txt"
    path.write_text(
        f"{rita.key_id} person:rita {rita.public_text}\n{bot.key_id} agent:drafter-7 {bot.public_text}\n"
    )
    return path
