"""The baseline file: per eval set, case and criterion the score, status and judge votes of a run on main.

It is committed to the repository (default ``.evalbot/baseline.json``) and always read from the PR's *base*
commit, so a PR cannot change its own yardstick. The JSON is written with sorted keys, two-space indentation and a
trailing newline so that its git diff is reviewable. Reading it from ``REF:PATH`` goes through ``git show``; the
process call is injected (:data:`GitRunner`) so this module stays free of side effects.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from evalbot import __version__
from evalbot.errors import InputError
from evalbot.jsonio import describe, parse_json, pointer_for
from evalbot.results import CaseResult, InvocationScore, Report, Status

BASELINE_SCHEMA_VERSION = 1
DEFAULT_BASELINE_PATH = ".evalbot/baseline.json"
HOW_TO_CREATE = (
    "create one on main with `evalbot baseline PATH... --actuals RUN.json --output {path}` and commit it"
)


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Votes(_Model):
    """How the judge's samples voted on one invocation: ``yes`` pass votes and ``no`` fail votes.

    Rubric criteria take one vote per rubric; their votes are pooled here and ``pooled_split`` records whether any
    single rubric's vote was split.
    """

    yes: int = Field(ge=0)
    no: int = Field(ge=0)
    pooled_split: bool | None = None

    @property
    def split(self) -> bool:
        """True when the samples disagreed on a decision (e.g. 3 of 5)."""
        if self.pooled_split is not None:
            return self.pooled_split
        return self.yes > 0 and self.no > 0

    @property
    def passed(self) -> bool:
        """The majority verdict (a tie fails, as ADK decides)."""
        return self.yes > self.no


class BaselineMetric(_Model):
    """One criterion's verdict on one case."""

    score: float | None = None
    status: Status
    votes: list[Votes | None] | None = None
    """Per invocation, for judged criteria whose results carry their votes."""


class BaselineCase(_Model):
    """One case: its definition fingerprint, verdict and per-criterion results."""

    fingerprint: str | None = None
    status: Status
    metrics: dict[str, BaselineMetric] = Field(default_factory=dict)


class BaselineCriterion(_Model):
    """A criterion as configured for an eval set, with its aggregate on main."""

    fingerprint: str
    threshold: float | None = None
    judged: bool = False
    judge_model: str | None = None
    mean: float | None = None
    passed: int = 0
    failed: int = 0


class BaselineEvalSet(_Model):
    """One eval set's criteria and cases."""

    path: str
    criteria: dict[str, BaselineCriterion] = Field(default_factory=dict)
    cases: dict[str, BaselineCase] = Field(default_factory=dict)


class Baseline(_Model):
    """The whole baseline file."""

    schema_version: int = BASELINE_SCHEMA_VERSION
    evalbot_version: str = __version__
    commit: str | None = None
    created_at: str | None = None
    judge_models: list[str] = Field(default_factory=list)
    eval_sets: dict[str, BaselineEvalSet] = Field(default_factory=dict)

    @property
    def compatible(self) -> bool:
        """Whether this evalbot can compare against it (same schema version)."""
        return self.schema_version == BASELINE_SCHEMA_VERSION


def unique_keys(names: Sequence[str]) -> list[str]:
    """Keys for possibly repeated names: the name, then ``name#2``, ``name#3``... for repeats."""
    seen: dict[str, int] = {}
    keys = []
    for name in names:
        seen[name] = seen.get(name, 0) + 1
        keys.append(name if seen[name] == 1 else f"{name}#{seen[name]}")
    return keys


def _vote_value(value: Any) -> bool | None:
    if isinstance(value, bool):
        return value
    if isinstance(value, int | float):
        return value >= 0.5
    if isinstance(value, dict):
        return _vote_value(value.get("score", value.get("verdict")))
    if isinstance(value, str):
        lowered = value.strip().lower()
        if lowered in ("yes", "valid", "true", "pass", "passed", "1"):
            return True
        if lowered in ("no", "invalid", "false", "fail", "failed", "0"):
            return False
    return None


def _pooled(rubrics: list[Any]) -> Votes | None:
    tallies = [votes_of(r) for r in rubrics if isinstance(r, Mapping)]
    present = [t for t in tallies if t is not None]
    if not present:
        return None
    return Votes(
        yes=sum(t.yes for t in present), no=sum(t.no for t in present), pooled_split=any(t.split for t in present)
    )


def votes_of(details: Mapping[str, Any] | None) -> Votes | None:
    """The vote split recorded in an invocation's details, if any.

    Accepts ``{"votes": {"yes": n, "no": m}}``, ``{"votes": [1.0, 0.0, ...]}`` (scores or booleans; unscored
    samples are not votes), ``{"samples": [{"score": ...}, ...]}`` and rubric results
    ``{"rubrics": [{"votes": {...}}, ...]}`` (pooled).
    """
    if not details:
        return None
    if "votes" not in details and isinstance(details.get("rubrics"), list):
        return _pooled(details["rubrics"])
    raw = details.get("votes", details.get("samples"))
    if isinstance(raw, Mapping):
        yes, no = raw.get("yes", raw.get("pass")), raw.get("no", raw.get("fail"))
        if all(isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in (yes, no)):
            return Votes(yes=yes, no=no) if yes + no else None
        return None
    if isinstance(raw, list):
        cast = [_vote_value(v) for v in raw]
        yes, no = cast.count(True), cast.count(False)
        return Votes(yes=yes, no=no) if yes + no else None
    return None


def invocation_votes(per_invocation: Sequence[InvocationScore]) -> list[Votes | None] | None:
    """Votes per invocation, or None when no invocation recorded any."""
    votes = [votes_of(inv.details) for inv in per_invocation]
    return votes if any(v is not None for v in votes) else None


def judge_model_of(options: Mapping[str, Any]) -> str | None:
    """The judge model named in a criterion's options (``judge_model_options.judge_model``), if any."""
    nested = options.get("judge_model_options")
    model = nested.get("judge_model") if isinstance(nested, Mapping) else None
    return model if isinstance(model, str) else None


def _case(case: CaseResult, judged: set[str]) -> BaselineCase:
    return BaselineCase(
        fingerprint=case.fingerprint,
        status=case.status,
        metrics={
            name: BaselineMetric(
                score=m.score,
                status=m.status,
                votes=invocation_votes(m.per_invocation) if name in judged else None,
            )
            for name, m in case.metrics.items()
            if not (m.status == "informational" and m.score is None)
        },
    )


def build_baseline(report: Report, *, commit: str | None, created_at: str | None) -> Baseline:
    """The baseline of a run (the clock and the commit are passed in by the caller)."""
    sets: dict[str, BaselineEvalSet] = {}
    models: set[str] = set()
    for key, es in zip(unique_keys([e.eval_set_id for e in report.eval_sets]), report.eval_sets, strict=True):
        judged = {c.name for c in es.criteria if c.judged}
        criteria = {}
        for info in es.criteria:
            summary = es.metrics.get(info.name)
            model = judge_model_of(info.options) if info.judged else None
            if model:
                models.add(model)
            criteria[info.name] = BaselineCriterion(
                fingerprint=info.fingerprint,
                threshold=info.threshold,
                judged=info.judged,
                judge_model=model,
                mean=summary.mean if summary else None,
                passed=summary.passed if summary else 0,
                failed=summary.failed if summary else 0,
            )
        case_keys = unique_keys([c.eval_id for c in es.cases])
        sets[key] = BaselineEvalSet(
            path=es.path,
            criteria=criteria,
            cases={k: _case(c, judged) for k, c in zip(case_keys, es.cases, strict=True)},
        )
    return Baseline(
        evalbot_version=report.evalbot_version,
        commit=commit,
        created_at=created_at,
        judge_models=sorted(models),
        eval_sets=sets,
    )


def dump_baseline(baseline: Baseline) -> str:
    """Canonical JSON text: sorted keys, two-space indent, UTF-8 characters kept, trailing newline."""
    data = baseline.model_dump(mode="json", exclude_none=True)
    return json.dumps(data, sort_keys=True, indent=2, ensure_ascii=False) + "\n"


def parse_baseline(text: str, source: str) -> Baseline:
    """Parse baseline JSON; invalid content raises InputError naming ``source`` and the JSON pointer.

    A baseline written by another schema version is returned with only its header (version, commit) so that the
    comparison can show every case as "changed definition" and say how to refresh it.
    """
    where = Path(source)
    data = parse_json(text, where)
    if not isinstance(data, dict):
        raise InputError(source, "", f"expected a baseline JSON object, got {type(data).__name__}; {HOW_TO_CREATE}")
    version = data.get("schema_version")
    if not isinstance(version, int) or isinstance(version, bool):
        raise InputError(source, "/schema_version", "required integer schema_version is missing; is this a baseline?")
    if version != BASELINE_SCHEMA_VERSION:
        header = {k: data.get(k) for k in ("evalbot_version", "commit", "created_at")}
        return Baseline(
            schema_version=version,
            evalbot_version=str(header["evalbot_version"] or "unknown"),
            commit=header["commit"] if isinstance(header["commit"], str) else None,
            created_at=header["created_at"] if isinstance(header["created_at"], str) else None,
        )
    try:
        return Baseline.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        raise InputError(source, pointer_for(data, tuple(first["loc"])), describe(dict(first))) from None


@dataclass(frozen=True)
class GitResult:
    """What a git invocation returned."""

    returncode: int
    stdout: str
    stderr: str


GitRunner = Callable[[Sequence[str]], GitResult]
"""Runs ``git`` with the given arguments (the CLI passes a subprocess runner; tests pass fakes)."""


@dataclass(frozen=True)
class BaselineSpec:
    """Where to read the baseline: a file, or ``path`` at git ``ref``."""

    path: str
    ref: str | None = None

    @property
    def label(self) -> str:
        """How the source is named in messages."""
        return f"{self.ref}:{self.path}" if self.ref else self.path


def parse_spec(spec: str, *, file_exists: Callable[[str], bool]) -> BaselineSpec:
    """``FILE`` or ``REF:PATH`` (an existing file wins; ``REF:PATH`` needs a non-empty ref and path)."""
    if file_exists(spec) or ":" not in spec:
        return BaselineSpec(spec)
    ref, _, path = spec.partition(":")
    if not ref or not path:
        raise InputError(spec, "", "expected FILE or REF:PATH (e.g. origin/main:.evalbot/baseline.json)")
    return BaselineSpec(path, ref)


_MISSING_MARKERS = ("does not exist in", "exists on disk, but not in")


def git_show(ref: str, path: str, *, git: GitRunner) -> str | None:
    """The text of ``path`` at ``ref``, None when the path does not exist there; other git failures raise."""
    result = git(["show", f"{ref}:{path}"])
    if result.returncode == 0:
        return result.stdout
    message = result.stderr.strip().splitlines()[-1] if result.stderr.strip() else f"exit code {result.returncode}"
    if any(marker in result.stderr for marker in _MISSING_MARKERS):
        return None
    raise InputError(
        f"{ref}:{path}", "", f"git show failed: {message}; fetch the ref (e.g. `git fetch origin {ref}`) or pass a file"
    )


def read_baseline(
    spec: BaselineSpec, *, git: GitRunner, read_file: Callable[[str], str | None]
) -> Baseline | None:
    """Read and parse the baseline; None when it does not exist (the comparison then shows absolute scores)."""
    text = git_show(spec.ref, spec.path, git=git) if spec.ref else read_file(spec.path)
    if text is None:
        return None
    return parse_baseline(text, spec.label)
