"""Where a comment template may come from: a regular file inside the workspace (or the repository at a commit).

A template path written in a config or a workflow is untrusted text: it must be relative, without ``..``, and
resolve (symlinks followed) to a regular file inside the workspace no larger than :data:`MAX_TEMPLATE_BYTES`.
Anything else (``/proc/self/environ``, ``../../secrets``, a symlink leaving the checkout, a FIFO, a device) is an
input error naming where the path was written, never read.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Mapping
from pathlib import Path, PurePosixPath
from typing import Any

from evalbot.errors import InputError

MAX_TEMPLATE_BYTES = 256 * 1024
"""Largest comment template read (a template is a page of Jinja, not data)."""
_HINT = "give a path relative to the repository, inside it (no absolute path, no '..')"


def template_relpath(raw: str, *, where: str, pointer: str = "") -> PurePosixPath:
    """``raw`` checked as a relative path that cannot climb out of the directory it is relative to."""
    text = raw.strip()
    bad = (
        not text or "\x00" in text or "\\" in text or text.startswith(("/", "~")) or Path(text).is_absolute()
        or (len(text) > 1 and text[1] == ":")
    )
    parts = PurePosixPath(text).parts
    if bad or ".." in parts:
        raise InputError(where, pointer, f"comment template {raw!r} refused: {_HINT}")
    return PurePosixPath(*[p for p in parts if p != "."]) if parts else PurePosixPath(text)


def join_inside(base: PurePosixPath, raw: str, *, where: str, pointer: str = "") -> PurePosixPath:
    """``raw`` (checked) relative to the repository directory ``base`` (itself relative, without ``..``)."""
    rel = template_relpath(raw, where=where, pointer=pointer)
    if ".." in base.parts or base.is_absolute():
        raise InputError(where, pointer, f"comment template {raw!r} refused: its config lies outside the workspace")
    return PurePosixPath(*[p for p in (base / rel).parts if p != "."])


def read_template_file(path: Path, *, root: Path | None, where: str, pointer: str = "") -> str:
    """The UTF-8 text of the template at ``path``, which must resolve inside ``root`` (None: anywhere; for a path
    the local user typed) to a regular file of at most :data:`MAX_TEMPLATE_BYTES` bytes."""
    data = read_regular_file(path, root=root, where=where, pointer=pointer)
    return template_text(data, shown=str(path), where=where, pointer=pointer)


def read_regular_file(
    path: Path, *, root: Path | None, where: str, pointer: str = "", what: str = "comment template",
    limit: int = MAX_TEMPLATE_BYTES,
) -> bytes:
    """The bytes of ``path``, which must resolve inside ``root`` (None: anywhere) to a regular file of at most
    ``limit`` bytes (a FIFO is opened without blocking and refused; ``/dev/zero`` is refused, never read)."""
    shown = str(path)
    try:
        resolved = path.resolve(strict=True)
    except (OSError, RuntimeError):
        raise InputError(where, pointer, f"{what} not found: {shown}; fix the path") from None
    if root is not None and not resolved.is_relative_to(root.resolve()):
        raise InputError(where, pointer, f"{what} {shown} refused: it resolves outside the workspace "
                                         "(a symlink?); keep it inside the repository")
    flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(resolved, flags)
    except OSError as exc:
        raise InputError(where, pointer, f"{what} {shown} unreadable: {exc.strerror or exc}") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise InputError(where, pointer, f"{what} {shown} refused: not a regular file")
        if info.st_size > limit:
            raise InputError(where, pointer, f"{what} {shown} refused: {info.st_size:,} bytes, limit {limit:,}")
        chunks: list[bytes] = []
        size = 0
        while size <= limit:
            chunk = os.read(fd, limit + 1 - size)
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
    finally:
        os.close(fd)
    if size > limit:
        raise InputError(where, pointer, f"{what} {shown} refused: larger than {limit:,} bytes")
    return b"".join(chunks)


def template_text(data: bytes, *, shown: str, where: str, pointer: str = "") -> str:
    """Template bytes (from a file or a commit) checked for size and decoded as UTF-8."""
    if len(data) > MAX_TEMPLATE_BYTES:
        raise InputError(where, pointer, f"comment template {shown} refused: larger than {MAX_TEMPLATE_BYTES:,} bytes")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise InputError(where, pointer, f"comment template {shown} is not valid UTF-8; save it as UTF-8") from None


TEMPLATE_KEYS = ("comment_template", "commentTemplate", "comment-template")


def template_setting(settings: Mapping[str, Any], where: str) -> tuple[str, str] | None:
    """The config's ``evalbot.comment_template`` (any spelling) and its JSON pointer, None when not set."""
    for key in TEMPLATE_KEYS:
        if key in settings:
            raw, pointer = settings[key], f"/evalbot/{key}"
            if not isinstance(raw, str) or not raw.strip():
                raise InputError(where, pointer, "expected a path to a Jinja template file in the repository")
            return raw, pointer
    return None


def comment_template_text(
    cli_path: str | None, settings: Mapping[str, Any], config: Path | None, *, root: Path | None = None,
    input_name: str | None = None,
) -> str | None:
    """The user's comment template: ``cli_path``, else ``evalbot.comment_template`` (relative to the config file),
    else None for the default template.

    The config's path must resolve inside ``root`` (default: the working directory): a config is repository
    content, which a pull request can change. ``cli_path`` is confined too when it comes from the Action input
    ``input_name``; a path typed on the command line is the user's own and may be anywhere.
    """
    root = root or Path.cwd()
    if cli_path:
        if input_name is None:
            return read_template_file(Path(cli_path), root=None, where="--comment-template")
        where = f"input {input_name}"
        rel = template_relpath(cli_path, where=where)
        return read_template_file(root / rel, root=root, where=where)
    where = str(config or "config")
    found = template_setting(settings, where)
    if found is None:
        return None
    raw, pointer = found
    rel = template_relpath(raw, where=where, pointer=pointer)
    base = config.parent if config is not None else root
    return read_template_file(base / rel, root=root, where=where, pointer=pointer)
