"""hand_over: what the container wrote in the workspace goes back to the workspace's owner, and nothing else."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from evalbot.action.files import hand_over

ME = os.geteuid()
RUNNER = (1001, 1001) if ME != 1001 else (1002, 1002)


def recorder() -> tuple[list[str], object]:
    calls: list[str] = []

    def chown(path: str, uid: int, gid: int) -> None:
        assert (uid, gid) == RUNNER
        calls.append(path)

    return calls, chown


def test_report_files_their_new_directory_and_the_cache_tree_are_handed_over(tmp_path: Path) -> None:
    """Files and the directories created above them, and a judge cache's whole tree, change owner."""
    out = tmp_path / ".evalbot-out"
    out.mkdir()
    (out / "report.json").write_text("{}")
    (out / "junit.xml").write_text("<x/>")
    cache = tmp_path / "cache" / "ab"
    cache.mkdir(parents=True)
    (cache / "answer.json").write_text("{}")
    calls, chown = recorder()
    changed = hand_over(
        tmp_path, [".evalbot-out/report.json", ".evalbot-out/junit.xml", "cache", None, "missing.json"],
        owner=RUNNER, chown=chown,  # type: ignore[arg-type]
    )
    rel = sorted(str(Path(c).relative_to(tmp_path)) for c in calls)
    assert rel == [".evalbot-out", ".evalbot-out/junit.xml", ".evalbot-out/report.json", "cache", "cache/ab",
                   "cache/ab/answer.json"]
    assert changed == 6


def test_nothing_changes_when_the_process_already_owns_the_workspace(tmp_path: Path) -> None:
    """Not running as root (or as the runner's user itself): no chown at all."""
    (tmp_path / "report.json").write_text("{}")
    calls, chown = recorder()
    assert hand_over(tmp_path, ["report.json"], owner=(ME, ME), chown=chown) == 0  # type: ignore[arg-type]
    assert calls == []


def test_entries_owned_by_someone_else_are_left_alone(tmp_path: Path) -> None:
    """Only what this process's user owns is changed (the user's own committed files are not ours)."""
    (tmp_path / "baseline.json").write_text("{}")
    calls, chown = recorder()
    assert hand_over(tmp_path, ["baseline.json"], owner=RUNNER, me=ME + 7, chown=chown) == 0  # type: ignore[arg-type]
    assert calls == []


def test_symlinks_are_never_followed_out_of_the_workspace(tmp_path: Path) -> None:
    """A PR can plant symlinks: a linked output directory outside the workspace is skipped, and a link inside a
    handed-over tree is changed itself (lchown), never its target."""
    ws, outside = tmp_path / "ws", tmp_path / "outside"
    ws.mkdir()
    outside.mkdir()
    (outside / "report.json").write_text("{}")
    (ws / ".evalbot-out").symlink_to(outside)
    (ws / "cache").mkdir()
    (ws / "cache" / "link").symlink_to(outside / "report.json")
    calls, chown = recorder()
    hand_over(ws, [".evalbot-out/report.json", "cache", "/etc/passwd", "../outside"], owner=RUNNER,
              chown=chown)  # type: ignore[arg-type]
    assert sorted(calls) == [str(ws / "cache"), str(ws / "cache" / "link")]


@pytest.mark.skipif(ME != 0, reason="changing a file's owner to another user needs root")
def test_real_chown_as_root(tmp_path: Path) -> None:
    """As root (the container's user), the files really end up owned by the workspace's owner."""
    os.chown(tmp_path, *RUNNER)
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "report.json").write_text("{}")
    assert hand_over(tmp_path, ["out/report.json"]) == 2
    for path in (tmp_path / "out", tmp_path / "out" / "report.json"):
        assert (path.stat().st_uid, path.stat().st_gid) == RUNNER
