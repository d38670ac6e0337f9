"""Action settings: INPUT_* parsing with errors that name the input, event payloads, and mode selection."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from evalbot.action.settings import (
    choose_mode,
    context_from_env,
    credentials_expected,
    inputs_from_env,
    on_default_branch,
)
from evalbot.errors import InputError

EVENTS = Path(__file__).parents[1] / "data" / "events"


def event_env(tmp_path: Path, name: str, payload: dict[str, Any] | None = None, **extra: str) -> dict[str, str]:
    """Runner variables for an event, the payload from tests/data/events unless given."""
    data = payload if payload is not None else json.loads((EVENTS / f"{name}.json").read_text())
    path = tmp_path / "event.json"
    path.write_text(json.dumps(data))
    return {"GITHUB_EVENT_NAME": name, "GITHUB_EVENT_PATH": str(path), "GITHUB_WORKSPACE": str(tmp_path), **extra}


def load(name: str) -> dict[str, Any]:
    return json.loads((EVENTS / f"{name}.json").read_text())


def test_defaults_match_action_yml_when_no_input_is_set() -> None:
    """With no INPUT_* at all the documented defaults apply."""
    got = inputs_from_env({})
    assert got.eval_sets == ("evals",) and got.fail_on is None and got.mode == "auto"
    assert got.baseline_path == ".evalbot/baseline.json" and got.update_baseline is False
    assert got.junit_path == ".evalbot-out/junit.xml"


def test_hyphenated_names_as_the_runner_sets_them() -> None:
    """INPUT_EVAL-SETS (hyphen kept, as the runner does) and lists by line or comma."""
    got = inputs_from_env(
        {
            "INPUT_EVAL-SETS": "evals/a.evalset.json\n evals/b ,evals/**/*.test.json\n",
            "INPUT_ACTUALS": "runs.json",
            "INPUT_FAIL-ON": "Threshold",
            "INPUT_TOLERANCE": "0.1",
            "INPUT_JUDGE-CONCURRENCY": "4",
            "INPUT_UPDATE-BASELINE": "true",
            "INPUT_JUNIT-PATH": "",
            "INPUT_MODE": "pull-request",
        }
    )
    assert got.eval_sets == ("evals/a.evalset.json", "evals/b", "evals/**/*.test.json")
    assert got.actuals == ("runs.json",)
    assert (got.fail_on, got.tolerance, got.judge_concurrency) == ("threshold", 0.1, 4)
    assert got.update_baseline is True and got.junit_path is None and got.mode == "pull_request"


def test_underscore_names_work_for_local_runs() -> None:
    """INPUT_BASELINE_PATH is accepted too, for people running the entrypoint by hand."""
    assert inputs_from_env({"INPUT_BASELINE_PATH": "b.json"}).baseline_path == "b.json"


def test_secrets_are_not_in_the_repr() -> None:
    """Tokens never reach logs through a repr of the settings."""
    got = inputs_from_env({"INPUT_GITHUB-TOKEN": "ghs_secret", "INPUT_JUDGE-API-KEY": "AIza-secret"})
    assert got.github_token == "ghs_secret"
    assert "secret" not in repr(got)


@pytest.mark.parametrize(
    ("key", "value", "needle"),
    [
        ("INPUT_FAIL-ON", "sometimes", "fail-on"),
        ("INPUT_MODE", "sometimes", "mode"),
        ("INPUT_SHARD", "5/4", "shard"),
        ("INPUT_TOLERANCE", "five", "tolerance"),
        ("INPUT_TOLERANCE", "1.5", "outside 0..1"),
        ("INPUT_JUDGE-CONCURRENCY", "0", "judge-concurrency"),
        ("INPUT_UPDATE-BASELINE", "maybe", "update-baseline"),
    ],
)
def test_bad_inputs_name_the_input(key: str, value: str, needle: str) -> None:
    """Each invalid value raises InputError naming the input and the allowed values."""
    with pytest.raises(InputError, match=needle):
        inputs_from_env({key: value})


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"INPUT_JUDGE-DEADLINE": "soon"}, "input judge-deadline: 'soon' is not a number"),
        ({"INPUT_JUDGE-DEADLINE": "nan"}, "input judge-deadline: nan is outside 1..21600"),
        ({"INPUT_JUDGE-CONCURRENCY": "4.0"}, "input judge-concurrency: '4.0' is not an integer"),
        ({"INPUT_EVAL-SETS": " ,\n,"}, "input eval-sets: ',\\n,' names no path; give eval set files, directories or globs"),
        ({"INPUT_MODE": "Merged"},
         "input mode: 'Merged' is not one of auto, merge, plan, pull_request, push, workflow_run, baseline"),
        ({"INPUT_SHARD": "0/4"}, "input shard: expected K from 1 to N in K/N, got '0/4'"),
        ({"INPUT_SHARD": "1/4", "INPUT_MODE": "workflow_run"},
         "input shard: a shard job evaluates and uploads its part only; mode workflow_run takes no shard"),
        ({"INPUT_ARTIFACT-NAME": "a/b"}, "input artifact-name: 'a/b' is not an artifact name"),
        ({"INPUT_COMMENT-ID": "x" * 300}, "input comment-id: "),
    ],
)
def test_error_messages_name_the_input_and_the_fix(env: dict[str, str], message: str) -> None:
    """The message is 'input <name>: <what is wrong and what to give>' (the Action prints it and exits 2)."""
    with pytest.raises(InputError) as caught:
        inputs_from_env(env)
    assert str(caught.value).startswith(message)


def test_a_bad_token_is_refused_without_echoing_it() -> None:
    """A multi-line or control-character token is refused; neither the message nor its cause shows the value."""
    with pytest.raises(InputError) as caught:
        inputs_from_env({"INPUT_JUDGE-API-KEY": "AIza-secret\nsecond-line"})
    assert str(caught.value).startswith("input judge-api-key: contains whitespace")
    assert "secret" not in str(caught.value) and caught.value.__cause__ is None and caught.value.__context__ is None


def test_hostile_input_values_are_refused_cleanly() -> None:
    """A huge value, a lone surrogate (a non-UTF-8 byte in the environment) and markup give an InputError."""
    for env in ({"INPUT_TOLERANCE": "9" * 100_000}, {"INPUT_MODE": "\udcff"}, {"INPUT_FAIL-ON": "<b>{{x}}</b>"}):
        with pytest.raises(InputError) as caught:
            inputs_from_env(env)
        str(caught.value).encode("utf-8")  # printable: no lone surrogate reaches the log


def test_undeclared_inputs_are_ignored_and_fields_are_frozen() -> None:
    """Only action.yml's inputs are read (the runner warns about others); the settings cannot be changed later."""
    got = inputs_from_env({"INPUT_SOMETHING-ELSE": "x", "INPUT_CONFIG": "cfg.json"})
    assert got.config == "cfg.json"
    with pytest.raises(ValueError, match="frozen"):
        got.config = "other.json"  # type: ignore[misc]


def test_pull_request_from_the_same_repository(tmp_path: Path) -> None:
    """base/head shas, number and label come from the payload; same repo is not a fork."""
    ctx = context_from_env(event_env(tmp_path, "pull_request", GITHUB_REPOSITORY="Codertocat/Hello-World"))
    pr = ctx.pull_request
    assert pr is not None and pr.number == 2 and not pr.from_fork
    assert pr.base_sha == load("pull_request")["pull_request"]["base"]["sha"]
    assert choose_mode("auto", ctx) == "pull_request"


def test_pull_request_from_a_fork_and_from_a_deleted_fork(tmp_path: Path) -> None:
    """A head repo other than ours, or none at all (deleted fork), marks the PR as from a fork."""
    payload = load("pull_request")
    payload["pull_request"]["head"]["repo"]["full_name"] = "forker/Hello-World"
    ctx = context_from_env(event_env(tmp_path, "pull_request", payload, GITHUB_REPOSITORY="Codertocat/Hello-World"))
    assert ctx.pull_request is not None and ctx.pull_request.from_fork
    payload["pull_request"]["head"]["repo"] = None
    ctx = context_from_env(event_env(tmp_path, "pull_request", payload, GITHUB_REPOSITORY="Codertocat/Hello-World"))
    assert ctx.pull_request is not None and ctx.pull_request.from_fork


def test_push_to_the_default_branch(tmp_path: Path) -> None:
    """A push to refs/heads/<default_branch> is push mode on the default branch."""
    ctx = context_from_env(event_env(tmp_path, "push", GITHUB_REF="refs/heads/master"))
    assert choose_mode("auto", ctx) == "push" and on_default_branch(ctx)
    other = context_from_env(event_env(tmp_path, "push", GITHUB_REF="refs/heads/topic"))
    assert not on_default_branch(other)


def test_workflow_run_payload(tmp_path: Path) -> None:
    """The triggering run's id, head sha and owner:branch label are read for the second stage."""
    ctx = context_from_env(event_env(tmp_path, "workflow_run"))
    run = ctx.workflow_run
    assert run is not None and run.id == 1589141559 and run.head_label == "octo-org:main"
    assert choose_mode("auto", ctx) == "workflow_run"


def test_runner_paths_and_enterprise_urls(tmp_path: Path) -> None:
    """GITHUB_OUTPUT/STEP_SUMMARY become paths; GITHUB_API_URL is kept for GitHub Enterprise."""
    env = event_env(
        tmp_path,
        "push",
        GITHUB_OUTPUT=str(tmp_path / "o"),
        GITHUB_STEP_SUMMARY=str(tmp_path / "s"),
        GITHUB_API_URL="https://ghe.example.com/api/v3/",
    )
    ctx = context_from_env(env)
    assert ctx.output_path == tmp_path / "o" and ctx.summary_path == tmp_path / "s"
    assert ctx.api_url == "https://ghe.example.com/api/v3"


def test_mode_override_needs_a_matching_payload(tmp_path: Path) -> None:
    """mode: pull_request on a push event is an input error, not a crash later."""
    ctx = context_from_env(event_env(tmp_path, "push"))
    with pytest.raises(InputError, match="needs a pull_request or merge_group event"):
        choose_mode("pull_request", ctx)
    assert choose_mode("baseline", ctx) == "baseline"


def test_events_about_a_pull_request(tmp_path: Path) -> None:
    """A review of a fork's PR is a pull request run without secrets; a check suite of a PR names it without the
    base commit to read the yardstick at: mode auto refuses it, and mode push too (the PR's tree)."""
    payload = load("pull_request")
    payload["pull_request"]["head"]["repo"]["full_name"] = "forker/Hello-World"
    review = context_from_env(event_env(tmp_path, "pull_request_review", payload,
                                        GITHUB_REPOSITORY="Codertocat/Hello-World"))
    assert choose_mode("auto", review) == "pull_request" and not credentials_expected(review)
    suite = {"check_suite": {"id": 1, "pull_requests": [{"number": 12, "head": {}, "base": {}}]}}
    checks = context_from_env(event_env(tmp_path, "check_suite", suite))
    assert checks.named_pull == 12
    for mode in ("auto", "push"):
        with pytest.raises(InputError, match="pull request #12"):
            choose_mode(mode, checks)
    assert choose_mode("auto", context_from_env(event_env(tmp_path, "check_suite", {"check_suite": {}}))) == "push"


def test_unreadable_event_file_says_which(tmp_path: Path) -> None:
    """A broken GITHUB_EVENT_PATH is reported with its path."""
    bad = tmp_path / "event.json"
    bad.write_text("{not json")
    with pytest.raises(InputError, match="event payload unreadable"):
        context_from_env({"GITHUB_EVENT_PATH": str(bad)})


def test_no_event_means_push_mode() -> None:
    """Outside Actions (no event) the run evaluates and reports."""
    assert choose_mode("auto", context_from_env({})) == "push"


def test_openai_inputs() -> None:
    """openai-api-key is a secret token; openai-base-url an http(s) URL without credentials (never echoed)."""
    inputs = inputs_from_env({"INPUT_OPENAI-API-KEY": "sk-abc123456", "INPUT_OPENAI-BASE-URL": "http://h:8000/v1"})
    assert (inputs.openai_api_key, inputs.openai_base_url) == ("sk-abc123456", "http://h:8000/v1")
    assert "sk-abc123456" not in repr(inputs)
    assert inputs_from_env({}).openai_base_url is None
    with pytest.raises(InputError, match="input openai-api-key: contains whitespace"):
        inputs_from_env({"INPUT_OPENAI-API-KEY": "sk-a b"})
    with pytest.raises(InputError) as caught:
        inputs_from_env({"INPUT_OPENAI-BASE-URL": "https://me:s3cretpass@proxy.example/v1"})
    assert str(caught.value).startswith("input openai-base-url: holds credentials") and "s3cret" not in str(caught.value)
    with pytest.raises(InputError, match="input openai-base-url: is not an http"):
        inputs_from_env({"INPUT_OPENAI-BASE-URL": "file:///etc/passwd"})
