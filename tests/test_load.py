"""Discovery and loading of eval sets: supported shapes, configs beside the set, and every kind of bad input."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from evalbot.formats import jsonio
from evalbot.formats.jsonio import KEEP_TEXT_CHARS
from evalbot.load import discover, load_actuals, load_eval_set
from tests.fakes.builders import Writer, case, eval_set, inv
from tests.fakes.file_opens import opened_files

GOOD = eval_set("good", case("a"), case("b"))
SCENARIO = {"starting_prompt": "hi", "conversation_plan": "ask and stop"}

# (content, pointer, message fragment) of files that cannot be used at all.
FILE_ERRORS: dict[str, tuple[Any, str, str]] = {
    "invalid_json": ('{"eval_set_id": "x",, }', "", "invalid JSON at line 1, column 21"),
    "empty": ("", "", "file is empty"),
    "non_utf8": ('{"eval_set_id": "caf\xe9"}'.encode("latin-1"), "", "not valid UTF-8 (byte 0xe9 at line 1)"),
    "number": (42, "", "expected an eval set object with 'eval_set_id' and 'eval_cases', got int"),
    "empty_list": ([], "", "empty list"),
    "camel_top_level": ({"evalSetId": "x", "evalCases": []}, "/evalSetId", "top level is snake_case"),
    "camel_cases_only": ({"eval_set_id": "x", "evalCases": []}, "/evalCases", "rename it to 'eval_cases'"),
    "no_id": ({"eval_cases": []}, "/eval_set_id", "non-empty string"),
    "cases_not_list": ({"eval_set_id": "x", "eval_cases": {"a": 1}}, "/eval_cases", "a list of eval cases"),
}

# (case JSON, pointer, exact message) of cases that cannot be parsed; the file's other case still loads.
CASE_ERRORS: dict[str, tuple[dict[str, Any], str, str]] = {
    "unknown_invocation_field": (
        case("bad", inv(tool_calls=[])),
        "/eval_cases/0/conversation/0/tool_calls",
        "unknown field (check its spelling; this object does not allow extra keys)",
    ),
    "both_intermediate_forms": (
        case("bad", inv(intermediate_data={"tool_uses": [], "invocation_events": []})),
        "/eval_cases/0/conversation/0/intermediate_data",
        "intermediate_data mixes two forms: use either 'tool_uses'/'tool_responses'/'intermediate_responses' "
        "or 'invocation_events', not both",
    ),
    "conversation_and_scenario": (
        case("bad", conversation_scenario=SCENARIO),
        "/eval_cases/0",
        "the case has both 'conversation' and 'conversation_scenario': keep the expected conversation "
        "or the simulated-user scenario, not both",
    ),
    "neither_conversation_nor_scenario": (
        {"eval_id": "bad"},
        "/eval_cases/0",
        "the case needs 'conversation' (the expected invocations) or 'conversation_scenario' "
        "(a simulated-user scenario)",
    ),
    "conversation_wrong_type": (
        {"eval_id": "bad", "conversation": "hello"},
        "/eval_cases/0/conversation",
        'Input should be a valid list (got "hello")',
    ),
    "args_wrong_type": (
        case("bad", inv(calls=[("f", [1])])),  # type: ignore[list-item]
        "/eval_cases/0/conversation/0/intermediate_data/tool_uses/0/args",
        "Input should be a valid dictionary (got list)",
    ),
    "event_without_author": (
        case("bad", inv(intermediate_data={"invocation_events": [{"content": {"parts": []}}]})),
        "/eval_cases/0/conversation/0/intermediate_data/invocation_events/0/author",
        "required field is missing",
    ),
    "camel_nested_wrong_type": (
        {"evalId": "bad", "conversation": [{"userContent": {"parts": []}, "invocationId": 3}]},
        "/eval_cases/0/conversation/0/invocationId",
        "Input should be a valid string (got 3)",
    ),
    "half_intermediate_response": (
        case("bad", inv(intermediate_data={"intermediate_responses": [["sub_agent"]]})),
        "/eval_cases/0/conversation/0/intermediate_data/intermediate_responses/0/1",
        "required field is missing",
    ),
    "user_content_missing": (
        {"eval_id": "bad", "conversation": [{"final_response": {"parts": [{"text": "x"}]}}]},
        "/eval_cases/0/conversation/0/user_content",
        "required field is missing",
    ),
}


@pytest.mark.parametrize("name", sorted(FILE_ERRORS))
def test_unusable_file_is_one_error_with_pointer(write: Writer, name: str) -> None:
    """A file that cannot be used gives a single error naming it and the pointer, and no cases."""
    content, pointer, fragment = FILE_ERRORS[name]
    path = write(f"{name}.evalset.json", content)
    loaded = load_eval_set(path)
    assert loaded.cases == () and loaded.path == str(path)
    (err,) = loaded.errors
    assert (err.path, err.pointer) == (str(path), pointer)
    assert fragment in err.message


@pytest.mark.parametrize("name", sorted(CASE_ERRORS))
def test_bad_case_is_an_error_on_that_case_only(write: Writer, name: str) -> None:
    """A case that cannot be parsed carries its pointer and message; the next case still loads."""
    raw, pointer, message = CASE_ERRORS[name]
    path = write("set.evalset.json", eval_set("s", raw, case("fine")))
    loaded = load_eval_set(path)
    assert loaded.errors == ()
    bad, fine = loaded.cases
    assert bad.eval_id == "bad" and bad.case is None and bad.error is not None
    assert (bad.error.path, bad.error.pointer, bad.error.message) == (str(path), pointer, message)
    assert fine.case is not None and fine.error is None


def test_case_without_usable_id_is_named_by_index(write: Writer) -> None:
    """A case whose eval_id is missing is reported as '#<index>' with the pointer to the missing id."""
    path = write("s.evalset.json", eval_set("s", case("a"), {"conversation": [inv()]}))
    _, second = load_eval_set(path).cases
    assert second.eval_id == "#1" and second.error is not None
    assert (second.error.pointer, second.error.message) == ("/eval_cases/1/eval_id", "required field is missing")


def test_duplicate_eval_ids_keep_the_first(write: Writer) -> None:
    """A repeated eval_id is an eval-set error pointing at the repeat; the first and other cases are kept."""
    path = write("s.evalset.json", eval_set("s", case("a"), case("b"), case("a", inv("second"))))
    loaded = load_eval_set(path)
    assert [c.eval_id for c in loaded.cases] == ["a", "b"]
    assert loaded.cases[0].case is not None and loaded.cases[0].case.conversation is not None
    (err,) = loaded.errors
    assert (err.path, err.pointer) == (str(path), "/eval_cases/2/eval_id")
    assert err.message.startswith("duplicate eval_id 'a' (first used by case #0)")


def test_duplicate_names_in_legacy_cases_point_at_name(write: Writer) -> None:
    """In the legacy list-of-cases shape the duplicate's pointer is its 'name'."""
    turn = {"query": "q", "expected_tool_use": [], "reference": "r"}
    path = write("old.test.json", [{"name": "x", "data": [turn]}, {"name": "x", "data": [turn]}])
    (err,) = load_eval_set(path).errors
    assert err.pointer == "/1/name"


def test_evalset_parses_fields(write: Writer) -> None:
    """A full eval set keeps its id, cases, scenario and session input; camelCase nested keys are accepted."""
    scenario = {"eval_id": "sim", "conversationScenario": {"startingPrompt": "hi", "conversationPlan": "p"}}
    extra = {"session_input": {"app_name": "app", "user_id": "u", "state": {"k": 1}}}
    path = write("s.evalset.json", eval_set("s", case("a", inv(calls=[("f", {"x": 1})]), **extra), scenario))
    loaded = load_eval_set(path)
    assert loaded.eval_set_id == "s" and loaded.errors == ()
    a, sim = (c.case for c in loaded.cases)
    assert a is not None and a.session_input is not None and a.session_input.state == {"k": 1}
    assert sim is not None and sim.conversation_scenario is not None
    assert sim.conversation_scenario.starting_prompt == "hi" and sim.conversation is None


def test_config_beside_eval_set_is_used(write: Writer) -> None:
    """test_config.json in the eval set's directory replaces ADK's default criteria."""
    write("d/test_config.json", {"criteria": {"tool_trajectory_avg_score": 0.5}})
    loaded = load_eval_set(write("d/s.evalset.json", GOOD))
    assert [(c.name, c.threshold) for c in loaded.config.criteria] == [("tool_trajectory_avg_score", 0.5)]
    assert loaded.config.path is not None and loaded.config.path.endswith("test_config.json")


def test_default_criteria_without_config(write: Writer) -> None:
    """Without test_config.json the criteria are ADK's defaults."""
    loaded = load_eval_set(write("s.evalset.json", GOOD))
    assert [(c.name, c.threshold) for c in loaded.config.criteria] == [
        ("tool_trajectory_avg_score", 1.0),
        ("response_match_score", 0.8),
    ]


def test_broken_config_beside_eval_set_is_a_file_error(write: Writer) -> None:
    """An unreadable test_config.json is an error of that eval set, naming the config file."""
    cfg = write("d/test_config.json", "[1, 2]")
    loaded = load_eval_set(write("d/s.evalset.json", GOOD))
    (err,) = loaded.errors
    assert err.path == str(cfg) and "expected a JSON object with a 'criteria' key, got list" in err.message


def test_explicit_config_overrides_beside(write: Writer) -> None:
    """An explicit config wins over the one beside the eval set."""
    from evalbot.formats.config import parse_config

    write("d/test_config.json", "not even json")
    override = parse_config({"criteria": {"response_match_score": 0.1}}, "cli.json")
    loaded = load_eval_set(write("d/s.evalset.json", GOOD), override)
    assert loaded.errors == () and loaded.config is override


def test_discover_files_dirs_and_globs(write: Writer, tmp_path: Path) -> None:
    """Directories and globs pick eval set files only (recursively); plain files are taken as given; deduplicated."""
    a = write("d/a.evalset.json", GOOD)
    b = write("d/sub/b.test.json", GOOD)
    write("d/notes.json", {})
    write("test_config.json", {"criteria": {}})
    write("runs.evalset_result.json", {})
    c = write("c.evalset.json", GOOD)
    plain = write("plain.json", GOOD)
    found, errors = discover([str(tmp_path / "d"), str(tmp_path / "*.json"), str(a), str(plain)])
    assert found == [a, b, c, plain] and errors == []


def test_discover_reports_what_matched_nothing(tmp_path: Path) -> None:
    """Missing paths, empty directories and empty globs are each an error naming what was given."""
    (tmp_path / "empty").mkdir()
    missing, empty, pattern = str(tmp_path / "missing.json"), str(tmp_path / "empty"), str(tmp_path / "*.nothing")
    found, errors = discover([missing, empty, pattern])
    assert found == []
    assert [(e.path, e.message) for e in errors] == [
        (missing, "no such file or directory"),
        (empty, "directory holds no *.evalset.json or *.test.json file"),
        (pattern, "glob pattern matched no file"),
    ]


def test_cases_are_parsed_on_use_and_released(write: Writer) -> None:
    """An eval set's cases parse when first used; release() drops the model and the next use parses it again."""
    loaded = load_eval_set(write("s.evalset.json", eval_set("s", case("a"), case("bad", inv(tool_calls=[])))))
    good, bad = loaded.cases
    model = good.case
    assert model is not None and good.case is model and good.error is None
    good.release()
    assert good.case is not model and good.case == model
    assert bad.case is None and bad.error is not None and bad.error.pointer == "/eval_cases/1/conversation/0/tool_calls"


def test_a_usual_eval_set_file_is_opened_once_even_as_its_cases_are_parsed(write: Writer) -> None:
    """Below KEEP_TEXT_CHARS an ASCII file's text is kept: parsing, releasing and re-parsing cases opens nothing."""
    path = write("s.evalset.json", eval_set("s", case("a"), case("b")))
    with opened_files() as opened:
        loaded = load_eval_set(path)
        for c in loaded.cases:
            assert c.case is not None
            c.release()
            assert c.case is not None
    assert [p for p in opened if p.name == "s.evalset.json"] == [path.absolute()]


def test_non_ascii_eval_set_is_kept_in_memory_and_parses(write: Writer) -> None:
    """A non-ASCII file's cases come from the kept text (character offsets are not byte offsets there)."""
    loaded = load_eval_set(write("s.evalset.json", eval_set("s", case("café", inv("où?")), case("b"))))
    assert [c.eval_id for c in loaded.cases] == ["café", "b"]
    assert all(c.case is not None for c in loaded.cases)


def test_repeated_eval_cases_key_is_read_as_json_does(write: Writer) -> None:
    """With a repeated key the last value counts, as in json.loads, whether it is a list or not."""
    text = '{"eval_set_id": "s", "eval_cases": [%s], "eval_cases": %s}'
    one = json.dumps(case("a"))
    last_list = load_eval_set(write("a.evalset.json", text % (one, "[" + json.dumps(case("b")) + "]")))
    assert [c.eval_id for c in last_list.cases] == ["b"]
    last_scalar = load_eval_set(write("b.evalset.json", text % (one, "5")))
    assert not last_scalar.cases and last_scalar.errors[0].pointer == "/eval_cases"


def test_legacy_ids_do_not_depend_on_the_working_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A legacy file's eval set id (and a list-of-turns file's case id) is its path relative to the repository
    root, so comparing from another directory never reads as "removed" + "new"; outside a repository, relative to
    the working directory."""
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    turns = repo / "evals" / "t.test.json"
    turns.parent.mkdir()
    turns.write_text(json.dumps([{"query": "hi", "expected_tool_use": [], "reference": "ok"}]), encoding="utf-8")
    named = repo / "evals" / "n.test.json"
    named.write_text(json.dumps([{"name": "c", "data": [{"query": "hi", "expected_tool_use": []}]}]), "utf-8")
    seen = set()
    for cwd, given in ((repo, "evals/t.test.json"), (repo / "evals", "t.test.json"), (tmp_path, str(turns))):
        monkeypatch.chdir(cwd)
        loaded = load_eval_set(Path(given))
        other = load_eval_set(Path(given).with_name("n.test.json"))
        seen.add((loaded.eval_set_id, loaded.cases[0].eval_id, other.eval_set_id))
    assert seen == {("evals/t.test.json", "evals/t.test.json", "evals/n.test.json")}
    outside = tmp_path / "loose"
    outside.mkdir()
    (outside / "t.test.json").write_text(turns.read_text(encoding="utf-8"), encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    if not any((p / ".git").exists() for p in (tmp_path, *tmp_path.parents)):
        assert load_eval_set(Path("loose/t.test.json")).eval_set_id == "loose/t.test.json"


def test_each_streamed_case_is_decoded_once(write: Writer, monkeypatch: pytest.MonkeyPatch) -> None:
    """Loading and scoring-time parsing build each case's JSON value once (json's and msgspec's decoders are
    observed, not replaced); InputError pointers of a bad case are unchanged."""
    built: list[str] = []
    decode = json.JSONDecoder.raw_decode

    def record(value: Any) -> Any:
        if isinstance(value, dict) and "eval_id" in value:
            built.append(value["eval_id"])
        elif isinstance(value, list) and value and isinstance(value[0], dict) and "user_content" in value[0]:
            built.append("actuals:" + value[0]["invocation_id"])
        return value

    def observed(self: json.JSONDecoder, s: str, idx: int = 0) -> tuple[Any, int]:
        value, end = decode(self, s, idx)
        return record(value), end

    class ObservedFast:
        def __init__(self, real: Any) -> None:
            self.real = real

        def decode(self, data: Any) -> Any:
            return record(self.real.decode(data))

    monkeypatch.setattr(json.JSONDecoder, "raw_decode", observed)
    monkeypatch.setattr(jsonio, "_FAST", ObservedFast(jsonio._FAST))
    for size in (0, KEEP_TEXT_CHARS):  # text kept, and read back by offset
        built.clear()
        doc = json.dumps(eval_set("s", case("a"), case("b"), case("bad", inv(tool_calls=[])))) + " " * size
        loaded = load_eval_set(write(f"s{size}.evalset.json", doc))
        assert built == []
        parsed = [(c.case is not None, c.error.pointer if c.error else None) for c in loaded.cases]
        assert parsed == [(True, None), (True, None), (False, "/eval_cases/2/conversation/0/tool_calls")]
        assert sorted(built) == ["a", "b", "bad"]
        built.clear()
        actuals = load_actuals(write(f"a{size}.json", json.dumps({"a": [inv("q", invocation_id="i1")]}) + " " * size))
        assert built == []
        assert isinstance(actuals.find("s", "a"), list) and built == ["actuals:i1"]


def test_cli_outputs_never_follow_a_symlink(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 24: an output (here the CLI's --html) whose directory or file is a symlink is refused naming the flag,
    and the link's target is untouched; an unwritable output is the same InputError (exit 2), never OSError."""
    from evalbot.cli.evaluate import write_text
    from evalbot.errors import InputError

    monkeypatch.chdir(tmp_path)
    victim = tmp_path / "victim.txt"
    victim.write_text("keep", encoding="utf-8")
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "report.html").symlink_to(victim)
    (tmp_path / "linked").symlink_to(tmp_path / "out")
    for path in ("out/report.html", "linked/new.html"):
        with pytest.raises(InputError, match=r"--html: cannot write .*symbolic link"):
            write_text(path, "<html>", "--html")
    assert victim.read_text(encoding="utf-8") == "keep" and not (tmp_path / "out" / "new.html").exists()
    with pytest.raises(InputError, match="--html: cannot write '/proc/self/mem'"):
        write_text("/proc/self/mem", "<html>", "--html")
    write_text("fresh/dir/report.html", "<html>", "--html")
    assert (tmp_path / "fresh" / "dir" / "report.html").read_text(encoding="utf-8") == "<html>"
