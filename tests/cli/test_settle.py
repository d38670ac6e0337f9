"""Settling split votes (``resample_split``): a judged flip on a split vote gets more samples and the larger vote
decides it; through ``evalbot compare``, the real google-genai client and the fake Gemini server."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from evalbot.cli.commands import main
from evalbot.compare.settle import split_flip_indices
from evalbot.compare.votes import Votes
from evalbot.criteria.base import BallotBox
from evalbot.criteria.judged import Ballot
from evalbot.turnpack import Packed
from tests.fakes.builders import Writer, case, eval_set, inv
from tests.fakes.fake_gemini import FakeGemini, TaggedResponder

V = '{"reasoning": "same facts", "is_the_agent_response_valid": "valid"}'
I = '{"reasoning": "a fact differs", "is_the_agent_response_valid": "invalid"}'  # noqa: E741
CONFIG: dict[str, Any] = {"criteria": {"final_response_match_v2": {
    "threshold": 0.5, "judge_model_options": {"num_samples": 5}}}}
MAIN = [V, I, V, I, V]  # 3-2: passes on a split vote
PR_FIRST = [I, V, I, V, I]  # 2-3: fails on a split vote, so the flip is inconclusive


def scripts(extra: list[str], main: list[str]) -> dict[str, list[str]]:
    return {"main": main, "pr": PR_FIRST + extra}


@pytest.fixture
def proj(write: Writer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """One judged case; the main run's answer is tagged @@main@@, the PR's @@pr@@."""
    write("evals/test_config.json", CONFIG)
    write("evals/s.evalset.json", eval_set("s", case("c", inv("q", "reference"))))
    write("runs/main.json", {"c": [inv("q", "answer @@main@@")]})
    write("runs/pr.json", {"c": [inv("q", "answer @@pr@@")]})
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.fixture
def fake() -> Iterator[FakeGemini]:
    with FakeGemini() as server:
        yield server


def _compare(fake: FakeGemini, extra: list[str], capsys: pytest.CaptureFixture[str], *flags: str,
             on_main: list[str] = MAIN, baseline_flags: tuple[str, ...] = ()) -> tuple[int, str, list[int], dict[str, Any]]:
    env = {"GOOGLE_API_KEY": "k", "GOOGLE_GEMINI_BASE_URL": fake.url}
    fake.responder = TaggedResponder(scripts(extra, on_main))
    code = main(["baseline", "evals", "--actuals", "runs/main.json", "--output", "base.json", "--commit", "abc",
                 *baseline_flags], env=env)
    assert code == 0
    fake.reset()
    fake.responder = TaggedResponder(scripts(extra, on_main))
    capsys.readouterr()
    code = main(["compare", "--baseline", "base.json", "evals", "--actuals", "runs/pr.json", "--report", "r.json",
                 *flags], env=env)
    out = capsys.readouterr().out
    report = json.loads(Path("r.json").read_text(encoding="utf-8"))
    return code, out, [r.candidate_count for r in fake.requests], report


def _votes(report: dict[str, Any]) -> dict[str, Any]:
    metric = report["eval_sets"][0]["cases"][0]["metrics"]["final_response_match_v2"]
    return dict(metric["per_invocation"][0]["details"]["votes"])


def test_a_settled_vote_decides_the_flip(proj: Path, fake: FakeGemini, capsys: pytest.CaptureFixture[str]) -> None:
    """Baseline 5-0 (full sampling); now 2-3, then 0-10 more: 2-13 is a significant fail that differs significantly
    from the baseline's vote, so the flip is a regression that blocks; the comment shows the final split and the
    p-value; the judge was asked the 10 more samples in batches of at most 8."""
    code, out, counts, report = _compare(fake, [I] * 10, capsys, on_main=[V] * 5,
                                         baseline_flags=("--sampling", "full"))
    assert counts[:2] == [3, 2] and sorted(counts[2:]) == [2, 8]
    assert _votes(report) == {"yes": 2, "no": 13, "unparsed": 0, "resampled": 10, "settled": True}
    assert code == 1 and "Regressed (1)" in out and "Inconclusive" not in out
    assert "judge votes (pass–fail) 2–13 (after 10 more samples), baseline 5–0, Fisher exact p = 0.001" in out
    assert report["usage"]["total"]["requests"] == 4


def test_a_noisy_baseline_cannot_be_overturned(proj: Path, fake: FakeGemini,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    """Baseline 3-2; now 2-3, then 0-10 more: 2-13 is a clear fail, but the baseline's own vote was split, and the
    two votes do not differ significantly (Fisher p = 0.07): the flip stays inconclusive, never a false alarm."""
    code, out, _, report = _compare(fake, [I] * 10, capsys)
    assert _votes(report) == {"yes": 2, "no": 13, "unparsed": 0, "resampled": 10, "settled": False}
    assert code == 0 and "Inconclusive, not blocking (1)" in out and "Fisher exact p = 0.073" in out


def test_a_still_split_vote_stays_inconclusive(proj: Path, fake: FakeGemini,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    """5-5 more: 7-8 fails but its majority is not significant, so the flip stays inconclusive (not blocking)."""
    code, out, counts, report = _compare(fake, [V, I] * 5, capsys)
    assert counts[:2] == [3, 2] and sorted(counts[2:]) == [2, 8] and code == 0
    assert _votes(report) == {"yes": 7, "no": 8, "unparsed": 0, "resampled": 10, "settled": False}
    assert "Inconclusive, not blocking (1)" in out and "7–8 (after 10 more samples), baseline 3–2" in out


def test_the_larger_vote_can_undo_the_flip(proj: Path, fake: FakeGemini, capsys: pytest.CaptureFixture[str]) -> None:
    """9-1 more: 11-4 passes like the baseline; the case is unchanged and the report's totals follow."""
    code, out, _, report = _compare(fake, [V] * 9 + [I], capsys)
    assert code == 0 and "Inconclusive" not in out and "Regressed" not in out
    assert report["eval_sets"][0]["cases"][0]["status"] == "passed" and report["totals"]["passed"] == 1
    assert report["eval_sets"][0]["cases"][0]["metrics"]["final_response_match_v2"]["score"] == 1.0


@pytest.mark.parametrize("how", [("--resample-split", "0"), ("config",)])
def test_resample_split_zero_disables_it(how: tuple[str, ...], proj: Path, write: Writer, fake: FakeGemini,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    """With 0 (flag or config) no extra sample is asked and the flip stays inconclusive."""
    flags: tuple[str, ...] = how
    if how == ("config",):
        write("evals/test_config.json", {**CONFIG, "evalbot": {"resample_split": 0}})
        flags = ()
    code, out, counts, report = _compare(fake, [I] * 10, capsys, *flags)
    assert counts == [3, 2] and code == 0 and "Inconclusive, not blocking (1)" in out
    assert _votes(report) == {"yes": 2, "no": 3, "unparsed": 0}


def test_config_sets_the_number_of_samples(proj: Path, write: Writer, fake: FakeGemini,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    """evalbot.resample_split 4: four more samples; 2-7 is not a significant majority (sign test p = 0.18)."""
    write("evals/test_config.json", {**CONFIG, "evalbot": {"resample_split": 4}})
    code, out, counts, report = _compare(fake, [I] * 4, capsys)
    assert counts == [3, 2, 4]
    assert _votes(report) == {"yes": 2, "no": 7, "unparsed": 0, "resampled": 4, "settled": False}
    assert code == 0 and "Inconclusive, not blocking (1)" in out


@pytest.mark.parametrize("value", [-1, 101, "ten", 2.5, True])
def test_bad_resample_split_is_an_input_error(value: Any, proj: Path, write: Writer, fake: FakeGemini,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    """A bad evalbot.resample_split is exit 2 naming the file and pointer."""
    write("evals/test_config.json", {**CONFIG, "evalbot": {"resample_split": value}})
    code = main(["compare", "--baseline", "none.json", "evals", "--actuals", "runs/pr.json"], env={})
    assert code == 2 and "evals/test_config.json:/evalbot/resample_split" in capsys.readouterr().err


def test_judge_failure_while_settling_keeps_the_vote(proj: Path, fake: FakeGemini,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    """If the extra samples cannot be had, the vote and the inconclusive flip stay, with the reason recorded."""
    code, out, _, report = _compare(fake, [{"error": 400, "message": "no more"}], capsys)  # type: ignore[list-item]
    assert code == 0 and "Inconclusive, not blocking (1)" in out
    details = report["eval_sets"][0]["cases"][0]["metrics"]["final_response_match_v2"]["per_invocation"][0]["details"]
    assert details["votes"] == {"yes": 2, "no": 3, "unparsed": 0} and "400" in details["resample_error"]


def _refresh(fake: FakeGemini, extra: list[str], *flags: str) -> tuple[list[int], dict[str, Any]]:
    """Baseline 5-0 from the main run (full sampling), then a refresh of base.json from the PR's run, whose vote
    is 2-3 and then ``extra``: the requests of the refresh and the refreshed baseline's case."""
    env = {"GOOGLE_API_KEY": "k", "GOOGLE_GEMINI_BASE_URL": fake.url}
    fake.responder = TaggedResponder(scripts(extra, [V] * 5))
    assert main(["baseline", "evals", "--actuals", "runs/main.json", "--output", "base.json", "--commit", "a1",
                 "--sampling", "full"], env=env) == 0
    fake.reset()
    code = main(["baseline", "evals", "--actuals", "runs/pr.json", "--output", "base.json", "--commit", "b2", *flags],
                env=env)
    assert code == 0
    case_ = json.loads(Path("base.json").read_text(encoding="utf-8"))["eval_sets"]["s"]["cases"]["c"]
    return [r.candidate_count for r in fake.requests], case_


def test_a_baseline_refresh_settles_a_split_flip(proj: Path, fake: FakeGemini) -> None:
    """On main too: the refresh's 2-3 flipped against the previous baseline's 5-0 on a split vote, so it gets 10
    more samples in one request, and the baseline records the larger vote (2-13) and the outcome it decides."""
    counts, case_ = _refresh(fake, [I] * 10)
    assert counts[:2] == [3, 2] and sorted(counts[2:]) == [2, 8]
    metric = case_["metrics"]["final_response_match_v2"]
    assert metric["votes"] == [{"yes": 2, "no": 13, "resampled": 10, "settled": True}]
    assert metric["vote_history"] == "5-0 2-13"
    assert case_["status"] == "failed" and case_["history"] == "PF"


def test_a_baseline_refresh_records_the_flip_undone(proj: Path, fake: FakeGemini) -> None:
    """9-1 more: 11-4 passes like the previous baseline; the history shows no flip, so a later pull request whose
    vote fails this case is not excused as flaky by one noisy vote on main."""
    counts, case_ = _refresh(fake, [V] * 9 + [I])
    assert counts[:2] == [3, 2] and sorted(counts[2:]) == [2, 8]
    assert case_["status"] == "passed" and case_["history"] == "PP"
    assert case_["metrics"]["final_response_match_v2"]["vote_history"] == "5-0 11-4"


def test_a_baseline_refresh_without_settling(proj: Path, fake: FakeGemini) -> None:
    """--resample-split 0: the refresh keeps its plain 2-3 vote and the flip goes into the history."""
    counts, case_ = _refresh(fake, [I] * 10, "--resample-split", "0")
    assert counts == [3, 2]
    assert case_["metrics"]["final_response_match_v2"]["votes"] == [{"yes": 2, "no": 3}]
    assert case_["history"] == "PF"


def test_a_first_baseline_has_nothing_to_settle_against(proj: Path, fake: FakeGemini) -> None:
    """No previous baseline (or --reset-history): no flip to settle, no extra sample asked."""
    env = {"GOOGLE_API_KEY": "k", "GOOGLE_GEMINI_BASE_URL": fake.url}
    fake.responder = TaggedResponder(scripts([I] * 10, MAIN))
    assert main(["baseline", "evals", "--actuals", "runs/pr.json", "--output", "base.json", "--commit", "b2"],
                env=env) == 0
    assert [r.candidate_count for r in fake.requests] == [3, 2]


def test_split_flip_indices() -> None:
    """Invocations whose majority flipped with a split on either side; else every split current vote."""
    def v(yes: int, no: int) -> Votes:
        return Votes(yes=yes, no=no)

    assert split_flip_indices([v(3, 2), v(5, 0), v(5, 0)], [v(2, 3), v(0, 5), v(5, 0)]) == [0]
    assert split_flip_indices([v(5, 0)], [v(0, 3)]) == []  # a unanimous flip is not noise
    assert split_flip_indices([None, None], [v(2, 3), v(3, 0)]) == [0]
    assert split_flip_indices([v(3, 2)], [None]) == []


def test_a_ballot_cast_twice_is_never_resampled() -> None:
    """A case run several times (--num-runs) has no single vote to settle."""
    box = BallotBox()
    ballot = Ballot(None, "p", lambda t: None, ())  # type: ignore[arg-type]
    box.put(("s", "c", "m", 0), ballot)
    assert box.get(("s", "c", "m", 0)) is ballot
    box.put(("s", "c", "m", 0), ballot)
    assert box.get(("s", "c", "m", 0)) is None and len(box) == 1


@pytest.mark.parametrize(("given", "extra_requests"), [({}, [8, 2]), ({"resample-split": "0"}, []),
                                                        ({"sampling": "full"}, [8, 2])])
def test_the_action_settles_with_its_inputs(given: dict[str, str], extra_requests: list[int], proj: Path,
                                            fake: FakeGemini, capsys: pytest.CaptureFixture[str]) -> None:
    """The Action's first stage runs the same stage with the policy its inputs override (sampling, resample-split)."""
    from evalbot.action.first_stage import evaluate_inputs
    from evalbot.action.settings import inputs_from_env
    from evalbot.action.workspace import Workspace, policy_and_template
    from evalbot.compare.baseline import parse_baseline
    from evalbot.pipeline import load_inputs

    _compare(fake, [I] * 10, capsys, on_main=[V] * 5, baseline_flags=("--sampling", "full"))
    baseline = parse_baseline(Path("base.json").read_text(encoding="utf-8"), "base.json")
    fake.reset()
    fake.responder = TaggedResponder(scripts([I] * 10, [V] * 5))
    inputs = inputs_from_env({"INPUT_EVAL-SETS": "evals", "INPUT_ACTUALS": "runs/pr.json",
                              **{f"INPUT_{k.upper()}": v for k, v in given.items()}})
    ws = Workspace(proj)
    loaded = load_inputs(["evals"])
    policy, _ = policy_and_template(inputs, ws, loaded.settings())
    report = evaluate_inputs({"GOOGLE_API_KEY": "k", "GOOGLE_GEMINI_BASE_URL": fake.url}, inputs, ws, loaded,
                             policy, baseline)
    first = [5] if given.get("sampling") == "full" else [3, 2]
    asked = [r.candidate_count for r in fake.requests]  # the batches of a resample go out concurrently
    assert asked[: len(first)] == first and sorted(asked[len(first) :]) == sorted(extra_requests)
    assert _votes(report.model_dump(mode="json"))["no"] == 3 + sum(extra_requests)
    kept = [m.per_invocation for c in report.eval_sets[0].cases for m in c.metrics.values()]
    assert any(isinstance(p, Packed) and isinstance(p._packed, int) for p in kept)  # in the Action's spill file
