"""The command line: ``evalbot run | baseline | compare | merge``, the edge that reads argv and the environment.

The entry point is ``evalbot.cli.commands:main``. This package's ``__init__`` imports none of its modules, so none of
them is ever imported through a half-initialised package; ``evalbot.cli.main`` still resolves, on first use, for
installs whose console script predates that entry point."""

from typing import Any


def __getattr__(name: str) -> Any:
    if name == "main":
        from evalbot.cli.commands import main  # lazily: only old console scripts ask the package for main

        return main
    raise AttributeError(f"module 'evalbot.cli' has no attribute {name!r}")
