"""Every `boris keys` command with --json: one JSON object on stdout, in the shape `boris
schema` documents for it (`x-outputs`); a refusal one line on stderr with its exit code,
and with --json the refusal object on stdout."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from cli_args import store_args

from store import Store
from store.cli import main as cli


@pytest.fixture
def outputs(capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    assert cli(["schema"]) == 0
    documented: dict[str, Any] = json.loads(capsys.readouterr().out)["x-outputs"]
    return documented


def _one_object(capsys: pytest.CaptureFixture[str], argv: list[str]) -> Any:
    assert cli(argv) == 0, capsys.readouterr().err
    out, err = capsys.readouterr()
    assert err == ""
    value = json.loads(out)  # the whole of stdout is one JSON value
    assert isinstance(value, dict) and value["ok"] is True
    return value["result"]


def _refused(capsys: pytest.CaptureFixture[str], argv: list[str], code: int) -> dict[str, Any]:
    assert cli(argv) == code
    out, err = capsys.readouterr()
    assert err.count("\n") == 1 and err.startswith("boris: ")
    answer: dict[str, Any] = json.loads(out)
    assert answer["ok"] is False and answer["error"]["exit_code"] == code
    return answer["error"]


def test_each_keys_command_prints_its_documented_object(
    store: Store,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    outputs: dict[str, Any],
) -> None:
    st = store_args(store)
    rita = [*st, "--actor", "person:rita", "--json"]

    def check(command: str, argv: list[str]) -> Any:
        result = _one_object(capsys, argv)
        jsonschema.validate(result, outputs[command])
        return result

    empty = check("keys", [*st, "keys", "--json"])
    assert empty == {"signatures_required": False, "entries": [], "problems": []}
    trusted = check("keys trust", [*rita, "keys", "trust", "--require"])
    assert (trusted["actor"], trusted["required"]) == ("person:rita", True)

    agent = tmp_path / "bot.pem"
    made = check("keys new", ["keys", "new", str(agent), "--json"])
    assert agent.exists() and made["path"] == str(agent)
    added = check("keys add", [*rita, "keys", "add", str(agent), "--for", "agent:bot"])
    assert (added["action"], added["key_id"], added["actor_id"]) == ("added", made["key_id"], "bot")

    listed = check("keys list", [*st, "keys", "list", "--json"])
    assert [e["key_id"] for e in listed["entries"]] == [trusted["key_id"], made["key_id"]]
    assert listed["signatures_required"] is True
    mine = check("keys export", [*rita, "keys", "export"])
    assert [k["key_id"] for k in mine["keys"]] == [trusted["key_id"]]

    revoked = check("keys revoke", [*rita, "keys", "revoke", made["key_id"]])
    assert (revoked["action"], revoked["key_id"]) == ("revoked", made["key_id"])
    every = check("keys export", [*rita, "keys", "export", "--all"])
    by_id = {k["key_id"]: k for k in every["keys"]}
    assert by_id[made["key_id"]]["revoked_at"] == revoked["at"]
    assert by_id[made["key_id"]]["line"].endswith(f"revoked={revoked['at']}")


def test_keys_refusals_are_one_line_with_their_exit_code(
    store: Store, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    st = store_args(store)
    rita = [*st, "--actor", "person:rita", "--json"]
    assert cli([*rita, "keys", "trust"]) == 0
    capsys.readouterr()

    # Refused by the rules: no such key in the keyring (exit 1).
    assert _refused(capsys, [*rita, "keys", "revoke", "0" * 32], 1)["category"] == "refused"
    # Not found: a key file that is not there (exit 4).
    missing = str(tmp_path / "nowhere.pem")
    error = _refused(capsys, [*rita, "keys", "add", missing, "--for", "agent:x"], 4)
    assert error["code"] == "key_not_found" and missing in error["message"]
    # Usage: an agent changing the keyring, a command missing its argument (exit 2).
    bot = [*st, "--actor", "agent:bot", "--json"]
    assert _refused(capsys, [*bot, "keys", "export"], 2)["category"] == "usage"
    assert _refused(capsys, [*rita, "keys", "revoke"], 2)["code"] == "usage"
    # Not found: no store there (exit 4), whichever keys command reads it.
    nowhere = ["--store", str(tmp_path / "none"), "--json"]
    assert _refused(capsys, [*nowhere, "keys", "list"], 4)["code"] == "store_missing"
