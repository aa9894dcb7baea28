"""`boris serve --notify URL --deny-on-timeout` (issue 43), what tests/test_web_notify.py leaves
out: an escalation reaches the person it escalates to (and nobody is told before it does);
nothing is sent for a decision the person made themselves; and the person's deny on timeout
answers the agent waiting through MCP (the official client over `boris mcp`) with a rejection,
recorded and signed, never with silence.

One signed default store (`boris init`), rita serving it with Apprise's `json://` posting to a
local endpoint; ben a second reviewer with a key rita trusts."""

from __future__ import annotations

import json
import queue
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

pytest.importorskip("apprise")
pytest.importorskip("uvicorn")

from signed_default import PERSON, Signed, signed_default_store
from test_web_notify import Endpoint, listening
from web_site import Server, WaitingAgent, serve

MAIL = {"kind": "send", "target": "mailto:team@example.org", "subject": "Week 49", "body": "ok"}


@pytest.fixture(scope="module")
def told() -> Iterator[Endpoint]:
    with listening() as endpoint:
        yield endpoint


@pytest.fixture(scope="module")
def site(
    tmp_path_factory: pytest.TempPathFactory, told: Endpoint
) -> Iterator[tuple[Signed, Server]]:
    home = tmp_path_factory.mktemp("i43-notify") / "home"
    signed = signed_default_store(home, "agent:drafter")
    signed.trust_person("ben")
    signed.task("weekly", "mailto:team@example.org")
    url = f"json://127.0.0.1:{told.server_address[1]}/boris"
    server = serve(signed, "--notify", url, "--notify-every", "0.3", "--deny-on-timeout")
    yield signed, server
    assert "Traceback" not in server.stop()


def _ask(signed: Signed, what: str, policy: str = "mail is reviewed") -> str:
    return signed.ok(
        "request-approval", "weekly", "--payload-json", json.dumps(MAIL),
        "--consequence", what, "--policy", policy, "--expires-in", "3600", agent=True,
    ).strip()  # fmt: skip


def _until(told: Endpoint, found: Callable[[str], bool], seconds: float = 20) -> list[str]:
    """The lines told until one is `found` (all of them, that one last)."""
    lines: list[str] = []
    give_up = time.monotonic() + seconds
    while not lines or not found(lines[-1]):
        left = give_up - time.monotonic()
        assert left > 0, f"never told; told only {lines}"
        lines.append(told.got.get(timeout=left)["message"])
    return lines


def _quiet(told: Endpoint, seconds: float) -> list[str]:
    """What is told in the next `seconds` (nothing, where a test expects silence)."""
    lines, give_up = [], time.monotonic() + seconds
    while (left := give_up - time.monotonic()) > 0:
        try:
            lines.append(told.got.get(timeout=left)["message"])
        except queue.Empty:
            break
    return lines


def test_an_escalation_reaches_the_person_it_escalates_to(site, told: Endpoint) -> None:
    """Routed to ben, escalating to rita after 3 s: rita is told once it escalates, with
    the routing in words and the page's link; before, it is ben's to decide, not hers."""
    signed, server = site
    signed.ok(
        "--actor", PERSON, "route", "set", "release mail", "--decider", "person:ben",
        "--escalate-after", "0.05", "--escalate-to", "person:rita",
    )  # fmt: skip
    approval = _ask(signed, "mail the release notes", policy="release mail")
    assert _quiet(told, 1.5) == []  # ben's, for now
    (line,) = _until(told, lambda line: "mail the release notes" in line)
    assert "\n" not in line and line.startswith("Boris: approve? mail the release notes (")
    assert "waiting on person:ben; escalated to person:rita" in line, line
    assert line.endswith(f"— {server.origin}/a/weekly/{approval}"), line
    # Due, it is rita's to decide (the server's ticker records the escalation within 15 s;
    # cron's `boris route escalate` now, so as not to wait): recorded once.
    signed.ok("--actor", PERSON, "route", "escalate")
    escalated = _escalations(signed)
    assert [e["payload"]["approval_id"] for e in escalated] == [approval]
    assert _quiet(told, 1) == []  # told once


def _escalations(signed: Signed) -> list[dict[str, Any]]:
    return [e for e in signed.read("events", "weekly") if e["type"] == "approval.escalated"]


def test_nothing_for_a_decision_the_person_made(site, told: Endpoint) -> None:
    """Told of a new request; rita approves it at her desk: nothing more is sent."""
    signed, _server = site
    approval = _ask(signed, "mail the weekly status")
    lines = _until(told, lambda line: "approve? mail the weekly status" in line)
    assert "expires " in lines[-1] and ", in " in lines[-1]  # as a person reads it
    signed.approve("weekly", approval, "--note", "fine")
    assert _quiet(told, 2) == []


def test_deny_on_timeout_answers_the_agent_waiting_over_mcp(site, told: Endpoint) -> None:
    """The agent asks for 4 s and waits through MCP; rita chose that silence means no."""
    signed, _server = site
    agent = WaitingAgent(signed, MAIL, "a request nobody answers", expires_in_seconds=4)
    agent.start()
    waited = agent.told(60)
    assert waited["ok"] and waited["timed_out"] is False, waited
    result = waited["result"]
    assert result["state"] == "rejected" and result["decided_by"]["id"] == "rita", result
    assert result["note"].startswith("denied on timeout: no answer"), result
    lines = _until(told, lambda line: "denied on timeout: a request nobody answers" in line)
    assert all("expired unanswered: a request nobody answers" not in line for line in lines)
    decided = [e for e in signed.read("events", "weekly") if e["type"] == "approval.decided"][-1]
    assert decided["actor"]["id"] == "rita" and decided["payload"]["decision"] == "rejected"
    signed.assert_signed()


def test_an_agents_markup_reaches_an_html_service_as_text(site) -> None:
    """E-mail and other services that render HTML get the line as text: an agent's link or
    image in its consequence is shown, escaped, never made a link or loaded."""
    signed, _server = site
    with listening() as html:
        url = f"json://127.0.0.1:{html.server_address[1]}/html?format=html"
        server = serve(signed, "--notify", url, "--notify-every", "0.3")
        try:
            _ask(signed, 'mail <a href="https://evil.example/">approve here</a>')
            # (What waited before this server started is told first, in its own burst.)
            line = _until(html, lambda line: "evil.example" in line)[-1]
            assert "<a " not in line and "&lt;a" in line and "https://evil.example/" in line, line
        finally:
            assert "Traceback" not in server.stop()
