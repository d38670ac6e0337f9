"""Dollars per PR (issue 40 item 2): the judge's cost from its usage and the agent's from the recorded runs' token
usage and model names, priced from the dated table shipped in the package (evalbot/data/prices.json) and the gate
policy's ``prices``; shown in the comment, the job summary and the HTML beside main's (the baseline records it); an
unknown model's cost is "unknown" with its tokens, never 0. The judge is the fake Gemini server (the real client)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from evalbot.cli.commands import main
from evalbot.compare.gate import policy_from_settings
from evalbot.errors import InputError
from evalbot.formats.prices import PRICES_FILE, Price, parse_prices, shipped_prices
from tests.fakes.builders import Writer, case, eval_set, inv
from tests.fakes.fake_gemini import FakeGemini

TABLE: dict[str, Any] = json.loads(PRICES_FILE.read_text(encoding="utf-8"))
"""The shipped table, read here as data: the expected dollars are computed from it, not from evalbot's code."""
CRITERIA: dict[str, Any] = {"criteria": {"final_response_match_v2": {
    "threshold": 0.5, "judge_model_options": {"num_samples": 1}}}}


def _usd(model: str, tokens_in: int, tokens_out: int) -> float:
    row = TABLE["usd_per_million_tokens"][model]
    return (tokens_in * row["input"] + tokens_out * row["output"]) / 1_000_000


def _events(*rows: tuple[str | None, dict[str, int]]) -> dict[str, Any]:
    return {"invocation_events": [{"author": "agent", "usage_metadata": usage,
                                   **({"model_version": model} if model else {})} for model, usage in rows]}


@pytest.fixture
def judge() -> Iterator[FakeGemini]:
    with FakeGemini(responder=lambda prompt, i, rec: '{"is_the_agent_response_valid": "valid"}') as server:
        yield server


@pytest.fixture
def proj(write: Writer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    write("evals/s.evalset.json", eval_set("s", case("c", inv("q", "reference")), case("d", inv("r", "ref"))))
    write("evals/test_config.json", CRITERIA)
    write("runs/pr.json", {
        "c": [inv("q", "an answer", intermediate_data=_events(
            ("gemini-2.5-flash", {"prompt_token_count": 1000, "candidates_token_count": 200}),
            ("gpt-4o-mini-2024-07-18", {"promptTokenCount": 500, "candidatesTokenCount": 50,
                                        "thoughtsTokenCount": 25})))],
        "d": [inv("r", "another", intermediate_data=_events(
            ("gemini-2.5-flash", {"prompt_token_count": 300, "candidates_token_count": 40,
                                  "tool_use_prompt_token_count": 7})))],
    })
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _env(server: FakeGemini) -> dict[str, str]:
    return {"GOOGLE_API_KEY": "k", "GOOGLE_GEMINI_BASE_URL": server.url}


def test_the_shipped_table_is_dated_and_sourced_and_covers_current_models() -> None:
    assert TABLE["as_of"] and "ai.google.dev" in TABLE["source"] and "openai.com" in TABLE["source"]
    table = shipped_prices()
    for model in ("gemini-2.5-flash", "gemini-2.5-pro", "gemini-3-pro-preview", "gemini-3-flash-preview", "gpt-5",
                  "gpt-5-mini", "gpt-4.1", "o4-mini", "openai/gpt-4o-mini-2024-07-18", "models/gemini-2.5-flash-001"):
        assert table.price(model) is not None, model
    # a name is its entry or a dated/preview version of it: never another model whose name it starts with
    for model in ("gpt-5.5", "gemini-2.5-flash-image", "gemini-4-pro", "azure/my-deployment", "llama3", ""):
        assert table.price(model) is None, model
    lite = table.price("gemini-2.5-flash-lite-preview-06-17")
    assert lite is not None and lite.input == TABLE["usd_per_million_tokens"]["gemini-2.5-flash-lite"]["input"]
    assert table.cost("my-model", 10, 10) is None  # unknown, never 0


def test_judge_and_agent_dollars_equal_tokens_times_the_tables_price(
        proj: Path, judge: FakeGemini, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["run", "evals", "--actuals", "runs/pr.json", "--report", "out.json"], env=_env(judge))
    assert code == 0, capsys.readouterr().err
    report = json.loads((proj / "out.json").read_text())
    usage = report["usage"]["total"]
    assert usage["requests"] == len(judge.requests) == 2
    assert usage["input_tokens"] == sum(len(r.prompt) // 4 + 1 for r in judge.requests)  # the fake's own count
    assert usage["estimated_cost_usd"] == pytest.approx(
        _usd("gemini-2.5-flash", usage["input_tokens"], usage["output_tokens"]))
    agent = report["agent_usage"]
    flash, mini = agent["per_model"]["gemini-2.5-flash"], agent["per_model"]["gpt-4o-mini-2024-07-18"]
    assert (flash["input_tokens"], flash["output_tokens"], flash["calls"]) == (1307, 240, 2)
    assert (mini["input_tokens"], mini["output_tokens"], mini["calls"]) == (500, 75, 1)
    assert flash["estimated_cost_usd"] == pytest.approx(_usd("gemini-2.5-flash", 1307, 240))
    assert mini["estimated_cost_usd"] == pytest.approx(_usd("gpt-4o-mini", 500, 75))
    assert agent["total"]["estimated_cost_usd"] == pytest.approx(
        _usd("gemini-2.5-flash", 1307, 240) + _usd("gpt-4o-mini", 500, 75))
    assert TABLE["as_of"] in agent["prices"] and TABLE["as_of"] in report["usage"]["prices"]


def test_comment_summary_and_html_show_both_beside_mains(
        proj: Path, judge: FakeGemini, write: Writer, capsys: pytest.CaptureFixture[str]) -> None:
    env = _env(judge)
    assert main(["baseline", "evals", "--actuals", "runs/pr.json", "--output", "base.json"], env=env) == 0
    base = json.loads((proj / "base.json").read_text())
    main_agent = base["agent_usage"]["estimated_cost_usd"]
    assert main_agent == pytest.approx(_usd("gemini-2.5-flash", 1307, 240) + _usd("gpt-4o-mini", 500, 75))
    assert base["agent_usage"]["input_tokens"] == 1807 and base["agent_usage"]["unpriced"] == []
    # the PR's agent now calls a model without a price: its cost is unknown, with its tokens
    write("runs/pr.json", {
        "c": [inv("q", "an answer", intermediate_data=_events(
            ("my-private-model", {"prompt_token_count": 4000, "candidates_token_count": 321})))],
        "d": [inv("r", "another", intermediate_data=_events(
            ("gemini-2.5-flash", {"prompt_token_count": 300, "candidates_token_count": 40})))],
    })
    code = main(["compare", "evals", "--actuals", "runs/pr.json", "--baseline", "base.json", "--comment", "c.md",
                 "--summary", "s.md", "--html", "r.html", "--report", "r.json"], env=env)
    assert code == 0, capsys.readouterr().err
    report = json.loads((proj / "r.json").read_text())
    judge_usd = report["usage"]["total"]["estimated_cost_usd"]
    assert report["agent_usage"]["total"]["estimated_cost_usd"] is None  # never 0 for an unknown price
    main_judge = base["usage"]["total"]["estimated_cost_usd"]
    expected = (f"Cost of this run: judge ≈ {judge_usd:.4f} USD, agent unknown (4,321 tokens on my-private-model "
                f"without a price) · main: judge ≈ {main_judge:.4f} USD, agent ≈ {main_agent:.4f} USD")
    for name in ("c.md", "s.md"):
        assert expected in (proj / name).read_text(), name
    html = (proj / "r.html").read_text()
    assert "<h2>Cost</h2>" in html and "agent unknown (4,321 tokens on my-private-model" in html


def test_the_policys_prices_extend_the_table(proj: Path, judge: FakeGemini, write: Writer,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    write("evals/test_config.json", {**CRITERIA, "evalbot": {"prices": {
        "gemini-2.5-flash": {"input": 1.0, "output": 2.0}, "my-private-model": {"input": 3.0, "output": 4.0}}}})
    write("runs/pr.json", {
        "c": [inv("q", "x", intermediate_data=_events(("my-private-model", {"prompt_token_count": 1000,
                                                                           "candidates_token_count": 100})))],
        "d": [inv("r", "y")]})
    assert main(["run", "evals", "--actuals", "runs/pr.json", "--report", "out.json"], env=_env(judge)) == 0
    report = json.loads((proj / "out.json").read_text())
    total = report["usage"]["total"]
    assert total["estimated_cost_usd"] == pytest.approx((total["input_tokens"] * 1.0 + total["output_tokens"] * 2.0)
                                                        / 1e6)
    assert report["agent_usage"]["total"]["estimated_cost_usd"] == pytest.approx((1000 * 3.0 + 100 * 4.0) / 1e6)
    assert "gate policy's prices for 2 model(s)" in report["agent_usage"]["prices"]


@pytest.mark.parametrize(("prices", "pointer"), [
    ([1, 2], "/evalbot/prices"),
    ({"m": {"input": 1}}, "/evalbot/prices/m"),
    ({"m": {"input": 1, "output": 2, "cached": 3}}, "/evalbot/prices/m"),
    ({"m": {"input": True, "output": 2}}, "/evalbot/prices/m/input"),
    ({"m": {"input": -1, "output": 2}}, "/evalbot/prices/m/input"),
    ({"m": {"input": 1, "output": 1e9}}, "/evalbot/prices/m/output"),
    ({"m": {"input": float("nan"), "output": 2}}, "/evalbot/prices/m/input"),
    ({"m": {"input": "0.3", "output": 2}}, "/evalbot/prices/m/input"),
    ({"": {"input": 1, "output": 2}}, "/evalbot/prices/"),
    ({"x" * 300: {"input": 1, "output": 2}}, "/evalbot/prices/" + "x" * 300),
    ({"bad\ud800": {"input": 1, "output": 2}}, None),
    ({f"m{i}": {"input": 1, "output": 2} for i in range(1001)}, "/evalbot/prices"),
])
def test_invalid_prices_are_an_input_error_naming_the_pointer(prices: Any, pointer: str | None) -> None:
    with pytest.raises(InputError) as caught:
        policy_from_settings({"prices": prices}, source="evals/test_config.json")
    assert caught.value.path == "evals/test_config.json"
    if pointer is not None:
        assert caught.value.pointer == pointer, str(caught.value)
    assert "prices" in str(caught.value)


def test_valid_prices_round_trip_and_replace_a_shipped_price() -> None:
    policy = policy_from_settings({"prices": {"Gemini-2.5-Flash": {"input": 0, "output": 0.5}}}, source="x")
    table = policy.price_table()
    assert table.price("gemini-2.5-flash") == Price(0.0, 0.5)
    assert table.cost("gemini-2.5-flash-001", 10**6, 10**6) == pytest.approx(0.5)
    assert parse_prices(None) == {} and shipped_prices().extended({}) is shipped_prices()


def test_forged_model_names_and_counts_in_a_recording_are_bounded_and_escaped(
        proj: Path, judge: FakeGemini, write: Writer, capsys: pytest.CaptureFixture[str]) -> None:
    forged = "<img src=x onerror=alert(1)>**bold**|`code`](http://evil)"
    rows: list[tuple[str | None, dict[str, int]]] = [
        (forged, {"prompt_token_count": 10, "candidates_token_count": 1}),
        ("x" * 100_000, {"prompt_token_count": 1, "candidates_token_count": 1}),
        (None, {"prompt_token_count": 5}),
        ("gemini-2.5-flash", {"prompt_token_count": 10**15, "candidates_token_count": -5}),  # refused: counted 0
        *((f"m{i}", {"prompt_token_count": 1}) for i in range(300)),
    ]
    write("runs/pr.json", {"c": [inv("q", "x", intermediate_data=_events(*rows))], "d": [inv("r", "y")]})
    code = main(["compare", "evals", "--actuals", "runs/pr.json", "--baseline", "none.json", "--comment", "c.md",
                 "--html", "r.html", "--report", "r.json"], env=_env(judge))
    assert code == 0, capsys.readouterr().err
    agent = json.loads((proj / "r.json").read_text())["agent_usage"]
    assert len(agent["per_model"]) == 101 and "(other models)" in agent["per_model"]
    assert max(map(len, agent["per_model"])) <= 200 and "(model not recorded)" in agent["per_model"]
    assert agent["per_model"]["gemini-2.5-flash"]["input_tokens"] == 0
    assert agent["total"]["estimated_cost_usd"] is None
    comment, html = (proj / "c.md").read_text(), (proj / "r.html").read_text()
    assert "agent unknown (" in comment and "<img" not in comment and "](http://evil)" not in comment
    assert "<img src=x" not in html


def test_a_prs_own_prices_and_budget_are_policy_change_notices() -> None:
    from evalbot.basecommit.gate import policy_changes

    base: dict[str, Any] = {"judge_budget": {"requests": 10}}
    pr: dict[str, Any] = {"prices": {"gemini-2.5-flash": {"input": 0, "output": 0}}, "judge_budget": {"requests": 99}}
    changes = policy_changes(base, pr, policy_from_settings(base, source="main"), policy_from_settings(pr, source="pr"))
    assert changes == ['judge_budget {"requests": 10} → {"requests": 99}',
                       'prices {} → {"gemini-2.5-flash": {"input": 0.0, "output": 0.0}}']
