"""What is wrong with a path or id a user gave: an output, an input file, a directory, a comment id (both front ends
check them before any work); where reads must stay (the workspace); and how outputs are written (never through a
symbolic link)."""

from __future__ import annotations

import errno
import os
import re
import stat
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path
from typing import TextIO

from evalbot.errors import InputError

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


_workspace: ContextVar[Path | None] = ContextVar("evalbot_workspace", default=None)


@contextmanager
def confined_to(root: Path) -> Iterator[None]:
    """While inside, input files lexically inside ``root`` must also resolve inside it (the Action's workspace: the
    pull request's tree, where a committed symlink could lead a read anywhere). Paths given outside ``root`` (an
    absolute path the workflow names, e.g. under ``runner.temp``) are the workflow's choice and are not refused."""
    token = _workspace.set(Path(os.path.abspath(root)))
    try:
        yield
    finally:
        _workspace.reset(token)


def problem_leaving_workspace(path: Path, root: Path | None = None) -> str | None:
    """Why ``path`` is refused: it lies in the workspace (``root``, default the one of confined_to) but resolves
    outside it."""
    root = Path(os.path.abspath(root)) if root is not None else _workspace.get()
    if root is None or not Path(os.path.abspath(path)).is_relative_to(root):
        return None
    try:
        resolved, real_root = path.resolve(), root.resolve()
    except (OSError, RuntimeError):
        return "cannot be resolved (a symbolic link loop?); refused"
    if resolved.is_relative_to(real_root):
        return None
    return ("refused: it resolves outside the workspace (a symbolic link?); the pull request's files must stay "
            "inside the checkout")


def _refuse_link(directory: int, name: str, exc: OSError) -> OSError:
    try:
        is_link = stat.S_ISLNK(os.lstat(name, dir_fd=directory).st_mode)
    except OSError:
        is_link = False
    if is_link:
        return OSError(errno.ELOOP, f"{name!r} is a symbolic link; evalbot never writes through one")
    return exc


def open_for_writing(path: Path, root: Path | None = None) -> int:
    """A descriptor of ``path`` opened for writing (created, truncated), its missing directories created.

    No symbolic link is followed where the tree is not the caller's own choice: every component below ``root``
    (default: the working directory) when ``path`` lies there, else the file itself (its directories are the ones
    the caller named). A FIFO without a reader, a device or anything but a regular file is refused. Raises OSError.
    """
    absolute = Path(os.path.abspath(path))
    anchor = Path(os.path.abspath(root if root is not None else Path.cwd()))
    if absolute.is_relative_to(anchor) and absolute != anchor:
        parts = absolute.relative_to(anchor).parts
    else:
        absolute.parent.mkdir(parents=True, exist_ok=True)
        anchor, parts = absolute.parent, (absolute.name,)
    directory_flags = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
    current = os.open(anchor, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        for part in parts[:-1]:
            try:
                following = os.open(part, directory_flags, dir_fd=current)
            except FileNotFoundError:
                os.mkdir(part, dir_fd=current)
                following = os.open(part, directory_flags, dir_fd=current)
            except OSError as exc:
                raise _refuse_link(current, part, exc) from None
            os.close(current)
            current = following
        flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
        try:
            fd = os.open(parts[-1], flags, 0o666, dir_fd=current)
        except OSError as exc:
            raise _refuse_link(current, parts[-1], exc) from None
    finally:
        os.close(current)
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise OSError(errno.EINVAL, "not a regular file")
    os.set_blocking(fd, True)
    return fd


@contextmanager
def output_file(path: Path | str, *, name: str, root: Path | None = None) -> Iterator[TextIO]:
    """``path`` open for writing UTF-8 text (see open_for_writing). Any failure to open, write or close it, such as
    a symbolic link, a read-only place, ``/proc/self/mem`` or a full disk, is an InputError naming ``name`` (the
    input or flag that gave the path): exit 2, never an evalbot bug."""
    try:
        with os.fdopen(open_for_writing(Path(path), root), "w", encoding="utf-8") as handle:
            yield handle
    except OSError as exc:
        raise InputError(name, "", f"cannot write {str(path)!r}: {exc.strerror or exc}") from None


def write_output(path: Path | str, text: str | Iterable[str], *, name: str, root: Path | None = None) -> None:
    """Write ``text`` (or its pieces, as they come: a large page is never held whole) to ``path`` through
    output_file."""
    with output_file(path, name=name, root=root) as handle:
        if isinstance(text, str):
            handle.write(text)
        else:
            for piece in text:
                handle.write(piece)
