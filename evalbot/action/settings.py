"""Action settings: the ``INPUT_*`` and ``GITHUB_*`` variables and the event payload, parsed and validated once."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal, cast, get_args

from evalbot.compare.baseline import DEFAULT_BASELINE_PATH
from evalbot.compare.gate import FailOn, JudgeFailures
from evalbot.errors import InputError
from evalbot.judges.limiter import DEFAULT_CONCURRENCY
from evalbot.paths import problem_with_comment_id, problem_with_directory, problem_with_input, problem_with_output

Mode = Literal["pull_request", "push", "workflow_run", "baseline"]
MODES: tuple[str, ...] = ("auto", *get_args(Mode))
FAIL_ON: tuple[str, ...] = get_args(FailOn)
JUDGE_FAILURES: tuple[str, ...] = get_args(JudgeFailures)
DEFAULT_JUDGE_DEADLINE = 240.0
"""Seconds of judge calls a run may spend at most (see judges.deadline)."""
PULL_REQUEST_EVENTS = frozenset({"pull_request", "pull_request_target"})
_TRUE, _FALSE = {"true", "yes", "1", "on"}, {"false", "no", "0", "off", ""}


@dataclass(frozen=True)
class ActionInputs:
    """The action's inputs (``with:``), as action.yml declares them."""

    eval_sets: tuple[str, ...] = ("evals",)
    actuals: tuple[str, ...] = ()
    config: str | None = None
    baseline_path: str = DEFAULT_BASELINE_PATH
    fail_on: FailOn | None = None
    """None: the config's ``evalbot.fail_on``, else regression."""
    tolerance: float | None = None
    """None: the config's ``evalbot.tolerance``, else 0."""
    github_token: str = field(default="", repr=False)
    judge_api_key: str = field(default="", repr=False)
    comment_template: str | None = None
    comment_id: str = "default"
    mode: str = "auto"
    judge_concurrency: int = DEFAULT_CONCURRENCY
    judge_cache: str | None = None
    judge_failures: JudgeFailures | None = None
    """None: the config's ``evalbot.judge_failures``, else block."""
    judge_deadline: float = DEFAULT_JUDGE_DEADLINE
    update_baseline: bool = False
    artifact_name: str = "evalbot-report"
    report_path: str = ".evalbot-out/report.json"
    junit_path: str | None = ".evalbot-out/junit.xml"
    html_path: str | None = ".evalbot-out/report.html"


@dataclass(frozen=True)
class PullRequest:
    """What the run needs to know about the PR, from the event payload."""

    number: int
    base_sha: str
    head_sha: str
    base_ref: str
    head_label: str
    from_fork: bool


@dataclass(frozen=True)
class WorkflowRun:
    """The first-stage run that triggered a ``workflow_run`` event."""

    id: int
    head_sha: str
    head_label: str | None
    event: str
    conclusion: str | None
    head_repo: str | None = None
    """``owner/name`` of the repository the run's head branch is in (a fork's, for a fork PR)."""


@dataclass(frozen=True)
class GitHubContext:
    """The runner's ``GITHUB_*`` variables and the parsed event payload."""

    event_name: str
    repository: str
    sha: str
    ref: str
    workspace: Path
    api_url: str = "https://api.github.com"
    server_url: str = "https://github.com"
    run_id: str = ""
    output_path: Path | None = None
    summary_path: Path | None = None
    default_branch: str | None = None
    pull_request: PullRequest | None = None
    workflow_run: WorkflowRun | None = None


def _input(env: Mapping[str, str], name: str) -> str | None:
    """``INPUT_<NAME>`` as the runner sets it (hyphens kept), or with underscores for local runs."""
    for key in (f"INPUT_{name.upper()}", f"INPUT_{name.upper().replace('-', '_')}"):
        if key in env:
            return env[key].strip()
    return None


def _list(raw: str) -> tuple[str, ...]:
    """One item per line or comma; blanks dropped."""
    return tuple(part.strip() for part in re.split(r"[\n,]", raw) if part.strip())


def _bad(name: str, message: str) -> InputError:
    return InputError(f"input {name}", "", message)


def inputs_from_env(env: Mapping[str, str]) -> ActionInputs:
    """Parse and check every input; an invalid value raises InputError naming the input and the fix."""
    d = ActionInputs()
    values: dict[str, Any] = {}
    raw = {name: _input(env, name) for name in _INPUT_NAMES}

    def text(name: str) -> str | None:
        value = raw[name]
        return value if value else None

    if raw["eval-sets"]:
        values["eval_sets"] = _list(raw["eval-sets"])
        if not values["eval_sets"]:
            raise _bad("eval-sets", f"{raw['eval-sets']!r} names no path; give eval set files, directories or globs")
    if raw["actuals"] is not None:
        values["actuals"] = _list(raw["actuals"])
    for name in ("config", "comment-template", "judge-cache"):
        values[name.replace("-", "_")] = text(name)
    for name in ("baseline-path", "artifact-name", "report-path"):
        if text(name):
            values[name.replace("-", "_")] = text(name)
    for name in ("junit-path", "html-path"):
        if raw[name] is not None:
            values[name.replace("-", "_")] = text(name)
    values["github_token"] = raw["github-token"] or ""
    values["judge_api_key"] = raw["judge-api-key"] or ""
    for name in ("github-token", "judge-api-key"):  # never echo a secret: only say what is wrong with it
        if raw[name] and not _SECRET.fullmatch(raw[name] or ""):
            raise _bad(name, "contains whitespace or control characters; expected a single-line token")
    if raw["artifact-name"] and not _ARTIFACT.fullmatch(raw["artifact-name"] or ""):
        raise _bad("artifact-name", f"{raw['artifact-name']!r} is not an artifact name (1 to 200 characters, none of "
                   '" : < > | * ? \\ / or control characters)')
    if raw["comment-id"] and (problem := problem_with_comment_id(raw["comment-id"] or "")):
        raise _bad("comment-id", problem)
    fail_on = (raw["fail-on"] or "").lower() or None
    if fail_on is not None and fail_on not in FAIL_ON:
        raise _bad("fail-on", f"{raw['fail-on']!r} is not one of {', '.join(FAIL_ON)}")
    values["fail_on"] = fail_on
    judge_failures = (raw["judge-failures"] or "").lower() or None
    if judge_failures is not None and judge_failures not in JUDGE_FAILURES:
        raise _bad("judge-failures", f"{raw['judge-failures']!r} is not one of {', '.join(JUDGE_FAILURES)}")
    values["judge_failures"] = judge_failures
    values["judge_deadline"] = _number(
        "judge-deadline", raw["judge-deadline"], DEFAULT_JUDGE_DEADLINE, float, 1.0, 6 * 3600.0
    )
    values["comment_id"] = text("comment-id") or d.comment_id
    mode = (raw["mode"] or d.mode).lower().replace("-", "_")
    if mode not in MODES:
        raise _bad("mode", f"{raw['mode']!r} is not one of {', '.join(MODES)}")
    values["mode"] = mode
    values["tolerance"] = _number("tolerance", raw["tolerance"], None, float, 0.0, 1.0)
    values["judge_concurrency"] = int(
        _number("judge-concurrency", raw["judge-concurrency"], DEFAULT_CONCURRENCY, int, 1, 256) or DEFAULT_CONCURRENCY
    )
    update = (raw["update-baseline"] or "false").lower()
    if update not in _TRUE | _FALSE:
        raise _bad("update-baseline", f"{raw['update-baseline']!r} is not true or false")
    values["update_baseline"] = update in _TRUE
    return replace(d, **values)


_INPUT_NAMES = (
    "eval-sets", "actuals", "config", "baseline-path", "fail-on", "tolerance", "github-token", "judge-api-key",
    "comment-template", "comment-id", "mode", "judge-concurrency", "judge-cache", "update-baseline", "artifact-name",
    "report-path", "junit-path", "judge-failures", "judge-deadline", "html-path",
)  # fmt: skip


_SECRET = re.compile(r"^[^\s\x00-\x1f\x7f]+$")
_ARTIFACT = re.compile(r'^[^":<>|*?\\/\x00-\x1f\x7f]{1,200}$')


def check_paths(inputs: ActionInputs, workspace: Path) -> None:
    """Refuse path inputs that cannot work, before any work starts: outputs that are directories (or lie under a
    file), inputs that are directories or not regular files, a judge cache that is a file. Missing eval sets and
    actuals are left to the evaluation, which reports them in the comment next to the other results."""
    def at(raw: str) -> str:
        path = Path(raw)
        return str(path if path.is_absolute() else workspace / path) + ("/" if raw.endswith(("/", "\\")) else "")

    outputs = {"report-path": inputs.report_path, "junit-path": inputs.junit_path, "html-path": inputs.html_path}
    for name, raw in outputs.items():
        if raw is not None and (problem := problem_with_output(at(raw))):
            raise _bad(name, problem.replace(repr(at(raw)), repr(raw)))
    if Path(inputs.baseline_path).is_absolute() or ".." in Path(inputs.baseline_path).parts:
        raise _bad("baseline-path", f"{inputs.baseline_path!r} must be a path inside the repository, relative to "
                   "its root (e.g. .evalbot/baseline.json)")
    # only a directory is refused here: what the workspace file is matters only where it is read or written
    # (pull requests read it at the base commit; a special file there is refused by that reader)
    if inputs.baseline_path.endswith(("/", "\\")) or Path(at(inputs.baseline_path)).is_dir():
        raise _bad("baseline-path", f"{inputs.baseline_path!r} is a directory; give the baseline file's path "
                   "(e.g. .evalbot/baseline.json)")
    inputs_files = {"config": inputs.config, "comment-template": inputs.comment_template}
    for name, value in inputs_files.items():
        if value is None or Path(value).is_absolute() or ".." in Path(value).parts:
            continue  # a path outside the workspace is refused by the reader of that input, saying so
        if problem := problem_with_input(at(value)):
            raise _bad(name, problem.replace(repr(at(value)), repr(value)))
    for value in inputs.actuals:
        if Path(at(value)).exists() and (problem := problem_with_input(at(value))):
            raise _bad("actuals", problem.replace(repr(at(value)), repr(value)))
    if inputs.judge_cache is not None and (problem := problem_with_directory(at(inputs.judge_cache))):
        raise _bad("judge-cache", problem.replace(repr(at(inputs.judge_cache)), repr(inputs.judge_cache)))


def _number(name: str, raw: str | None, default: float | None, kind: type, low: float, high: float) -> float | None:
    if not raw:
        return default
    try:
        value = kind(raw)
    except ValueError:
        raise _bad(name, f"{raw!r} is not a{'n integer' if kind is int else ' number'}") from None
    if not low <= value <= high:
        raise _bad(name, f"{raw} is outside {low:g}..{high:g}")
    return cast(float, value)


def _label(repo: Any, ref: Any) -> str | None:
    owner = (repo or {}).get("owner", {}).get("login") if isinstance(repo, dict) else None
    return f"{owner}:{ref}" if owner and ref else None


def _full_name(repo: Any) -> str | None:
    name = repo.get("full_name") if isinstance(repo, dict) else None
    return name if isinstance(name, str) and name else None


def context_from_env(env: Mapping[str, str]) -> GitHubContext:
    """Read the runner variables and the event payload file (``GITHUB_EVENT_PATH``)."""
    event_path = env.get("GITHUB_EVENT_PATH")
    payload: dict[str, Any] = {}
    if event_path:
        try:
            loaded = json.loads(Path(event_path).read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise InputError(event_path, "", f"event payload unreadable ({exc}); is GITHUB_EVENT_PATH right?") from exc
        payload = loaded if isinstance(loaded, dict) else {}
    repository = env.get("GITHUB_REPOSITORY") or payload.get("repository", {}).get("full_name", "")
    pr = payload.get("pull_request") if isinstance(payload.get("pull_request"), dict) else None
    pull = None
    if pr:
        head_repo = (pr.get("head") or {}).get("repo")
        pull = PullRequest(
            number=int(pr.get("number") or payload.get("number") or 0),
            base_sha=str(pr["base"]["sha"]),
            head_sha=str(pr["head"]["sha"]),
            base_ref=str(pr["base"].get("ref", "")),
            head_label=str(pr["head"].get("label", "")),
            from_fork=not head_repo or head_repo.get("full_name") != repository,
        )
    run = None
    wr = payload.get("workflow_run")
    if isinstance(wr, dict):
        run = WorkflowRun(
            id=int(wr["id"]),
            head_sha=str(wr["head_sha"]),
            head_label=_label(wr.get("head_repository"), wr.get("head_branch")),
            head_repo=_full_name(wr.get("head_repository")),
            event=str(wr.get("event", "")),
            conclusion=wr.get("conclusion"),
        )
    output, summary = env.get("GITHUB_OUTPUT"), env.get("GITHUB_STEP_SUMMARY")
    return GitHubContext(
        event_name=env.get("GITHUB_EVENT_NAME", ""),
        repository=repository,
        sha=env.get("GITHUB_SHA", ""),
        ref=env.get("GITHUB_REF", ""),
        workspace=Path(env.get("GITHUB_WORKSPACE") or "."),
        api_url=(env.get("GITHUB_API_URL") or "https://api.github.com").rstrip("/"),
        server_url=(env.get("GITHUB_SERVER_URL") or "https://github.com").rstrip("/"),
        run_id=env.get("GITHUB_RUN_ID", ""),
        output_path=Path(output) if output else None,
        summary_path=Path(summary) if summary else None,
        default_branch=(payload.get("repository") or {}).get("default_branch"),
        pull_request=pull,
        workflow_run=run,
    )


def choose_mode(requested: str, ctx: GitHubContext) -> Mode:
    """The mode to run in: the input when set, else derived from the triggering event."""
    if requested != "auto":
        mode = cast(Mode, requested)
    elif ctx.event_name in PULL_REQUEST_EVENTS:
        mode = "pull_request"
    elif ctx.event_name == "workflow_run":
        mode = "workflow_run"
    else:  # push, schedule, workflow_dispatch, merge_group, local runs
        mode = "push"
    if mode == "pull_request" and ctx.pull_request is None:
        raise _bad("mode", f"pull_request mode needs a pull_request event, got {ctx.event_name or 'none'!r}")
    if mode == "workflow_run" and ctx.workflow_run is None:
        raise _bad("mode", f"workflow_run mode needs a workflow_run event, got {ctx.event_name or 'none'!r}")
    return mode


def on_default_branch(ctx: GitHubContext) -> bool:
    """True for a push to the repository's default branch (where the baseline may be refreshed)."""
    return bool(ctx.default_branch) and ctx.ref == f"refs/heads/{ctx.default_branch}"
