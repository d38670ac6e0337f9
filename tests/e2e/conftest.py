"""Run entrypoint.py as the runner runs the container: GITHUB_* variables, INPUT_* defaults, event file, fakes."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from ruamel.yaml import YAML

from tests.fakes import prewarmed
from tests.fakes.fake_gemini import FakeGemini
from tests.fakes.fake_github import APP_TOKEN, READ_ONLY_TOKEN, FakeGitHub, Pull
from tests.fakes.runner_files import parse_outputs

ROOT = Path(__file__).resolve().parents[2]
DATA = Path(__file__).parent / "data"
EVENTS = ROOT / "tests" / "data" / "events"
REPO = "octo-org/shop-agent"
BASE_SHA = "b" * 40
HEAD_SHA = "c" * 40
VALID = '{"reasoning": "same facts", "is_the_agent_response_valid": "valid"}'
# To run the action as laid out in the image (runtime dependencies only, source copied to /app, not installed),
# point these at that interpreter and that entrypoint.py; by default this checkout's entrypoint runs.
PYTHON = os.environ.get("EVALBOT_E2E_PYTHON", sys.executable)
ENTRYPOINT = os.environ.get("EVALBOT_E2E_ENTRYPOINT", str(ROOT / "entrypoint.py"))
# Each run is a process of its own, forked from one that has imported what a run imports (tests/fakes/prewarmed.py:
# about 1.1 s of CPU less per run); a test marked fresh_process, or any run when PYTHON or ENTRYPOINT is not the
# default or EVALBOT_E2E_FRESH=1, starts a fresh interpreter instead.
PRELOAD = ["evalbot.action.main", "evalbot.pipeline", "evalbot.forge.pygithub", "evalbot.judges.gemini",
           "evalbot.judges.factory", "evalbot.criteria", "evalbot.render.html", "evalbot.render.junit", "github",
           "google.genai", "nltk.stem.porter", "concurrent.futures.thread"]
FRESH_PROCESS = False
"""Set for a test marked ``fresh_process`` (the autouse fixture below)."""


@pytest.fixture(autouse=True)
def _fresh_process(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    if request.node.get_closest_marker("fresh_process") is not None:
        monkeypatch.setattr(sys.modules[__name__], "FRESH_PROCESS", True)


def _start(env: dict[str, str], cwd: Path) -> Any:
    """entrypoint.py as a new process: forked from this test process's prewarmed server, or a fresh interpreter."""
    fresh = FRESH_PROCESS or prewarmed.fresh_everywhere() or not prewarmed.forkable(env)
    if fresh or PYTHON != sys.executable or ENTRYPOINT != str(ROOT / "entrypoint.py"):
        return subprocess.Popen([PYTHON, ENTRYPOINT], cwd=cwd, env=env, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
    return prewarmed.server(PYTHON, ENTRYPOINT, PRELOAD).start(env, cwd)


def pytest_sessionfinish() -> None:
    prewarmed.close_all()


def action_defaults(token: str) -> dict[str, str]:
    """INPUT_* for every input with action.yml's default, as the runner sets them (hyphens kept)."""
    inputs = YAML(typ="safe").load((ROOT / "action.yml").read_text(encoding="utf-8"))["inputs"]
    env = {f"INPUT_{name.upper()}": str(spec.get("default", "")) for name, spec in inputs.items()}
    env["INPUT_GITHUB-TOKEN"] = token
    return env


@dataclass
class Run:
    """What one action run left behind."""

    code: int
    stdout: str
    stderr: str
    outputs: dict[str, str]
    summary: str
    workspace: Path
    first_line_s: float
    commands: list[str] = field(default_factory=list)

    def annotations(self, level: str = "error") -> list[str]:
        return [line for line in self.commands if line.startswith(f"::{level}")]


class Action:
    """Runs the entrypoint in a workspace against the fake GitHub and the fake Gemini."""

    def __init__(self, tmp_path: Path, github: FakeGitHub, gemini: FakeGemini) -> None:
        self.tmp, self.github, self.gemini = tmp_path, github, gemini
        self.workspace = tmp_path / "workspace"
        shutil.copytree(DATA, self.workspace)
        self.runs = 0

    def run(
        self,
        event_name: str,
        payload: dict[str, Any],
        *,
        inputs: dict[str, str] | None = None,
        token: str = APP_TOKEN,
        judge_key: str | None = "fake-gemini-key",
        sha: str = HEAD_SHA,
        ref: str = "refs/pull/7/merge",
    ) -> Run:
        self.runs += 1
        step = self.tmp / f"step{self.runs}"
        step.mkdir()
        event = step / "event.json"
        event.write_text(json.dumps(payload), encoding="utf-8")
        output, summary = step / "output", step / "summary.md"
        output.touch()
        summary.touch()
        env = {
            "PATH": "/usr/bin:/bin",
            "HOME": str(step),
            "CI": "true",
            "GITHUB_ACTIONS": "true",
            "GITHUB_EVENT_NAME": event_name,
            "GITHUB_EVENT_PATH": str(event),
            "GITHUB_REPOSITORY": REPO,
            "GITHUB_REPOSITORY_OWNER": REPO.split("/")[0],
            "GITHUB_SHA": sha,
            "GITHUB_REF": ref,
            "GITHUB_WORKSPACE": str(self.workspace),
            "GITHUB_API_URL": self.github.base_url,
            "GITHUB_SERVER_URL": "https://github.com",
            "GITHUB_GRAPHQL_URL": f"{self.github.base_url}/graphql",
            "GITHUB_RUN_ID": "4242",
            "GITHUB_RUN_NUMBER": "12",
            "GITHUB_RUN_ATTEMPT": "1",
            "GITHUB_WORKFLOW": "evals",
            "GITHUB_JOB": "evaluate",
            "GITHUB_ACTION": "evalbot",
            "GITHUB_ACTOR": "octocat",
            "GITHUB_OUTPUT": str(output),
            "GITHUB_STEP_SUMMARY": str(summary),
            "RUNNER_OS": "Linux",
            "RUNNER_TEMP": str(step),
            "GOOGLE_GEMINI_BASE_URL": self.gemini.url,
            **action_defaults(token),
            **{f"INPUT_{k.upper()}": v for k, v in (inputs or {}).items()},
        }
        if judge_key:
            env["INPUT_JUDGE-API-KEY"] = judge_key
        started = time.perf_counter()
        proc = _start(env, self.workspace)
        assert proc.stdout is not None
        first = proc.stdout.readline()
        first_line_s = time.perf_counter() - started
        rest, err = proc.communicate(timeout=120)
        stdout = first + rest
        return Run(
            code=proc.returncode,
            stdout=stdout,
            stderr=err,
            outputs=parse_outputs(output.read_text(encoding="utf-8")),
            summary=summary.read_text(encoding="utf-8"),
            workspace=self.workspace,
            first_line_s=first_line_s,
            commands=[line for line in stdout.splitlines() if line.startswith("::")],
        )


def event(name: str) -> dict[str, Any]:
    """A recorded payload from tests/data/events, re-pointed at the test repository."""
    payload: dict[str, Any] = json.loads((EVENTS / f"{name}.json").read_text(encoding="utf-8"))
    payload["repository"]["full_name"] = REPO
    payload["repository"]["default_branch"] = "main"
    return payload


def pull_request_event(*, fork: bool = False, number: int = 7) -> dict[str, Any]:
    """pull_request 'opened' for PR ``number`` from a branch of ours or from a fork."""
    payload = event("pull_request")
    pr = payload["pull_request"]
    pr["number"] = payload["number"] = number
    pr["base"].update(sha=BASE_SHA, ref="main")
    owner = "forker" if fork else REPO.split("/")[0]
    pr["head"].update(sha=HEAD_SHA, ref="feature", label=f"{owner}:feature")
    pr["head"]["repo"]["full_name"] = f"{owner}/shop-agent"
    return payload


@pytest.fixture(scope="session")
def baseline_text(tmp_path_factory: pytest.TempPathFactory) -> str:
    """The baseline file of main's actuals, made once by running the action in mode baseline."""
    tmp = tmp_path_factory.mktemp("baseline")
    with FakeGitHub(repo=REPO) as github, FakeGemini(responder=lambda prompt, index, request: VALID) as gemini:
        action = Action(tmp, github, gemini)
        run = action.run(
            "push",
            event("push"),
            inputs={"mode": "baseline", "actuals": "actuals/good.json"},
            ref="refs/heads/main",
            sha=BASE_SHA,
        )
        assert run.code == 0, run.stdout + run.stderr
        return (action.workspace / ".evalbot" / "baseline.json").read_text(encoding="utf-8")


@pytest.fixture
def github() -> Iterator[FakeGitHub]:
    with FakeGitHub(repo=REPO) as fake:
        yield fake
    assert fake.violations == []


@pytest.fixture
def gemini() -> Iterator[FakeGemini]:
    with FakeGemini(responder=lambda prompt, index, request: VALID) as fake:
        yield fake


@pytest.fixture
def action(tmp_path: Path, github: FakeGitHub, gemini: FakeGemini) -> Action:
    return Action(tmp_path, github, gemini)


BASELINE = ".evalbot/baseline.json"
MARK = "<!-- evalbot id=default -->"


def make_baseline(action: Action, text: str) -> str:
    """Publish the baseline at the PR's base commit only (the PR's own tree does not have it)."""
    action.github.put_file(BASELINE, text, ref=BASE_SHA)
    return text


RUN_ID = 5151


def workflow_run_event(*, event_name: str = "pull_request") -> dict[str, Any]:
    """workflow_run 'completed' for the first stage's run on the fork's head commit."""
    payload = event("workflow_run")
    run = payload["workflow_run"]
    run.update(
        id=RUN_ID, head_sha=HEAD_SHA, head_branch="feature", event=event_name, conclusion="failure", pull_requests=[]
    )  # GitHub leaves this empty for forks
    run["head_repository"]["owner"]["login"] = "forker"
    run["head_repository"]["full_name"] = "forker/shop-agent"
    return payload


def uploaded(folder: Path) -> dict[str, bytes]:
    """What actions/upload-artifact with ``path: .evalbot-out/`` uploads: every file, by its path in the folder (the
    report, the JUnit XML and the recorded runs in runs/ that the second stage re-measures)."""
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def first_stage(action: Action, actuals: str, baseline_text: str) -> None:
    """The fork's pull_request run (read-only token, no key), its report uploaded as the artifact."""
    make_baseline(action, baseline_text)
    posted = action.github.calls("issues/create-comment", status=201)
    run = action.run(
        "pull_request",
        pull_request_event(fork=True),
        inputs={"actuals": actuals},
        token=READ_ONLY_TOKEN,
        judge_key=None,
    )
    assert run.code in (0, 1), run.stdout + run.stderr
    assert action.github.calls("issues/create-comment", status=201) == posted  # the read-only token cannot post
    action.github.add_artifact(RUN_ID, "evalbot-report", uploaded(run.workspace / ".evalbot-out"))
    action.github.add_pull(Pull(7, head_sha=HEAD_SHA, base_sha=BASE_SHA, head_ref="feature", head_owner="forker"))


CONFIG = "evals/test_config.json"


def with_evalbot_section(action: Action, section: dict[str, object]) -> str:
    """Give the workspace's config (the PR's tree) an ``evalbot`` section; returns the original text (main's)."""
    path = action.workspace / CONFIG
    original = path.read_text(encoding="utf-8")
    data = json.loads(original)
    data["evalbot"] = section
    path.write_text(json.dumps(data), encoding="utf-8")
    return original


def base_commit_template(action: Action, name: str, template: str) -> None:
    """``evals/<name>`` as the comment template of the config, in the PR's tree and at the base commit."""
    (action.workspace / "evals" / name).write_text(template, encoding="utf-8")
    action.github.put_file(f"evals/{name}", template, ref=BASE_SHA)
    original = with_evalbot_section(action, {"comment_template": name})
    base = json.loads(original)
    base["evalbot"] = {"comment_template": name}
    action.github.put_file(CONFIG, json.dumps(base), ref=BASE_SHA)


def measure_baseline(action: Action, actuals: str = "actuals/good.json") -> None:
    """Mode baseline on main's ``actuals`` (a workspace path), published at the base commit only."""
    run = action.run("push", event("push"), inputs={"mode": "baseline", "actuals": actuals},
                     ref="refs/heads/main", sha=BASE_SHA)
    assert run.code == 0, run.stdout + run.stderr
    baseline = action.workspace / BASELINE
    make_baseline(action, baseline.read_text(encoding="utf-8"))
    baseline.unlink()


def pr_comment(action: Action, actuals: str) -> tuple[int, str, str]:
    """The PR's run on ``actuals``: its exit code, the headline of its latest comment, and that comment."""
    run = action.run("pull_request", pull_request_event(), inputs={"actuals": actuals})
    body = action.github.comments_on(7)[-1].body
    return run.code, body.splitlines()[1], body


def read_json(action: Action, path: str) -> Any:
    """The workspace file ``path`` (relative), parsed."""
    return json.loads((action.workspace / path).read_text(encoding="utf-8"))


def write_json(action: Action, path: str, data: Any) -> None:
    """Write ``data`` as indented JSON to the workspace file ``path`` (relative), creating its folder."""
    target = action.workspace / path
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(json.dumps(data, indent=2), encoding="utf-8")


def add_repo_metric(action: Action, module: str) -> None:
    """The repository's own metric ``tools_used`` (``repo_metrics/checks.py`` holding ``module``), threshold 0.5 in
    the workspace's config."""
    (action.workspace / "repo_metrics").mkdir()
    (action.workspace / "repo_metrics" / "__init__.py").write_text("", encoding="utf-8")
    (action.workspace / "repo_metrics" / "checks.py").write_text(module, encoding="utf-8")
    config_path = action.workspace / CONFIG
    config = json.loads(config_path.read_text(encoding="utf-8"))
    config["criteria"]["tools_used"] = 0.5
    config["custom_metrics"] = {"tools_used": {"code_config": {"name": "repo_metrics.checks.tools_used"}}}
    config_path.write_text(json.dumps(config), encoding="utf-8")


def pr_actuals(action: Action, greeting: str) -> str:
    """The good actuals with the greeting case's final response replaced; returns the workspace path."""
    data = json.loads((action.workspace / "actuals" / "good.json").read_text(encoding="utf-8"))
    data["greeting"][0]["final_response"]["parts"][0]["text"] = greeting
    (action.workspace / "actuals" / "pr.json").write_text(json.dumps(data), encoding="utf-8")
    return "actuals/pr.json"


def what_to_do(body: str) -> str:
    """The accept command the comment's "What to do" offers first."""
    first = body.split("**What to do**", 1)[1].strip().splitlines()[0]
    assert first.startswith("- If these changes are intended, accept exactly them"), first
    return first.rsplit("`", 2)[1]


def evalbot(action: Action, command: str, main_file: Path) -> subprocess.CompletedProcess[str]:
    """A command from the comment, run in the workspace as the PR's author runs it (``--previous BASE:PATH`` read
    from ``main_file``, the base commit's file: the workspace has no git history)."""
    argv = shlex.split(command)
    assert argv[0] == "evalbot" and f"{BASE_SHA}:{BASELINE}" in argv, command
    argv = [str(main_file) if a == f"{BASE_SHA}:{BASELINE}" else a for a in argv[1:]]
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(action.tmp), "PYTHONPATH": str(ROOT),
           "GOOGLE_API_KEY": "fake-gemini-key", "GOOGLE_GEMINI_BASE_URL": action.gemini.url}
    return subprocess.run([sys.executable, "-m", "evalbot.cli", *argv], cwd=action.workspace, env=env,
                          capture_output=True, text=True, timeout=300, check=False)


def main_file(action: Action, text: str, name: str = "main-baseline.json") -> Path:
    """The base commit's baseline ``text`` as a file outside the workspace (for ``evalbot``'s ``--previous``)."""
    path = action.tmp / name
    path.write_text(text, encoding="utf-8")
    return path
