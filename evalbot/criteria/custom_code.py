"""What a custom metric's code is, as the gate process sees it in the files: the identity of a ``custom_metrics``
function, computed without importing (or running) anything.

The worker that imports the metric runs repository code, so nothing it says about itself is believed: a module can
replace any function of the worker's at import time.  Instead the gate resolves the metric's module on the worker's
import path (:func:`~evalbot.criteria.custom_process.worker_path`), reads it, follows every import it finds with
:mod:`ast` (``import a.b``, ``from . import x``, ``from .x import y``, ``importlib.import_module("name")`` and
``__import__("name")`` with a literal name, at any depth: inside functions, ``try`` and ``if`` blocks too) to the
modules and packages (their ``__init__.py``) the import would run, and hashes every such file that lies in the
repository (under one of its import roots), by its path relative to that root and its bytes.  Files found outside the
roots (the standard library, installed packages) are the gate's environment: neither hashed nor followed.

The identity changes when the metric's module or any repository file it imports changes, so the baseline comparison
shows "custom metric code changed" (a yardstick change) for an edited helper as for an edited function.  The data
files the metric declares (``data_files``: globs from the repository root) are hashed too.  What cannot be seen
statically (a module imported by a computed name or from a ``sys.path`` the module extends, an undeclared data file)
the worker refuses to open (criteria.custom_worker): the metric runs exactly the repository files hashed here.

Each file is opened without following it into a FIFO or device (``O_NONBLOCK``, then ``fstat``: only a regular file
is read), at most :data:`MAX_FILE_BYTES` of it is hashed, a file over :data:`MAX_PARSE_BYTES` or one that does not
parse is hashed but not followed, and at most :data:`MAX_FILES` files are visited.
"""

from __future__ import annotations

import ast
import hashlib
import json
import os
import stat
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

MAX_FILES = 2000
"""Files visited for one metric; past it the identity says so (and still changes with any file hashed)."""
MAX_FILE_BYTES = 64 * 1024 * 1024
"""Bytes of one file hashed (its size is part of the identity too)."""
MAX_PARSE_BYTES = 4 * 1024 * 1024
"""A larger source file is hashed, not parsed for imports."""
_SUFFIXES = (".py", ".pyw")
_DYNAMIC = {"import_module", "__import__"}


@dataclass(frozen=True)
class CodeIdentity:
    """A metric's code: ``sha256`` over the repository files it runs (``files``: their paths from their root) and the
    data files it declared; ``paths``: where those files are (symbolic links resolved), the only repository files its
    worker may read."""

    sha256: str
    files: tuple[str, ...]
    paths: tuple[str, ...] = field(default=(), compare=False)


@dataclass(frozen=True)
class _Found:
    path: Path
    package: bool
    """An ``__init__.py`` (or a namespace package's folder, ``path`` then a folder)."""


def _read(path: Path) -> tuple[bytes | None, str]:
    """The file's bytes (None when it is not a regular file or cannot be read) and what identifies it if not."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        return None, f"unreadable ({type(exc).__name__})"
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            return None, "not a regular file"
        chunks: list[bytes] = []
        left = MAX_FILE_BYTES
        while left > 0:
            chunk = os.read(fd, min(left, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
        return b"".join(chunks), f"{info.st_size} bytes"
    except OSError as exc:
        return None, f"unreadable ({type(exc).__name__})"
    finally:
        os.close(fd)


class _Resolver:
    """Finds modules on the worker's import path as Python's path finder would, without importing them."""

    def __init__(self, search: Sequence[Path], roots: Sequence[Path]) -> None:
        self.search = list(search)
        self.roots = [r.resolve() for r in roots]

    def in_repository(self, path: Path) -> tuple[Path, Path] | None:
        """``(root, path relative to it)`` when ``path`` is inside a root (symbolic links resolved)."""
        try:
            real = path.resolve()
        except (OSError, RuntimeError):
            return None
        for root in self.roots:
            if real == root or root in real.parents:
                return root, real.relative_to(root)
        # a symbolic link inside the repository to a file outside it: named by where it sits
        for root in self.roots:
            try:
                return root, path.absolute().relative_to(root)
            except ValueError:
                continue
        return None

    @staticmethod
    def _in_folder(folder: Path, name: str) -> _Found | None:
        package = folder / name
        try:
            if package.is_dir():
                init = package / "__init__.py"
                if init.exists():
                    return _Found(init, True)
            for suffix in _SUFFIXES:
                module = folder / f"{name}{suffix}"
                if module.exists() and not module.is_dir():
                    return _Found(module, False)
            if package.is_dir():
                return _Found(package, True)
        except (OSError, ValueError):
            return None
        return None

    def find(self, dotted: str, extra: Sequence[Path] = ()) -> list[_Found]:
        """Each module an ``import dotted`` runs, outermost package first (empty when the first part is not found);
        ``extra`` folders are searched after the import path (a module beside the importing file)."""
        parts = dotted.split(".")
        found: list[_Found] = []
        folders = [*self.search, *extra]
        for index, part in enumerate(parts):
            hit = None
            for folder in folders:
                hit = self._in_folder(folder, part)
                if hit is not None:
                    break
            if hit is None:
                return found if index else []
            found.append(hit)
            if not hit.package:
                break
            folders = [hit.path.parent if hit.path.name == "__init__.py" else hit.path]
        return found


def _imports(tree: ast.AST, package: str) -> Iterator[tuple[str, bool]]:
    """The absolute module names ``tree`` may import (and whether a name may be a submodule: ``from x import y``)."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, False
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".") if package else []
                if node.level - 1 > len(base):
                    continue
                base = base[: len(base) - (node.level - 1)]
                name = ".".join([*base, *(node.module.split(".") if node.module else [])])
            else:
                name = node.module or ""
            if not name:
                continue
            yield name, False
            for alias in node.names:
                if alias.name != "*":
                    yield f"{name}.{alias.name}", True
        elif isinstance(node, ast.Call) and node.args:
            func = node.func
            called = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
            first = node.args[0]
            if called in _DYNAMIC and isinstance(first, ast.Constant) and isinstance(first.value, str):
                if first.value and not first.value.startswith("."):
                    yield first.value, False


def _data_files(patterns: Sequence[str], root: Path) -> Iterator[tuple[str, Path | None]]:
    """Each declared pattern's matches under ``root`` (``(key, path)``; ``(key, None)`` for a pattern that matches no
    regular file inside the root, so that adding one later changes the identity). A pattern matching more than
    :data:`MAX_FILES` paths raises OverflowError before any is hashed (which of them came first is the file system's
    order: no identity could be built from some of them)."""
    real_root = root.resolve()
    for pattern in patterns:
        matched = False
        found: list[Path] = []
        for path in root.glob(pattern):
            found.append(path)
            if len(found) > MAX_FILES:
                raise OverflowError(pattern)
        for path in sorted(found):
            try:
                real = path.resolve()
                regular = path.is_file()
            except (OSError, RuntimeError):
                continue
            if regular and (real_root in real.parents):
                matched = True
                yield f"data:{path.relative_to(root).as_posix()}", path
        if not matched:
            yield f"data:{pattern}", None


def _declared(patterns: Sequence[str], root: Path) -> list[tuple[str, Path | None]] | None:
    """The declared data files (see :func:`_data_files`), or None when they are more than :data:`MAX_FILES`."""
    try:
        found = list(_data_files(patterns, root))
    except OverflowError:
        return None
    return found if len(found) <= MAX_FILES else None


def code_identity(module: str, search: Sequence[Path], roots: Sequence[Path],
                  data_files: Sequence[str] = ()) -> CodeIdentity:
    """The identity of ``module``, the repository files it imports and the ``data_files`` it declared (globs from the
    first root; see the module docstring)."""
    resolver = _Resolver(search, roots)
    hashed: dict[str, str] = {}
    paths: set[str] = set()
    seen: set[Path] = set()
    queue: list[tuple[str, _Found]] = []

    def visit(name: str, found: Sequence[_Found]) -> None:
        parts = name.split(".")
        for depth, hit in enumerate(found):
            queue.append((".".join(parts[: depth + 1]), hit))

    visit(module, resolver.find(module))
    if not queue:
        hashed["<module>"] = f"{module} not found"
    truncated = False
    while queue:
        name, hit = queue.pop(0)
        if hit.path in seen:
            continue
        seen.add(hit.path)
        place = resolver.in_repository(hit.path)
        if place is None:
            continue  # the environment's (standard library, installed package): not the repository's code
        if len(seen) > MAX_FILES:
            truncated = True
            break
        key = place[1].as_posix()
        if hit.package and hit.path.name != "__init__.py":
            hashed[key + "/"] = "namespace package"
            continue
        data, what = _read(hit.path)
        if data is None:
            hashed[key] = what
            continue
        hashed[key] = hashlib.sha256(data).hexdigest() + f" {what}"
        paths.add(os.path.realpath(hit.path))
        if len(data) > MAX_PARSE_BYTES or not hit.path.name.endswith(_SUFFIXES):
            continue
        try:
            tree = ast.parse(data, filename=key)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            continue
        package = name if hit.package else name.rpartition(".")[0]
        for imported, maybe_attribute in _imports(tree, package):
            found = resolver.find(imported, (hit.path.parent,))
            if maybe_attribute and len(found) < imported.count(".") + 1:
                continue  # ``from x import y`` where y is not a module: x itself is queued separately
            visit(imported, found)
    if truncated:
        hashed["<truncated>"] = f"more than {MAX_FILES} files"
    declared = _declared(data_files, roots[0]) if data_files and roots else []
    if declared is None:  # the worker may then read none of them: the metric is an error, never scored unseen
        hashed["<data truncated>"] = f"more than {MAX_FILES} data files"
    for key, path in declared or []:
        if path is None:
            hashed[key] = "no file"
            continue
        content, what = _read(path)
        hashed[key] = what if content is None else hashlib.sha256(content).hexdigest() + f" {what}"
        if content is not None:
            paths.add(os.path.realpath(path))
    blob = json.dumps(sorted(hashed.items()), ensure_ascii=True)
    return CodeIdentity(hashlib.sha256(blob.encode()).hexdigest()[:16], tuple(sorted(hashed)), tuple(sorted(paths)))
