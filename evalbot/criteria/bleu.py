"""``bleu`` (Vertex): sentence BLEU of the response against the reference, on Vertex's [0, 1] scale.

sacrebleu's BLEU with its defaults (13a tokenizer, exponential smoothing, n-grams up to 4, case-sensitive) and
``use_effective_order`` false unless the criterion sets it, as Vertex's ``BleuSpec``; the score is sacrebleu's / 100.
Rules for missing columns in evalbot.criteria.vertex_text.
"""

from __future__ import annotations

from typing import Any

from evalbot.criteria.base import BuildContext, Options, parse_options
from evalbot.criteria.vertex_text import TextMetric
from evalbot.formats.config import CriterionSpec


class BleuOptions(Options):
    """Vertex's one BLEU setting: with effective order, n-gram orders with no match are left out of the mean."""

    use_effective_order: bool = False


def build(spec: CriterionSpec, ctx: BuildContext) -> TextMetric:
    """Factory registered under ``bleu`` (invalid options raise ConfigError)."""
    options = parse_options(BleuOptions, spec)
    # Lazy load: sacrebleu is imported only when the metric is configured.
    from sacrebleu.metrics.base import Metric
    from sacrebleu.metrics.bleu import BLEU

    bleu: Any = BLEU(effective_order=options.use_effective_order)

    def score(response: str, reference: str) -> float:
        # Metric.sentence_score is what BLEU.sentence_score runs after logging a recommendation to use effective
        # order on every call; Vertex's default does not, so the recommendation would only flood stderr.
        # sacrebleu computes exp(mean log precision) * 100, which can land a rounding error above 100 for identical
        # texts (100.00000000000004): BLEU is at most 1 on Vertex's scale.
        return min(1.0, float(Metric.sentence_score(bleu, response, [reference]).score) / 100.0)

    return TextMetric(spec.name, spec.threshold, score)
