"""git, the one place it is called: a subprocess runner and ``git show REF:PATH``."""

from __future__ import annotations

import subprocess
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from evalbot.errors import InputError


@dataclass(frozen=True)
class GitResult:
    """What a git invocation returned."""

    returncode: int
    stdout: str
    stderr: str


GitRunner = Callable[[list[str]], GitResult]
"""Runs ``git`` with the given arguments (the CLI passes a subprocess runner; tests pass fakes)."""


_MISSING_MARKERS = ("does not exist in", "exists on disk, but not in")


def revision(ref: str, where: str) -> str:
    """``ref`` when git can only read it as a revision: one starting with ``-`` would be read as an option
    (``--output=FILE`` makes ``git show`` write a file), so it is refused as an InputError naming ``where``. A
    config's ``baseline_path`` is the change's own text, and no branch, tag or commit name starts with ``-``."""
    if not ref or ref.startswith("-") or "\0" in ref:
        raise InputError(where, "", f"{ref!r} is not a git revision (a revision never starts with '-', which git "
                                    "would read as an option); give a branch, tag or commit, e.g. origin/main")
    return ref


def git_show(ref: str, path: str, *, git: GitRunner) -> str | None:
    """The text of ``path`` at ``ref``, None when the path does not exist there; other git failures raise.

    "Absent" is trusted only when the commit itself is in the repository: for a full sha git says "does not exist
    in" even when it does not have the commit at all (a depth-1 checkout lacks the PR's base commit), and reading
    that as "no baseline" would let every regression through.
    """
    result = git(["show", f"{revision(ref, f'{ref}:{path}')}:{path}"])
    if result.returncode == 0:
        return result.stdout
    message = result.stderr.strip().splitlines()[-1] if result.stderr.strip() else f"exit code {result.returncode}"
    if any(marker in result.stderr for marker in _MISSING_MARKERS):
        if git(["cat-file", "-e", f"{ref}^{{commit}}"]).returncode == 0:
            return None
        raise InputError(
            f"{ref}:{path}", "",
            f"commit {ref} is not in this checkout (a shallow clone?), so whether it has the file is unknown; "
            f"fetch it (git fetch origin {ref}, or actions/checkout with fetch-depth: 0)",
        )
    raise InputError(
        f"{ref}:{path}", "", f"git show failed: {message}; fetch the ref (e.g. `git fetch origin {ref}`) or pass a file"
    )


def git_list(ref: str, path: str, *, git: GitRunner) -> list[tuple[str, str]] | None:
    """``(name, type)`` of each entry of directory ``path`` ("" for the root) at ``ref`` (``git ls-tree``; type
    "file", "dir", "symlink" or "submodule"), None when no directory is there. As for :func:`git_show`, "absent" is
    trusted only when the commit itself is in the repository; other failures raise InputError."""
    revision(ref, f"{ref}:{path}")
    result = git(["ls-tree", "-z", f"{ref}:{path}" if path else f"{ref}^{{tree}}"])
    if result.returncode == 0:
        out: list[tuple[str, str]] = []
        for line in result.stdout.split("\0"):
            meta, _, name = line.partition("\t")
            fields = meta.split()
            if not name or len(fields) < 2:
                continue
            kind = {"tree": "dir", "commit": "submodule"}.get(fields[1], "symlink" if fields[0] == "120000" else "file")
            out.append((name, kind))
        return out
    if git(["cat-file", "-e", f"{ref}^{{commit}}"]).returncode == 0:
        return None  # the commit is here: the path is absent there, or not a directory
    message = result.stderr.strip().splitlines()[-1] if result.stderr.strip() else f"exit code {result.returncode}"
    raise InputError(f"{ref}:{path}", "", f"git ls-tree failed: {message}; fetch the commit (git fetch origin {ref}, "
                     "or actions/checkout with fetch-depth: 0)")


def run_git(args: Sequence[str], cwd: Path | None = None) -> GitResult:
    """Run ``git`` in ``cwd`` (default: the current directory); a missing git binary is exit code 127."""
    try:
        done = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=False, timeout=60)
    except FileNotFoundError:
        return GitResult(127, "", "git is not installed")
    except subprocess.TimeoutExpired:
        return GitResult(124, "", "git timed out after 60 s")
    return GitResult(done.returncode, done.stdout, done.stderr)
