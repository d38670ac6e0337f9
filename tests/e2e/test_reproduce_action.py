"""The Action's comment ends with "Reproduce locally": pasted verbatim into a shell in the job's workspace (a git
checkout holding the base commit), it gives the same verdict and headline. With ``judge-cache`` it carries
``--judge-cache DIR --judge-replay``, so the judged verdicts come from the answers the job cached (no credentials
needed), and the gate inputs the workflow gave (fail-on, tolerance...) as flags."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.e2e.conftest import BASELINE, Action, make_baseline, pull_request_event, with_evalbot_section

CACHE = ".evalbot-cache"
ACTUALS = "actuals/regressed.json"


def _git(where: Path, *args: str) -> str:
    env = {"PATH": "/usr/bin:/bin", "HOME": str(where), "GIT_CONFIG_NOSYSTEM": "1",
           "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@example.com"}
    done = subprocess.run(["git", *args], cwd=where, env=env, capture_output=True, text=True, check=True)
    return done.stdout.strip()


def _base_commit(action: Action, baseline_text: str) -> str:
    """The workspace as actions/checkout leaves it with history: a git repository whose base commit has the
    baseline; the PR's tree (the working tree) does not. The same file is at that commit on the fake GitHub."""
    ws = action.workspace
    _git(ws, "init", "-q", "-b", "main")
    (ws / BASELINE).parent.mkdir(parents=True, exist_ok=True)
    (ws / BASELINE).write_text(baseline_text, encoding="utf-8")
    _git(ws, "add", "-A")
    _git(ws, "commit", "-q", "-m", "main with its baseline")
    sha = _git(ws, "rev-parse", "HEAD")
    (ws / BASELINE).unlink()
    action.github.put_file(BASELINE, baseline_text, ref=sha)
    for path in ("evals/test_config.json", "evals/shop.evalset.json"):
        action.github.put_file(path, (ws / path).read_text(encoding="utf-8"), ref=sha)
    return sha


def _event(base_sha: str) -> dict[str, object]:
    payload = pull_request_event(number=7)
    pr = payload["pull_request"]
    assert isinstance(pr, dict)
    pr["base"]["sha"] = base_sha
    return payload


def run_verbatim(command: str, where: Path) -> tuple[int, str, str]:
    """The command as a user pastes it into a shell in the workspace (this environment's evalbot, no credentials)."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("GOOGLE_", "GEMINI_", "OPENAI_", "EVALBOT_", "GITHUB_", "INPUT_"))}
    env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", "")
    done = subprocess.run(["bash", "-c", command], cwd=where, env=env, capture_output=True, text=True, timeout=300,
                          check=False)
    return done.returncode, done.stdout, done.stderr


def _reproduce(body: str) -> str:
    found = re.findall(r"^- Reproduce locally: `(.+)`$", body, re.MULTILINE)
    assert len(found) == 1, body[-2000:]
    return str(found[0])


def _headline(text: str) -> str:
    """The headline and what is said right under it (what could not be measured), up to the baseline line."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("### "))
    end = next(i for i in range(start, len(lines)) if "Compared with the baseline" in lines[i])
    return "\n".join(lines[start:end]).strip()


@pytest.mark.parametrize("inputs", [
    {"judge-cache": CACHE, "judge-cache-key": "k-1234567890"},
    {"judge-cache": CACHE, "fail-on": "threshold", "tolerance": "0.05", "judge-failures": "warn"},
])
def test_the_actions_reproduce_command_runs_verbatim(inputs: dict[str, str], action: Action,
                                                     baseline_text: str) -> None:
    """It used to drop the judge cache: run locally, the judged criterion then had no judge and the comment's
    headline changed. Now it replays the job's cached answers and carries the gate inputs."""
    base_sha = _base_commit(action, baseline_text)
    make_baseline(action, baseline_text)
    run = action.run("pull_request", _event(base_sha), inputs={"actuals": ACTUALS, **inputs})
    assert run.code == 1, run.stdout + run.stderr
    (comment,) = action.github.comments_on(7)
    command = _reproduce(comment.body)
    assert f"--baseline {base_sha}:{BASELINE}" in command
    assert f"--judge-cache {CACHE} --judge-replay" in command
    for name in ("fail-on", "tolerance", "judge-failures"):
        if name in inputs:
            assert f"--{name} {inputs[name]}" in command
    shutil.rmtree(action.workspace / ".evalbot-out")
    code, out, err = run_verbatim(command, action.workspace)
    assert code == run.code, out + err
    assert _headline(out) == _headline(comment.body)
    without = command.replace(f" --judge-cache {CACHE} --judge-replay", "")
    code, out, err = run_verbatim(without, action.workspace)  # what the command used to be: no judge here
    assert _headline(out) != _headline(comment.body), out + err


def test_a_prs_own_gate_policy_gates_neither_the_action_nor_its_reproduce_command(
        action: Action, baseline_text: str) -> None:
    """The PR's config says ``fail_on: never`` and ``yardstick_changes: warn``: the Action takes the base commit's
    policy and blocks, naming the change; the reproduce command (``--baseline BASE_SHA:PATH``) used to take the working
    tree's policy and pass. Now it reads the policy at the base commit with git: the same verdict, headline and notice."""
    base_sha = _base_commit(action, baseline_text)
    make_baseline(action, baseline_text)
    with_evalbot_section(action, {"fail_on": "never", "yardstick_changes": "warn"})
    run = action.run("pull_request", _event(base_sha), inputs={"actuals": ACTUALS, "judge-cache": CACHE})
    assert run.code == 1, run.stdout + run.stderr
    (comment,) = action.github.comments_on(7)
    notice = ("This PR changes the gate policy: fail\\_on regression → never; yardstick\\_changes block → warn; takes "
              "effect after merge (this run uses the base commit's).")
    assert notice in comment.body
    shutil.rmtree(action.workspace / ".evalbot-out")
    code, out, err = run_verbatim(_reproduce(comment.body), action.workspace)
    assert code == run.code, out + err
    assert _headline(out) == _headline(comment.body)
    assert notice in _headline(out)
