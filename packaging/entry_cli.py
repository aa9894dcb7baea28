"""PyInstaller entry of the `boris` executable (the console script)."""

import sys

from store.cli import main

if __name__ == "__main__":
    sys.exit(main())
