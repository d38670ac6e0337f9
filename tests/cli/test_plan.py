"""``evalbot plan EVALS --base REF`` on real git repositories: the eval sets a change can affect, one per line
(``--json``: with the reasons), under the gate policy's ``affected_by`` as it is at ``REF``."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.fakes.cli_project import cli
from tests.fakes.selective import NAMES, change, commit_main, git, write_repo

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")

SETS = sorted(f"evals/{n}/{n}.evalset.json" for n in NAMES)  # billing, orders, search: discovery order


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    write_repo(tmp_path)
    commit_main(tmp_path)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def plan(capsys: pytest.CaptureFixture[str], *extra: str, base: str = "main") -> tuple[int, list[str], str]:
    code, out, err = cli(capsys, "plan", "evals", "--base", base, *extra)
    return code, out.splitlines(), err


def test_a_mapped_path_changed_affects_that_eval_set(repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    change(repo, "agents/billing/agent.py")
    assert plan(capsys)[:2] == (0, [SETS[0]])


def test_an_unmapped_shared_file_affects_every_eval_set(repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    change(repo, "agents/billing/agent.py")
    change(repo, "Dockerfile", "FROM scratch\n")
    code, lines, err = plan(capsys)
    assert (code, lines) == (0, SETS)
    assert "every eval set is affected: Dockerfile changed: no affected_by mapping covers it" in err


def test_a_mapped_shared_file_affects_the_eval_sets_mapping_it(repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    change(repo, "shared/util.py")
    assert plan(capsys)[1] == SETS  # every folder maps shared/**


def test_an_eval_set_file_changed_affects_that_eval_set(repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    change(repo, "evals/search/test_config.json", json.dumps({
        "criteria": {"response_match_score": 0.9},
        "evalbot": json.loads((repo / "evals/billing/test_config.json").read_text())["evalbot"]}))
    assert plan(capsys)[1] == [SETS[2]]
    change(repo, "evals/orders/orders.evalset.json", "{}", commit=False)  # staged, not committed: still a change
    assert plan(capsys)[1] == [SETS[1], SETS[2]]


def test_no_mapping_affects_everything(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    write_repo(tmp_path, section={})
    commit_main(tmp_path)
    monkeypatch.chdir(tmp_path)
    change(tmp_path, "agents/billing/agent.py")
    code, lines, err = plan(capsys)
    assert (code, lines) == (0, SETS) and "no affected_by mapping" in err


def test_the_mapping_is_the_bases_not_the_changes(repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A PR narrowing its own affected_by (so that its change affects nothing) is still planned by main's."""
    section = {"affected_by": {f"evals/{n}": ["agents/nothing/**"] for n in NAMES}}
    for n in NAMES:
        change(repo, f"evals/{n}/test_config.json", json.dumps({"criteria": {"response_match_score": 0.5},
                                                                  "evalbot": section}), commit=False)
    git(repo, "commit", "-q", "-m", "narrow")
    change(repo, "agents/billing/agent.py")
    assert plan(capsys)[1] == SETS  # each config changed in its folder: affected by main's rule


def test_json_gives_every_eval_set_with_its_reasons(repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    change(repo, "agents/billing/agent.py")
    code, lines, _ = plan(capsys, "--json")
    data = json.loads("\n".join(lines))
    assert code == 0 and data["affected"] == [SETS[0]] and data["carried"] == SETS[1:]
    assert data["eval_sets"][0] == {"path": SETS[0], "affected": True,
                                    "reasons": ["agents/billing/agent.py changed (affected_by agents/billing/**)"]}
    assert data["eval_sets"][1]["affected"] is False and data["changed_files"] == 1 and data["everything"] is None


def test_changes_are_counted_from_the_merge_base(repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """main moving on after the branch point (another agent changed there) is not this change's."""
    change(repo, "agents/billing/agent.py")
    git(repo, "checkout", "-q", "main")
    change(repo, "agents/orders/agent.py")
    git(repo, "checkout", "-q", "pr")
    assert plan(capsys)[1] == [SETS[0]]


def test_files_git_does_not_track_are_no_change(repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """What earlier workflow steps wrote (the agent's runs, reports) must not make everything affected."""
    change(repo, "agents/billing/agent.py")
    (repo / "runs" / "pr.json").write_text("{}", encoding="utf-8")
    (repo / ".evalbot-out").mkdir()
    (repo / ".evalbot-out" / "report.json").write_text("{}", encoding="utf-8")
    assert plan(capsys)[1] == [SETS[0]]


def test_from_a_subfolder_paths_are_shown_as_given(repo: Path, monkeypatch: pytest.MonkeyPatch,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    change(repo, "agents/search/agent.py")
    monkeypatch.chdir(repo / "evals")
    code, out, _ = cli(capsys, "plan", ".", "--base", "main")
    assert (code, out.splitlines()) == (0, ["search/search.evalset.json"])


def test_a_base_git_does_not_have_affects_everything(repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The base's history missing (a shallow clone) or a base that is no commit: the policy cannot be read, so
    nothing is left out."""
    change(repo, "agents/billing/agent.py")
    code, lines, err = plan(capsys, base="no-such-branch")
    assert (code, lines) == (0, SETS) and "could not be read" in err


@pytest.mark.parametrize("base", ["--output=x", "-x", ""])
def test_a_base_that_git_would_read_as_an_option_is_refused(repo: Path, base: str,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        cli(capsys, "plan", "evals", f"--base={base}")
    err = capsys.readouterr().err
    assert exited.value.code == 2 and "argument --base: expected a branch" in err and not (repo / "x").exists(), err


def test_outside_a_repository_plan_is_an_input_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    write_repo(tmp_path)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path.parent))
    code, _out, err = cli(capsys, "plan", "evals", "--base", "main")
    assert code == 2 and "not in a git repository" in err, err


def test_file_names_with_spaces_quotes_and_unicode_are_read_whole(repo: Path,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    change(repo, 'agents/billing/we"ird na\tme é.py')
    assert plan(capsys)[1] == [SETS[0]]
    change(repo, "stray\nline.txt")  # a newline in a name: -z keeps it one name, unmapped
    assert plan(capsys)[1] == SETS


def test_the_plan_takes_under_a_second(repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    change(repo, "agents/billing/agent.py")
    done = subprocess.run([sys.executable, "-c", "import time, sys; t = time.perf_counter();"
                           "from evalbot.cli.commands import main; code = main(['plan', 'evals', '--base', 'main']);"
                           "print(time.perf_counter() - t, file=sys.stderr); sys.exit(code)"],
                          cwd=repo, capture_output=True, text=True, check=False)
    assert done.returncode == 0 and done.stdout.splitlines() == [SETS[0]], done.stderr
    assert float(done.stderr.strip().splitlines()[-1]) < 5  # < 1 s on a quiet machine (bench_selective measures it)


def test_the_baseline_file_changed_affects_every_eval_set(repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The baseline is every eval set's yardstick: a change to it (a PR's baseline update) affects them all."""
    change(repo, "agents/billing/agent.py")
    change(repo, ".evalbot/baseline.json", "{}")
    code, lines, err = plan(capsys)
    assert (code, lines) == (0, SETS) and ".evalbot/baseline.json changed, which applies to every eval set" in err
