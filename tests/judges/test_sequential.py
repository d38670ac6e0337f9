"""Sequential sampling for majority-vote criteria: fewer samples, the verdict the full set gives, cache by index."""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

import pytest

from evalbot.criteria import final_response_match_v2 as frm
from evalbot.criteria.judged import MajorityRule, majority, majority_settled
from evalbot.judges.base import Sampling
from evalbot.results import MetricResult, UsageRow
from tests.fakes.fake_gemini import FakeGemini, TaggedResponder
from tests.fakes.judged import build, case_input, inv, judged, run

NAME = "final_response_match_v2"
V = '{"reasoning": "fine", "is_the_agent_response_valid": "valid"}'
I = '{"reasoning": "wrong", "is_the_agent_response_valid": "invalid"}'  # noqa: E741
U = "I cannot tell."  # no recognisable verdict: the sample does not vote

SCRIPTS: dict[str, list[str]] = {
    "unanimous_pass": [V, V, V, V, V],
    "unanimous_fail": [I, I, I, I, I],
    "pass_3_2_late": [V, I, V, I, V],  # 2-1 after three samples: the last two decide
    "fail_2_3_late": [V, I, V, I, I],
    "pass_3_2_early": [V, V, V, I, I],  # the first three decide; the full set is 3-2
    "fail_2_3_early": [I, I, I, V, V],
    "unparsed_then_pass": [U, V, V, V, I],
    "unparsed_tie_fails": [V, U, I, U, U],  # 1-1 over five: a tie fails
    "all_unparsed": [U, U, U, U, U],
    "unparsed_decides_late": [U, U, U, U, V],
}


def _settled_by_enumeration(scores: list[float | None], remaining: int) -> bool:
    verdict = majority(scores)
    return all(
        majority([*scores, *([1.0] * a), *([0.0] * b), *([None] * (remaining - a - b))]) == verdict
        for a in range(remaining + 1) for b in range(remaining - a + 1)
    )


def test_settled_means_no_missing_answers_could_change_the_majority() -> None:
    """The closed-form rule equals trying every pass/fail/unparseable answer to the missing samples."""
    for asked in range(0, 8):
        for votes in itertools.product([1.0, 0.0, None], repeat=asked):
            for remaining in range(0, 6):
                scores = list(votes)
                assert majority_settled(scores, remaining) == _settled_by_enumeration(scores, remaining), \
                    (scores, remaining)


@pytest.mark.parametrize(("num_samples", "first"), [(1, 1), (2, 2), (3, 2), (4, 3), (5, 3), (9, 5), (10, 6)])
def test_first_round_is_the_fewest_a_unanimous_vote_decides(num_samples: int, first: int) -> None:
    """3 of 5: a unanimous first round settles the vote whichever way it goes, and fewer samples could not."""
    rule = MajorityRule(frm.parse_verdict)
    assert rule.first_round(num_samples) == first
    assert rule.decided([V] * first, num_samples) and rule.decided([I] * first, num_samples)
    if first > 1:
        assert not rule.decided([V] * (first - 1), num_samples)


def _case(scripts: list[str]) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    expected = [inv(f"t{i}", f"question {i}", f"reference {i}") for i in range(len(scripts))]
    actual = [inv(f"t{i}", f"question {i}", f"answer @@{tag}@@") for i, tag in enumerate(scripts)]
    return {"eval_id": "c", "conversation": expected}, actual


def _judge(sampling: Sampling, scripts: list[str], cache: Path | None = None,
           num_samples: int = 5) -> tuple[MetricResult, FakeGemini, UsageRow]:
    responder = TaggedResponder({tag: SCRIPTS[tag] for tag in scripts})
    criterion = {"threshold": 0.5, "judge_model_options": {"num_samples": num_samples}}
    case, actual = _case(scripts)
    with judged(responder, sampling=sampling, cache_dir=cache) as (fake, stack):
        result = run(build(frm.build, NAME, criterion, stack), case_input(case, actual))
        usage = stack.usage_summary().total
    assert responder.unrouted == []
    return result, fake, usage


@pytest.mark.parametrize("tag", sorted(SCRIPTS))
def test_sequential_gives_the_full_verdict_for_fewer_samples(tag: str) -> None:
    """On every script the verdict (score and status) equals full sampling's; the report keeps the real vote of
    the samples asked; requests and output tokens are counted."""
    full, full_fake, full_usage = _judge("full", [tag])
    seq, seq_fake, seq_usage = _judge("sequential", [tag])
    (f,), (s,) = full.per_invocation, seq.per_invocation
    assert (s.score, s.status) == (f.score, f.status)
    assert (seq.score, seq.status) == (full.score, full.status)
    script = [frm.parse_verdict(t) for t in SCRIPTS[tag]]
    counts = [r.candidate_count for r in seq_fake.requests]
    assert [r.candidate_count for r in full_fake.requests] == [5]
    decided_early = majority_settled(script[:3], 2)
    assert counts == ([3] if decided_early else [3, 2])
    asked = script[: sum(counts)]
    want = {"yes": asked.count(1.0), "no": asked.count(0.0), "unparsed": asked.count(None)}
    assert (s.details or {}).get("votes", want) == want  # unparseable-only invocations are not_evaluated
    assert seq_usage.requests == len(counts) and full_usage.requests == 1
    assert seq_usage.saved_samples == 5 - sum(counts) and seq_usage.extra_requests == len(counts) - 1
    assert full_usage.saved_samples == 0 and full_usage.extra_requests == 0
    if decided_early:
        assert seq_usage.output_tokens < full_usage.output_tokens
    else:
        assert seq_usage.output_tokens == full_usage.output_tokens


def test_unanimous_and_split_invocations_in_one_case() -> None:
    """A case mixing scripts: the case score and statuses are full sampling's, with 3/5 + 5/5 samples asked."""
    tags = ["unanimous_pass", "pass_3_2_late", "fail_2_3_late", "unanimous_fail"]
    full, _, full_usage = _judge("full", tags)
    seq, seq_fake, seq_usage = _judge("sequential", tags)
    assert seq.score == full.score == 0.5 and seq.status == full.status
    assert [p.status for p in seq.per_invocation] == [p.status for p in full.per_invocation]
    assert sorted(r.candidate_count for r in seq_fake.requests) == [2, 2, 3, 3, 3, 3]
    assert seq_usage.saved_samples == 4 and full_usage.requests == 4 and seq_usage.requests == 6


def test_second_run_with_more_samples_asks_only_the_missing_ones(tmp_path: Path) -> None:
    """The cache keeps samples by index: a sequential run stores 3; a full run of 5 asks for 2; a later run of
    9 samples asks only for samples 5..8; a replayed old-style file (format 2, five samples) is served as it is."""
    seq, fake1, _ = _judge("sequential", ["unanimous_pass"], cache=tmp_path)
    assert [r.candidate_count for r in fake1.requests] == [3] and seq.status == "passed"
    (path,) = tmp_path.glob("*/*.json")
    assert sorted(json.loads(path.read_text(encoding="utf-8"))["samples"]) == ["0", "1", "2"]
    full, fake2, usage2 = _judge("full", ["unanimous_pass"], cache=tmp_path)
    assert [r.candidate_count for r in fake2.requests] == [2] and usage2.cached_samples == 3
    assert full.per_invocation[0].details == {"votes": {"yes": 5, "no": 0, "unparsed": 0}, "rationale": "fine"}
    again, fake3, usage3 = _judge("sequential", ["unanimous_pass"], cache=tmp_path)
    assert fake3.requests == [] and usage3.cached_samples == 3 and usage3.saved_samples == 2
    assert again.per_invocation[0].details == {"votes": {"yes": 3, "no": 0, "unparsed": 0}, "rationale": "fine"}
    more, fake4, _ = _judge("full", ["unanimous_pass"], cache=tmp_path, num_samples=9)
    assert [r.candidate_count for r in fake4.requests] == [4] and more.status == "passed"
    assert sorted(json.loads(path.read_text(encoding="utf-8"))["samples"], key=int) == [str(i) for i in range(9)]


def test_split_vote_read_from_an_existing_cache_file(tmp_path: Path) -> None:
    """A cache file written before sequential sampling (five samples, 2-1 after three) is served by index: no
    request, and the vote is the full set's."""
    _, fake1, _ = _judge("full", ["fail_2_3_late"], cache=tmp_path)
    assert len(fake1.requests) == 1
    (path,) = tmp_path.glob("*/*.json")
    data = json.loads(path.read_text(encoding="utf-8"))
    assert data["format"] == 2 and sorted(data["samples"]) == ["0", "1", "2", "3", "4"]
    result, fake2, usage = _judge("sequential", ["fail_2_3_late"], cache=tmp_path)
    assert fake2.requests == [] and usage.cached_samples == 5 and usage.extra_requests == 0
    assert result.per_invocation[0].details == {"votes": {"yes": 2, "no": 3, "unparsed": 0}, "rationale": "wrong"}


def test_a_failing_second_round_leaves_the_invocation_not_evaluated() -> None:
    """When the first samples do not decide and the rest cannot be had, the verdict is unknown, never guessed."""
    responder = TaggedResponder({"late": [V, I, V, {"error": 400, "message": "bad"}, V]})
    case, actual = _case(["late"])
    criterion = {"threshold": 0.5, "judge_model_options": {"num_samples": 5}}
    with judged(responder) as (fake, stack):
        result = run(build(frm.build, NAME, criterion, stack), case_input(case, actual))
    assert [r.candidate_count for r in fake.requests] == [3, 2]
    assert result.status == "not_evaluated" and "400" in (result.per_invocation[0].reason or "")


def test_averaging_criteria_still_ask_for_every_sample() -> None:
    """Rubric criteria average over samples: no stop rule, all five in one request."""
    from evalbot.criteria import rubric_final_response_quality as rubric

    answer = "ID: r1\nProperty: concise\nRationale: short\nVerdict: yes\n"
    criterion = {"threshold": 0.5, "judge_model_options": {"num_samples": 5},
                 "rubrics": [{"rubric_id": "r1", "rubric_content": {"text_property": "concise"}}]}
    case = {"eval_id": "c", "conversation": [inv("t0", "q", "ref")]}
    with judged(lambda p, i, r: answer) as (fake, stack):
        result = run(build(rubric.build, "rubric_based_final_response_quality_v1", criterion, stack),
                     case_input(case, [inv("t0", "q", "an answer")]))
    assert result.status == "passed" and [r.candidate_count for r in fake.requests] == [5]


def test_usage_report_keeps_the_samples_saved() -> None:
    """Report.usage carries saved_samples and extra_requests (absent from the JSON while 0); reading a report back
    derives the per-model rows with them."""
    from evalbot.judges.base import Usage
    from evalbot.judges.usage import UsageLedger
    from evalbot.results import JudgeUsage

    ledger = UsageLedger()
    ledger.record(NAME, "gemini-2.5-flash", Usage(400, 180, 1, 0, saved_samples=2))
    ledger.record(NAME, "gemini-2.5-flash", Usage(800, 300, 2, 0, extra_requests=1))
    summary = ledger.summary()
    data = json.loads(summary.model_dump_json())
    assert data["total"]["saved_samples"] == 2 and data["total"]["extra_requests"] == 1
    assert data["per_criterion"][NAME]["saved_samples"] == 2
    again = JudgeUsage.model_validate(data)
    assert again.per_model["gemini-2.5-flash"].saved_samples == 2
    assert again.per_model["gemini-2.5-flash"].extra_requests == 1
    plain = UsageLedger()
    plain.record(NAME, "gemini-2.5-flash", Usage(400, 300, 1))
    assert "saved_samples" not in json.loads(plain.summary().model_dump_json())["total"]
