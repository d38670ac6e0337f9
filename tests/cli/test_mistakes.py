"""The common mistakes of a first hour with evalbot (issue 39's table), each caught with the message it must give:
never a pass by accident, never a wall of repeated lines, and a "did you mean" where a name was misspelt."""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from evalbot.cli.commands import main
from evalbot.cli.evaluate import show_report
from evalbot.compare.delta import compare
from evalbot.compare.gate import NOTHING_MEASURED, Gate, GatePolicy, measured_nothing
from evalbot.criteria import CRITERIA
from evalbot.render.comment import render_comment
from evalbot.results import Report
from evalbot.shard.partition import Shard

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def proj(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A copy of the bundled example (eval sets, recorded runs, judge cache, baseline), as the current directory."""
    for name in ("evals", "runs", "judge-cache", ".evalbot"):
        shutil.copytree(ROOT / "examples" / name, tmp_path / name)
    monkeypatch.chdir(tmp_path)
    return tmp_path


REPLAY = ["--judge-cache", "judge-cache", "--judge-replay"]


def misspell_trajectory_criterion(proj: Path) -> None:
    """evals/orders' config names ``tool_trajectory_avg_scor`` where it means ``tool_trajectory_avg_score``."""
    config = proj / "evals" / "orders" / "test_config.json"
    config.write_text(config.read_text().replace('"tool_trajectory_avg_score"', '"tool_trajectory_avg_scor"'))


def test_a_misspelt_criterion_names_the_closest_one_not_the_whole_list(
        proj: Path, capsys: pytest.CaptureFixture[str]) -> None:
    misspell_trajectory_criterion(proj)
    assert main(["run", "evals/orders", "--actuals", "runs/pr.json"], env={}) == 2
    out = capsys.readouterr().out
    assert ("unknown criterion 'tool_trajectory_avg_scor' (evals/orders/test_config.json:/criteria/"
            "tool_trajectory_avg_scor); did you mean `tool_trajectory_avg_score`? (`evalbot criteria` lists the "
            f"{len(CRITERIA)} known names)") in out
    assert "trajectory_exact_match" not in out and "rouge_l_sum" not in out  # no list of every name


def test_a_name_like_no_criterion_gets_no_guess(proj: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = proj / "evals" / "orders" / "test_config.json"
    config.write_text(config.read_text().replace('"tool_trajectory_avg_score"', '"zzzz"'))
    assert main(["run", "evals/orders", "--actuals", "runs/pr.json"], env={}) == 2
    out = capsys.readouterr().out
    assert "unknown criterion 'zzzz' (evals/orders/test_config.json:/criteria/zzzz) (`evalbot criteria` lists" in out
    assert "did you mean" not in out


def test_the_criteria_command_lists_every_name_on_request(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["criteria"], env={}) == 0
    assert capsys.readouterr().out.split() == sorted(CRITERIA)


def git(proj: Path, *args: str) -> str:
    done = subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=proj, check=True,
                          capture_output=True, text=True)
    return done.stdout


@pytest.fixture
def repo(proj: Path) -> Path:
    """The bundled example committed on main in a git repository."""
    git(proj, "init", "-q", "-b", "main")
    git(proj, "add", ".")
    git(proj, "commit", "-q", "-m", "main")
    return proj


REMOVALS = ("eval set removed", "(removed)", "case removed", "✅")
COMPARE = ["compare", "evals", "--actuals", "runs/pr.json", *REPLAY]


def test_a_mistyped_baseline_path_at_a_ref_blocks_like_the_action(
        repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 37 row 11: nothing at REF:PATH is "no baseline at REF:PATH" (exit 1) with the command that creates it
    and the *.json files at REF that it may have meant, the closest first; never "⚠️ no baseline" and exit 0."""
    (repo / ".evalbot" / "old.json").write_text("{}")
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "another json")
    assert main([*COMPARE, "--baseline", "HEAD:.evalbot/baselin.json"], env={}) == 1
    captured = capsys.readouterr()
    lines = captured.out.splitlines()
    assert lines[1] == ("### ❌ evalbot: blocked: no baseline at HEAD:.evalbot/baselin.json (did you mean "
                        ".evalbot/baseline.json, .evalbot/old.json?)")
    assert ("create it there with: evalbot baseline evals --actuals runs/pr.json --output .evalbot/baselin.json"
            in captured.out)
    assert "evalbot: warning: no baseline at HEAD:.evalbot/baselin.json (did you mean" in captured.err


def test_a_baseline_the_working_tree_creates_at_ref_path_is_not_missing(
        repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The honest control: the change commits its first baseline (absent at REF, present in the working tree)."""
    assert main(["baseline", "evals", "--actuals", "runs/main.json", *REPLAY, "--output", ".evalbot/first.json"],
                env={}) == 0
    code = main(["compare", "evals", "--actuals", "runs/main.json", *REPLAY, "--baseline", "HEAD:.evalbot/first.json"],
                env={})
    out = capsys.readouterr().out
    assert "this PR creates .evalbot/first.json" in out and "did you mean" not in out
    assert code == 0, out


@pytest.mark.parametrize("suffix", [".yaml", ".yml"])
def test_a_yaml_config_beside_an_eval_set_is_named_not_silently_ignored(
        suffix: str, proj: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The YAML config's threshold would have passed the case; ADK's default criteria apply, and the notice says so."""
    folder = proj / "evals" / "orders"
    (folder / "test_config.json").unlink()
    (folder / f"test_config{suffix}").write_text("criteria:\n  tool_trajectory_avg_score: 0.1\n")
    assert main(["run", "evals/orders", "--actuals", "runs/pr.json"], env={}) == 1
    out = capsys.readouterr().out
    assert (f"      NOTE evals/orders/test_config{suffix} is not read: only test_config.json is read (ADK's format, "
            "JSON); ADK's default criteria apply. Convert it to test_config.json") in out.splitlines()


def test_a_yaml_config_next_to_a_json_one_says_which_applies(proj: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (proj / "evals" / "orders" / "test_config.yaml").write_text("criteria: {}\n")
    main(["run", "evals/orders", "--actuals", "runs/pr.json"], env={})
    assert ("NOTE evals/orders/test_config.yaml is not read: only test_config.json is read (ADK's format, JSON); "
            "test_config.json beside it applies.") in capsys.readouterr().out


def test_with_an_explicit_config_a_yaml_one_beside_is_not_mentioned(
        proj: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (proj / "evals" / "orders" / "test_config.yaml").write_text("criteria: {}\n")
    main(["run", "evals/orders", "--actuals", "runs/pr.json", "--config", "evals/orders/test_config.json"], env={})
    assert "test_config.yaml" not in capsys.readouterr().out


@pytest.mark.parametrize(("name", "json_name"), [("orders.evalset.yaml", "orders.evalset.json"),
                                                 ("orders.yml", "orders.evalset.json")])
def test_an_eval_set_in_yaml_given_explicitly_is_exit_2_naming_it(
        name: str, json_name: str, proj: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (proj / name).write_text("eval_set_id: orders\neval_cases: []\n")
    assert main(["run", name, "--actuals", "runs/pr.json"], env={}) == 2
    out = capsys.readouterr().out
    assert (f"      ERROR {name}: eval sets are JSON (ADK's format); YAML is not read: convert it to JSON "
            f"({json_name})") in out.splitlines()
    assert "invalid JSON" not in out


def test_a_folder_of_yaml_eval_sets_says_why_none_was_found(proj: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (proj / "yaml-evals").mkdir()
    (proj / "yaml-evals" / "a.evalset.yaml").write_text("eval_set_id: a\n")
    (proj / "yaml-evals" / "test_config.yaml").write_text("criteria: {}\n")
    assert main(["run", "yaml-evals", "--actuals", "runs/pr.json"], env={}) == 2
    assert ("ERROR yaml-evals: directory holds no *.evalset.json or *.test.json file (it holds 1 YAML file(s): eval "
            "sets are JSON, ADK's format; YAML is not read)") in capsys.readouterr().out.splitlines()


def test_an_eval_set_with_no_case_is_exit_2_naming_it(proj: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (proj / "evals" / "empty").mkdir()
    (proj / "evals" / "empty" / "empty.evalset.json").write_text('{"eval_set_id": "empty", "eval_cases": []}')
    assert main(["run", "evals/empty"], env={}) == 2
    assert ("      ERROR evals/empty/empty.evalset.json:/eval_cases the eval set holds no case, so nothing would be "
            "measured; add at least one eval case, or leave the file out of the run") in capsys.readouterr().out


def test_compare_of_an_empty_eval_set_is_never_green(proj: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """It was "✅ no regressions" (exit 0) without a baseline; with one, six removed cases hid the cause."""
    (proj / "empty.evalset.json").write_text('{"eval_set_id": "empty", "eval_cases": []}')
    for baseline in ("none.json", ".evalbot/baseline.json"):
        assert main(["compare", "empty.evalset.json", "--baseline", baseline], env={}) == 2
        out = capsys.readouterr().out
        assert out.splitlines()[1] == (
            "### ⚠️ evalbot: invalid input: empty.evalset.json:/eval\\_cases: the eval set holds no case, so nothing "
            "would be measured; add at least one eval case, or leave the file out of the run")
        assert not [w for w in REMOVALS if w in out]


def test_a_wrong_eval_set_path_in_compare_is_the_headline_and_removes_nothing(
        proj: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["compare", "evals/orders", "evals/faqq", "--actuals", "runs/pr.json", *REPLAY,
                 "--baseline", ".evalbot/baseline.json"], env={}) == 2
    out = capsys.readouterr().out
    assert out.splitlines()[1] == "### ⚠️ evalbot: invalid input: evals/faqq: no such file or directory"
    assert ("1 eval set(s) of the baseline (faq) not compared: this run's input is invalid, so whether they were "
            "removed is not known; fix the input and run again") in out
    assert not [w for w in REMOVALS if w in out]


def test_several_input_problems_name_the_first_and_count_the_rest(
        proj: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["compare", "evals/nope1", "evals/nope2", "evals/orders", "--actuals", "runs/pr.json", *REPLAY,
                 "--baseline", "none.json"], env={}) == 2
    assert capsys.readouterr().out.splitlines()[1] == (
        "### ⚠️ evalbot: invalid input: evals/nope1: no such file or directory · 1 more problem(s)")


def test_a_run_that_measured_nothing_does_not_pass(capsys: pytest.CaptureFixture[str]) -> None:
    """No case at all (and nothing carried from main): could not measure (exit 3), never a pass."""
    passed = Gate(verdict="passed", exit_code=0)
    gate = measured_nothing(passed, cases=0)
    assert (gate.verdict, gate.exit_code, gate.reasons) == ("error", 3, [NOTHING_MEASURED])
    assert measured_nothing(passed, cases=1) is passed
    assert measured_nothing(passed, cases=0, carried=4) is passed  # --only-affected carried main's results
    blocked = Gate(verdict="blocked", exit_code=1)
    assert measured_nothing(blocked, cases=0) is blocked
    args = argparse.Namespace(report=None, html=None, judge_failures=None, paths=[], config=None, shard=None)
    assert show_report(args, Report()) == 3
    assert capsys.readouterr().err == f"evalbot: could not measure, not passing: {NOTHING_MEASURED}\n"
    assert show_report(argparse.Namespace(**{**vars(args), "shard": Shard(2, 2)}), Report()) == 0  # a job's part


def test_the_headline_of_a_run_that_measured_nothing(capsys: pytest.CaptureFixture[str]) -> None:
    comparison = compare(current=Report(), baseline=None, policy=GatePolicy())
    comparison.gate = measured_nothing(comparison.gate, 0)
    assert render_comment(comparison, marker="").splitlines()[0] == (
        "### ⛔ evalbot: could not measure, not passing: nothing measured")


def test_a_misspelt_ref_names_the_closest_branches(repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Exit 3 as before (nothing could be read at it), said once, with a "did you mean" among the branches."""
    git(repo, "branch", "release")
    assert main([*COMPARE, "--baseline", "mian:.evalbot/baseline.json"], env={}) == 3
    captured = capsys.readouterr()
    said = ("'mian' is no branch, tag or commit in this repository (did you mean main?); if it exists on the remote, "
            "fetch it (git fetch origin mian, or actions/checkout with fetch-depth: 0)")
    assert captured.out.splitlines()[1] == "### ⛔ evalbot: could not measure, not passing: baseline unreadable"
    assert captured.err.count(said) == 1 and captured.out.count(said) == 1
    assert "git show failed" not in captured.err + captured.out and "ls-tree" not in captured.err + captured.out


def test_a_baseline_ref_that_is_not_an_ancestor_of_head_is_warned_about(
        repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    git(repo, "checkout", "-q", "-b", "experiment")
    git(repo, "commit", "-q", "--allow-empty", "-m", "elsewhere")
    git(repo, "checkout", "-q", "main")
    git(repo, "commit", "-q", "--allow-empty", "-m", "main moves on")
    warning = ("experiment is not an ancestor of HEAD: its baseline was measured on another line of history, not on "
               "the commit this change is based on; compare with the base branch (e.g. --baseline origin/main:PATH)")
    assert main([*COMPARE, "--baseline", "experiment:.evalbot/baseline.json"], env={}) == 1  # still blocks
    captured = capsys.readouterr()
    assert f"evalbot: warning: {warning}\n" in captured.err and f"> ⚠️ **{warning}**" in captured.out
    assert main([*COMPARE, "--baseline", "HEAD~1:.evalbot/baseline.json"], env={}) == 1  # an ancestor: no warning
    assert "not an ancestor" not in capsys.readouterr().err


FAILING = "Failing cases:"


def failing_lines(out: str) -> list[str]:
    """The lines listed under "Failing cases:" in `evalbot run`'s output."""
    tail = out.split(FAILING + "\n", 1)[1]
    return [line for line in tail.splitlines() if line.startswith("  ")]


def test_an_eval_set_given_as_actuals_is_one_line(proj: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", "evals", "--actuals", "evals/orders/orders.evalset.json"], env={}) == 2
    out = capsys.readouterr().out
    assert out.splitlines()[0] == (
        "ERROR evals/orders/orders.evalset.json: this file is an eval set, not a recorded run: name it as an eval set "
        "PATH; --actuals takes the agent's recorded runs (ADK's *.evalset_result.json, {eval_id: [invocations]} or "
        "a Vertex dataset), or let evalbot run the agent with --agent")
    assert failing_lines(out) == [
        "  ERROR 6 case(s): no run: --actuals evals/orders/orders.evalset.json could not be used (see its error "
        "above) (faq / store_hours, faq / return_window, orders / refund_damaged_item, …)"]
    assert "no actual invocations" not in out


def test_a_missing_actuals_file_is_reported_once_and_its_cases_counted_in_one_line(
        proj: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", "evals", "--actuals", "runs/nope.json"], env={}) == 2
    out = capsys.readouterr().out
    assert out.count("runs/nope.json: file not found") == 1
    assert failing_lines(out) == [
        "  ERROR 6 case(s): no run: --actuals runs/nope.json could not be used (see its error above) (faq / "
        "store_hours, faq / return_window, orders / refund_damaged_item, …)"]


def test_a_case_missing_from_a_good_actuals_file_still_names_its_id(
        proj: Path, capsys: pytest.CaptureFixture[str]) -> None:
    runs = json.loads((proj / "runs" / "pr.json").read_text())
    del runs["store_hours"]
    (proj / "runs" / "less.json").write_text(json.dumps(runs))
    assert main(["run", "evals/faq", "--actuals", "runs/less.json", *REPLAY], env={}) == 2
    assert failing_lines(capsys.readouterr().out)[0].startswith(
        "  ERROR faq / store_hours: no actual invocations for eval_id 'store_hours' of eval set 'faq' in runs/less.json")


def test_a_misconfigured_criterion_counts_its_cases_in_one_line(
        proj: Path, capsys: pytest.CaptureFixture[str]) -> None:
    misspell_trajectory_criterion(proj)
    assert main(["run", "evals/orders", "--actuals", "runs/pr.json"], env={}) == 2
    out = capsys.readouterr().out
    assert out.count("unknown criterion 'tool_trajectory_avg_scor'") == 1
    assert failing_lines(out) == [
        "  ERROR 3 case(s): tool_trajectory_avg_scor: not configured correctly (the eval set's error says why) "
        "(orders / refund_damaged_item, orders / track_package, orders / cancel_order)",
        "  ERROR orders / gift_card_balance: tool_trajectory_avg_scor: not configured correctly (the eval set's error "
        "says why); response_match_score 0.250 < 0.500"]


def test_a_missing_openai_package_is_said_without_a_traceback(proj: Path) -> None:
    """The judge's client cannot be built: the message (with the install command) once per affected line, no
    traceback; the criteria that need no judge are still scored."""
    script = ("import sys; sys.modules['openai'] = None\n"  # as when the package is not installed
              "from evalbot.cli.commands import main\n"
              "sys.exit(main(['run', 'evals', '--actuals', 'runs/pr.json']))\n")
    env = {**os.environ, "OPENAI_BASE_URL": "http://127.0.0.1:9/v1", "PYTHONPATH": str(ROOT)}
    for name in ("GOOGLE_API_KEY", "GEMINI_API_KEY", "OPENAI_API_KEY", "EVALBOT_JUDGE_CACHE"):
        env.pop(name, None)
    done = subprocess.run([sys.executable, "-c", script], cwd=proj, env=env, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 2, done.stdout + done.stderr
    assert "Traceback" not in done.stdout + done.stderr
    lines = failing_lines(done.stdout)
    assert lines[0].startswith("  ERROR 2 case(s): final_response_match_v2: the OpenAI judge (OPENAI_BASE_URL is set) "
                               "needs the openai package: ")
    assert lines[0].endswith(" (faq / store_hours, faq / return_window)")
    assert lines[1:] == ["  FAIL  orders / refund_damaged_item: tool_trajectory_avg_score 0.000 < 1.000",
                         "  FAIL  orders / gift_card_balance: tool_trajectory_avg_score 0.000 < 1.000; "
                         "response_match_score 0.250 < 0.500"]


def test_the_same_error_lines_over_jobs_as_in_one_process(proj: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """run --jobs adds up the jobs' lines into the same grouped lines one process prints."""
    argv = ["run", "evals", "--actuals", "runs/nope.json"]
    assert main(argv, env={}) == 2
    one = capsys.readouterr().out
    assert main([*argv, "--jobs", "2"], env=dict(os.environ)) == 2
    assert capsys.readouterr().out == one


def error_section(text: str) -> str:
    """The "Could not be evaluated" section of a comment or job summary."""
    start = text.index("<details open><summary><b>Could not be evaluated")
    return text[start:text.index("\n</details>\n", start)]


NO_RUN = "no run: --actuals runs/nope.json could not be used (see its error above)"


def test_an_unusable_actuals_file_is_one_line_in_the_comment_and_summary(
        proj: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The six cases it leaves without a run: the reason once, each case named, no detail block per case."""
    assert main(["compare", "evals", "--actuals", "runs/nope.json", "--comment", "c.md", "--summary", "s.md"],
                env={}) == 2
    capsys.readouterr()
    for name in ("c.md", "s.md"):
        section = error_section((proj / name).read_text())
        assert section.splitlines()[2:] == [
            f"- **6 cases, one reason**: {NO_RUN} — faq / store\\_hours, faq / return\\_window, orders / "
            "refund\\_damaged\\_item, orders / track\\_package, orders / cancel\\_order, orders / gift\\_card\\_balance",
        ], section
        assert "Could not be evaluated (6)" in section and section.count("no run:") == 1


def test_a_misconfigured_criterion_is_one_line_in_the_comment_beside_a_case_with_its_own_failure(
        proj: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """As the console's lines: the three cases the criterion alone leaves unevaluated share one line; the case that
    also fails another criterion keeps its details."""
    misspell_trajectory_criterion(proj)
    assert main(["compare", "evals/orders", "--actuals", "runs/pr.json", "--comment", "c.md", "--summary", "s.md"],
                env={}) == 2
    capsys.readouterr()
    reason = "tool\\_trajectory\\_avg\\_scor: not configured correctly (the eval set's error says why)"
    for name in ("c.md", "s.md"):
        section = error_section((proj / name).read_text())
        lines = section.splitlines()
        assert lines[2] == (f"- **3 cases, one reason**: {reason} — orders / refund\\_damaged\\_item, orders / "
                            "track\\_package, orders / cancel\\_order"), section
        assert lines[4].startswith("<details open><summary><b>orders / gift_card_balance</b>")
        assert section.count(reason) == 2 and "<b>orders / refund_damaged_item</b>" not in section
