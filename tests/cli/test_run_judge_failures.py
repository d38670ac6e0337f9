"""``evalbot run`` exits 1 on failing cases, so CI uses it as an ADK-style threshold gate: a judge that failed to
give verdicts must not leave it green. Exit 3 by default (as ``compare``), a warning with ``--judge-failures warn``
or the config's ``evalbot.judge_failures: warn``. Missing credentials too: a CI job whose secret is unset or
misnamed must not pass without measuring (the command line has no fork stage that runs without secrets)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from evalbot.cli.commands import main
from tests.fakes.builders import Writer, case, eval_set, inv
from tests.fakes.fake_gemini import FakeError, FakeGemini

CRITERIA: dict[str, Any] = {"criteria": {"final_response_match_v2": {
    "threshold": 0.5, "judge_model_options": {"num_samples": 1}}}}


@pytest.fixture
def down() -> Iterator[FakeGemini]:
    """A judge that refuses every request (401: not retried, so the test is quick)."""
    def fail(prompt: str, index: int, request: object) -> str:
        raise FakeError(401, "API key not valid")
    with FakeGemini(responder=fail) as server:
        yield server


@pytest.fixture
def proj(write: Writer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    write("evals/s.evalset.json", eval_set("s", case("c", inv("q", "reference"))))
    write("evals/test_config.json", CRITERIA)
    write("runs/pr.json", {"c": [inv("q", "an answer")]})
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _run(env: dict[str, str], capsys: pytest.CaptureFixture[str], *flags: str) -> tuple[int, str]:
    code = main(["run", "evals", "--actuals", "runs/pr.json", "--judge-timeout", "2", *flags], env=env)
    return code, capsys.readouterr().err


def test_judge_outage_is_exit_3_not_green(proj: Path, down: FakeGemini, capsys: pytest.CaptureFixture[str]) -> None:
    env = {"GOOGLE_API_KEY": "k", "GOOGLE_GEMINI_BASE_URL": down.url}
    code, err = _run(env, capsys)
    assert code == 3, err
    assert "could not measure, not passing: judge unavailable: 1 of 1 judged verdict(s) not evaluated" in err
    assert "401" in err or "API key not valid" in err


def test_warn_from_the_flag_or_the_config(proj: Path, write: Writer, down: FakeGemini,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    env = {"GOOGLE_API_KEY": "k", "GOOGLE_GEMINI_BASE_URL": down.url}
    code, err = _run(env, capsys, "--judge-failures", "warn")
    assert code == 0 and "evalbot: warning: judge unavailable" in err
    write("evals/test_config.json", {**CRITERIA, "evalbot": {"judge_failures": "warn"}})
    assert _run(env, capsys)[0] == 0
    assert _run(env, capsys, "--judge-failures", "block")[0] == 3  # the flag wins over the config


def test_bad_config_value_is_an_input_error(proj: Path, write: Writer, down: FakeGemini,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    write("evals/test_config.json", {**CRITERIA, "evalbot": {"judge_failures": "sometimes"}})
    code, err = _run({"GOOGLE_API_KEY": "k", "GOOGLE_GEMINI_BASE_URL": down.url}, capsys)
    assert code == 2 and "/evalbot/judge_failures" in err, err


def test_missing_credentials_are_exit_3_unless_warned(proj: Path, write: Writer,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    code, err = _run({}, capsys)
    assert code == 3, err
    assert ("evalbot: could not measure, not passing: judge credentials missing: 1 of 1 judged verdict(s) not "
            "evaluated — no judge credentials: set GOOGLE_API_KEY") in err
    code, err = _run({}, capsys, "--judge-failures", "warn")
    assert code == 0 and "evalbot: warning: judge credentials missing: 1 of 1" in err, err
    write("evals/test_config.json", {**CRITERIA, "evalbot": {"judge_failures": "warn"}})
    assert _run({}, capsys)[0] == 0


def test_baseline_without_judged_verdicts_is_not_written(proj: Path, down: FakeGemini,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    """evalbot baseline during an outage or without credentials writes nothing (exit 3) unless --allow-errors:
    a baseline whose judged verdicts are "not evaluated" would leave them uncompared on every pull request."""
    argv = ["baseline", "evals", "--actuals", "runs/pr.json", "--output", "b.json", "--commit", "x"]
    for env in ({"GOOGLE_API_KEY": "k", "GOOGLE_GEMINI_BASE_URL": down.url}, {}):
        code = main(argv, env=env)
        err = capsys.readouterr().err
        assert code == 3 and not (proj / "b.json").exists(), err
        assert "the baseline was not written" in err and "could not block" in err
    assert main([*argv, "--allow-errors"], env={}) == 0 and (proj / "b.json").exists()
