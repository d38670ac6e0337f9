"""``response_match_score``: ADK's Unicode-aware ROUGE-1 tokenizer, F-measure, and the per-case aggregation."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from rouge_score import rouge_scorer

from evalbot.criteria.base import BuildContext, CaseInput
from evalbot.criteria.response_match import ResponseMatch, UnicodeTokenizer, build, rouge1_f
from evalbot.errors import ConfigError
from evalbot.formats.adk import EvalCase, Invocation
from evalbot.formats.config import CriterionSpec
from tests.fakes.builders import case, inv

# Token lists produced by google-adk 2.13.0's _UnicodeAwareTokenizer(use_stemmer=True) for these inputs.
ADK_TOKENS: dict[str, list[str]] = {
    "device_2 in the Bedroom.": ["devic", "2", "in", "the", "bedroom"],
    "It's 10,000": ["it", "s", "10", "000"],
    "cancelled canceled": ["cancel", "cancel"],
    "running runs ran": ["run", "run", "ran"],
    "the is a of": ["the", "is", "a", "of"],
    "user@example.com 3.14": ["user", "exampl", "com", "3", "14"],
    "a.b-c/d": ["a", "b", "c", "d"],
    "Café naïve résumé": ["café", "naïve", "résumé"],
    "e\u0301t\u00e9": ["été"],
    "ΑΘΗΝΑ Σοφία": ["αθηνα", "σοφία"],
    "東京タワーは高い": ["東", "京", "タ", "ワ", "ー", "は", "高", "い"],
    "한국어 텍스트": ["한", "국", "어", "텍", "스", "트"],
    "ที่นี่ สวัสดีครับ": ["ที่", "นี่", "ส", "วั", "ส", "ดี", "ค", "รั", "บ"],
    "ខ្មែរ": ["ខ្", "មែ", "រ"],
    "မြန်မာ": ["မြ", "န်", "မာ"],
    "नमस्ते दुनिया": ["नमस्ते", "दुनिया"],
    "ＡＢＣ１２３ ﬁne": ["abc123", "fine"],
    "x² ½": ["x2", "1", "2"],
    "emoji 🎉 ok": ["emoji", "ok"],
    "": [],
    "   ": [],
}


@pytest.mark.parametrize("text", list(ADK_TOKENS))
def test_tokenizer_matches_adk(text: str) -> None:
    """NFKC + lowercase, CJK per character, Thai/Khmer/Myanmar clusters, ASCII-only Porter stemming for len > 3."""
    assert UnicodeTokenizer().tokenize(text) == ADK_TOKENS[text]


@pytest.mark.parametrize(
    ("candidate", "reference", "expected"),
    [
        ("", "", 0.0),
        ("a cat", "", 0.0),
        ("", "a cat", 0.0),
        ("the cat sat on the mat", "the cat is on the mat", 0.8333333333333334),
        ("東京タワー", "東京スカイツリー", 0.4615384615384615),
        ("the the the", "the cat", 0.4),
        ("Cancelled!", "canceled", 1.0),
    ],
)
def test_rouge1_f_values(candidate: str, reference: str, expected: float) -> None:
    """ROUGE-1 F with clipped unigram counts; empty against empty is 0 (a turn with no reference never passes)."""
    assert rouge1_f(candidate, reference) == pytest.approx(expected, abs=1e-12)


def test_case_uses_final_response_text_only() -> None:
    """Intermediate responses are ignored; all text parts of the final response are joined (thoughts included)."""
    expected = EvalCase.model_validate(case("c", inv(response="the answer is 42")))
    parts = [{"text": "the answer", "thought": True}, {"function_call": {"name": "f"}}, {"text": "is 42"}]
    actual = Invocation.model_validate(
        inv(final_response={"parts": parts}, intermediate_data={"intermediate_responses": [["a", [{"text": "noise"}]]]})
    )
    assert ResponseMatch(0.8).evaluate(CaseInput("s", expected, [actual])).score == 1.0


def test_missing_final_response_scores_zero() -> None:
    """An actual invocation without final_response is scored as empty text (0.0, failed) rather than skipped."""
    expected = EvalCase.model_validate(case("c", inv(response="hello there")))
    result = ResponseMatch(0.8).evaluate(CaseInput("s", expected, [Invocation.model_validate(inv(response=None))]))
    assert (result.score, result.status, result.per_invocation[0].status) == (0.0, "failed", "failed")


def test_case_score_is_the_mean_and_threshold_inclusive() -> None:
    """Mean of per-invocation F values; ``score >= threshold`` passes."""
    expected = EvalCase.model_validate(case("c", inv(response="a b"), inv(response="c d")))
    actual = [Invocation.model_validate(inv(response=r)) for r in ("a b", "x y")]
    result = ResponseMatch(0.5).evaluate(CaseInput("s", expected, actual))
    assert (result.score, result.status) == (0.5, "passed")
    assert [p.score for p in result.per_invocation] == [1.0, 0.0]


def test_scenario_case_is_not_evaluated() -> None:
    """Without an expected conversation there is no reference: not evaluated with a reason."""
    scenario = EvalCase.model_validate({"eval_id": "s", "conversation_scenario": {"starting_prompt": "a",
                                                                                   "conversation_plan": "b"}})
    result = ResponseMatch(0.8).evaluate(CaseInput("s", scenario, [Invocation.model_validate(inv())]))
    assert (result.score, result.status) == (None, "not_evaluated") and result.reason


def test_options() -> None:
    """The documented option is accepted in either casing; anything else is a ConfigError naming it."""
    for options in ({"include_intermediate_responses_in_final": False}, {"includeIntermediateResponsesInFinal": True}):
        assert build(CriterionSpec("response_match_score", 0.8, options), BuildContext()).threshold == 0.8
    with pytest.raises(ConfigError, match="invalid options for response_match_score: include_intermediate"):
        build(CriterionSpec("response_match_score", 0.8, {"include_intermediate_responses_in_final": "x"}),
              BuildContext())
    # keys ADK ignores (its criteria keep them and read their own fields) are ignored, not refused
    assert build(CriterionSpec("response_match_score", 0.8, {"method": "ROUGE_1"}), BuildContext()).threshold == 0.8


_WORDS = ["running", "runs", "The", "the", "cancelled", "Café", "東京", "ที่นี่", "a", "It's", "10,000", "x²", "ﬁne", ""]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(_WORDS), max_size=12), st.lists(st.sampled_from(_WORDS), max_size=12), st.text(max_size=20))
def test_rouge1_f_equals_rouge_scores_own_scorer(cand: list[str], ref: list[str], noise: str) -> None:
    """The fast ROUGE-1 path gives exactly (==) what rouge-score's RougeScorer gives with the same tokenizer."""
    candidate, reference = " ".join(cand) + noise, " ".join(ref)
    expected = rouge_scorer.RougeScorer(["rouge1"], tokenizer=UnicodeTokenizer()).score(reference, candidate)
    assert rouge1_f(candidate, reference) == expected["rouge1"].fmeasure


def test_rouge_loads_neither_numpy_nor_all_of_nltk() -> None:
    """ROUGE needs NLTK's Porter stemmer only: scoring imports neither numpy (left out of the image) nor NLTK's
    package __init__ (half a second of start-up), and a later full `import nltk` still works."""
    script = (
        "import json, sys\n"
        "from evalbot.criteria.response_match import rouge1_f\n"
        "score = rouge1_f('the cats were running home', 'a cat runs home')\n"
        "state = ['numpy' in sys.modules, 'nltk.corpus' in sys.modules, 'nltk' in sys.modules]\n"
        "import nltk\n"
        "from nltk.stem.porter import PorterStemmer\n"
        "print(json.dumps([score, *state, PorterStemmer().stem('running'), hasattr(nltk, 'corpus')]))\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    score, numpy, corpus, nltk_root, stem, full = json.loads(done.stdout)
    expected = rouge_scorer.RougeScorer(["rouge1"], use_stemmer=True).score("a cat runs home", "the cats were running home")
    assert score == pytest.approx(expected["rouge1"].fmeasure, abs=1e-12)
    assert (numpy, corpus, nltk_root) == (False, False, False)
    assert stem == "run" and full


def test_ascii_words_are_stemmed_through_the_byte_map_as_through_the_word_map() -> None:
    """ROUGE counts an ASCII text's words split as bytes: each maps to the token the word map (and rouge-score's
    tokenizer) gives, and the byte map stays bounded as the word map is."""
    from evalbot.criteria import response_match as rm

    words = ["running", "Runs", "cats", "a1b2", "the", "generously", "x"]
    for word in words:
        lowered = word.lower()
        assert rm._BYTE_STEMS[lowered.encode()] == rm._STEMS[lowered]
    assert rm.rouge1_f("Running cats, generously!", "runs the cat") == rm.rouge1_f(
        "running cats generously", "runs the cat")
    rm._BYTE_STEMS.update({f"w{i}".encode(): "w" for i in range(200_000 - len(rm._BYTE_STEMS))})
    assert rm._BYTE_STEMS[b"fresh"] == rm._STEMS["fresh"] and len(rm._BYTE_STEMS) == 1
