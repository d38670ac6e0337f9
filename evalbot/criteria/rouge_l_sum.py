"""``rouge_l_sum`` (Vertex): ROUGE-Lsum F-measure of the response against the reference.

Summary-level LCS: each reference line is matched against the union of its LCS with the response's lines (lines are
the sentences unless ``split_summaries`` is set).

rouge-score's ``rougeLsum``, configured as Vertex configures it; rules in evalbot.criteria.vertex_text.
"""

from __future__ import annotations

from evalbot.criteria.base import BuildContext
from evalbot.criteria.vertex_text import TextMetric, build_rouge
from evalbot.formats.config import CriterionSpec


def build(spec: CriterionSpec, ctx: BuildContext) -> TextMetric:
    """Factory registered under ``rouge_l_sum`` (options ``use_stemmer``, ``split_summaries``)."""
    return build_rouge(spec, "rougeLsum")
