"""The decision page's defences (issue 43), each on every page and endpoint rather than one:
tests/test_web_passkeys.py checks them on the front page; here the real `boris serve` on the
default signed store (`boris init`), spoken to over HTTP as the page's script speaks to it, with
a software passkey (tests/web_authenticator.py).

- CSRF: every POST endpoint refuses a request without the session's token, with a wrong one,
  or with another session's, and records nothing.
- Headers: the strict Content-Security-Policy (and its companions) on every kind of response;
  no inline script, no event-handler or style attribute, no javascript: address in any page.
- Cookies: Secure, HttpOnly, SameSite=Strict before and after signing in; signing in gives a
  new session id (no fixation).
- No trace: malformed requests of every shape answer 4xx with a plain message, never a 500
  nor a Python trace.
- Escaping: a task whose strings are HTML (title, consequence, policy, To, Subject, body, a
  file's content in a diff) is shown literally, on the pending list and the approval's page.
- TLS: every address but loopback is refused without a certificate; a plain-http origin
  other than localhost is refused (a passkey needs a secure origin)."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("webauthn")
pytest.importorskip("uvicorn")

from signed_default import PERSON, Signed, signed_default_store
from web_authenticator import SoftAuthenticator
from web_site import Client, Server, serve

EVIL = '<img src=x onerror="alert(1)">"\'><script>alert(2)</script>'
MAIL = {
    "kind": "send",
    "target": "mailto:team@example.org",
    "to": [f"team@example.org {EVIL}"],
    "subject": f"Week 49 {EVIL}",
    "body": f"Hello {EVIL} team",
}
POSTS = (
    "/auth/register/begin",
    "/auth/register/finish",
    "/auth/login/begin",
    "/auth/login/finish",
    "/a/weekly/{approval}/begin",
    "/a/weekly/{approval}/finish",
)


class Page(HTMLParser):
    """What a browser would run or style from a page: its elements, attributes and text."""

    def __init__(self, html: str) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.text: list[str] = []
        self._in: list[str] = []
        self.feed(html)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))
        self._in.append(tag)

    def handle_endtag(self, tag: str) -> None:
        if self._in and self._in[-1] == tag:
            self._in.pop()

    def handle_data(self, data: str) -> None:
        if self._in and self._in[-1] == "script" and data.strip():
            self.text.append("<<inline script>>" + data)
        self.text.append(data)

    def runs_only_its_own_script(self) -> None:
        scripts = [a for t, a in self.tags if t == "script"]
        assert scripts == [{"src": "/static/boris.js", "defer": None}], scripts
        assert not any(s.startswith("<<inline script>>") for s in self.text)
        for tag, attrs in self.tags:
            assert tag not in ("img", "iframe", "object", "embed", "style"), tag
            for name, value in attrs.items():
                assert not name.startswith("on"), (tag, name)
                assert name != "style", (tag, name)
                assert not (value or "").strip().lower().startswith("javascript:"), (tag, value)


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Signed, Server, str, str]]:
    """An agent's hostile e-mail and a hostile file write, each waiting on rita."""
    home = tmp_path_factory.mktemp("i43-defences") / "home"
    signed = signed_default_store(home, "agent:drafter")
    work = home / "work"
    work.mkdir()
    (work / "notes.txt").write_text(f"old line {EVIL}\n")
    signed.ok(
        "--actor", PERSON, "create-task", "--id", "weekly", "--title", f"Weekly {EVIL}",
        "--owner", "rita", "--objective", "the agent asks", "--destination",
        "mailto:team@example.org", "--scope", str(work),
    )  # fmt: skip
    signed.tasks.append("weekly")
    mail = signed.ok(
        "request-approval", "weekly", "--payload-json", json.dumps(MAIL),
        "--consequence", f"mail the team {EVIL}", "--policy", f"mail {EVIL}", agent=True,
    ).strip()  # fmt: skip
    effect = signed.ok(
        "plan-effect", "weekly", "--kind", "file_write", "--target", str(work / "notes.txt"),
        "--consequence", f"write the notes {EVIL}", "--text", f"new line {EVIL}\n",
        "--requires-approval", "--policy", "writes are reviewed", agent=True,
    ).strip()  # fmt: skip
    write = signed.ok(
        "request-approval", "weekly", "--effect", effect, "--policy", "writes are reviewed",
        agent=True,
    ).strip()  # fmt: skip
    server = serve(signed)
    yield signed, server, mail, write
    assert "Traceback" not in server.stop()


def _register(server: Server) -> tuple[Client, SoftAuthenticator, str]:
    """Rita registers a passkey through the one-time link: signed in, her cookie as set."""
    client, auth = server.client(), SoftAuthenticator(server.origin)
    token = server.register_url.split("token=")[1]
    first = client.page(f"/register?token={token}")
    anonymous = client.cookie
    _cookie_is_strict(first.headers["set-cookie"])
    key, options = client.begin("/auth/register/begin", {"token": token})
    done = client.post(
        "/auth/register/finish", {"key": key, "token": token, "credential": auth.create(options)}
    )
    assert done.status_code == 200, done.text
    _cookie_is_strict(done.headers["set-cookie"])
    assert client.cookie != anonymous  # a new session id once signed in
    token_before = client.csrf
    client.page("/")
    assert client.csrf != token_before  # and a new CSRF token
    return client, auth, anonymous


@pytest.fixture(scope="module")
def rita(site) -> tuple[Client, SoftAuthenticator, str]:
    _signed, server, _mail, _write = site
    return _register(server)


def _cookie_is_strict(header: str) -> None:
    parts = [p.strip().lower() for p in header.split(";")]
    assert parts[0].startswith("boris_session="), header
    assert {"httponly", "secure", "samesite=strict", "path=/"} <= set(parts), header


def _headers_are_strict(headers: Any, what: str) -> None:
    csp = headers.get("content-security-policy", "")
    directives = dict(
        (d.strip().partition(" ")[0], d.strip().partition(" ")[2]) for d in csp.split(";")
    )
    assert directives.get("default-src") == "'none'", (what, csp)
    assert directives.get("script-src") == "'self'", (what, csp)
    assert directives.get("frame-ancestors") == "'none'", (what, csp)
    assert "unsafe-inline" not in csp and "unsafe-eval" not in csp and "*" not in csp, what
    assert headers.get("x-content-type-options") == "nosniff", what
    assert headers.get("referrer-policy") == "no-referrer", what  # the one-time link stays
    assert headers.get("cache-control") == "no-store", what
    assert "server" not in headers or "uvicorn" not in headers["server"].lower(), what


def test_every_response_carries_the_policy_and_no_page_runs_inline_script(site, rita) -> None:
    _signed, server, mail, write = site
    client, _auth, _anon = rita
    stranger = server.client()
    pages = {
        "sign-in": stranger.page("/"),
        "register (a spent link)": stranger.page(server.register_url.split(server.origin)[1]),
        "pending": client.page("/"),
        "mail": client.page(f"/a/weekly/{mail}"),
        "write": client.page(f"/a/weekly/{write}"),
        "unknown approval": client.page("/a/weekly/apr-nope"),
        "no such page": client.page("/no/such/page"),
        "a GET of a POST": client.page("/logout"),
    }
    assert pages["register (a spent link)"].status_code == 403  # one passkey a link
    for what, answer in pages.items():
        assert answer.status_code < 500, (what, answer.status_code)
        _headers_are_strict(answer.headers, what)
        assert answer.headers["content-type"].startswith("text/html"), what
        Page(answer.text).runs_only_its_own_script()
    for path in ("/static/boris.js", "/static/boris.css"):
        _headers_are_strict(client.http.get(server.origin + path).headers, path)
    refused = client.post("/a/weekly/x/begin", {}, csrf=False)
    assert refused.status_code == 403
    _headers_are_strict(refused.headers, "a refused POST")
    # The script itself adds no HTML from strings: text only (textContent), never innerHTML.
    script = client.http.get(server.origin + "/static/boris.js").text
    assert "innerHTML" not in script and "eval(" not in script and "document.write" not in script


def test_every_post_needs_the_sessions_own_csrf_token(site, rita) -> None:
    signed, server, mail, _write = site
    client, _auth, _anon = rita
    other = server.client()
    other.page("/")  # another session, its own token
    before = signed.read("events", "weekly")
    for path in (p.format(approval=mail) for p in POSTS):
        for token in (None, "", "guessed", other.csrf):
            headers = {"cookie": client.cookie, "content-type": "application/json"}
            if token is not None:
                headers["x-csrf-token"] = token
            body = json.dumps({"verdict": "approved", "digest": "sha256:x", "note": ""})
            answer = client.http.post(server.origin + path, content=body, headers=headers)
            assert answer.status_code == 403 and answer.json()["error"] == "csrf", (path, token)
    logout = client.http.post(
        server.origin + "/logout", data={"csrf": other.csrf}, headers={"cookie": client.cookie}
    )
    assert logout.status_code == 403
    assert client.page("/").text.count("signed in as person:rita") == 1  # still signed in
    assert signed.read("events", "weekly") == before


def _malformed(approval: str) -> list[tuple[str, bytes | str, str]]:
    """(path, body, content type): what a careless or hostile client may send."""
    begin, finish = f"/a/weekly/{approval}/begin", f"/a/weekly/{approval}/finish"
    json_type = "application/json"
    return [
        (begin, b"\xff\xfe not utf-8", json_type),
        (begin, "[1, 2]", json_type),
        (begin, '"a string"', json_type),
        (begin, "null", json_type),
        (begin, "verdict=approved", "application/x-www-form-urlencoded"),
        (begin, json.dumps({"verdict": "maybe", "digest": "sha256:x"}), json_type),
        (begin, json.dumps({"verdict": ["approved"], "digest": {"a": 1}}), json_type),
        (begin, json.dumps({"verdict": "approved", "digest": "x", "note": "n" * 5000}), json_type),
        (finish, json.dumps({}), json_type),
        (finish, json.dumps({"key": ["x"], "credential": "x"}), json_type),
        (finish, json.dumps({"key": "no-such-nonce", "credential": {}}), json_type),
        ("/a/weekly/apr-nope/begin", json.dumps({"verdict": "approved", "digest": "x"}), json_type),
        ("/a/nope/apr-nope/finish", json.dumps({"key": "x", "credential": []}), json_type),
    ]


def test_malformed_requests_answer_4xx_without_a_trace(site, rita) -> None:
    signed, server, mail, _write = site
    client, auth, _anon = rita
    before = signed.read("events", "weekly")
    answers = []
    for path, body, kind in _malformed(mail):
        headers = {"cookie": client.cookie, "x-csrf-token": client.csrf, "content-type": kind}
        answers.append(
            (path, body, client.http.post(server.origin + path, content=body, headers=headers))
        )
    # A real begin, then its finish with a credential of every wrong shape.
    page = client.page(f"/a/weekly/{mail}")
    digest = re.search(r'data-digest="([^"]+)"', page.text)
    assert digest, page.text
    good = auth.get(
        client.begin(
            f"/a/weekly/{mail}/begin",
            {"verdict": "rejected", "note": "", "digest": digest.group(1)},
        )[1]
    )
    key = client.begin(
        f"/a/weekly/{mail}/begin", {"verdict": "rejected", "note": "", "digest": digest.group(1)}
    )[0]
    broken: list[Any] = [
        "not an object",
        [good],
        {**good, "response": "x"},
        {**good, "response": {**good["response"], "signature": "!!!"}},
        {**good, "response": {**good["response"], "clientDataJSON": "e30"}},
        {**good, "id": None},
    ]
    for credential in broken:
        answer = client.post(f"/a/weekly/{mail}/finish", {"key": key, "credential": credential})
        answers.append(("finish", credential, answer))
    wrong = [
        (path, body, answer.status_code, answer.text[:200])
        for path, body, answer in answers
        if not 400 <= answer.status_code < 500
        or "Traceback" in answer.text
        or 'File "' in answer.text
        or str(Path(__file__).parent.parent) in answer.text
    ]
    assert not wrong, "\n".join(map(repr, wrong))
    assert signed.read("events", "weekly") == before


def test_signing_in_sets_a_strict_cookie_and_a_new_session(site, rita) -> None:
    """Rita signs in on a second browser with the passkey she registered."""
    _signed, server, mail, _write = site
    _client, auth, _anon = rita
    second = server.client()
    assert "Sign in with passkey" in second.page("/").text
    anonymous = second.cookie
    assert second.page(f"/a/weekly/{mail}").status_code == 303  # signed out: nothing shown
    key, options = second.begin("/auth/login/begin", {})
    done = second.post("/auth/login/finish", {"key": key, "credential": auth.get(options)})
    assert done.status_code == 200 and done.json()["actor"] == PERSON, done.text
    _cookie_is_strict(done.headers["set-cookie"])
    assert second.cookie != anonymous
    # The anonymous session id a page handed out before signing in is not signed in.
    stale = second.http.get(server.origin + "/", headers={"cookie": anonymous})
    assert "Sign in with passkey" in stale.text and "signed in as" not in stale.text
    assert "signed in as person:rita" in second.page("/").text


def _shown_literally(html: str) -> str:
    page = Page(html)
    page.runs_only_its_own_script()
    return "".join(page.text)


def test_every_task_string_is_shown_literally(site, rita) -> None:
    """Title, consequence, policy, To, Subject, body and a file's lines in a diff, each HTML
    an agent or a person typed: read as text, never as markup."""
    _signed, _server, mail, write = site
    client, _auth, _anon = rita
    pending = _shown_literally(client.page("/").text)
    assert f"mail the team {EVIL}" in pending and f"Weekly {EVIL}" in pending
    assert f"write the notes {EVIL}" in pending
    shown = _shown_literally(client.page(f"/a/weekly/{mail}").text)
    for literal in (
        f"mail the team {EVIL}",
        f"mail {EVIL}",
        f"Week 49 {EVIL}",
        f"Hello {EVIL} team",
    ):
        assert literal in shown, literal
    # The addresses as the store parses them (an address list), the markup in them as text.
    to = shown.split("Message to send", 1)[1].split("Subject", 1)[0]
    assert to.startswith("Toteam@example.org") and "<script>alert(2)</script>" in to, to
    diff = _shown_literally(client.page(f"/a/weekly/{write}").text)
    assert f"-old line {EVIL}" in diff and f"+new line {EVIL}" in diff, diff


@pytest.mark.parametrize(
    "argv, said",
    [
        (["--host", "0.0.0.0"], "refusing to serve on 0.0.0.0 without TLS"),
        (["--host", "192.168.1.20"], "refusing to serve on 192.168.1.20 without TLS"),
        (["--host", "::"], "refusing to serve on :: without TLS"),
        (["--origin", "http://boris.example.net"], "a passkey needs a secure origin"),
        (["--cert", "cert.pem"], "give both --cert and --key"),
    ],
)
def test_serve_refuses_to_listen_in_clear(site, argv: list[str], said: str) -> None:
    """Beyond loopback only with TLS; started from the command line as a person does."""
    signed = site[0]
    refused = signed.boris("serve", "--actor", PERSON, "--port", "1", *argv)
    err = refused.stderr.decode()
    assert refused.returncode == 2 and said in err, err
    assert "Traceback" not in err and "\n" not in err.strip()


def test_authentication_is_rate_limited_at_every_step(site, rita) -> None:
    """Ten attempts a minute from one address, whichever step of signing in or registering:
    then each of them is refused (429, the page's headers, no trace) and nothing is recorded.
    A server of its own, so that the module's keeps its budget."""
    signed = site[0]
    server = serve(signed)
    try:
        client = server.client()
        client.page("/")
        steps = [p for p in POSTS if p.startswith("/auth/")]
        said = [client.post(steps[n % len(steps)], {}).status_code for n in range(10)]
        assert 429 not in said, said
        for step in steps:
            refused = client.post(step, {"key": "x", "token": "x", "credential": {}})
            assert refused.status_code == 429 and refused.json()["error"] == "rate_limited"
            _headers_are_strict(refused.headers, step)
        # Only the passkey the module's rita registered: the refused steps added none.
        listed = signed.read("passkeys", "list")["passkeys"]
        assert [p["actor"] for p in listed] == [PERSON], listed
    finally:
        assert "Traceback" not in server.stop()


def test_over_https_the_browser_is_told_to_stay_on_https(site, tmp_path: Path) -> None:
    """With a certificate (or an https --origin behind a proxy) every response carries HSTS;
    over plain loopback http, where it would mean nothing, none does."""
    import ssl

    import httpx
    from test_web_passkeys import _self_signed

    signed, plain, _mail, _write = site
    assert "strict-transport-security" not in plain.client().page("/").headers
    cert, key = _self_signed(tmp_path)
    tls = serve(signed, "--cert", str(cert), "--cert-key", str(key), scheme="https")
    try:
        trusted = ssl.create_default_context(cafile=str(cert))
        for path in ("/", "/static/boris.js", "/no/such/page"):
            answer = httpx.get(tls.origin + path, verify=trusted, timeout=20)
            assert answer.headers["strict-transport-security"] == "max-age=31536000", path
            _headers_are_strict(answer.headers, path)
        _cookie_is_strict(httpx.get(tls.origin + "/", verify=trusted).headers["set-cookie"])
    finally:
        assert "Traceback" not in tls.stop()


def test_a_revoked_passkey_ends_its_sessions(site) -> None:
    """A lost phone: once its passkey is revoked at the desk, its signed-in session shows
    nothing more of the record (not only decides nothing). A server of its own, a passkey
    of its own, so that the module's stay as they are."""
    signed, _plain, mail, _write = site
    server = serve(signed)
    try:
        lost, _phone = _register(server)[:2]
        assert "signed in as person:rita" in lost.page("/").text
        assert lost.page(f"/a/weekly/{mail}").status_code == 200
        newest = max(signed.read("passkeys", "list")["passkeys"], key=lambda p: p["added_at"])
        signed.ok("--actor", PERSON, "passkeys", "revoke", "--", newest["credential_id"])
        assert lost.page(f"/a/weekly/{mail}").status_code == 303
        front = lost.page("/")
        assert "Sign in with passkey" in front.text and "mail the team" not in front.text
        refused = lost.post(f"/a/weekly/{mail}/begin", {"verdict": "approved", "digest": "x"})
        assert refused.json()["error"] == "signed_out", refused.text
    finally:
        assert "Traceback" not in server.stop()
