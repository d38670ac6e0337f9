"""``rouge_l`` (Vertex): ROUGE-L F-measure (longest common subsequence of
the whole texts) of the response against the reference.

rouge-score's ``rougeL``, configured as Vertex configures it; rules in evalbot.criteria.vertex_text.
"""

from __future__ import annotations

from evalbot.criteria.base import BuildContext
from evalbot.criteria.vertex_text import TextMetric, build_rouge
from evalbot.formats.config import CriterionSpec


def build(spec: CriterionSpec, ctx: BuildContext) -> TextMetric:
    """Factory registered under ``rouge_l`` (options ``use_stemmer``, ``split_summaries``)."""
    return build_rouge(spec, "rougeL")
