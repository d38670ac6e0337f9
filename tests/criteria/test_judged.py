"""Shared judged-criteria helpers, and every judged criterion without credentials."""

from __future__ import annotations

from typing import Any

import pytest

from evalbot.criteria import JUDGED, VERTEX_SERVICE, build_criteria
from evalbot.criteria.base import BuildContext
from evalbot.criteria.judged import majority, rationale_of, vote, votes
from evalbot.formats.config import parse_config
from evalbot.judges.base import SERVICE_MISSING
from evalbot.judges.factory import MISSING_CREDENTIALS
from evalbot.results import VoteSplit
from tests.fakes.judged import case_input, inv, run


@pytest.mark.parametrize(("scores", "verdict"), [
    ([1.0, 1.0, 0.0], 1.0), ([1.0, 0.0], 0.0), ([1.0, 0.0, None, None], 0.0), ([None, None], None),
    ([0.0, None, 1.0, 1.0], 1.0),
])
def test_majority_tie_fails(scores: list[float | None], verdict: float | None) -> None:
    """More passes than fails passes; a tie fails; unparsed samples do not vote."""
    assert majority(scores) == verdict


def test_votes_and_rationale() -> None:
    """The vote split counts unparsed samples; the JSON reasoning field is preferred as rationale."""
    assert votes([1.0, 0.0, None]) == VoteSplit(yes=1, no=1, unparsed=1)
    assert rationale_of('{"reasoning": "because \\"x\\"", "v": 1}') == 'because "x"'
    assert rationale_of("  plain words ") == "plain words"


def test_vote_keeps_the_rationale_of_an_agreeing_sample() -> None:
    """The verdict is the majority; the rationale comes from a sample that agrees, else from the first sample."""
    parse = {"yes": 1.0, "no": 0.0}.get

    def stored(texts: list[str]) -> tuple[float | None, dict[str, object]]:
        verdict, details = vote(texts, parse)
        return verdict, details.as_details()

    assert stored(["no", "yes", "yes"]) == (1.0, {"votes": {"yes": 2, "no": 1, "unparsed": 0}, "rationale": "yes"})
    assert stored(["yes", "no"]) == (0.0, {"votes": {"yes": 1, "no": 1, "unparsed": 0}, "rationale": "no"})
    assert stored(["??", "!!"]) == (None, {"votes": {"yes": 0, "no": 0, "unparsed": 2}, "rationale": "??"})
    assert stored([]) == (None, {"votes": {"yes": 0, "no": 0, "unparsed": 0}, "rationale": ""})


def test_every_judged_criterion_without_credentials() -> None:
    """Each judged criterion reports not_evaluated with the credentials message (the Vertex AI evaluation service's
    for the criteria it scores); none fails or passes."""
    criteria: dict[str, Any] = {name: 0.5 for name in JUDGED}
    criteria["response_evaluation_score"] = 3  # ADK's 1-5 coherence scale
    criteria["rubric_based_final_response_quality_v1"] = {"threshold": 0.5, "rubrics": [
        {"rubric_id": "r", "rubric_content": {"text_property": "p"}}]}
    criteria["rubric_based_tool_use_quality_v1"] = criteria["rubric_based_final_response_quality_v1"]
    config = parse_config({"criteria": criteria}, "test_config.json")
    built, _ = build_criteria(config, BuildContext(judge=None, judge_unavailable_reason=MISSING_CREDENTIALS))
    case = case_input({"eval_id": "c", "conversation": [inv("t", "q", "r")]}, [inv("t", "q", "a")])
    results = {c.name: run(c, case) for c in built if c.name in JUDGED}
    assert set(results) == JUDGED
    for name, result in results.items():
        assert result.status == "not_evaluated", name
        service = name in VERTEX_SERVICE
        assert (SERVICE_MISSING if service else MISSING_CREDENTIALS) in (result.reason or ""), name
