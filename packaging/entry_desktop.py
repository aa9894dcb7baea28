"""PyInstaller entry of the `boris-desktop` executable (the GUI script)."""

import multiprocessing
import re
import sys

#: The Debian packages of the system libraries the bundled Qt loads (packaging/setup.sh's
#: QT_LIBS; tests/test_entry_desktop.py keeps the two lists equal).
QT_SYSTEM_PACKAGES = (
    "libglib2.0-0 libdbus-1-3 libfontconfig1 libfreetype6 libx11-6 libxkbcommon0 libgl1 libegl1 "
    "fonts-dejavu-core"
)
_SHARED_LIBRARY = re.compile(r"(lib[\w.+-]+\.so(?:\.\d+)*)")


def missing_library_message(exc: ImportError) -> str | None:
    """One line for a Qt that cannot load a system library (a machine without libGL.so.1,
    say): which library, and the packages to install. None for any other ImportError (a
    bug in the bundle, whose traceback is the report)."""
    text = str(exc)
    found = _SHARED_LIBRARY.search(text)
    if found is None or "cannot open shared object file" not in text:
        return None
    return (
        f"boris-desktop: the system library {found.group(1)} is missing; on Debian or Ubuntu "
        f"install what Qt needs: sudo apt-get install {QT_SYSTEM_PACKAGES}"
    )


def run() -> int:
    try:
        from boris_desktop.app import main
    except ImportError as exc:
        message = missing_library_message(exc)
        if message is None:
            raise
        print(message, file=sys.stderr)
        return 1
    return main()


if __name__ == "__main__":
    # The lexing process (boris_desktop/runtime/lexing.py) is this executable started again:
    # freeze_support makes that start run the child's work instead of another window.
    multiprocessing.freeze_support()
    sys.exit(run())
