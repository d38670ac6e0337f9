"""git, the one place it is called: a subprocess runner, ``git show REF:PATH``, ``git ls-tree`` and the files a change
touched (``changed_since``)."""

from __future__ import annotations

import contextlib
import difflib
import os
import re
import signal
import subprocess
import tempfile
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from evalbot.errors import InputError


@dataclass(frozen=True)
class GitResult:
    """What a git invocation returned."""

    returncode: int
    stdout: str
    """Decoded as UTF-8, undecodable bytes kept as surrogate escapes (see :func:`utf8_text`)."""
    stderr: str
    too_long: bool = False
    """The output passed ``MAX_GIT_OUTPUT`` bytes: git was stopped and ``stdout`` is incomplete."""


GitRunner = Callable[[list[str]], GitResult]
"""Runs ``git`` with the given arguments (the CLI passes a subprocess runner; tests pass fakes)."""


_MISSING_MARKERS = ("does not exist in", "exists on disk, but not in")

MAX_SPEC_CHARS = 4096
"""The longest ``REF:PATH`` given to git (Linux's PATH_MAX; one argument may not pass 128 KiB at all)."""

GIT_TIMEOUT_S = 60.0
"""A git call running longer is stopped, with whatever it started."""

MAX_GIT_OUTPUT = 100 * 1024 * 1024
"""Bytes of git's output read at most (a baseline file is capped at 100 MiB too): a change's config can name any
``REF:PATH``, and a blob of gigabytes there is not read into memory."""


def revision(ref: str, where: str) -> str:
    """``ref`` when git can only read it as a revision: one starting with ``-`` would be read as an option
    (``--output=FILE`` makes ``git show`` write a file), so it is refused as an InputError naming ``where``. A
    config's ``baseline_path`` is the change's own text, and no branch, tag or commit name starts with ``-``."""
    if not ref or ref.startswith("-") or "\0" in ref:
        raise InputError(where, "", f"{ref!r} is not a git revision (a revision never starts with '-', which git "
                                    "would read as an option); give a branch, tag or commit, e.g. origin/main")
    return ref


def _spec(ref: str, path: str) -> str:
    """``REF:PATH`` when git can read it: the ref is a revision (:func:`revision`) and the path has no NUL byte
    (JSON can spell one as ``\\u0000``; no argument can carry it), else an InputError naming the spec."""
    spec = f"{ref}:{path}"
    if len(spec) > MAX_SPEC_CHARS:  # no argument that long can even start git (E2BIG)
        raise InputError(spec[:200] + "…", "", f"REF:PATH longer than {MAX_SPEC_CHARS:,} characters; no file path "
                                              "is that long")
    revision(ref, spec)
    if "\0" in path:
        raise InputError(spec, "", "the path has a NUL byte (\\u0000), which no file name has; give the file's path")
    return spec


def _check_size(result: GitResult, spec: str) -> None:
    if result.too_long:
        raise InputError(spec, "", f"larger than {MAX_GIT_OUTPUT:,} bytes at that commit; not read")


def utf8_text(text: str, spec: str) -> str:
    """``text`` (git's output, see :func:`run_git`) when it was valid UTF-8, else an InputError naming ``spec``."""
    if not text.isascii():
        try:
            text.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise InputError(spec, "", f"not UTF-8 text (byte {exc.start} of the file is not valid UTF-8); save "
                                       "it as UTF-8") from None
    return text


def git_show(ref: str, path: str, *, git: GitRunner) -> str | None:
    """The text of ``path`` at ``ref``, None when the path does not exist there; other git failures raise.

    "Absent" is trusted only when the commit itself is in the repository: for a full sha git says "does not exist
    in" even when it does not have the commit at all (a depth-1 checkout lacks the PR's base commit), and reading
    that as "no baseline" would let every regression through.
    """
    spec = _spec(ref, path)
    result = git(["show", spec])
    _check_size(result, spec)
    if result.returncode == 0:
        text = utf8_text(result.stdout, spec)
        return text.replace("\r\n", "\n").replace("\r", "\n") if "\r" in text else text  # as a file opened as text
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
    spec = _spec(ref, path)
    result = git(["ls-tree", "-z", spec if path else f"{ref}^{{tree}}"])
    _check_size(result, spec)
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


@dataclass(frozen=True)
class Changed:
    """What a change touched: the files changed between the merge base of a ref and HEAD and the working tree."""

    merge_base: str
    files: tuple[str, ...]
    """Repository paths (from the top folder), each once: modified, added, deleted (a rename: both names). Files git
    does not track are not among them: what a workflow's earlier steps wrote (the agent's recorded runs, reports) is
    no change to what is measured (``git add -N`` a new file to count it)."""


def _names(result: GitResult, what: str) -> list[str]:
    if result.returncode != 0:
        message = result.stderr.strip().splitlines()[-1] if result.stderr.strip() else f"exit code {result.returncode}"
        raise InputError(what, "", f"git failed: {message}")
    if result.too_long:
        raise InputError(what, "", f"git listed more than {MAX_GIT_OUTPUT:,} bytes of file names; not read")
    return [name for name in result.stdout.split("\0") if name]


def changed_since(ref: str, *, git: GitRunner) -> Changed:
    """The files a change touched against ``ref``: ``git diff --name-only`` between ``merge-base(ref, HEAD)`` and the
    working tree (what is committed on the branch and what is not yet), renames as a deletion and an addition.
    Raises InputError naming the ref when git cannot say (the ref or its history not in the
    checkout: a shallow clone)."""
    revision(ref, "--base")
    found = git(["merge-base", ref, "HEAD"])
    base = found.stdout.strip()
    if found.returncode != 0 or not re.fullmatch(r"[0-9a-f]{40}|[0-9a-f]{64}", base):
        message = found.stderr.strip().splitlines()[-1] if found.stderr.strip() else "no common ancestor with HEAD"
        raise InputError(ref, "", f"git merge-base {ref} HEAD failed: {message}; fetch the base's history (git fetch "
                                  f"origin {ref}, or actions/checkout with fetch-depth: 0)")
    diff = _names(git(["-c", "core.quotepath=false", "diff", "--name-only", "-z", "--no-relative", "--no-renames", "--no-ext-diff",
                       "--no-textconv", base, "--"]), f"git diff {base[:12]}")
    return Changed(base, tuple(dict.fromkeys(diff)))


def run_git(args: Sequence[str], cwd: Path | None = None) -> GitResult:
    """Run ``git`` in ``cwd`` (default: the current directory); a missing git binary is exit code 127, git running
    past 60 s is stopped (exit code 124). Its output is read up to ``MAX_GIT_OUTPUT`` bytes (past it git is stopped and
    ``too_long`` set) and decoded as UTF-8 whatever the locale, undecodable bytes (a file name or file that is not
    UTF-8) kept as surrogate escapes: a name round-trips into the next git call, a file's text is checked by
    :func:`utf8_text`."""
    limit = MAX_GIT_OUTPUT
    with tempfile.TemporaryFile() as errors:
        try:
            proc = subprocess.Popen(["git", *args], cwd=cwd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                    stderr=errors, start_new_session=True)
        except FileNotFoundError:
            return GitResult(127, "", "git is not installed")
        except OSError as exc:  # an argument the kernel refuses (E2BIG), no process to be had (EAGAIN)
            return GitResult(126, "", f"could not start git: {exc.strerror or exc}")
        expired = threading.Event()

        def stop() -> None:
            expired.set()
            with contextlib.suppress(OSError):  # git and what it started (a helper holding the pipe open)
                os.killpg(proc.pid, signal.SIGKILL)

        timer = threading.Timer(GIT_TIMEOUT_S, stop)
        timer.start()
        try:
            assert proc.stdout is not None
            out = proc.stdout.read(limit + 1)
            too_long = len(out) > limit
            if too_long:
                with contextlib.suppress(OSError):
                    os.killpg(proc.pid, signal.SIGKILL)
            proc.stdout.close()
            code = proc.wait()
        finally:
            timer.cancel()
        errors.seek(0)
        err = errors.read().decode("utf-8", "replace")
    if expired.is_set() and code < 0:  # killed by the timer (not a git that ended just as it fired)
        return GitResult(124, "", f"git timed out after {GIT_TIMEOUT_S:g} s")
    return GitResult(code, out[:limit].decode("utf-8", "surrogateescape"), err, too_long=too_long)


def ref_problem(ref: str, *, git: GitRunner) -> str | None:
    """None when ``ref`` names a commit in this repository; else why not, with the branches and tags whose names are
    closest ("did you mean"), so a mistyped ``mian:`` is not read as a ref to fetch."""
    if git(["rev-parse", "--verify", "--quiet", f"{revision(ref, ref)}^{{commit}}"]).returncode == 0:
        return None
    if git(["rev-parse", "--git-dir"]).returncode != 0:
        return None  # no repository here (or no git): reading at REF says so
    listed = git(["for-each-ref", "--format=%(refname:short)", "refs/heads", "refs/remotes", "refs/tags"])
    names = [n for n in listed.stdout.splitlines() if n and not n.endswith("/HEAD")] if listed.returncode == 0 else []
    close = difflib.get_close_matches(ref, names, n=3, cutoff=0.6)
    guess = f" (did you mean {' or '.join(close)}?)" if close else ""
    return (f"{ref!r} is no branch, tag or commit in this repository{guess}; if it exists on the remote, fetch it "
            f"(git fetch origin {ref}, or actions/checkout with fetch-depth: 0)")


def ancestry_warning(ref: str, *, git: GitRunner) -> str | None:
    """A warning when commit ``ref`` is not an ancestor of HEAD: its baseline was measured on another line of
    history (another branch), not on what this change is based on. None when it is, or when git cannot tell."""
    if git(["merge-base", "--is-ancestor", f"{revision(ref, ref)}^{{commit}}", "HEAD"]).returncode != 1:
        return None
    return (f"{ref} is not an ancestor of HEAD: its baseline was measured on another line of history, not on the "
            f"commit this change is based on; compare with the base branch (e.g. --baseline origin/main:PATH)")
