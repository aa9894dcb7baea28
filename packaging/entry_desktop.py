"""PyInstaller entry of the `boris-desktop` executable (the GUI script)."""

import sys

from boris_desktop.app import main

if __name__ == "__main__":
    sys.exit(main())
