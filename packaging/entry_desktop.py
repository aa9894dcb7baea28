"""PyInstaller entry of the `boris-desktop` executable (the GUI script)."""

import multiprocessing
import sys

from boris_desktop.app import main

if __name__ == "__main__":
    # The lexing process (boris_desktop/runtime/lexing.py) is this executable started again:
    # freeze_support makes that start run the child's work instead of another window.
    multiprocessing.freeze_support()
    sys.exit(main())
