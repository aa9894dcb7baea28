import sys

from boris_desktop.app import main

sys.exit(main())
