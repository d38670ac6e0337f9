"""``evalbot run`` with rubric_based_multi_turn_trajectory_quality_v1 named in an ADK config: it loads, the judge is
asked once per conversation through the real client, the gate follows its verdict, a conversation counts as one
judged verdict; a sharded run reports the unused-rubric notices of cases in other shards too."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from evalbot.cli.commands import main
from tests.fakes.builders import Writer, case, eval_set, inv
from tests.fakes.fake_gemini import FakeGemini

NAME = "rubric_based_multi_turn_trajectory_quality_v1"
RUBRIC = {"rubric_id": "confirm", "rubric_content": {"text_property": "The agent confirms before booking."},
          "type": "TRAJECTORY_QUALITY"}
CONFIG = {"criteria": {NAME: {"threshold": 0.5, "judge_model_options": {"num_samples": 1}}}}


def _project(write: Writer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, *, with_d: bool = True) -> None:
    """Case c: three turns and a TRAJECTORY_QUALITY rubric; case d: only a TOOL_USE_QUALITY rubric."""
    turns = [inv("Book Paris"), inv("Yes, book it"), inv("Thanks")]
    d = [case("d", inv("hi"), rubrics=[{**RUBRIC, "type": "TOOL_USE_QUALITY"}])] if with_d else []
    write("evals/s.evalset.json", eval_set("s", case("c", *turns, rubrics=[RUBRIC]), *d))
    write("evals/test_config.json", CONFIG)
    write("runs/pr.json", {"c": [inv("Book Paris", "Shall I book?"), inv("Yes, book it", "Booked."),
                                 inv("Thanks", "Bye.")], "d": [inv("hi", "hello")]})
    monkeypatch.chdir(tmp_path)


@pytest.mark.parametrize(("verdict", "with_d", "code"), [("yes", False, 0), ("no", False, 1), ("yes", True, 3)])
def test_the_conversation_verdict_decides_the_case(write: Writer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                   capsys: pytest.CaptureFixture[str], verdict: str, with_d: bool,
                                                   code: int) -> None:
    """A passing or failing verdict on c gives exit 0 or 1; case d, without a TRAJECTORY_QUALITY rubric, is a
    missing verdict (exit 3) counted once beside c's one verdict, however many turns c has."""
    _project(write, tmp_path, monkeypatch, with_d=with_d)
    answer = f"ID: confirm\nProperty: The agent confirms before booking.\nRationale: turn 1\nVerdict: {verdict}"
    with FakeGemini(responder=lambda p, i, r: answer) as fake:
        env = {"GOOGLE_API_KEY": "k", "GOOGLE_GEMINI_BASE_URL": fake.url}
        got = main(["run", "evals", "--actuals", "runs/pr.json", "--report", "report.json"], env=env)
        prompts = [r.prompt for r in fake.requests]
    err = capsys.readouterr().err
    assert got == code, err
    assert len(prompts) == 1 and "Shall I book?" in prompts[0] and "Bye." in prompts[0]  # case d has no rubric
    if with_d:
        assert "judge unavailable: 1 of 2 judged verdict(s) not evaluated — the conversation has no rubrics" in err
    else:
        assert "judge unavailable" not in err
    report: dict[str, Any] = json.loads(Path("report.json").read_text(encoding="utf-8"))
    cases = {c["eval_id"]: c for c in report["eval_sets"][0]["cases"]}
    metric = cases["c"]["metrics"][NAME]
    assert [p["status"] for p in metric["per_invocation"]] == ["informational", "informational",
                                                                 "passed" if verdict == "yes" else "failed"]
    if with_d:
        assert cases["d"]["metrics"][NAME]["status"] == "not_evaluated"


def test_a_sharded_run_reports_the_notices_of_every_shards_cases(write: Writer, tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """The TOOL_USE_QUALITY rubric is on case d only; whichever shard scores case c still reports its notice."""
    _project(write, tmp_path, monkeypatch)
    for k in (1, 2):
        main(["run", "evals", "--actuals", "runs/pr.json", "--shard", f"{k}/2", "--report", f"part{k}.json"], env={})
        notices = json.loads(Path(f"part{k}.json").read_text(encoding="utf-8"))["eval_sets"][0]["notices"]
        assert any("rubrics typed 'TOOL_USE_QUALITY' are not used" in n for n in notices), notices
