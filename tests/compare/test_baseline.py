"""Tests of the baseline file: building it from a report, its canonical JSON, parsing and reading it via git."""

from __future__ import annotations

import json
import math
import subprocess
import time
import tracemalloc
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest

from evalbot.compare.baseline import (
    BASELINE_SCHEMA_VERSION,
    Baseline,
    BaselineSpec,
    PackedCases,
    RunCases,
    _parse_by_case,
    _parse_whole,
    build_baseline,
    case_marks,
    dump_baseline,
    parse_baseline,
    parse_spec,
    read_baseline,
    replaced_cases,
    restricted,
    same_scores,
)
from evalbot.compare.efficiency import PackedValues
from evalbot.compare.votes import Votes, votes_of
from evalbot.errors import InputError
from evalbot.git import GitResult, git_show, run_git
from tests.fakes.reports import JUDGE, RESP, TRAJ, case, criterion, eval_set, metric, report


def sample_report():  # type: ignore[no-untyped-def]
    return report(
        eval_set("orders", [
            case("refund", {TRAJ: metric(1.0), JUDGE: metric(1.0, votes=[(4, 1), (5, 0)])}),
            case("track", {TRAJ: metric(0.0), "tool_call_count_v1": metric(None, None, status="informational")}),
        ], criteria=[criterion(TRAJ), criterion(JUDGE, judged=True,
                                                options={"judge_model_options": {"judge_model": "gemini-x"}})]),
        eval_set("faq", [case("hours", {RESP: metric(0.9, 0.8)})]),
    )


def test_build_keeps_scores_statuses_fingerprints_and_votes() -> None:
    """Every case and criterion lands in the baseline with its score, status, fingerprint and judge votes."""
    b = build_baseline(sample_report(), commit="abc123", created_at="2025-01-02T03:04:05+00:00")
    orders = b.eval_sets["orders"]
    assert b.commit == "abc123" and b.created_at == "2025-01-02T03:04:05+00:00"
    assert b.judge_models == ["gemini-x"]
    assert orders.criteria[JUDGE].judge_model == "gemini-x" and orders.criteria[JUDGE].judged
    assert orders.criteria[TRAJ].fingerprint == f"cfg-{TRAJ}"
    assert orders.criteria[TRAJ].mean == 0.5 and orders.criteria[TRAJ].passed == 1
    refund = orders.cases["refund"]
    assert refund.fingerprint == "fp-refund" and refund.status == "passed"
    assert refund.metrics[JUDGE].votes == [Votes(yes=4, no=1), Votes(yes=5, no=0)]
    assert refund.metrics[TRAJ].votes is None


def test_judged_criterion_without_a_model_records_the_default() -> None:
    """A judged criterion that names no judge model records evalbot's default, so a new default is noticed."""
    r = report(eval_set("s", [case("a", {JUDGE: metric(1.0, votes=[(5, 0)])})]))
    b = build_baseline(r, commit=None, created_at=None)
    assert b.eval_sets["s"].criteria[JUDGE].judge_model == "gemini-2.5-flash" and b.judge_models == ["gemini-2.5-flash"]


def test_informational_metrics_without_a_value_are_left_out() -> None:
    """Metrics that are informational and have no score would only add noise to the file's diffs."""
    b = build_baseline(sample_report(), commit=None, created_at=None)
    assert "tool_call_count_v1" not in b.eval_sets["orders"].cases["track"].metrics


def _one_line_trends(flat: str) -> str:
    """``flat`` (json.dumps with indent=2) with each ``"trend"`` list joined onto its key's line."""
    out: list[str] = []
    lines = iter(flat.splitlines())
    for line in lines:
        if line.strip() == '"trend": [':
            items = []
            for inner in lines:
                if inner.strip() in ("]", "],"):
                    break
                items.append(inner.strip())
            body = " ".join(items).replace("{ ", "{").replace(" }", "}").replace("},", "},")
            out.append(line + json.dumps(json.loads("[" + body + "]"), sort_keys=True, ensure_ascii=False,
                                         separators=(", ", ": "))[1:] + ("," if inner.strip() == "]," else ""))
        else:
            out.append(line)
    return "\n".join(out) + "\n"


def test_dump_is_canonical_and_round_trips() -> None:
    """Sorted keys, two-space indent, trailing newline, non-ASCII kept; parsing gives the same baseline back."""
    r = sample_report()
    r.eval_sets[1].cases[0].eval_id = "heures-d'ouverture-東京"
    b = build_baseline(r, commit="c", created_at="t")
    text = dump_baseline(b)
    assert text.endswith("}\n") and text.startswith("{\n  \"commit\"")
    assert "東京" in text
    data = json.loads(text)
    flat = json.dumps(data, sort_keys=True, indent=2, ensure_ascii=False) + "\n"
    assert [line for line in text.splitlines() if '"trend"' not in line] == [  # a trend is one line, the rest as json
        line for line in _one_line_trends(flat).splitlines() if '"trend"' not in line]
    assert text == _one_line_trends(flat)
    assert parse_baseline(text, "b.json") == b
    assert dump_baseline(build_baseline(r, commit="c", created_at="t")) == text


def test_parsed_cases_share_their_bookkeeping_and_stay_as_parsed() -> None:
    """A parsed baseline's cases and criteria share one fields-set per distinct set of given keys and one string per
    status (memory), and read, dump, copy and compare exactly as validated: a copy's changes stay its own."""
    r = sample_report()
    r.eval_sets[0].cases.append(case("more", {TRAJ: metric(0.0)}))
    text = dump_baseline(build_baseline(r, commit="c", created_at="t"))
    b = parse_baseline(text, "b.json")
    cases = b.eval_sets["orders"].cases
    refund, track, more = cases["refund"], cases["track"], cases["more"]
    assert refund.__pydantic_fields_set__ is more.__pydantic_fields_set__
    assert refund.metrics[TRAJ].__pydantic_fields_set__ is not refund.metrics[JUDGE].__pydantic_fields_set__
    assert track.metrics[TRAJ].__pydantic_fields_set__ is more.metrics[TRAJ].__pydantic_fields_set__
    assert track.status is more.status and track.metrics[TRAJ].status is more.metrics[TRAJ].status
    assert b == Baseline.model_validate(json.loads(text)) and dump_baseline(b) == text
    whole = Baseline.model_validate(json.loads(text))
    assert b.model_dump(exclude_unset=True) == whole.model_dump(exclude_unset=True)
    assert "content" not in refund.model_fields_set
    copy = more.model_copy(update={"content": "abc"})
    assert "content" in copy.model_fields_set and "content" not in refund.model_fields_set | more.model_fields_set


def test_duplicate_eval_set_ids_get_distinct_keys() -> None:
    """Two eval sets with the same id are kept apart instead of overwriting each other."""
    r = report(eval_set("x", [case("a", {TRAJ: metric(1.0)})]), eval_set("x", [case("b", {TRAJ: metric(1.0)})]))
    b = build_baseline(r, commit=None, created_at=None)
    assert sorted(b.eval_sets) == ["x", "x#2"]


def test_parse_errors_name_the_source_and_pointer() -> None:
    """Broken baselines raise InputError with the file and the JSON pointer of the problem."""
    with pytest.raises(InputError, match="line 1"):
        parse_baseline("{", "main:.evalbot/baseline.json")
    with pytest.raises(InputError) as missing:
        parse_baseline("{}", "b.json")
    assert missing.value.pointer == "/schema_version"
    bad = {"schema_version": 1, "eval_sets": {"s": {"path": "p", "cases": {"c": {"status": "great"}}}}}
    with pytest.raises(InputError) as wrong:
        parse_baseline(json.dumps(bad), "b.json")
    assert wrong.value.pointer == "/eval_sets/s/cases/c/status"
    with pytest.raises(InputError, match="expected a baseline JSON object"):
        parse_baseline("[]", "b.json")


def test_other_schema_version_is_returned_as_incompatible_header() -> None:
    """A baseline from another schema keeps its header and is marked incompatible, not misread."""
    text = json.dumps({"schema_version": 99, "commit": "old", "evalbot_version": "9.0", "eval_sets": {"x": 1}})
    b = parse_baseline(text, "b.json")
    assert b.schema_version == 99 and not b.compatible and b.commit == "old" and b.eval_sets == {}
    assert Baseline().compatible and BASELINE_SCHEMA_VERSION == 1


@pytest.mark.parametrize(
    ("details", "expected"),
    [
        ({"votes": {"yes": 3, "no": 2, "unparsed": 0}}, Votes(yes=3, no=2)),
        ({"votes": [1.0, 0.0, None, 1.0]}, Votes(yes=2, no=1)),
        ({"samples": [{"score": 0.0}, {"score": 0.0}]}, Votes(yes=0, no=2)),
        ({"votes": ["valid", "invalid", "?"]}, Votes(yes=1, no=1)),
        ({"rubrics": [{"votes": {"yes": 5, "no": 0}}, {"votes": {"yes": 0, "no": 5}}]},
         Votes(yes=5, no=5, pooled_split=False)),
        ({"rubrics": [{"votes": {"yes": 3, "no": 2}}]}, Votes(yes=3, no=2, pooled_split=True)),
        ({"votes": {"yes": 0, "no": 0}}, None),
        ({"votes": {"yes": True, "no": 1}}, None),
        ({"rationale": "no votes here"}, None),
        (None, None),
    ],
)
def test_votes_of_reads_the_recorded_shapes(details: dict | None, expected: Votes | None) -> None:  # type: ignore[type-arg]
    """Vote splits are read from every shape judged criteria record; anything else is None."""
    assert votes_of(details) == expected


def test_votes_split_and_majority() -> None:
    """3–2 is split, 5–0 is not; a tie fails like ADK; pooled votes use the recorded split."""
    assert Votes(yes=3, no=2).split and not Votes(yes=5, no=0).split
    assert not Votes(yes=2, no=2).passed and Votes(yes=3, no=2).passed
    assert not Votes(yes=5, no=5, pooled_split=False).split


def test_parse_spec_distinguishes_files_and_git_refs() -> None:
    """An existing file wins; REF:PATH needs both parts."""
    assert parse_spec("main:b.json", file_exists=lambda p: True) == BaselineSpec("main:b.json")
    assert parse_spec("origin/main:.evalbot/b.json", file_exists=lambda p: False) == BaselineSpec(
        ".evalbot/b.json", "origin/main"
    )
    assert parse_spec("b.json", file_exists=lambda p: False) == BaselineSpec("b.json")
    with pytest.raises(InputError, match="REF:PATH"):
        parse_spec(":b.json", file_exists=lambda p: False)


class FakeGit:
    """Records git arguments and answers with a fixed result."""

    def __init__(self, result: GitResult) -> None:
        self.result = result
        self.calls: list[list[str]] = []

    def __call__(self, args: Sequence[str]) -> GitResult:
        self.calls.append(list(args))
        return self.result


class ScriptedGit(FakeGit):
    """Answers by git subcommand."""

    def __init__(self, results: dict[str, GitResult]) -> None:
        super().__init__(GitResult(1, "", "unexpected"))
        self.results = results

    def __call__(self, args: Sequence[str]) -> GitResult:
        self.calls.append(list(args))
        return self.results.get(args[0], self.result)


def _git(cwd: Path, *args: str) -> str:
    env = ["-c", "user.name=t", "-c", "user.email=t@example.com", "-c", "init.defaultBranch=main"]
    return subprocess.run(["git", *env, *args], cwd=cwd, check=True, capture_output=True, text=True).stdout.strip()


def test_git_show_absent_at_a_commit_the_checkout_lacks_is_not_no_baseline(tmp_path: Path) -> None:
    """A depth-1 checkout lacks the PR's base commit, and git then says the path "does not exist in" it: that must
    be an error saying to fetch, never "no baseline" (which would let every regression through). A commit that is
    there and really lacks the file is "no baseline"."""
    (tmp_path / "a.txt").write_text("x")
    _git(tmp_path, "init", "-q")
    _git(tmp_path, "add", "-A")
    _git(tmp_path, "commit", "-qm", "one")
    head = _git(tmp_path, "rev-parse", "HEAD")
    git = lambda args: run_git(args, cwd=tmp_path)  # noqa: E731
    assert git_show(head, ".evalbot/baseline.json", git=git) is None
    absent = "b" * 40
    raw = run_git(["show", f"{absent}:.evalbot/baseline.json"], cwd=tmp_path)
    assert "does not exist in" in raw.stderr  # what git says, hence the commit check
    with pytest.raises(InputError, match=f"commit {absent} is not in this checkout.*git fetch origin {absent}"):
        git_show(absent, ".evalbot/baseline.json", git=git)


def test_git_show_reads_the_file_at_the_ref() -> None:
    """``git show REF:PATH`` is what runs; its output is the text."""
    git = FakeGit(GitResult(0, '{"schema_version": 1}', ""))
    assert git_show("abc", ".evalbot/baseline.json", git=git) == '{"schema_version": 1}'
    assert git.calls == [["show", "abc:.evalbot/baseline.json"]]


def test_git_show_missing_path_is_none_and_bad_ref_is_an_error() -> None:
    """A path absent at the ref means no baseline; an unknown ref is an input error saying to fetch."""
    missing = ScriptedGit({"show": GitResult(128, "", "fatal: path '.evalbot/b.json' does not exist in 'main'\n"),
                           "cat-file": GitResult(0, "", "")})
    assert git_show("main", ".evalbot/b.json", git=missing) is None
    assert missing.calls[-1] == ["cat-file", "-e", "main^{commit}"]
    bad = FakeGit(GitResult(128, "", "fatal: invalid object name 'origin/main'.\n"))
    with pytest.raises(InputError, match="git fetch origin origin/main"):
        git_show("origin/main", "b.json", git=bad)
    with pytest.raises(InputError, match="exit code 127"):
        git_show("main", "b.json", git=FakeGit(GitResult(127, "", "")))


def test_read_baseline_from_file_or_git() -> None:
    """Files go through read_file, refs through git; absence is None."""
    text = dump_baseline(build_baseline(sample_report(), commit="c", created_at="t"))
    never = FakeGit(GitResult(1, "", "unexpected"))
    assert read_baseline(BaselineSpec("b.json"), git=never, read_file=lambda p: text) is not None
    assert read_baseline(BaselineSpec("b.json"), git=never, read_file=lambda p: None) is None
    assert never.calls == []
    via_git = read_baseline(BaselineSpec("b.json", "main"), git=FakeGit(GitResult(0, text, "")), read_file=lambda p: None)
    assert via_git is not None and via_git.commit == "c"


def _packed_sample() -> str:
    r = sample_report()
    r.eval_sets[0].cases.append(case("more", {TRAJ: metric(0.0)}))
    return dump_baseline(build_baseline(r, commit="c", created_at="t"))


def test_parsed_cases_are_packed_and_built_on_each_access() -> None:
    """A parsed baseline keeps each eval set's cases packed (PackedCases), builds a case's models when it is read
    and does not keep them; what it builds equals the models of the whole document validated at once, votes,
    histories and which keys were given included."""
    text = _packed_sample()
    b = parse_baseline(text, "b.json")
    whole = Baseline.model_validate(json.loads(text))
    cases = b.eval_sets["orders"].cases
    assert isinstance(cases, PackedCases) and not isinstance(cases, dict)
    assert list(cases) == list(whole.eval_sets["orders"].cases) == ["more", "refund", "track"]
    assert len(cases) == 3 and "refund" in cases and "nope" not in cases and cases.get("nope") is None
    assert cases["refund"] is not cases["refund"] and cases["refund"] == whole.eval_sets["orders"].cases["refund"]
    refund = cases["refund"]
    assert refund.metrics[JUDGE].votes == [Votes(yes=4, no=1), Votes(yes=5, no=0)]
    assert refund.metrics[JUDGE].vote_history == "9-1" and refund.history == "P"
    assert refund.metrics[JUDGE].votes[0].model_fields_set == {"yes", "no"}
    for key, es in whole.eval_sets.items():
        assert dict(b.eval_sets[key].cases) == es.cases
        for k, c in es.cases.items():
            got = b.eval_sets[key].cases[k]
            assert got.model_fields_set == c.model_fields_set
            assert {n: m.model_fields_set for n, m in got.metrics.items()} == {
                n: m.model_fields_set for n, m in c.metrics.items()}
    assert b.model_dump() == whole.model_dump() and dump_baseline(b) == text
    assert b.model_dump_json() == whole.model_dump_json()
    assert b.eval_sets["orders"].model_dump_json() == whole.eval_sets["orders"].model_dump_json()
    assert same_scores(b, whole) and same_scores(whole, b)
    assert not same_scores(b, b.model_copy(update={"eval_sets": {**b.eval_sets, "faq": whole.eval_sets["orders"]}}))
    assert b.model_copy(deep=True) == b


def test_case_marks_read_a_packed_case_as_its_models_say() -> None:
    """case_marks gives each case's key, fingerprint, content and status, in order: from a parsed baseline's packed
    rows without building them, the same as from the models of the whole document (a dict of built cases)."""
    text = _packed_sample()
    parsed = parse_baseline(text, "b.json")
    whole = Baseline.model_validate(json.loads(text))
    for key, es in whole.eval_sets.items():
        assert isinstance(parsed.eval_sets[key].cases, PackedCases) and isinstance(es.cases, dict)
        expected = [(k, c.fingerprint, c.content, c.status) for k, c in es.cases.items()]
        assert list(case_marks(parsed.eval_sets[key].cases)) == list(case_marks(es.cases)) == expected
    assert {status for *_, status in case_marks(whole.eval_sets["orders"].cases)} >= {"passed", "failed"}


def test_packed_cases_compare_as_the_dict_of_their_cases_do() -> None:
    """PackedCases equality is a dict's (order aside) without building every case of both: the same rows are
    equal, another file's rows of the same cases (names listed in another order) are equal, one case changed, one
    missing or one extra are not, and a mapping that is not packed compares by its items."""
    text = _packed_sample()
    a, b = parse_baseline(text, "a.json"), parse_baseline(text, "b.json")
    whole = Baseline.model_validate(json.loads(text))
    packed, models = a.eval_sets["orders"].cases, whole.eval_sets["orders"].cases
    assert isinstance(packed, PackedCases) and packed == b.eval_sets["orders"].cases and a == b
    assert packed == models and models == packed and packed == dict(reversed(list(models.items())))
    assert packed != {k: c for k, c in models.items() if k != "track"}
    assert packed != {**models, "new": models["track"]}
    changed = {**models, "track": models["track"].model_copy(update={"status": "passed", "history": "P"})}
    assert packed != changed and changed != packed
    assert packed != PackedCases({k: r for k, r in packed._rows.items()}, list(reversed(packed._names)))
    reordered = replaced_cases(PackedCases({}, [JUDGE, TRAJ]), dict(models))  # other names order, same cases
    assert isinstance(reordered, PackedCases) and reordered._names != packed._names and reordered == packed
    assert packed != [*models] and packed != None  # noqa: E711


@pytest.mark.parametrize("packed", [True, False])
def test_replaced_cases_changes_in_place_appends_and_removes(packed: bool) -> None:
    """replaced_cases makes its changes in order as a dict would (replaced in place, new at the end, None removed);
    a parsed baseline's cases stay packed, the changed ones packed too, built equal to the models given."""
    text = _packed_sample()
    cases = parse_baseline(text, "b.json").eval_sets["orders"].cases
    models = dict(Baseline.model_validate(json.loads(text)).eval_sets["orders"].cases)
    given = cases if packed else models
    new = models["track"].model_copy(update={"history": None})
    changes = {"refund": models["track"], "more": None, "added": new, "gone": None}
    out = replaced_cases(given, changes)
    assert isinstance(out, PackedCases) is packed
    assert list(out) == ["refund", "track", "added"]
    assert dict(out) == {"refund": models["track"], "track": models["track"], "added": new}
    assert out["added"].model_fields_set == new.model_fields_set and "history" in new.model_fields_set
    assert list(given) == ["more", "refund", "track"] and given["refund"] == models["refund"]  # not changed


def test_run_entries_built_when_read_equal_the_written_ones() -> None:
    """build_baseline(when_read=True), what a PR's baseline update is checked against: the same entries as the
    baseline written from the run, each case built when read (RunCases), no efficiency."""
    r = sample_report()
    written, read = build_baseline(r, commit=None, created_at=None), build_baseline(
        r, commit=None, created_at=None, when_read=True)
    assert read.efficiency is None and read.judge_models == written.judge_models
    for key, es in written.eval_sets.items():
        lazy = read.eval_sets[key].cases
        assert isinstance(lazy, RunCases) and list(lazy) == list(es.cases) and len(lazy) == len(es.cases)
        assert dict(lazy) == es.cases and lazy["refund" if key == "orders" else "hours"] is not None
        assert "nope" not in lazy and lazy.get("nope") is None
        assert read.eval_sets[key].model_dump(exclude={"cases"}) == es.model_dump(exclude={"cases"})


def _whole_error(text: str) -> tuple[str, str] | None:
    try:
        _parse_whole(text, "b.json")
    except InputError as exc:
        return exc.pointer, exc.message
    return None


def _mutated(change: Callable[[dict[str, Any]], object]) -> str:
    data = json.loads(_packed_sample())
    change(data)
    return json.dumps(data)


def _case_of(data: dict[str, Any]) -> dict[str, Any]:
    return data["eval_sets"]["orders"]["cases"]["refund"]  # type: ignore[no-any-return]


HOSTILE = {
    "bad status": _mutated(lambda d: _case_of(d).update(status="great")),
    "unknown key in a case": _mutated(lambda d: _case_of(d).update(extra=1)),
    "unknown key in a metric": _mutated(lambda d: _case_of(d)["metrics"][TRAJ].update(extra=1)),
    "votes not a list": _mutated(lambda d: _case_of(d)["metrics"][JUDGE].update(votes={"yes": 1})),
    "negative vote": _mutated(lambda d: _case_of(d)["metrics"][JUDGE]["votes"][0].update(yes=-1)),
    "forged vote history": _mutated(lambda d: _case_of(d)["metrics"][JUDGE].update(vote_history="1-1")),
    "forged history": _mutated(lambda d: _case_of(d).update(history="FFF")),
    "cases a list": _mutated(lambda d: d["eval_sets"]["orders"].update(cases=[1])),
    "case a string": _mutated(lambda d: d["eval_sets"]["orders"]["cases"].update(refund="x")),
    "eval_sets null": _mutated(lambda d: d.update(eval_sets=None)),
    "eval set a list": _mutated(lambda d: d["eval_sets"].update(orders=[])),
    "schema_version true": _mutated(lambda d: d.update(schema_version=True)),
    "bad budget": _mutated(lambda d: d.update(budgets={"nonsense": "+1"})),
    "score a list": _mutated(lambda d: _case_of(d)["metrics"][TRAJ].update(score=[1])),
    "unknown top-level key": _mutated(lambda d: d.update(surprise={})),
    "deep nesting in a case": _mutated(lambda d: _case_of(d).update(extra=json.loads("[" * 250 + "]" * 250))),
    "lone surrogate": _packed_sample().replace('"history": "P"', '"history": "\\ud800"', 1),
    "huge integer": _packed_sample().replace('"score": 0.0', '"score": ' + "9" * 5000, 1),
    "syntax error in a case": _packed_sample().replace('"history": "P"', '"history": P', 1),
    "trailing garbage": _packed_sample() + "x",
    "not an object": "[1]",
}


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_reading_case_by_case_refuses_what_the_whole_read_refuses(name: str) -> None:
    """Every document the whole read refuses, the case-by-case read leaves to it (so the message and pointer are
    the ones it always gave), and parse_baseline raises exactly that error."""
    text = HOSTILE[name]
    expected = _whole_error(text)
    assert expected is not None, name
    assert _parse_by_case(text) is None
    with pytest.raises(InputError) as got:
        parse_baseline(text, "b.json")
    assert (got.value.pointer, got.value.message) == expected


def test_what_only_the_whole_read_accepts_is_packed_too() -> None:
    """A document msgspec does not read (a NaN mean: json writes one) takes the whole read and is packed as well;
    duplicate keys keep the last value at the first one's place, in both reads. A NaN score is refused with its
    pointer (scores are in [0, 1])."""
    nan = _packed_sample().replace('"mean": 0.9', '"mean": NaN', 1)
    assert _parse_by_case(nan) is None
    b = parse_baseline(nan, "b.json")
    assert isinstance(b.eval_sets["orders"].cases, PackedCases)
    assert math.isnan(b.eval_sets["faq"].criteria["response_match_score"].mean or 0.0)
    with pytest.raises(InputError) as refused:
        parse_baseline(_packed_sample().replace('"score": 0.0', '"score": NaN', 1), "b.json")
    assert refused.value.pointer == f"/eval_sets/orders/cases/more/metrics/{TRAJ}/score"
    text = _packed_sample()
    at = text.index('"cases": {', text.index('"eval_sets"'))
    dup = text[:at] + '"cases": {\n"hours": {"status": "error"},' + text[at + len('"cases": {'):]  # faq's
    by_case = _parse_by_case(dup)
    assert by_case is not None and by_case == Baseline.model_validate(json.loads(dup)) == _parse_whole(dup, "b.json")
    assert list(by_case.eval_sets["faq"].cases) == ["hours"]
    assert by_case.eval_sets["faq"].cases["hours"].status == "passed"
    lax = _mutated(lambda d: _case_of(d)["metrics"][TRAJ].update(score="1"))  # pydantic's lax mode: 1.0
    by_case = _parse_by_case(lax)
    assert by_case is not None and by_case == _parse_whole(lax, "b.json")
    assert by_case.eval_sets["orders"].cases["refund"].metrics[TRAJ].score == 1.0


def test_parsed_efficiency_values_are_packed_and_share_the_case_keys() -> None:
    """A parsed baseline's per-case efficiency values are packed too (PackedValues), read back as the dicts the
    whole document validated gives, keyed by the case keys' own strings, and dumped as before."""
    data = json.loads(_packed_sample())
    data["efficiency"] = {"orders": {"stats": {"tool_calls": {"mean": 2.0, "p95": 3.0, "cases": 2}},
                                     "cases": {"refund": {"tool_calls": 3.0, "model_calls": 1.5},
                                               "gone": {"tool_calls": 1.0}}}}
    text = dump_baseline(Baseline.model_validate(data))
    b, whole = parse_baseline(text, "b.json"), Baseline.model_validate(json.loads(text))
    assert b.efficiency is not None and whole.efficiency is not None
    values = b.efficiency["orders"].cases
    assert isinstance(values, PackedValues) and values == whole.efficiency["orders"].cases
    assert values["refund"] == {"tool_calls": 3.0, "model_calls": 1.5} and "gone" in values and "x" not in values
    assert next(k for k in values if k == "refund") is next(k for k in b.eval_sets["orders"].cases if k == "refund")
    assert b == whole and dump_baseline(b) == text and b.model_dump_json() == whole.model_dump_json()
    assert b.efficiency["orders"].model_dump() == whole.efficiency["orders"].model_dump()
    by_whole = _parse_whole(text, "b.json")
    assert by_whole.efficiency is not None and isinstance(by_whole.efficiency["orders"].cases, PackedValues)
    assert by_whole == b


def test_restricted_keeps_the_selected_cases_of_a_parsed_baseline() -> None:
    """A run of some cases is compared with those cases only (in the baseline's order), an eval set run whole with
    all of its cases (still packed), and eval sets not run are left out."""
    b = parse_baseline(_packed_sample(), "b.json")
    part = restricted(b, {"orders": ["track", "refund", "absent"], "faq": None})
    assert list(part.eval_sets) == ["faq", "orders"]
    assert list(part.eval_sets["orders"].cases) == ["refund", "track"]
    assert part.eval_sets["orders"].cases["track"] == b.eval_sets["orders"].cases["track"]
    assert part.eval_sets["faq"].cases is b.eval_sets["faq"].cases
    assert list(restricted(b, {"orders": []}).eval_sets["orders"].cases) == []


# -- issue 37 row 12: lists and scores bounded by what a run writes ------------------------------------------------

@pytest.mark.parametrize(("change", "pointer", "words"), [
    (lambda d: _case_of(d)["metrics"][TRAJ].update(votes=[{"yes": 1, "no": 0}] * 10_001),
     f"/eval_sets/orders/cases/refund/metrics/{TRAJ}/votes", "at most 10000 items"),
    (lambda d: _case_of(d)["metrics"][TRAJ].update(score=-3.0),
     f"/eval_sets/orders/cases/refund/metrics/{TRAJ}/score", "greater than or equal to 0"),
    (lambda d: _case_of(d)["metrics"][TRAJ].update(score=1.5),
     f"/eval_sets/orders/cases/refund/metrics/{TRAJ}/score", "less than or equal to 1"),
    (lambda d: d.update(judge_models=["m"] * 1001), "/judge_models", "at most 1000 items"),
    (lambda d: d["eval_sets"]["orders"]["criteria"][TRAJ].update(trend=[{"mean": 1.0}] * 11),
     f"/eval_sets/orders/criteria/{TRAJ}/trend", "at most 10 refreshes"),
])
def test_lists_and_scores_past_what_a_run_writes_are_refused_with_the_pointer(
        change: Callable[[dict[str, Any]], object], pointer: str, words: str) -> None:
    with pytest.raises(InputError) as refused:
        parse_baseline(_mutated(change), "b.json")
    assert (refused.value.path, refused.value.pointer) == ("b.json", pointer)
    assert words in refused.value.message


@pytest.mark.parametrize(("change", "pointer", "words"), [
    (lambda d: _case_of(d)["metrics"][TRAJ].update(votes=[None] * 1_000_000),
     f"/eval_sets/orders/cases/refund/metrics/{TRAJ}/votes", "a list of 6,000,000 bytes"),
    (lambda d: _case_of(d)["metrics"][TRAJ].update(votes=[{"yes": 1, "no": 0}] * 400_000),
     f"/eval_sets/orders/cases/refund/metrics/{TRAJ}/votes", "a list of"),
    (lambda d: _case_of(d)["metrics"][TRAJ].update(votes=[{"yes": 1, "no": 0}] * 400_000,
                                                     **{f"k{i}": 0 for i in range(20_000)}),
     "/eval_sets/orders/cases/refund", "its list 'votes' alone"),  # too many keys to split: named
    (lambda d: d.update(judge_models=["m"] * 1_000_000), "/judge_models", "a list of"),
    (lambda d: d.update(commit=["x"] * 1_000_000), "/commit", "a list of"),
    (lambda d: _case_of(d).update(junk={f"k{i}": 0 for i in range(400_000)}), "/eval_sets/orders/cases/refund",
     "an entry of"),
])
def test_an_oversized_part_is_refused_before_it_is_decoded(
        change: Callable[[dict[str, Any]], object], pointer: str, words: str) -> None:
    text = _mutated(change)
    started = time.perf_counter()
    tracemalloc.start()
    try:
        with pytest.raises(InputError) as refused:
            parse_baseline(text, "b.json")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert (refused.value.pointer, words in refused.value.message) == (pointer, True), refused.value.message
    assert "more than a run writes there" in refused.value.message
    assert peak < 3 * len(text) + 10_000_000, peak  # the text's copies only: nothing decoded
    assert time.perf_counter() - started < 10


def test_a_large_file_only_jsons_lax_reader_reads_is_refused() -> None:
    """Past 8 MB, a document msgspec cannot read (NaN, Infinity) is not handed to json's path, which decodes it
    whole; a small one still is (test_what_only_the_whole_read_accepts_is_packed_too)."""
    text = _mutated(lambda d: d["eval_sets"]["orders"]["cases"].update(
        {f"c{i}": {"status": "passed"} for i in range(300_000)})).replace('"mean": 0.9', '"mean": NaN', 1)
    assert len(text) > 8 * 1024 * 1024
    with pytest.raises(InputError) as refused:
        parse_baseline(text, "b.json")
    assert "not strict JSON" in refused.value.message and "refresh it with" in refused.value.message
