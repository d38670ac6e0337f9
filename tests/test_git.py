"""git.py against a real repository: ``git ls-tree`` listings at a commit (the Action's fallback when the contents
API cannot list the base commit's folders)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from evalbot.compare.baseline import parse_spec
from evalbot.errors import InputError
from evalbot.git import GitResult, git_list, git_show, run_git

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


@pytest.mark.parametrize("ref", ["--output=pwned", "-ofile", "--upload-pack=touch pwned", ""])
def test_a_ref_git_would_read_as_an_option_is_refused(tmp_path: Path, ref: str) -> None:
    """``git show --output=FILE:PATH`` writes a file: a ref starting with ``-`` (a PR's config can name the baseline
    as REF:PATH) is refused before git runs, naming the spec, and nothing is written."""
    repo(tmp_path)
    calls: list[list[str]] = []

    def git(args: list[str]) -> GitResult:
        calls.append(args)
        return run_git(args, cwd=tmp_path)

    for read in (git_show, git_list):
        with pytest.raises(InputError, match="is not a git revision") as caught:
            read(ref, "x", git=git)
        assert caught.value.path == f"{ref}:x"
    assert calls == [] and not list(tmp_path.glob("pwned*"))
    with pytest.raises(InputError, match="never starts with '-'" if ref else "expected FILE or REF:PATH"):
        parse_spec(f"{ref}:x", file_exists=lambda p: False)


def test_git_itself_would_have_written_the_file(tmp_path: Path) -> None:
    """The attack the guard stops is real: git show takes the text as its --output option."""
    sha = repo(tmp_path)
    subprocess.run(["git", "show", f"--output={tmp_path}/pwned:x", sha], cwd=tmp_path, check=False,
                   capture_output=True)
    assert (tmp_path / "pwned:x").exists()
