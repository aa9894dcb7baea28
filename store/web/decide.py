"""The page's ceremonies: register a passkey (a one-time link from `boris serve`), sign in
with it, and decide one approval with an assertion of exactly that decision.

A decision is two steps. `begin` takes the verdict, the note and the digest the page showed,
draws a nonce and answers the WebAuthn options whose challenge is the store's
`decision_challenge` of them; `finish` hands the browser's assertion to the store's
`DecideApproval` for the approval its address names. The store judges it (a stale digest, an
expired approval, a replayed nonce, an assertion made for another decision, a passkey not
registered or revoked): the page adds no rule.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Awaitable, Callable
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from ..api import Actor, DecideApproval
from ..db import database_now
from ..reads import passkeys as pk
from . import ceremony, guard
from .site import NOTE_LIMIT, Site, decide, register_passkey

Step = Callable[[str, guard.Session, dict[str, Any], Request], Awaitable[Response]]
VERDICTS = ("approved", "rejected", "sent_back")


def _options(key: str, options_json: str) -> JSONResponse:
    return JSONResponse({"key": key, "options": options_json})


def _credential(body: dict[str, Any]) -> dict[str, Any]:
    """The browser's answer (`PublicKeyCredential.toJSON()`): an object whose `response` is
    one; anything else is refused as a bad request, never left to fail inside."""
    credential = body.get("credential")
    if not isinstance(credential, dict) or not isinstance(credential.get("response"), dict):
        raise ceremony.CeremonyRefused("bad_request", "the passkey's answer is not a credential")
    return credential


def register_routes(site: Site) -> dict[str, Step]:
    rp = site.rp

    async def register_begin(
        sid: str, s: guard.Session, body: dict[str, Any], _r: Request
    ) -> Response:
        inv = site.invitations.get(str(body.get("token") or ""))
        if inv is None or inv.expires <= time.monotonic():
            raise ceremony.CeremonyRefused("link_invalid", "this registration link is not valid")
        actor = f"{inv.actor.kind}:{inv.actor.id}"

        def known() -> list[str]:
            with site.store.read() as conn:
                now = database_now(conn)
                return [
                    p.credential_id for p in pk.registry(conn).of(inv.actor.kind, inv.actor.id, now)
                ]

        challenge, options = ceremony.registration_options(
            rp, actor, inv.actor.name, await site.call(known)
        )
        key = secrets.token_urlsafe(16)
        site.challenges.issue(
            key,
            ceremony.Pending(sid, "register", challenge, time.monotonic() + 300, actor=actor),
        )
        return _options(key, options)

    async def register_finish(
        sid: str, s: guard.Session, body: dict[str, Any], _r: Request
    ) -> Response:
        p = site.challenges.take(str(body.get("key") or ""), sid, "register")
        token = str(body.get("token") or "")
        inv = site.invitations.get(token)
        if inv is None or f"{inv.actor.kind}:{inv.actor.id}" != p.actor:
            raise ceremony.CeremonyRefused("link_invalid", "this registration link is not valid")
        cred, public = ceremony.registered(rp, _credential(body), p.challenge)
        from starlette.concurrency import run_in_threadpool

        await run_in_threadpool(register_passkey, site, inv.actor, cred, public)
        del site.invitations[token]  # one passkey a link
        new = site.sessions.sign_in(sid, p.actor, cred)
        response = JSONResponse({"ok": True, "credential_id": cred, "next": "/"})
        guard.remember(response, new, secure=site.secure_cookies)
        return response

    return {"/auth/register/begin": register_begin, "/auth/register/finish": register_finish}


def login_routes(site: Site) -> dict[str, Step]:
    rp = site.rp

    async def login_begin(
        sid: str, s: guard.Session, body: dict[str, Any], _r: Request
    ) -> Response:
        challenge = secrets.token_bytes(32)
        key = secrets.token_urlsafe(16)
        site.challenges.issue(
            key, ceremony.Pending(sid, "login", challenge, time.monotonic() + 300)
        )
        return _options(key, ceremony.assertion_options(rp, challenge, []))

    async def login_finish(
        sid: str, s: guard.Session, body: dict[str, Any], _r: Request
    ) -> Response:
        p = site.challenges.take(str(body.get("key") or ""), sid, "login")
        credential = _credential(body)

        def passkey() -> tuple[pk.Passkey | None, str]:
            with site.store.read() as conn:
                return pk.registry(conn).get(str(credential.get("id"))), database_now(conn)

        found, now = await site.call(passkey)
        if found is None or not found.active(now):
            raise ceremony.CeremonyRefused(
                "passkey_unknown", "this passkey is not registered here, or was revoked"
            )
        ceremony.signed_in(found, credential, p.challenge)
        serving = site.person  # judged once the passkey proved itself: it names no one before
        if serving is not None and found.actor != f"{serving.kind}:{serving.id}":
            raise ceremony.CeremonyRefused(
                "passkey_another_actor",
                f"this server decides as {serving.kind}:{serving.id} only: "
                f"{found.actor} signs in on a boris serve of their own",
            )
        new = site.sessions.sign_in(sid, found.actor, found.credential_id)
        response = JSONResponse({"ok": True, "actor": found.actor, "next": "/"})
        guard.remember(response, new, secure=site.secure_cookies)
        return response

    return {"/auth/login/begin": login_begin, "/auth/login/finish": login_finish}


def decision_routes(site: Site) -> dict[str, Step]:
    async def begin(sid: str, s: guard.Session, body: dict[str, Any], r: Request) -> Response:
        if s.actor is None:
            raise ceremony.CeremonyRefused("signed_out", "sign in first")
        if await site.passkey_revoked(s):
            site.sessions.end(sid)
            raise ceremony.CeremonyRefused(
                "passkey_revoked", "the passkey you signed in with was revoked: nothing was decided"
            )
        who = Actor.parse(s.actor)
        task_id, approval_id = r.path_params["task"], r.path_params["approval"]
        verdict, note = str(body.get("verdict") or ""), str(body.get("note") or "")
        digest = str(body.get("digest") or "")
        if verdict not in VERDICTS or len(note) > NOTE_LIMIT or not digest:
            raise ceremony.CeremonyRefused("bad_request", "a verdict, a digest and a short note")

        def read() -> tuple[str, list[str]]:
            # The approval the address names (UnknownTask/UnknownApproval: nothing to sign).
            site.store.approval_decision(task_id, approval_id)
            with site.store.read() as conn:
                now = database_now(conn)
                mine = pk.registry(conn).of(who.kind, who.id, now)
                return pk.store_identity(conn), [p.credential_id for p in mine]

        store_id, allowed = await site.call(read)
        if not allowed:
            raise ceremony.CeremonyRefused("passkey_revoked", "you have no passkey registered")
        nonce = secrets.token_urlsafe(24)
        challenge = pk.decision_challenge(
            store_id, task_id, approval_id, digest, verdict, note, nonce
        )
        site.challenges.issue(
            nonce,
            ceremony.Pending(
                sid,
                "decide",
                challenge,
                time.monotonic() + ceremony.CHALLENGE_SECONDS,
                actor=s.actor,
                decision=(task_id, approval_id, digest, verdict, note),
            ),
        )
        return _options(nonce, ceremony.assertion_options(site.rp, challenge, allowed))

    async def finish(sid: str, s: guard.Session, body: dict[str, Any], r: Request) -> Response:
        nonce = str(body.get("key") or "")
        p = site.challenges.take(nonce, sid, "decide", keep=True)
        assert p.decision is not None
        _task, _approval, digest, verdict, note = p.decision
        # The approval this address names: an assertion made for another is the store's to refuse.
        task_id, approval_id = r.path_params["task"], r.path_params["approval"]
        try:
            assertion = pk.PasskeyAssertion.of_browser(_credential(body), nonce, digest)
            command = DecideApproval.model_validate(
                {
                    "task_id": task_id,
                    "approval_id": approval_id,
                    "decision": verdict,
                    "note": note,
                    "assertion": assertion,
                }
            )
        except ValueError:  # pydantic's ValidationError: a field of the wrong shape
            raise ceremony.CeremonyRefused(
                "bad_request", "the passkey's answer is not a credential"
            ) from None
        from starlette.concurrency import run_in_threadpool

        state = await run_in_threadpool(decide, site, Actor.parse(p.actor), command)
        return JSONResponse({"ok": True, "state": state, "next": "/"})

    return {"/a/{task}/{approval}/begin": begin, "/a/{task}/{approval}/finish": finish}
