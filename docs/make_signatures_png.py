# ruff: noqa: E402  (the environment is set before Qt and the store are imported)
"""Renders docs/signatures.png: a signed task's timeline with its signers, an event by a key
the keyring does not know and an unsigned tail (offscreen, a throw-away store and key).

    CROP=1 SELECT_ROW=4 SHOT_H=1000 PYTHONPATH=. python docs/make_signatures_png.py docs/signatures.png Timeline
"""

import os
import sys
import tempfile
from pathlib import Path

os.environ["QT_QPA_PLATFORM"] = "offscreen"
tmp = Path(tempfile.mkdtemp())
os.environ["XDG_CONFIG_HOME"] = str(tmp / "config")
os.environ["BORIS_DESKTOP_SETTINGS"] = str(tmp / "settings.ini")
import sqlalchemy as sa
from PySide6.QtWidgets import QApplication

app = QApplication([])
from boris_desktop import settings

settings.set_reviewer("Rita Reviewer", "rita")
from store import Actor, Store
from store import commands as c
from store import schema as t
from store import store as store_module
from store.commands.approvals import DecideApproval, RequestApproval
from store.commands.checkpoints import WriteCheckpoint
from store.signing.keys import SigningKey, person_key
from store.signing.seal import encode_signature, record_message
from store.signing.trust import add_key, require

store = Store.open(str(tmp / "store"))
ws = tmp / "ws"
ws.mkdir()
BOT = Actor(kind="agent", id="builder", name="Builder Bot")
RITA = Actor(kind="person", id="rita", name="Rita Reviewer")
rita, bot, stranger = person_key("rita"), SigningKey.generate(), SigningKey.generate()
require(store, rita, RITA)
add_key(store, rita, bot.public_raw, BOT)


def as_(k, cmd, a):
    store.signer = k
    try:
        return store.execute(cmd, a)
    finally:
        store.signer = None


tid = as_(
    bot,
    c.CreateTask(
        title="Publish the release notes",
        owner="rita",
        objective="Draft, review and publish the 2.4 release notes",
        scope_paths=[str(ws)],
    ),
    BOT,
)
for txt in ("Every merged change is listed", "Breaking changes come first"):
    as_(bot, c.AddCriterion(task_id=tid, text=txt), BOT)
aid = as_(
    bot,
    RequestApproval(
        task_id=tid,
        payload={"publish": "notes-2.4.md"},
        consequence="publishes the notes on the website",
        policy="a person approves publishing",
    ),
    BOT,
)
as_(
    rita, DecideApproval(task_id=tid, approval_id=aid, decision="approved", note="reads well"), RITA
)
as_(bot, WriteCheckpoint(task_id=tid, reason="milestone", note="notes drafted"), BOT)


def sign_as_stranger(conn, policy, signer, emitted, now):
    e = emitted[-1]
    conn.execute(
        sa.insert(t.signatures).values(
            task_id=e.task_id,
            seq=e.seq,
            key_id=stranger.key_id,
            signature=encode_signature(stranger.sign(record_message(e.task_id, e.seq, e.hash))),
        )
    )


store_module_seal = store_module.seal
store_module.seal = sign_as_stranger
as_(None, c.AddCriterion(task_id=tid, text="Links are checked"), BOT)
store_module.seal = lambda *a: None
as_(None, c.AddCriterion(task_id=tid, text="Written past the signing"), BOT)
store_module.seal = store_module_seal

from boris_desktop.main_window import MainWindow

w = MainWindow(store)
w.resize(1280, int(os.environ.get("SHOT_H", "760")))
w.show()
w.reload_now()
import time

end = time.monotonic() + 10
while (w.loader._pending or w.task_view.task_id != tid) and time.monotonic() < end:
    app.processEvents()
    time.sleep(0.02)
tv = w.task_view
tv.tabs.setCurrentWidget(tv.panel(sys.argv[2] if len(sys.argv) > 2 else "Timeline"))
panel = tv.panel(sys.argv[2] if len(sys.argv) > 2 else "Timeline")
if os.environ.get("SELECT_ROW"):
    panel.tree.setCurrentIndex(panel.tree.records.index(int(os.environ["SELECT_ROW"]), 0))
for _ in range(50):
    app.processEvents()
    time.sleep(0.01)
target = sys.argv[1]
what = w if "--window" in sys.argv else tv
img = what.grab()
if os.environ.get("CROP"):
    from PySide6.QtCore import QPoint, QRect

    bottom = panel.tree.mapTo(tv, QPoint(0, panel.tree.height())).y() + 6
    img = img.copy(QRect(0, 0, img.width(), bottom))
print(img.save(target))
