"""verify's and verify-package's problems as a program reads them: each a typed record whose
`seq`, `key_id` and `code` are fields (the message still says them for a person), in the
shape `boris schema` documents (`x-outputs.verify`)."""

from __future__ import annotations

import base64
import json
import re
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import sqlalchemy as sa
from cli_args import store_args
from test_archive import event_rows, fix_digests, read_members, set_events, write_package
from test_verify import _raw

from store import Actor, Store
from store import commands as c
from store import schema as t
from store.canonical import canonical_json
from store.cli import main as cli
from store.services import archive as ar
from store.services.verify_codes import CODE_OF_KIND, ProblemCode
from store.signing import SigningKey
from store.signing.trust import add_key, require

ROOT = Path(__file__).resolve().parent.parent
RITA = Actor(kind="person", id="rita")
BOT = Actor(kind="agent", id="bot")


def _signed_task(store: Store, tmp_path: Path) -> tuple[str, SigningKey, Path]:
    """A task the bot wrote under its own key, in a store whose root is rita's; and a keys
    file naming both."""
    rita, bot = SigningKey.generate(), SigningKey.generate()
    require(store, rita, RITA)
    add_key(store, rita, bot.public_raw, BOT)
    store.signer = bot
    tid = store.execute(c.CreateTask(title="T", owner="rita", objective="x"), BOT)
    store.execute(c.AddCriterion(task_id=tid, text="right"), BOT)
    store.execute(c.AddCriterion(task_id=tid, text="also right"), BOT)
    keys = tmp_path / "keys.txt"
    keys.write_text(
        f"{rita.key_id} person:rita {rita.public_text}\n{bot.key_id} agent:bot {bot.public_text}\n"
    )
    return tid, bot, keys


@pytest.fixture
def documented(capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    assert cli(["schema"]) == 0
    outputs: dict[str, Any] = json.loads(capsys.readouterr().out)["x-outputs"]
    return outputs


def _report(capsys: pytest.CaptureFixture[str], argv: list[str], schema: Any) -> dict[str, Any]:
    """A run that found problems: exit 3, the report in the refusal's details."""
    assert cli(argv) == 3
    report: dict[str, Any] = json.loads(capsys.readouterr().out)["error"]["details"]["report"]
    jsonschema.validate(report, schema)
    return report


def test_a_tampered_event_is_named_by_its_seq_and_code(
    store: Store, tmp_path: Path, capsys: pytest.CaptureFixture[str], documented: dict[str, Any]
) -> None:
    tid, _bot, _keys = _signed_task(store, tmp_path)
    with _raw(store, unguarded=True) as conn:
        (payload,) = conn.execute(
            "SELECT payload FROM events WHERE task_id = ? AND seq = 2", (tid,)
        ).fetchone()
        data = json.loads(payload)
        data["text"] = "something else"
        conn.execute(
            "UPDATE events SET payload = ? WHERE task_id = ? AND seq = 2",
            (canonical_json(data), tid),
        )
    report = _report(
        capsys,
        [*store_args(store), "verify", tid, "--no-remember", "--json"],
        documented["verify"],
    )
    (altered,) = [p for p in report["problems"] if p["kind"] == "event_hash"]
    assert (altered["seq"], altered["key_id"], altered["code"]) == (2, None, "chain")
    assert altered["message"].startswith("seq 2 ")


def test_a_bad_signature_is_named_by_its_key_and_code(
    store: Store, tmp_path: Path, capsys: pytest.CaptureFixture[str], documented: dict[str, Any]
) -> None:
    tid, bot, _keys = _signed_task(store, tmp_path)
    with store.engine.begin() as conn:
        seq, sig = conn.execute(
            sa.select(t.signatures.c.seq, t.signatures.c.signature)
            .where(t.signatures.c.task_id == tid)
            .order_by(t.signatures.c.seq.desc())
        ).first()  # type: ignore[misc]
        raw = bytearray(base64.b64decode(sig))
        raw[0] ^= 1
        conn.execute(
            sa.update(t.signatures)
            .where(t.signatures.c.task_id == tid, t.signatures.c.seq == seq)
            .values(signature=base64.b64encode(bytes(raw)).decode())
        )
    report = _report(
        capsys,
        [*store_args(store), "verify", tid, "--no-remember", "--json"],
        documented["verify"],
    )
    (bad,) = report["problems"]
    assert (bad["kind"], bad["seq"], bad["key_id"], bad["code"]) == (
        "bad_signature",
        seq,
        bot.key_id,
        "signature",
    )


def test_a_package_event_altered_is_refused_with_its_seq_and_code(
    store: Store, tmp_path: Path, capsys: pytest.CaptureFixture[str], documented: dict[str, Any]
) -> None:
    """Altered without re-chaining (the manifest's digests made to hold): the package is
    refused while it is read, and the refusal's finding carries the event's seq."""
    tid, _bot, keys = _signed_task(store, tmp_path)
    pkg = ar.export_task(store, tid, tmp_path / "task.tar.gz")
    members = read_members(pkg)
    rows = event_rows(members)
    data = json.loads(rows[2]["payload"])
    data["text"] = "something else"
    rows[2]["payload"] = canonical_json(data)
    set_events(members, rows, rechain=False)
    fix_digests(members)
    altered = write_package(tmp_path / "altered.tar.gz", members)

    argv = ["verify-package", str(altered), "--keys", str(keys), "--json"]
    (refused,) = _report(capsys, argv, documented["verify-package"])["problems"]
    assert (refused["kind"], refused["seq"], refused["code"]) == ("package_refused", 3, "chain")
    assert "event seq 3" in refused["message"]

    # Re-chained as a forger would: the chain holds, the bot's signature over it does not.
    set_events(members, rows, rechain=True)
    fix_digests(members)
    forged = write_package(tmp_path / "forged.tar.gz", members)
    argv = ["verify-package", str(forged), "--keys", str(keys), "--json"]
    (bad,) = _report(capsys, argv, documented["verify-package"])["problems"]
    assert (bad["kind"], bad["code"], bad["seq"]) == ("bad_signature", "signature", 3)
    assert bad["key_id"] == _bot.key_id


def test_a_clean_packages_signers_are_named_by_key(
    store: Store, tmp_path: Path, capsys: pytest.CaptureFixture[str], documented: dict[str, Any]
) -> None:
    tid, bot, keys = _signed_task(store, tmp_path)
    pkg = ar.export_task(store, tid, tmp_path / "task.tar.gz")
    assert cli(["verify-package", str(pkg), "--keys", str(keys), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)["result"]
    jsonschema.validate(report, documented["verify-package"])
    (signer,) = [i for i in report["info"] if i["kind"] == "signed_by"]
    assert (signer["key_id"], signer["code"]) == (bot.key_id, "signature")


def test_every_kind_verify_writes_has_a_code() -> None:
    """The kinds as the sources write them (verify, signatures, packages, team roles): each
    has its code, so no finding is printed without one."""
    # verify's checks, one module per domain (store/services/verify_checks).
    checks = sorted((ROOT / "store/services/verify_checks").glob("*.py"))
    sources = {
        **{
            str(p.relative_to(ROOT)): r'\.(?:problem|note)\(\s*"([a-z_]+)"'
            for p in checks
            if re.search(r'\.(?:problem|note)\(\s*"', p.read_text())
        },
        "store/signing/check.py": r'SigFinding\(\s*[\w"]+,\s*"([a-z_]+)"',
        "store/services/archive/offline.py": r'Finding\(\s*[\w.]+,\s*"([a-z_]+)"',
    }
    written = set()
    for path, pattern in sources.items():
        found = re.findall(pattern, (ROOT / path).read_text(), flags=re.S)
        assert found, path
        written.update(found)
    written |= {"role_could_not_write"}  # RoleFinding's, in verify()
    assert written - set(CODE_OF_KIND) == set()
    assert set(CODE_OF_KIND.values()) == set(ProblemCode)
