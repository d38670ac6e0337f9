"""``evalbot judge-diff`` (issue 40 item 4): the same recorded runs judged by the configured judge (the fake Gemini
server) and by another model (the fake OpenAI server), each scripted; per judged criterion how many verdicts agree
and which cases flip; exit 0; nothing written unless --report."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evalbot.cli.commands import main
from tests.fakes.builders import Writer, case, eval_set, inv
from tests.fakes.fake_gemini import FakeGemini, Recorded
from tests.fakes.fake_openai import FakeOpenAI

VALID, INVALID = '{"is_the_agent_response_valid": "valid"}', '{"is_the_agent_response_valid": "invalid"}'


@pytest.fixture
def proj(write: Writer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    write("evals/s.evalset.json", eval_set("s", *(case(f"c{i}", inv(f"q{i}", "reference")) for i in range(4))))
    write("evals/test_config.json", {"criteria": {"final_response_match_v2": {"threshold": 0.5,
                                                                              "judge_model_options": {"num_samples": 1}}}})
    write("runs/pr.json", {f"c{i}": [inv(f"q{i}", f"answer @@a{i}@@")] for i in range(4)})
    monkeypatch.chdir(tmp_path)
    return tmp_path


def new_judge(prompt: str, index: int, request: Recorded) -> str:
    """The new model fails c1 and c2, and passes the others."""
    return INVALID if "@@a1@@" in prompt or "@@a2@@" in prompt else VALID


def test_judge_diff_lists_the_flipped_cases(proj: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with FakeGemini(responder=lambda p, i, r: VALID) as old, FakeOpenAI(responder=new_judge) as new:
        env = {"GOOGLE_API_KEY": "k", "GOOGLE_GEMINI_BASE_URL": old.url, "OPENAI_API_KEY": "o",
               "OPENAI_BASE_URL": new.url}
        before = sorted(p.name for p in proj.rglob("*"))
        code = main(["judge-diff", "evals", "--actuals", "runs/pr.json", "--judge-model", "openai/gpt-4o-mini"],
                    env=env)
        out = capsys.readouterr().out
        assert code == 0, out
        assert len(old.requests) == 4 and len(new.requests) == 4
        assert {r.model for r in old.requests} == {"gemini-2.5-flash"} and {r.model for r in new.requests} == {
            "gpt-4o-mini"}
        assert sorted(p.name for p in proj.rglob("*")) == before  # nothing written
        assert "judge-diff: the configured judge (gemini-2.5-flash) and openai/gpt-4o-mini on the same runs" in out
        assert "final_response_match_v2: 2 of 4 verdict(s) agree, 2 flip" in out
        assert "  s / c1 (verdict 1): passed → failed" in out and "  s / c2 (verdict 1): passed → failed" in out
        assert "c0 (" not in out and "c3 (" not in out
        assert main(["judge-diff", "evals", "--actuals", "runs/pr.json", "--judge-model", "openai/gpt-4o-mini",
                     "--report", "diff.json"], env=env) == 0
    data = json.loads((proj / "diff.json").read_text())
    row = data["criteria"]["final_response_match_v2"]
    assert (row["verdicts"], row["agree"], row["not_measured"]) == (4, 2, 0)
    assert [(f["case"], f["configured"], f["new"]) for f in row["flips"]] == [("c1", "passed", "failed"),
                                                                              ("c2", "passed", "failed")]


def test_a_side_the_judge_cannot_answer_is_counted_apart(proj: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with FakeGemini(responder=lambda p, i, r: VALID) as old:
        env = {"GOOGLE_API_KEY": "k", "GOOGLE_GEMINI_BASE_URL": old.url}
        code = main(["judge-diff", "evals", "--actuals", "runs/pr.json", "--judge-model", "openai/gpt-4o-mini"],
                    env=env)
    out = capsys.readouterr().out
    assert code == 0 and "final_response_match_v2: 0 of 0 verdict(s) agree, 0 flip, 4 not measured on one side" in out


@pytest.mark.parametrize("argv", [
    ["judge-diff", "evals", "--judge-model", "x"],  # no --actuals
    ["judge-diff", "evals", "--actuals", "runs/pr.json", "--judge-model", "has space"],
    ["judge-diff", "evals", "--actuals", "runs/pr.json", "--judge-model", "x" * 300],
])
def test_bad_input_is_exit_2(proj: Path, argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    try:
        code = main(argv, env={})
    except SystemExit as exc:  # argparse's own exit for a bad value
        code = int(exc.code or 0)
    assert code == 2
    err = capsys.readouterr().err
    assert "--actuals" in err or "--judge-model" in err
