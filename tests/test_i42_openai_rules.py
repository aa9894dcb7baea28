"""The OpenAI Agents SDK's own "always" answers as Boris standing rules (issue 42's Done-when,
audited): each of `always_approve` and `always_reject` decides the next call like it (recorded
as the rule's: `approval.ruled` naming it), decides nothing after its revocation and nothing
after its expiry, and never a call whose policy a person reserved.

tests/test_fw42_openai.py proves always_approve revoked and reserved, always_reject expired;
here the other halves: always_approve expired, always_reject reserved and revoked. The real
`openai-agents` package, its scripted model (no network), the agent of
tests/test_openai_agents_adapter.py, the application's own approval UI on the SDK's
`RunState` handed to Boris with `record_answers` in the person's name, on the store
`boris init` makes (signed; the agent's key as BORIS_KEY).
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from signed_default import PERSON, Signed, signed_default_store
from test_fw42_openai import answer_in_the_app, approval, run
from test_openai_agents_adapter import FINAL, asks, outputs_seen, ran

from store.adapters import openai_agents as oa


@pytest.fixture(scope="module")
def signed(tmp_path_factory: pytest.TempPathFactory) -> Signed:
    home = tmp_path_factory.mktemp("i42-oa") / "home"
    return signed_default_store(home, f"agent:{oa.DEFAULT_ACTOR.id}")


def ruled(signed: Signed, task: str) -> dict[str, str]:
    """approval id -> the rule the record says decided it."""
    return {
        e["payload"]["approval_id"]: e["payload"]["rule_id"]
        for e in signed.read("events", task)
        if e["type"] == "approval.ruled"
    }


def standing(signed: Signed, rule_id: str | None) -> str:
    (rule,) = [r for r in signed.read("rules", "list")["rules"] if r["id"] == rule_id]
    return str(rule["standing"])


def test_always_approve_decides_nothing_after_its_expiry(
    signed: Signed, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    task = signed.task("i42-oa-approve-expiry", "openai-agents://tools/")
    signed.use_here(monkeypatch)
    ran_log = tmp_path / "ran.jsonl"
    first, _ = run(signed, task, ran_log, asks(("call_e1", {"path": "dist/"})))
    (answer,) = answer_in_the_app(signed, monkeypatch, task, first, expires_in_seconds=4)
    granted = time.monotonic()
    assert answer.always and answer.verdict == "approved" and answer.rule_id

    # While it stands: the next call of the tool is the rule's, and runs.
    done, _ = run(signed, task, ran_log, [*asks(("call_e2", {"path": "tmp/"})), FINAL], True)
    assert time.monotonic() - granted < 4, "the machine was too slow to see the rule decide"
    assert done.result is not None and done.result.final_output == "done"
    ((by_rule, rule_id),) = ruled(signed, task).items()
    assert rule_id == answer.rule_id and approval(signed, task, by_rule)["state"] == "consumed"

    # Past its expiry on the database clock: the next call waits for a person, runs nothing.
    time.sleep(max(0.0, 4.3 - (time.monotonic() - granted)))
    later, _ = run(signed, task, ran_log, [*asks(("call_e3", {"path": "build/"})), FINAL])
    assert later.paused and [a.call.call_id for a in later.asked] == ["call_e3"]
    assert approval(signed, task, later.asked[0].approval_id)["state"] == "pending"
    assert list(ruled(signed, task)) == [by_rule]
    assert ran(ran_log) == [{"path": "dist/"}, {"path": "tmp/"}]
    assert standing(signed, answer.rule_id) == "expired"
    signed.assert_signed()


def test_always_reject_decides_the_next_never_a_reserved_policy_nothing_after_revocation(
    signed: Signed, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    task = signed.task("i42-oa-reject-revoked", "openai-agents://tools/")
    signed.use_here(monkeypatch)
    ran_log = tmp_path / "ran.jsonl"
    first, _ = run(signed, task, ran_log, asks(("call_j1", {"path": "src/"})))
    (answer,) = answer_in_the_app(signed, monkeypatch, task, first, reject=True)
    assert answer.always and answer.verdict == "rejected" and answer.rule_id

    # The next call of the tool: rejected by the rule as it is asked; the model reads why.
    steps = [*asks(("call_j2", {"path": "lib/"})), FINAL]
    done, model = run(signed, task, ran_log, steps, resume=True)
    assert done.result is not None and done.result.final_output == "done"
    seen = outputs_seen(model)
    assert f"by standing rule {answer.rule_id}" in seen["call_j2"]
    assert seen["call_j2"].endswith("It was not run.")
    ((by_rule, rule_id),) = ruled(signed, task).items()
    assert rule_id == answer.rule_id and approval(signed, task, by_rule)["state"] == "rejected"

    # Reserved for a person: the rule rejects none of the policy's calls; a person decides.
    signed.ok("--actor", PERSON, "rules", "reserve", oa.POLICY)
    try:
        held, _ = run(signed, task, ran_log, [*asks(("call_j3", {"path": "docs/"})), FINAL])
    finally:
        signed.ok("--actor", PERSON, "rules", "reserve", oa.POLICY, "--off")
    assert held.paused and [a.call.call_id for a in held.asked] == ["call_j3"]
    assert approval(signed, task, held.asked[0].approval_id)["state"] == "pending"
    signed.approve(task, held.asked[0].approval_id)
    done, _ = run(signed, task, ran_log, [FINAL], resume=True)
    assert done.result is not None and ran(ran_log) == [{"path": "docs/"}]

    # Revoked: the next call is asked of a person, not rejected.
    signed.ok("--actor", PERSON, "rules", "revoke", str(answer.rule_id), "--reason", "ok now")
    later, _ = run(signed, task, ran_log, [*asks(("call_j4", {"path": "lib/"})), FINAL])
    assert later.paused and [a.call.call_id for a in later.asked] == ["call_j4"]
    assert approval(signed, task, later.asked[0].approval_id)["state"] == "pending"
    assert list(ruled(signed, task)) == [by_rule]
    assert standing(signed, answer.rule_id) == "revoked"
    signed.assert_signed()
