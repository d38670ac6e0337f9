"""Builders of Vertex-style dataset rows and files (JSON Lines, CSV), shared by the tests."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from typing import Any


def call(name: str, **args: Any) -> dict[str, Any]:
    """A Vertex trajectory item."""
    return {"tool_name": name, "tool_input": args}


def write_jsonl(path: Path, rows: list[Any]) -> Path:
    """Rows as JSON Lines."""
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def write_csv(path: Path, header: list[str], records: list[list[str]]) -> Path:
    """A CSV file from a header and string records."""
    buf = io.StringIO()
    writer = csv.writer(buf)
    writer.writerow(header)
    writer.writerows(records)
    path.write_text(buf.getvalue(), encoding="utf-8")
    return path
