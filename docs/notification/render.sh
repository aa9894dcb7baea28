#!/bin/sh
# Render docs/notification.png: Boris Desktop under Xvfb when an agent asks for an approval,
# with dunst as the freedesktop notification service and a stand-in panel
# (status_notifier_watcher.py) so that Qt sends its messages over D-Bus, as on a desktop.
# Needs xvfb, dbus, dunst and imagemagick (apt-get install xvfb dbus dunst imagemagick).
#
#     sh docs/notification/render.sh
set -eu
here=$(cd "$(dirname "$0")" && pwd)
python=${PYTHON:-$here/../../.venv/bin/python}
if [ "${1:-}" != "--inside" ]; then
    exec dbus-run-session -- xvfb-run -a -s "-screen 0 1280x800x24" sh "$0" --inside
fi
"$python" "$here/status_notifier_watcher.py" &
watcher=$!
dunst -config "$here/dunstrc" &
dunst=$!
trap 'kill $watcher $dunst 2>/dev/null' EXIT
sleep 1.5
QT_QPA_PLATFORM=xcb "$python" "$here/scene.py" "$here/../notification.png"
