"""`boris init && boris demo` on a new store (which requires signatures): the demo's actors
sign with keys of their own, trusted by the person who ran it; and the empty window's
"load the demo tasks" offer does the same as its reviewer (issue 32)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import pytest
from test_desktop_actions import WAIT_MS

from store import Store

BORIS = Path(sys.executable).with_name("boris")


def _boris(env: dict[str, str], *argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(BORIS), *argv], capture_output=True, text=True, env=env)


def _env(store_dir: Path, store_url: str | None) -> dict[str, str]:
    env = {**os.environ, "BORIS_STORE": str(store_dir), "BORIS_ACTOR": "person:me"}
    if store_url:
        env["BORIS_STORE_URL"] = store_url
    return env


def test_init_then_demo_works_on_a_new_store(store_dir: Path, store_url: str | None) -> None:
    env = _env(store_dir, store_url)
    init = _boris(env, "init")
    assert init.returncode == 0, init.stderr
    assert "signatures required" in init.stdout
    demo = _boris(env, "demo")
    assert demo.returncode == 0, demo.stderr
    assert demo.stdout.strip() == "demo tasks: guide, note"
    again = _boris(env, "demo")  # the keys are trusted once; a second demo adds tasks only
    assert again.returncode == 0, again.stderr
    listed = json.loads(_boris(env, "--json", "keys", "list").stdout)
    actors = [e["actor_kind"] + ":" + e["actor_id"] for e in listed["result"]["entries"]]
    assert sorted(actors) == [
        "agent:drafter-7",
        "agent:drafter-7b",
        "person:maria",
        "person:me",
    ]
    keys = store_dir / "demo-workspace" / "keys"
    assert (keys / "agent-drafter-7.pem").stat().st_mode & 0o077 == 0
    # Every event the demo wrote is signed by the key of the actor it names.
    shown = json.loads(_boris(env, "--json", "show", "note").stdout)["result"]
    assert shown["signatures"]["signed"] and shown["signatures"]["unsigned_after"] is None


def test_demo_without_a_trusted_person_says_what_to_do(
    store_dir: Path, store_url: str | None
) -> None:
    env = _env(store_dir, store_url)
    assert _boris(env, "init").returncode == 0
    del env["BORIS_ACTOR"]
    nobody = _boris(env, "demo")
    assert nobody.returncode == 1
    assert "run `boris demo --actor person:ID` as a person the store trusts" in nobody.stderr
    stranger = _boris({**env, "BORIS_ACTOR": "person:eve"}, "demo")
    assert stranger.returncode == 1
    assert "it does not trust the key" in stranger.stderr
    assert "nothing was written" in stranger.stderr
    assert _boris({**env, "BORIS_ACTOR": "person:me"}, "tasks").stdout.strip() == "(no tasks)"


@pytest.fixture
def reviewer_me(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BORIS_DESKTOP_SETTINGS", str(tmp_path / "settings.ini"))
    from boris_desktop import settings

    settings.set_reviewer("Me", "me")


def test_the_empty_windows_demo_offer_works_on_a_new_signed_store(
    store_dir: Path, store_url: str | None, reviewer_me: None, qtbot
) -> None:  # type: ignore[no-untyped-def]
    from boris_desktop.main_window import MainWindow

    env = _env(store_dir, store_url)
    assert _boris(env, "init").returncode == 0
    store = Store.open(store_dir, url=store_url, create=False)
    window = MainWindow(store)
    qtbot.addWidget(window)
    qtbot.waitUntil(
        lambda: window.empty_button.isVisible() or window.empty_button.isEnabled(), timeout=WAIT_MS
    )
    window.empty_button.click()
    qtbot.waitUntil(lambda: window.inbox.rowCount() == 2, timeout=20000)
    assert sorted(store.task_ids()) == ["guide", "note"]
    live = window.live
    window.close()
    if live is not None:
        assert live.join(5)  # its listener has closed its server connection
    # The window's last reads finish before the store closes.
    from PySide6.QtCore import QThreadPool

    QThreadPool.globalInstance().waitForDone(10_000)
    store.close()


# --- a new demo store is made as `boris init` makes one (issue 39) ----------------------------


def _actors(env: dict[str, str]) -> tuple[bool, list[str]]:
    listed = json.loads(_boris(env, "--json", "keys", "list").stdout)["result"]
    actors = [e["actor_kind"] + ":" + e["actor_id"] for e in listed["entries"]]
    return listed["signatures_required"], sorted(actors)


def test_demo_on_a_new_store_makes_it_signed_as_init_would(
    store_dir: Path, store_url: str | None
) -> None:
    env = _env(store_dir, store_url)  # no `boris init`: the demo makes the store
    demo = _boris(env, "demo")
    assert demo.returncode == 0, demo.stderr
    required, actors = _actors(env)
    assert required
    assert actors == ["agent:drafter-7", "agent:drafter-7b", "person:maria", "person:me"]
    # The root is the person's own key, from their config directory (XDG_CONFIG_HOME).
    entries = json.loads(_boris(env, "--json", "keys", "list").stdout)["result"]["entries"]
    assert (entries[0]["actor_id"], entries[0]["signer_key_id"]) == ("me", entries[0]["key_id"])
    shown = json.loads(_boris(env, "--json", "show", "guide").stdout)["result"]
    assert shown["signatures"]["signed"] and shown["signatures"]["unsigned_after"] is None


def test_the_walkthroughs_step_5_runs_as_written_on_the_demo_store(
    store_dir: Path, store_url: str | None
) -> None:
    """The agent renders the guide again (the demo's render.sh) and records the lost log,
    signing with its key from demo-workspace/keys/; without the key it is refused."""
    env = _env(store_dir, store_url)
    assert _boris(env, "demo").returncode == 0
    ws = store_dir / "demo-workspace" / "reference-guide"
    assert not (ws / "out" / "build.log").exists()  # lost with its blob
    render = subprocess.run(
        ["sh", "demo-workspace/reference-guide/render.sh"],
        cwd=store_dir,
        capture_output=True,
        text=True,
    )
    assert render.returncode == 0, render.stderr
    log = (ws / "out" / "build.log").read_text()
    assert log.startswith("render guide.md -> guide.html\n6 numbered sections") and "OK" in log
    record = [
        "--store",
        ".",
        "--actor",
        "agent:drafter-7",
        "record-artifact",
        "guide",
        "build.log",
        "--id",
        "build-log",
        "--role",
        "log",
        "--file",
        "demo-workspace/reference-guide/out/build.log",
    ]
    agent = {k: v for k, v in env.items() if k not in ("BORIS_STORE", "BORIS_ACTOR")}
    unsigned = subprocess.run(
        [str(BORIS), *record], capture_output=True, text=True, env=agent, cwd=store_dir
    )
    assert unsigned.returncode == 1, unsigned.stderr
    keyed = subprocess.run(
        [str(BORIS), *record[:4], "--key", "demo-workspace/keys/agent-drafter-7.pem", *record[4:]],
        capture_output=True,
        text=True,
        env=agent,
        cwd=store_dir,
    )
    assert keyed.returncode == 0, keyed.stderr
    shown = json.loads(_boris(env, "--json", "show", "guide").stdout)["result"]
    build = next(a for a in shown["artifacts"] if a["artifact_id"] == "build-log")
    assert build["current_version"] == 2
    assert not [p for p in shown["problems"] if p["id"] == "build-log"]


def test_an_unsigned_store_by_choice_stays_unsigned(store_dir: Path, store_url: str | None) -> None:
    env = _env(store_dir, store_url)
    assert _boris(env, "init", "--no-require-signatures").returncode == 0
    assert _boris(env, "demo").returncode == 0
    assert _actors(env) == (False, [])


def test_demo_no_require_signatures_leaves_a_new_store_unsigned(
    store_dir: Path, store_url: str | None
) -> None:
    env = _env(store_dir, store_url)
    assert _boris(env, "demo", "--no-require-signatures").returncode == 0
    assert _actors(env) == (False, [])
    assert _boris(env, "demo").returncode == 0  # said so: a second demo leaves it so
    assert _actors(env) == (False, [])


def test_demo_as_an_agent_on_a_new_store_writes_nothing(
    store_dir: Path, store_url: str | None
) -> None:
    env = {**_env(store_dir, store_url), "BORIS_ACTOR": "agent:drafter-7"}
    done = _boris(env, "demo")
    assert done.returncode == 1
    assert "the demo makes it as `boris init` does" in done.stderr
    assert "nothing was written" in done.stderr
    env["BORIS_ACTOR"] = "person:me"
    assert _boris(env, "tasks").stdout.strip() == "(no tasks)"
    assert _actors(env) == (False, [])
