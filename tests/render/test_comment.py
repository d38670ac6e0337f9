"""Tests of the rendered PR comment and job summary: golden files, size budget, hostile text, custom templates."""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from evalbot.compare.delta import compare
from evalbot.compare.gate import GatePolicy
from evalbot.compare.model import Comparison
from evalbot.render.comment import (
    COMMENT_LIMIT,
    SUMMARY_LIMIT,
    TemplateError,
    comment_marker,
    enforce_marker,
    render_comment,
    render_summary,
)
from evalbot.render.mdsafe import width
from evalbot.render.views import judge_text
from evalbot.results import (
    CheckedSentence,
    CheckedText,
    JudgeDetails,
    Problem,
    Report,
    RubricVerdict,
    VoteSplit,
)
from evalbot.turnpack import PackedTurns
from tests.fakes import markdown as md_structure
from tests.fakes.comparisons import LINKS, MARKER, compared, small
from tests.fakes.goldens import golden
from tests.fakes.reports import JUDGE, RESP, TRAJ, case, eval_set, metric, report, turn


def test_small_comment_golden() -> None:
    """The comment for a regression, a fix, an inconclusive judge flip and a new failing case."""
    text = render_comment(small(), marker=MARKER, links=LINKS)
    assert not md_structure.problems(text, MARKER)
    golden("comment_small.md", text)


def test_small_summary_golden() -> None:
    """The job summary has the same content without the marker."""
    text = render_summary(small(), links=LINKS)
    assert not md_structure.problems(text, None)
    golden("summary_small.md", text)


def test_no_baseline_golden() -> None:
    """Without a baseline: absolute scores, the sentence on how to create one, failing cases detailed."""
    pr = report(eval_set("orders", [case("a", {TRAJ: metric(1.0)}), case("b", {TRAJ: metric(0.0)})]))
    text = render_comment(compared(None, pr), marker=MARKER, links=LINKS)
    assert "No baseline at origin/main:.evalbot/baseline.json" in text and "evalbot baseline" in text
    assert not md_structure.problems(text, MARKER)
    golden("comment_no_baseline.md", text)


def large(n: int = 2000) -> Comparison:
    """n failing cases: half regressed, half still failing, each with a trajectory diff and long responses."""
    def cases(pr: bool) -> list:  # type: ignore[type-arg]
        out = []
        for i in range(n):
            regressed = i % 2 == 0
            ok = not pr and regressed
            calls = [("search", {"query": f"item {i}", "page": 1}), ("add_to_cart", {"sku": f"SKU-{i}", "qty": 1})]
            actual = calls if ok else [calls[0], ("add_to_cart", {"sku": f"SKU-{i}", "qty": 2})]
            out.append(case(f"case_{i:04d}", {TRAJ: metric(1.0 if ok else 0.0), RESP: metric(0.9 if ok else 0.2, 0.6)},
                            turns=[turn(user=f"buy item {i}", expected_calls=calls, actual_calls=actual,
                                        expected_response="Added one item to your cart. " * 20,
                                        actual_response="Added two items to your cart. " * 20)]))
        return out
    return compared(report(eval_set("shop", cases(False))), report(eval_set("shop", cases(True))))


def test_large_comment_stays_within_the_limit_and_points_to_the_rest() -> None:
    """2,000 failing cases: the comment fits GitHub's limit, shows the first regressions and says how many more."""
    c = large()
    text = render_comment(c, marker=MARKER, links=LINKS)
    assert width(text) <= 60_000 < COMMENT_LIMIT
    assert "… and" in text and "job summary" in text
    assert "Regressed (1000)" in text and "Still failing (1000)" in text
    assert not md_structure.problems(text, MARKER)
    golden("comment_large.md", text)
    summary = render_summary(c, links=LINKS)
    assert len(summary.encode("utf-8")) <= SUMMARY_LIMIT and len(summary) > len(text)
    assert not md_structure.problems(summary, None)


HOSTILE = (
    "東京 مرحبا Ελληνικά\n```\n</details>\n<!-- evalbot id=default -->\n@org/team please look | col | #12\n"
    "````\n<details><summary>fake ✅ all passed</summary>\n" + "ｌｏｎｇ" * 3000
)


def hostile() -> Comparison:
    main = report(eval_set("s", [case("x", {TRAJ: metric(1.0), JUDGE: metric(1.0, 0.8, votes=[(5, 0)])})]))
    pr = report(eval_set("s", [case("x", {TRAJ: metric(0.0), JUDGE: metric(0.0, 0.8, votes=[(0, 5)],
                                                                             rationale=HOSTILE)},
                                    turns=[turn(user=HOSTILE, expected_calls=[("lookup", {"q": HOSTILE})],
                                                actual_calls=[("lookup", {"q": "@org/team ``` </details>"})],
                                                expected_response=HOSTILE, actual_response=HOSTILE)])]))
    pr.eval_sets[0].cases[0].eval_id = "x"
    pr.eval_sets[0].eval_set_id = "s"
    return compared(main, pr)


def test_hostile_text_cannot_break_the_comment() -> None:
    """Backticks, </details>, a forged marker, @org/team, pipes, very long lines and non-Latin text stay inert."""
    text = render_comment(hostile(), marker=MARKER, links=LINKS)
    assert not md_structure.problems(text, MARKER)
    assert "東京 مرحبا Ελληνικά" in text
    golden("comment_hostile.md", text)


def test_hostile_eval_set_and_case_ids_are_escaped() -> None:
    """Ids are untrusted too: they are escaped in headings, summaries and tables."""
    main = report(eval_set("s", [case("x", {TRAJ: metric(1.0)})]))
    pr = report(eval_set("s", [case("x", {TRAJ: metric(0.0)})]))
    pr.eval_sets[0].eval_set_id = "s"
    c = compared(main, pr)
    for es in c.eval_sets:
        es.eval_set_id = "</details>|@org/team <!-- evalbot id=default -->\n# heading"
        for cc in es.cases:
            cc.eval_id = "| x | y |\n</summary></details>"
    text = render_comment(c, marker=MARKER)
    assert not md_structure.problems(text, MARKER)


def test_tiny_budget_falls_back_to_a_short_body() -> None:
    """When nothing fits, a short verdict with pointers is posted instead."""
    text = render_comment(large(50), marker=MARKER, links=LINKS, target=600)
    assert width(text) <= 600 and text.startswith(MARKER)
    assert "did not fit" in text and "blocked" in text
    assert not md_structure.problems(text, MARKER)


def test_custom_template_can_extend_the_default() -> None:
    """A user template extending comment.md.j2 replaces one block and keeps the rest."""
    tpl = '{% extends "comment.md.j2" %}{% block verdict %}## Agent check: {{ c.gate.verdict }}\n{% endblock %}'
    text = render_comment(small(), marker=MARKER, template=tpl)
    assert "## Agent check: blocked" in text and "evalbot: blocked" not in text
    assert "#### orders" in text and text.startswith(MARKER + "\n")


def test_custom_template_can_replace_the_default() -> None:
    """A standalone template is used as is; the marker is added and untrusted text printed raw is softened."""
    tpl = ("Verdict {{ c.gate.verdict }}: "
           "{% for es in c.eval_sets %}{% for x in es.cases %}{{ x.current.turns[0].actual_response }}"
           "{% endfor %}{% endfor %}\n{{ '<!-- evalbot id=default -->' }}")
    c = small()
    current = c.eval_sets[0].cases[0].current
    assert current is not None
    turns = list(current.turns)  # a case's turns are rebuilt on every read: change a copy, then assign it back
    turns[0].actual_response = "@org/team <!-- evalbot id=default -->"
    current.turns = PackedTurns.of(turns)  # stored packed, as every writer of a result stores them
    text = render_comment(c, marker=MARKER, template=tpl)
    assert text.startswith(MARKER + "\nVerdict blocked:")
    assert text.count("<!--") == 1 and "@org/team" not in text and "org/team" in text


def test_custom_template_errors_are_reported() -> None:
    """Syntax errors, undefined names and sandbox violations become TemplateError naming the problem."""
    with pytest.raises(TemplateError, match="line 1"):
        render_comment(small(), marker=MARKER, template="{% if %}")
    with pytest.raises(TemplateError, match="nope"):
        render_comment(small(), marker=MARKER, template="{{ nope }}")
    with pytest.raises(TemplateError):
        render_comment(small(), marker=MARKER, template="{{ c.__class__.__mro__ }}")


def test_oversized_custom_template_falls_back() -> None:
    """A user template whose output never fits is replaced by the short fallback body."""
    text = render_comment(small(), marker=MARKER, template="{% for i in range(40000) %}xy{% endfor %}")
    assert width(text) < 1000 and "did not fit" in text and text.startswith(MARKER)


def test_invalid_input_comment_lists_the_problems() -> None:
    """A run with unusable input says so first and lists each problem."""
    r = Report(errors=[Problem(path="evals", message="directory holds no *.evalset.json file")])
    text = render_comment(compare(current=r, baseline=None, policy=GatePolicy()), marker=MARKER)
    assert "### ⚠️ evalbot: invalid input: evals: directory holds no \\*.evalset.json file\n" in text
    assert "- evals: directory holds no \\*.evalset.json file" in text
    assert not md_structure.problems(text, MARKER)


def test_invalid_input_headline_names_the_first_problem_and_counts_the_rest() -> None:
    problems = [Problem(path=f"evals/{n}", message="no such file or directory") for n in ("a", "b", "c")]
    text = render_comment(compare(current=Report(errors=problems), baseline=None, policy=GatePolicy()), marker=MARKER)
    assert "### ⚠️ evalbot: invalid input: evals/a: no such file or directory · 2 more problem(s)\n" in text
    long = Report(errors=[Problem(path="evals", message="x" * 500)])
    title = render_comment(compare(current=long, baseline=None, policy=GatePolicy()), marker=MARKER).splitlines()[1]
    assert title.endswith("x…") and len(title) < 250


def test_enforce_marker_keeps_exactly_one() -> None:
    """The marker is put first and any other evalbot marker is broken."""
    out = enforce_marker("hello\n<!-- evalbot id=default -->\n<!--evalbot id=other -->", MARKER)
    assert out.startswith(MARKER + "\nhello") and out.count("<!--") == 1


def test_comment_marker_sanitises_the_id() -> None:
    """Ids cannot close the HTML comment or add spaces."""
    assert comment_marker("ci/evals-1") == "<!-- evalbot id=ci/evals-1 -->"
    assert comment_marker("x --> <b>") == "<!-- evalbot id=x------b- -->"


fragments = st.sampled_from(["```", "`", "</details>", "<details>", "<!-- evalbot id=default -->", "@org/team",
                             "|", "\n", "#7", "東京", "x" * 3000, "- item", "\\", "<b>", "~~~~"])
hostile_text = st.lists(fragments | st.text(max_size=30), max_size=8).map("".join)


@st.composite
def comparisons(draw: st.DrawFn) -> Comparison:
    n = draw(st.integers(0, 40))
    main_cases, pr_cases = [], []
    for i in range(n):
        eid = draw(hostile_text) or f"c{i}"
        before, after = draw(st.booleans()), draw(st.booleans())
        votes = [(draw(st.integers(0, 5)), draw(st.integers(0, 5)))]
        main_cases.append(case(eid, {TRAJ: metric(1.0 if before else 0.0), JUDGE: metric(1.0 if before else 0.0,
                                                                                        votes=votes)}))
        text = draw(hostile_text)
        pr_cases.append(case(eid, {TRAJ: metric(1.0 if after else 0.0),
                                   JUDGE: metric(1.0 if after else 0.0, votes=votes, rationale=text)},
                             fingerprint=None if draw(st.integers(0, 9)) == 0 else f"fp-{eid}",
                             turns=[turn(user=text, expected_calls=[(text[:20] or "f", {"a": text})],
                                         actual_calls=[("f", {"a": text[::-1]})], expected_response=text,
                                         actual_response=text[::-1])]))
    set_id = draw(hostile_text) or "s"
    return compared(report(eval_set(set_id, main_cases)), report(eval_set(set_id, pr_cases)))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(comparisons(), st.sampled_from([COMMENT_LIMIT, 8000, 2000]))
def test_any_comment_is_within_budget_and_well_formed(c: Comparison, target: int) -> None:
    """Whatever the cases and text, the comment fits its budget, has one marker, closed fences, balanced details
    and regular tables."""
    text = render_comment(c, marker=MARKER, links=LINKS, target=target)
    assert width(text) <= target
    assert md_structure.problems(text, MARKER) == []


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(comparisons())
def test_any_summary_is_within_budget_and_well_formed(c: Comparison) -> None:
    """The job summary is well formed and below 1 MiB."""
    text = render_summary(c, links=LINKS)
    assert len(text.encode("utf-8")) <= SUMMARY_LIMIT
    assert md_structure.problems(text, None) == []


def test_usage_from_an_untrusted_report_is_numbers_or_refused() -> None:
    """A crafted artifact cannot put markdown in the usage line: non-numbers are refused when the report is read
    (naming the key), and the one text field, ``prices``, is shown inline and clipped."""
    for total in ({"requests": "[x](https://e.vil) ![](https://e.vil/p.png)\n## h"}, {"cached_samples": "</details>"},
                  {"estimated_cost_usd": "free"}, "lots"):
        with pytest.raises(ValidationError) as info:
            Report.model_validate_json(json.dumps({"usage": {"total": total}}))
        assert info.value.errors()[0]["loc"][:2] == ("usage", "total")
    r = Report(usage={"total": {"requests": 3, "estimated_cost_usd": 0.5},
                      "prices": "</details>\n## h [x](https://e.vil)" + "z" * 500})
    text = render_comment(compare(current=r, baseline=None, policy=GatePolicy()), marker=MARKER)
    assert "Judge cost ≈ 0.5000 USD · 3 request(s), 0 input + 0 output tokens · 0 from the cache" in text
    assert "</details>\n## h" not in text and "\n## h" not in text and "z" * 200 not in text
    assert text.count("</details>") == text.count("<details>")  # the prices text closed nothing


def test_judge_text_ignores_malformed_steps() -> None:
    """Judge details of the wrong shape (a crafted artifact) add nothing instead of crashing the renderer."""
    def text(details: object) -> str:
        return judge_text(JudgeDetails.read(details), None)  # type: ignore[arg-type]

    assert text({"steps": 5, "rationale": "why"}) == "why"
    assert text({"steps": [{"text": "t", "sentences": 3}]}) == "Checked: t"
    assert text({"rationale": ["not", "text"], "rubrics": [7, {"rubric_id": "r", "score": "high"}]}) == ""
    assert text("not a mapping") == "" and text(None) == ""
    mixed = {"steps": [{"text": "t", "sentences": [{"sentence": "s", "label": 5}, {"sentence": "a", "label": "ok"}]}],
             "rubrics": [{"rubric_id": "r1", "score": 1.0, "rationale": "fine"}, {"rubric_id": ["x"]}]}
    assert text(mixed) == "Checked: t\n[a] ok:\n[r1] 1.0: fine"


def test_judge_text_of_each_judged_shape() -> None:
    """What each judged criterion records reads back as the lines the comment shows."""
    voted = JudgeDetails(votes=VoteSplit(yes=2, no=1, unparsed=0), rationale="same facts").as_details()
    assert judge_text(JudgeDetails.read(voted), "why not") == "why not\nsame facts"
    assert judge_text(JudgeDetails.read(voted), "same facts") == "same facts"
    checked = JudgeDetails(steps=[CheckedText(text="It opens at 9.", error="boom"), CheckedText(
        text="Shipping is free.", sentences=[CheckedSentence(sentence="Shipping is free.", label="unsupported",
                                                             rationale="no such policy")], score=0)])
    assert judge_text(JudgeDetails.read(checked.as_details()), None) == (
        "Checked: It opens at 9. (error: boom)\nChecked: Shipping is free.\n"
        "[Shipping is free.] unsupported: no such policy")
    rubrics = JudgeDetails(rubrics=[RubricVerdict(rubric_id="polite", score=0.0, rationale="rude",
                                                  votes=VoteSplit(yes=1, no=2))], unmatched=["x"], answer="raw")
    assert judge_text(JudgeDetails.read(rubrics.as_details()), None) == "[polite] 0.0: rude"
