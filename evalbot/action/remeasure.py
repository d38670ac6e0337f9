"""What the fork-safe second stage re-measures: the first stage's recorded runs, carried in its artifact.

The first stage (a ``pull_request`` job the pull request controls) copies the recorded runs it scored (the
``actuals`` files, byte for byte) into ``runs/`` beside its report, so the upload of the report's directory carries
them. The second stage never shows that report's scores or verdict: it re-scores the runs against the eval sets and
criteria of its own (trusted) checkout. The artifact's report only serves to check that the artifact is whole: an
artifact without runs, with unreadable runs, whose report and runs name different cases, or whose runs leave out a
case of the trusted eval sets cannot be re-measured, and says so (verdict error, never a pass). Runs of cases in no
eval set are ignored with a notice, in both stages alike.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from evalbot.action.settings import ActionInputs
from evalbot.action.workspace import Workspace
from evalbot.errors import InputError
from evalbot.formats.loaded import LoadedEvalSet
from evalbot.pipeline import RecordedActuals
from evalbot.render.template_files import read_regular_file
from evalbot.results import Report
from evalbot.shard.parts import RUNS_DIR

MAX_RUNS_BYTES = 50 * 1024 * 1024
"""Largest recorded-runs file copied (the second stage reads at most this much of an artifact anyway)."""
MAX_LISTED = 10
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")

CaseKey = tuple[str, str]


def run_file_name(index: int, name: str) -> str:
    """``<index>-<name>`` with the name reduced to letters, digits, ``.``, ``_`` and ``-`` (the suffix that tells the
    format, ``.evalset_result.json``, ``.jsonl`` or ``.csv``, is kept)."""
    safe = _UNSAFE.sub("_", name).lstrip(".")[-120:] or "runs.json"
    return f"{index}-{safe}"


def copy_runs(inputs: ActionInputs, ws: Workspace) -> list[str]:
    """First stage: copy the recorded runs (the ``actuals`` input) into ``runs/`` beside the report, replacing the
    files an earlier run left there; returns the workspace-relative paths written. A file that cannot be read is skipped: the report already names it, and the
    second stage then finds its cases without a run."""
    if not inputs.actuals:
        return []
    folder = ws.path(inputs.report_path).parent / RUNS_DIR
    if folder.is_symlink() or (folder.exists() and not folder.is_dir()):
        raise InputError(ws.relative(str(folder)), "", "refused: not a directory (a symlink?); remove it")
    folder.mkdir(parents=True, exist_ok=True)
    for stale in folder.iterdir():  # an earlier run's copies (a reused workspace) must not travel with this run's
        if stale.is_symlink() or stale.is_file():
            stale.unlink()
        else:  # a folder committed there would make the copy's write fail (IsADirectoryError)
            raise InputError(ws.relative(str(stale)), "", f"refused: not a file, in the folder {RUNS_DIR}/ beside "
                             "report-path where evalbot copies the recorded runs; remove it from the repository")
    written = []
    for index, raw in enumerate(inputs.actuals):
        try:
            data = read_regular_file(ws.path(raw), root=ws.root, where=raw, what="recorded runs",
                                     limit=MAX_RUNS_BYTES)
        except InputError:
            continue
        target = folder / run_file_name(index, Path(raw).name)
        target.write_bytes(data)
        written.append(ws.relative(str(target)))
    return written


def runs_in(files: Mapping[str, bytes]) -> list[tuple[str, bytes]]:
    """The recorded-runs files of a downloaded artifact (members of a ``runs/`` folder), in name order."""
    return sorted((name, data) for name, data in files.items() if PurePosixPath(name).parent.name == RUNS_DIR)


def write_runs(runs: Sequence[tuple[str, bytes]], folder: Path) -> list[str]:
    """Write the artifact's run files into ``folder`` (a private directory) under names evalbot chooses."""
    paths = []
    for index, (name, data) in enumerate(runs):
        target = folder / run_file_name(index, PurePosixPath(name).name)
        target.write_bytes(data)
        paths.append(str(target))
    return paths


def _listed(keys: Sequence[CaseKey]) -> str:
    shown = ", ".join(f"{set_id}/{eval_id}" if set_id else eval_id for set_id, eval_id in keys[:MAX_LISTED])
    return shown + (f" and {len(keys) - MAX_LISTED} more" if len(keys) > MAX_LISTED else "")


@dataclass
class Check:
    """What the artifact's runs allow: the reason it cannot be re-measured (None: it can), and the cases the pull
    request adds (in its report and runs, in no trusted eval set)."""

    problem: str | None = None
    added: list[CaseKey] = field(default_factory=list)
    ignored: list[CaseKey] = field(default_factory=list)
    """Runs of cases in no trusted eval set and not added by the pull request: not scored (see ``ignored_note``)."""


def _has_run(read: RecordedActuals, eval_set_id: str, eval_id: str) -> bool:
    if read.actuals.find(eval_set_id, eval_id) is not None:
        return True
    return read.runs is not None and bool(read.runs.of(eval_set_id, eval_id))


def _run_ids(read: RecordedActuals) -> list[CaseKey]:
    keys = [(set_id or "", eval_id) for set_id, eval_id in read.actuals.entries]
    keys += list(read.runs.runs) if read.runs is not None else []
    return list(dict.fromkeys(keys))


def unused_runs(read: RecordedActuals, eval_sets: Sequence[LoadedEvalSet]) -> list[CaseKey]:
    """The recorded runs no case of ``eval_sets`` is scored from, found as scoring finds a case's run: under its
    eval set's id, else under its eval_id alone (a plain map's entries; a recording's when that id is unique)."""
    entries = read.actuals.entries
    used: set[tuple[str | None, str]] = set()
    recorded = read.runs.runs if read.runs is not None else {}
    by_id: dict[str, list[tuple[str, str]]] = {}
    for key in recorded:
        by_id.setdefault(key[1], []).append(key)
    for es in eval_sets:
        for case in es.cases:
            key = (es.eval_set_id, case.eval_id)
            used.add(key if key in entries else (None, case.eval_id))
            same = by_id.get(case.eval_id, [])
            used.update([key] if key in recorded else same if len(same) == 1 else [])
    found = [key for key in entries if key not in used] + [key for key in recorded if key not in used]
    return list(dict.fromkeys((set_id or "", eval_id) for set_id, eval_id in found))


def ignored_note(ignored: Sequence[CaseKey], where: str = "the eval sets") -> str:
    """The notice on recorded runs of cases in no eval set (the first and the trusted stage say it alike)."""
    return (f"{len(ignored)} recorded run(s) name no case of {where} and were ignored: {_listed(ignored)} (only the "
            "eval sets' cases are scored; one recorded-runs file may serve several suites)")


def check_artifact(report: Report, read: RecordedActuals, eval_sets: Sequence[LoadedEvalSet], artifact: str, *,
                   every_set: Sequence[LoadedEvalSet] | None = None) -> Check:
    """Whether the artifact can be re-measured against ``eval_sets`` (the trusted checkout's, those measured): it must
    hold readable runs, every case of its report must have a run, and every case of ``eval_sets`` must have a run.
    Runs of cases in no eval set of ``every_set`` (all the checkout's, ``eval_sets`` by default; a runs file shared
    by several suites) are ignored, as the first stage ignores them."""
    errors = read.errors + read.recording_errors
    if errors:
        return Check(f"the recorded runs in artifact {artifact} are unreadable: {errors[0]}")
    reported = [(es.eval_set_id, case.eval_id) for es in report.eval_sets for case in es.cases]
    run_ids = _run_ids(read)
    if not reported or not run_ids:
        empty = "no case in its report" if not reported else "no recorded run"
        return Check(f"artifact {artifact} is empty ({empty}): there is nothing to re-measure; upload the first "
                     f"stage's whole report directory (its report and its {RUNS_DIR}/ folder)")
    no_run = [key for key in reported if not _has_run(read, *key)]
    reported_ids = {eval_id for _, eval_id in reported}
    no_case = [key for key in run_ids if key[1] not in reported_ids]
    if no_run:  # the report scored a case the runs do not hold: not the artifact the first stage uploaded
        sides = "; ".join(x for x in (f"in its report without a run: {_listed(no_run)}" if no_run else "",
                                       f"runs its report does not have: {_listed(no_case)}" if no_case else "") if x)
        return Check(f"artifact {artifact} is inconsistent (its report and its recorded runs name different cases): "
                     f"{sides}; use the artifact the first stage uploaded")
    trusted = [(es.eval_set_id, case.eval_id) for es in eval_sets for case in es.cases]
    missing = [key for key in trusted if not _has_run(read, *key)]
    if missing:
        return Check(f"{len(missing)} case(s) of the default branch's eval sets have no recorded run in artifact "
                     f"{artifact} ({_listed(missing)}): they cannot be re-measured, so this pull request cannot "
                     "be gated (a partial run is never a pass; a case the pull request removes is measured again "
                     "once the removal is on the default branch)")
    known = set(trusted)
    known_ids = {eval_id for _, eval_id in trusted}
    added = [key for key in reported if key not in known and key[1] not in known_ids]
    added_ids = {eval_id for _, eval_id in added}
    ignored = [key for key in unused_runs(read, every_set or eval_sets) if key[1] not in added_ids]
    return Check(added=added, ignored=ignored)


def added_note(added: Sequence[CaseKey]) -> str:
    """The comment's note on the cases the pull request adds."""
    return (f"{len(added)} case(s) this pull request adds are new and not gated: {_listed(added)}. They are in no "
            "eval set of the default branch, so the trusted stage has no definition of its own to measure them "
            "against; they are measured once merged.")
