"""The decision page's screenshots in the manual (issue 43): docs/phone.md shows both, at the
sizes the issue names (a phone's 390x844, a desk's 1366x768), as tests/test_web_browser.py
makes them (BORIS_WEB_SCREENSHOTS=1 refreshes them from the real page)."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _png_size(path: Path) -> tuple[int, int]:
    head = path.read_bytes()[:24]
    assert head[:8] == b"\x89PNG\r\n\x1a\n" and head[12:16] == b"IHDR", path
    width, height = struct.unpack(">II", head[16:24])
    return int(width), int(height)


@pytest.mark.parametrize(
    "name, size",
    [("phone-approval-390x844.png", (390, 844)), ("desk-approval-1366x768.png", (1366, 768))],
)
def test_the_manual_shows_the_page_at_both_sizes(name: str, size: tuple[int, int]) -> None:
    shot = ROOT / "docs" / "images" / name
    assert _png_size(shot) == size
    assert f"](images/{name})" in (ROOT / "docs" / "phone.md").read_text()
