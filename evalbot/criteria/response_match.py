"""``response_match_score``: ROUGE-1 F-measure of the final response against the expected one, as ADK scores it.

Tokenisation reproduces ADK 2.13: NFKC + lowercase; CJK characters are tokens of their own; Thai, Lao, Khmer
and Myanmar split into grapheme clusters; other letters, digits and combining marks form words; everything else
separates words.  Pure-ASCII words go through rouge-score's default tokenizer with Porter stemming (which stems
only tokens longer than 3 characters); other words are kept whole and unstemmed.
"""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass
from functools import lru_cache

from rouge_score import rouge_scorer, tokenizers

from evalbot.criteria.base import (
    BuildContext,
    CaseInput,
    Options,
    from_invocation_scores,
    need_expected,
    not_evaluated,
    parse_options,
    score_invocation,
)
from evalbot.formats.config import CriterionSpec
from evalbot.invocations import final_text
from evalbot.results import MetricResult

_CJK_RANGES = ((0x4E00, 0x9FFF), (0x3040, 0x309F), (0x30A0, 0x30FF), (0xAC00, 0xD7AF))
_CLUSTER_RANGES = ((0x0E00, 0x0E7F), (0x0E80, 0x0EFF), (0x1780, 0x17FF), (0x1000, 0x109F))


def _in(code: int, ranges: tuple[tuple[int, int], ...]) -> bool:
    return any(lo <= code <= hi for lo, hi in ranges)


_ASCII_TOKENIZER = tokenizers.DefaultTokenizer(use_stemmer=True)


@lru_cache(maxsize=65536)
def _ascii_word_tokens(word: str) -> tuple[str, ...]:
    # Stemming dominates the cost of ROUGE; the same words recur across invocations, so cache them.
    return tuple(_ASCII_TOKENIZER.tokenize(word))


def _spaced(text: str) -> str:
    out: list[str] = []
    for char in text:
        code = ord(char)
        if _in(code, _CJK_RANGES):
            out.append(f" {char} ")
        elif _in(code, _CLUSTER_RANGES):
            # A combining mark stays on its base character; a base character starts a new cluster.
            out.append(char if unicodedata.category(char).startswith("M") else f" {char}")
        elif char.isalnum() or unicodedata.category(char).startswith("M"):
            out.append(char)
        else:
            out.append(" ")
    return "".join(out)


class UnicodeTokenizer(tokenizers.Tokenizer):  # type: ignore[misc]
    """rouge-score tokenizer with ADK's Unicode rules (see the module docstring)."""

    def tokenize(self, text: str) -> list[str]:
        """Split ``text`` into ROUGE tokens."""
        tokens: list[str] = []
        for word in _spaced(unicodedata.normalize("NFKC", text).lower()).split():
            if word.isascii():
                tokens.extend(_ascii_word_tokens(word))
            else:
                tokens.append(word)
        return tokens


_SCORER = rouge_scorer.RougeScorer(["rouge1"], tokenizer=UnicodeTokenizer())


def rouge1_f(candidate: str, reference: str) -> float:
    """ROUGE-1 F-measure; empty against empty is 0.0, as in ADK."""
    return float(_SCORER.score(reference, candidate)["rouge1"].fmeasure)


class ResponseMatchOptions(Options):
    """ADK ignores every option but the threshold; evalbot accepts only the one ADK documents."""

    include_intermediate_responses_in_final: bool = False


@dataclass(frozen=True)
class ResponseMatch:
    """Mean ROUGE-1 F of final responses against expected final responses."""

    threshold: float | None
    name: str = "response_match_score"

    def evaluate(self, case: CaseInput) -> MetricResult:
        """Score every invocation by ROUGE-1 F."""
        try:
            expected = need_expected(case, self.name)
        except ValueError as exc:
            return not_evaluated(self.threshold, str(exc), len(case.actual))
        scores = [
            score_invocation(rouge1_f(final_text(act), final_text(exp)), self.threshold, act)
            for act, exp in zip(case.actual, expected, strict=True)
        ]
        return from_invocation_scores(scores, self.threshold)


def build(spec: CriterionSpec, ctx: BuildContext) -> ResponseMatch:
    """Factory registered under ``response_match_score``."""
    parse_options(ResponseMatchOptions, spec)
    return ResponseMatch(spec.threshold, spec.name)
