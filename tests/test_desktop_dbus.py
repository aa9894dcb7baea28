"""Notifications through the real freedesktop service, over D-Bus.

The other notification tests fake the service (or Qt's tray). Here nothing is faked on the
app's side: the window runs under Xvfb on a private session bus, dunst is the notification
service (`dunst -print` writes every notification it receives), and a stand-in panel
(docs/notification/status_notifier_watcher.py) takes the tray icon, as on a desktop.
Another process requests one approval, then a burst of twenty:
the service receives exactly one notification for each, with the counts. A request
whose words are HTML is shown by the service as those words, not as bold, an image and a link.
The notifications go to the service directly (boris_desktop/runtime/freedesktop.py) with a
default action: the service invoking it on the HTML one (a click, `dunstctl action 0`) brings
the Decisions tab to the front with that approval's Approve dialog open.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
NEEDS = ("dbus-run-session", "xvfb-run", "dunst", "dunstctl")


def _displayed(markup: str) -> str:
    """The text a notification's markup displays: dunst hands its message (its format, the
    body in it) to Pango, whose markup is XML; what shows is the text between the tags."""
    return "".join(ET.fromstring(f"<markup>{markup}</markup>").itertext())


def _missing() -> list[str]:
    return [tool for tool in NEEDS if shutil.which(tool) is None]


@pytest.mark.skipif(
    bool(_missing()) and os.environ.get("CI") != "true",
    reason=f"needs {', '.join(NEEDS)} (apt-get install dbus xvfb dunst)",
)
def test_the_notification_service_receives_one_notification_per_arrival(tmp_path: Path) -> None:
    assert not _missing(), f"CI installs {', '.join(NEEDS)}"
    log = tmp_path / "dunst.log"
    history = tmp_path / "history.json"
    watcher = ROOT / "docs" / "notification" / "status_notifier_watcher.py"
    inside = (
        f'"{sys.executable}" "{watcher}" & w=$!; '
        f'dunst -print > "{log}" 2>/dev/null & d=$!; '
        "sleep 1.5; "
        f'QT_QPA_PLATFORM=xcb "{sys.executable}" "{ROOT / "tests" / "dbus_scene.py"}"; '
        f'rc=$?; dunstctl close-all; dunstctl history > "{history}"; '
        "kill $w $d 2>/dev/null; exit $rc"
    )
    env = {k: v for k, v in os.environ.items() if k not in ("QT_QPA_PLATFORM", "DISPLAY")}
    out = subprocess.run(
        ["dbus-run-session", "--", "xvfb-run", "-a", "sh", "-c", inside],
        capture_output=True,
        text=True,
        timeout=180,
        env=env,
        cwd=tmp_path,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    told = json.loads(out.stdout.strip().splitlines()[-1])
    assert told["tray"]  # the panel took the tray icon
    titles = ["1 new decision", "20 new decisions", "1 new decision"]
    assert [title for title, _ in told["shown"]] == titles
    received = re.findall(r"summary: '([^']*)'", log.read_text())
    assert received == titles
    bodies = re.findall(r"body: '([^']*)'", log.read_text(), re.S)
    assert "send message 1" in bodies[0] and "Save the weekly project note" in bodies[0]
    assert "and 17 more in the decision queue" in bodies[1]
    # What the service shows of the HTML is the HTML's text, as written.
    # dunst's history keeps each notification's message: the markup it displayed.
    told_html = [
        n for n in json.loads(history.read_text())["data"][0] if "bold" in n["body"]["data"]
    ]
    assert len(told_html) == 1
    words = (
        '<b>bold</b> <img src="file:///nonexistent.png"> '
        '<a href="https://example.invalid">link</a> & co'
    )
    shown = _displayed(told_html[0]["message"]["data"])
    assert f"Approve / reject: {words} (Save the weekly project note)" in shown
    # Sent by the window itself, with the action a click invokes...
    assert told["direct"]
    assert "default" in log.read_text().split("summary: '1 new decision'")[-1]
    # ...and the click opened that approval, the queue in front.
    assert told["opened"] == {
        "dialog": "ApproveDialog",
        "approval": "apr-200",
        "queue_in_front": True,
        "told_after": {},
    }
