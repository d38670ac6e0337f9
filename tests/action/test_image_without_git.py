"""The image has no git: when the contents API cannot give the baseline, the read fails closed with a clear
message (verdict error, exit 3), never a crash and never "no baseline"."""

from __future__ import annotations

from pathlib import Path

import pytest

from evalbot.action.workspace import Workspace, read_baseline_at
from evalbot.forge.base import ForgeError


class RefusingForge:
    def read_file(self, path: str, *, ref: str) -> str | None:
        raise ForgeError(f"read {path} at {ref}", "token not allowed", status=403)


def test_no_git_binary_means_could_not_measure(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))  # no git anywhere on PATH, as in the image
    baseline, unreadable = read_baseline_at(
        RefusingForge(), Workspace(tmp_path), ".evalbot/baseline.json", "b" * 40  # type: ignore[arg-type]
    )
    assert baseline is None and unreadable is not None  # unreadable, not "no baseline": the gate says error
    assert "token not allowed" in unreadable and "git is not installed" in unreadable
