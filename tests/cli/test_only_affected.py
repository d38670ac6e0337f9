"""``evalbot compare --only-affected``: only the eval sets the change can affect (main's ``affected_by``) are scored;
the others keep main's results, carried from the baseline, counted apart in the headline and never reported as
removed, new or regressed. Real git repositories in tmp_path; the PR's runs hold only the affected eval sets, as
the agent step of a workflow that ran ``evalbot plan`` leaves them."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.fakes.cli_project import cli
from tests.fakes.selective import NAMES, change, commit_main, git, pr_runs, write_repo

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")

BASE = ".evalbot/baseline.json"
AT_MAIN = ("--baseline", f"main:{BASE}")
COMMIT = "abc123"


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> Path:
    """main: three eval sets, their baseline (every case passed); branch pr checked out."""
    write_repo(tmp_path)
    monkeypatch.chdir(tmp_path)
    code, _, err = cli(capsys, "baseline", "evals", "--actuals", "runs/main.json", "--output", BASE,
                       "--commit", COMMIT, "--created-at", "2025-06-01T00:00:00+00:00")
    assert code == 0, err
    commit_main(tmp_path)
    return tmp_path


def compare(capsys: pytest.CaptureFixture[str], runs: str, *extra: str) -> tuple[int, str, str]:
    return cli(capsys, "compare", "evals", "--actuals", runs, *AT_MAIN, "--only-affected", *extra)


def headline(out: str) -> str:
    return out.splitlines()[1]


def test_only_the_affected_eval_set_is_scored_and_the_others_are_carried(
    repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    change(repo, "agents/billing/agent.py")
    runs = pr_runs(repo, ["billing"])
    code, out, err = compare(capsys, runs, "--report", "report.json")
    assert code == 0, out
    assert headline(out) == ("### ✅ evalbot: no regressions · 2 of 3 eval sets unaffected: carried from main at "
                             f"{COMMIT[:12]}"), headline(out)
    assert "2 of 3 unaffected, their 4 case(s) carried from main's baseline" in out
    assert "orders, search" in out
    for word in ("removed", "new", "regressed"):
        assert word not in out.lower().replace("no regressions", ""), (word, out)
    report = json.loads((repo / "report.json").read_text())
    assert [es["eval_set_id"] for es in report["eval_sets"]] == ["billing"]
    assert "only-affected: 1 of 3 eval set(s) affected; 2 carried from main" in err


def test_a_regression_in_an_affected_eval_set_still_blocks(repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    change(repo, "agents/billing/agent.py")
    code, out, _ = compare(capsys, pr_runs(repo, ["billing"], broken=["billing-1"]))
    assert code == 1, out
    assert headline(out).startswith("### ❌ evalbot: blocked: 1 regressed"), headline(out)
    assert headline(out).endswith(f"2 of 3 eval sets unaffected: carried from main at {COMMIT[:12]}")
    assert "billing-1" in out and "removed" not in out


def test_without_the_flag_the_same_runs_do_not_pass(repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The contrast: scoring every eval set with the affected ones' runs leaves the others without runs; never a
    plain pass, and nothing carried."""
    change(repo, "agents/billing/agent.py")
    code, out, _ = cli(capsys, "compare", "evals", "--actuals", pr_runs(repo, ["billing"]), *AT_MAIN)
    assert code != 0 and "carried" not in out, out


def test_an_unmapped_change_scores_everything(repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    change(repo, "Dockerfile", "FROM scratch\n")
    code, out, err = compare(capsys, pr_runs(repo, list(NAMES), broken=["orders-0"]))
    assert code == 1 and "carried" not in out, out
    assert "Dockerfile changed: no affected_by mapping covers it" in err
    assert "orders-0" in out


def test_an_eval_set_this_change_deletes_is_still_reported_removed(
    repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Carrying never hides a removal: the deleted eval set's files changed outside every remaining eval set's
    folder, so everything is scored, and main's eval set the run lacks is a yardstick change."""
    change(repo, "agents/billing/agent.py")
    git(repo, "rm", "-q", "-r", "evals/orders")
    git(repo, "commit", "-q", "-m", "drop orders")
    code, out, _ = compare(capsys, pr_runs(repo, ["billing", "search"]))
    assert code == 1, out
    assert "yardstick change" in headline(out) and "orders" in out and "carried" not in out


def test_a_change_to_a_carried_candidates_own_files_makes_it_affected(
    repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """An eval set whose own files changed is scored, never carried, even when its agent did not change."""
    change(repo, "agents/billing/agent.py")
    change(repo, "evals/search/NOTES.md", "what these cases check\n")
    code, out, _ = compare(capsys, pr_runs(repo, ["billing", "search"]))
    assert code == 0, out
    assert headline(out).endswith(f"1 of 3 eval sets unaffected: carried from main at {COMMIT[:12]}"), out
    assert "their 2 case(s) carried" in out and ": orders." in out


def test_only_affected_needs_a_ref_baseline(repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _out, err = cli(capsys, "compare", "evals", "--actuals", "runs/main.json", "--baseline", BASE,
                         "--only-affected")
    assert code == 2 and "--only-affected" in err and "REF:PATH" in err, err


def test_an_unaffected_eval_set_main_never_measured_is_said_so(
    repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """An eval set main's baseline does not hold (added to main after the baseline) cannot be carried: a warning
    says it was neither scored nor carried."""
    git(repo, "checkout", "-q", "main")
    write_repo(repo, [*NAMES, "extra"])  # main gains an eval set without refreshing the baseline
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "extra")
    git(repo, "checkout", "-q", "-B", "pr2")
    change(repo, "agents/billing/agent.py")
    code, out, _ = compare(capsys, pr_runs(repo, ["billing"]))
    assert code == 0, out
    assert "1 eval set(s) this change cannot affect are not in main's baseline, so they were neither scored nor " \
           "carried: extra" in out
    assert headline(out).endswith(f"2 of 4 eval sets unaffected: carried from main at {COMMIT[:12]}")
