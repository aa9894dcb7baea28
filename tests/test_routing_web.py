"""`boris serve` and routing (issue 42): the phone page reads an approval's expiry as a person
reads it ("expires 14:10 UTC, in 59 min"), says who the request waits on, and the server records
an escalation that came due by itself, with nobody asking.

The default signed store of a home (tests/signed_default.py: rita its root, the agent's key
trusted), ben with a key rita trusts; the real `boris serve` in a process of its own."""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator

import pytest
from signed_default import PERSON, Signed, signed_default_store
from web_site import Client, Server, serve

MAIL = {
    "kind": "send",
    "target": "mailto:team@example.org",
    "to": ["team@example.org"],
    "subject": "Week 49",
    "body": "All green.",
}


def _ask(signed: Signed, policy: str) -> str:
    return signed.ok(
        "request-approval", "weekly", "--payload-json", json.dumps(MAIL),
        "--consequence", "mail the team", "--policy", policy, "--expires-in", "3600",
        agent=True,
    ).strip()  # fmt: skip


def _escalations(signed: Signed) -> list[dict]:
    events = signed.read("events", "weekly")
    return [e for e in events if e["type"] == "approval.escalated"]


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Signed, Server, str]]:
    """A request routed to rita, escalating to ben after 0.02 minutes, already due when the
    server starts: nobody but the server is running to record it."""
    home = tmp_path_factory.mktemp("routing-web") / "home"
    signed = signed_default_store(home, "agent:drafter")
    signed.trust_person("ben")
    signed.task("weekly", "mailto:team@example.org")
    signed.ok(
        "--actor", PERSON, "route", "set", "mail", "--decider", "person:rita",
        "--escalate-after", "0.02", "--escalate-to", "person:ben",
    )  # fmt: skip
    approval = _ask(signed, "mail")
    give_up = time.monotonic() + 30
    while signed.read("--actor", PERSON, "route", "escalate", "--dry-run") == []:
        assert time.monotonic() < give_up, "never due"
        time.sleep(0.1)
    server = serve(signed)
    yield signed, server, approval
    assert "Traceback" not in server.stop()


@pytest.fixture(scope="module")
def rita(site: tuple[Signed, Server, str]) -> Client:
    _signed, server, _ = site
    return server.register()[0]


def _visible(html: str) -> str:
    """The page's text as read: its tags (and their attributes) left out."""
    return re.sub(r"<[^>]*>", " ", html)


def test_serve_records_the_due_escalation_by_itself(site: tuple[Signed, Server, str]) -> None:
    signed, _server, approval = site
    give_up = time.monotonic() + 30
    while not _escalations(signed):
        assert time.monotonic() < give_up, "boris serve recorded no escalation"
        time.sleep(0.2)
    time.sleep(0.5)
    (escalated,) = _escalations(signed)
    assert escalated["payload"]["approval_id"] == approval
    assert escalated["payload"]["to"] == ["ben"]
    assert escalated["actor"]["kind"] == "system"  # the store's own, signed by rita's key
    signed.assert_signed()


def test_the_page_reads_the_expiry_and_the_routing_as_a_person_does(
    site: tuple[Signed, Server, str], rita: Client
) -> None:
    signed, _server, approval = site
    expires_at = next(
        a["expires_at"] for a in signed.read("approvals", "weekly") if a["id"] == approval
    )
    home = rita.page("/")
    assert home.status_code == 200
    text = _visible(home.text)
    # The date is said too when the expiry falls on another day (a run near midnight, UTC).
    assert re.search(r"expires (\d{1,2} \w{3} )?\d\d:\d\d UTC, in (59|60) min", text), text
    assert expires_at not in text  # the ISO time only as the element's datetime
    assert f'datetime="{expires_at}"' in home.text
    assert "waiting on person:rita; escalated to person:ben" in text

    page = rita.page(f"/a/weekly/{approval}")
    text = _visible(page.text)
    assert re.search(r"Expires\s+expires (\d{1,2} \w{3} )?\d\d:\d\d UTC, in (59|60) min", text), (
        text
    )
    assert expires_at not in text
    assert "State  waiting for a decision" in text and "State  pending" not in text
    assert "Routing  waiting on person:rita; escalated to person:ben" in text


def test_the_expiry_words_are_the_stores() -> None:
    from store.rules.times import expiry_words

    now = "2026-12-07T13:58:00.000000Z"
    assert expiry_words("2026-12-07T14:10:00.000000Z", now) == "expires 14:10 UTC, in 12 min"
    assert expiry_words("2026-12-08T09:00:00.000000Z", now) == (
        "expires 8 Dec 09:00 UTC, in 19 h 2 min"
    )
    assert expiry_words("2026-12-07T13:55:00.000000Z", now) == "expired 13:55 UTC, 3 min ago"
