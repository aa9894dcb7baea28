"""A default store as a newcomer has one, for tests/test_signed_default_*.py.

`boris init --actor person:rita` run for real (no --store, no --no-require-signatures) with
HOME, XDG_CONFIG_HOME and XDG_DATA_HOME inside the test's tmp_path: the store is the user
data directory's, it requires signatures, and rita's own key (the user config directory's)
is its root. The agent's key is made and trusted with the real `boris keys new` and
`boris keys add`, and handed to the agent as BORIS_KEY, as the README says.

The person decides from a process of their own, their shell: no BORIS_KEY there (it is the
agent's), so `boris approve` signs with rita's own key by itself.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
PERSON = "person:rita"


@dataclass
class Signed:
    """The default signed store of a home in tmp_path, and the agent's trusted key."""

    home: Path
    agent: str
    #: The store's directory: the user data directory's `boris`.
    store_dir: Path
    #: The agent's key file, trusted for `agent` by rita.
    key: Path
    #: Task ids made with `task`.
    tasks: list[str] = field(default_factory=list)

    def env(self, *, agent: bool = False, **extra: str) -> dict[str, str]:
        """A process's environment in this home: the person's shell, or with `agent` the
        agent's (BORIS_KEY, BORIS_ACTOR). Nothing of the test runner's BORIS_* leaks in."""
        env = {k: v for k, v in os.environ.items() if not k.startswith("BORIS_")}
        env.update(
            HOME=str(self.home),
            XDG_CONFIG_HOME=str(self.home / ".config"),
            XDG_DATA_HOME=str(self.home / ".local" / "share"),
            PYTHONPATH=str(ROOT) + os.pathsep + env.get("PYTHONPATH", ""),
        )
        if agent:
            env.update(BORIS_KEY=str(self.key), BORIS_ACTOR=self.agent)
        env.update(extra)
        return env

    def boris(
        self, *argv: str, agent: bool = False, stdin: bytes = b"", **extra: str
    ) -> subprocess.CompletedProcess[bytes]:
        """The real `boris` in a process of its own, on the default store (no --store)."""
        return subprocess.run(
            [sys.executable, "-m", "store.cli", *argv],
            env=self.env(agent=agent, **extra),
            cwd=ROOT,
            input=stdin,
            capture_output=True,
            timeout=120,
        )

    def ok(self, *argv: str, agent: bool = False, **extra: str) -> str:
        done = self.boris(*argv, agent=agent, **extra)
        assert done.returncode == 0, done.stderr.decode()
        return done.stdout.decode()

    def read(self, *argv: str) -> Any:
        return json.loads(self.ok(*argv, "--json"))["result"]

    def task(self, task_id: str, destination: str) -> str:
        """A task the person sets up (signed with rita's own key, by itself)."""
        self.ok(
            "--actor",
            PERSON,
            "create-task",
            "--id",
            task_id,
            "--title",
            "Signed by default",
            "--owner",
            "rita",
            "--objective",
            "the agent asks, a person decides",
            "--destination",
            destination,
        )
        self.tasks.append(task_id)
        return task_id

    def trust_person(self, person: str) -> Path:
        """Another person's own key (`boris keys new`, made as they would) that rita trusts
        for them (`boris keys add --for`): its file, beside the home's."""
        key = self.home / f"{person}.pem"
        self.ok("keys", "new", str(key), "--actor", f"person:{person}")
        self.ok("keys", "add", str(key), "--for", f"person:{person}", "--actor", PERSON)
        return key

    def approve(self, task_id: str, approval_id: str, *rest: str) -> None:
        """Rita approves from her own shell: no BORIS_KEY, her own key from her config dir."""
        self.ok("--actor", PERSON, "approve", task_id, approval_id, *rest)

    def pending(self, task_id: str) -> list[dict[str, Any]]:
        return [r for r in self.read("approvals", task_id) if r["state"] == "pending"]

    def effects(self, task_id: str) -> list[dict[str, Any]]:
        return list(self.read("effects", task_id))

    def assert_signed(self) -> None:
        """Every write of every task is signed by a trusted key, rita's and the agent's:
        `boris verify` finds no unsigned tail, no unknown key, no key of another actor."""
        report = self.boris("verify", "--json")
        assert report.returncode == 0, report.stdout.decode() + report.stderr.decode()
        result = json.loads(report.stdout)["result"]
        assert result["signed"] and set(self.tasks) <= set(result["tasks"])

    def use_here(self, monkeypatch: pytest.MonkeyPatch, *, key: bool = True) -> None:
        """This test process as the agent's: this home, BORIS_KEY when `key` (else none)."""
        for name, value in self.env().items():
            if name in ("HOME", "XDG_CONFIG_HOME", "XDG_DATA_HOME"):
                monkeypatch.setenv(name, value)
        if key:
            monkeypatch.setenv("BORIS_KEY", str(self.key))
        else:
            monkeypatch.delenv("BORIS_KEY", raising=False)


def signed_default_store(home: Path, agent: str) -> Signed:
    """`boris init`, then the agent's key made and trusted, as the README's setup runs."""
    home.mkdir(parents=True, exist_ok=True)
    store_dir = home / ".local" / "share" / "boris"
    key = home / ".config" / "boris" / "keys" / f"{agent.replace(':', '-')}.pem"
    signed = Signed(home=home, agent=agent, store_dir=store_dir, key=key)
    said = signed.ok("init", "--actor", PERSON)
    assert "(signatures required)" in said and str(store_dir) in said
    signed.ok("keys", "new", str(key))
    signed.ok("keys", "add", str(key), "--for", agent, "--actor", PERSON)
    return signed


def signed_for_window(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, agent: str) -> Signed:
    """`signed_default_store` in tmp_path/home, and the window's settings there with rita as
    its reviewer: a test that opens the window on the store an agent writes."""
    monkeypatch.setenv("BORIS_DESKTOP_SETTINGS", str(tmp_path / "settings.ini"))
    from boris_desktop import settings

    settings.set_reviewer("Rita Reviewer", "rita")
    return signed_default_store(tmp_path / "home", agent)


def one_line_refusal(message: str, agent: str) -> None:
    """The refusal of an agent without a key: one line, the next step that works in it."""
    assert "\n" not in message.strip(), message
    assert "Traceback" not in message
    assert f"requires signatures and {agent} has no key here" in message, message
    assert "boris keys new " in message, message
    assert f"--for {agent} --actor {PERSON}" in message, message
    assert "set BORIS_KEY to that file" in message, message
