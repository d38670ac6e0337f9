"""Find and load eval sets, their configs and the agent's actual invocations, case by case: the reader of input files.

A file that cannot be read yields a LoadedEvalSet with errors and no cases; a case that cannot be parsed yields an
error on that case only.  Nothing here raises for bad input except where a whole file is unusable.  Each config file
is read once per run (:class:`Configs`), and the config's ``evalbot`` section is read here and nowhere else.
"""

from __future__ import annotations

import glob
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import replace
from functools import partial
from pathlib import Path
from typing import Any

from evalbot.errors import InputError, did_you_mean, json_pointer, printable, unknown_key_notice
from evalbot.formats import legacy, vertex
from evalbot.formats.actuals import Actuals, actuals_from_data, lazy_mapping
from evalbot.formats.adk import EvalCase
from evalbot.formats.config import EvalConfig, default_config, parse_config
from evalbot.formats.jsonio import (
    Slices,
    gc_paused,
    has_surrogate,
    parse_json,
    read_json,
    read_text,
    refuse_special,
    validate,
)
from evalbot.formats.lines import CaseLines
from evalbot.formats.loaded import LoadedCase, LoadedEvalSet
from evalbot.formats.window import Items, NotAscii, Window, walk_file, walk_object, walk_text

EVAL_SET_SUFFIXES = (".evalset.json", ".test.json")
DATASET_SUFFIXES = (".jsonl", ".csv")


def repo_root(start: Path) -> Path | None:
    """The nearest directory at or above ``start`` holding ``.git`` (a repository or a worktree), or None."""
    for folder in (start, *start.parents):
        if (folder / ".git").exists():
            return folder
    return None


def stable_id(path: Path) -> str:
    """The id of an eval set or case named after its file (ADK's legacy formats): the path relative to the
    repository root, so that it is the same whatever the working directory; outside a repository, relative to the
    working directory (else absolute).  ADK uses the path as passed: the same string when run from the root."""
    absolute = Path(os.path.abspath(path))
    for base in (repo_root(absolute.parent), Path.cwd()):
        if base is not None and absolute.is_relative_to(base):
            return absolute.relative_to(base).as_posix()
    return absolute.as_posix()


def is_eval_set_name(name: str) -> bool:
    """A file name that directory and glob expansion picks as an eval set (never test_config.json or results)."""
    return name.endswith(EVAL_SET_SUFFIXES)


def _printable(path: str) -> str:
    """A path as text that can be printed: bytes that are not UTF-8 (surrogate-escaped by Python) shown as \\xNN."""
    return path.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace") if has_surrogate(path) else path


def _usable(p: Path, errors: list[InputError]) -> bool:
    if has_surrogate(str(p)):
        errors.append(InputError(_printable(str(p)), "", "file name is not valid UTF-8; rename the file"))
        return False
    return True


CaseSelection = dict[Path, tuple[str, ...]]
"""The cases chosen with ``FILE:case1,case2`` for each eval set file (files named without a selection: absent)."""


def split_case_selection(raw: str) -> tuple[str, tuple[str, ...] | None]:
    """``FILE:case1,case2`` as ``adk eval`` reads it: (FILE, the case ids); ``(raw, None)`` when ``raw`` is a path.

    A path that exists is never split (a file name may hold a colon); otherwise the first colon after which the part
    before it exists separates the file from the comma-separated ids (blank ids dropped, as ADK drops them, and
    surrounding spaces trimmed). ``FILE:`` selects no particular case, so all of them, as in ADK.
    """
    if ":" not in raw or os.path.lexists(raw):
        return raw, None
    at = raw.find(":")
    while at != -1:
        if at and os.path.lexists(raw[:at]):
            ids = tuple(dict.fromkeys(part.strip() for part in raw[at + 1:].split(",") if part.strip()))
            return raw[:at], ids
        at = raw.find(":", at + 1)
    return raw, None


def discover(paths: Sequence[str]) -> tuple[list[Path], list[InputError]]:
    """The eval set files of ``paths`` (see discover_selected), without the case selections."""
    files, _, errors = discover_selected(paths)
    return files, errors


def discover_selected(paths: Sequence[str]) -> tuple[list[Path], CaseSelection, list[InputError]]:
    """Expand files, directories (recursively) and glob patterns into eval set files, and ``FILE:case1,case2``
    into the file and its selected cases.

    Directories and globs pick only eval set files (``*.evalset.json``, ``*.test.json``; a glob ending in
    ``.jsonl``/``.csv`` also picks Vertex datasets), so a quoted ``evals/**`` never loads ``test_config.json`` or a
    results file.  A path naming something other than a regular file (FIFO, device, socket) is refused without
    opening it.  As in ``adk eval``, the ids of a file named several times add up, and a file named with ids in one
    place and without in another runs only those ids.  A selection on a directory is an error.
    """
    found: list[Path] = []
    errors: list[InputError] = []
    selected: CaseSelection = {}
    for given in paths:
        raw, ids = split_case_selection(given)
        p = Path(raw)
        if not _usable(p, errors):
            continue
        if ids is not None and not p.is_file():
            errors.append(InputError(_printable(given), "", "a case selection (FILE:case1,case2) applies to one eval "
                                                            "set file, not a directory; name the file"))
            continue
        if ids:
            selected[p] = tuple(dict.fromkeys([*selected.get(p, ()), *ids]))
        if p.is_dir():
            matches = sorted(q for q in p.rglob("*") if is_eval_set_name(q.name) and q.is_file())
            if not matches:
                yaml = sum(1 for q in p.rglob("*") if q.name.lower().endswith(YAML_SUFFIXES)
                           and not q.name.startswith("test_config."))
                hint = f" (it holds {yaml} YAML file(s): eval sets are JSON, ADK's format; YAML is not read)" \
                    if yaml else ""
                errors.append(InputError(p, "", f"directory holds no *.evalset.json or *.test.json file{hint}"))
            found.extend(q for q in matches if _usable(q, errors))
        elif p.is_file():
            found.append(p)
        elif os.path.lexists(p) and not glob.has_magic(raw):
            try:
                refuse_special(p, "an eval set file")
            except InputError as exc:
                errors.append(exc)
            else:
                errors.append(InputError(p, "", "a broken symbolic link; point it at an eval set file"))
        elif glob.has_magic(raw):
            wanted = EVAL_SET_SUFFIXES + (DATASET_SUFFIXES if raw.endswith(DATASET_SUFFIXES) else ())
            hits = [Path(m) for m in glob.glob(raw, recursive=True)]
            matches = sorted(q for q in hits if q.name.endswith(wanted) and q.is_file())
            if not matches:
                others = sum(1 for q in hits if q.is_file())
                why = (
                    f"glob pattern matched {others} file(s) but no eval set (*.evalset.json, *.test.json); "
                    "name eval set files explicitly" if others else "glob pattern matched no file"
                )
                errors.append(InputError(raw, "", why))
            found.extend(q for q in matches if _usable(q, errors))
        else:
            errors.append(InputError(p, "", "no such file or directory"))
    unique = list(dict.fromkeys(found))
    return unique, selected, errors


MAX_SHOWN_IDS = 10
"""Unknown case ids named in one error (the rest are counted)."""


def select_cases(eval_set: LoadedEvalSet, ids: Sequence[str]) -> LoadedEvalSet:
    """Keep the cases of ``eval_set`` named in ``ids`` (file order). Ids the file does not hold are an error of the
    eval set naming the file, the ids and the nearest known id; the known ones are still scored."""
    if not ids or (eval_set.errors and not eval_set.cases):
        return eval_set
    known = [case.eval_id for case in eval_set.cases]
    present = set(known)
    unknown = [i for i in ids if i not in present]
    wanted = set(ids)
    kept = tuple(case for case in eval_set.cases if case.eval_id in wanted)
    errors = eval_set.errors
    if unknown:
        named = "; ".join(f"{i!r}{did_you_mean(i, known)}" for i in unknown[:MAX_SHOWN_IDS])
        more = f" and {len(unknown) - MAX_SHOWN_IDS} more" if len(unknown) > MAX_SHOWN_IDS else ""
        message = printable(f"no case with eval_id {named}{more} in this eval set (selected with FILE:case1,case2); "
                            f"it holds {len(known)} case(s)")
        errors = (*errors, InputError(eval_set.path, "", message))
    notice = f"case selection: {len(kept)} of {len(known)} case(s) of this eval set are run (FILE:case1,case2)"
    return replace(eval_set, cases=kept, errors=errors, notices=(*eval_set.notices, notice))


def load_config(path: Path) -> EvalConfig:
    """Parse a ``test_config.json``; raises InputError when the file is unusable (missing, not a regular file...)."""
    if os.path.lexists(path) and not path.exists():
        raise InputError(path, "", "a broken symbolic link; point it at the config file or remove it")
    refuse_special(path, "a test_config.json file")
    return parse_config(read_json(path), str(path))


def normal_key(key: str) -> str:
    """``failOn`` / ``fail-on`` / ``fail_on`` → ``fail_on`` (how keys of a config's ``evalbot`` section are read)."""
    out = "".join("_" + ch.lower() if ch.isupper() else ch for ch in key)
    return out.replace("-", "_")


def _normal(section: Mapping[str, Any]) -> dict[str, Any]:
    return {normal_key(str(k)): v for k, v in section.items()}


def one_section(
    sections: Sequence[tuple[dict[str, Any], str]], label: Callable[[str], str] = str
) -> tuple[dict[str, Any], str | None]:
    """The one ``evalbot`` section of the eval sets' configs (configs without one set no policy). The gate is one
    verdict with one policy, so two configs with different sections are an input error naming both files, never the
    first one silently."""
    if not sections:
        return {}, None
    first, where = sections[0]
    for other, path in sections[1:]:
        if _normal(other) != _normal(first):
            raise InputError(label(path), "/evalbot", f"this evalbot section differs from the one in {label(where)}; "
                             "the gate has one policy for the whole run: make the sections the same, keep one of "
                             "them, or name the config with the config input (--config)")
    return first, where


class Configs:
    """The configs of a run, each file read once: the explicit ``--config``, else ``test_config.json`` beside each
    eval set (as ADK does), else ADK's defaults.  An unusable explicit config raises InputError at once."""

    def __init__(self, explicit: Path | None = None) -> None:
        self.explicit_path = explicit
        self.explicit = load_config(explicit) if explicit is not None else None
        self._beside: dict[Path, EvalConfig | InputError | None] = {}

    def beside(self, eval_set_path: Path) -> EvalConfig | None:
        """``test_config.json`` in the eval set's folder, None when there is none; raises InputError if unusable."""
        path = eval_set_path.parent / "test_config.json"
        if path not in self._beside:
            try:
                # lexists, not is_file: a directory, FIFO or broken link by that name is an error, never ADK's defaults
                self._beside[path] = load_config(path) if os.path.lexists(path) else None
            except InputError as exc:
                self._beside[path] = exc
        found = self._beside[path]
        if isinstance(found, InputError):
            raise found
        return found

    def for_eval_set(self, eval_set_path: Path) -> EvalConfig:
        """The config that applies to one eval set (raises InputError when its own config file is unusable)."""
        if self.explicit is not None:
            return self.explicit
        return self.beside(eval_set_path) or default_config()

    def settings(self, eval_set_files: Sequence[Path]) -> tuple[dict[str, Any], Path | None]:
        """The config's ``evalbot`` section and its file: the explicit config's, else the one of the configs beside
        the eval sets (configs without a section set nothing; two different sections raise InputError naming both,
        see :func:`one_section`; an unreadable config is reported by the evaluation itself, not here)."""
        if self.explicit is not None:
            return dict(self.explicit.extras), self.explicit_path
        sections: dict[str, dict[str, Any]] = {}
        for file in eval_set_files:
            try:
                config = self.beside(file)
            except InputError:
                continue
            if config is not None and config.extras:
                sections.setdefault(str(file.parent / "test_config.json"), dict(config.extras))
        settings, where = one_section([(section, path) for path, section in sections.items()])
        return settings, Path(where) if where is not None else None


def config_for(eval_set_path: Path, override: EvalConfig | Configs | None) -> EvalConfig:
    """The explicit config, else ``test_config.json`` beside the eval set (as ADK does), else ADK's defaults."""
    if isinstance(override, Configs):
        return override.for_eval_set(eval_set_path)
    if override is not None:
        return override
    return Configs().for_eval_set(eval_set_path)


YAML_SUFFIXES = (".yaml", ".yml")
YAML_EVAL_SET = "eval sets are JSON (ADK's format); YAML is not read: convert it to JSON ({name})"


def _json_name(path: Path) -> str:
    """What a YAML file's JSON counterpart is called (``x.evalset.yaml`` -> ``x.evalset.json``)."""
    stem = path.name[: -len(path.suffix)]
    return stem + (".json" if stem.endswith((".evalset", ".test")) else ".evalset.json")


def yaml_configs_beside(eval_set_path: Path, config: EvalConfig | Configs | None) -> tuple[str, ...]:
    """A notice for each ``test_config.yaml`` / ``.yml`` beside an eval set whose config is looked for beside it
    (no ``--config``): only ``test_config.json`` is read, as in ADK, so its criteria do not apply."""
    if isinstance(config, EvalConfig) or (isinstance(config, Configs) and config.explicit is not None):
        return ()
    folder = eval_set_path.parent
    found = [folder / f"test_config{suffix}" for suffix in YAML_SUFFIXES]
    found = [p for p in found if os.path.lexists(p)]
    if not found:
        return ()
    applies = ("test_config.json beside it applies" if os.path.lexists(folder / "test_config.json")
               else "ADK's default criteria apply")
    return tuple(f"{_printable(str(p))} is not read: only test_config.json is read (ADK's format, JSON); {applies}. "
                 "Convert it to test_config.json" for p in found)


def load_eval_set(path: Path, config: EvalConfig | Configs | None = None, *, lines: bool = False) -> LoadedEvalSet:
    """Load one eval set file in any supported shape; problems are recorded, not raised.  ``lines``: also note the
    line of each case's id (:class:`CaseLines`, for annotations; about 0.4 s per 100 MB). A ``test_config.yaml``
    beside it is named in a notice (only ``test_config.json`` is read)."""
    loaded = _load_eval_set(path, config, lines=lines)
    yaml = yaml_configs_beside(path, config)
    return replace(loaded, notices=(*yaml, *loaded.notices)) if yaml else loaded


def _load_eval_set(path: Path, config: EvalConfig | Configs | None, *, lines: bool) -> LoadedEvalSet:
    shown = str(path)
    try:
        cfg = config_for(path, config)
    except InputError as exc:
        return LoadedEvalSet(shown, shown, errors=(exc,))
    if path.name.lower().endswith(YAML_SUFFIXES):
        error = InputError(path, "", YAML_EVAL_SET.format(name=_json_name(path)))
        return LoadedEvalSet(shown, shown, config=cfg, errors=(error,))
    # Where a case's id sits in the file, for duplicate-id errors ("#" stands for the case's index).
    id_at: list[str | int] = ["#"]
    notices: tuple[str, ...] = ()
    columns: tuple[str, ...] | None = None
    # The file is read here once; its cases are parsed from this text (or slices of it) and the lines of their ids
    # are taken from it too (annotations), so nothing reads it again.
    try:
        if path.name.endswith(DATASET_SUFFIXES):
            text = read_text(path)
            dataset = vertex.read_dataset(path, text)
            eval_set_id, cases, columns = dataset.eval_set_id, dataset.cases, dataset.columns
        else:
            with gc_paused():
                streamed = None if lines else _stream_eval_set_file(path)  # a large file, not held whole
                if streamed is not None:
                    eval_set_id, cases, notices = streamed
                    return _loaded(shown, eval_set_id, cases, cfg, path, ["eval_cases", "#", "eval_id"], notices, None)
                text = read_text(path)
                streamed = _stream_eval_set(text, path)
                if streamed is not None:
                    eval_set_id, cases, notices = streamed
                    id_at = ["eval_cases", "#", "eval_id"]
                    return _loaded(shown, eval_set_id, cases, cfg, path, id_at, notices, CaseLines(text) if lines else None)
                data = parse_json(text, path)
                if is_vertex_rows(data):
                    dataset = vertex.read_dataset(path, text, data)
                    eval_set_id, cases, columns = dataset.eval_set_id, dataset.cases, dataset.columns
                else:
                    eval_set_id, cases = _cases_from_json(data, path)
                    id_at = ["eval_cases", "#", "eval_id"] if isinstance(data, dict) else ["#", "name"]
                    notices = _top_notices(data, path) if isinstance(data, dict) else ()
    except InputError as exc:
        return LoadedEvalSet(shown, shown, config=cfg, errors=(exc,))
    loaded = _loaded(shown, eval_set_id, cases, cfg, path, id_at, notices, CaseLines(text) if lines else None)
    if columns is None:
        return loaded
    own_runs = frozenset(case.eval_id for case in loaded.cases if case.actual is not None)
    return replace(loaded, columns=columns, own_runs=own_runs)


def _loaded(
    shown: str,
    eval_set_id: str,
    cases: list[LoadedCase],
    cfg: EvalConfig,
    path: Path,
    id_at: Sequence[str | int],
    notices: tuple[str, ...],
    case_lines: CaseLines | None,
) -> LoadedEvalSet:
    kept, dup_errors = _drop_duplicates(cases, path, id_at)
    if not cases:  # nothing to measure is never a pass
        dup_errors.append(InputError(path, "/eval_cases", "the eval set holds no case, so nothing would be measured; "
                                     "add at least one eval case, or leave the file out of the run"))
    return LoadedEvalSet(shown, eval_set_id, tuple(kept), cfg, tuple(dup_errors), notices, lines=case_lines)


def _case_id(raw: Any, i: int) -> str:
    eval_id = raw.get("eval_id", raw.get("evalId")) if isinstance(raw, dict) else None
    return eval_id if isinstance(eval_id, str) and eval_id and not has_surrogate(eval_id) else f"#{i}"


def _parse_case(slices: Slices, start: int, end: int, i: int) -> EvalCase:
    try:
        raw = slices.decode(start, end, ("eval_cases", i))
    except (OSError, ValueError):
        raise InputError(
            slices.path, json_pointer(["eval_cases", i]), "the file changed or vanished while evaluating; run again"
        ) from None
    return validate(EvalCase, raw, slices.path, ("eval_cases", i))


EVAL_SET_KEYS = ("eval_set_id", "name", "description", "eval_cases", "creation_timestamp")
"""The fields of ADK's EvalSet (it ignores any other key)."""


def _top_notices(keys: Iterable[str], path: Path) -> tuple[str, ...]:
    return tuple(
        unknown_key_notice(f"{path}:{json_pointer([key])}", key, EVAL_SET_KEYS, "ignored, as ADK ignores it")
        for key in dict.fromkeys(keys)
        if key not in EVAL_SET_KEYS
    )


def _stream_eval_set(text: str, path: Path) -> tuple[str, list[LoadedCase], tuple[str, ...]] | None:
    """An ADK eval set object read case by case: each case is parsed when it is used (see LoadedCase).

    None for any other shape, and for malformed JSON (the whole-document parse reports it with json's message).
    """
    slices = Slices(text, path)
    return walk_text(text, lambda window: _walk_eval_set(window, slices, path))


def _stream_eval_set_file(path: Path) -> tuple[str, list[LoadedCase], tuple[str, ...]] | None:
    """:func:`_stream_eval_set` of a large pure-ASCII file walked a window at a time, never read whole (see
    :mod:`evalbot.formats.window`); None for a small or non-ASCII file and for any other shape (read it whole)."""
    return walk_file(path, lambda window, slices: _walk_eval_set(window, slices, path))


def _walk_eval_set(window: Window, slices: Slices, path: Path) -> tuple[str, list[LoadedCase], tuple[str, ...]] | None:
    top: dict[str, Any] = {}
    cases: list[LoadedCase] = []
    keys: list[str] = []

    def visit_case(window: Window, i: int, start: int) -> int:
        # Only the case's id is decoded here; the rest is skipped (syntax checked, nothing built), so the case's
        # JSON is decoded once, when the case is parsed from its slice.
        ids: dict[str, Any] = {}

        def member(key: str, at: int) -> int:
            if key in ("eval_id", "evalId"):
                ids[key], end = window.decode(at)
                return end
            return window.skip(at)

        if window.text[start : start + 1] != "{":
            end = window.skip(start)
        elif (picked := window.pick(start, ("eval_id", "evalId"))) is not None:  # a file's window: no member scan
            end, ids = picked
        else:
            end = window.members(start, member)
        del cases[i:]  # stepped again when the window grew under it
        base = window.base
        cases.append(LoadedCase(_case_id(ids, i), source=partial(_parse_case, slices, base + start, base + end, i)))
        return end

    def visit(window: Window, key: str, start: int) -> int | Items:
        keys.append(key)
        text = window.text
        if key == "eval_cases" and text[start : start + 1] == "[":
            cases.clear()  # a repeated key: the last one counts, as in json.loads
            top[key] = cases
            return Items(visit_case)
        if key == "eval_cases":
            top.pop(key, None)  # not a list: the whole-document path reports it
        if key != "eval_set_id":  # no other key is needed here
            return window.skip(start)
        top[key], end = window.decode(start)
        return end

    try:
        walk_object(window, visit)
    except (ValueError, RecursionError, NotAscii):  # malformed or hostile JSON: parse_json names the problem
        return None
    eval_set_id = top.get("eval_set_id")
    if not isinstance(top.get("eval_cases"), list) or not isinstance(eval_set_id, str) or not eval_set_id:
        return None
    if has_surrogate(eval_set_id):
        return None  # parse_json names it
    return eval_set_id, cases, _top_notices(keys, path)


def is_vertex_rows(data: Any) -> bool:
    """Decoded JSON that is a Vertex-style dataset rather than an ADK eval set (legacy turns have ``query``)."""
    if isinstance(data, dict):
        return "rows" in data and "eval_cases" not in data
    return vertex.looks_like_rows(data) and not all(isinstance(r, dict) and "query" in r for r in data)


def _cases_from_json(data: Any, path: Path) -> tuple[str, list[LoadedCase]]:
    if isinstance(data, dict):
        return _cases_from_eval_set(data, path)
    if isinstance(data, list):
        if not data:
            raise InputError(path, "", "empty list: expected an eval set object with 'eval_set_id' and 'eval_cases'")
        if all(isinstance(row, dict) and "query" in row for row in data):
            case = legacy.case_from_turns(data, path, stable_id(path))
            return stable_id(path), [case]
        return stable_id(path), legacy.cases_from_named(data, path)
    raise InputError(
        path, "", f"expected an eval set object with 'eval_set_id' and 'eval_cases', got {type(data).__name__}"
    )


def _cases_from_eval_set(data: dict[str, Any], path: Path) -> tuple[str, list[LoadedCase]]:
    # Top level is snake_case only in ADK; name the camelCase mistake instead of failing obscurely.
    for camel, snake in (("evalSetId", "eval_set_id"), ("evalCases", "eval_cases")):
        if snake not in data and camel in data:
            raise InputError(path, f"/{camel}", f"the eval set's top level is snake_case: rename it to '{snake}'")
    eval_set_id = data.get("eval_set_id")
    if not isinstance(eval_set_id, str) or not eval_set_id:
        raise InputError(path, "/eval_set_id", "required: a non-empty string naming the eval set")
    raw_cases = data.get("eval_cases")
    if not isinstance(raw_cases, list):
        raise InputError(path, "/eval_cases", "required: a list of eval cases")
    cases: list[LoadedCase] = []
    for i, raw in enumerate(raw_cases):
        eval_id = _case_id(raw, i)
        try:
            case = validate(EvalCase, raw, path, ("eval_cases", i))
        except InputError as exc:
            cases.append(LoadedCase(eval_id, error=exc))
            continue
        cases.append(LoadedCase(case.eval_id, case))
    return eval_set_id, cases


def _drop_duplicates(
    cases: Iterable[LoadedCase], path: Path, id_at: Sequence[str | int]
) -> tuple[list[LoadedCase], list[InputError]]:
    seen: dict[str, int] = {}
    kept: list[LoadedCase] = []
    errors: list[InputError] = []
    for i, case in enumerate(cases):
        if case.eval_id in seen:
            errors.append(
                InputError(
                    path,
                    json_pointer([i if step == "#" else step for step in id_at]),
                    f"duplicate eval_id {case.eval_id!r} (first used by case #{seen[case.eval_id]}); "
                    "this case was skipped: give every case a unique eval_id",
                )
            )
            continue
        seen[case.eval_id] = i
        kept.append(case)
    return kept, errors


def load_actuals(path: Path) -> Actuals:
    """Load one actuals file (JSON; Vertex-style ``.jsonl``/``.csv`` datasets through evalbot.formats.vertex)."""
    if path.name.endswith(DATASET_SUFFIXES):
        return vertex.load_actuals(path)
    with gc_paused():
        return actuals_from_text(read_text(path), path)


def actuals_from_text(text: str, path: Path, data: Any = None) -> Actuals:
    """Actuals from a JSON file's text (``data``: the text already decoded, when the caller has it)."""
    if data is None:
        lazy = lazy_mapping(text, path)
        if lazy is not None:
            return lazy
        data = parse_json(text, path)
    if (isinstance(data, dict) and "rows" in data) or (
        vertex.looks_like_rows(data) and not all("eval_case_results" in d for d in data)
    ):
        return vertex.load_actuals(path, text, data)
    return actuals_from_data(data, path)
