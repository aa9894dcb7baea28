"""Destination scopes: a path written so that some parser reads it as climbing out of the
allowed path is refused, by a typed error, before it is compared; plain paths still pass."""

from __future__ import annotations

from pathlib import Path

import pytest

from store import Actor, Store
from store import commands as c
from store.commands.effects import PlanEffect
from store.errors import ScopeViolation, UnsafeDestination
from store.scope import check_target, destination_within, make_scope

UPLOAD = "https://docs.example.org/upload/"
AGENT = Actor(kind="agent", id="writer-7")

# The strings from the report, and their relatives: a WHATWG parser turns the first into
# https://docs.example.org/admin.
CLIMBING = [
    "https://docs.example.org/upload/..\\admin",
    "https://docs.example.org/upload/%5c..%5cadmin",
    "https://docs.example.org/upload/%252e%252e/admin",
    "https://docs.example.org/upload/%5C..%5Cadmin",
    "https://docs.example.org/upload/%2e%2e%2fadmin",
    "https://docs.example.org/upload/%2E%2E/admin",
    "https://docs.example.org/upload/..%2fadmin",
    "https://docs.example.org/upload/%252f..%252fadmin",
    "https://docs.example.org/upload/a\\b.md",
    "https://docs.example.org\\@evil.example/upload/x",
]

PLAIN = [
    "https://docs.example.org/upload/guide.md",
    "https://docs.example.org/upload/2026/notes%20v2.md",
    "https://docs.example.org/upload/caf%C3%A9.md",
    "https://docs.example.org/upload/a.b.c/report..final.md",
    "https://docs.example.org/upload/guide.md?lang=en&path=a\\b",
    "https://docs.example.org/upload",
]


@pytest.mark.parametrize("target", CLIMBING)
def test_an_ambiguous_destination_path_is_refused_by_a_typed_error(
    tmp_path: Path, target: str
) -> None:
    scope = make_scope([str(tmp_path)], (UPLOAD,))
    assert destination_within(target, UPLOAD) is False
    with pytest.raises(UnsafeDestination, match="is refused: it contains") as caught:
        check_target(scope, target)
    assert isinstance(caught.value, ScopeViolation)


@pytest.mark.parametrize("target", PLAIN)
def test_plain_destinations_inside_the_scope_are_still_admitted(
    tmp_path: Path, target: str
) -> None:
    scope = make_scope([str(tmp_path)], (UPLOAD,))
    assert destination_within(target, UPLOAD) is True
    assert check_target(scope, target) == target


def test_the_refusal_names_what_it_found(tmp_path: Path) -> None:
    scope = make_scope([str(tmp_path)], (UPLOAD,))
    with pytest.raises(UnsafeDestination, match="contains a backslash"):
        check_target(scope, CLIMBING[0])
    with pytest.raises(UnsafeDestination, match="encoded form %25"):
        check_target(scope, CLIMBING[2])


def test_a_mailto_destination_is_compared_whole_and_not_refused(tmp_path: Path) -> None:
    allowed = "mailto:team%2Eops@example.org"
    scope = make_scope([str(tmp_path)], (allowed,))
    assert check_target(scope, allowed) == allowed


def test_planning_an_effect_at_an_ambiguous_destination_is_refused(
    store: Store, tmp_path: Path
) -> None:
    tid = store.execute(
        c.CreateTask(
            title="upload",
            owner="ana",
            objective="publish",
            scope_paths=[str(tmp_path)],
            destinations=[UPLOAD],
        ),
        AGENT,
    )
    with pytest.raises(UnsafeDestination, match="contains a backslash"):
        store.execute(
            PlanEffect(
                task_id=tid,
                target=CLIMBING[0],
                consequence="upload the guide",
                content=c.Content(text="guide"),
            ),
            AGENT,
        )
    assert store.task(tid)["effects"] == []
