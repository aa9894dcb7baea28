"""`boris serve`'s application: the decision page on Starlette.

Reads ask the store as the window does (`decisions`, `Store.approval_decision`); a decision
is the store's `DecideApproval` with the passkey's assertion attached, executed as the person
the passkey names and signed by their desktop key, so the command layer's rules and its
passkey check (store.commands.passkeys) judge it, and nothing is recorded when they refuse.
Store calls run one at a time on a worker thread, off the event loop.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.middleware.trustedhost import TrustedHostMiddleware
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from .. import rules
from ..api import Actor, StoreError
from ..commands.passkeys import PasskeyRefused
from ..reads.decisions import APPROVAL, decisions
from . import ceremony, guard, pages
from .decide import decision_routes, login_routes, register_routes
from .site import Site

log = logging.getLogger("boris.web")
T = TypeVar("T")


def _refused(status: int, code: str, message: str) -> JSONResponse:
    return JSONResponse({"error": code, "message": message}, status)


def _actor(text: str) -> Actor:
    return Actor.parse(text)


def make_app(site: Site) -> Starlette:
    static = Path(__file__).with_name("static")

    def html(request: Request, render: Callable[[str], str], status: int = 200) -> Response:
        sid, s = site.sessions.get(request)
        response = HTMLResponse(render(s.csrf), status)
        guard.remember(response, sid, secure=site.secure_cookies)
        return response

    async def home(request: Request) -> Response:
        s = await site.signed_in(request)
        if s is None or s.actor is None:
            return html(request, pages.sign_in)
        who = _actor(s.actor)

        def read() -> tuple[list[Any], str]:
            found = decisions(site.store)
            return [
                d
                for d in found.decisions
                if d.kind == APPROVAL
                and rules.may_decide(
                    d.kind,
                    None if d.requester is None else d.requester.to_json(),
                    who.kind,
                    who.id,
                    d.waits_on,
                )
            ], found.now

        rows, now = await site.call(read)
        return html(request, lambda csrf: pages.pending(csrf, s.actor or "", rows, now))

    async def approval_page(request: Request) -> Response:
        if await site.signed_in(request) is None:
            return RedirectResponse("/", 303)
        task_id, approval_id = request.path_params["task"], request.path_params["approval"]
        try:
            view = await site.call(lambda: site.store.approval_decision(task_id, approval_id))
        except StoreError as exc:
            message = str(exc)
            return html(request, lambda _c: pages.error_page(404, message), 404)
        return html(request, lambda csrf: pages.approval(csrf, view, site.store.blobs))

    async def register_page(request: Request) -> Response:
        token = request.query_params.get("token", "")
        inv = site.invitations.get(token)
        if inv is None or inv.expires <= time.monotonic():
            return html(request, lambda _c: pages.error_page(403, "this link is not valid"), 403)
        return html(
            request, lambda csrf: pages.register(csrf, token, f"{inv.actor.kind}:{inv.actor.id}")
        )

    async def logout(request: Request) -> Response:
        sid, s = site.sessions.get(request)
        form = await request.form()
        if not guard.csrf_ok(s, str(form.get("csrf") or "")):
            return html(request, lambda _c: pages.error_page(403, "missing CSRF token"), 403)
        site.sessions.end(sid)
        return RedirectResponse("/", 303)

    routes = [
        Route("/", home),
        Route("/a/{task}/{approval}", approval_page),
        Route("/register", register_page),
        Route("/logout", logout, methods=["POST"]),
        *api_routes(site),
        Mount("/static", StaticFiles(directory=static), name="static"),
    ]
    return Starlette(
        routes=routes,
        middleware=[
            Middleware(guard.SecurityHeaders, https=site.rp.origin.startswith("https://")),
            # Only the page's own host name: a site that points its own name at this address
            # (DNS rebinding) is answered 400, never the record.
            Middleware(TrustedHostMiddleware, allowed_hosts=[site.rp.rp_id]),
        ],
        exception_handlers={404: _not_found, 405: _not_allowed},
    )


async def _not_found(request: Request, exc: Exception) -> Response:
    return HTMLResponse(pages.error_page(404, "no such page"), 404)


async def _not_allowed(request: Request, exc: Exception) -> Response:
    return HTMLResponse(pages.error_page(405, "not allowed"), 405)


def api_routes(site: Site) -> list[Route]:
    """The ceremonies' JSON endpoints: each POST needs the session's CSRF token (header
    X-CSRF-Token); signing in and registering count against the client's rate limit."""

    async def guarded(request: Request) -> tuple[str, guard.Session, dict[str, Any]] | Response:
        sid, s = site.sessions.get(request)
        if not guard.csrf_ok(s, request.headers.get("x-csrf-token")):
            return _refused(403, "csrf", "missing or wrong CSRF token: reload the page")
        client = request.client.host if request.client else "?"
        if request.url.path.startswith("/auth/") and not site.limit.allow(client):
            return _refused(429, "rate_limited", "too many attempts: wait a minute")
        try:
            body = json.loads(await request.body() or b"{}")
        except ValueError:
            return _refused(400, "bad_request", "the request is not JSON")
        if not isinstance(body, dict):
            return _refused(400, "bad_request", "the request is not a JSON object")
        return sid, s, body

    def endpoint(
        fn: Callable[[str, guard.Session, dict[str, Any], Request], Any],
    ) -> Callable[[Request], Any]:
        async def run(request: Request) -> Response:
            got = await guarded(request)
            if isinstance(got, Response):
                return got
            sid, s, body = got
            try:
                result: Response = await fn(sid, s, body, request)
            except ceremony.CeremonyRefused as exc:
                return _refused(400, exc.code, str(exc))
            except PasskeyRefused as exc:
                return _refused(409, exc.code, str(exc))
            except StoreError as exc:
                return _refused(409, getattr(exc, "code", "refused"), str(exc))
            return result

        return run

    return [
        Route(path, endpoint(step), methods=["POST"])
        for routes in (register_routes(site), login_routes(site), decision_routes(site))
        for path, step in routes.items()
    ]
