"""The comment's block structure at any section size, GitHub's auto-link forms, and a headline that agrees with
the body (issue 11)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evalbot.cli.commands import main
from evalbot.render.comment import render_comment
from evalbot.render.mdsafe import JOINER, html, inline, no_pings, soften
from tests.fakes import markdown as md_structure
from tests.fakes.comparisons import LINKS, MARKER, compared
from tests.fakes.reports import RESP, TRAJ, case, eval_set, metric, report, turn

FORMS = ["#1", "GH-1", "gh-12", "owner/repo#1", "a5c3785ed8d6a35868bc169f07e40e889087fd2e", "deadbee", "@user",
         "@org/team", "&#35;1", "&#x23;1", "&num;1", "&commat;user"]


def regressed(n: int) -> str:
    """The comment for n cases that all regressed (one section holding n cases)."""
    def cases(ok: bool) -> list:  # type: ignore[type-arg]
        return [case(f"case_{i:04d}", {TRAJ: metric(1.0 if ok else 0.0)},
                     turns=[turn(user=f"q{i}", expected_calls=[("a", {})], actual_calls=[("b", {})])])
                for i in range(n)]
    return render_comment(compared(report(eval_set("s", cases(True))), report(eval_set("s", cases(False)))),
                          marker=MARKER, links=LINKS)


@pytest.mark.parametrize("n", [1, 25, 26, 1000])
def test_sections_are_well_formed_at_any_size(n: int) -> None:
    """No markdown line is swallowed by an HTML block: the one-line list after the last </details> starts after a
    blank line (at 26+ cases it followed </details> directly and GitHub showed it as raw text)."""
    text = regressed(n)
    assert not md_structure.problems(text, MARKER)
    assert f"Regressed ({n})" in text
    if n > 25:  # the one-line list exists and follows the last case's </details> after a blank line
        first = text.index("\n- **s / case\\_0025**")
        assert text[:first].endswith("</details>\n")


def test_the_checker_catches_the_old_layout() -> None:
    """The structure check itself: a list right after </details> is inside the HTML block."""
    broken = "<details><summary>x</summary>\n\ny\n\n</details>\n- **a**\n"
    assert md_structure.markdown_in_html_blocks(broken.split("\n"))
    assert not md_structure.markdown_in_html_blocks(broken.replace("</details>\n", "</details>\n\n").split("\n"))


@pytest.mark.parametrize("form", FORMS)
def test_every_autolink_form_is_neutralised_in_every_filter(form: str) -> None:
    """inline (prose, cells), html (<summary>) and soften (unfiltered text) all break the form."""
    for out in (inline(f"see {form} now"), html(f"see {form} now"), soften(f"see {form} now")):
        assert not md_structure.live_references([out]), out
        assert not md_structure._MENTION.search(out), out
    assert no_pings(no_pings(form)) == no_pings(form)  # idempotent


def test_autolink_forms_in_every_context_of_a_rendered_comment() -> None:
    """Ids, reasons, the <summary> line, judge rationales and user turns carrying every form stay inert."""
    hostile = " ".join(FORMS)
    main_ = report(eval_set("s", [case("x", {TRAJ: metric(1.0), RESP: metric(0.9, 0.6)})]))
    pr = report(eval_set("s", [case("x", {TRAJ: metric(0.0), RESP: metric(0.1, 0.6)},
                                    turns=[turn(user=hostile, expected_calls=[("a", {"q": hostile})],
                                                actual_calls=[("b", {})], expected_response=hostile,
                                                actual_response=hostile)], reason=hostile)]))
    c = compared(main_, pr)
    for es in c.eval_sets:
        es.eval_set_id = f"set {hostile}"
        for cc in es.cases:
            cc.eval_id = f"case {hostile}"
    text = render_comment(c, marker=MARKER, links=LINKS)
    assert not md_structure.problems(text, MARKER)
    summary = next(line for line in text.split("\n") if line.startswith("<details") and "case " in line)
    assert JOINER in summary and "owner/repo#" + JOINER + "1" in summary


def test_headline_with_fail_on_never_names_the_regression() -> None:
    """fail-on never: the job passes, but the headline says what regressed instead of "no regressions"."""
    main_ = report(eval_set("s", [case("x", {TRAJ: metric(1.0)}), case("y", {TRAJ: metric(1.0)})]))
    pr = report(eval_set("s", [case("x", {TRAJ: metric(0.0)}), case("y", {TRAJ: metric(1.0)})]))
    c = compared(main_, pr, fail_on="never")
    text = render_comment(c, marker=MARKER, links=LINKS)
    head = text.split("\n")[1]
    assert c.gate.exit_code == 0 and "Regressed (1)" in text
    assert "no regressions" not in head and "1 regressed — not blocking: fail-on never" in head
    assert "✅" not in head


def test_eval_set_status_agrees_with_its_counts(tmp_path: Path) -> None:
    """An agent raising on every case fails them (not errors); the eval set is then FAIL, not ERROR with 0 errors."""
    out = tmp_path / "r.json"
    assert main(["run", "examples/agent/weather.evalset.json", "--agent", "tests.fakes.agents:raises",
                 "--report", str(out)], {}) == 1
    es = json.loads(out.read_text(encoding="utf-8"))["eval_sets"][0]
    statuses = {c["status"] for c in es["cases"]}
    assert statuses == {"failed"} and es["status"] == "failed" and not es["errors"]
