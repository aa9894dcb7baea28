"""A stand-in StatusNotifierWatcher on the session bus: what a desktop's panel provides.

With one registered, Qt puts its tray icon on D-Bus and sends `QSystemTrayIcon.showMessage`
to the freedesktop notification service (org.freedesktop.Notifications), as it does on a
desktop with a panel. Used by render.sh under Xvfb, with dunst as the notification service.
"""

import sys

from PySide6.QtCore import ClassInfo, Property, QCoreApplication, QObject, Slot
from PySide6.QtDBus import QDBusConnection


@ClassInfo({"D-Bus Interface": "org.kde.StatusNotifierWatcher"})
class Watcher(QObject):
    """Says a host (a panel) is there, and takes the items that register."""

    def __init__(self) -> None:
        super().__init__()
        self.items: list[str] = []

    @Slot(str)
    def RegisterStatusNotifierItem(self, service: str) -> None:  # the D-Bus method's name
        self.items.append(service)

    @Slot(str)
    def RegisterStatusNotifierHost(self, service: str) -> None:  # the D-Bus method's name
        pass

    def _host(self) -> bool:
        return True

    def _protocol(self) -> int:
        return 0

    IsStatusNotifierHostRegistered = Property(bool, _host, constant=True)
    ProtocolVersion = Property(int, _protocol, constant=True)


def main() -> int:
    app = QCoreApplication(sys.argv)
    bus = QDBusConnection.sessionBus()
    watcher = Watcher()
    every = QDBusConnection.RegisterOption.ExportAllContents
    if not (
        bus.registerObject("/StatusNotifierWatcher", watcher, every)
        and bus.registerService("org.kde.StatusNotifierWatcher")
    ):
        print("could not register on the session bus", file=sys.stderr)
        return 1
    return app.exec()


if __name__ == "__main__":
    sys.exit(main())
