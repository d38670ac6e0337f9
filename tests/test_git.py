"""git.py against a real repository: ``git ls-tree`` listings at a commit (the Action's fallback when the contents
API cannot list the base commit's folders)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from evalbot.errors import InputError
from evalbot.git import GitResult, git_list, run_git

GIT = ["git", "-c", "user.name=t", "-c", "user.email=t@example.com", "-c", "init.defaultBranch=main"]


def repo(tmp_path: Path) -> str:
    """A repository with a nested folder, a name with a space and a symlink; returns the commit."""
    subprocess.run([*GIT, "init", "-q"], cwd=tmp_path, check=True)
    (tmp_path / "evals" / "sub").mkdir(parents=True)
    (tmp_path / "evals" / "a set.evalset.json").write_text("{}")
    (tmp_path / "evals" / "sub" / "test_config.json").write_text("{}")
    (tmp_path / "evals" / "link.json").symlink_to("a set.evalset.json")
    subprocess.run([*GIT, "add", "-A"], cwd=tmp_path, check=True)
    subprocess.run([*GIT, "commit", "-qm", "base"], cwd=tmp_path, check=True)
    (tmp_path / "evals" / "later.json").write_text("{}")  # not in the commit
    out = subprocess.run(["git", "rev-parse", "HEAD"], cwd=tmp_path, check=True, capture_output=True, text=True)
    return out.stdout.strip()


def test_git_list_lists_a_folder_at_the_commit(tmp_path: Path) -> None:
    """Files, folders and symlinks at the commit (not the working tree); the root too; absent or a file is None."""
    sha = repo(tmp_path)

    def git(args: list[str]) -> GitResult:
        return run_git(args, cwd=tmp_path)

    assert sorted(git_list(sha, "evals", git=git) or []) == [
        ("a set.evalset.json", "file"), ("link.json", "symlink"), ("sub", "dir")]
    assert git_list(sha, "", git=git) == [("evals", "dir")]
    assert git_list(sha, "nowhere", git=git) is None
    assert git_list(sha, "evals/a set.evalset.json", git=git) is None


def test_git_list_at_a_commit_the_checkout_lacks_is_an_error(tmp_path: Path) -> None:
    """A commit the (shallow) checkout does not have is not "absent": it raises, saying to fetch it."""
    repo(tmp_path)
    with pytest.raises(InputError, match="fetch the commit"):
        git_list("f" * 40, "evals", git=lambda args: run_git(args, cwd=tmp_path))
