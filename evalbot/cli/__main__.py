"""``python -m evalbot.cli``."""

import sys

from evalbot.cli.main import main

sys.exit(main())
