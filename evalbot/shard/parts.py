"""The reading of a sharded run's part files, which are untrusted data (in the fork-safe flow a pull request's jobs
write them).

``read_part`` reads a regular file (no symlink, FIFO or device), size-capped, as strict UTF-8 JSON validated by the
Report model (unknown keys and deep nesting refused); ``part_files`` finds them in what actions/download-artifact
lays out. A report written one case per line is validated case line by case line (``by_lines``), as the whole
document would be.
"""

from __future__ import annotations

import os
import secrets
import stat
from collections.abc import Iterable, Sequence
from pathlib import Path

from pydantic import Field, TypeAdapter, ValidationError

from evalbot.errors import InputError, json_pointer
from evalbot.formats.jsonio import gc_paused
from evalbot.render.template_files import read_regular_file
from evalbot.results import (
    MAX_SHARDS,
    CaseResult,
    EvalSetReport,
    Report,
    compacted,
)
from evalbot.turnpack import SpillStore

RUNS_DIR = "runs"
"""The folder beside a report holding the recorded runs it scored (evalbot.action.remeasure uploads it)."""


MAX_PART_BYTES = 256 * 1024 * 1024
"""Largest part file read."""
MAX_PARTS = MAX_SHARDS
"""Most part files a merge reads (one per shard)."""


class _SkeletonSet(EvalSetReport):
    """An eval set whose cases are the placeholders ``by_lines`` put in place of their lines."""

    cases: list[str] = Field(default_factory=list)  # type: ignore[assignment]


class _SkeletonReport(Report):
    """A report whose eval sets are skeletons: everything but the cases validated as the Report model does."""

    eval_sets: list[_SkeletonSet] = Field(default_factory=list)  # type: ignore[assignment]


_CASE_LINE = b'{"eval_id":'
"""How every case line of a report written by ``results.write_report_json`` starts (one case per line)."""
_CASE_ENDS = (b"]},", b",", b"]}")
"""What may follow a case on its line: the next case, or the end of its eval set's cases (and of the eval set)."""
_CASE_DEPTH = TypeAdapter(tuple[tuple[tuple[tuple[CaseResult]]]])
"""A case validated under four brackets: as deep as in a report (object, eval_sets, eval set, cases), so the JSON
parser's nesting limit refuses exactly the cases it refuses in the whole report."""


def split_lines(data: bytes) -> tuple[_SkeletonReport, list[tuple[int, int]]] | None:
    """``data`` as a report validated but for its cases, with a placeholder for each, and where the case lines are
    (``data[start:end]``, not validated yet), in order; None when it is not laid out one case per line or anything
    but the cases is invalid.

    A raw line break cannot be inside a JSON string, so each case line is a whole value wherever it stands; the
    placeholders carry a random nonce that no file can hold, and the split is taken only when they come back as the
    eval sets' cases, in order, each once: then the whole document holds exactly these lines as its cases, and
    everything else as the skeleton validated it."""
    nonce = secrets.token_hex(8)
    spans: list[tuple[int, int]] = []
    skeleton_text: list[bytes] = []
    copied = pos = 0
    while pos >= 0:
        newline = data.find(b"\n", pos)
        line_end = len(data) if newline < 0 else newline
        if data.startswith(_CASE_LINE, pos):
            end = line_end - len(next((e for e in _CASE_ENDS if data.endswith(e, pos, line_end)), b""))
            skeleton_text += [data[copied:pos], b'"%s:%d"' % (nonce.encode(), len(spans))]
            spans.append((pos, end))
            copied = end
        pos = newline + 1 if newline >= 0 else -1
    if not spans:
        return None
    try:
        skeleton = _SkeletonReport.model_validate_json(b"".join([*skeleton_text, data[copied:]]))
    except ValidationError:
        return None
    if [c for es in skeleton.eval_sets for c in es.cases] != [f"{nonce}:{k}" for k in range(len(spans))]:
        return None
    return skeleton, spans


def case_line(piece: bytes) -> CaseResult:
    """A case line validated as at its place in a report (raises ValidationError)."""
    case: CaseResult = _CASE_DEPTH.validator.validate_json(b"[[[[" + piece + b"]]]]")[0][0][0][0]
    return case


def _case_of(piece: bytes, store: SpillStore | None) -> CaseResult:
    """``case_line``, kept compacted as a scored case is (results.compacted, its turns and verdicts written to
    ``store`` when given): the merge of a compared run holds every case."""
    return compacted(case_line(piece), store)


def with_cases(skeleton: _SkeletonReport, cases: Iterable[list[CaseResult]]) -> Report:
    """The Report of ``skeleton`` holding ``cases`` (one list per eval set), as validating it whole gives it."""
    eval_sets = [EvalSetReport.model_construct(es.model_fields_set, **{**es.__dict__, "cases": held})
                 for es, held in zip(skeleton.eval_sets, cases, strict=True)]
    return Report.model_construct(skeleton.model_fields_set, **{**skeleton.__dict__, "eval_sets": eval_sets})


def by_lines(data: bytes, store: SpillStore | None = None) -> Report | None:
    """The report of ``data`` validated case line by case line, or None when that cannot be done (another layout,
    or anything invalid: the caller then validates the whole document, which names the error as it always has).

    The same report as ``Report.model_validate_json(data)`` (see ``split_lines``), 30-40% faster and without the
    parser's tree of the whole document: each case line is validated alone, under as many brackets as in the report
    so that the parser's nesting limit refuses exactly what it refuses there."""
    split = split_lines(data)
    if split is None:
        return None
    skeleton, spans = split
    try:
        cases = iter([_case_of(data[start:end], store) for start, end in spans])
    except ValidationError:
        return None
    return with_cases(skeleton, ([next(cases) for _ in es.cases] for es in skeleton.eval_sets))


BOM = b"\xef\xbb\xbf"


def part_from_bytes(data: bytes, name: str, store: SpillStore | None = None) -> Report:
    """A part's report from its bytes (strict UTF-8 JSON, validated); anything else raises InputError naming
    ``name`` and the JSON pointer. ``store``: where its cases' packed turns and verdicts are kept (see
    ``BuildContext.spill_store``)."""
    data = data.removeprefix(BOM)
    try:
        with gc_paused():  # millions of acyclic objects: the collector would rescan them over and over
            fast = by_lines(data, store)
            return fast if fast is not None else Report.model_validate_json(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        raise InputError(name, json_pointer(first["loc"]),
                         f"not an evalbot report: {first['msg']}; give the report a shard job wrote") from None


def read_part(path: Path, *, root: Path | None = None, store: SpillStore | None = None) -> Report:
    """Read one part file: a regular file (inside ``root`` when given) of at most MAX_PART_BYTES."""
    return part_from_bytes(part_bytes(path, root=root), str(path), store)


def part_bytes(path: Path, *, root: Path | None = None) -> bytes:
    """The bytes of one part file (see ``read_part``), not validated yet."""
    if path.is_symlink():
        raise InputError(path, "", "part refused: a symlink; give the report file itself")
    return read_regular_file(path, root=root, where=str(path), what="part", limit=MAX_PART_BYTES)


def part_files(paths: Sequence[str], *, root: Path | None = None) -> list[Path]:
    """The part files among ``paths``: files as given, and the ``*.json`` files in directories (searched two levels
    deep, as actions/download-artifact lays them out: one folder per artifact, or all in one with merge-multiple).
    Symlinks, FIFOs and other special files are refused, never opened."""
    out: list[Path] = []
    for raw in paths:
        path = Path(raw)
        try:
            mode = path.lstat().st_mode
        except OSError as exc:
            raise InputError(raw, "", f"part not found or unreadable: {exc.strerror or exc}; give the shard "
                                      "jobs' report files or the directory they were downloaded to") from None
        if stat.S_ISDIR(mode):
            out += _parts_in(path, depth=2)
        elif stat.S_ISLNK(mode):
            raise InputError(raw, "", "part refused: a symlink; give the report file itself")
        else:
            out.append(path)
        if len(out) > MAX_PARTS:
            raise InputError(raw, "", f"more than {MAX_PARTS} part files; give only the shard jobs' reports")
    if root is not None:
        for path in out:
            if not path.resolve().is_relative_to(root.resolve()):
                raise InputError(path, "", "part refused: outside the workspace")
    return out


def _parts_in(directory: Path, depth: int) -> list[Path]:
    found: list[Path] = []
    try:
        entries = sorted(os.scandir(directory), key=lambda e: e.name)
    except OSError as exc:
        raise InputError(directory, "", f"cannot list the directory: {exc.strerror or exc}") from None
    for entry in entries[: MAX_PARTS * 4]:
        path = Path(entry.path)
        if entry.is_symlink():
            if entry.name.endswith(".json"):
                raise InputError(path, "", "part refused: a symlink; give the report file itself")
            continue
        if entry.is_dir(follow_symlinks=False):
            if depth > 1 and entry.name != RUNS_DIR:  # runs/: the recorded runs uploaded beside a part, not parts
                found += _parts_in(path, depth - 1)
        elif entry.name.endswith(".json"):
            found.append(path)  # a FIFO or device is refused by read_part, never opened blocking
        if len(found) > MAX_PARTS:
            raise InputError(directory, "", f"more than {MAX_PARTS} part files; keep only the shard jobs' reports")
    return found
