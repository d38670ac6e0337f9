"""``exact_match`` (Vertex): 1.0 when the response equals the reference exactly, else 0.0.

Character for character: no trimming, case folding or Unicode normalisation.  Rules for missing columns in
evalbot.criteria.vertex_text.
"""

from __future__ import annotations

from evalbot.criteria.base import BuildContext, Options, parse_options
from evalbot.criteria.vertex_text import TextMetric
from evalbot.formats.config import CriterionSpec


class ExactMatchOptions(Options):
    """Vertex's exact match has no settings."""


def score(response: str, reference: str) -> float:
    """1.0 for identical strings."""
    return 1.0 if response == reference else 0.0


def build(spec: CriterionSpec, ctx: BuildContext) -> TextMetric:
    """Factory registered under ``exact_match`` (any option is refused)."""
    parse_options(ExactMatchOptions, spec)
    return TextMetric(spec.name, spec.threshold, score)
