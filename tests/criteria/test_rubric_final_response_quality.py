"""rubric_based_final_response_quality_v1: rubric selection, prompts, parsing and per-rubric evidence."""

from __future__ import annotations

from evalbot.criteria import rubric_final_response_quality as frq
from evalbot.criteria.judged_rubrics import normalize, parse_answer
from tests.fakes.judged import Judged, build, case_input, inv, run

NAME = "rubric_based_final_response_quality_v1"
CONCISE = {"rubric_id": "concise", "rubric_content": {"text_property": "The response is concise."}}


def _answer(verdict: str) -> str:
    return f"ID: concise\nProperty: The response is concise.\nRationale: five words\nVerdict: {verdict}"


def test_parse_answer_pairs_ids_and_discards_inconsistent_answers() -> None:
    """IDs attach to the property they precede; a missing Verdict line voids the whole answer."""
    good = parse_answer("ID: a\nProperty: P1\nRationale: r1\nVerdict: yes\n\nProperty: P2\nRationale: r2\nVerdict: no")
    assert [(p.rubric_id, p.prop, p.score) for p in good] == [("a", "P1", 1.0), (None, "P2", 0.0)]
    assert parse_answer("ID: a\nProperty: P1\nRationale: r1\n**Verdict:** yes") == []


def test_normalize_strips_decoration() -> None:
    """Markdown, smart quotes and spacing do not prevent matching a property."""
    assert normalize("**The  response’s tone — polite.**") == normalize("The response's tone - polite.")


def test_typed_rubrics_only_and_prompt_content(judged_on: Judged) -> None:
    """Untyped and other-typed case rubrics are not asked about; the prompt shows the answer and tool steps."""
    case = {"eval_id": "c", "rubrics": [
        {"rubric_id": "untyped", "rubric_content": {"text_property": "UNTYPED RUBRIC"}},
        {"rubric_id": "tool", "type": "TOOL_USE_QUALITY", "rubric_content": {"text_property": "TOOL RUBRIC"}},
        {"rubric_id": "typed", "type": "FINAL_RESPONSE_QUALITY", "rubric_content": {"text_property": "TYPED"}},
    ], "conversation": [inv("t1", "weather?", "x")]}
    actual = [inv("t1", "weather?", "Sunny in Paris.", intermediate_data={
        "tool_uses": [{"name": "get_weather", "args": {"city": "Paris"}, "id": "c1"}],
        "tool_responses": [{"name": "get_weather", "response": {"sky": "clear"}, "id": "c1"}]})]
    with judged_on(lambda p, i, r: _answer("yes") + "\n\nID: typed\nProperty: TYPED\nRationale: ok\nVerdict: no") as (
            fake, stack):
        result = run(build(frq.build, NAME, {"threshold": 0.5, "rubrics": [CONCISE]}, stack), case_input(case, actual))
    prompt = fake.requests[0].prompt
    assert "[id: concise]" in prompt and "[id: typed]" in prompt
    assert "UNTYPED RUBRIC" not in prompt and "TOOL RUBRIC" not in prompt
    assert '"city": "Paris"' in prompt and '"sky": "clear"' in prompt and "Sunny in Paris." in prompt
    assert result.score == 0.5
    rubrics = {r["rubric_id"]: r for r in (result.per_invocation[0].details or {})["rubrics"]}
    assert rubrics["concise"]["rationale"] == "five words" and rubrics["concise"]["votes"] == {"yes": 5, "no": 0}


def test_duplicate_rubric_id_is_reported(judged_on: Judged) -> None:
    """The same id with different texts in two scopes makes the case not_evaluated with the reason."""
    case = {"eval_id": "c", "rubrics": [{"rubric_id": "concise", "type": "FINAL_RESPONSE_QUALITY",
                                         "rubric_content": {"text_property": "Different text."}}],
            "conversation": [inv("t1", "q", "x")]}
    with judged_on() as (fake, stack):
        result = run(build(frq.build, NAME, {"threshold": 0.5, "rubrics": [CONCISE]}, stack),
                     case_input(case, [inv("t1", "q", "y")]))
    assert result.status == "not_evaluated" and "defined twice" in (result.reason or "")
    assert fake.requests == []


def test_unmatched_and_unparsed_answers_are_explained(judged_on: Judged) -> None:
    """Verdicts on unknown rubrics are listed; no usable verdict makes the invocation not_evaluated."""
    with judged_on(lambda p, i, r: "ID: other\nProperty: Something else\nRationale: r\nVerdict: yes") as (_, stack):
        result = run(build(frq.build, NAME, {"threshold": 0.5, "rubrics": [CONCISE]}, stack),
                     case_input({"eval_id": "c", "conversation": [inv("t1", "q", "x")]}, [inv("t1", "q", "y")]))
    inv_score = result.per_invocation[0]
    assert inv_score.status == "not_evaluated" and "no rubric verdict" in (inv_score.reason or "")
    assert (inv_score.details or {})["unmatched"] == ["other"]
