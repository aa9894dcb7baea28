"""One version, following the changelog: a release's version is its heading; between releases
the version is a `.dev` of a later one, never the last release's."""

from __future__ import annotations

import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

from store.version import RELEASED, __version__

ROOT = Path(__file__).resolve().parent.parent
APP_ID = "org.boris.BorisDesktop"


def _numbers(version: str) -> tuple[int, ...]:
    return tuple(int(x) for x in re.match(r"(\d+(?:\.\d+)*)", version).group(1).split("."))  # type: ignore[union-attr]


def _headings() -> list[str]:
    text = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
    return re.findall(r"^## \[([^\]]+)\]", text, re.M)


def test_the_version_follows_the_changelog() -> None:
    headings = _headings()
    released = [h for h in headings if h != "Unreleased"]
    assert released[0] == RELEASED, "RELEASED is the changelog's newest release"
    if headings[0] == "Unreleased":
        # Unreleased work: a development version of a later release.
        assert re.fullmatch(r"\d+\.\d+\.\d+\.dev\d+", __version__), __version__
        assert _numbers(__version__) > _numbers(RELEASED)
    else:
        assert __version__ == RELEASED == headings[0]


def test_the_metainfo_names_the_newest_release() -> None:
    root = ET.parse(ROOT / "resources" / "app" / f"{APP_ID}.metainfo.xml").getroot()
    assert root.findall("releases/release")[0].get("version") == RELEASED


def test_boris_version_and_written_by_say_this_build(tmp_path: Path) -> None:
    out = subprocess.run(
        [sys.executable, "-m", "store.cli", "--version"],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
        cwd=ROOT,
    )
    assert out.stdout.strip() == f"boris {__version__}"
    from store import Store

    with Store.open(tmp_path / "s") as s, s.read() as conn:
        import sqlalchemy as sa

        written_by = conn.execute(
            sa.text("SELECT value FROM store_meta WHERE key = 'written_by'")
        ).scalar_one()
    assert written_by == __version__


def test_store_commands_exports_every_command() -> None:
    from store import commands

    for cls in commands.command_classes():
        assert getattr(commands, cls.__name__) is cls, cls.__name__
        assert cls.__name__ in commands.__all__
    assert {"DecideApproval", "DispatchEffect", "ReconcileEffect", "WriteCheckpoint"} <= set(
        commands.__all__
    )
