"""``python -m evalbot.cli``."""

import sys

from evalbot.cli.commands import entry

sys.exit(entry())
