"""``response_match_score``: ROUGE-1 F-measure of the final response against the expected one, as ADK scores it.

Tokenisation reproduces ADK 2.13: NFKC + lowercase; CJK characters are tokens of their own; Thai, Lao, Khmer
and Myanmar split into grapheme clusters; other letters, digits and combining marks form words; everything else
separates words.  Pure-ASCII words go through rouge-score's default tokenizer with Porter stemming (which stems
only tokens longer than 3 characters); other words are kept whole and unstemmed.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
import threading
import types
import unicodedata
from collections import _count_elements  # type: ignore[attr-defined]  # Counter.update's counting loop, without a Counter
from dataclasses import dataclass
from typing import Any

from rouge_score import tokenize as rouge_tokenize

from evalbot.criteria.base import (
    BuildContext,
    CaseInput,
    Options,
    from_score_rows,
    need_expected,
    not_evaluated,
    parse_options,
    score_row,
)
from evalbot.formats.config import CriterionSpec
from evalbot.results import MetricResult

_CJK_RANGES = ((0x4E00, 0x9FFF), (0x3040, 0x309F), (0x30A0, 0x30FF), (0xAC00, 0xD7AF))
_CLUSTER_RANGES = ((0x0E00, 0x0E7F), (0x0E80, 0x0EFF), (0x1780, 0x17FF), (0x1000, 0x109F))


def _in(code: int, ranges: tuple[tuple[int, int], ...]) -> bool:
    return any(lo <= code <= hi for lo, hi in ranges)


_PORTER: Any = None
_PORTER_LOCK = threading.Lock()


def _load_porter() -> Any:
    """NLTK's Porter stemmer (the one rouge-score uses), loaded without running ``nltk/__init__``.

    ``import nltk`` imports most of NLTK (about 0.5-0.9 s, the largest part of a run's start) while the stemmer
    needs only ``nltk.stem.api`` and ``nltk.stem.porter``. The two parent packages are stood in by empty package
    modules for the duration of that import and removed again, so a later ``import nltk`` elsewhere runs NLTK's own
    ``__init__`` as usual (and finds these two submodules already loaded).
    """
    if "nltk.stem.porter" in sys.modules:
        return sys.modules["nltk.stem.porter"].PorterStemmer()
    spec = importlib.util.find_spec("nltk")
    if spec is None or not spec.submodule_search_locations:
        raise ImportError("nltk is not installed (rouge-score needs it)")
    root = list(spec.submodule_search_locations)
    stand_ins = {"nltk": root, "nltk.stem": [f"{path}/stem" for path in root]}
    added = []
    try:
        for name, path in stand_ins.items():
            if name not in sys.modules:
                package = types.ModuleType(name)
                package.__path__ = path
                sys.modules[name] = package
                added.append(name)
        porter = importlib.import_module("nltk.stem.porter")
    finally:
        for name in added:
            del sys.modules[name]
    return porter.PorterStemmer()


def _stemmer() -> Any:
    global _PORTER
    if _PORTER is None:
        with _PORTER_LOCK:
            if _PORTER is None:
                _PORTER = _load_porter()
    return _PORTER


class _StemMap(dict[str, str]):
    """The ROUGE token of an ASCII word ([a-z0-9]+), computed once per distinct word: stemming dominates ROUGE.

    rouge-score's default tokenizer turns such a word into exactly one token (stemmed when longer than 3).
    """

    def __missing__(self, word: str) -> str:
        if len(self) >= 200_000:  # bound the memory of very large runs (numbers, ids)
            self.clear()
        (token,) = rouge_tokenize.tokenize(word, _stemmer())
        self[word] = str(token)
        return self[word]


_STEMS = _StemMap()


class _ByteStemMap(dict[bytes, str]):
    """_STEMS keyed by an ASCII word's bytes: ROUGE counts the words of an ASCII text split as bytes, undecoded."""

    def __missing__(self, word: bytes) -> str:
        if len(self) >= 200_000:  # bounded as _STEMS is
            self.clear()
        token = self[word] = _STEMS[word.decode("ascii")]
        return token


_BYTE_STEMS = _ByteStemMap()




class _CharMap(dict[int, str]):
    """A ``str.translate`` table filled in on first use: what ADK's tokenizer turns each character into."""

    def __missing__(self, code: int) -> str:
        char = chr(code)
        if _in(code, _CJK_RANGES):
            out = f" {char} "
        elif _in(code, _CLUSTER_RANGES):
            # A combining mark stays on its base character; a base character starts a new cluster.
            out = char if unicodedata.category(char).startswith("M") else f" {char}"
        elif char.isalnum() or unicodedata.category(char).startswith("M"):
            out = char
        else:
            out = " "
        self[code] = out
        return out


_CHARS = _CharMap()
_ASCII_SPACED = bytes(ord(chr(c).lower()) if chr(c).isalnum() else 0x20 for c in range(128)) + b" " * 128
"""For pure-ASCII text: letters lowercased, digits kept, everything else a space (a bytes table: one C pass)."""


def _ascii_words(text: str) -> list[str]:
    """The words of a pure-ASCII text as ADK's tokenizer splits them, before stemming (one C pass and a split)."""
    return text.encode("ascii").translate(_ASCII_SPACED).decode("ascii").split()


def _spaced(text: str) -> str:
    # One C-level pass; the per-character rule runs once per distinct character (the hot path of a run).
    return text.translate(_CHARS)


class UnicodeTokenizer:
    """rouge-score tokenizer with ADK's Unicode rules (see the module docstring); ``RougeScorer`` accepts it."""

    def tokenize(self, text: str) -> list[str]:
        """Split ``text`` into ROUGE tokens."""
        if text.isascii():
            # Same result as the general path: NFKC leaves ASCII unchanged and only [a-z0-9] survive _spaced.
            return list(map(_STEMS.__getitem__, _ascii_words(text)))
        words = _spaced(unicodedata.normalize("NFKC", text).lower()).split()
        return [_STEMS[word] if word.isascii() else word for word in words]


_TOKENIZER = UnicodeTokenizer()


def _count_tokens(counts: dict[str, int], text: str) -> int:
    """Add the ROUGE tokens of ``text`` to ``counts``; how many there are. An ASCII text's words are counted as they
    are stemmed (one token per word), without a list of its tokens."""
    if text.isascii():
        words = text.encode("ascii").translate(_ASCII_SPACED).split()  # _ascii_words, left as bytes
        _count_elements(counts, map(_BYTE_STEMS.__getitem__, words))
        return len(words)
    tokens = _TOKENIZER.tokenize(text)
    _count_elements(counts, tokens)
    return len(tokens)


def rouge1_f(candidate: str, reference: str) -> float:
    """ROUGE-1 F-measure; empty against empty is 0.0, as in ADK.

    The arithmetic of rouge-score's n-gram scoring (``_score_ngrams``) on unigram counts, with integer counts
    summed in C: RougeScorer.score wraps each token in a 1-tuple and loops in Python, which costs more than the rest
    of the computation and changes nothing in the result.
    """
    ref: dict[str, int] = {}
    cand: dict[str, int] = {}
    ref_count, cand_count = _count_tokens(ref, reference), _count_tokens(cand, candidate)
    overlap = 0  # the sum of min(count in ref, count in cand) over ref's tokens: a plain loop beats map(min, ...)
    get = cand.get
    for token, count in ref.items():
        other = get(token)
        if other:
            overlap += count if count < other else other
    precision = overlap / max(cand_count, 1)
    recall = overlap / max(ref_count, 1)
    # rouge-score's fmeasure, without importing rouge_score.scoring (numpy, for its bootstrap aggregation)
    return 2 * precision * recall / (precision + recall) if precision + recall > 0 else 0.0


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
            need_expected(case, self.name)
        except ValueError as exc:
            return not_evaluated(self.threshold, str(exc), len(case.actual))
        expected_texts = case.expected_texts or []  # a list whenever there is an expected conversation
        rows = [
            score_row(rouge1_f(act_text, exp_text), self.threshold, act)
            for act, act_text, exp_text in zip(case.actual, case.actual_texts, expected_texts, strict=True)
        ]
        return from_score_rows(rows, self.threshold)


def build(spec: CriterionSpec, ctx: BuildContext) -> ResponseMatch:
    """Factory registered under ``response_match_score``."""
    parse_options(ResponseMatchOptions, spec)
    return ResponseMatch(spec.threshold, spec.name)
