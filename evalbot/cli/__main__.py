"""``python -m evalbot.cli``."""

import sys

from evalbot.cli.commands import main

sys.exit(main())
