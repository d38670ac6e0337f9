"""``rouge_2`` (Vertex): ROUGE-2 (bigram overlap) F-measure of the response against the reference.

rouge-score's ``rouge2``, configured as Vertex configures it; rules in evalbot.criteria.vertex_text.
"""

from __future__ import annotations

from evalbot.criteria.base import BuildContext
from evalbot.criteria.vertex_text import TextMetric, build_rouge
from evalbot.formats.config import CriterionSpec


def build(spec: CriterionSpec, ctx: BuildContext) -> TextMetric:
    """Factory registered under ``rouge_2`` (options ``use_stemmer``, ``split_summaries``)."""
    return build_rouge(spec, "rouge2")
