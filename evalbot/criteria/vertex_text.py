"""Shared machinery of Vertex AI's computation metrics on text: ``exact_match``, ``bleu`` and the ``rouge_*`` metrics.

Each scores an invocation's final response (a Vertex row's ``response``) against the expected one (``reference``),
with the library that defines the metric, configured as Vertex configures it (docs/vertex.md):

* ``rouge_1``, ``rouge_2``, ``rouge_l``, ``rouge_l_sum``: rouge-score's ``RougeScorer`` with the ROUGE type
  ``rouge1``/``rouge2``/``rougeL``/``rougeLsum``, its default tokenizer, ``use_stemmer`` and ``split_summaries``
  false unless the criterion sets them (Vertex's ``Rouge`` takes the same two options); the score is the F-measure.
* ``bleu``: sacrebleu's sentence BLEU (13a tokenizer, exponential smoothing, 4-grams) with
  ``use_effective_order`` false unless set (Vertex's ``BleuSpec`` default), on Vertex's [0, 1] scale (sacrebleu's
  score / 100).
* ``exact_match``: 1.0 when the response equals the reference character for character, else 0.0.

A Vertex row without ``reference`` is ``not_evaluated`` with the reason (Vertex refuses such a dataset); one without
``response`` too, unless the agent failed on it (``failure`` = 1), when the response is scored as empty.  ADK
invocations always have a (possibly empty) final response.  The case score is the mean of the invocation scores.
"""

from __future__ import annotations

import importlib
import sys
import types
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from evalbot.criteria.base import CaseInput, Options, need_expected, not_evaluated, parse_options, score_invocation
from evalbot.criteria.vertex_trajectory import summarize
from evalbot.errors import ConfigError
from evalbot.formats.adk import Invocation
from evalbot.formats.config import CriterionSpec
from evalbot.formats.vertex import VertexInvocation, failure_of
from evalbot.results import InvocationScore, MetricResult

TextScorer = Callable[[str, str], float]
"""Scores (response, reference) in [0, 1]; raises TextTooLong when the pair cannot be scored in bounded time."""

LCS_CELLS = 16_000_000
"""Largest LCS table (response tokens x reference tokens) that rouge_l / rouge_l_sum compute: rouge-score's LCS
is quadratic pure Python (about 6 s at this size); a larger pair is not evaluated, with the reason."""


class TextTooLong(ValueError):
    """The response and reference are too long to score with this metric."""


def given_text(invocation: Invocation, text: str, side: str) -> tuple[str | None, str | None]:
    """The invocation's final text, or None with the reason when a Vertex row did not give its column."""
    if not isinstance(invocation, VertexInvocation) or invocation.final_response is not None:
        return text, None
    if side == "response" and failure_of(invocation):
        return "", "the agent failed on this invocation (failure = 1); no response: scored as empty"
    return None, f"the row gives no {side}"


@dataclass(frozen=True)
class TextMetric:
    """A reference-based metric on the final response: per invocation ``scorer(response, reference)``."""

    name: str
    threshold: float | None
    scorer: TextScorer

    def evaluate(self, case: CaseInput) -> MetricResult:
        """Score each invocation's response against the expected one; the case score is the mean."""
        try:
            expected = need_expected(case, self.name)
        except ValueError as exc:
            return not_evaluated(self.threshold, str(exc), len(case.actual))
        expected_texts = case.expected_texts or []  # a list whenever there is an expected conversation
        scores: list[InvocationScore] = []
        pairs = zip(case.actual, case.actual_texts, expected, expected_texts, strict=True)
        for act, act_text, exp, exp_text in pairs:
            reference, r_note = given_text(exp, exp_text, "reference")
            response, p_note = given_text(act, act_text, "response")
            if reference is None or response is None:
                scores.append(score_invocation(None, self.threshold, act, reason=r_note or p_note))
                continue
            try:
                score = self.scorer(response, reference)
            except TextTooLong as exc:
                scores.append(score_invocation(None, self.threshold, act, reason=str(exc)))
                continue
            scores.append(score_invocation(score, self.threshold, act, reason=p_note))
        return summarize(scores, self.threshold)


class RougeOptions(Options):
    """The two settings of Vertex's ``Rouge`` metric besides its type (both false for the metric names)."""

    use_stemmer: bool = False
    split_summaries: bool = False


def _check_sentence_splitter(name: str) -> None:
    """``split_summaries`` splits with NLTK's punkt model, a data package that pip does not install."""
    # Lazy load: NLTK is imported only when a ROUGE metric is configured (it costs about half a second).
    import nltk.data

    try:
        nltk.data.find("tokenizers/punkt_tab")
    except LookupError:
        raise ConfigError(
            f"{name}: split_summaries needs NLTK's sentence splitter data, which is not installed: run "
            "`python -m nltk.downloader punkt_tab`, or leave split_summaries false (Vertex's default: sentences "
            "are the response's lines)"
        ) from None


class _AbsentModule(types.ModuleType):
    """Stands in for a module that is not installed: any use of it raises ImportError naming it."""

    def __getattr__(self, attr: str) -> Any:
        raise ImportError(f"{self.__name__} is not installed ({self.__name__}.{attr} was needed)")


def import_rouge_scorer() -> Any:
    """rouge-score's ``rouge_scorer`` module, importable without numpy.

    ``rouge_scorer`` and ``rouge_score.scoring`` import numpy at their top but use it only in ``score_multi`` and
    ``BootstrapAggregator``, which evalbot never calls; the Action's image leaves numpy out (73 MB, Dockerfile).
    Without numpy the import runs with a stand-in whose every use raises ImportError, removed from ``sys.modules``
    again afterwards, so a later ``import numpy`` is not affected.
    """
    try:
        importlib.import_module("numpy")
    except ImportError:
        stand_in = _AbsentModule("numpy")
        sys.modules["numpy"] = stand_in
        try:
            return importlib.import_module("rouge_score.rouge_scorer")
        finally:
            if sys.modules.get("numpy") is stand_in:
                del sys.modules["numpy"]
    return importlib.import_module("rouge_score.rouge_scorer")


def build_rouge(spec: CriterionSpec, rouge_type: str) -> TextMetric:
    """A ``rouge_*`` metric: rouge-score's F-measure of ``rouge_type`` (invalid options raise ConfigError)."""
    options = parse_options(RougeOptions, spec)
    if options.split_summaries:
        _check_sentence_splitter(spec.name)
    # Imported here: rouge_scorer imports all of NLTK (about half a second), needed only when ROUGE is configured.
    scorer: Any = import_rouge_scorer().RougeScorer(
        [rouge_type], use_stemmer=options.use_stemmer, split_summaries=options.split_summaries
    )
    quadratic = rouge_type in {"rougeL", "rougeLsum"}
    tokenize = scorer._tokenizer.tokenize  # the scorer's own tokenizer, to size the LCS table before computing it

    def score(response: str, reference: str) -> float:
        if quadratic:
            cells = len(tokenize(response)) * len(tokenize(reference))
            if cells > LCS_CELLS:
                raise TextTooLong(
                    f"{spec.name}: response and reference too long for the LCS ({cells:,} token pairs; at most "
                    f"{LCS_CELLS:,})"
                )
        return float(scorer.score(reference, response)[rouge_type].fmeasure)

    return TextMetric(spec.name, spec.threshold, score)
