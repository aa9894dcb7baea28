"""The decision page in a real browser: Debian's Chromium driven by Selenium, a virtual WebAuthn
authenticator (Chrome DevTools' WebAuthn domain) standing in for the phone's passkey, on a
phone's viewport (390x844). One browser and one `boris serve` for the module.

A reviewer registers a passkey through the one-time link `boris serve` prints, opens a pending
e-mail approval an agent asked for through MCP (the official client over `boris mcp`) and waits
on (To, Subject, body and digest on screen), approves it: the record holds the assertion,
`boris verify` re-proves it offline, and the waiting agent receives the approval. Then the
refusals, each shown on the page and recorded as nothing: a changed payload, a replayed
assertion, one made for another approval, an expired approval, a revoked passkey, a request
without the CSRF token. Screenshots of the page go to docs/images/ (phone and desk sizes)."""

from __future__ import annotations

import json
import os
import re
import shutil
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("webauthn")
pytest.importorskip("uvicorn")
webdriver = pytest.importorskip("selenium.webdriver")

from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.common.virtual_authenticator import (  # noqa: E402
    Protocol,
    Transport,
    VirtualAuthenticatorOptions,
)
from selenium.webdriver.support.ui import WebDriverWait  # noqa: E402
from signed_default import ROOT, Signed, signed_default_store  # noqa: E402
from web_site import Server, WaitingAgent, serve  # noqa: E402

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
DRIVER = shutil.which("chromedriver")
#: The screenshots: docs/images/ when BORIS_WEB_SCREENSHOTS=1 (to refresh the manual's), else
#: the module's temporary directory (a test run leaves the checkout as it was).
SHOTS = "BORIS_WEB_SCREENSHOTS"

pytestmark = pytest.mark.skipif(
    CHROMIUM is None or DRIVER is None,
    reason="needs Debian's chromium and chromium-driver (apt-get install chromium chromium-driver)",
)

MAIL = {
    "kind": "send",
    "target": "mailto:team@example.org",
    "to": ["team@example.org"],
    "from": "drafter@example.org",
    "subject": "Week 49 status <draft>",
    "body": "Hello team,\n\nAll green this week: the import job is fixed and the "
    "backlog is down to 3 items.\n\n— drafter",
}


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Signed, Server]]:
    signed = signed_default_store(tmp_path_factory.mktemp("browser") / "home", "agent:drafter")
    signed.task("weekly", "mailto:team@example.org")
    server = serve(signed)
    yield signed, server
    assert "Traceback" not in server.stop()


@pytest.fixture(scope="module")
def images(tmp_path_factory: pytest.TempPathFactory) -> Path:
    where = (
        ROOT / "docs" / "images"
        if os.environ.get(SHOTS) == "1"
        else tmp_path_factory.mktemp("shots")
    )
    where.mkdir(parents=True, exist_ok=True)
    return where


@pytest.fixture(scope="module")
def browser(site: tuple[Signed, Server]) -> Iterator[Any]:
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu"):
        options.add_argument(arg)
    options.add_argument("--window-size=390,844")
    # The console, to find what the Content-Security-Policy blocked (nothing, it must be).
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(DRIVER), options=options)
    driver.set_script_timeout(20)
    _viewport(driver, 390, 844, mobile=True)
    driver.add_virtual_authenticator(
        VirtualAuthenticatorOptions(
            protocol=Protocol.CTAP2,
            transport=Transport.INTERNAL,
            has_resident_key=True,
            has_user_verification=True,
            is_user_verified=True,
        )
    )
    yield driver
    blocked = [
        entry["message"]
        for entry in driver.get_log("browser")
        if "Content Security Policy" in entry["message"] or "Refused to" in entry["message"]
    ]
    driver.quit()
    assert blocked == [], blocked  # the page needs nothing its own policy refuses


def _viewport(driver: Any, width: int, height: int, *, mobile: bool) -> None:
    driver.execute_cdp_cmd(
        "Emulation.setDeviceMetricsOverride",
        {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": mobile},
    )


def _ask(signed: Signed, payload: dict[str, Any], expires: int = 3600) -> str:
    return signed.ok(
        "request-approval", "weekly", "--payload-json", json.dumps(payload),
        "--consequence", "mail the team the week's status", "--policy", "mail is reviewed",
        "--expires-in", str(expires), agent=True,
    ).strip()  # fmt: skip


def _rita_wrote(signed: Signed, since: int) -> list[dict[str, Any]]:
    """The task's events after the first `since` that rita's decisions would be."""
    return [e for e in signed.read("events", "weekly")[since:] if e["actor"]["id"] == "rita"]


def _refusal_shown(driver: Any) -> str:
    """The page's status line after a refusal: said, in the refusal's style."""
    status = driver.find_element(By.CSS_SELECTOR, ".status")
    assert "refusal" in (status.get_attribute("class") or ""), status.text
    assert status.text.strip(), "a refusal the page does not explain"
    seen = driver.execute_script(
        "const r = arguments[0].getBoundingClientRect();"
        "return r.top >= 0 && r.bottom <= window.innerHeight + 1;",
        status,
    )
    assert seen, "the refusal is out of sight: the person would have to scroll to find it"
    return str(status.text)


def _outcome(driver: Any) -> str:
    """What the page's script says of its last ceremony (body[data-outcome])."""
    WebDriverWait(driver, 20).until(
        lambda d: d.find_element(By.TAG_NAME, "body").get_attribute("data-outcome")
    )
    return str(driver.find_element(By.TAG_NAME, "body").get_attribute("data-outcome"))


def _click(driver: Any, css: str) -> str:
    driver.execute_script("document.body.removeAttribute('data-outcome')")
    driver.find_element(By.CSS_SELECTOR, css).click()
    return _outcome(driver)


def _state(signed: Signed, approval: str) -> str:
    return next(
        a["state"] for a in signed.read("approvals", "weekly") if a["approval_id"] == approval
    )


def _fetch(driver: Any, path: str, body: dict[str, Any], *, csrf: bool = True) -> dict[str, Any]:
    """A POST from the page's own origin, as its script sends it (with or without CSRF)."""
    return dict(
        driver.execute_async_script(
            """
            const [path, body, csrf, done] = arguments;
            const headers = {"Content-Type": "application/json"};
            if (csrf) headers["X-CSRF-Token"] = document.querySelector("meta[name=csrf-token]").content;
            fetch(path, {method: "POST", headers, body: JSON.stringify(body), credentials: "same-origin"})
              .then(async (r) => done({status: r.status, answer: await r.json()}));
            """,
            path,
            body,
            csrf,
        )
    )


def test_register_then_approve_an_email_on_a_phone(site, browser, images) -> None:
    signed, server = site
    browser.get(server.register_url)
    assert "person:rita" in browser.find_element(By.TAG_NAME, "main").text
    assert _click(browser, "#register") == "ok"
    agent = WaitingAgent(signed, MAIL)
    agent.start()
    assert agent.asked.wait(60) and agent.failed is None, agent.failed
    approval = agent.approval
    browser.get(server.origin + "/")
    WebDriverWait(browser, 10).until(lambda d: "Pending approvals" in d.title)
    browser.find_element(By.CSS_SELECTOR, f'a[href="/a/weekly/{approval}"]').click()
    WebDriverWait(browser, 10).until(lambda d: d.find_elements(By.CSS_SELECTOR, "form.decide"))
    shown = browser.find_element(By.TAG_NAME, "main").text
    digest = browser.find_element(By.CSS_SELECTOR, "form.decide").get_attribute("data-digest")
    for seen in ("team@example.org", "Week 49 status <draft>", "the import job is fixed", digest):
        assert seen in shown, seen
    # Fits the phone: nothing wider than the viewport.
    assert browser.execute_script("return document.documentElement.scrollWidth") <= 390
    assert browser.save_screenshot(str(images / "phone-approval-390x844.png"))
    assert agent.is_alive() and not agent.result  # still waiting on rita
    browser.find_element(By.ID, "note").send_keys("fine to send")
    assert _click(browser, "button.approved") == "approved"
    agent.join(60)
    assert agent.failed is None and not agent.is_alive(), agent.failed
    assert agent.result["ok"] and agent.result["timed_out"] is False, agent.result
    got = agent.result["result"]
    assert got["state"] == "approved" and got["decided_by"]["id"] == "rita", got
    last = json.loads(
        browser.find_element(By.TAG_NAME, "body").get_attribute("data-last-assertion")
    )
    decided = [e for e in signed.read("events", "weekly") if e["type"] == "approval.decided"][-1]
    assert decided["actor"]["id"] == "rita" and decided["payload"]["note"] == "fine to send"
    assert decided["payload"]["assertion"]["digest"] == digest
    signed.assert_signed()  # boris verify: the assertion re-proved offline
    # The same assertion posted again: replayed, and nothing more is recorded.
    before = len(signed.read("events", "weekly"))
    again = _fetch(browser, f"/a/weekly/{approval}/finish", last)
    assert again["status"] == 409 and again["answer"]["error"] == "assertion_replayed"
    assert _rita_wrote(signed, before) == []


def test_refused_in_the_browser(site, browser) -> None:
    signed, server = site
    # The same object asked twice: only the approval tells the two assertions apart.
    one, other = _ask(signed, MAIL), _ask(signed, MAIL)
    before = len(signed.read("events", "weekly"))
    browser.get(server.origin + f"/a/weekly/{one}")
    WebDriverWait(browser, 10).until(lambda d: d.find_elements(By.CSS_SELECTOR, "form.decide"))
    # Signed for one approval, posted for another.
    crossed = browser.execute_async_script(
        """
        const [begin, finish, digest, done] = arguments;
        const csrf = document.querySelector("meta[name=csrf-token]").content;
        const post = (url, body) => fetch(url, {method: "POST", credentials: "same-origin",
          headers: {"Content-Type": "application/json", "X-CSRF-Token": csrf},
          body: JSON.stringify(body)}).then(async (r) => ({status: r.status, answer: await r.json()}));
        (async () => {
          const started = await post(begin, {verdict: "approved", note: "", digest});
          const options = PublicKeyCredential.parseRequestOptionsFromJSON(JSON.parse(started.answer.options));
          const credential = await navigator.credentials.get({publicKey: options});
          done(await post(finish, {key: started.answer.key, credential: credential.toJSON()}));
        })();
        """,
        f"/a/weekly/{one}/begin",
        f"/a/weekly/{other}/finish",
        browser.find_element(By.CSS_SELECTOR, "form.decide").get_attribute("data-digest"),
    )
    assert crossed["answer"]["error"] == "assertion_mismatch", crossed
    # Without the CSRF token.
    assert (
        _fetch(browser, f"/a/weekly/{one}/begin", {"verdict": "approved"}, csrf=False)["status"]
        == 403
    )
    # The payload changed after the page was read (the agent revised it): stale.
    effect = signed.ok(
        "plan-effect", "weekly", "--kind", "send", "--target", "mailto:team@example.org",
        "--consequence", "mail the team the week's status", "--text", "v1",
        "--requires-approval", "--policy", "mail is reviewed", agent=True,
    ).strip()  # fmt: skip
    stale = signed.ok(
        "request-approval", "weekly", "--effect", effect, "--policy", "p", agent=True
    ).strip()
    browser.get(server.origin + f"/a/weekly/{stale}")
    WebDriverWait(browser, 10).until(lambda d: d.find_elements(By.CSS_SELECTOR, "form.decide"))
    signed.ok("revise-effect", "weekly", effect, "--text", "v2", "--reason", "typo", agent=True)
    assert _click(browser, "button.approved") == "refused:stale_digest"
    said = _refusal_shown(browser)
    assert "went stale since you read it" in said and "nothing was decided" in said, said
    # Expired while the page was open.
    short = _ask(signed, MAIL, expires=2)
    browser.get(server.origin + f"/a/weekly/{short}")
    WebDriverWait(browser, 10).until(lambda d: d.find_elements(By.CSS_SELECTOR, "form.decide"))
    time.sleep(2.2)
    assert _click(browser, "button.approved") == "refused:approval_expired"
    said = _refusal_shown(browser)
    assert re.search(r"expired [^,]*UTC, .* ago", said), said  # as a person reads it
    assert "nothing was decided" in said, said
    # Refused, each recorded as nothing: no event of rita's, no decision of anyone's.
    assert _rita_wrote(signed, before) == []
    after = signed.read("events", "weekly")[before:]
    assert [e for e in after if e["type"] == "approval.decided"] == []
    assert {_state(signed, a) for a in (one, other)} == {"pending"}
    assert _state(signed, stale) != "approved"


def test_long_unbroken_strings_fit_the_phone(site, browser) -> None:
    """A consequence, a subject and a body of one long word each (a link, a token): the list
    and the page still fit 390 px; nothing scrolls sideways, the words wrap."""
    signed, server = site
    long = {**MAIL, "subject": "S" * 160, "body": "https://example.org/" + "b" * 300}
    approval = signed.ok(
        "request-approval", "weekly", "--payload-json", json.dumps(long),
        "--consequence", "mail " + "C" * 160, "--policy", "P" * 120, agent=True,
    ).strip()  # fmt: skip
    for path in ("/", f"/a/weekly/{approval}"):
        browser.get(server.origin + path)
        WebDriverWait(browser, 10).until(lambda d: d.find_elements(By.TAG_NAME, "main"))
        assert "C" * 40 in browser.find_element(By.TAG_NAME, "main").text, path
        width = browser.execute_script("return document.documentElement.scrollWidth")
        assert width <= 390, (path, width)


def test_the_browser_enforces_the_policy(site, browser) -> None:
    """Markup that got into the page anyway (here put there by the test) runs no inline
    script: Chromium refuses it under the page's Content-Security-Policy, and says so."""
    _signed, server = site
    browser.get_log("browser")  # what came before
    browser.get(server.origin + "/")
    WebDriverWait(browser, 10).until(lambda d: d.find_elements(By.TAG_NAME, "main"))
    browser.execute_script(
        "const s = document.createElement('script'); s.textContent = 'window.ran = 1';"
        "document.body.appendChild(s);"
        "const i = document.createElement('img'); i.setAttribute('onerror', 'window.ran = 2');"
        "i.src = '/no-such.png'; document.body.appendChild(i);"
    )
    time.sleep(0.3)
    assert browser.execute_script("return window.ran === undefined")
    said = [e["message"] for e in browser.get_log("browser")]
    assert any("violates the following Content Security Policy" in m for m in said), said


def test_a_revoked_passkey_and_the_desk_size(site, browser, images) -> None:
    signed, server = site
    approval = _ask(signed, MAIL)
    _viewport(browser, 1366, 768, mobile=False)
    browser.get(server.origin + f"/a/weekly/{approval}")
    WebDriverWait(browser, 10).until(lambda d: d.find_elements(By.CSS_SELECTOR, "form.decide"))
    assert browser.save_screenshot(str(images / "desk-approval-1366x768.png"))
    _viewport(browser, 390, 844, mobile=True)
    browser.get(server.origin + f"/a/weekly/{approval}")
    WebDriverWait(browser, 10).until(lambda d: d.find_elements(By.CSS_SELECTOR, "form.decide"))
    # The phone is lost while the page is open: rita revokes its passkey at her desk.
    for p in signed.read("passkeys", "list")["passkeys"]:
        signed.ok("--actor", "person:rita", "passkeys", "revoke", "--", p["credential_id"])
    before = len(signed.read("events", "weekly"))
    refused = _click(browser, "button.rejected")
    assert refused == "refused:passkey_revoked", browser.find_element(
        By.CSS_SELECTOR, ".status"
    ).text
    _refusal_shown(browser)
    assert _rita_wrote(signed, before) == []
    assert _state(signed, approval) == "pending"
    # Its session ended with it: the phone reads nothing more of the record either.
    browser.get(server.origin + f"/a/weekly/{approval}")
    WebDriverWait(browser, 10).until(lambda d: d.find_elements(By.ID, "sign-in"))
    assert "Week 49" not in browser.find_element(By.TAG_NAME, "main").text
    signed.assert_signed()
