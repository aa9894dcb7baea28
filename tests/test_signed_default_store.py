"""The one rule for who signs (store.signing.keys.signer_for), on the store `boris init` makes.

The default store is signed: `Store.open()` must open it as the CLI does (BORIS_STORE, else
the user data directory) and sign with BORIS_KEY; a person's own key is theirs alone, never
an agent's; and a refusal is one line naming the next step, which, run as written, works.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from signed_default import PERSON, ROOT, Signed, one_line_refusal, signed_default_store

from store.commands.core import AddCriterion, CreateTask
from store.model import Actor
from store.signing.keys import load_or_create, person_key_path, signer_for
from store.signing.seal import SignatureRefused
from store.store import Store

AGENT = Actor(kind="agent", id="claude")
RITA = Actor(kind="person", id="rita")


@pytest.fixture(scope="module")
def signed(tmp_path_factory: pytest.TempPathFactory) -> Signed:
    """One default store for the module (its tests use tasks and agents of their own)."""
    return signed_default_store(tmp_path_factory.mktemp("signed") / "home", "agent:claude")


def new_task(task_id: str) -> CreateTask:
    return CreateTask(task_id=task_id, title="T", owner="rita", objective="o")


def test_the_rule_given_then_boris_key_then_a_persons_own_and_never_an_agents_borrowed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    given, env = load_or_create(tmp_path / "given.pem"), load_or_create(tmp_path / "env.pem")
    rita_file = person_key_path("rita")
    # Unsigned store, nothing given: nobody signs, and no key file is made for it.
    assert signer_for(RITA, store_signed=False) is None and not rita_file.exists()
    # A person on a signed store: their own key, made on first use (asked only then).
    mine = signer_for(RITA, store_signed=lambda: True)
    assert mine is not None and mine.path == rita_file
    # An agent: never a config dir's key nor a person's, signed store or not.
    assert signer_for(AGENT, store_signed=True) is None
    monkeypatch.setenv("BORIS_KEY", str(env.path))
    for actor in (AGENT, RITA, None):
        chosen = signer_for(actor, store_signed=True)
        assert chosen is not None and chosen.key_id == env.key_id  # BORIS_KEY before own
        by_path = signer_for(actor, str(given.path), store_signed=True)
        assert by_path is not None and by_path.key_id == given.key_id  # given before all
        assert signer_for(actor, given) is given


def test_store_open_with_no_arguments_opens_the_default_store_and_signs_with_boris_key(
    signed: Signed, monkeypatch: pytest.MonkeyPatch
) -> None:
    signed.use_here(monkeypatch)
    agent_key = load_or_create(signed.key)
    with Store.open() as store:  # the CLI's store: the user data directory's
        assert store.location.directory == signed.store_dir
        assert store.signer is not None and store.signer.key_id == agent_key.key_id
        store.execute(new_task("by-the-agent"), AGENT)
    monkeypatch.setenv("BORIS_STORE", str(signed.store_dir))
    with Store.open(create=False) as store:  # BORIS_STORE, as the CLI
        assert store.location.directory == signed.store_dir
        # A person acting in this process signs with BORIS_KEY's key too (the rule's
        # order): refused, saying how a person's own key is used instead.
        with pytest.raises(SignatureRefused) as refused:
            store.execute(AddCriterion(task_id="by-the-agent", text="x"), RITA)
        assert refused.value.code == "key_names_another_actor"
        assert "env -u BORIS_KEY" in str(refused.value)
        monkeypatch.delenv("BORIS_KEY")  # rita's own shell
        store.signer = None
        store.sign_as(RITA)  # the window's way: a person's own key
        assert store.signer is not None and store.signer.path == person_key_path("rita")
        store.execute(AddCriterion(task_id="by-the-agent", text="x"), RITA)
        store.sign_as(AGENT)  # and back: never rita's key for the agent
        assert store.signer is None
    signed.tasks.append("by-the-agent")
    signed.assert_signed()


def test_a_refusal_names_the_next_step_and_running_it_as_written_works(
    signed: Signed, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    newcomer = Actor(kind="agent", id="newcomer")
    signed.use_here(monkeypatch, key=False)
    with Store.open(signed.store_dir) as store:
        assert store.signer is None
        store.sign_as(newcomer)
        assert store.signer is None  # rita's key exists here; it is never the agent's
        with pytest.raises(SignatureRefused) as refused:
            store.check_signature(newcomer)
        assert refused.value.code == "signature_required"
        message = str(refused.value)
        one_line_refusal(message, "agent:newcomer")
        # A person writing from Python without their key: told how.
        with pytest.raises(SignatureRefused, match=r"store\.sign_as\(actor\)"):
            store.execute(new_task("by-rita"), RITA)

    # The step as written, in the person's shell (`boris` on its PATH).
    step = message.split(" — ")[1]
    assert step.startswith("boris keys new ~/.config/boris/keys/agent-newcomer.pem && ")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "boris").write_text(f'#!/bin/sh\nexec {sys.executable} -m store.cli "$@"\n')
    (bin_dir / "boris").chmod(0o755)
    env = signed.env()
    env["PATH"] = f"{bin_dir}:{env['PATH']}"
    done = subprocess.run(["sh", "-c", step], env=env, cwd=ROOT, capture_output=True)
    assert done.returncode == 0, done.stderr.decode()
    key_file = signed.home / ".config" / "boris" / "keys" / "agent-newcomer.pem"
    monkeypatch.setenv("BORIS_KEY", str(key_file))  # "then set BORIS_KEY to that file"
    with Store.open(signed.store_dir) as store:
        store.check_signature(newcomer)
        store.execute(new_task("by-the-newcomer"), newcomer)

    # A key nobody trusted: the `boris keys add` line with its path and actor.
    stranger = tmp_path / "stranger.pem"
    monkeypatch.setenv("BORIS_KEY", str(stranger))
    with Store.open(signed.store_dir) as store, pytest.raises(SignatureRefused) as refused:
        store.execute(new_task("by-a-stranger"), newcomer)
    assert refused.value.code == "unknown_key"
    assert f"boris keys add {stranger} --for agent:newcomer --actor {PERSON}" in str(refused.value)


def test_the_cli_refuses_an_agent_without_a_key_in_one_line(signed: Signed) -> None:
    argv = ["--actor", "agent:claude", "create-task", "--id", "t", "--title", "T"]
    argv += ["--owner", "rita", "--objective", "o"]
    done = signed.boris(*argv)
    assert done.returncode == 1
    (line,) = done.stderr.decode().splitlines()
    one_line_refusal(line, "agent:claude")
    assert line.startswith("boris: store ")
    # Given its key (BORIS_KEY, --key): recorded, signed.
    signed.ok(*argv, agent=True)
    signed.ok(*argv[:4], "t2", *argv[5:], "--key", str(signed.key))
    signed.tasks += ["t", "t2"]
    signed.assert_signed()
