"""Which files the process opens, observed through CPython's ``open`` audit event (no evalbot code is patched)."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

_recording: list[list[Path]] = []
_installed = False


def _hook(event: str, args: tuple[Any, ...]) -> None:
    if event == "open" and _recording and isinstance(args[0], str | bytes | os.PathLike):
        raw = os.fsdecode(args[0])
        for opened in _recording:
            opened.append(Path(os.path.abspath(raw)))


@contextmanager
def opened_files() -> Iterator[list[Path]]:
    """The absolute paths opened (``open``, ``Path.read_text``/``read_bytes``...) inside the block, in order.

    The audit hook cannot be removed once added: it is added on first use and is inert outside these blocks.
    """
    global _installed
    if not _installed:
        sys.addaudithook(_hook)
        _installed = True
    opened: list[Path] = []
    _recording.append(opened)
    try:
        yield opened
    finally:
        _recording.remove(opened)
