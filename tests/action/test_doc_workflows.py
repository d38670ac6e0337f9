"""The workflows in the docs are complete, consistent and safe, and their agent steps work as written.

scripts/doc_workflows.py finds every workflow of the docs (```yaml blocks, and ```diff deltas to a page's canonical
workflow) and holds it to the conventions (scripts/static_checks.sh runs the same checks, then check-jsonschema, actionlint and zizmor on them).
Here: the docs pass, each rule fails on the hostile version it exists for, actionlint accepts the workflows with our
action.yml, and the documented agent steps are run (with a stand-in for ``adk``, which needs a model) to show that what
``adk eval`` writes reaches evalbot and that only exit 1 is tolerated.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import stat
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import pytest
from ruamel.yaml import YAML

from evalbot.action.settings import MODES
from scripts import doc_workflows as dw
from tests.fakes.runner_files import parse_outputs

ROOT = Path(__file__).resolve().parents[2]
REF = dw.action_ref()
INPUTS = dw.action_inputs()


def flows() -> list[tuple[dw.Block, dict[str, Any]]]:
    out = []
    for block in dw.blocks():
        flow = dw.load(block)
        assert flow is not None, block.where
        out.append((block, flow))
    return out


def problems(text: str) -> list[str]:
    return dw.problems(dw.Block("doc.md", 1, text), ref=REF, inputs=INPUTS, modes=MODES)


GOOD = """name: evals
on:
  pull_request:
permissions: {}
jobs:
  evaluate:
    runs-on: ubuntu-latest
    permissions:
      contents: read
      pull-requests: write
    steps:
      - uses: actions/checkout@08c6903cd8c0fde910a37f88322edcfb5dd907a8 # v5.0.0
        with:
          persist-credentials: false
      - name: agent
        env:
          GOOGLE_API_KEY: ${{ secrets.GEMINI_API_KEY }}
        run: |
          python -m pip install "evalbot @ git+https://github.com/evalbot/evalbot@REFTAG" -r requirements.txt
          evalbot run evals --agent my_agent.app:run --record runs/agent.json || [ $? -eq 1 ]
      - uses: evalbot/evalbot@REFTAG
        with:
          eval-sets: evals
          actuals: runs/agent.json
          judge-api-key: ${{ secrets.GEMINI_API_KEY }}
""".replace("REFTAG", REF.split("@")[1])


def test_the_docs_workflows_follow_the_conventions() -> None:
    assert dw.check() == []
    assert len(dw.blocks()) >= 9


def test_the_docs_searched_include_the_examples_and_docs_folders() -> None:
    found = dw.docs()
    assert found[0] == "README.md"
    assert {"SECURITY.md", "CONTRIBUTING.md", "examples/README.md", "examples/agent/README.md", "docs/vertex.md",
            "docs/github-action.md"} <= set(found)


def test_the_variants_are_deltas_to_the_canonical_workflow() -> None:
    """docs/github-action.md shows one complete workflow; most variants are ```diff deltas to it, each applied and
    linted as a complete workflow."""
    page = (ROOT / "docs" / "github-action.md").read_text(encoding="utf-8")
    assert page.count("```diff\n--- evals.yml (canonical)") >= 6
    canonical = next(b for b in dw.blocks() if b.doc == "docs/github-action.md")
    variants = [b for b in dw.blocks() if b.doc == "docs/github-action.md" and b.text != canonical.text]
    assert len(variants) >= 8 and all(b.error is None for b in variants)
    assert "  merge_group:\n" in next(b.text for b in variants if "merge_group" in b.text)


def test_a_delta_applies_hunk_by_hunk_and_refuses_what_is_not_there() -> None:
    base = "a:\n  b: 1\n  c: 2\nd:\n  c: 2\n"
    assert dw.apply_delta(base, "--- x\n+++ y\n@@\n   c: 2\n+  e: 3\n@@\n d:\n-  c: 2\n+  c: 4\n") == \
        "a:\n  b: 1\n  c: 2\n  e: 3\nd:\n  c: 4\n"
    with pytest.raises(ValueError, match="hunk 1: its context and - lines are not in the canonical workflow"):
        dw.apply_delta(base, "--- x\n+++ y\n@@\n-  z: 9\n")
    with pytest.raises(ValueError, match="hunk 2"):  # hunks apply in order: the second cannot match before the first
        dw.apply_delta(base, "--- x\n+++ y\n@@\n d:\n@@\n a:\n")
    with pytest.raises(ValueError, match="starts with none of"):
        dw.apply_delta(base, "--- x\n+++ y\n@@\n*a:\n")


def test_a_delta_that_does_not_apply_is_a_problem_of_its_page(tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    shutil.copy(ROOT / "pyproject.toml", tmp_path)
    shutil.copy(ROOT / "action.yml", tmp_path)
    (tmp_path / "README.md").write_text("# x\n", encoding="utf-8")
    (tmp_path / "docs" / "page.md").write_text(f"```yaml\n{GOOD}```\n\n```diff\n--- a\n+++ b\n@@\n-nothing: here\n"
                                              "```\n", encoding="utf-8")
    found = dw.check(tmp_path)
    assert len(found) == 1 and found[0].startswith("docs/page.md:") and "the delta does not apply" in found[0]


def test_the_action_reference_is_the_release_tag_of_pyproject_version() -> None:
    """The release workflow tags vX.Y.Z and moves vX: the docs use v<major of pyproject's version>, and say so."""
    version = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["version"]
    assert REF == f"evalbot/evalbot@v{version.split('.')[0]}"
    page = (ROOT / "docs" / "github-action.md").read_text(encoding="utf-8")
    assert f"`uses: {REF}` follows the latest" in page
    every = {m.group(0).split()[-1] for doc in dw.docs()
             for m in dw.LOCAL_USES.finditer((ROOT / doc).read_text(encoding="utf-8"))}
    assert every - {"you/evalbot@main"} == {REF}  # prose included (a fork builds from its branch: the one other)
    assert not any("OWNER/evalbot" in (ROOT / doc).read_text(encoding="utf-8") for doc in dw.docs())


def test_every_documented_scenario_has_a_complete_workflow() -> None:
    """adk eval then evalbot; evalbot run --agent; the first baseline through a PR; the refresh on push with its
    agent step; an OpenAI judge; a local OpenAI-compatible judge; the fork-safe second stage; the sharded merge."""
    def evalbot_steps(flow: dict[str, Any]) -> list[dict[str, Any]]:
        return [s for _, _, s in dw.steps(flow) if dw.is_evalbot(s)]

    def runs(flow: dict[str, Any]) -> str:
        return "\n".join(str(s.get("run", "")) for _, _, s in dw.steps(flow))

    all_flows = [flow for _, flow in flows()]
    adk = [f for f in all_flows if "adk eval my_agent" in runs(f)]
    assert adk and all(
        "my_agent/.adk/eval_history/*.evalset_result.json" in runs(f)
        and any(s["with"].get("actuals") == "${{ steps.agent.outputs.files }}" for s in evalbot_steps(f))
        for f in adk
    )
    assert any(re.search(r"evalbot run evals --agent \S+ --record", runs(f)) for f in all_flows)
    first = [f for f in all_flows if dw.triggers(f) == ["pull_request"]
             and any(s["with"].get("mode") == "baseline" for s in evalbot_steps(f))]
    assert len(first) == 1
    modes = [s["with"].get("mode", "auto") for s in evalbot_steps(first[0])]
    assert modes == ["auto", "baseline"]  # the gate first, then the baseline of the same runs
    assert any(str(s.get("with", {}).get("path")) == ".evalbot/baseline.json" for _, _, s in dw.steps(first[0]))
    refresh = [f for f in all_flows if dw.triggers(f) == ["push"]]
    assert len(refresh) == 1 and "adk eval" in runs(refresh[0])
    assert [s["with"].get("update-baseline") for s in evalbot_steps(refresh[0])] == [True]
    judges = [s["with"] for f in all_flows for s in evalbot_steps(f)]
    assert any("openai-api-key" in w and "judge-api-key" not in w for w in judges)
    local = [w for w in judges if "openai-base-url" in w]
    assert local and all(w["openai-base-url"].startswith("http://ollama:") for w in local)
    assert any(w.get("mode") == "workflow_run" for w in judges) and any(w.get("mode") == "merge" for w in judges)


def test_the_local_judge_workflow_runs_the_server_it_names() -> None:
    (flow,) = [f for _, f in flows() if any("openai-base-url" in (s.get("with") or {}) for _, _, s in dw.steps(f))]
    (job,) = flow["jobs"].values()
    assert "ollama" in job["services"]
    assert job["services"]["ollama"]["ports"] == ["11434:11434"]
    pull = next(s for _, _, s in dw.steps(flow) if "api/pull" in str(s.get("run", "")))
    assert "http://localhost:11434/api/pull" in pull["run"]


# --- each rule, on the hostile version it exists for ---

def test_the_good_sample_passes() -> None:
    assert problems(GOOD) == []


@pytest.mark.parametrize(("change", "expected"), [
    (("|| [ $? -eq 1 ]", "|| true"), "`|| true` tolerates every exit code"),
    (("|| [ $? -eq 1 ]", "|| :"), "`|| :` tolerates every exit code"),
    (("|| [ $? -eq 1 ]", "|| exit 0"), "`|| exit 0` tolerates every exit code"),
    (("|| [ $? -eq 1 ]", "|| [ $? -le 2 ]"), "tolerates every exit code"),
    (("        run: |\n", "        run: |\n          set +e\n"), "`set +e` hides exit codes"),
    (("      - name: agent\n", "      - name: agent\n        continue-on-error: true\n"), "`continue-on-error`"),
    (("      - uses: evalbot/evalbot@", "      - uses: OWNER/evalbot@v1 #"), "reference the Action as"),
    (("evalbot/evalbot@v0\" -r", "evalbot/evalbot@main\" -r"), "installs evalbot/evalbot@main"),
    (("          evalbot run evals --agent my_agent.app:run --record runs/agent.json || [ $? -eq 1 ]\n",
      "          # ... run your agent here\n"), "placeholder"),
    (("--record runs/agent.json", "--record runs/other.json"), "are not produced by an earlier step"),
    (("  pull_request:\n", "  pull_request_target:\n"), "pull_request_target runs with secrets"),
    (("permissions: {}\n", "permissions: write-all\n"), "top-level `permissions` must be `{}`"),
    (("    permissions:\n      contents: read\n      pull-requests: write\n", ""), "no `permissions`"),
    (("          persist-credentials: false\n", "          fetch-depth: 1\n"), "persist-credentials: false"),
    (("          GOOGLE_API_KEY: ${{ secrets.GEMINI_API_KEY }}\n",
      "          EVALBOT_JUDGE_CACHE_KEY: ${{ secrets.EVALBOT_JUDGE_CACHE_KEY }}\n"), "signing key goes to the Action"),
    (("          eval-sets: evals\n", "          eval-set: evals\n"), "eval-set not inputs of action.yml"),
    (("          eval-sets: evals\n", "          mode: pull-request\n          eval-sets: evals\n"),
     "mode 'pull-request' is not one of"),
    (("jobs:\n", "nojobs:\n"), "not a complete workflow"),
])
def test_each_rule_refuses_its_hostile_version(change: tuple[str, str], expected: str) -> None:
    old, new = change
    assert old in GOOD
    found = problems(GOOD.replace(old, new, 1))
    assert any(expected in p for p in found), found


def test_a_privileged_stage_must_not_check_out_the_pr_head() -> None:
    text = GOOD.replace("  pull_request:\n", "  workflow_run:\n    workflows: [evals]\n").replace(
        "          persist-credentials: false\n",
        "          persist-credentials: false\n          ref: ${{ github.event.workflow_run.head_sha }}\n")
    assert any("must not check out the PR's code" in p for p in problems(text))


def test_the_second_stage_job_may_set_the_evalbot_status() -> None:
    """mode workflow_run sets the `evalbot` commit status (the fork's merge gate): its job needs statuses: write."""
    second = GOOD.replace("  pull_request:\n", "  workflow_run:\n    workflows: [evals]\n    types: [completed]\n").replace(
        "          actuals: runs/agent.json\n", "          mode: workflow_run\n")
    assert any("needs `statuses: write`" in p for p in problems(second))
    granted = second.replace("      pull-requests: write\n", "      pull-requests: write\n      statuses: write\n")
    assert not any("statuses" in p for p in problems(granted)), problems(granted)


def test_a_step_list_is_not_a_workflow() -> None:
    """A fragment (steps only, as examples/agent/README.md once had) cannot be linted: it is refused."""
    fragment = "- run: evalbot run evals --record r.json || true\n- uses: OWNER/evalbot@v1\n"
    assert problems(fragment) == ["doc.md:1: not a complete workflow (YAML with `on:` and `jobs:`)"]


def test_the_writer_points_only_uses_lines_at_the_local_action(tmp_path: Path) -> None:
    written = dw.write_local(tmp_path)
    assert len(written) == len(dw.blocks())
    for path in written:
        text = path.read_text(encoding="utf-8")
        assert f"uses: {REF}" not in text
        assert "git+https://github.com/evalbot/evalbot@" not in text or REF.split("@")[1] in text


def test_static_checks_lint_the_same_workflows() -> None:
    script = (ROOT / "scripts" / "static_checks.sh").read_text(encoding="utf-8")
    assert "python3 scripts/doc_workflows.py --check" in script
    assert 'python3 scripts/doc_workflows.py "$readme_dir"' in script


def test_actionlint_accepts_the_docs_workflows_with_our_action_yml(tmp_path: Path) -> None:
    """As in static_checks.sh: the inputs given in `with:` are checked against action.yml itself."""
    actionlint = shutil.which("actionlint", path=str(Path(sys.executable).parent) + os.pathsep + os.environ["PATH"])
    if actionlint is None:
        pytest.skip("actionlint is not installed (the dev extra has it)")
    folder = tmp_path / ".github" / "workflows"
    folder.mkdir(parents=True)
    shutil.copy(ROOT / "action.yml", tmp_path / "action.yml")
    shutil.copy(ROOT / "Dockerfile", tmp_path / "Dockerfile")
    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)
    written = dw.write_local(folder)
    env = {**os.environ, "PATH": str(Path(sys.executable).parent) + os.pathsep + os.environ["PATH"]}  # shellcheck
    done = subprocess.run([actionlint, *(str(p.relative_to(tmp_path)) for p in written)],
                          cwd=tmp_path, capture_output=True, text=True, check=False, env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    broken = folder / "broken.yml"
    broken.write_text(written[0].read_text(encoding="utf-8").replace("eval-sets:", "eval-setz:"), encoding="utf-8")
    done = subprocess.run([actionlint, str(broken.relative_to(tmp_path))], cwd=tmp_path,
                          capture_output=True, text=True, check=False, env=env)
    assert done.returncode == 1 and "eval-setz" in done.stdout


# --- the agent steps, run as written ---

def adk_step() -> dict[str, Any]:
    """The canonical workflow's `adk eval` step (the first workflow of docs/github-action.md)."""
    _, flow = next((b, f) for b, f in flows() if b.doc == "docs/github-action.md")
    (step,) = [s for _, _, s in dw.steps(flow) if "adk eval" in str(s.get("run", ""))]
    return step


FAKE_ADK = """#!{python}
# Stands in for google-adk 2.13's `adk eval AGENT_DIR EVALSET...` (which needs a model): writes one EvalSetResult per
# eval set where ADK does, AGENT_DIR/.adk/eval_history/<app>_<eval set id>_<timestamp>.evalset_result.json, from the
# recorded runs in $FAKE_RUNS, then exits $FAKE_ADK_EXIT (ADK 2.13: 1 when a case failed its criteria).
import json, os, sys, time
assert sys.argv[1] == "eval", sys.argv
agent, sets = sys.argv[2], sys.argv[3:]
runs = json.load(open(os.environ["FAKE_RUNS"]))
app = os.path.basename(agent)
history = os.path.join(agent, ".adk", "eval_history")
os.makedirs(history, exist_ok=True)
for path in sets:
    data = json.load(open(path))
    set_id, stamp = data["eval_set_id"], time.time()
    name = f"{{app}}_{{set_id}}_{{stamp}}"
    result = {{"eval_set_result_id": name, "eval_set_result_name": name, "eval_set_id": set_id,
              "creation_timestamp": stamp, "eval_case_results": [
        {{"eval_set_id": set_id, "eval_id": case["eval_id"], "final_eval_status": 2, "session_id": "s",
          "overall_eval_metric_results": [], "eval_metric_result_per_invocation": [
            {{"actual_invocation": inv, "expected_invocation": inv, "eval_metric_results": []}}
            for inv in runs[case["eval_id"]]]}}
        for case in data["eval_cases"]]}}
    with open(os.path.join(history, name + ".evalset_result.json"), "w") as out:
        out.write(json.dumps(result))
sys.exit(int(os.environ.get("FAKE_ADK_EXIT", "0")))
"""

FAKE_PYTHON = """#!/bin/sh
# `python -m pip install -r requirements.txt`: the agent's dependencies, not needed by the stand-in adk
[ "$1 $2 $3" = "-m pip install" ] || exit 9
"""


def run_step(script: str, workspace: Path, exit_code: int) -> tuple[subprocess.CompletedProcess[str], Path]:
    bin_dir = workspace.parent / "bin"
    bin_dir.mkdir(exist_ok=True)
    for name, text in (("adk", FAKE_ADK.format(python=sys.executable)), ("python", FAKE_PYTHON)):
        (bin_dir / name).write_text(text, encoding="utf-8")
        (bin_dir / name).chmod(stat.S_IRWXU)
    output = workspace.parent / "github_output"
    output.write_text("", encoding="utf-8")
    env = {"PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}", "GITHUB_OUTPUT": str(output),
           "FAKE_RUNS": str(ROOT / "examples" / "runs" / "pr.json"), "FAKE_ADK_EXIT": str(exit_code),
           "HOME": str(workspace.parent)}
    # GitHub runs `run:` with `bash -e {0}`
    done = subprocess.run(["bash", "-e", "-c", script], cwd=workspace, env=env, capture_output=True, text=True,
                          check=False, timeout=60)
    return done, output


@pytest.fixture
def adk_workspace(tmp_path: Path) -> Path:
    """A repository laid out as the README's workflows assume: my_agent/ (an ADK package) and evals/<set>/."""
    workspace = tmp_path / "repo"
    shutil.copytree(ROOT / "examples" / "evals", workspace / "evals")
    (workspace / "my_agent").mkdir()
    (workspace / "my_agent" / "agent.py").write_text("root_agent = None\n", encoding="utf-8")
    (workspace / "requirements.txt").write_text("google-adk==2.13.0\n", encoding="utf-8")
    stale = workspace / "my_agent" / ".adk" / "eval_history" / "my_agent_orders_1.evalset_result.json"
    stale.parent.mkdir(parents=True)
    stale.write_text("{}", encoding="utf-8")  # an older run's results (e.g. committed by mistake)
    return workspace


@pytest.mark.parametrize("adk_exit", [0, 1])
def test_adk_eval_results_reach_evalbot_through_the_step_output(adk_workspace: Path, adk_exit: int) -> None:
    """The step lists this run's EvalSetResult files (one per eval set, the stale one gone) in its `files` output;
    the Action's `actuals` input gets that text, which evalbot reads as the CLI's --actuals: the bundled example's
    verdict (blocked by the refund regression) comes out of ADK's files as out of the recorded runs."""
    done, output = run_step(adk_step()["run"], adk_workspace, adk_exit)
    assert done.returncode == 0, done.stderr
    files = parse_outputs(output.read_text(encoding="utf-8"))["files"].splitlines()
    assert len(files) == 2 and all(re.fullmatch(r"my_agent/\.adk/eval_history/my_agent_(orders|faq)_[\d.]+"
                                                 r"\.evalset_result\.json", f) for f in files), files
    args = [arg for f in files for arg in ("--actuals", f)]
    evalbot = str(Path(sys.executable).parent / "evalbot")
    compare = subprocess.run(
        [evalbot, "compare", "--baseline", str(ROOT / "examples" / ".evalbot" / "baseline.json"), "evals", *args,
         "--judge-cache", str(ROOT / "examples" / "judge-cache"), "--judge-replay"],
        cwd=adk_workspace, capture_output=True, text=True, check=False, timeout=120)
    assert compare.returncode == 1, compare.stderr
    assert "blocked" in compare.stdout and "refund_damaged_item" in compare.stdout


@pytest.mark.parametrize("adk_exit", [2, 70])
def test_any_other_adk_exit_code_stops_the_job(adk_workspace: Path, adk_exit: int) -> None:
    done, output = run_step(adk_step()["run"], adk_workspace, adk_exit)
    assert done.returncode != 0
    assert "files" not in parse_outputs(output.read_text(encoding="utf-8"))


def test_no_results_at_all_stops_the_job(adk_workspace: Path) -> None:
    """adk eval exiting 1 without writing anything (it crashed early) leaves nothing to list: the step fails."""
    script = adk_step()["run"]
    assert "adk eval my_agent evals/*/*.evalset.json" in script
    done, _ = run_step(script.replace("adk eval my_agent evals/*/*.evalset.json", "(exit 1)"), adk_workspace, 0)
    assert done.returncode != 0 and "eval_history" in done.stderr


def evalbot_run_step() -> str:
    """The `evalbot run --agent ... --record` step of docs/github-action.md's variant, as a shell script."""
    (flow,) = [f for b, f in flows() if b.doc == "docs/github-action.md" and "shard" not in f["jobs"]
               and any("evalbot run evals --agent" in str(s.get("run", "")) for _, _, s in dw.steps(f))]
    (step,) = [s for _, _, s in dw.steps(flow) if "--record" in str(s.get("run", ""))]
    return str(step["run"])


@pytest.mark.parametrize(("agent", "passes"), [
    ("examples.agent.weather_agent:agent", True),
    ("examples.agent.weather_agent:no_such_function", False),  # evalbot exits 2
])
def test_the_evalbot_run_step_records_and_tolerates_exit_1_only(tmp_path: Path, agent: str, passes: bool) -> None:
    """The step's command, on the bundled weather agent: the recording is written and scored; a wrong agent
    (exit 2) stops the step instead of being hidden."""
    script = evalbot_run_step()
    line = next(i for i, text in enumerate(script.splitlines()) if "evalbot run" in text)
    command = "\n".join(script.splitlines()[line:])  # the pip install needs the network: not run here
    command = command.replace("evalbot run evals", f"{Path(sys.executable).parent / 'evalbot'} run "
                              f"{ROOT / 'examples' / 'agent' / 'weather.evalset.json'}")
    command = command.replace("my_agent.app:run", agent)
    done = subprocess.run(["bash", "-e", "-c", command], cwd=tmp_path, capture_output=True, text=True, check=False,
                          timeout=120, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert (done.returncode == 0) == passes, done.stderr
    recorded = tmp_path / "runs" / "agent.evalset_result.json"
    assert recorded.exists() == passes
    if not passes:
        assert "has no attribute 'no_such_function'" in done.stderr
    else:
        assert json.loads(recorded.read_text(encoding="utf-8"))["eval_set_id"]


def test_yaml_of_the_docs_is_loaded_as_the_runner_would() -> None:
    """`on:` and booleans: a YAML 1.1 reader (PyYAML-style) would read `on` as True; both readings give the same
    triggers, so the checks do not depend on the reader."""
    for _, flow in flows():
        assert dw.triggers(flow)
        assert dw.triggers({True: flow.get("on")}) == dw.triggers(flow)
    assert YAML(typ="safe").load("update-baseline: true")["update-baseline"] is True


# --- the judge configurations, as docs/github-action.md gives them ---

def judges_section() -> str:
    page = (ROOT / "docs" / "github-action.md").read_text(encoding="utf-8")
    return page[page.index("### OpenAI and local judges") : page.index("## Inputs")]


VALID_VOTE = '{"reasoning": "same facts", "is_the_agent_response_valid": "valid"}'


@pytest.mark.parametrize(("judge_model", "key", "sent"), [
    (None, "sk-test-0123456789", "gpt-4.1-mini"),  # the documented OpenAI config, as written
    ("openai/llama3.1", None, "llama3.1"),  # the local server: no key, only openai-base-url
])
def test_the_documented_judge_configs_reach_their_server(tmp_path: Path, judge_model: str | None, key: str | None,
                                                         sent: str) -> None:
    """The documented test_config.json for an OpenAI judge (and, with the model it names for Ollama, a local one) runs
    the judged criterion on the OpenAI-compatible server the inputs name (OPENAI_API_KEY / OPENAI_BASE_URL, what the
    Action's openai-api-key / openai-base-url set), with the `openai/` prefix not sent: judged, not `not_evaluated`."""
    from tests.fakes.fake_openai import FakeOpenAI

    section = judges_section()
    (config_text,) = re.findall(r"^```json\n(.*?)^```", section, re.M | re.S)
    config = json.loads(config_text)
    if judge_model is not None:
        assert f'"{judge_model}"' in section
        config["criteria"]["final_response_match_v2"]["judge_model_options"]["judge_model"] = judge_model
    evals = tmp_path / "evals" / "faq"
    evals.mkdir(parents=True)
    shutil.copy(ROOT / "examples" / "evals" / "faq" / "faq.evalset.json", evals)
    (evals / "test_config.json").write_text(json.dumps(config), encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.endswith(("_API_KEY", "_BASE_URL"))
           and not k.startswith(("GOOGLE_", "GEMINI_", "OPENAI_", "AZURE_", "EVALBOT_"))}
    with FakeOpenAI(responder=lambda prompt, index, request: VALID_VOTE) as fake:
        env["OPENAI_BASE_URL"] = fake.url
        if key is not None:
            env["OPENAI_API_KEY"] = key
        done = subprocess.run(
            [str(Path(sys.executable).parent / "evalbot"), "run", "evals", "--actuals",
             str(ROOT / "examples" / "runs" / "pr.json"), "--report", "report.json"],
            cwd=tmp_path, env=env, capture_output=True, text=True, check=False, timeout=120)
        models = {r.model for r in fake.requests}
    assert done.returncode in (0, 1), done.stderr
    assert models == {sent}
    report = json.loads((tmp_path / "report.json").read_text(encoding="utf-8"))
    statuses = {c["metrics"]["final_response_match_v2"]["status"] for es in report["eval_sets"] for c in es["cases"]}
    assert statuses == {"passed"}
