"""Vertex's computation metrics on text: ``rouge_*`` against rouge-score, ``bleu`` against sacrebleu and by hand,
``exact_match``; missing columns, long texts and options."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from rouge_score import rouge_scorer
from sacrebleu import sentence_bleu

from evalbot.criteria import CRITERIA, build_criteria, vertex_text
from evalbot.criteria.base import BuildContext, CaseInput
from evalbot.criteria.vertex_text import TextMetric
from evalbot.errors import ConfigError
from evalbot.formats.adk import EvalCase, Invocation
from evalbot.formats.config import CriterionSpec, parse_config
from evalbot.formats.vertex import cases_from_rows
from evalbot.results import MetricResult

ROUGE = {"rouge_1": "rouge1", "rouge_2": "rouge2", "rouge_l": "rougeL", "rouge_l_sum": "rougeLsum"}
TEXTS = ["rouge_1", "rouge_2", "rouge_l", "rouge_l_sum", "bleu", "exact_match"]
PAIRS = [
    ("The cat sat on the mat.", "The cat sat on the mat."),
    ("the cat sat", "the cat ran"),
    ("The quick brown fox jumps over the lazy dog", "A quick brown dog jumps over the lazy fox"),
    ("Your order shipped today.\nIt arrives Friday.", "It arrives Friday.\nYour order shipped yesterday."),
    ("Running runners ran", "run runner running"),
    ("", "something"),
    ("", ""),
    ("12 items, $45.99 total!", "12 items totalling $45.99"),
]


def metric(name: str, threshold: float | None = None, **options: Any) -> TextMetric:
    built = CRITERIA[name](CriterionSpec(name, threshold, options), BuildContext())
    assert isinstance(built, TextMetric)
    return built


def invocation(text: str | None) -> Invocation:
    raw: dict[str, Any] = {"user_content": {"role": "user", "parts": [{"text": "q"}]}}
    if text is not None:
        raw["final_response"] = {"role": "model", "parts": [{"text": text}]}
    return Invocation.model_validate(raw)


def score(name: str, response: str, reference: str, **options: Any) -> float | None:
    case = EvalCase(eval_id="c", conversation=[invocation(reference)])
    return metric(name, **options).evaluate(CaseInput("s", case, [invocation(response)])).score


def run_rows(name: str, rows: list[dict[str, Any]], tmp_path: Path, threshold: float | None = 0.5) -> MetricResult:
    (loaded,) = cases_from_rows(rows, tmp_path / "d.json")[1]
    assert loaded.case is not None and loaded.actual is not None
    return metric(name, threshold).evaluate(CaseInput("s", loaded.case, loaded.actual))


@pytest.mark.parametrize("name", ROUGE)
@pytest.mark.parametrize(("response", "reference"), PAIRS)
def test_rouge_is_rouge_score_as_vertex_configures_it(name: str, response: str, reference: str) -> None:
    """Default tokenizer, no stemming, lines as summary sentences; the F-measure."""
    library = rouge_scorer.RougeScorer([ROUGE[name]], use_stemmer=False, split_summaries=False)
    assert score(name, response, reference) == library.score(reference, response)[ROUGE[name]].fmeasure


def test_rouge_by_hand() -> None:
    """'the cat sat' vs 'the cat ran': 2 of 3 unigrams, 1 of 2 bigrams, LCS 2 of 3 on both sides."""
    assert score("rouge_1", "the cat sat", "the cat ran") == pytest.approx(2 / 3)
    assert score("rouge_2", "the cat sat", "the cat ran") == pytest.approx(1 / 2)
    assert score("rouge_l", "the cat sat", "the cat ran") == pytest.approx(2 / 3)
    # Two lines swapped: ROUGE-L sees one line's LCS (3 of 7 tokens); ROUGE-Lsum matches each line on its own.
    swapped, original = "b c d\na e f g", "a e f g\nb c d"
    assert score("rouge_l", swapped, original) == pytest.approx(4 / 7)
    assert score("rouge_l_sum", swapped, original) == 1.0


def test_stemming_is_off_unless_asked() -> None:
    """Vertex's metric names do not stem; ``use_stemmer`` is Vertex's option to do so."""
    assert score("rouge_1", "running", "run") == 0.0
    assert score("rouge_1", "running", "run", use_stemmer=True) == 1.0


def test_non_latin_text_gets_no_tokens_as_in_rouge_score() -> None:
    """rouge-score's default tokenizer keeps [a-z0-9] only: CJK text has no tokens and scores 0 (documented)."""
    assert score("rouge_1", "東京は晴れ", "東京は晴れ") == 0.0
    assert score("exact_match", "東京は晴れ", "東京は晴れ") == 1.0


def test_split_summaries_without_the_sentence_splitter_is_a_config_error() -> None:
    """split_summaries needs NLTK's punkt data, which pip does not install: say how to get it, at build time."""
    try:
        import nltk.data

        nltk.data.find("tokenizers/punkt_tab")
    except LookupError:
        with pytest.raises(ConfigError, match=r"rouge_l_sum: split_summaries needs .*punkt_tab"):
            metric("rouge_l_sum", split_summaries=True)
    else:  # pragma: no cover - a machine with the data: the option works
        assert score("rouge_l_sum", "A b. C d.", "A b. C d.", split_summaries=True) == 1.0


@pytest.mark.parametrize(("response", "reference"), PAIRS)
def test_bleu_is_sacrebleu_without_effective_order(response: str, reference: str) -> None:
    """Vertex's BleuSpec default: use_effective_order false; Vertex's scale is sacrebleu's / 100, at most 1."""
    expected = sentence_bleu(response, [reference], use_effective_order=False).score / 100
    assert score("bleu", response, reference) == pytest.approx(min(expected, 1.0), abs=1e-15)
    with_order = sentence_bleu(response, [reference], use_effective_order=True).score / 100
    assert score("bleu", response, reference, use_effective_order=True) == pytest.approx(min(with_order, 1.0),
                                                                                       abs=1e-15)


def test_bleu_by_hand() -> None:
    """A prediction that is the reference minus its last word: every n-gram precision is 1, so BLEU is the brevity
    penalty exp(1 - 7/6); identical texts score exactly 1.0 (sacrebleu's 100.00000000000004 is clamped)."""
    assert score("bleu", "the cat sat on the mat", "the cat sat on the mat today") == pytest.approx(
        math.exp(1 - 7 / 6), rel=1e-12)
    assert score("bleu", "The cat sat on the mat.", "The cat sat on the mat.") == 1.0
    # Short texts: without effective order a missing 4-gram order makes BLEU small, with it the score is 1.0.
    assert score("bleu", "hello world", "hello world") < 0.5
    assert score("bleu", "hello world", "hello world", use_effective_order=True) == 1.0


@pytest.mark.parametrize(("response", "reference", "expected"), [
    ("Paris", "Paris", 1.0), ("Paris ", "Paris", 0.0), ("paris", "Paris", 0.0), ("", "", 1.0), ("\u00e9", "e\u0301", 0.0),
])
def test_exact_match_is_character_for_character(response: str, reference: str, expected: float) -> None:
    assert score("exact_match", response, reference) == expected


@pytest.mark.parametrize("name", TEXTS)
def test_row_without_reference_is_not_evaluated(name: str, tmp_path: Path) -> None:
    """Vertex refuses a dataset without ``reference``: evalbot says so on that row, never a silent 0."""
    result = run_rows(name, [{"prompt": "p", "response": "r"}], tmp_path)
    assert (result.score, result.status, result.reason) == (None, "not_evaluated", "the row gives no reference")


@pytest.mark.parametrize("name", TEXTS)
def test_row_without_response(name: str, tmp_path: Path) -> None:
    """No response: not evaluated, unless the agent failed on the row (then it is an empty response, which fails)."""
    result = run_rows(name, [{"prompt": "p", "reference": "r", "predicted_trajectory": []}], tmp_path)
    assert (result.score, result.status, result.reason) == (None, "not_evaluated", "the row gives no response")
    failed = run_rows(name, [{"prompt": "p", "reference": "r", "failure": 1}], tmp_path)
    assert (failed.score, failed.status) == (0.0, "failed")
    assert "failure = 1" in (failed.per_invocation[0].reason or "")


@pytest.mark.parametrize("name", TEXTS)
def test_scenario_case_is_not_evaluated(name: str) -> None:
    case = EvalCase.model_validate({"eval_id": "c", "conversation_scenario": {"starting_prompt": "hi",
                                                                              "conversation_plan": "say hi"}})
    result = metric(name, 0.5).evaluate(CaseInput("s", case, [invocation("hi")]))
    assert result.status == "not_evaluated" and "conversation scenario" in (result.reason or "")


def test_case_score_is_the_mean_and_threshold_is_ge() -> None:
    case = EvalCase(eval_id="c", conversation=[invocation("a b"), invocation("x y")])
    result = metric("exact_match", 0.5).evaluate(CaseInput("s", case, [invocation("a b"), invocation("z")]))
    assert (result.score, result.status) == (0.5, "passed")
    assert [s.score for s in result.per_invocation] == [1.0, 0.0]
    assert metric("exact_match").evaluate(CaseInput("s", case, [invocation("a b"), invocation("z")])).status == \
        "informational"


@pytest.mark.parametrize("name", ["rouge_l", "rouge_l_sum"])
def test_a_pair_too_long_for_the_lcs_is_not_evaluated(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """rouge-score's LCS is quadratic pure Python: a huge pair is refused with the reason, not computed for hours."""
    monkeypatch.setattr(vertex_text, "LCS_CELLS", 20)
    case = EvalCase(eval_id="c", conversation=[invocation("a b c d e"), invocation("a b")])
    result = metric(name, 0.5).evaluate(CaseInput("s", case, [invocation("a b c d e"), invocation("a b")]))
    first, second = result.per_invocation
    assert first.score is None and "too long for the LCS (25 token pairs; at most 20)" in (first.reason or "")
    assert second.score == 1.0 and result.score == 1.0
    # ROUGE-1/2 are linear: no limit.
    assert score("rouge_1", "a b c d e", "a b c d e") == 1.0


@pytest.mark.parametrize(("name", "options"), [
    ("rouge_1", {"use_stemer": True}), ("rouge_l_sum", {"split_summaries": [1]}), ("bleu", {"tokenize": "intl"}),
    ("exact_match", {"ignore_case": True}),
])
def test_invalid_options_are_config_errors(name: str, options: dict[str, Any]) -> None:
    with pytest.raises(ConfigError, match=f"invalid options for {name}"):
        metric(name, **options)


def test_camel_case_options() -> None:
    assert score("rouge_1", "running", "run", useStemmer=True) == 1.0


def test_every_vertex_computation_name_loads() -> None:
    """The names of Vertex's computation and trajectory metrics all build, with zero unknown-criterion errors."""
    names = [*TEXTS, "tool_call_valid", "tool_name_match", "tool_parameter_key_match", "tool_parameter_kv_match",
             "trajectory_exact_match", "trajectory_in_order_match", "trajectory_any_order_match",
             "trajectory_precision", "trajectory_recall"]
    config = parse_config({"criteria": {**{n: {"threshold": None} for n in names},
                                        "trajectory_single_tool_use": {"threshold": None, "tool_name": "t"}}},
                          None)
    built, _infos = build_criteria(config, BuildContext(), "x.evalset.json")
    configured = {spec.name for spec in config.criteria}
    assert sorted(c.name for c in built if c.name in configured) == sorted([*names, "trajectory_single_tool_use"])
    assert not [c for c in built if type(c).__name__ == "BrokenCriterion"]


def test_rouge_and_bleu_work_without_numpy() -> None:
    """The Action's image leaves numpy out: rouge_* and bleu still score there (rouge-score imports numpy but uses
    it only for bootstrap aggregation), and numpy is not left half-imported."""
    script = (
        "import json, sys\n"
        "class NoNumpy:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name == 'numpy' or name.startswith('numpy.'):\n"
        "            raise ModuleNotFoundError(f'No module named {name!r}')\n"
        "sys.meta_path.insert(0, NoNumpy())\n"
        "from evalbot.criteria import CRITERIA\n"
        "from evalbot.criteria.base import BuildContext\n"
        "from evalbot.formats.config import CriterionSpec\n"
        "out = [CRITERIA[n](CriterionSpec(n, None, {}), BuildContext()).scorer('the cat sat', 'the cat ran')\n"
        "       for n in ('rouge_1', 'rouge_l_sum', 'bleu')]\n"
        "print(json.dumps([out, 'numpy' in sys.modules]))\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    (rouge1, rouge_lsum, bleu), numpy_loaded = json.loads(done.stdout)
    assert rouge1 == pytest.approx(2 / 3) and rouge_lsum == pytest.approx(2 / 3)
    assert bleu == pytest.approx(sentence_bleu("the cat sat", ["the cat ran"], use_effective_order=False).score / 100)
    assert numpy_loaded is False
