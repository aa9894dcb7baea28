"""Claude Code's interactive permission moments answered from Boris, at the hooks' documented
JSON boundary (store.adapters.claude_code_permission).

The real `boris hook permission-request` and `boris hook pre-tool-use --decide` run as Claude
Code runs a command hook: a process of their own, the documented input on stdin verbatim
(tests/fixtures/claude_code/, see SOURCE.md there), on the store `boris init` makes (signed,
the agent's key as BORIS_KEY). While the hook waits, a person decides from their own shell
with the real `boris approve` / `reject` / `send-back` / `stop`. What Claude Code reads is
checked against the hooks reference: exit 0 and one JSON object on stdout,
`hookSpecificOutput.decision` (`behavior` allow with `updatedInput` / deny with `message`
and `interrupt`) for PermissionRequest, `permissionDecision` allow / deny / ask with
`permissionDecisionReason` for PreToolUse, `continue: false` to stop Claude; and the record
binds the digest of exactly what was allowed.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from signed_default import PERSON, ROOT, Signed, signed_default_store

from store.canonical import digest_of

AGENT = "agent:claude"
FIXTURES = ROOT / "tests" / "fixtures" / "claude_code"
ASKED_PR = json.loads((FIXTURES / "permission_request.json").read_text(encoding="utf-8"))
ASKED_PRE = json.loads((FIXTURES / "pre_tool_use.json").read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def signed(tmp_path_factory: pytest.TempPathFactory) -> Signed:
    return signed_default_store(tmp_path_factory.mktemp("cc-permission") / "home", AGENT)


class Hook:
    """`boris hook EVENT` as Claude Code runs it: the input on stdin, the agent's env."""

    def __init__(
        self, signed: Signed, tmp: Path, task: str, event: str, value: dict[str, Any], *opts: str
    ) -> None:
        stdin = tmp / f"{event}-{time.monotonic_ns()}.json"
        stdin.write_text(json.dumps(value), encoding="utf-8")
        with stdin.open("rb") as f:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "store.cli", "hook", event, "--task", task, *opts],
                env=signed.env(agent=True),
                cwd=ROOT,
                stdin=f,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
            )

    def answer(self) -> tuple[int, dict[str, Any] | None, str]:
        """Exit code, the JSON Claude Code reads on stdout (None: nothing), stderr."""
        out, err = self.proc.communicate(timeout=120)
        text = out.decode()
        assert text.count("\n") <= 1  # only the JSON object, on one line
        return self.proc.returncode, (json.loads(text) if text.strip() else None), err.decode()


def waiting(signed: Signed, task: str, hook: Hook) -> dict[str, Any]:
    """The approval the hook asked for, once it is in the store (the hook still waits)."""
    for _ in range(300):
        pending = signed.pending(task)
        if pending:
            assert hook.proc.poll() is None  # Claude Code is still waiting for the person
            return pending[0]
        time.sleep(0.1)
    raise AssertionError("the hook asked for no approval")


def person(signed: Signed, verb: str, task: str, *rest: str) -> None:
    signed.ok("--actor", PERSON, verb, task, *rest)


def effect(signed: Signed, task: str, effect_id: str) -> dict[str, Any]:
    (found,) = [e for e in signed.effects(task) if e["id"] == effect_id]
    return found


def approval(signed: Signed, task: str, approval_id: str) -> dict[str, Any]:
    (found,) = [a for a in signed.read("approvals", task) if a["id"] == approval_id]
    return dict(found)


def assert_allowed_exactly(signed: Signed, task: str, asked: dict[str, Any], ran: Any) -> None:
    """The effect, its approval and its one attempt all bind the digest of what runs."""
    found = effect(signed, task, asked["effect_id"])
    assert found["stage"] == "dispatched"
    assert found["intent"]["prepared_digest"] == digest_of(ran)
    decided = approval(signed, task, asked["id"])
    assert (decided["state"], decided["payload_digest"]) == ("consumed", digest_of(ran))
    (attempt,) = found["attempts"]
    assert attempt["approval_id"] == asked["id"]
    assert attempt["inputs"]["prepared_digest"] == digest_of(ran)


def permission_request(decision: dict[str, Any]) -> dict[str, Any]:
    return {"hookSpecificOutput": {"hookEventName": "PermissionRequest", "decision": decision}}


def test_permission_request_answers_the_persons_decision_exactly(
    signed: Signed, tmp_path: Path
) -> None:
    task = signed.task("cc-pr", "claude-code://tools/")
    tool_input = ASKED_PR["tool_input"]

    # Approved as asked: allow, the input not rewritten; the attempt recorded first.
    hook = Hook(signed, tmp_path, task, "permission-request", ASKED_PR)
    asked = waiting(signed, task, hook)
    assert asked["payload_digest"] == digest_of(tool_input)
    assert asked["consequence"] == "Claude Code runs Bash: rm -rf node_modules"
    person(signed, "approve", task, asked["id"], "--note", "fine")
    assert hook.answer() == (0, permission_request({"behavior": "allow"}), "")
    assert_allowed_exactly(signed, task, asked, tool_input)

    # The call ran: its PostToolUse (with the tool_use_id the PermissionRequest input does not
    # carry) answers that attempt, found by tool name and input digest: no second effect.
    ran = dict(ASKED_PRE, hook_event_name="PostToolUse", tool_input=tool_input)
    ran |= {"tool_use_id": "toolu_pr1", "tool_response": {"stdout": "", "exit_code": 0}}
    done = signed.boris("hook", "post-tool-use", "--task", task, agent=True, stdin=_b(ran))
    assert done.returncode == 0, done.stderr.decode()
    (attempt,) = effect(signed, task, asked["effect_id"])["attempts"]
    assert attempt["response"]["tool_use_id"] == "toolu_pr1"
    assert len(signed.effects(task)) == 1

    # Approved with the person's edit: allow with updatedInput, exactly the edited object.
    edited = {"command": "rm -rf node_modules/.cache", "description": "Only the cache"}
    hook = Hook(signed, tmp_path, task, "permission-request", ASKED_PR)
    asked = waiting(signed, task, hook)
    person(signed, "approve", task, asked["id"], "--edited-json", json.dumps(edited))
    code, said, _ = hook.answer()
    assert (code, said) == (0, permission_request({"behavior": "allow", "updatedInput": edited}))
    assert_allowed_exactly(signed, task, asked, edited)

    # Rejected: deny with who and the note, for Claude; no interrupt; nothing dispatched.
    hook = Hook(signed, tmp_path, task, "permission-request", ASKED_PR)
    asked = waiting(signed, task, hook)
    person(signed, "reject", task, asked["id"], "--note", "keep node_modules")
    code, said, _ = hook.answer()
    assert code == 0 and said is not None
    decision = said["hookSpecificOutput"]["decision"]
    assert set(decision) == {"behavior", "message"} and decision["behavior"] == "deny"
    assert "rita rejected" in decision["message"] and "keep node_modules" in decision["message"]
    assert said == permission_request(decision)
    assert effect(signed, task, asked["effect_id"])["stage"] == "cancelled"

    # Sent back: deny carrying the note, so Claude can revise and ask again.
    hook = Hook(signed, tmp_path, task, "permission-request", ASKED_PR)
    asked = waiting(signed, task, hook)
    person(signed, "send-back", task, asked["id"], "--note", "use npm ci instead")
    code, said, _ = hook.answer()
    decision = said["hookSpecificOutput"]["decision"] if said else {}
    assert (code, decision["behavior"]) == (0, "deny")
    assert "use npm ci instead" in decision["message"] and "interrupt" not in decision
    signed.assert_signed()


def _b(value: dict[str, Any]) -> bytes:
    return json.dumps(value).encode()


def test_nobody_deciding_in_time_denies_or_hands_the_call_to_the_terminal(
    signed: Signed, tmp_path: Path
) -> None:
    task = signed.task("cc-late", "claude-code://tools/")

    # Nobody decides within --wait: deny, saying so; the effect is cancelled (its approval
    # revoked), so a late decision cannot approve a call nobody will run.
    started = time.monotonic()
    hook = Hook(signed, tmp_path, task, "permission-request", ASKED_PR, "--wait", "1")
    code, said, _ = hook.answer()
    assert time.monotonic() - started >= 1.0
    decision = said["hookSpecificOutput"]["decision"] if said else {}
    assert (code, decision["behavior"]) == (0, "deny")
    assert "nobody decided this Bash call in Boris within 1 s" in decision["message"]
    (late,) = signed.effects(task)
    assert late["stage"] == "cancelled"
    assert [a["state"] for a in signed.read("approvals", task)] == ["revoked"]

    # --on-timeout ask: no decision (exit 0, nothing on stdout): Claude Code shows its own
    # dialog in the terminal, where a person decides. Never a silent allow.
    hook = Hook(
        signed, tmp_path, task, "permission-request", ASKED_PR, "--wait", "0.5",
        "--on-timeout", "ask",
    )  # fmt: skip
    assert hook.answer() == (0, None, "")

    # PreToolUse --decide, --on-timeout ask: permissionDecision "ask" with the reason.
    hook = Hook(
        signed, tmp_path, task, "pre-tool-use", ASKED_PRE, "--decide", "--wait", "0.5",
        "--on-timeout", "ask",
    )  # fmt: skip
    code, said, _ = hook.answer()
    assert code == 0 and said is not None
    specific = said["hookSpecificOutput"]
    assert said == {"hookSpecificOutput": specific}
    assert (specific["hookEventName"], specific["permissionDecision"]) == ("PreToolUse", "ask")
    assert "nobody decided this Bash call in Boris" in specific["permissionDecisionReason"]
    # The person at the terminal allowed it and it ran: its PostToolUse is recorded anew,
    # after the run, saying it was allowed outside Boris (Boris's own effect stays cancelled).
    ran = dict(ASKED_PRE, hook_event_name="PostToolUse", tool_response={"stdout": "ok"})
    done = signed.boris("hook", "post-tool-use", "--task", task, agent=True, stdin=_b(ran))
    assert done.returncode == 0, done.stderr.decode()
    after = [e for e in signed.effects(task) if e["attempts"]]
    (attempt,) = after[0]["attempts"]
    assert attempt["response"]["allowed_outside_boris"] is True
    assert attempt["response"]["recorded_after_the_run"] is True

    # Claude Code ends the hook (its timeout) while it waits: the call is cancelled.
    hook = Hook(signed, tmp_path, task, "permission-request", ASKED_PR)
    asked = waiting(signed, task, hook)
    hook.proc.send_signal(signal.SIGTERM)
    code, said, err = hook.answer()
    assert (code, said) == (1, None)
    assert "ended the hook before a person decided" in err
    assert effect(signed, task, asked["effect_id"])["stage"] == "cancelled"
    assert approval(signed, task, asked["id"])["state"] == "revoked"


def test_pre_tool_use_decide_answers_allow_deny_and_a_stop_interrupts(
    signed: Signed, tmp_path: Path
) -> None:
    task = signed.task("cc-pre", "claude-code://tools/")

    # Approved: permissionDecision allow, the reason for the user; no input rewritten.
    hook = Hook(signed, tmp_path, task, "pre-tool-use", ASKED_PRE, "--decide")
    asked = waiting(signed, task, hook)
    person(signed, "approve", task, asked["id"], "--note", "tests are fine")
    assert hook.answer() == (
        0,
        {
            "hookSpecificOutput": {
                "hookEventName": "PreToolUse",
                "permissionDecision": "allow",
                "permissionDecisionReason": "rita approved this Bash call in Boris: tests are fine",
            }
        },
        "",
    )
    assert_allowed_exactly(signed, task, asked, ASKED_PRE["tool_input"])
    found = effect(signed, task, asked["effect_id"])
    assert found["idempotency_key"] == "claude-code:toolu_01ABC123..."

    # Sent back: deny, the reason (shown to Claude) carrying the note.
    second = dict(ASKED_PRE, tool_use_id="toolu_02")
    hook = Hook(signed, tmp_path, task, "pre-tool-use", second, "--decide")
    asked = waiting(signed, task, hook)
    person(signed, "send-back", task, asked["id"], "--note", "run only the unit tests")
    code, said, _ = hook.answer()
    specific = said["hookSpecificOutput"] if said else {}
    assert (code, specific["permissionDecision"]) == (0, "deny")
    assert "run only the unit tests" in specific["permissionDecisionReason"]
    assert said == {"hookSpecificOutput": specific}  # Claude goes on: no continue: false

    # The person stops the run while a PermissionRequest and a PreToolUse wait: both deny
    # and stop Claude (PermissionRequest's interrupt, the universal continue: false).
    third = dict(ASKED_PRE, tool_use_id="toolu_03")
    pre = Hook(signed, tmp_path, task, "pre-tool-use", third, "--decide")
    waiting(signed, task, pre)
    pr = Hook(signed, tmp_path, task, "permission-request", ASKED_PR)
    for _ in range(300):
        if len(signed.pending(task)) == 2:
            break
        time.sleep(0.1)
    person(signed, "stop", task, "--reason", "wrong branch")
    code, said, _ = pr.answer()
    decision = said["hookSpecificOutput"]["decision"] if said else {}
    assert (code, decision["behavior"], decision["interrupt"]) == (0, "deny", True)
    assert "the run was stopped" in decision["message"]
    code, said, _ = pre.answer()
    assert code == 0 and said is not None
    assert said["hookSpecificOutput"]["permissionDecision"] == "deny"
    assert said["continue"] is False and "the run was stopped" in said["stopReason"]


def test_boris_failing_denies_the_call_saying_why(signed: Signed, tmp_path: Path) -> None:
    task = signed.task("cc-nokey", "claude-code://tools/")
    # The agent has no key on a signed store: Boris cannot record, so the call is denied
    # with the refusal's one line (Claude Code reads it), never let through.
    for event, extra in (("permission-request", ()), ("pre-tool-use", ("--decide",))):
        value = ASKED_PR if event == "permission-request" else ASKED_PRE
        done = signed.boris(
            "hook", event, "--task", task, *extra, agent=True, stdin=_b(value), BORIS_KEY=""
        )
        assert done.returncode == 0, done.stderr.decode()
        said = json.loads(done.stdout)
        specific = said["hookSpecificOutput"]
        if event == "permission-request":
            assert specific["decision"]["behavior"] == "deny"
            message = specific["decision"]["message"]
        else:
            assert specific["permissionDecision"] == "deny"
            message = specific["permissionDecisionReason"]
        assert message.startswith("Boris could not record this call, so it was not run: ")
        assert "boris keys new" in message
    assert signed.effects(task) == []
    # A wait that is no number of seconds (nan, 0) is refused the same way: denied, saying
    # why, never a hook that waits forever or lets the call through.
    for wait in ("nan", "0"):
        done = signed.boris(
            "hook", "permission-request", "--task", task, "--wait", wait, agent=True,
            stdin=_b(ASKED_PR),
        )  # fmt: skip
        assert done.returncode == 0, done.stderr.decode()
        decision = json.loads(done.stdout)["hookSpecificOutput"]["decision"]
        assert decision["behavior"] == "deny" and "--wait must be" in decision["message"]
    assert signed.effects(task) == []
