"""Action settings: the ``INPUT_*`` and ``GITHUB_*`` variables and the event payload, parsed and validated once.

The inputs are one pydantic model, :class:`ActionInputs`: one field per action.yml input (the input ``eval-sets`` is
the field ``eval_sets``), each with its type, default and validator. :func:`inputs_from_env` is the edge that reads
the runner's ``INPUT_*`` variables into it; an invalid value becomes an InputError naming the input (``input
judge-deadline: ...``) and saying what to give instead, which the Action reports with exit 2.

**Adding an input is a one-field change:** declare it in action.yml and add one field to ActionInputs, typed with
one of the validators below (``Text``, ``OptionalText``, ``Items``, ``Secret``, ``Flag``, ``OptionalFlag``, ``Number(...)``,
``Choice(...)``) and defaulted as action.yml says. tests/action/test_metadata.py checks that the fields and
action.yml's inputs are the same set and that action.yml's defaults parse to the field defaults.
"""

from __future__ import annotations

import glob
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal, cast, get_args
from urllib.parse import urlsplit

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field, ValidationError
from pydantic_core import PydanticUseDefault

from evalbot.compare.baseline import DEFAULT_BASELINE_PATH
from evalbot.compare.gate import MAX_RESAMPLE, FailOn, JudgeFailures
from evalbot.errors import InputError
from evalbot.judges.base import SAMPLING_MODES, Sampling
from evalbot.judges.limiter import DEFAULT_CONCURRENCY
from evalbot.load import split_case_selection
from evalbot.paths import (
    problem_leaving_workspace,
    problem_with_comment_id,
    problem_with_directory,
    problem_with_input,
    problem_with_output,
)
from evalbot.shard.partition import Shard

Mode = Literal["pull_request", "push", "workflow_run", "baseline"]
MODES: tuple[str, ...] = ("auto", "merge", "plan", *get_args(Mode))
FAIL_ON: tuple[str, ...] = get_args(FailOn)
JUDGE_FAILURES: tuple[str, ...] = get_args(JudgeFailures)
DEFAULT_JUDGE_DEADLINE = 240.0
"""Seconds of judge calls a run may spend at most (see judges.deadline)."""
PULL_REQUEST_EVENTS = frozenset({"pull_request", "pull_request_target"})
SECRETLESS_FORK_EVENTS = frozenset({"pull_request", "pull_request_review", "pull_request_review_comment"})
"""Events whose runs for a pull request from a fork get a read-only token and none of the repository's secrets."""
_TRUE, _FALSE = {"true", "yes", "1", "on"}, {"false", "no", "0", "off", ""}
_SECRET = re.compile(r"^[^\s\x00-\x1f\x7f]+$")
_ARTIFACT = re.compile(r'^[^":<>|*?\\/\x00-\x1f\x7f]{1,200}$')
_ARTIFACT_PATTERN = re.compile(r'^[^":<>|?\\/\x00-\x1f\x7f]{1,200}$')
"""An artifact name in which ``*`` stands for any characters (the parts of a sharded run: evalbot-part-*)."""


# --- validators: how one input's raw string becomes its field's value ---
# The runner passes every declared input as a string ("" when unset and defaulted to ""). Each validator raises
# ValueError with the message the user sees after "input <name>: ".


def _blank_is_default(raw: Any) -> Any:
    if raw == "":
        raise PydanticUseDefault()
    return raw


def _blank_is_none(raw: Any) -> Any:
    return None if raw == "" else raw


def _items(raw: Any) -> Any:
    """One item per line or comma; blanks dropped."""
    if not isinstance(raw, str):
        return raw
    return tuple(part.strip() for part in re.split(r"[\n,]", raw) if part.strip())


def _flag(raw: Any) -> Any:
    if not isinstance(raw, str):
        return raw
    if raw.lower() not in _TRUE | _FALSE:
        raise ValueError(f"{raw!r} is not true or false")
    return raw.lower() in _TRUE


def _optional_flag(raw: Any) -> Any:
    return None if raw == "" else _flag(raw)


def _token(value: str) -> str:
    if value and not _SECRET.fullmatch(value):  # never echo a secret: only say what is wrong with it
        raise ValueError("contains whitespace or control characters; expected a single-line token")
    return value


def _paths(raw: Any) -> Any:
    """Items, at least one; empty means the default."""
    if raw == "":
        raise PydanticUseDefault()
    if isinstance(raw, str) and not _items(raw):
        raise ValueError(f"{raw!r} names no path; give eval set files, directories or globs")
    return _items(raw)


def _base_url(value: str | None) -> str | None:
    if value is None:
        return None
    parts = urlsplit(value) if _SECRET.fullmatch(value) else None
    if parts is None or parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError("is not an http(s) URL; give the server's OpenAI-compatible root, e.g. "
                         "http://localhost:8000/v1")
    if parts.username or parts.password:  # never echo it: the credentials would be in the message
        raise ValueError("holds credentials; give the key in openai-api-key (from a secret) instead")
    return value


def _artifact_name(value: str) -> str:
    if not _ARTIFACT_PATTERN.fullmatch(value) or value.strip("*") == "":
        raise ValueError(f"{value!r} is not an artifact name or pattern (1 to 200 characters, none of "
                         '" : < > | ? \\ / or control characters; * matches any characters, as in evalbot-part-*)')
    return value


def _shard(raw: Any) -> Any:
    if not isinstance(raw, str):
        return raw
    if not raw:
        return None
    return Shard.parse(raw)  # its ValueError says what K/N must be


def _comment_id(value: str) -> str:
    if problem := problem_with_comment_id(value):
        raise ValueError(problem)
    return value


def Number(kind: type[float], low: float, high: float) -> BeforeValidator:
    """A number (an integer when ``kind`` is int) within ``low..high``; empty means the default."""

    def check(raw: Any) -> Any:
        if not isinstance(raw, str):
            return raw
        if not raw:
            raise PydanticUseDefault()
        try:
            value = kind(raw)
        except ValueError:
            raise ValueError(f"{raw!r} is not a{'n integer' if kind is int else ' number'}") from None
        if not low <= value <= high:
            raise ValueError(f"{raw} is outside {low:g}..{high:g}")
        return value

    return BeforeValidator(check)


def Choice(allowed: tuple[str, ...]) -> BeforeValidator:
    """One of ``allowed``, case-insensitive, ``-`` read as ``_``; empty means the default."""

    def check(raw: Any) -> Any:
        if not isinstance(raw, str):
            return raw
        if not raw:
            raise PydanticUseDefault()
        value = raw.lower().replace("-", "_")
        if value not in allowed:
            raise ValueError(f"{raw!r} is not one of {', '.join(allowed)}")
        return value

    return BeforeValidator(check)


Text = Annotated[str, BeforeValidator(_blank_is_default)]
"""A string; empty means the default."""
OptionalText = Annotated[str | None, BeforeValidator(_blank_is_none)]
"""A string; empty means none (no file, or: skip writing it)."""
Items = Annotated[tuple[str, ...], BeforeValidator(_items)]
"""Items one per line or comma-separated, blanks dropped."""
Secret = Annotated[str, AfterValidator(_token), Field(repr=False)]
"""A single-line token, kept out of reprs and error messages."""
Flag = Annotated[bool, BeforeValidator(_flag)]
"""true/yes/1/on or false/no/0/off (any case); empty is false."""
OptionalFlag = Annotated[bool | None, BeforeValidator(_optional_flag)]
"""Like Flag, but empty is None (the config decides)."""


class ActionInputs(BaseModel):
    """The action's inputs (``with:``), one field per action.yml input, with action.yml's defaults."""

    model_config = ConfigDict(
        frozen=True, extra="forbid", alias_generator=lambda name: name.replace("_", "-"), populate_by_name=True
    )

    eval_sets: Annotated[tuple[str, ...], BeforeValidator(_paths)] = ("evals",)
    actuals: Items = ()
    config: OptionalText = None
    baseline_path: Text = DEFAULT_BASELINE_PATH
    fail_on: Annotated[FailOn | None, Choice(FAIL_ON)] = None
    """None: the config's ``evalbot.fail_on``, else regression."""
    tolerance: Annotated[float | None, Number(float, 0.0, 1.0)] = None
    """None: the config's ``evalbot.tolerance``, else 0."""
    github_token: Secret = ""
    judge_api_key: Secret = ""
    openai_api_key: Secret = ""
    """OPENAI_API_KEY of the judge's OpenAI-compatible backend (openai/<model> judge names)."""
    openai_base_url: Annotated[OptionalText, AfterValidator(_base_url)] = None
    """OPENAI_BASE_URL: another OpenAI-compatible server (vLLM, Ollama, llama.cpp, a LiteLLM proxy)."""
    comment_template: OptionalText = None
    comment_id: Annotated[Text, AfterValidator(_comment_id)] = "default"
    mode: Annotated[Literal["auto", "merge", "plan"] | Mode, Choice(MODES)] = "auto"
    judge_concurrency: Annotated[int, Number(int, 1, 256)] = DEFAULT_CONCURRENCY
    judge_cache: OptionalText = None
    judge_cache_key: Secret = ""
    """EVALBOT_JUDGE_CACHE_KEY: signs the judge cache's answers; only answers signed with it are replayed."""
    judge_failures: Annotated[JudgeFailures | None, Choice(JUDGE_FAILURES)] = None
    """None: the config's ``evalbot.judge_failures``, else block."""
    block_flaky: OptionalFlag = None
    """None: the config's ``evalbot.block_flaky``, else false."""
    judge_deadline: Annotated[float, Number(float, 1.0, 6 * 3600.0)] = DEFAULT_JUDGE_DEADLINE
    judge_budget_requests: Annotated[int | None, Number(int, 0, 10**9)] = None
    """At most this many judge requests (lowers the base commit's ``judge_budget.requests``, never raises it)."""
    judge_budget_usd: Annotated[float | None, Number(float, 0.0, 1e6)] = None
    """At most this many US dollars sent to the judge (lowers the base commit's ``judge_budget.usd``)."""
    sampling: Annotated[Sampling | None, Choice(SAMPLING_MODES)] = None
    """None: the config's ``evalbot.sampling``, else sequential."""
    resample_split: Annotated[int | None, Number(int, 0, MAX_RESAMPLE)] = None
    """None: the config's ``evalbot.resample_split``, else 10."""
    update_baseline: Flag = False
    artifact_name: Annotated[Text, AfterValidator(_artifact_name)] = "evalbot-report"
    report_path: Text = ".evalbot-out/report.json"
    junit_path: OptionalText = ".evalbot-out/junit.xml"
    html_path: OptionalText = ".evalbot-out/report.html"
    shard: Annotated[Shard | None, BeforeValidator(_shard)] = None
    """``K/N``: this job evaluates only part K of N of the cases and writes that part (no comment, no gate)."""
    parts: Text = ".evalbot-parts"
    """Where mode merge reads the shard jobs' parts (downloaded with actions/download-artifact)."""

    only_affected: Flag = False
    """On a pull request, score only the eval sets it can affect (the base commit's ``affected_by``) and carry
    main's results for the others from the baseline (:mod:`evalbot.selection`)."""

    @property
    def merging(self) -> bool:
        """Mode merge: the report is joined from the parts instead of evaluated."""
        return self.mode == "merge"

    @property
    def planning(self) -> bool:
        """Mode plan: only the eval sets the change can affect are listed (output ``eval-sets``); nothing is
        evaluated."""
        return self.mode == "plan"


def input_names() -> tuple[str, ...]:
    """The inputs' names as action.yml spells them (kebab-case)."""
    return tuple(field.alias or name for name, field in ActionInputs.model_fields.items())


def _input(env: Mapping[str, str], name: str) -> str | None:
    """``INPUT_<NAME>`` as the runner sets it (hyphens kept), or with underscores for local runs."""
    for key in (f"INPUT_{name.upper()}", f"INPUT_{name.upper().replace('-', '_')}"):
        if key in env:
            return env[key].strip()
    return None


def input_error(name: str, message: str) -> InputError:
    """The error for an unusable input: exit 2, naming the input."""
    return InputError(f"input {name}", "", message)


def inputs_from_env(env: Mapping[str, str]) -> ActionInputs:
    """The inputs from the runner's ``INPUT_*`` variables; an invalid value raises InputError naming the input and
    the fix (the first one, in action.yml's order)."""
    raw = {name: value for name in input_names() if (value := _input(env, name)) is not None}
    try:
        inputs = ActionInputs.model_validate(raw)
    except ValidationError as exc:
        error = exc.errors(include_url=False, include_input=False)[0]
    else:
        if inputs.only_affected and (inputs.shard is not None or inputs.mode == "merge"):
            raise input_error("only-affected", "not supported with shard or mode merge yet: run the affected eval sets "
                              "in one job, or every eval set sharded (leave only-affected off there)")
        if inputs.shard is not None and inputs.mode in ("merge", "plan", "workflow_run", "baseline"):
            raise input_error("shard", f"a shard job evaluates and uploads its part only; mode {inputs.mode} takes no "
                              "shard (leave shard empty in that job)")
        return inputs
    # raised outside the except block: the ValidationError holds the raw value, which may be a token
    name = str(error["loc"][0]) if error["loc"] else "?"
    cause = (error.get("ctx") or {}).get("error")
    raise input_error(name, str(cause) if isinstance(cause, ValueError) else error["msg"])


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
class MergeGroup:
    """A merge queue's group (``merge_group`` event): the queue's commit and the base it is tested against."""

    base_sha: str
    head_sha: str
    base_ref: str
    head_ref: str


@dataclass(frozen=True)
class Change:
    """What a pull_request-mode run compares: a pull request, or a merge queue's group (no PR to comment on)."""

    base_sha: str
    head_sha: str
    number: int | None
    """The pull request that gets the comment; None for a merge queue."""
    merge_queue: bool = False


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
    merge_group: MergeGroup | None = None
    named_pull: int | None = None
    """A pull request the payload names without its commits (``issue_comment`` on a pull request, ``check_run`` or
    ``check_suite`` of one): its yardstick cannot be read at its base commit, so no mode measures it."""

    def change(self) -> Change | None:
        """The pull request, or the merge queue's group, that a pull_request-mode run compares."""
        if self.pull_request is not None:
            pr = self.pull_request
            return Change(base_sha=pr.base_sha, head_sha=pr.head_sha, number=pr.number)
        if self.merge_group is not None:
            group = self.merge_group
            return Change(base_sha=group.base_sha, head_sha=group.head_sha, number=None, merge_queue=True)
        return None


def check_paths(inputs: ActionInputs, workspace: Path) -> None:
    """Refuse path inputs that cannot work, before any work starts: outputs that are directories (or lie under a
    file), inputs that are directories or not regular files, a judge cache that is a file. Missing eval sets and
    actuals are left to the evaluation, which reports them in the comment next to the other results."""
    def at(raw: str) -> str:
        path = Path(raw)
        return str(path if path.is_absolute() else workspace / path) + ("/" if raw.endswith(("/", "\\")) else "")

    outputs = {"report-path": inputs.report_path, "junit-path": inputs.junit_path, "html-path": inputs.html_path}
    given = {**outputs, "config": inputs.config, "comment-template": inputs.comment_template,
             "judge-cache": inputs.judge_cache, "parts": inputs.parts}  # a PR baseline that leads out: "no match"
    listed = [("eval-sets", split_case_selection(raw)[0]) for raw in inputs.eval_sets if not glob.has_magic(raw)]
    for name, value in [*given.items(), *listed, *(("actuals", raw) for raw in inputs.actuals)]:
        if value and (problem := problem_leaving_workspace(Path(at(value)), workspace)):
            raise input_error(name, f"{value!r} {problem}")
    for name, raw in outputs.items():
        if raw is not None and (problem := problem_with_output(at(raw))):
            raise input_error(name, problem.replace(repr(at(raw)), repr(raw)))
    if Path(inputs.baseline_path).is_absolute() or ".." in Path(inputs.baseline_path).parts:
        raise input_error("baseline-path", f"{inputs.baseline_path!r} must be a path inside the repository, relative to "
                   "its root (e.g. .evalbot/baseline.json)")
    # only a directory is refused here: what the workspace file is matters only where it is read or written
    # (pull requests read it at the base commit; a special file there is refused by that reader)
    if inputs.baseline_path.endswith(("/", "\\")) or Path(at(inputs.baseline_path)).is_dir():
        raise input_error("baseline-path", f"{inputs.baseline_path!r} is a directory; give the baseline file's path "
                   "(e.g. .evalbot/baseline.json)")
    inputs_files = {"config": inputs.config, "comment-template": inputs.comment_template}
    for name, value in inputs_files.items():
        if value is None or Path(value).is_absolute() or ".." in Path(value).parts:
            continue  # a path outside the workspace is refused by the reader of that input, saying so
        if problem := problem_with_input(at(value)):
            raise input_error(name, problem.replace(repr(at(value)), repr(value)))
    for value in inputs.actuals:
        if Path(at(value)).exists() and (problem := problem_with_input(at(value))):
            raise input_error("actuals", problem.replace(repr(at(value)), repr(value)))
    if Path(inputs.parts).is_absolute() or ".." in Path(inputs.parts).parts:
        raise input_error("parts", f"{inputs.parts!r} must be a directory inside the workspace, relative to it "
                          "(e.g. .evalbot-parts, where actions/download-artifact put the parts)")
    if Path(at(inputs.parts)).exists() and not Path(at(inputs.parts)).is_dir():
        raise input_error("parts", f"{inputs.parts!r} is not a directory; give the directory the parts were "
                          "downloaded to")
    if inputs.judge_cache is not None and (problem := problem_with_directory(at(inputs.judge_cache))):
        raise input_error("judge-cache", problem.replace(repr(at(inputs.judge_cache)), repr(inputs.judge_cache)))


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
    group = None
    named = _named_pull(payload) if pull is None else None
    mg = payload.get("merge_group")
    if isinstance(mg, dict):
        try:
            group = MergeGroup(base_sha=str(mg["base_sha"]), head_sha=str(mg["head_sha"]),
                               base_ref=str(mg.get("base_ref", "")), head_ref=str(mg.get("head_ref", "")))
        except KeyError as exc:
            raise InputError(event_path or "event payload", "/merge_group",
                             f"merge_group event without {exc.args[0]}; is GITHUB_EVENT_PATH right?") from None
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
        merge_group=group,
        named_pull=named,
    )


def _named_pull(payload: Mapping[str, Any]) -> int | None:
    """The number of a pull request the payload is about without carrying its commits (0: unnumbered), else None:
    ``issue.pull_request`` (a comment on a pull request) or a check run's or check suite's ``pull_requests``."""
    issue = payload.get("issue")
    if isinstance(issue, dict) and issue.get("pull_request"):
        number = issue.get("number")
        return number if isinstance(number, int) else 0
    for key in ("check_run", "check_suite"):
        check = payload.get(key)
        pulls = check.get("pull_requests") if isinstance(check, dict) else None
        if isinstance(pulls, list) and pulls:
            number = pulls[0].get("number") if isinstance(pulls[0], dict) else None
            return number if isinstance(number, int) else 0
    return None


FITTING_MODES = (
    "mode pull_request (auto on pull_request, pull_request_target, pull_request_review, pull_request_review_comment "
    "and merge_group events: the pull request is measured against its base commit's baseline), workflow_run (the "
    "fork-safe second stage) or push (auto on push, schedule and workflow_dispatch, for a branch's own tree)"
)


def _pull_request_payload(ctx: GitHubContext) -> str | None:
    """``pull request #N`` when the event's payload carries or names a pull request, else None."""
    if ctx.pull_request is not None:
        return f"pull request #{ctx.pull_request.number}"
    if ctx.named_pull is not None:
        return f"pull request #{ctx.named_pull}" if ctx.named_pull else "a pull request"
    return None


def choose_mode(requested: str, ctx: GitHubContext) -> Mode:
    """The mode to run in: the input when set, else derived from the triggering event.

    Every event whose payload carries a pull request (``pull_request_review``, ``pull_request_review_comment``, ...)
    is a pull request run: its yardstick is read at the base commit. An event that names a pull request without its
    commits (``issue_comment`` on a pull request) is refused in mode auto, and mode push is refused on any event
    about a pull request: a pull request's tree is never measured against the baseline it carries itself."""
    event = ctx.event_name or "none"
    about = _pull_request_payload(ctx)
    if requested not in ("auto", "merge", "plan"):  # merge, plan: the event decides, as for auto
        mode = cast(Mode, requested)
    elif ctx.event_name in PULL_REQUEST_EVENTS or (ctx.event_name == "merge_group" and ctx.merge_group is not None):
        mode = "pull_request"  # a merge queue compares with its base commit and gates like a pull request
    elif ctx.event_name == "workflow_run":
        mode = "workflow_run"
    elif ctx.pull_request is not None:  # pull_request_review(_comment): a pull request, with its commits
        mode = "pull_request"
    elif about is not None:
        raise input_error("mode", f"mode auto cannot gate the {event!r} event: its payload is about {about} but "
                          "names no base commit to read the baseline and the gate settings at, and a push run would "
                          "measure whatever tree the job checked out against its own baseline. Run evalbot on the "
                          f"events that fit: {FITTING_MODES}")
    else:  # push, schedule, workflow_dispatch, local runs
        mode = "push"
    if mode == "push" and about is not None:
        raise input_error("mode", f"mode push on the {event!r} event, which is about {about}: a pull request's tree "
                          "is never measured against the baseline it carries. Use mode auto or one that fits: "
                          f"{FITTING_MODES}")
    if mode == "pull_request" and ctx.change() is None:
        raise input_error("mode", "pull_request mode needs a pull_request or merge_group event (or another event "
                          f"whose payload carries the pull request's commits), got {event!r}")
    if mode == "workflow_run" and ctx.workflow_run is None:
        raise input_error("mode", f"workflow_run mode needs a workflow_run event, got {ctx.event_name or 'none'!r}")
    return mode


def on_default_branch(ctx: GitHubContext) -> bool:
    """True for a push to the repository's default branch (where the baseline may be refreshed)."""
    return bool(ctx.default_branch) and ctx.ref == f"refs/heads/{ctx.default_branch}"


def credentials_expected(ctx: GitHubContext) -> bool:
    """Whether the run should have the judge's credentials: everywhere but a ``pull_request`` (or review) run from a
    fork, whose secrets GitHub withholds (a same-repository pull request, a push, a merge queue, a baseline refresh,
    ``pull_request_target`` all have them)."""
    pr = ctx.pull_request
    return not (ctx.event_name in SECRETLESS_FORK_EVENTS and pr is not None and pr.from_fork)
