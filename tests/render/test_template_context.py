"""The template context's cases are dumped on access (render.context.CaseList): what a template reads is what the
whole-comparison dump gave, the built-in comment dumps no case, and a template cannot reach the models behind it."""

from __future__ import annotations

import json
from typing import Any

import pytest

import evalbot.render.context as context_module
from evalbot.compare.model import Comparison
from evalbot.formats.lookalike import escape_lookalike
from evalbot.render.bounded import BoundedSandbox
from evalbot.render.comment import (
    CUSTOM_TEMPLATE,
    Links,
    TemplateError,
    _context,
    _render,
    environment,
    render_comment,
    render_summary,
)
from evalbot.render.context import CaseList, comparison_data, materialized
from evalbot.render.views import Limits
from tests.fakes.comparisons import MARKER, compared, small
from tests.fakes.reports import RESP, TRAJ, case, eval_set, metric, report, turn


def eager(comparison: Comparison) -> dict[str, Any]:
    """The template context's ``c`` as it was made before cases were dumped on access: one dump of everything."""
    data: dict[str, Any] = comparison.model_dump(mode="json", exclude={"report": {"eval_sets"}})
    for es in data["eval_sets"]:
        es["eval_set_id"] = escape_lookalike(es["eval_set_id"])
        for c in es["cases"]:
            c["eval_id"] = escape_lookalike(c["eval_id"])
            if isinstance(c.get("current"), dict) and isinstance(c["current"].get("eval_id"), str):
                c["current"]["eval_id"] = escape_lookalike(c["current"]["eval_id"])
    for change in data["yardstick"]:
        for key in ("eval_set_id", "case", "criterion", "what", "current"):
            if isinstance(change.get(key), str):
                change[key] = escape_lookalike(change[key])
    return data


def lookalikes() -> Comparison:
    """Look-alike ids (zero-width space, a Cyrillic letter), a removed eval set and case, a new case, no turns."""
    main = report(
        eval_set("orders", [case("refund", {TRAJ: metric(1.0)}), case("gone", {TRAJ: metric(1.0)}),
                            case("ref\u0443nd", {TRAJ: metric(1.0), RESP: metric(0.9, 0.6)})]),
        eval_set("old\u200bset", [case("x", {TRAJ: metric(1.0)})]),
    )
    pr = report(eval_set("orders", [
        case("refund", {TRAJ: metric(0.0)}, turns=[turn(expected_calls=[("a", {"k": 1})], actual_calls=[])]),
        case("ref\u0443nd", {TRAJ: metric(1.0), RESP: metric(0.2, 0.6)}),
        case("new\u200bcase", {TRAJ: metric(0.0)}),
    ]))
    return compared(main, pr)


COMPARISONS = {"small": small, "lookalikes": lookalikes, "no baseline": lambda: compared(None, small().report)}


@pytest.mark.parametrize("make", COMPARISONS.values(), ids=COMPARISONS.keys())
def test_lazy_context_equals_the_whole_dump(make: Any) -> None:
    """Materialised, ``c`` equals the old one-piece dump, key order included (``c|string`` and ``tojson`` without
    sort keys would show it), for comparisons with escaped ids, removed sets and cases, and no baseline."""
    comparison = make()
    lazy, old = comparison_data(comparison), eager(comparison)
    assert isinstance(lazy["eval_sets"][0]["cases"], CaseList)
    assert materialized(lazy) == old
    assert json.dumps(materialized(lazy)) == json.dumps(old)
    for es, old_es in zip(lazy["eval_sets"], old["eval_sets"], strict=True):
        cases = es["cases"]
        assert len(cases) == len(old_es["cases"]) and list(reversed(cases)) == old_es["cases"][::-1]
        for i in range(-len(cases), len(cases)):
            assert cases[i] == old_es["cases"][i]
        assert cases[1:] == old_es["cases"][1:] and type(cases[1:]) is list
        with pytest.raises(IndexError):
            cases[len(cases)]


EXPRESSIONS = [
    "{{ c }}", "{{ c|string }}", "{{ c|tojson }}", "{{ c.eval_sets|pprint }}", "{{ sets[0] }}",
    "{{ c.eval_sets[0].cases }}", "{{ c.eval_sets[0].cases|length }}", "{{ c.eval_sets[0].cases|count }}",
    "{{ c.eval_sets[0].cases[0] }}", "{{ c.eval_sets[0].cases[-1].current }}", "{{ c.eval_sets[0].cases[1:3] }}",
    "{{ c.eval_sets[0].cases[0].current.turns }}", "{{ c.eval_sets[0].cases|first }}",
    "{{ c.eval_sets[0].cases|last }}", "{{ c.eval_sets[0].cases|list }}", "{{ c.eval_sets[0].cases|reverse|list }}",
    "{{ c.eval_sets[0].cases|map(attribute='eval_id')|join(', ') }}",
    "{{ c.eval_sets[0].cases|selectattr('category', 'eq', 'regressed')|map(attribute='eval_id')|list }}",
    "{{ c.eval_sets[0].cases|rejectattr('current')|list }}",
    "{{ c.eval_sets[0].cases|sort(attribute='eval_id', reverse=true)|map(attribute='eval_id')|list }}",
    "{% for g in c.eval_sets[0].cases|groupby('category') %}{{ g.grouper }}={{ g.list|length }};{% endfor %}",
    "{{ c.eval_sets[0].cases|batch(2)|list }}", "{{ c.eval_sets[0].cases|tojson }}",
    "{{ c.eval_sets[0].cases|pprint }}", "{{ c.eval_sets[0].cases is sequence }}",
    "{{ c.eval_sets[0].cases is iterable }}", "{{ c.eval_sets[0].cases is mapping }}",
    "{{ c.eval_sets[0].cases == c.eval_sets[0].cases|list }}", "{{ c.eval_sets[0].cases != [] }}",
    "{{ c.eval_sets[0].cases[0] in c.eval_sets[0].cases }}", "{{ c.eval_sets[0].cases.index(c.eval_sets[0].cases[1]) }}",
    "{{ c.eval_sets[0].cases.count(c.eval_sets[0].cases[0]) }}", "{{ c.eval_sets[0].cases.copy() }}",
    "{{ c.eval_sets[0].cases + [1] }}", "{{ [1] + c.eval_sets[0].cases }}", "{{ c.eval_sets[0].cases * 2 }}",
    "{{ c.eval_sets[0].cases + c.eval_sets[0].cases }}", "{% if c.eval_sets[0].cases %}yes{% endif %}",
    "{% for case in c.eval_sets[0].cases %}{{ loop.index }} {{ case.eval_id }} {{ case.current.status if case.current "
    "else '-' }}|{% endfor %}",
    "{{ c.eval_sets[0].cases|map(attribute='metrics')|map('length')|sum }}", "{{ c.eval_sets[0].cases|random is mapping }}",
    "{{ c.eval_sets[0].cases[true] }}", "{{ c.eval_sets[0].cases['index'] is callable }}",
    "{{ c.eval_sets[0].cases[99] is defined }}", "{{ set_counts(c.eval_sets[0]) }}", "{{ set_counts(sets[-1]) }}",
    "{{ c.eval_sets[0].cases|unique(attribute='category')|map(attribute='category')|list }}",
    "{{ c.eval_sets[0].cases|min(attribute='eval_id') }}",
]


def _rendered(comparison: Comparison, data: dict[str, Any], template: str) -> str:
    env = environment(template)
    ctx = _context(comparison, data, Limits(detailed=3, listed=5, text=100), marker=MARKER, links=Links(),
                   kind="comment")
    try:
        return _render(env, CUSTOM_TEMPLATE, ctx)
    except TemplateError as exc:
        return f"error: {exc}"


@pytest.mark.parametrize("make", COMPARISONS.values(), ids=COMPARISONS.keys())
def test_custom_template_reads_the_same_through_the_lazy_cases(make: Any) -> None:
    """Every way a template reads ``c`` (printing it whole, tojson, pprint, indexing, slicing, filters, tests, list
    operators and methods) renders exactly what it rendered from the whole dump."""
    comparison = make()
    lazy, old = comparison_data(comparison), eager(comparison)
    for expression in EXPRESSIONS:
        new = _rendered(comparison, lazy, expression)
        assert not new.startswith("error:"), (expression, new)
        if "random" not in expression:
            assert new == _rendered(comparison, old, expression), expression


def test_bundled_comment_and_summary_dump_no_case(monkeypatch: pytest.MonkeyPatch) -> None:
    """The built-in templates count statuses from the models; no case is dumped for the comment or the summary."""
    dumped: list[str] = []
    real = context_module.case_data
    monkeypatch.setattr(context_module, "case_data", lambda case: dumped.append(case.eval_id) or real(case))
    comparison = small()
    assert "5 case(s): 2 passed, 3 failed" in render_comment(comparison, marker=MARKER)
    render_summary(comparison)
    assert dumped == []
    render_comment(comparison, marker=MARKER, template="{{ c.eval_sets[0].cases[1].eval_id }}")
    assert dumped == ["track_package"]


@pytest.mark.parametrize("call", [
    "{{ c.eval_sets[0].cases._cases }}",
    "{{ c.eval_sets[0].cases|attr('_cases') }}",
    "{{ c.eval_sets[0].cases['_cases'] }}",
    "{{ c.eval_sets[0].cases.__class__ }}",
    "{{ c.eval_sets[0].cases.__slots__ }}",
    "{{ c.eval_sets[0].cases.__getitem__(0) }}",
    "{{ c.eval_sets[0].cases.index.__self__ }}",
    "{{ c.eval_sets[0].cases.copy.__func__ }}",
    "{{ c.eval_sets[0].cases.__init__.__globals__ }}",
    "{{ sets[0].cases.__reversed__() }}",
    "{{ (c.eval_sets[0].cases|first).__class__.__mro__ }}",
    "{{ c.eval_sets[0].cases[0].current.model_dump() }}",
    "{{ c.eval_sets[0].cases.statuses() }}",
])
def test_hostile_template_cannot_reach_the_models(call: str) -> None:
    """Underscored and dunder attributes (where the models are) are refused, by attribute, ``attr`` or item; a
    case is a plain dict without model methods. Rendering fails cleanly (a template error, exit 2)."""
    with pytest.raises(TemplateError):
        render_comment(small(), marker=MARKER, template=call)


def test_hostile_template_cannot_repeat_the_cases_past_the_work_budget() -> None:
    """``*`` and ``+`` on the lazy cases are bounded like a list's (render.bounded): no million-item list is built."""
    env = environment()
    assert isinstance(env, BoundedSandbox)
    for template in ("{{ c.eval_sets[0].cases * 1000000 }}", "{{ c.eval_sets[0].cases * 199999 + c.eval_sets[0].cases * 2 }}"):
        with pytest.raises(TemplateError, match="longer than 1,000,000 items"):
            render_comment(small(), marker=MARKER, template=template)
    assert render_comment(small(), marker=MARKER, template="{{ (c.eval_sets[0].cases * 3)|length }}").endswith("15")
