"""URL scope (issue 31, item 10): a destination's path is compared after decoding every
encoding a server might apply — percent, double percent, overlong UTF-8, IIS's %u, `;`
path parameters, NUL, tabs and other control characters — and refused where that reading
cannot be settled; honest paths still pass."""

from __future__ import annotations

import posixpath
from pathlib import Path
from urllib.parse import quote, unquote

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from store import Actor, Store
from store import commands as c
from store.commands.effects import PlanEffect
from store.errors import ScopeViolation
from store.scope import check_target, destination_within, make_scope

UPLOAD = "https://docs.example.org/upload/"
HOST = "https://docs.example.org"
AGENT = Actor(kind="agent", id="writer-7")

# Accepted before: each reaches /admin on some server.
CLIMBING = [
    "/upload/..;/admin",  # Tomcat, Spring: `;` parameters dropped, `..` remains
    "/upload/..;jsessionid=1/admin",
    "/upload/..%00/admin",  # NUL: a C server cuts the segment there
    "/upload/..%09/admin",  # tab: stripped by some parsers (WHATWG strips tabs and newlines)
    "/upload/..%0a/admin",
    "/upload/..%0d/admin",
    "/upload/..%7f/admin",
    "/upload/%c0%ae%c0%ae/admin",  # overlong UTF-8 for "."
    "/upload/%e0%80%ae%e0%80%ae/admin",
    "/upload/%c0%af../admin",  # overlong "/"
    "/upload/..%u002fadmin",  # IIS: %u002f is "/"
    "/upload/%u002e%u002e/admin",
    "/upload/..%u005cadmin",
    "/upload/%uff0e%uff0e/admin",  # fullwidth dots, folded by NFKC
    "/upload/%ef%bc%8e%ef%bc%8e/admin",
    "/upload/．．/admin",
    "/upload/..%20/admin",  # a trailing space, dropped by Windows servers
    "/upload/.../admin",
    "/upload/%u0025%u0032%u0065%u0025%u0032%u0065/admin",  # %u-encoded "%2e%2e"
    "/upload/%u00",  # an unfinished %u escape
    "/upload/a%e2%80%8b/../admin",  # a zero-width space hides nothing either
]

HONEST = [
    "/upload/guide-v2.html",
    "/upload/a%20b.html",
    "/upload/2026/notes%20v2.md",
    "/upload/caf%C3%A9.md",
    "/upload/café.md",
    "/upload/a.b.c/report..final.md",
    "/upload/v1.0/..hidden",
    "/upload/100%.html",
    "/upload/a;v=1/b.html",
    "/upload/",
    "/upload",
]


@pytest.mark.parametrize("path", CLIMBING)
def test_a_path_some_server_reads_as_climbing_is_refused(tmp_path: Path, path: str) -> None:
    target = HOST + path
    assert destination_within(target, UPLOAD) is False
    scope = make_scope([str(tmp_path)], (UPLOAD,))
    with pytest.raises(ScopeViolation):
        check_target(scope, target)


@pytest.mark.parametrize("path", HONEST)
def test_honest_paths_still_pass(tmp_path: Path, path: str) -> None:
    target = HOST + path
    assert destination_within(target, UPLOAD) is True
    assert check_target(make_scope([str(tmp_path)], (UPLOAD,)), target) == target


def test_a_plain_climb_and_a_sibling_are_outside(tmp_path: Path) -> None:
    for path in ("/upload/../admin", "/uploads/x", "/admin/upload/x", "/upload/a/../../admin"):
        assert destination_within(HOST + path, UPLOAD) is False, path


def test_planning_an_effect_at_a_climbing_destination_is_refused(
    store: Store, tmp_path: Path
) -> None:
    tid = store.execute(
        c.CreateTask(
            title="t",
            owner="ana",
            objective="o",
            scope_paths=[str(tmp_path)],
            destinations=[UPLOAD],
        ),
        AGENT,
    )
    for path in CLIMBING[:11]:
        with pytest.raises(ScopeViolation):
            store.execute(
                PlanEffect(
                    task_id=tid,
                    kind="upload",
                    target=HOST + path,
                    consequence="upload",
                    content=c.Content(text="x"),
                ),
                AGENT,
            )
    assert store.task(tid)["effects"] == []


# What a lenient server could make of a path: decode %uXXXX and %XX (as Latin-1 where the
# bytes are not UTF-8, one more way to read them), twice; drop `;` parameters and control
# and space characters; fold compatibility forms.
def _lenient_readings(path: str) -> list[str]:
    import re
    import unicodedata

    out = []
    text = path
    for _ in range(2):
        text = re.sub(r"%u([0-9A-Fa-f]{4})", lambda m: chr(int(m.group(1), 16)), text)
        for enc in ("utf-8", "latin-1"):
            out.append(unquote(text, encoding=enc, errors="replace"))
        text = out[-2]
    readings = []
    for r in out:
        r = unicodedata.normalize("NFKC", r.replace("\\", "/"))
        r = "".join(ch for ch in r if ch.isprintable() and ch != " ")
        segs = [s.split(";", 1)[0].rstrip(".") or "." for s in r.split("/")]
        segs = [
            ".." if s == "." and orig.strip(" .;") == "" and orig.count(".") > 1 else s
            for s, orig in zip(segs, r.split("/"), strict=True)
        ]
        readings.append(posixpath.normpath("/" + "/".join(segs)))
    return readings


SEGMENT = st.one_of(
    st.sampled_from(
        [
            "..",
            ".",
            "..;",
            "..;x",
            "%2e%2e",
            "%252e",
            "%u002e%u002e",
            "..%00",
            "..%09",
            "%c0%ae%c0%ae",
            "..%u002f",
            "admin",
            "a%20b",
            "％２ｅ",
            "．．",
            "%ef%bc%8e%ef%bc%8e",
            "..%20",
            "...",
            "a\\..",
            "",
            "%",
        ]
    ),
    st.text(alphabet="a.;%/u0123456789cefABCDEF\t \\", max_size=8),
)


@settings(max_examples=400, deadline=None)
@given(st.lists(SEGMENT, min_size=1, max_size=5))
def test_whatever_is_admitted_stays_inside_under_every_lenient_reading(
    segments: list[str],
) -> None:
    path = "/upload/" + "/".join(segments)
    if not destination_within(HOST + path, UPLOAD):
        return
    for reading in _lenient_readings(path):
        assert reading == "/upload" or reading.startswith("/upload/"), (path, reading)


@settings(max_examples=200, deadline=None)
@given(st.text(min_size=1, max_size=20).filter(lambda s: s not in (".", "..")))
def test_an_honest_file_name_quoted_plainly_is_admitted(name: str) -> None:
    import unicodedata

    if any(unicodedata.category(ch) in ("Cc", "Cf", "Cs", "Co", "Cn") for ch in name):
        return
    if set(unicodedata.normalize("NFKC", name).split(";", 1)[0].strip()) <= {"."}:
        return  # a name that servers read as a dot segment
    if unicodedata.normalize("NFKC", name) != name:
        return
    quoted = quote(name, safe="")
    if any(form in quoted.upper() for form in ("%2E", "%2F", "%25", "%5C")):
        return  # forms refused for ambiguity (test_scope_destinations.py)
    assert destination_within(f"{HOST}/upload/{quoted}", UPLOAD) is True, quoted
