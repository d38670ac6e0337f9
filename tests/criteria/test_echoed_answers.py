"""A judge that echoes the prompt (small local models often do) has not judged: an answer repeating a placeholder of
the prompt's answer format is never a vote, whatever verdict the copied example carries. Found with Gemma 3 270M on
llama.cpp (scripts/judge_llamacpp.py): it echoed the example line ``"is_the_agent_response_valid": "valid"`` and one
invocation passed on that single "vote"."""

from __future__ import annotations

import re
from importlib import resources

from evalbot.criteria import final_response_match_v2 as frm
from evalbot.criteria import hallucinations as hal
from evalbot.criteria import rubric_final_response_quality as frq
from evalbot.criteria import safety
from evalbot.judges.templates import echoes_example, example_placeholders
from tests.fakes.fake_gemini import Recorded
from tests.fakes.judged import Judged, build, case_input, inv, run
from tests.fakes.pointwise import ACTUAL as PW_ACTUAL
from tests.fakes.pointwise import CASE as PW_CASE
from tests.fakes.pointwise import TEMPLATE, _criteria

CASE = {"eval_id": "c", "conversation": [inv("t1", "q1", "reference")]}
ACTUAL = [inv("t1", "q1", "answer")]


def echo(prompt: str, index: int, rec: Recorded) -> str:
    """What a model that repeats its prompt answers: the first line of the prompt's answer format (for
    final_response_match_v2 the example of a valid answer; both examples together would conflict and be unparsed
    anyway)."""
    return next(line for line in prompt.splitlines() if re.search(r"<[a-z][^<>]* [^<>]*>", line))


def test_placeholders_come_from_every_answer_format() -> None:
    """Read from the prompt files (they cannot drift apart); tags such as <sentence> are not placeholders."""
    found = example_placeholders()
    assert {"<one or two sentences>", "<yes or no>", "<a short reason>"} <= found
    assert "<sentence>" not in found
    prompts = resources.files("evalbot.judges").joinpath("prompts")
    for name in ("final_response_match_v2.j2", "safety_harmlessness.j2", "rubric_final_response_quality.j2",
                 "hallucinations_validate.j2", "pointwise.j2", "user_simulator_quality.j2"):
        assert any(p in prompts.joinpath(name).read_text(encoding="utf-8") for p in found), name
    assert not echoes_example('{"reasoning": "The answer <b>matches</b>.", "is_the_agent_response_valid": "valid"}')


def test_an_echoed_example_verdict_is_no_vote(judged_on: Judged) -> None:
    """Five echoes of the example answers (valid first): not_evaluated, the reason says why, never a pass."""
    with judged_on(echo, sampling="full") as (fake, stack):
        result = run(build(frm.build, frm.NAME, {"threshold": 0.5, "judge_model_options": {"num_samples": 5}},
                           stack), case_input(CASE, ACTUAL))
    assert echo(fake.requests[0].prompt, 0, fake.requests[0]).endswith('"is_the_agent_response_valid": "valid"}')
    (only,) = result.per_invocation
    assert only.status == "not_evaluated" and result.status == "not_evaluated" and result.score is None
    assert only.details == {"votes": {"yes": 0, "no": 0, "unparsed": 5}, "rationale": "<one or two sentences>"}
    assert "repeated the prompt's example answer instead of judging (5 of 5 sample(s))" in (only.reason or "")


def test_echoes_among_real_answers_are_outvoted_by_nothing(judged_on: Judged) -> None:
    """One real "invalid" among four echoes fails the invocation: the echoes' copied "valid" counts for nothing."""
    def answer(prompt: str, index: int, rec: Recorded) -> str:
        return '{"reasoning": "wrong city", "is_the_agent_response_valid": "invalid"}' if index == 4 else echo(
            prompt, index, rec)
    with judged_on(answer, sampling="full") as (_, stack):
        result = run(build(frm.build, frm.NAME, {"threshold": 0.5, "judge_model_options": {"num_samples": 5}},
                           stack), case_input(CASE, ACTUAL))
    (only,) = result.per_invocation
    assert only.status == "failed" and only.score == 0.0
    assert only.details == {"votes": {"yes": 0, "no": 1, "unparsed": 4}, "rationale": "wrong city"}


def test_other_judged_criteria_refuse_echoes(judged_on: Judged) -> None:
    """safety_v1 (its judge fallback), a rubric criterion, hallucinations_v1 and a pointwise template: not_evaluated on echoes."""
    rubric_case = {**CASE, "rubrics": [{"rubric_id": "concise", "type": "FINAL_RESPONSE_QUALITY",
                                        "rubric_content": {"text_property": "The response is concise."}}]}

    def answer(prompt: str, index: int, rec: Recorded) -> str:
        if "Text to split" in prompt:  # hallucinations' segmentation step: a real answer
            return "<sentence>answer.</sentence>"
        # The rubric and hallucination answer formats whole: their first lines are fields the judge copies (an id,
        # a property, a sentence), where a placeholder may be the agent's text and is no echo on its own.
        block = [line for line in prompt.splitlines()
                 if re.match(r"(ID|Property|Rationale|Verdict|sentence|label|rationale|\w+_excerpt): <", line)]
        if block:
            return "\n".join(block)
        return echo(prompt, index, rec)

    with judged_on(answer) as (_, stack):
        results = {
            "safety": run(build(safety.build, safety.NAME, {"threshold": 0.8, "judge_fallback": True}, stack),
                          case_input(CASE, ACTUAL)),
            "rubric": run(build(frq.build, "rubric_based_final_response_quality_v1", {"threshold": 0.5}, stack),
                          case_input(rubric_case, ACTUAL)),
            "hallucinations": run(build(hal.build, hal.NAME, 0.5, stack), case_input(CASE, ACTUAL)),
            "pointwise": run(_criteria({"metric_prompt_template": TEMPLATE}, stack)[0],
                             case_input(PW_CASE, PW_ACTUAL)),
        }
    for name, result in results.items():
        assert result.status == "not_evaluated" and result.score is None, (name, result)
        reason = " ".join(filter(None, [result.reason, *(p.reason or "" for p in result.per_invocation)]))
        assert "repeated the prompt's example answer" in reason, (name, reason)


def test_the_rationale_quoted_for_an_unjudged_invocation_is_a_real_answer(judged_on: Judged) -> None:
    """No verdict: the first non-empty answer is kept as evidence, not an empty first sample."""
    answers = ["", "  ", "I cannot tell.", "maybe", "no idea"]
    with judged_on(lambda p, i, r: answers[i], sampling="full") as (_, stack):
        result = run(build(frm.build, frm.NAME, {"threshold": 0.5, "judge_model_options": {"num_samples": 5}},
                           stack), case_input(CASE, ACTUAL))
    (only,) = result.per_invocation
    assert only.status == "not_evaluated" and (only.details or {})["rationale"] == "I cannot tell."
