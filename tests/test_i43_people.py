"""`boris serve` runs as one person (issue 43): rita's server records rita's decisions, signed
by her desktop key. Ben, a second reviewer of the same store, registers his passkey through a
`boris serve` of his own (his key); on rita's server that passkey signs nobody in, even where
both servers stand behind one address (a proxy: one origin for both), and nothing is written
anywhere in ben's name, not even a key file in rita's config directory.

Also the verdicts besides approve, each a passkey's assertion kept in the record: reject, and
send back with the note the agent is answered with (refused without one); and a request two
people must approve shows its quorum on the page."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator

import pytest

pytest.importorskip("webauthn")
pytest.importorskip("uvicorn")

from signed_default import PERSON, Signed, signed_default_store
from web_authenticator import SoftAuthenticator
from web_site import Client, Server, serve

#: What a proxy in front of both servers would make their one address.
SHARED = "http://localhost:9999"
MAIL = {"kind": "send", "target": "mailto:team@example.org", "subject": "Week 49", "body": "ok"}


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Signed, Server, Server]]:
    home = tmp_path_factory.mktemp("i43-people") / "home"
    signed = signed_default_store(home, "agent:drafter")
    ben = signed.trust_person("ben")
    signed.task("weekly", "mailto:team@example.org")
    ritas = serve(signed, "--origin", SHARED)
    bens = serve(signed, "--origin", SHARED, "--actor", "person:ben", "--key", str(ben))
    yield signed, ritas, bens
    assert "Traceback" not in ritas.stop()
    assert "Traceback" not in bens.stop()


def _ask(signed: Signed, *extra: str) -> str:
    return signed.ok(
        "request-approval", "weekly", "--payload-json", json.dumps(MAIL),
        "--consequence", "mail the team", "--policy", "mail is reviewed", *extra, agent=True,
    ).strip()  # fmt: skip


def _decide(client: Client, auth: SoftAuthenticator, approval: str, verdict: str, note: str):
    page = client.page(f"/a/weekly/{approval}")
    digest = re.search(r'data-digest="([^"]+)"', page.text)
    assert digest, page.text
    key, options = client.begin(
        f"/a/weekly/{approval}/begin", {"verdict": verdict, "note": note, "digest": digest[1]}
    )
    return client.post(
        f"/a/weekly/{approval}/finish", {"key": key, "credential": auth.get(options)}
    )


@pytest.fixture(scope="module")
def rita(site) -> tuple[Client, SoftAuthenticator]:
    return site[1].register(SHARED)


def test_another_persons_passkey_signs_nobody_in_on_ritas_server(site, rita) -> None:
    signed, ritas, bens = site
    bens_page, bens_phone = bens.register(SHARED)
    listed = signed.read("passkeys", "list")["passkeys"]
    assert sorted(p["actor"] for p in listed) == ["person:ben", PERSON]
    before = signed.read("events", "weekly")
    approval = _ask(signed)
    stranger = ritas.client()
    stranger.page("/")
    key, options = stranger.begin("/auth/login/begin", {})
    refused = stranger.post(
        "/auth/login/finish", {"key": key, "credential": bens_phone.get(options)}
    )
    assert refused.status_code == 400, refused.text
    assert refused.json()["error"] == "passkey_another_actor", refused.text
    assert PERSON in refused.json()["message"], refused.text
    assert "signed in as" not in stranger.page("/").text
    assert stranger.page(f"/a/weekly/{approval}").status_code == 303
    written = signed.read("events", "weekly")[len(before) :]
    assert {e["actor"]["id"] for e in written} == {"drafter"}, written  # the request's only
    keys = signed.home / ".config" / "boris" / "keys"
    assert not [k.name for k in keys.iterdir() if "ben" in k.name], sorted(keys.iterdir())
    # On his own server ben decides, signed by his key; the record says so.
    done = _decide(bens_page, bens_phone, approval, "approved", "fine")
    assert done.status_code == 200, done.text
    decided = [e for e in signed.read("events", "weekly") if e["type"] == "approval.decided"][-1]
    assert decided["actor"]["id"] == "ben" and decided["payload"]["assertion"], decided
    signed.assert_signed()


def test_reject_and_send_back_carry_their_assertions(site, rita) -> None:
    signed, _ritas, _bens = site
    client, phone = rita
    rejected, sent_back = _ask(signed), _ask(signed)
    done = _decide(client, phone, rejected, "rejected", "not this week")
    assert done.json()["state"] == "rejected", done.text
    before = signed.read("events", "weekly")
    empty = _decide(client, phone, sent_back, "sent_back", "")
    assert empty.status_code == 409, empty.text  # the store asks for the note
    assert signed.read("events", "weekly") == before
    done = _decide(client, phone, sent_back, "sent_back", "add the backlog numbers")
    assert done.status_code == 200, done.text
    states = {a["approval_id"]: a for a in signed.read("approvals", "weekly")}
    assert states[rejected]["state"] == "rejected"
    assert states[sent_back]["note"] == "add the backlog numbers", states[sent_back]
    decided = [e for e in signed.read("events", "weekly") if e["type"] == "approval.decided"]
    mine = {e["payload"]["approval_id"]: e for e in decided if e["actor"]["id"] == "rita"}
    assert mine[rejected]["payload"]["assertion"] and mine[sent_back]["payload"]["assertion"]
    signed.assert_signed()


def test_the_page_shows_the_quorum_so_far(site, rita) -> None:
    """Two people must approve: the page says how far it has come, rita's approval counts."""
    signed, _ritas, _bens = site
    client, phone = rita
    approval = _ask(signed, "--approvers", "2")
    assert "<dt>Quorum</dt><dd>0 of 2 approved</dd>" in client.page(f"/a/weekly/{approval}").text
    done = _decide(client, phone, approval, "approved", "")
    assert done.status_code == 200 and done.json()["state"] == "pending", done.text
    page = client.page(f"/a/weekly/{approval}").text
    assert "<dt>Quorum</dt><dd>1 of 2 approved by rita</dd>" in page, page
    signed.assert_signed()
