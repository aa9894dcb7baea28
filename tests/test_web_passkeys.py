"""`boris serve`: the decision page over HTTP, as its script speaks to it, with a software
passkey (tests/web_authenticator.py). One server and one signed default store for the module.

A passkey registered through the one-time link is signed by rita's desktop key; a decision
is recorded with its assertion and `boris verify` passes; each refusal (a replayed
assertion, one made for another approval, a changed payload, an expired approval, an
unregistered or revoked passkey, no CSRF token) is a typed error and records nothing. The
page's defences: its headers (CSP without inline script), its cookie, its rate limit, no trace
in an error, every task string escaped. The agent waiting over MCP receives the decision.
The tests run in file order on the module's server: the revocation and the database edited
behind the store's back come last."""

from __future__ import annotations

import datetime
import json
import re
import sqlite3
import ssl
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("webauthn")
pytest.importorskip("uvicorn")

import httpx
from signed_default import Signed, signed_default_store
from web_authenticator import SoftAuthenticator
from web_site import Client, Server, WaitingAgent, serve

MAIL = {
    "kind": "send",
    "target": "mailto:team@example.org",
    "to": ["team@example.org"],
    "subject": "Week 49 <b>status</b>",
    "body": "All green. <script>alert(1)</script>",
}


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Signed, Server]]:
    signed = signed_default_store(tmp_path_factory.mktemp("web") / "home", "agent:drafter")
    signed.task("weekly", "mailto:team@example.org")
    server = serve(signed)
    yield signed, server
    assert "Traceback" not in server.stop()


def _ask(signed: Signed, expires: int = 3600) -> str:
    return signed.ok(
        "request-approval", "weekly", "--payload-json", json.dumps(MAIL),
        "--consequence", "mail the team <now>", "--policy", "mail is reviewed",
        "--expires-in", str(expires), agent=True,
    ).strip()  # fmt: skip


@pytest.fixture(scope="module")
def rita(site: tuple[Signed, Server]) -> tuple[Client, SoftAuthenticator]:
    _signed, server = site
    return server.register()


def _decide(
    client: Client,
    auth: SoftAuthenticator,
    approval: str,
    verdict: str = "approved",
    note: str = "ok",
    path: str | None = None,
):
    page = client.page(f"/a/weekly/{approval}")
    digest = re.search(r'data-digest="([^"]+)"', page.text)
    assert digest, page.text
    key, options = client.begin(
        f"/a/weekly/{approval}/begin", {"verdict": verdict, "note": note, "digest": digest.group(1)}
    )
    signed = {"key": key, "credential": auth.get(options)}
    return client.post(path or f"/a/weekly/{approval}/finish", signed), signed


def _state(signed: Signed, approval: str) -> str:
    return next(
        a["state"] for a in signed.read("approvals", "weekly") if a["approval_id"] == approval
    )


def test_a_decision_carries_its_assertion_and_verifies(site, rita) -> None:
    signed, _server = site
    client, auth = rita
    approval = _ask(signed)
    page = client.page(f"/a/weekly/{approval}")
    # The store's decision view: To, Subject, body and digest, every task string escaped.
    assert "team@example.org" in page.text and "All green." in page.text
    assert "<script>alert" not in page.text and "&lt;script&gt;alert(1)&lt;/script&gt;" in page.text
    assert (
        "Week 49 &lt;b&gt;status&lt;/b&gt;" in page.text
        and "mail the team &lt;now&gt;" in page.text
    )
    done, first = _decide(client, auth, approval)
    assert done.json() == {"ok": True, "state": "approved", "next": "/"}
    events = signed.read("events", "weekly")
    decided = [e for e in events if e["type"] == "approval.decided"][-1]
    assert (
        decided["actor"]["id"] == "rita"
        and decided["payload"]["assertion"]["nonce"] == first["key"]
    )
    signed.assert_signed()  # boris verify, the assertion checked again offline
    # The same assertion again: replayed.
    again = client.post(f"/a/weekly/{approval}/finish", first)
    assert again.status_code == 409 and again.json()["error"] == "assertion_replayed"


def test_refusals_record_nothing(site, rita) -> None:
    signed, _server = site
    client, auth = rita
    one, other = _ask(signed), _ask(signed)
    before = len(signed.read("events", "weekly"))
    # Made for one approval, posted for another.
    done, _ = _decide(client, auth, one, path=f"/a/weekly/{other}/finish")
    assert done.status_code == 409 and done.json()["error"] == "assertion_mismatch", done.text
    # A digest the store no longer binds (the page's is stale).
    page = client.page(f"/a/weekly/{one}")
    key, options = client.begin(
        f"/a/weekly/{one}/begin",
        {"verdict": "approved", "note": "", "digest": "sha256:" + "0" * 64},
    )
    stale = client.post(f"/a/weekly/{one}/finish", {"key": key, "credential": auth.get(options)})
    assert stale.json()["error"] == "stale_digest", stale.text
    # A passkey the store never registered.
    stranger = SoftAuthenticator(client.origin)
    key, options = client.begin(
        f"/a/weekly/{one}/begin",
        {
            "verdict": "approved",
            "note": "",
            "digest": re.search(r'data-digest="([^"]+)"', page.text).group(1),
        },
    )
    unknown = client.post(
        f"/a/weekly/{one}/finish", {"key": key, "credential": stranger.get(options)}
    )
    assert unknown.json()["error"] == "passkey_unknown", unknown.text
    # No CSRF token.
    assert (
        client.post(f"/a/weekly/{one}/begin", {"verdict": "approved"}, csrf=False).status_code
        == 403
    )
    assert len(signed.read("events", "weekly")) == before
    assert _state(signed, one) == _state(signed, other) == "pending"


def test_an_expired_approval_is_refused(site, rita) -> None:
    signed, _server = site
    client, auth = rita
    approval = _ask(signed, expires=2)
    page = client.page(f"/a/weekly/{approval}")
    digest = re.search(r'data-digest="([^"]+)"', page.text).group(1)
    key, options = client.begin(
        f"/a/weekly/{approval}/begin", {"verdict": "approved", "note": "", "digest": digest}
    )
    time.sleep(2.2)
    done = client.post(
        f"/a/weekly/{approval}/finish", {"key": key, "credential": auth.get(options)}
    )
    assert done.json()["error"] == "approval_expired", done.text


def test_the_page_defences(site) -> None:
    _signed, server = site
    client = server.client()
    page = client.page("/")
    csp = page.headers["content-security-policy"]
    assert "script-src 'self'" in csp and "unsafe-inline" not in csp and "default-src 'none'" in csp
    assert "<script>" not in page.text and '<script src="/static/boris.js"' in page.text
    cookie = page.headers["set-cookie"].lower()
    assert "httponly" in cookie and "secure" in cookie and "samesite=strict" in cookie
    # Signed out: no approval is shown, and a decision's ceremony is refused.
    assert client.page("/a/weekly/x").status_code == 303
    assert client.post("/a/weekly/x/begin", {"verdict": "approved"}).json()["error"] == "signed_out"
    missing = client.http.get(server.origin + "/no/such/page")
    assert missing.status_code == 404 and "Traceback" not in missing.text
    broken = client.http.post(
        server.origin + "/auth/login/begin",
        content=b"{not json",
        headers={"cookie": client.cookie, "x-csrf-token": client.csrf},
    )
    assert broken.status_code == 400 and "Traceback" not in broken.text
    signed_out = client.http.post(
        server.origin + "/logout", data={"csrf": "guessed"}, headers={"cookie": client.cookie}
    )
    assert signed_out.status_code == 403
    statuses = [client.post("/auth/login/begin", {}).status_code for _ in range(12)]
    assert statuses[0] == 200 and statuses[-1] == 429


def test_the_agent_waiting_over_mcp_receives_the_decision(site, rita) -> None:
    """The agent asks and waits through the real MCP client; the person approves on the page."""
    signed, _server = site
    client, auth = rita
    agent = WaitingAgent(signed, MAIL, "mail over MCP")
    agent.start()
    assert agent.asked.wait(60) and agent.failed is None, agent.failed
    time.sleep(0.5)
    assert agent.is_alive() and not agent.result  # still waiting on rita
    done, _ = _decide(client, auth, agent.approval)
    assert done.status_code == 200, done.text
    waited = agent.told(60)
    assert waited["ok"] and waited["timed_out"] is False, waited
    assert (
        waited["result"]["state"] == "approved" and waited["result"]["decided_by"]["id"] == "rita"
    )


def test_a_revoked_passkey_decides_nothing(site, rita, tmp_path: Path) -> None:
    signed, _server = site
    client, auth = rita
    listed = signed.read("passkeys", "list")["passkeys"]
    mine = [p for p in listed if p["actor"] == "person:rita"]
    assert mine and mine[0]["revoked_at"] is None
    approval = _ask(signed)
    page = client.page(f"/a/weekly/{approval}")
    digest = re.search(r'data-digest="([^"]+)"', page.text).group(1)
    key, options = client.begin(
        f"/a/weekly/{approval}/begin", {"verdict": "rejected", "note": "", "digest": digest}
    )
    signed.ok("--actor", "person:rita", "passkeys", "revoke", "--", mine[0]["credential_id"])
    done = client.post(
        f"/a/weekly/{approval}/finish", {"key": key, "credential": auth.get(options)}
    )
    assert done.json()["error"] == "passkey_revoked", done.text
    assert _state(signed, approval) == "pending"


def test_serve_refuses_a_network_address_without_tls(site) -> None:
    signed, _server = site
    refused = signed.boris("serve", "--actor", "person:rita", "--host", "0.0.0.0", "--port", "1")
    assert refused.returncode == 2, refused.stderr
    assert "refusing to serve on 0.0.0.0 without TLS" in refused.stderr.decode()
    assert "Traceback" not in refused.stderr.decode()


def test_another_host_name_is_refused(site) -> None:
    """DNS rebinding: a page under another name that resolves here gets nothing."""
    _signed, server = site
    client = server.client()
    answer = client.http.get(server.origin + "/", headers={"host": "attacker.example"})
    assert answer.status_code == 400 and "boris_session" not in answer.headers.get("set-cookie", "")
    assert "default-src 'none'" in answer.headers["content-security-policy"]


def test_serve_over_tls(site, tmp_path: Path) -> None:
    """With --cert and --cert-key the page is served over HTTPS (here on loopback)."""
    signed, _server = site
    cert, key = _self_signed(tmp_path)
    tls = serve(signed, "--cert", str(cert), "--cert-key", str(key), scheme="https")
    try:
        trusted = ssl.create_default_context(cafile=str(cert))
        page = httpx.get(tls.origin + "/", verify=trusted, timeout=20)
        assert page.status_code == 200 and "Sign in with passkey" in page.text
        assert tls.register_url.startswith("https://localhost:")
    finally:
        assert "Traceback" not in tls.stop()


def test_an_imported_task_notes_a_passkey_it_does_not_register(site, tmp_path: Path) -> None:
    """Exported and imported elsewhere, a decision made with a passkey is noted, not judged:
    that store does not register the passkey; the decision's own signature still proves it."""
    signed, _server = site
    package, there = tmp_path / "weekly.tar.gz", tmp_path / "elsewhere"
    signed.ok("export", "weekly", str(package))
    signed.ok("--store", str(there), "init", "--no-require-signatures", "--actor", "person:ivan")
    signed.ok("--store", str(there), "--actor", "person:ivan", "import", str(package))
    report = signed.read("--store", str(there), "verify")
    assert report["ok"] and report["problems"] == []
    assert {i["kind"] for i in report["info"]} == {"passkey_unknown_here"}


def test_verify_package_proves_a_passkey_decision_from_the_file_alone(site, tmp_path: Path) -> None:
    """An exported package carries the signed registration of each passkey its decisions were
    made with: `boris verify-package --keys` proves those assertions again offline, against
    the keys file alone. A forger who swaps the passkey in the package (and fixes the
    manifest) cannot make its entry verify, and the decision is named."""
    from test_archive import fix_digests, get, read_members, write_package

    signed, _server = site
    package, keys = tmp_path / "weekly.tar.gz", tmp_path / "trusted.keys"
    signed.ok("export", "weekly", str(package))
    keys.write_text(signed.ok("keys", "export", "--all"))
    members = read_members(package)
    carried = json.loads(get(members, "passkeys.json").data)["entries"]
    assert carried and all(e["value"]["body"]["actor"]["id"] == "rita" for e in carried)
    report = signed.read("verify-package", str(package), "--keys", str(keys))
    assert report["ok"] and report["problems"] == []
    assert "passkey_unknown_here" not in {i["kind"] for i in report["info"]}

    for entry in carried:
        entry["value"]["body"]["public_key"] = SoftAuthenticator("x").create_public_key()
    get(members, "passkeys.json").data = json.dumps({"entries": carried}).encode()
    fix_digests(members)
    forged = write_package(tmp_path / "forged.tar.gz", members)
    got = signed.boris("--json", "verify-package", str(forged), "--keys", str(keys))
    assert got.returncode == 3, got.stderr.decode()
    problems = json.loads(got.stdout)["error"]["details"]["report"]["problems"]
    assert {p["kind"] for p in problems} == {"passkey_assertion"}, problems
    assert all("its signature does not verify" in p["message"] for p in problems)

    # Entries of any other shape are judged, never a crash: each counts for nothing.
    for n, entry in enumerate(carried):
        entry["value"] = [{"body": "x"}, {"body": {"actor": []}}, {"body": {"actor": {}}}][n % 3]
    get(members, "passkeys.json").data = json.dumps({"entries": carried}).encode()
    fix_digests(members)
    odd = write_package(tmp_path / "odd.tar.gz", members)
    got = signed.boris("--json", "verify-package", str(odd), "--keys", str(keys))
    assert got.returncode in (0, 3) and b"Traceback" not in got.stderr, got.stderr.decode()
    assert "passkey" in got.stdout.decode()


def test_verify_finds_a_passkey_swapped_in_the_database(site) -> None:
    """Last: whoever writes the database directly cannot swap the passkey a decision was
    checked against; its entry's signature no longer verifies, and neither does the decision."""
    signed, _server = site
    db = sqlite3.connect(signed.store_dir / "boris.sqlite")
    with db:
        rows = db.execute("SELECT key, value FROM store_meta WHERE key LIKE 'passkey:%'").fetchall()
        for key, value in rows:
            entry = json.loads(value)
            entry["body"]["public_key"] = SoftAuthenticator("x").create_public_key()
            db.execute("UPDATE store_meta SET value = ? WHERE key = ?", (json.dumps(entry), key))
    db.close()
    report = signed.boris("verify", "--json")
    assert report.returncode != 0, report.stderr.decode()
    assert report.stdout, report.stderr.decode()
    problems = json.loads(report.stdout)["error"]["details"]["report"]["problems"]
    assert any(p["kind"] == "passkey_assertion" for p in problems), problems


def test_an_entry_written_by_hand_is_exported_as_it_is_and_refused_by_an_import(
    site, tmp_path: Path
) -> None:
    """After the swap above: an entry that is no JSON at all (the database written by hand).
    The export carries it as it is, without a trace; an import refuses the package in one
    line, with nothing written."""
    signed, _server = site
    db = sqlite3.connect(signed.store_dir / "boris.sqlite")
    with db:
        db.execute("UPDATE store_meta SET value = 'not json' WHERE key LIKE 'passkey:%'")
    db.close()
    package, there = tmp_path / "weekly.tar.gz", tmp_path / "elsewhere"
    signed.ok("export", "weekly", str(package))
    signed.ok("--store", str(there), "init", "--no-require-signatures", "--actor", "person:ivan")
    got = signed.boris("--store", str(there), "--actor", "person:ivan", "import", str(package))
    err = got.stderr.decode()
    assert got.returncode != 0 and "its value is not a JSON object" in err, err
    assert "Traceback" not in err and "\n" not in err.strip()


def _self_signed(where: Path) -> tuple[Path, Path]:
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=1))
        .not_valid_after(now + datetime.timedelta(hours=1))
        .add_extension(x509.SubjectAlternativeName([x509.DNSName("localhost")]), critical=False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    cert_path, key_path = where / "cert.pem", where / "key.pem"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return cert_path, key_path


def test_a_failure_inside_answers_without_its_trace() -> None:
    """The page's own middleware around a route that fails: a plain 500, no trace, the
    headers still there (Starlette's TestClient drives the ASGI app as uvicorn does)."""
    from starlette.applications import Starlette
    from starlette.middleware import Middleware
    from starlette.routing import Route
    from starlette.testclient import TestClient

    from store.web.guard import SecurityHeaders

    async def broken(request: object) -> None:
        raise RuntimeError("secret detail /home/rita/.config")

    app = Starlette(routes=[Route("/", broken)], middleware=[Middleware(SecurityHeaders)])
    with TestClient(app, raise_server_exceptions=False) as client:
        answer = client.get("/")
    assert answer.status_code == 500 and answer.text == "internal error: nothing was decided"
    assert "default-src 'none'" in answer.headers["content-security-policy"]
