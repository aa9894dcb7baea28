"""`boris serve --notify URL`: new approvals and expiries reach the reviewer through Apprise,
here its `json://` service posting to a local HTTP endpoint the test runs. One plain-text line
per burst, the page's link in it; nothing for a request the person made themselves."""

from __future__ import annotations

import contextlib
import http.server
import json
import queue
import threading
from collections.abc import Iterator
from typing import Any

import pytest

pytest.importorskip("apprise")
pytest.importorskip("uvicorn")

from signed_default import Signed, signed_default_store
from web_site import Server, serve

MAIL = {"kind": "send", "target": "mailto:team@example.org", "subject": "Week 49", "body": "ok"}


class Endpoint(http.server.ThreadingHTTPServer):
    """A chat service's webhook, as far as the test needs: it keeps what is posted."""

    def __init__(self) -> None:
        self.got: queue.Queue[dict[str, Any]] = queue.Queue()
        endpoint = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                n = int(self.headers["content-length"])
                endpoint.got.put({**json.loads(self.rfile.read(n)), "path": self.path})
                self.send_response(200)
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        super().__init__(("127.0.0.1", 0), Handler)


@contextlib.contextmanager
def listening() -> Iterator[Endpoint]:
    """An endpoint serving on a thread of its own until the block ends."""
    endpoint = Endpoint()
    threading.Thread(target=endpoint.serve_forever, daemon=True).start()
    try:
        yield endpoint
    finally:
        endpoint.shutdown()
        endpoint.server_close()


@pytest.fixture(scope="module")
def told() -> Iterator[Endpoint]:
    with listening() as endpoint:
        yield endpoint


@pytest.fixture(scope="module")
def site(
    tmp_path_factory: pytest.TempPathFactory, told: Endpoint
) -> Iterator[tuple[Signed, Server]]:
    signed = signed_default_store(tmp_path_factory.mktemp("notify") / "home", "agent:drafter")
    signed.task("weekly", "mailto:team@example.org")
    url = f"json://127.0.0.1:{told.server_address[1]}/boris"
    server = serve(signed, "--notify", url, "--notify-every", "0.3")
    yield signed, server
    assert "Traceback" not in server.stop()


def _ask(signed: Signed, what: str, *, expires: int = 3600, agent: bool = True) -> str:
    who = [] if agent else ["--actor", "person:rita"]
    return signed.ok(
        *who, "request-approval", "weekly", "--payload-json", json.dumps(MAIL),
        "--consequence", what, "--policy", "mail is reviewed", "--expires-in", str(expires),
        agent=agent,
    ).strip()  # fmt: skip


def test_a_new_approval_is_one_line_with_the_link(site, told: Endpoint) -> None:
    signed, server = site
    approval = _ask(signed, "mail the team <week 49>")
    line = told.got.get(timeout=20)
    assert line["title"] == "Boris" and "\n" not in line["message"]
    assert "approve? mail the team <week 49> (task weekly" in line["message"]
    assert line["message"].endswith(f"— {server.origin}/a/weekly/{approval}")


def test_one_line_a_burst_and_none_for_ones_own_request(site, told: Endpoint, tmp_path) -> None:
    signed, server = site
    _ask(signed, "a request rita made herself", agent=False)
    burst = tmp_path / "burst.jsonl"
    burst.write_text(
        "\n".join(
            json.dumps(
                {
                    "type": "request_approval",
                    "task_id": "weekly",
                    "payload": MAIL,
                    "consequence": f"mail number {n}",
                    "policy": "mail is reviewed",
                }
            )
            for n in (1, 2)
        )
    )
    signed.ok("ingest", str(burst), agent=True)
    line = told.got.get(timeout=20)["message"]
    assert "2 approvals wait on you: mail number " in line, line
    assert "mail number 1" in line and "mail number 2" in line
    assert "rita made herself" not in line and line.endswith(f"— {server.origin}/")
    with pytest.raises(queue.Empty):
        told.got.get(timeout=1.5)


def test_an_expiry_is_told(site, told: Endpoint) -> None:
    signed, _server = site
    _ask(signed, "a short-lived request", expires=1)
    assert "approve? a short-lived request" in told.got.get(timeout=20)["message"]
    assert "expired unanswered: a short-lived request" in told.got.get(timeout=20)["message"]


def test_deny_on_timeout_answers_the_agent_with_a_rejection(site, told: Endpoint) -> None:
    """The person's choice that silence means no: a request about to expire unanswered is
    rejected in their name, signed by their key, its note saying why; they are told."""
    signed, _server = site
    url = f"json://127.0.0.1:{told.server_address[1]}/deny"
    denying = serve(signed, "--deny-on-timeout", "--notify", url, "--notify-every", "0.3")
    try:
        approval = _ask(signed, "a request nobody answers", expires=4)
        lines = []
        while not any("denied on timeout" in line for line in lines):
            lines.append(told.got.get(timeout=20)["message"])
        assert any("denied on timeout: a request nobody answers" in line for line in lines)
    finally:
        assert "Traceback" not in denying.stop()
    state = next(a for a in signed.read("approvals", "weekly") if a["approval_id"] == approval)
    assert state["state"] == "rejected", state
    decided = [e for e in signed.read("events", "weekly") if e["type"] == "approval.decided"][-1]
    assert decided["actor"]["id"] == "rita" and decided["payload"]["approval_id"] == approval
    assert decided["payload"]["note"].startswith("denied on timeout: no answer")
    signed.assert_signed()


def test_the_urls_in_a_file_only_you_read(site, told: Endpoint, tmp_path) -> None:
    """`--notify-file`: the URLs (their tokens) in an Apprise configuration file readable by
    the person alone, not on the command line where other processes read them."""
    import os

    signed, _server = site
    urls = tmp_path / "notify.txt"
    urls.write_text(f"# my phone\njson://127.0.0.1:{told.server_address[1]}/from-file\n")
    os.chmod(urls, 0o644)
    refused = signed.boris("serve", "--actor", "person:rita", "--notify-file", str(urls))
    err = refused.stderr.decode()
    assert refused.returncode == 2 and f"chmod 600 {urls}" in err, err
    assert "Traceback" not in err and "\n" not in err.strip()
    empty = tmp_path / "empty.txt"
    empty.write_text("not a notification URL\n")
    os.chmod(empty, 0o600)
    refused = signed.boris("serve", "--actor", "person:rita", "--notify-file", str(empty))
    assert refused.returncode == 2 and "names no notification URL" in refused.stderr.decode()

    os.chmod(urls, 0o600)
    _ask(signed, "waiting before the server starts")
    from_file = serve(signed, "--notify-file", str(urls), "--notify-every", "0.3")
    try:
        # Its first look tells what already waits; then the new request, in a line of its own.
        first = told.got.get(timeout=20)
        while not first["path"].startswith("/from-file"):  # the module's server's lines too
            first = told.got.get(timeout=20)
        approval = _ask(signed, "mail the team from the file's URL")
        line = told.got.get(timeout=20)
        while not line["path"].startswith("/from-file"):
            line = told.got.get(timeout=20)
        assert line["message"].endswith(f"/a/weekly/{approval}"), line
    finally:
        assert "Traceback" not in from_file.stop()
