"""Golden files: rendered markdown compared with tests/data/expected (EVALBOT_UPDATE_GOLDENS=1 rewrites them)."""

from __future__ import annotations

import os
from pathlib import Path

EXPECTED = Path(__file__).parents[1] / "data" / "expected"


def golden(name: str, text: str) -> None:
    """Compare with tests/data/expected/NAME (EVALBOT_UPDATE_GOLDENS=1 rewrites it)."""
    path = EXPECTED / name
    if os.environ.get("EVALBOT_UPDATE_GOLDENS") == "1":
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    assert text == path.read_text(encoding="utf-8"), f"{name} changed; rerun with EVALBOT_UPDATE_GOLDENS=1 if intended"
