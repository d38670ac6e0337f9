"""``evalbot compare`` and the yardstick: a PR that regresses a case and changes what it is measured with blocks by
default, naming the change; ``yardstick_changes: warn`` passes with a warning; ``--baseline REF:PATH`` takes the
working tree's changed PATH as the PR's baseline update and accepts what the run confirms (the local accept loop)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.fakes.builders import Writer, case, eval_set, inv
from tests.fakes.cli_project import CONFIG, PR, REFUND, cli, make_baseline, proj

__all__ = ["proj"]  # the fixture (tests/fakes/cli_project.py)

BASE = ".evalbot/baseline.json"
CASES = {
    "refund": case("refund", inv("refund A17", "Refunded 25 dollars.", REFUND)),
    "track": case("track", inv("where is B42", "It is in Lyon.", [("track", {"id": "B42"})])),
}


def with_cases(write: Writer, *cases: dict[str, Any], set_id: str = "orders") -> None:
    write("evals/orders.evalset.json", eval_set(set_id, *cases))


def lower_thresholds(write: Writer) -> None:
    write("evals/test_config.json", {"criteria": {"tool_trajectory_avg_score": 0.0, "response_match_score": 0.0}})


def drop_a_criterion(write: Writer) -> None:
    write("evals/test_config.json", {"criteria": {"response_match_score": 0.5}})


def custom_metric_overrides_a_built_in(write: Writer) -> None:
    write("repo_metrics/__init__.py", "")
    write("repo_metrics/lenient.py", "def always(instance):\n    return {'score': 1.0}\n")
    write("evals/test_config.json", {
        **CONFIG, "custom_metrics": {"tool_trajectory_avg_score": {"code_config": {"name": "repo_metrics.lenient.always"}}},
    })


def delete_the_regressed_case(write: Writer) -> None:
    with_cases(write, CASES["track"])


def delete_a_case_failing_on_main(write: Writer) -> None:
    with_cases(write, CASES["refund"])


def rename_the_case(write: Writer) -> None:
    with_cases(write, {**CASES["refund"], "eval_id": "refund_2"}, CASES["track"])
    write("runs/pr.json", {"refund_2": PR["refund"], "track": PR["track"]})


def rename_the_eval_set(write: Writer) -> None:
    with_cases(write, CASES["refund"], CASES["track"], set_id="orders_v2")


def expect_the_bad_answer(write: Writer) -> None:
    with_cases(write, case("refund", *PR["refund"]), CASES["track"])


ROWS: list[tuple[Callable[[Writer], None], str, str]] = [
    (lower_thresholds, "2 yardstick changes", "orders / response\\_match\\_score: threshold 0.500 → 0.000, …"),
    (drop_a_criterion, "1 yardstick change", "orders / tool\\_trajectory\\_avg\\_score: criterion removed from the config"),
    (custom_metric_overrides_a_built_in, "1 yardstick change",
     "the built-in criterion is now computed by this PR's custom metric repo\\_metrics.lenient.always"),
    (delete_the_regressed_case, "1 yardstick change", "orders / refund: case removed"),
    (rename_the_case, "1 yardstick change", "orders / refund: renamed to refund\\_2"),
    (rename_the_eval_set, "1 yardstick change", "orders: eval set renamed to orders\\_v2"),
    (expect_the_bad_answer, "1 yardstick change", "orders / refund: expected conversation (or scenario) changed"),
]


@pytest.mark.parametrize(("change", "count", "named"), ROWS, ids=[row[0].__name__ for row in ROWS])
def test_a_yardstick_change_blocks_and_warn_passes(
    proj: Path, write: Writer, capsys: pytest.CaptureFixture[str], change: Callable[[Writer], None], count: str,
    named: str,
) -> None:
    make_baseline(capsys)
    change(write)
    code, out, _ = cli(capsys, "compare", "evals", "--actuals", "runs/pr.json")
    headline = out.splitlines()[1]
    assert code == 1, out
    assert headline.startswith("### ❌ evalbot: blocked: ") and f"⚠️ {count}" in headline and named in headline, \
        headline
    config = json.loads((proj / "evals/test_config.json").read_text(encoding="utf-8"))
    write("evals/test_config.json", {**config, "evalbot": {"yardstick_changes": "warn"}})
    code, out, _ = cli(capsys, "compare", "evals", "--actuals", "runs/pr.json")
    headline = out.splitlines()[1]
    assert code == 0, out
    assert headline.startswith("### ⚠️ evalbot: ") and f"⚠️ {count}" in headline and named in headline, headline
    assert "no regressions ·" in headline or "regressed" not in headline


def test_a_removed_case_that_failed_on_main_is_said_so(proj: Path, write: Writer,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    make_baseline(capsys)
    delete_a_case_failing_on_main(write)
    _, out, _ = cli(capsys, "compare", "evals", "--actuals", "runs/pr.json")
    assert "| orders / track | case removed | failed on main | not run |" in out
    assert "blocked: 1 regressed · ⚠️ 1 yardstick change (orders / track: case removed)" in out.splitlines()[1]


@pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")
def test_the_local_accept_loop(proj: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Blocked against main's committed baseline; refresh the working tree's baseline from the PR run; the same
    compare now takes it as the update (a notice names the file) and accepts the regression; a forged history in it
    blocks again with the difference named."""
    def git(*args: str) -> None:
        subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=proj, check=True,
                       capture_output=True)

    make_baseline(capsys)
    git("init", "-q", "-b", "main")
    git("add", BASE)
    git("commit", "-q", "-m", "baseline")
    compare = ("compare", "--baseline", f"main:{BASE}", "evals", "--actuals", "runs/pr.json")
    code, out, err = cli(capsys, *compare)
    assert code == 1 and "blocked: 1 regressed" in out.splitlines()[1] and "taken as" not in err
    code, _, err = cli(capsys, "baseline", "evals", "--actuals", "runs/pr.json", "--output", BASE)
    assert code == 0, err
    code, out, err = cli(capsys, *compare)
    assert code == 0, out
    assert out.splitlines()[1] == ("### ✅ evalbot: accepted by this PR's baseline update: 1 regression "
                                   "(orders/refund) · 1 fixed")
    notice = f"{BASE} in the working tree differs from main:{BASE}: taken as this change's baseline update"
    assert notice in err and notice.replace("_", "\\_") in out
    assert "Accepted by this PR's baseline update (1)" in out and "<b>orders / refund</b>" in out
    data = json.loads((proj / BASE).read_text(encoding="utf-8"))
    assert data["eval_sets"]["orders"]["cases"]["refund"]["history"] == "PF"  # main's history, continued
    data["eval_sets"]["orders"]["cases"]["refund"]["history"] = "FPF"  # invent flips: "flaky" would never block
    (proj / BASE).write_text(json.dumps(data), encoding="utf-8")
    code, out, _ = cli(capsys, *compare)
    assert code == 1, out
    assert "stale: main's baseline changed orders/refund since this update was written" in out


@pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")
@pytest.mark.parametrize("hostile", ["symlink", "fifo", "not-utf8", "not-json"])
def test_a_hostile_working_tree_update_is_refused_and_blocks(
    proj: Path, capsys: pytest.CaptureFixture[str], hostile: str
) -> None:
    """The working tree's baseline is untrusted like the PR's: a symlink to /dev/zero or a FIFO is never read (it
    would never end), bytes that are not UTF-8 or JSON are not an update; each is named and blocks (exit 1)."""
    make_baseline(capsys)
    subprocess.run(["git", "init", "-q", "-b", "main"], cwd=proj, check=True, capture_output=True)
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", "add", BASE], cwd=proj, check=True)
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "b"], cwd=proj,
                   check=True)
    target = proj / BASE
    target.unlink()
    if hostile == "symlink":
        target.symlink_to("/dev/zero")
    elif hostile == "fifo":
        os.mkfifo(target)
    else:
        target.write_bytes(b"\xff\xfe{" if hostile == "not-utf8" else b"{not json")
    code, out, err = cli(capsys, "compare", "--baseline", f"main:{BASE}", "evals", "--actuals", "runs/main.json")
    assert code == 1, out + err
    assert "does not match this run" in out.splitlines()[1] and "the file cannot be used: " in out


def test_accept_refuses_what_it_cannot_write(proj: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """--accept names an entry of this run or of main's baseline, and needs main's baseline: otherwise exit 2 naming
    the flag, and nothing is written."""
    code, _, err = cli(capsys, "baseline", "evals", "--actuals", "runs/pr.json", "--accept", "orders/refund")
    assert code == 2 and "--accept writes main's baseline" in err and "--previous REF:PATH" in err
    assert not (proj / ".evalbot/baseline.json").exists()
    make_baseline(capsys)
    before = (proj / ".evalbot/baseline.json").read_text(encoding="utf-8")
    for entry, said in (("orders/nope", "no case 'nope'"), ("shop/*", "no eval set 'shop'")):
        code, _, err = cli(capsys, "baseline", "evals", "--actuals", "runs/pr.json", "--accept", entry)
        assert code == 2 and f"--accept {entry}: {said}" in err, err
    with pytest.raises(SystemExit) as exited:
        cli(capsys, "baseline", "evals", "--actuals", "runs/pr.json", "--accept", "refund")
    assert exited.value.code == 2 and "expected SET/CASE, SET/* or SET/*/CRITERION" in capsys.readouterr().err
    assert (proj / ".evalbot/baseline.json").read_text(encoding="utf-8") == before
    code, out, err = cli(capsys, "baseline", "evals", "--actuals", "runs/pr.json", "--accept", "orders/refund")
    assert code == 0 and "orders/refund: passed → failed recorded" in err and "1 entry refreshed" in out
    after = json.loads((proj / ".evalbot/baseline.json").read_text(encoding="utf-8"))
    old = json.loads(before)
    assert after["eval_sets"]["orders"]["cases"]["track"] == old["eval_sets"]["orders"]["cases"]["track"]
    assert after["commit"] == old["commit"] and after["eval_sets"]["orders"]["cases"]["refund"]["history"] == "PF"


@pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")
def test_a_threshold_change_is_accepted_alone_and_an_accidental_regression_still_blocks(
    proj: Path, write: Writer, capsys: pytest.CaptureFixture[str]
) -> None:
    """The PR lowers response_match_score's threshold on purpose and regresses orders/refund by accident. The
    suggested command names the criterion (``orders/*/response_match_score``), not the whole eval set; accepting
    only that writes main's file with that criterion's entry changed, and the regression still blocks."""
    subprocess.run(["git", "init", "-q", "-b", "main"], cwd=proj, check=True)
    make_baseline(capsys)
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", "add", BASE], cwd=proj, check=True)
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "b"], cwd=proj, check=True)
    write("evals/test_config.json", {"criteria": {**CONFIG["criteria"], "response_match_score": 0.3}})
    compare = ("compare", "--baseline", f"main:{BASE}", "evals", "--actuals", "runs/pr.json")
    code, out, err = cli(capsys, *compare)
    assert code == 1 and "response\\_match\\_score: threshold 0.500 → 0.300" in out.splitlines()[1], out
    assert "--accept orders/refund --accept 'orders/*/response_match_score'" in out + err, out + err
    assert "--accept 'orders/*' " not in out + err
    before = json.loads((proj / BASE).read_text(encoding="utf-8"))
    code, _, err = cli(capsys, "baseline", "evals", "--actuals", "runs/pr.json", "--accept",
                       "orders/*/response_match_score", "--previous", f"main:{BASE}", "--output", BASE)
    assert code == 0, err
    after = json.loads((proj / BASE).read_text(encoding="utf-8"))
    assert after["eval_sets"]["orders"]["cases"] == before["eval_sets"]["orders"]["cases"]
    assert after["eval_sets"]["orders"]["criteria"]["response_match_score"]["threshold"] == 0.3
    assert (after["eval_sets"]["orders"]["criteria"]["tool_trajectory_avg_score"]
            == before["eval_sets"]["orders"]["criteria"]["tool_trajectory_avg_score"])
    code, out, _ = cli(capsys, *compare)
    headline = out.splitlines()[1]
    assert code == 1 and headline.endswith("blocked: 1 regressed · 1 fixed · accepted by this PR's baseline update: "
                                           "1 lowered threshold"), headline
    assert "--accept orders/refund" in out and "--accept 'orders/*'" not in out
