"""The judge that answered (issue 40 item 4): each judged verdict records the model the response names (Gemini's
``modelVersion``, OpenAI's ``model``, from the fake servers through the real clients); the report, the baseline and
the comment show it where it differs from the configured name; a served model that differs from main's is a
yardstick notice in the headline, blocking only under ``yardstick_changes: block`` when the configured name changed
too."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from evalbot.cli.commands import main
from tests.fakes.builders import Writer, case, eval_set, inv
from tests.fakes.fake_gemini import FakeGemini
from tests.fakes.fake_openai import FakeOpenAI

VALID = '{"is_the_agent_response_valid": "valid"}'


def _config(model: str, **section: Any) -> dict[str, Any]:
    return {"criteria": {"final_response_match_v2": {"threshold": 0.5, "judge_model_options": {
        "judge_model": model, "num_samples": 1}}}, **({"evalbot": section} if section else {})}


@pytest.fixture
def proj(write: Writer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Writer:
    write("evals/s.evalset.json", eval_set("s", case("c", inv("q", "reference")), case("d", inv("r", "ref"))))
    write("evals/test_config.json", _config("gemini-2.5-flash"))
    write("runs/pr.json", {"c": [inv("q", "an answer")], "d": [inv("r", "another")]})
    monkeypatch.chdir(tmp_path)
    return write


def _verdict_served(report: dict[str, Any]) -> set[str]:
    return {m["details"]["judge"].get("served_model", "") for es in report["eval_sets"] for c in es["cases"]
            for m in c["metrics"].values() if m.get("details") and "judge" in m["details"]}


def test_gemini_model_version_reaches_the_report_baseline_and_notice(proj: Writer, tmp_path: Path,
                                                                    capsys: pytest.CaptureFixture[str]) -> None:
    with FakeGemini(responder=lambda p, i, r: VALID, served_as={"gemini-2.5-flash": "gemini-2.5-flash-002"}) as fake:
        env = {"GOOGLE_API_KEY": "k", "GOOGLE_GEMINI_BASE_URL": fake.url}
        assert main(["baseline", "evals", "--actuals", "runs/pr.json", "--output", "base.json"], env=env) == 0
        base = json.loads((tmp_path / "base.json").read_text())
        assert base["judge_served"] == {"final_response_match_v2": {"configured": ["gemini-2.5-flash"],
                                                                    "served": ["gemini-2.5-flash-002"]}}
        fake.served_as["gemini-2.5-flash"] = "gemini-2.5-flash-003"  # the provider swaps the model under the name
        code = main(["compare", "evals", "--actuals", "runs/pr.json", "--baseline", "base.json", "--report", "r.json",
                     "--comment", "c.md", "--html", "r.html"], env=env)
    err = capsys.readouterr().err
    assert code == 0, err  # a served model's change alone never blocks
    report = json.loads((tmp_path / "r.json").read_text())
    assert _verdict_served(report) == {"gemini-2.5-flash-003"}
    assert report["usage"]["per_criterion"]["final_response_match_v2"]["served"] == ["gemini-2.5-flash-003"]
    notice = "judge served gemini-2.5-flash-002 on main, gemini-2.5-flash-003 now (final_response_match_v2)"
    comment = (tmp_path / "c.md").read_text().replace("\\_", "_")  # markdown escapes the underscores
    assert notice in comment and "final_response_match_v2 (served by gemini-2.5-flash-003)" in comment
    html = (tmp_path / "r.html").read_text()
    assert notice in html


def test_the_same_served_model_says_nothing(proj: Writer, tmp_path: Path) -> None:
    with FakeGemini(responder=lambda p, i, r: VALID) as fake:
        env = {"GOOGLE_API_KEY": "k", "GOOGLE_GEMINI_BASE_URL": fake.url}
        assert main(["baseline", "evals", "--actuals", "runs/pr.json", "--output", "base.json"], env=env) == 0
        assert main(["compare", "evals", "--actuals", "runs/pr.json", "--baseline", "base.json", "--comment",
                     "c.md"], env=env) == 0
    comment = (tmp_path / "c.md").read_text().replace("\\_", "_")  # markdown escapes the underscores
    assert "judge served" not in comment and "served by" not in comment  # served as configured: nothing to show


@pytest.mark.parametrize(("policy", "code"), [("block", 1), ("warn", 0)])
def test_a_configured_change_with_it_blocks_only_under_yardstick_block(proj: Writer, tmp_path: Path, policy: str,
                                                                        code: int) -> None:
    with FakeGemini(responder=lambda p, i, r: VALID) as fake:
        env = {"GOOGLE_API_KEY": "k", "GOOGLE_GEMINI_BASE_URL": fake.url}
        assert main(["baseline", "evals", "--actuals", "runs/pr.json", "--output", "base.json"], env=env) == 0
        proj("evals/test_config.json", _config("gemini-2.5-pro", yardstick_changes=policy))
        got = main(["compare", "evals", "--actuals", "runs/pr.json", "--baseline", "base.json", "--comment",
                    "c.md"], env=env)
    comment = (tmp_path / "c.md").read_text().replace("\\_", "_")  # markdown escapes the underscores
    assert got == code, comment
    assert ("judge served gemini-2.5-flash on main, gemini-2.5-pro now (final_response_match_v2; configured "
            "gemini-2.5-flash → gemini-2.5-pro: a yardstick change)") in comment


def test_openai_model_reaches_the_report(proj: Writer, tmp_path: Path) -> None:
    proj("evals/test_config.json", _config("openai/gpt-4o-mini"))
    with FakeOpenAI(responder=lambda p, i, r: VALID, served_as={"gpt-4o-mini": "gpt-4o-mini-2024-07-18"}) as fake:
        env = {"OPENAI_API_KEY": "k", "OPENAI_BASE_URL": fake.url}
        assert main(["compare", "evals", "--actuals", "runs/pr.json", "--baseline", "none.json", "--report", "r.json",
                     "--comment", "c.md"], env=env) == 0
    report = json.loads((tmp_path / "r.json").read_text())
    assert _verdict_served(report) == {"gpt-4o-mini-2024-07-18"}
    comment = (tmp_path / "c.md").read_text().replace("\\_", "_")
    assert "final_response_match_v2 (served by gpt-4o-mini-2024-07-18)" in comment


def test_a_forged_served_name_is_bounded_and_escaped(proj: Writer, tmp_path: Path) -> None:
    forged = "<img src=x onerror=alert(1)>|**x**](http://evil)" + "y" * 5000
    with FakeGemini(responder=lambda p, i, r: VALID, served_as={"gemini-2.5-flash": forged}) as fake:
        env = {"GOOGLE_API_KEY": "k", "GOOGLE_GEMINI_BASE_URL": fake.url}
        assert main(["compare", "evals", "--actuals", "runs/pr.json", "--baseline", "none.json", "--report", "r.json",
                     "--comment", "c.md", "--html", "r.html"], env=env) == 0
    served = _verdict_served(json.loads((tmp_path / "r.json").read_text()))
    assert len(served) == 1 and all(len(s) <= 200 for s in served)
    assert "<img" not in (tmp_path / "c.md").read_text() and "<img src" not in (tmp_path / "r.html").read_text()
