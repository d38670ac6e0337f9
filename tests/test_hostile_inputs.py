"""Hostile eval sets, actuals and configs: each is refused with its file and JSON pointer, never a crash or a hang,
and the other eval sets of the run are still scored (through the real CLI: loading, scoring, text, report, comment).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from evalbot.cli.commands import main
from tests.fakes.builders import case, eval_set, inv

DEEP = "[" * 100_000 + "]" * 100_000
BIG_INT = "9" * 5_000


def deep_ptr(prefix: str) -> str:
    """The start of the (shortened) pointer of a value nested too deeply under ``prefix``."""
    return prefix + "/0" * 5
GOOD_SET = eval_set("good", case("g1"))
GOOD_ACTUALS = {"g1": [inv()]}


def _set_text(eval_set_id: str, case_text: str) -> str:
    return f'{{"eval_set_id": "{eval_set_id}", "eval_cases": [{case_text}]}}'


OK_CASE = json.dumps(case("c1"))
CASE_WITH = OK_CASE[:-1] + ', "extra": {value}}'

# name -> (eval set file name, text, JSON pointer expected in the error, message fragment)
HOSTILE_SETS: dict[str, tuple[str, str, str, str]] = {
    "deep_nesting_whole_file": ("deep.evalset.json", DEEP, deep_ptr(""), "nested more than 200"),
    "deep_nesting_in_a_case": (
        "deep.evalset.json", _set_text("deep", DEEP), deep_ptr("/eval_cases"), "nested more than 200",
    ),
    "deep_nesting_under_limit_of_json": (  # decodes in json (depth 300) but exceeds evalbot's limit
        "deep.evalset.json", _set_text("deep", "[" * 300 + "]" * 300), deep_ptr("/eval_cases"),
        "nested more than 200",
    ),
    "huge_integer_in_a_case": (
        "big.evalset.json", _set_text("big", CASE_WITH.replace("{value}", BIG_INT)), "/eval_cases/0/extra",
        "number too long",
    ),
    "huge_integer_at_top": (
        "big.evalset.json", f'{{"eval_set_id": "big", "n": {BIG_INT}, "eval_cases": []}}', "/n", "number too long",
    ),
    "surrogate_in_eval_id": (
        "sur.evalset.json", _set_text("sur", json.dumps(case("x")).replace('"x"', '"\\ud800"')),
        "/eval_cases/0/eval_id", "lone UTF-16 surrogate",
    ),
    "surrogate_in_reference": (
        "sur.evalset.json", _set_text("sur", json.dumps(case("x", inv(response="ok \\ud800"))).replace("\\\\", "\\")),
        "/eval_cases/0/conversation/0/final_response/parts/0/text", "lone UTF-16 surrogate",
    ),
    "surrogate_in_eval_set_id": (
        "sur.evalset.json", _set_text("\\udfff", OK_CASE), "/eval_set_id", "lone UTF-16 surrogate",
    ),
    "surrogate_in_a_key": (
        "sur.evalset.json", _set_text("sur", CASE_WITH.replace('"extra"', '"\\udc80"').replace("{value}", "1")),
        "/eval_cases/0/\udc80".encode("utf-8", "backslashreplace").decode(), "lone UTF-16 surrogate",
    ),
    "surrogate_in_an_unknown_top_level_key": (  # read by streaming, never decoded: its notice must be printable
        "sur.evalset.json", '{"\\ud800x": 1, "eval_set_id": "sur", "eval_cases": [' + json.dumps(case("x")) + "]}",
        "", "",
    ),
    "legacy_intermediate_responses_number": (
        "legacy.test.json",
        json.dumps([{"query": "q", "expected_tool_use": [], "reference": "r",
                     "expected_intermediate_agent_responses": 1.5}]),
        "/0/expected_intermediate_agent_responses", "expected a list of {author, text} objects",
    ),
    "legacy_intermediate_author_object": (
        "legacy.test.json",
        json.dumps([{"query": "q", "expected_tool_use": [], "reference": "r",
                     "expected_intermediate_agent_responses": [{"author": {"a": 1}, "text": "t"}]}]),
        "/0/expected_intermediate_agent_responses/0/author", "expected a string",
    ),
}


def _run(tmp_path: Path, paths: list[str], actuals: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    report, comment = tmp_path / "out" / "report.json", tmp_path / "out" / "comment.md"
    args = ["compare", *paths, "--baseline", str(tmp_path / "no-baseline.json"), "--report", str(report),
            "--comment", str(comment)]
    for a in actuals:
        args += ["--actuals", a]
    code = main(args, env={})
    out = capsys.readouterr()
    assert "Traceback" not in out.err
    text = comment.read_text(encoding="utf-8")
    json.loads(report.read_text(encoding="utf-8"))  # the report is written and valid
    code_run = main(["run", *paths, *[x for a in actuals for x in ("--actuals", a)]], env={})
    terminal = capsys.readouterr().out
    assert code_run == code
    return code, text + "\n" + terminal


def _good(tmp_path: Path) -> tuple[Path, Path]:
    good_dir = tmp_path / "good"
    good_dir.mkdir(exist_ok=True)
    good = good_dir / "good.evalset.json"
    good.write_text(json.dumps(GOOD_SET), encoding="utf-8")
    actuals = tmp_path / "actuals.json"
    actuals.write_text(json.dumps({**GOOD_ACTUALS, "c1": [inv()], "x": [inv()]}), encoding="utf-8")
    return good, actuals


def _report(tmp_path: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((tmp_path / "out" / "report.json").read_text(encoding="utf-8"))
    return data


@pytest.mark.parametrize("name", sorted(HOSTILE_SETS))
def test_hostile_eval_set_is_refused_and_the_others_are_scored(
    name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    file_name, text, pointer, fragment = HOSTILE_SETS[name]
    good, actuals = _good(tmp_path)
    bad = tmp_path / "bad" / file_name
    bad.parent.mkdir()
    bad.write_text(text, encoding="utf-8")
    code, shown = _run(tmp_path, [str(good), str(bad)], [str(actuals)], capsys)
    sets = {es["path"]: es for es in _report(tmp_path)["eval_sets"]}
    if not fragment:  # accepted with a notice
        assert code == 0 and sets[str(bad)]["notices"] == [f"{bad}:/\\ud800x: unknown key '\\ud800x'; ignored, as ADK ignores it"]
        return
    assert code == 2
    assert f"{bad}:{pointer}" in shown and fragment in shown
    assert sets[str(good)]["status"] == "passed"
    assert sets[str(bad)]["status"] == "error"


# name -> (actuals text, pointer, fragment)
HOSTILE_ACTUALS: dict[str, tuple[str, str, str]] = {
    "deep": (DEEP, deep_ptr(""), "nested more than 200"),
    "deep_in_an_entry": ('{"g1": ' + "[" * 500 + "]" * 500 + "}", deep_ptr("/g1"), "nested more"),
    "huge_integer": ('{"n": ' + BIG_INT + "}", "/n", "number too long"),
    "surrogate_key": ('{"\\ud800": []}', "/\\ud800", "lone UTF-16 surrogate"),
    "surrogate_in_text": (
        json.dumps({"g1": [inv(response="a \\ud800")]}).replace("\\\\ud800", "\\ud800"),
        "/g1/0/final_response/parts/0/text", "lone UTF-16 surrogate",
    ),
}


@pytest.mark.parametrize("name", sorted(HOSTILE_ACTUALS))
def test_hostile_actuals_are_refused_and_the_others_count(
    name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    text, pointer, fragment = HOSTILE_ACTUALS[name]
    good, actuals = _good(tmp_path)
    other = tmp_path / "other.evalset.json"
    other.write_text(json.dumps(eval_set("other", case("o1"))), encoding="utf-8")
    more = tmp_path / "more.json"
    more.write_text(json.dumps({"o1": [inv()]}), encoding="utf-8")
    bad = tmp_path / "bad.json"
    bad.write_text(text, encoding="utf-8")
    code, shown = _run(tmp_path, [str(good), str(other)], [str(actuals), str(bad), str(more)], capsys)
    assert code == 2
    assert f"{bad}:{pointer}" in shown and fragment in shown
    report = _report(tmp_path)
    if name in ("deep_in_an_entry", "surrogate_in_text"):  # only g1's entry is unusable: its case says why
        statuses = {es["eval_set_id"]: es["status"] for es in report["eval_sets"]}
        assert statuses == {"good": "error", "other": "passed"}
    else:
        assert all(es["status"] == "passed" for es in report["eval_sets"])


# name -> (config text, pointer, fragment)
HOSTILE_CONFIGS: dict[str, tuple[str, str, str]] = {
    "deep": ('{"criteria": {"response_match_score": ' + "[" * 50_000 + "]" * 50_000 + "}}",
             deep_ptr("/criteria/response_match_score"), "nested more than 200"),
    "huge_integer": ('{"criteria": {"response_match_score": ' + BIG_INT + "}}", "/criteria/response_match_score",
                     "number too long"),
    "surrogate_criterion_name": ('{"criteria": {"\\ud800": 0.5}}', "/criteria/\\ud800", "lone UTF-16 surrogate"),
}


@pytest.mark.parametrize("name", sorted(HOSTILE_CONFIGS))
def test_hostile_config_beside_a_set_is_refused_and_the_others_are_scored(
    name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    text, pointer, fragment = HOSTILE_CONFIGS[name]
    good, actuals = _good(tmp_path)
    bad_dir = tmp_path / "bad"
    bad_dir.mkdir()
    (bad_dir / "s.evalset.json").write_text(json.dumps(eval_set("s", case("c1"))), encoding="utf-8")
    config = bad_dir / "test_config.json"
    config.write_text(text, encoding="utf-8")
    code, shown = _run(tmp_path, [str(good), str(bad_dir)], [str(actuals)], capsys)
    assert code == 2
    assert f"{config}:{pointer}" in shown and fragment in shown
    statuses = {es["path"]: es["status"] for es in _report(tmp_path)["eval_sets"]}
    assert statuses == {str(good): "passed", str(bad_dir / "s.evalset.json"): "error"}


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_special_files_are_refused_at_once_without_hanging(tmp_path: Path) -> None:
    """A FIFO as actuals, and a FIFO or a directory named test_config.json, are errors naming the path (not a hang,
    not ADK's defaults); a quoted ``**`` glob never loads test_config.json as an eval set.  Run as a subprocess with
    a timeout, so a regression that opens the FIFO fails instead of hanging the suite."""
    _, actuals = _good(tmp_path)
    fifo = tmp_path / "runs.json"
    os.mkfifo(fifo)
    (tmp_path / "f").mkdir()
    (tmp_path / "f" / "s.evalset.json").write_text(json.dumps(eval_set("f", case("c1"))), encoding="utf-8")
    os.mkfifo(tmp_path / "f" / "test_config.json")
    (tmp_path / "d" / "test_config.json").mkdir(parents=True)
    (tmp_path / "d" / "s.evalset.json").write_text(json.dumps(eval_set("d", case("c1"))), encoding="utf-8")
    (tmp_path / "good" / "test_config.json").write_text('{"criteria": {"response_match_score": 0.5}}', "utf-8")
    done = subprocess.run(
        [sys.executable, "-m", "evalbot.cli", "run", str(tmp_path / "good" / "**"), str(tmp_path / "f"),
         str(tmp_path / "d"), "--actuals", str(actuals), "--actuals", str(fifo)],
        capture_output=True, text=True, timeout=60, check=False,
    )
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    assert f"{fifo}: is a FIFO (named pipe), not a file" in done.stdout
    assert f"{tmp_path / 'f' / 'test_config.json'}: is a FIFO (named pipe), not a file" in done.stdout
    assert f"{tmp_path / 'd' / 'test_config.json'}: is a directory, not a file" in done.stdout
    assert "PASS  good" in done.stdout  # scored with its own config; test_config.json was not loaded as a set
    assert done.stdout.count("(good/") == 0 and "test_config.json  (" not in done.stdout


def test_a_directory_given_as_actuals_or_config_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    good, _ = _good(tmp_path)
    folder = tmp_path / "runs"
    folder.mkdir()
    assert main(["run", str(good), "--actuals", str(folder)], env={}) == 2
    assert f"{folder}: is a directory, not a file" in capsys.readouterr().out
    assert main(["run", str(good), "--config", str(folder)], env={}) == 2
    assert f"{folder}: is a directory, not a file; expected a test_config.json file" in capsys.readouterr().err
