"""Case lines: the line of each case's id, found in the text the loader read (for annotations)."""

from __future__ import annotations

import json
import re

from hypothesis import example, given, settings
from hypothesis import strategies as st

from evalbot.formats.lines import CaseLines
from evalbot.load import load_eval_set
from tests.fakes.builders import Writer, case, eval_set, inv


def searched_line(text: str, eval_id: str) -> int | None:
    """The reference: the first line (as str.splitlines splits) holding ``"eval_id": <json.dumps(id)>``."""
    pattern = re.compile(r'"eval_?[iI]d"\s*:\s*' + re.escape(json.dumps(eval_id)))
    return next((n for n, line in enumerate(text.splitlines(), 1) if pattern.search(line)), None)


TEXT = json.dumps({"eval_set_id": "shop", "eval_cases": [{"eval_id": "ok"}, {"eval_id": "bad"}]}, indent=2)


def test_snake_and_camel_keys_and_only_the_exact_id() -> None:
    """eval_id and evalId are found; a prefix of an id is not that id."""
    assert CaseLines(TEXT).line("bad") == 8
    assert CaseLines('{\n "evalId": "x"\n}').line("x") == 2
    assert CaseLines(TEXT).line("ba") is None and CaseLines("").line("x") is None


def test_other_line_breaks_count_as_splitlines_counts_them() -> None:
    """\\r\\n is one break; \\r, form feed and U+2028 are breaks too."""
    text = '{\r\n"a": 1,\r"b": 2,\x0c"c": "\u2028",\n"eval_id": "x"}'
    assert CaseLines(text).line("x") == searched_line(text, "x") == 6


IDS = ("x", "y", "é", 'a"b', "")
FRAGMENTS = st.sampled_from(
    ['"eval_id"', '"evalId"', '"eval_Id"', " ", "\t", ":", ", ", *(json.dumps(i) for i in IDS), '"é"', "\\", '"',
     "\n", "\r\n", "\r", "\u2028", "\x0c", "\x85", "\x1f", "{", "}"]
)


@settings(max_examples=400, deadline=None, database=None)
@given(st.lists(FRAGMENTS, max_size=40).map("".join))
@example('"eval_id":"eval_id":"x"')  # a value that is also the next key (found once by a full run)
def test_same_lines_as_a_search_line_by_line(text: str) -> None:
    """Whatever the text, each id's line is the first line a per-line search finds (the rule annotations used)."""
    lines = CaseLines(text)
    for eval_id in IDS:
        assert lines.line(eval_id) == searched_line(text, eval_id), (text, eval_id)


def test_the_loader_keeps_the_lines_of_the_text_it_read(write: Writer) -> None:
    """load_eval_set carries each case's line, so nothing reads the file again to place an annotation."""
    path = write("s.evalset.json", json.dumps(eval_set("s", case("a"), case("b", inv("q"))), indent=2))
    loaded = load_eval_set(path, lines=True)
    text = path.read_text()
    assert [loaded.case_line(c.eval_id) for c in loaded.cases] == [searched_line(text, "a"), searched_line(text, "b")]
    assert all(loaded.case_line(c.eval_id) for c in loaded.cases) and loaded.case_line("zzz") is None
    assert load_eval_set(path).case_line("a") is None  # only when asked for (the command line has no annotations)
