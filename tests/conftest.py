"""Shared builders for engine tests: ADK-shaped JSON for invocations, cases and eval sets, and a file writer."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.fakes.builders import Writer


@pytest.fixture
def write(tmp_path: Path) -> Writer:
    """Write JSON (or raw ``str``/``bytes`` content) to ``tmp_path/name`` and return the path."""

    def _write(name: str, content: Any) -> Path:
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        elif isinstance(content, str):
            path.write_text(content, encoding="utf-8")
        else:
            path.write_text(json.dumps(content, ensure_ascii=False), encoding="utf-8")
        return path

    return _write
