"""``sampling: sequential|full`` from the command line and the config's ``evalbot`` section, through the judge."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from evalbot.cli.commands import main
from tests.fakes.builders import Writer, case, eval_set, inv
from tests.fakes.fake_gemini import FakeGemini

VALID = '{"reasoning": "same", "is_the_agent_response_valid": "valid"}'
CRITERIA: dict[str, Any] = {"criteria": {"final_response_match_v2": {
    "threshold": 0.5, "judge_model_options": {"num_samples": 5}}}}


@pytest.fixture
def fake() -> Iterator[FakeGemini]:
    """A judge that always says valid."""
    with FakeGemini(responder=lambda prompt, index, request: VALID) as server:
        yield server


@pytest.fixture
def proj(write: Writer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """One judged eval set and its actuals; cwd is the project."""
    write("evals/s.evalset.json", eval_set("s", case("c", inv("q", "reference"))))
    write("runs/pr.json", {"c": [inv("q", "an answer")]})
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _run(fake: FakeGemini, capsys: pytest.CaptureFixture[str], *flags: str) -> tuple[int, list[int], str]:
    fake.reset()
    env = {"GOOGLE_API_KEY": "k", "GOOGLE_GEMINI_BASE_URL": fake.url}
    code = main(["run", "evals", "--actuals", "runs/pr.json", *flags], env=env)
    return code, [r.candidate_count for r in fake.requests], capsys.readouterr().err


def test_sequential_by_default_full_from_config_flag_wins(proj: Path, write: Writer, fake: FakeGemini,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    """Default: 3 samples decide a unanimous vote; the config's evalbot.sampling full asks 5; --sampling wins."""
    write("evals/test_config.json", CRITERIA)
    assert _run(fake, capsys)[:2] == (0, [3])
    write("evals/test_config.json", {**CRITERIA, "evalbot": {"sampling": "full"}})
    assert _run(fake, capsys)[:2] == (0, [5])
    assert _run(fake, capsys, "--sampling", "sequential")[:2] == (0, [3])
    write("evals/test_config.json", CRITERIA)
    assert _run(fake, capsys, "--sampling", "full")[:2] == (0, [5])


@pytest.mark.parametrize("value", ["some", 3, None, ["full"], "full\n"])
def test_invalid_sampling_setting_names_the_file_and_pointer(value: Any, proj: Path, write: Writer, fake: FakeGemini,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    """A bad evalbot.sampling is an input error (exit 2) naming the config and /evalbot/sampling; no judge call."""
    write("evals/test_config.json", {**CRITERIA, "evalbot": {"sampling": value}})
    code, counts, err = _run(fake, capsys)
    assert code == 2 and counts == [] and "evals/test_config.json:/evalbot/sampling" in err, err


def test_bad_flag_value_is_refused(proj: Path, fake: FakeGemini, capsys: pytest.CaptureFixture[str]) -> None:
    """--sampling accepts only sequential and full."""
    with pytest.raises(SystemExit) as exc:
        main(["run", "evals", "--sampling", "half"], env={})
    assert exc.value.code == 2 and "--sampling" in capsys.readouterr().err
