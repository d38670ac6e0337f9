"""The command line: ``evalbot run | baseline | compare | merge``, the edge that reads argv and the environment."""

from evalbot.cli.commands import main

__all__ = ["main"]
