"""The Actions runner protocol: outputs survive any value, summary stays under 1 MiB, commands escape, JUnit parses."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evalbot.action import workflow as actions
from evalbot.render.junit import JUnitCase, JUnitSuite, junit_xml, write_junit
from tests.fakes.runner_files import parse_outputs


def test_outputs_round_trip_multiline_values(tmp_path: Path) -> None:
    """Several outputs, one with newlines and an '=' sign, come back exactly."""
    target = tmp_path / "out"
    actions.write_outputs(target, {"verdict": "regression", "report": "line 1\nline=2\n", "n": "3"})
    actions.write_outputs(target, {"comment-url": "https://x/y#c-1"})
    assert parse_outputs(target.read_text()) == {
        "verdict": "regression",
        "report": "line 1\nline=2\n",
        "n": "3",
        "comment-url": "https://x/y#c-1",
    }


def test_delimiter_inside_the_value_is_avoided() -> None:
    """A value containing the proposed delimiter gets a fresh one."""
    text = actions.format_output("x", "a\nEOF\nb", delimiter="EOF")
    assert text.splitlines()[0] != "x<<EOF"
    assert parse_outputs(text) == {"x": "a\nEOF\nb"}


@given(st.text(alphabet=st.characters(blacklist_characters="\r", blacklist_categories=("Cs",))))
@settings(max_examples=200, deadline=None)
def test_any_value_round_trips(value: str) -> None:
    """Whatever the text (LLM output included), the runner reads back the same value."""
    assert parse_outputs(actions.format_output("v", value)) == {"v": value}


@pytest.mark.parametrize("name", ["", "a b", "x\ny", "a<<b", "a=b", "1abc"])
def test_bad_output_names_are_refused(name: str) -> None:
    """Names that would break the file format are refused."""
    with pytest.raises(ValueError, match="output name"):
        actions.format_output(name, "v")


def test_summary_appends_under_the_cap(tmp_path: Path) -> None:
    """Small summaries are appended whole, after what is already there."""
    target = tmp_path / "summary.md"
    target.write_text("# earlier step\n")
    assert actions.append_summary(target, "## evalbot\nok\n") is True
    assert target.read_text() == "# earlier step\n## evalbot\nok\n"


def test_summary_is_truncated_on_a_line_with_a_notice(tmp_path: Path) -> None:
    """Over the cap the text is cut at a line boundary, a notice added, and the file stays within the cap."""
    target = tmp_path / "summary.md"
    target.write_text("x" * 100)
    body = "".join(f"| row {i} | ✓ |\n" for i in range(200))
    assert actions.append_summary(target, body, limit=1000) is False
    text = target.read_text(encoding="utf-8")
    assert len(text.encode()) <= 1000
    assert text.endswith(actions.TRUNCATION_NOTICE)
    assert text[100:].split("\n> **Summary")[0].rstrip("\n").endswith("✓ |")


@given(st.integers(0, 3000), st.text(max_size=3000))
@settings(max_examples=100, deadline=None)
def test_fit_summary_never_exceeds_the_limit(already: int, text: str) -> None:
    """Whatever is already written, the appended part keeps the file within the limit (or is empty)."""
    fitted = actions.fit_summary(text, already=already, limit=2000)
    assert already + len(fitted.encode()) <= max(2000, already) or fitted == ""
    assert fitted == text or fitted.endswith(actions.TRUNCATION_NOTICE) or fitted == ""


def test_default_summary_limit_is_one_mebibyte() -> None:
    """The cap is GitHub's 1024k."""
    assert actions.SUMMARY_LIMIT_BYTES == 1_048_576


def test_escaping_of_data_and_properties() -> None:
    """%, CR and LF are escaped everywhere; ':' and ',' only in properties."""
    assert actions.escape_data("50% a:b,c\r\nd") == "50%25 a:b,c%0D%0Ad"
    assert actions.escape_property("50% a:b,c\r\nd") == "50%25 a%3Ab%2Cc%0D%0Ad"


def test_annotation_line() -> None:
    """An annotation carries file, line range and title, escaped, and omits unset properties."""
    line = actions.annotation(
        "error", "score 0.4 < 0.8\nsee comment", file="evals/a,b.json", line=12, end_line=14, title="Regression: x"
    )
    assert line == (
        "::error file=evals/a%2Cb.json,line=12,endLine=14,title=Regression%3A x::score 0.4 < 0.8%0Asee comment"
    )
    assert actions.annotation("notice", "hi") == "::notice::hi"


def test_untrusted_text_is_fenced_with_stop_commands() -> None:
    """Model output that looks like a command is wrapped so the runner ignores it."""
    text = actions.quoted("::add-mask::oops\n::error::fake", token="t0k")
    assert text == "::stop-commands::t0k\n::add-mask::oops\n::error::fake\n::t0k::"
    first, second = actions.quoted("x"), actions.quoted("x")
    assert first != second  # random tokens cannot be guessed by the text


def test_mask_and_group() -> None:
    """add-mask and group lines have the runner's syntax."""
    assert actions.add_mask("s3cr%t") == "::add-mask::s3cr%25t"
    assert actions.group("Cases", "a\nb") == "::group::Cases\na\nb\n::endgroup::"


def test_junit_counts_and_outcomes(tmp_path: Path) -> None:
    """Suites and totals count tests/failures/errors/skipped; messages and details survive XML escaping."""
    suites = [
        JUnitSuite(
            "checkout.evalset.json",
            [
                JUnitCase('case <1> & "q"', "checkout", 1.5),
                JUnitCase("case2", "checkout", 0.5, failure="tool_trajectory 0.0 < 1.0", details="expected a\x07b"),
                JUnitCase("case3", "checkout", error="judge timeout"),
            ],
        ),
        JUnitSuite("refund.evalset.json", [JUnitCase("r1", "refund", skipped="not_evaluated: no key")]),
    ]
    target = tmp_path / "out" / "junit.xml"
    write_junit(target, suites)
    root = ET.parse(target).getroot()
    assert (root.get("tests"), root.get("failures"), root.get("errors"), root.get("skipped")) == ("4", "1", "1", "1")
    first = root.find("testsuite")
    assert first is not None and first.get("time") == "2.000" and first.get("failures") == "1"
    cases = root.findall(".//testcase")
    assert cases[0].get("name") == 'case <1> & "q"'
    failure = cases[1].find("failure")
    assert failure is not None and failure.get("message") == "tool_trajectory 0.0 < 1.0"
    assert failure.text == "expected ab"  # the bell character XML cannot carry is dropped
    assert cases[3].find("skipped") is not None


def test_junit_empty_run_is_still_valid_xml() -> None:
    """No suites still yields a parseable document with zero totals."""
    root = ET.fromstring(junit_xml([]))
    assert root.tag == "testsuites" and root.get("tests") == "0"
