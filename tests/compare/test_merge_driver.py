"""The baseline's merge driver: main's refresh whole, plus the entries the branch changed (histories continued on
main's); an entry both sides changed differently is a conflict; a side that is no baseline is one too."""

from __future__ import annotations

from pathlib import Path

import pytest

from evalbot.cli.commands import main
from evalbot.compare.baseline import Baseline, build_baseline, dump_baseline, parse_baseline, with_accepted
from evalbot.compare.merge_driver import merge_baselines
from evalbot.results import Report
from tests.fakes.reports import RESP, TRAJ, case, eval_set, metric, report


def run(a: float = 1.0, b: float = 1.0, fp_a: str = "fp-a") -> Report:
    return report(eval_set("s", [case("a", {TRAJ: metric(a), RESP: metric(0.9, 0.5)}, fingerprint=fp_a),
                                 case("b", {TRAJ: metric(b), RESP: metric(0.9, 0.5)})]))


def refresh(r: Report, previous: Baseline | None, n: int) -> Baseline:
    b = build_baseline(r, commit=f"{n:040x}", created_at=f"2027-01-{n:02d}T00:00:00+00:00", previous=previous)
    return parse_baseline(dump_baseline(b), "baseline.json")


def test_mains_refreshes_and_the_branchs_accepted_entry_merge() -> None:
    ancestor = refresh(run(), None, 1)
    branch, _ = with_accepted(ancestor, refresh(run(a=0.0), ancestor, 2), [("s", "a")])  # accepts a's regression
    main_now = refresh(run(), refresh(run(), ancestor, 3), 4)
    for ours, theirs in ((branch, main_now), (main_now, branch)):  # git merge main, or the PR merged into main
        merged = merge_baselines(ancestor, ours, theirs)
        assert merged.conflicts == [] and merged.taken == ["s/a"]
        b = merged.baseline
        assert (b.commit, b.created_at) == (main_now.commit, main_now.created_at)
        assert b.eval_sets["s"].cases["b"] == main_now.eval_sets["s"].cases["b"]
        assert b.eval_sets["s"].cases["a"].status == "failed"
        assert b.eval_sets["s"].cases["a"].history == "PPPF"  # main's three outcomes, then the branch's


def test_an_entry_both_sides_changed_differently_is_a_conflict() -> None:
    ancestor = refresh(run(), None, 1)
    branch, _ = with_accepted(ancestor, refresh(run(a=0.0), ancestor, 2), [("s", "a")])
    main_now = refresh(run(fp_a="fp-a2"), ancestor, 3)  # main redefined a
    assert merge_baselines(ancestor, branch, main_now).conflicts == ["s/a"]


def test_the_cli_driver_writes_ours_and_refuses_what_is_no_baseline(tmp_path: Path,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    ancestor = refresh(run(), None, 1)
    branch, _ = with_accepted(ancestor, refresh(run(a=0.0), ancestor, 2), [("s", "a")])
    main_now = refresh(run(), ancestor, 3)
    o, a, b = tmp_path / "o", tmp_path / "a", tmp_path / "b"
    for path, baseline in ((o, ancestor), (a, branch), (b, main_now)):
        path.write_text(dump_baseline(baseline), encoding="utf-8")
    assert main(["baseline", "--merge-driver", str(o), str(a), str(b)], env={}) == 0
    merged = parse_baseline(a.read_text(encoding="utf-8"), "a")
    assert merged.commit == main_now.commit and merged.eval_sets["s"].cases["a"].history == "PPF"
    assert main(["baseline", "--merge-driver", str(o), str(a)], env={}) == 2
    b.write_text("<<<<<<< not json", encoding="utf-8")
    before = a.read_text(encoding="utf-8")
    assert main(["baseline", "--merge-driver", str(o), str(a), str(b)], env={}) == 1
    assert a.read_text(encoding="utf-8") == before  # left as it was: git reports the conflict
    b.unlink()
    b.symlink_to("/dev/zero")
    assert main(["baseline", "--merge-driver", str(o), str(a), str(b)], env={}) == 1
    assert "merge driver" in capsys.readouterr().err


def test_accept_names_an_entry_that_exists(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    previous = refresh(run(), None, 1)
    with pytest.raises(KeyError, match="no case 'zz'"):
        with_accepted(previous, refresh(run(), previous, 2), [("s", "zz")])
    with pytest.raises(KeyError, match="no eval set 'nope'"):
        with_accepted(previous, refresh(run(), previous, 2), [("nope", "*")])


def test_accepting_one_criterion_writes_only_its_entry() -> None:
    """``SET/*/CRITERION``: main's baseline with that criterion's entry from the run; every case, and the other
    criteria, stay main's (a case the run regressed is not accepted with it)."""
    previous = refresh(run(), None, 1)
    fresh = refresh(run(a=0.0), previous, 2)
    written, names = with_accepted(previous, fresh, [("s", f"*/{TRAJ}")])
    assert names == [f"s/*/{TRAJ}"]
    assert written.eval_sets["s"].cases == previous.eval_sets["s"].cases
    assert written.eval_sets["s"].criteria[TRAJ] == fresh.eval_sets["s"].criteria[TRAJ]
    assert written.eval_sets["s"].criteria[RESP] == previous.eval_sets["s"].criteria[RESP]
    assert list(written.eval_sets["s"].criteria) == list(previous.eval_sets["s"].criteria)  # main's order kept
    with pytest.raises(KeyError, match="no criterion 'nope'"):
        with_accepted(previous, fresh, [("s", "*/nope")])
    with pytest.raises(KeyError, match="no eval set 't'"):
        with_accepted(previous, fresh, [("t", f"*/{TRAJ}")])
