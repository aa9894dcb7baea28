"""The decision page's HTML: the store's read models rendered, every string escaped.

No rule is made here. The pending list is `decisions` (the window's queue) filtered by
`rules.may_decide` (its "Mine" filter); one approval's page is the store's `ApprovalDecision`
(the window's approve dialog): its change (a message's To/Subject/body, a write's diff against
the file now), its digest, its quorum, its expiry and the verdicts it allows, or why it
cannot be decided. There is no inline script or style: the page's only script is
/static/boris.js and its style /static/boris.css (the Content-Security-Policy allows no other).
"""

from __future__ import annotations

from html import escape

from ..api import ApprovalDecision, Delete, Opaque, Replace, Send, Upload, Write, write_diff
from ..blobs import BlobStore
from ..reads.decisions import Decision
from ..rules.times import expiry_words


def e(text: object) -> str:
    """Escaped for HTML text and double-quoted attributes."""
    return escape(str(text), quote=True)


def page(title: str, body: str, *, csrf: str = "") -> str:
    return (
        "<!doctype html>\n<html lang=en><head><meta charset=utf-8>"
        '<meta name=viewport content="width=device-width, initial-scale=1">'
        f'<meta name=csrf-token content="{e(csrf)}">'
        f"<title>{e(title)} · Boris</title>"
        '<link rel=stylesheet href="/static/boris.css">'
        '<script src="/static/boris.js" defer></script>'
        f"</head><body><main>{body}</main></body></html>"
    )


def error_page(status: int, message: str) -> str:
    return page("Refused", f"<h1>{e(status)}</h1><p class=refusal>{e(message)}</p>")


def sign_in(csrf: str) -> str:
    body = (
        "<h1>Boris decisions</h1>"
        "<p>Sign in with the passkey you registered from your desktop.</p>"
        "<button type=button class=primary data-ceremony=login id=sign-in>Sign in with passkey</button>"
        "<p class=status role=status aria-live=polite></p>"
    )
    return page("Sign in", body, csrf=csrf)


def register(csrf: str, token: str, actor: str) -> str:
    body = (
        "<h1>Register a passkey</h1>"
        f"<p>This passkey will decide approvals as <strong>{e(actor)}</strong>. Its "
        "registration is signed by your desktop key and kept in the store's record.</p>"
        f'<button type=button class=primary data-ceremony=register data-token="{e(token)}" '
        "id=register>Register passkey</button>"
        "<p class=status role=status aria-live=polite></p>"
    )
    return page("Register a passkey", body, csrf=csrf)


def _expiry(expires_at: str | None, now: str) -> str:
    """ "expires 14:10 UTC, in 12 min": as a person reads it, by the clock the page was read
    at (the ISO time is the element's datetime, for a reader's own zone)."""
    if not expires_at:
        return ""
    return f'<time datetime="{e(expires_at)}">{e(expiry_words(expires_at, now))}</time>'


def pending(csrf: str, actor: str, rows: list[Decision], now: str) -> str:
    items = "".join(
        f'<li><a href="/a/{e(d.task_id)}/{e(d.key)}"><span class=what>{e(d.what)}</span>'
        f"<span class=meta>{e(d.task_title)} · {_expiry(d.expires_at, now)}"
        + (f" · {e(d.routing)}" if d.routing else "")
        + "</span></a></li>"
        for d in rows
    )
    body = (
        f"<header><h1>Pending approvals</h1><p class=meta>signed in as {e(actor)}</p></header>"
        + (f"<ul class=queue>{items}</ul>" if rows else "<p>Nothing waits on you.</p>")
        + '<form method=post action="/logout"><input type=hidden name=csrf '
        f'value="{e(csrf)}"><button type=submit>Sign out</button></form>'
    )
    return page("Pending approvals", body, csrf=csrf)


def _change(view: ApprovalDecision, blobs: BlobStore) -> str:
    c = view.change
    if isinstance(c, Send):
        rows = [("To", ", ".join(c.to)), ("Cc", ", ".join(c.cc)), ("From", c.sender)]
        rows += [("Subject", c.subject)]
        dl = "".join(f"<dt>{e(k)}</dt><dd>{e(v)}</dd>" for k, v in rows if v)
        notes = "".join(f"<li>{e(n)}</li>" for n in c.notes)
        return (
            f"<section class=change><h2>Message to send</h2><dl>{dl}</dl>"
            f"<pre class=body>{e(c.body)}</pre>"
            + (f"<ul class=notes>{notes}</ul>" if notes else "")
            + (f"<p class=refusal>{e(c.problem)}</p>" if c.problem else "")
            + "</section>"
        )
    if isinstance(c, Write):
        diff = write_diff(blobs, c)
        moved = "<p class=refusal>The file changed since the write was planned.</p>"
        return (
            f"<section class=change><h2>Write {e(c.target)}</h2>"
            + (moved if diff.moved else "")
            + f"<pre class=diff>{e(diff.problem or diff.text)}</pre></section>"
        )
    if isinstance(c, Replace | Upload):
        return (
            f"<section class=change><h2>{e(type(c).__name__)} {e(c.target)}</h2>"
            f"<p>{e(c.media_type or 'content')}, {e(c.size)} bytes, digest "
            f"<code>{e(c.digest)}</code></p></section>"
        )
    if isinstance(c, Delete):
        return f"<section class=change><h2>Delete {e(c.target)}</h2></section>"
    assert isinstance(c, Opaque)
    return (
        f"<section class=change><h2>Prepared object</h2><p>{e(c.why)}</p>"
        f"<pre>{e(c.payload_json)}</pre></section>"
    )


def approval(csrf: str, view: ApprovalDecision, blobs: BlobStore) -> str:
    facts = [
        ("Task", e(view.task_id)),
        ("Requested by", e(view.requester.label())),
        ("Policy", e(view.policy)),
        ("Routing", e(view.routing or "")),
        ("Expires", _expiry(view.expires_at, view.now)),
        ("State", e(view.state.label)),
        ("Quorum", e(view.quorum or "")),
        ("Digest", f"<code class=digest>{e(view.payload_digest)}</code>"),
    ]
    dl = "".join(f"<dt>{e(k)}</dt><dd>{v}</dd>" for k, v in facts if v)
    head = (
        f'<p><a href="/">← pending</a></p><h1>{e(view.consequence)}</h1>'
        f"<dl class=facts>{dl}</dl>" + _change(view, blobs)
    )
    if not view.decidable:
        return page("Approval", head + f"<p class=refusal>{e(view.why_not)}</p>", csrf=csrf)
    verdicts = "".join(
        f'<button type=submit name=verdict value="{e(v.value)}" class="{e(v.value)}">'
        f"{e(_VERDICT_WORDS[v.value])}</button>"
        for v in view.verdicts
        if v.value in _VERDICT_WORDS  # an answer in the tool's place is given at the desk
    )
    form = (
        f'<form class=decide data-task="{e(view.task_id)}" data-approval="{e(view.approval_id)}" '
        f'data-digest="{e(view.payload_digest)}">'
        "<label for=note>Note (needed to send back)</label>"
        "<textarea id=note name=note rows=3 maxlength=2000></textarea>"
        f"<div class=verdicts>{verdicts}</div></form>"
        "<p class=status role=status aria-live=polite></p>"
    )
    return page("Approval", head + form, csrf=csrf)


_VERDICT_WORDS = {"approved": "Approve", "rejected": "Reject", "sent_back": "Send back"}
