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


def _commit(tmp_path: Path, files: dict[str, bytes]) -> None:
    subprocess.run([*GIT, "init", "-q"], cwd=tmp_path, check=True)
    for name, data in files.items():
        (tmp_path / name).write_bytes(data)
    subprocess.run([*GIT, "add", "-A"], cwd=tmp_path, check=True)
    subprocess.run([*GIT, "commit", "-qm", "base"], cwd=tmp_path, check=True)


def test_a_file_at_the_commit_that_is_not_utf8_is_an_input_error(tmp_path: Path) -> None:
    """A config or baseline at REF with invalid UTF-8 (a change's config can name any REF:PATH) is an InputError
    naming REF:PATH, not a UnicodeDecodeError out of the subprocess call (exit 70)."""
    _commit(tmp_path, {"bad.json": b'\xff\xfe{"evalbot": {}}', "ok.json": '{"é": 1}'.encode()})

    def git(args: list[str]) -> GitResult:
        return run_git(args, cwd=tmp_path)

    with pytest.raises(InputError, match="not UTF-8 text") as caught:
        git_show("HEAD", "bad.json", git=git)
    assert caught.value.path == "HEAD:bad.json"
    assert git_show("HEAD", "ok.json", git=git) == '{"é": 1}'


def test_a_file_name_at_the_commit_that_is_not_utf8_is_listed(tmp_path: Path) -> None:
    """``git ls-tree`` of a folder holding a file whose name is not UTF-8 does not crash the listing."""
    _commit(tmp_path, {"ok.json": b"{}"})
    (tmp_path / "evals").mkdir()
    with open(bytes(tmp_path / "evals") + b"/\xff.evalset.json", "wb"):
        pass
    subprocess.run([*GIT, "add", "-A"], cwd=tmp_path, check=True)
    subprocess.run([*GIT, "commit", "-qm", "odd name"], cwd=tmp_path, check=True)
    listed = git_list("HEAD", "evals", git=lambda args: run_git(args, cwd=tmp_path))
    assert listed is not None and len(listed) == 1 and listed[0][1] == "file"


@pytest.mark.parametrize("path", ["a\0b", "evals/\0"])
def test_a_path_with_a_nul_byte_is_an_input_error(tmp_path: Path, path: str) -> None:
    """A NUL in REF:PATH (JSON can spell it \\u0000) is refused naming the spec, before git runs, not a ValueError
    ("embedded null byte") out of the subprocess call."""
    _commit(tmp_path, {"ok.json": b"{}"})
    calls: list[list[str]] = []

    def git(args: list[str]) -> GitResult:
        calls.append(args)
        return run_git(args, cwd=tmp_path)

    for read in (git_show, git_list):
        with pytest.raises(InputError, match="NUL") as caught:
            read("HEAD", path, git=git)
        assert caught.value.path == f"HEAD:{path}"
    assert calls == []


def test_a_file_at_the_commit_larger_than_the_cap_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """git's output is read up to a cap (a blob of gigabytes at REF is not read into memory): past it, an InputError
    naming REF:PATH and the cap; below it, the text."""
    import evalbot.git as git_module

    _commit(tmp_path, {"big.json": b"x" * 5000, "small.json": b"y" * 100})
    monkeypatch.setattr(git_module, "MAX_GIT_OUTPUT", 1000)

    def git(args: list[str]) -> GitResult:
        return run_git(args, cwd=tmp_path)

    with pytest.raises(InputError, match="larger than 1,000 bytes") as caught:
        git_show("HEAD", "big.json", git=git)
    assert caught.value.path == "HEAD:big.json"
    assert git_show("HEAD", "small.json", git=git) == "y" * 100


def test_a_spec_longer_than_any_path_is_refused_before_git_runs(tmp_path: Path) -> None:
    """A REF:PATH of 200,000 characters (a change's baseline_path) would make starting git fail with E2BIG, an
    OSError out of subprocess (exit 70): it is an InputError naming the length, and git does not run."""
    _commit(tmp_path, {"ok.json": b"{}"})
    calls: list[list[str]] = []

    def git(args: list[str]) -> GitResult:
        calls.append(args)
        return run_git(args, cwd=tmp_path)

    for ref, path in (("HEAD", "x" * 200_000), ("r" * 200_000, "ok.json")):
        for read in (git_show, git_list):
            with pytest.raises(InputError, match="longer than 4,096 characters"):
                read(ref, path, git=git)
    assert calls == []


def test_git_that_cannot_start_is_a_failed_result(tmp_path: Path) -> None:
    """An argument the kernel refuses (E2BIG) is a failed GitResult, never an OSError out of run_git."""
    result = run_git(["show", "HEAD:" + "x" * 300_000], cwd=tmp_path)
    assert result.returncode == 126 and "could not start git" in result.stderr


def test_git_running_past_the_timeout_is_stopped_with_what_it_started(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A git call past GIT_TIMEOUT_S is exit code 124, returned at once: git and any process it started (here an
    alias running sleep, which holds the output pipe open) are killed, not waited for."""
    import time

    import evalbot.git as git_module

    monkeypatch.setattr(git_module, "GIT_TIMEOUT_S", 0.5)
    started = time.monotonic()
    result = run_git(["-c", "alias.hang=!sleep 30", "hang"], cwd=tmp_path)
    assert result.returncode == 124 and "timed out after 0.5 s" in result.stderr
    assert time.monotonic() - started < 10
