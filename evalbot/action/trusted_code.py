"""Whether the trusted stage may run the custom metrics of its checkout: only when every file of each metric's code
identity (criteria.custom_code: its module, the repository files it imports, its declared data files) is byte for
byte the file of the commit the workflow runs on, as GitHub serves it.

The ``workflow_run`` stage holds the repository's secrets and a write token, so it never runs a pull request's code.
Its checkout is the default branch's unless the workflow checks out something else (the pull request's head, the
classic mistake): comparing each file's git blob id with the contents API's at ``GITHUB_SHA`` tells the two apart
without git (the image has none). The metric's worker then reads no other repository file (criteria.custom_worker),
so the code that runs is the default branch's, which the workflow itself already trusts. The pull request's recorded
runs stay data: the worker gets them as JSON, with no secret in its environment.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterator
from pathlib import Path

from evalbot.criteria.custom import import_roots, metric_code, parse_definition
from evalbot.errors import ConfigError
from evalbot.forge.base import Forge, ForgeError
from evalbot.pipeline import Inputs

MAX_FILES = 300
"""Files checked at most (one contents request each); a metric whose code spans more is not run here."""


def blob_sha(data: bytes) -> str:
    """Git's blob id of ``data``."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data, usedforsecurity=False).hexdigest()


def _code_files(loaded: Inputs) -> Iterator[tuple[str, list[str], bool]]:
    """Each custom metric's function path, the files of its code identity and whether the identity was cut short."""
    for es in loaded.eval_sets:
        for spec in es.config.criteria:
            raw = es.config.custom_metrics.get(spec.name)
            if raw is None:
                continue
            try:
                definition = parse_definition(spec.name, raw)
            except ConfigError:
                continue  # the run reports it
            identity = metric_code(definition, import_roots(es.path))
            truncated = any(key.startswith(("<truncated>", "<data truncated>")) for key in identity.files)
            yield definition.function_path, list(identity.paths), truncated


def unverified_metric_code(loaded: Inputs, workspace: Path, forge: Forge, ref: str) -> str | None:
    """None when the custom metrics' code in ``workspace`` is ``ref``'s (or there are none); else why they are not
    run here (the criterion's not-run reason: it names the file and what to do)."""
    root = os.path.realpath(workspace)
    checked: set[str] = set()
    for function, paths, truncated in _code_files(loaded):
        if truncated:
            return f"the code of {function} spans too many files to check against {ref[:12]}"
        for path in paths:
            if path in checked:
                continue
            if len(checked) >= MAX_FILES:
                return f"the custom metrics' code spans more than {MAX_FILES} files to check against {ref[:12]}"
            checked.add(path)
            if not path.startswith(root + os.sep):
                return f"{path}, code of {function}, is outside the workspace: it cannot be checked against {ref[:12]}"
            relative = Path(path).relative_to(root).as_posix()
            try:
                data = Path(path).read_bytes()
                served = forge.file_sha(relative, ref=ref)
            except (OSError, ForgeError) as exc:
                return f"{relative} (code of {function}) could not be checked against {ref[:12]}: {exc}"
            if served != blob_sha(data):
                where = "is not in" if served is None else "differs from the file of"
                return (f"{relative} (code of {function}) in this checkout {where} commit {ref[:12]}, the one this "
                        "workflow runs on: the trusted stage runs only that commit's metric code (check out the "
                        "default branch, as actions/checkout does by default)")
    return None
