"""ADK's config shape, precisely: ignored keys are accepted with one notice each (terminal and comment, collapsed),
typos get a suggestion, evalbot's own section is strict, each eval set says which config applied, and a flag's
bad value is reported against the flag."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from evalbot.cli.commands import main
from tests.fakes.builders import case, eval_set, inv


def _project(tmp_path: Path, config: Any, set_doc: Any | None = None) -> tuple[Path, Path, Path]:
    folder = tmp_path / "evals"
    folder.mkdir()
    doc = set_doc or eval_set("s", case("a"), case("b"), case("c"), case("d"))
    (folder / "s.evalset.json").write_text(json.dumps(doc), encoding="utf-8")
    (folder / "test_config.json").write_text(json.dumps(config), encoding="utf-8")
    plain = tmp_path / "plain"
    plain.mkdir()
    (plain / "p.evalset.json").write_text(json.dumps(eval_set("p", case("p1"))), encoding="utf-8")
    actuals = tmp_path / "runs.json"
    actuals.write_text(json.dumps({k: [inv()] for k in ("a", "b", "c", "d", "p1")}), encoding="utf-8")
    return folder, plain, actuals


def _compare(tmp_path: Path, capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str, dict[str, Any]]:
    comment, report = tmp_path / "comment.md", tmp_path / "report.json"
    code = main(["compare", *args, "--baseline", str(tmp_path / "none.json"), "--comment", str(comment),
                 "--report", str(report)], env={})
    main(["run", *args], env={})
    terminal = capsys.readouterr().out
    data = json.loads(report.read_text(encoding="utf-8")) if report.exists() else {}
    return code, comment.read_text(encoding="utf-8") if comment.exists() else "", terminal, data


def test_keys_adk_ignores_are_accepted_with_one_notice_and_typos_get_a_suggestion(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = {"criterias": {"x": 1}, "criteria": {
        "response_match_score": {"threshold": 0.5, "description": "ROUGE-1 F1", "method": "ROUGE_1"},
        "tool_trajectory_avg_score": {"threshold": 1.0, "match_type": "EXACT", "description": "exact calls"}}}
    doc = eval_set("s", case("a"), case("b", sesion_input={}), case("c"), case("d"))
    doc["descripton"] = "typo"
    folder, plain, actuals = _project(tmp_path, config, doc)
    code, comment, terminal, report = _compare(tmp_path, capsys, str(folder), str(plain), "--actuals", str(actuals))
    assert code == 0, terminal  # accepted: scored as ADK scores it
    cfg = folder / "test_config.json"
    notices = [
        f"{folder / 's.evalset.json'}:/descripton: unknown key 'descripton' (did you mean 'description'?); "
        "ignored, as ADK ignores it",
        f"{cfg}:/criterias: unknown key 'criterias' (did you mean 'criteria'?); ignored, as ADK ignores it",
        f"{cfg}:/criteria/response_match_score: response_match_score does not read 'description', 'method'; "
        "ignored, as ADK ignores them (the scores are ADK's)",
        f"{cfg}:/criteria/tool_trajectory_avg_score: tool_trajectory_avg_score does not read 'description'; "
        "ignored, as ADK ignores it (the scores are ADK's)",
        f"{folder / 's.evalset.json'}: case 'b': unknown key 'sesion_input' (did you mean 'session_input'?); "
        "ignored, as ADK ignores it",
    ]
    sets = {es["eval_set_id"]: es for es in report["eval_sets"]}
    assert sets["s"]["notices"] == notices and sets["p"]["notices"] == []
    assert (sets["s"]["config"], sets["p"]["config"]) == (str(cfg), "ADK defaults")
    for notice in notices:  # once each, in the terminal and in the comment
        assert terminal.count(notice) == 1, terminal
        assert comment.count(notice.replace("_", "\\_")) == 1, comment
    assert "<details><summary>Notices (5)</summary>" in comment
    assert f"      config: {cfg} · criteria: response_match_score, tool_trajectory_avg_score" in terminal
    assert "      config: ADK defaults · criteria: tool_trajectory_avg_score, response_match_score" in terminal


def test_a_criterion_error_is_said_once_not_per_case(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A criterion typo errors every case (never a pass) but its reason is shown once per output."""
    folder, plain, actuals = _project(tmp_path, {"criteria": {"respnse_match_score": 0.5}})
    code, comment, terminal, _ = _compare(tmp_path, capsys, str(folder), str(plain), "--actuals", str(actuals))
    assert code == 2
    reason = "unknown criterion 'respnse_match_score'"
    assert terminal.count(reason) == 1, terminal
    assert comment.count(reason.replace("_", "\\_")) <= 3, comment  # the headline, its problem list and the set
    assert terminal.count("respnse_match_score: not configured correctly (the eval set's error says why)") == 1  # 4 cases, one line


def test_evalbot_section_is_strict(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder, _, actuals = _project(tmp_path, {"criteria": {"response_match_score": 0.5}, "evalbot": {"tolerence": 0.1}})
    code = main(["compare", str(folder), "--actuals", str(actuals), "--baseline", str(tmp_path / "none.json")], env={})
    err = capsys.readouterr().err
    assert code == 2
    assert err.startswith(f"error: {folder / 'test_config.json'}:/evalbot/tolerence: unknown evalbot setting "
                          "'tolerence' (did you mean 'tolerance'?); known: ")


def test_a_bad_flag_value_is_reported_against_the_flag(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder, _, actuals = _project(tmp_path, {"criteria": {"response_match_score": 0.5}})
    with pytest.raises(SystemExit) as exited:  # refused while parsing argv (evalbot/cli/args.py), before any work
        main(["compare", str(folder), "--actuals", str(actuals), "--tolerance", "2"], env={})
    err = capsys.readouterr().err
    assert exited.value.code == 2
    assert err == ("evalbot compare: error: argument --tolerance: expected a number at least 0 and at most 1, "
                   "got '2' (see evalbot compare --help)\n")


def test_live_audio_and_extra_simulator_options_are_notices_naming_the_option(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """ADK 2.13's live_model_config, the llm_audio simulator and simulator keys evalbot does not read are accepted
    (exit 0, as ADK accepts them) with one notice each naming the option, in the terminal and the comment."""
    config = {"criteria": {"response_match_score": 0.5}, "live_model_config": {"model": "gemini-live"},
              "user_simulator_config": {"type": "llm_audio", "max_alowed_invocations": 3, "voiceName": "Kore"}}
    folder, plain, actuals = _project(tmp_path, config)
    code, comment, terminal, report = _compare(tmp_path, capsys, str(folder), str(plain), "--actuals", str(actuals))
    assert code == 0, terminal
    cfg = folder / "test_config.json"
    notices = [
        f"{cfg}:/live_model_config: live_model_config is not used: evalbot runs the agent in ordinary text turns, "
        "not in a live session",
        f"{cfg}:/user_simulator_config/type: user_simulator_config.type 'llm_audio' is not simulated (evalbot "
        "simulates users in text only): its conversation_scenario cases are not_evaluated",
        f"{cfg}:/user_simulator_config/max_alowed_invocations: unknown key 'max_alowed_invocations' (did you mean "
        "'max_allowed_invocations'?); kept and unused, as ADK keeps it",
        f"{cfg}:/user_simulator_config/voiceName: unknown key 'voiceName'; kept and unused, as ADK keeps it",
    ]
    sets = {es["eval_set_id"]: es for es in report["eval_sets"]}
    assert sets["s"]["notices"] == notices
    for notice in notices:
        assert terminal.count(notice) == 1, terminal
        assert comment.count(notice.replace("_", "\\_")) == 1, comment
