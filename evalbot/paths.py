"""What is wrong with a path or id a user gave: an output, an input file, a directory, a comment id (both front ends
check them before any work)."""

from __future__ import annotations

import re
import stat
from pathlib import Path

_COMMENT_ID = re.compile(r"^[A-Za-z0-9._/-]{1,100}$")


def problem_with_output(raw: str) -> str | None:
    """Why ``raw`` cannot be written as a file (None when it can be tried)."""
    if not raw.strip():
        return "expected a file path, got an empty value"
    if raw.endswith(("/", "\\")):
        return f"{raw!r} names a directory; give a file path"
    path = Path(raw)
    if path.is_dir():
        return f"{raw!r} is a directory; give a file path inside it"
    if path.exists() and not path.is_file():
        return f"{raw!r} exists and is not a regular file"
    for parent in path.parents:
        if parent.exists():
            return None if parent.is_dir() else f"{str(parent)!r} is a file, so {raw!r} cannot be created under it"
    return None


def problem_with_input(raw: str, *, what: str = "file") -> str | None:
    """Why ``raw`` cannot be read as a regular file (None when it can)."""
    if not raw.strip():
        return f"expected a {what} path, got an empty value"
    path = Path(raw)
    try:
        mode = path.stat().st_mode
    except FileNotFoundError:
        return f"{raw!r} does not exist"
    except OSError as exc:
        return f"{raw!r} cannot be read: {exc.strerror or exc}"
    if stat.S_ISDIR(mode):
        return f"{raw!r} is a directory; give a {what}"
    if not stat.S_ISREG(mode):
        return f"{raw!r} is not a regular file (a FIFO, socket or device cannot be read as a {what})"
    return None


def problem_with_directory(raw: str) -> str | None:
    """Why ``raw`` cannot be used as a directory (None when it can: it exists as one or can be created)."""
    if not raw.strip():
        return "expected a directory path, got an empty value"
    path = Path(raw)
    if path.exists() and not path.is_dir():
        return f"{raw!r} exists and is not a directory"
    return None


def problem_with_comment_id(raw: str) -> str | None:
    """Why ``raw`` cannot be a comment id (None when it can)."""
    if _COMMENT_ID.fullmatch(raw):
        return None
    return f"expected 1 to 100 letters, digits, '.', '_', '-' or '/', got {raw!r}"
