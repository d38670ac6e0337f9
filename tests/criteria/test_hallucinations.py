"""hallucinations_v1: steps, context, parsing and honest failures."""

from __future__ import annotations

from evalbot.criteria import hallucinations as hal
from evalbot.formats.adk import Invocation
from tests.fakes.fake_gemini import FakeError, Recorded
from tests.fakes.judged import Judged, build, case_input, inv, run, text, unfence

NAME = "hallucinations_v1"
CASE = {"eval_id": "c", "conversation": [inv("t", "q", "r")]}


def _judge(prompt: str, index: int, rec: Recorded) -> str:
    if "Text to split" in prompt:
        body = unfence(prompt.split("Text to split:", 1)[1]).strip()
        return "\n".join(f"<sentence>{s.strip()}.</sentence>" for s in body.split(".") if s.strip())
    sentences = prompt.rsplit("Sentences to check:", 1)[1]
    blocks = []
    for s in hal.parse_sentences(sentences):
        label = "supported" if "20" in s else "unsupported"
        blocks.append(f"sentence: {s}\nlabel: {label}\nrationale: r\nsupporting_excerpt: null\n"
                      f"contradicting_excerpt: null")
    return "\n\n".join(blocks)


def test_parse_labels_reads_blocks() -> None:
    """Validator blocks are split at each 'sentence:' line; labels are lower-cased."""
    blocks = hal.parse_labels("sentence: A\nlabel: Supported\nrationale: x\nsupporting_excerpt: q\n"
                              "contradicting_excerpt: null\nsentence: B\nlabel: disputed\nrationale: y\n"
                              "supporting_excerpt: null\ncontradicting_excerpt: null")
    assert [(b["sentence"], b["label"]) for b in blocks] == [("A", "supported"), ("B", "disputed")]


def test_steps_follow_adk_order_and_context() -> None:
    """Intermediate texts are steps with only earlier events as context; the final step sees everything."""
    invocation = Invocation.model_validate(inv("t", "Weather?", "It is 20C.", intermediate_data={
        "invocation_events": [
            {"author": "a", "content": text("model", "Checking.")},
            {"author": "a", "content": {"role": "model", "parts": [
                {"function_call": {"name": "get_weather", "args": {"city": "Paris"}}}]}},
            {"author": "a", "content": {"role": "user", "parts": [
                {"function_response": {"name": "get_weather", "response": {"temp": 20}}}]}}]}))
    steps = hal.steps(invocation, intermediate=True)
    assert [s for s, _ in steps] == ["Checking.", "It is 20C."]
    assert "get_weather" not in steps[0][1] and '"temp": 20' in steps[1][1]
    assert [s for s, _ in hal.steps(invocation, intermediate=False)] == ["It is 20C."]


def test_scores_sentences_and_keeps_evidence(judged_on: Judged) -> None:
    """Each sentence's label counts; the step details keep sentences, labels and rationales."""
    actual = [inv("t", "Weather?", "It is 20C. It will snow.",
                  intermediate_data={"tool_uses": [{"name": "get_weather", "args": {}}],
                                     "tool_responses": [{"name": "get_weather", "response": {"temp": 20}}]})]
    with judged_on(_judge) as (fake, stack):
        result = run(build(hal.build, NAME, {"threshold": 0.6}, stack), case_input(CASE, actual))
    assert result.score == 0.5 and result.status == "failed"
    assert len(fake.requests) == 2 and all(r.candidate_count == 1 for r in fake.requests)
    assert '"temp": 20' in fake.requests[1].prompt  # hand-written tool responses are shown as context
    step = (result.per_invocation[0].details or {})["steps"][0]
    assert [s["label"] for s in step["sentences"]] == ["supported", "unsupported"]


def test_failed_step_makes_invocation_not_evaluated(judged_on: Judged) -> None:
    """A failed call on any step is reported, not dropped (ADK would score the remaining steps)."""
    def judge(prompt: str, index: int, rec: Recorded) -> str:
        if "Checking" in prompt and "Text to split" in prompt:
            raise FakeError(400, "segmenter down")
        return _judge(prompt, index, rec)

    actual = [inv("t", "Weather?", "It is 20C.", intermediate_data={"invocation_events": [
        {"author": "a", "content": text("model", "Checking.")}]})]
    with judged_on(judge) as (_, stack):
        result = run(build(hal.build, NAME, {"threshold": 0.5, "evaluate_intermediate_nl_responses": True}, stack),
                     case_input(CASE, actual))
    only = result.per_invocation[0]
    assert only.status == "not_evaluated" and "segmenter down" in (only.reason or "")
    assert result.status == "not_evaluated"


def test_no_text_is_not_evaluated(judged_on: Judged) -> None:
    """An invocation without any response text cannot be checked and says so."""
    with judged_on(_judge) as (fake, stack):
        result = run(build(hal.build, NAME, {"threshold": 0.5}, stack), case_input(CASE, [inv("t", "q")]))
    assert result.per_invocation[0].reason == "the invocation has no text to check" and fake.requests == []
