"""The spend cap (issue 40 item 3): ``judge_budget: {"requests": N, "usd": X}`` is enforced where requests leave for
the judge service; the server never sees more than N requests or X dollars, however many are in flight; the verdicts
left are not_evaluated, a judge failure ("judge budget reached: K of M verdicts not evaluated", exit 3 under
``judge_failures: block``). Requests are counted on the fake Gemini server, reached through the real client."""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path
from typing import Any

import pytest

from evalbot.cli.commands import main
from evalbot.compare.gate import policy_from_settings
from evalbot.errors import InputError
from evalbot.formats.prices import JudgeBudget, shipped_prices
from evalbot.judges.base import JudgeCallError, JudgeRequest
from evalbot.judges.budget import BUDGET_MARK, tighter, worst_case_tokens
from evalbot.judges.factory import judge_from_environ
from tests.fakes.builders import Writer, case, eval_set, inv
from tests.fakes.fake_gemini import FakeGemini

VALID = '{"is_the_agent_response_valid": "valid"}'


def _ask_all(fake: FakeGemini, budget: JudgeBudget, requests: list[JudgeRequest],
             concurrency: int = 16) -> list[str]:
    stack, _ = judge_from_environ({"GOOGLE_API_KEY": "k", "GOOGLE_GEMINI_BASE_URL": fake.url},
                                  concurrency=concurrency)
    assert stack is not None
    stack.set_budget(budget)

    async def one(request: JudgeRequest) -> str:
        try:
            await stack.generate(request)
        except JudgeCallError as exc:
            return str(exc)
        return "answered"

    async def run() -> list[str]:
        return list(await asyncio.gather(*(one(r) for r in requests)))

    return asyncio.run(run())


@pytest.mark.parametrize("limit", [0, 1, 7])
def test_the_cap_stops_at_exactly_n_requests_however_many_are_in_flight(limit: int) -> None:
    with FakeGemini(latency=0.02) as fake:
        results = _ask_all(fake, JudgeBudget(requests=limit),
                           [JudgeRequest("gemini-2.5-flash", f"prompt {i}") for i in range(40)], concurrency=32)
        assert len(fake.requests) == limit
    assert results.count("answered") == limit
    refused = [r for r in results if r != "answered"]
    assert len(refused) == 40 - limit and all(r.startswith(f"{BUDGET_MARK} ({limit:,} request{'' if limit == 1 else 's'} for this run)")
                                              for r in refused)


def test_each_http_attempt_counts_a_retry_too() -> None:
    with FakeGemini() as fake:
        fake.fault(503)  # the first attempt fails, the retry is a second request
        asked = [JudgeRequest("gemini-2.5-flash", "p"), JudgeRequest("gemini-2.5-flash", "q")]
        results = _ask_all(fake, JudgeBudget(requests=2), asked, concurrency=1)
        assert len(fake.requests) == 2
    assert sorted(r.split(":")[0] for r in results) == ["answered", BUDGET_MARK + " (2 requests for this run)"]


def test_a_dollar_budget_is_never_exceeded_on_the_servers_own_count() -> None:
    price = shipped_prices().price("gemini-2.5-flash")
    assert price is not None
    config = {"max_output_tokens": 50}
    requests = [JudgeRequest("gemini-2.5-flash", "x" * 4000, config=config) for _ in range(30)]
    worst = price.cost(*worst_case_tokens(requests[0]))
    usd = worst * 10.5  # room for ten requests at their worst case; the real ones cost less
    with FakeGemini(latency=0.01) as fake:
        results = _ask_all(fake, JudgeBudget(usd=usd), requests, concurrency=32)
        spent = sum(price.cost(len(r.prompt) // 4 + 1, len("fake answer 0") // 4 + 1) for r in fake.requests)
        sent = len(fake.requests)
    assert 10 <= sent < 30 and spent <= usd
    assert results.count("answered") == sent
    assert all(BUDGET_MARK in r for r in results if r != "answered")


def test_an_unpriced_model_cannot_be_bounded_in_dollars() -> None:
    with FakeGemini() as fake:
        results = _ask_all(fake, JudgeBudget(usd=100.0), [JudgeRequest("my-tuned-judge", "p")])
        assert fake.requests == []
    assert "the price of judge model 'my-tuned-judge' is unknown" in results[0] and "prices" in results[0]


def test_flags_and_inputs_lower_the_policys_budget_never_raise_it() -> None:
    policy = JudgeBudget(requests=10, usd=1.0)
    assert tighter(policy, JudgeBudget(requests=100)) == policy
    assert tighter(policy, JudgeBudget(requests=3)) == JudgeBudget(requests=3, usd=1.0)
    assert tighter(None, JudgeBudget(usd=0.5)) == JudgeBudget(usd=0.5)
    assert tighter(None, None) is None
    shares = [JudgeBudget(requests=7, usd=1.0).share(i, 3) for i in (1, 2, 3)]
    assert sum(s.requests or 0 for s in shares) == 7 and sum(s.usd or 0 for s in shares) <= 1.0


@pytest.mark.parametrize(("value", "pointer"), [
    ({"requests": -1}, "/evalbot/judge_budget"), ({"requests": "5"}, "/evalbot/judge_budget"),
    ({"usd": float("inf")}, "/evalbot/judge_budget"), ({"dollars": 5}, "/evalbot/judge_budget"),
    ([5], "/evalbot/judge_budget"), ({"requests": 1.5}, "/evalbot/judge_budget"),
])
def test_an_invalid_budget_is_an_input_error(value: Any, pointer: str) -> None:
    with pytest.raises(InputError) as caught:
        policy_from_settings({"judge_budget": value}, source="evals/test_config.json")
    assert caught.value.pointer == pointer and "judge_budget" in str(caught.value)


def _project(write: Writer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, section: dict[str, Any]) -> None:
    cases = [case(f"c{i}", inv(f"q{i}", "reference")) for i in range(3)]
    write("evals/s.evalset.json", eval_set("s", *cases))
    write("evals/test_config.json", {"criteria": {"final_response_match_v2": {
        "threshold": 0.5, "judge_model_options": {"num_samples": 1}}}, "evalbot": section})
    write("runs/pr.json", {f"c{i}": [inv(f"q{i}", "an answer")] for i in range(3)})
    monkeypatch.chdir(tmp_path)


@pytest.mark.parametrize(("section", "flags"), [
    ({"judge_budget": {"requests": 1}}, []),
    ({}, ["--judge-budget-requests", "1"]),
    ({"judge_budget": {"requests": 1}}, ["--judge-budget-requests", "5"]),  # a flag never raises the policy's
])
def test_run_stops_at_the_budget_and_says_so(write: Writer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                             capsys: pytest.CaptureFixture[str], section: dict[str, Any],
                                             flags: list[str]) -> None:
    _project(write, tmp_path, monkeypatch, section)
    with FakeGemini(responder=lambda p, i, r: VALID) as fake:
        code = main(["run", "evals", "--actuals", "runs/pr.json", "--report", "out.json", "--jobs", "1", *flags],
                    env={"GOOGLE_API_KEY": "k", "GOOGLE_GEMINI_BASE_URL": fake.url})
        assert len(fake.requests) == 1
    err = capsys.readouterr().err
    assert code == 3, err
    assert "judge budget reached: 2 of 3 verdicts not evaluated" in err
    report = json.loads((tmp_path / "out.json").read_text())
    reasons = [v["reason"] for es in report["eval_sets"] for c in es["cases"] for m in c["metrics"].values()
               for v in m["per_invocation"] if v["status"] == "not_evaluated"]
    assert len(reasons) == 2 and all(BUDGET_MARK in r for r in reasons)


def test_compare_warns_under_judge_failures_warn(write: Writer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    _project(write, tmp_path, monkeypatch, {"judge_budget": {"requests": 2}, "judge_failures": "warn"})
    with FakeGemini(responder=lambda p, i, r: VALID) as fake:
        code = main(["compare", "evals", "--actuals", "runs/pr.json", "--baseline", "none.json",
                     "--comment", "c.md"], env={"GOOGLE_API_KEY": "k", "GOOGLE_GEMINI_BASE_URL": fake.url})
        assert len(fake.requests) == 2
    comment = (tmp_path / "c.md").read_text()
    assert code == 0, capsys.readouterr().err
    assert "judge budget reached: 1 of 3 verdicts not evaluated" in comment


def test_the_jobs_of_run_jobs_share_the_budget(write: Writer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    _project(write, tmp_path, monkeypatch, {"judge_budget": {"requests": 2}})
    with FakeGemini(responder=lambda p, i, r: VALID) as fake:
        code = main(["run", "evals", "--actuals", "runs/pr.json", "--jobs", "3"],
                    env={"GOOGLE_API_KEY": "k", "GOOGLE_GEMINI_BASE_URL": fake.url, "PATH": os.environ.get("PATH", ""),
                         "PYTHONPATH": os.environ.get("PYTHONPATH", "")})
        assert len(fake.requests) == 2  # 1 + 1 + 0: never the budget per job
    err = capsys.readouterr().err
    assert code == 3 and "judge budget reached: 1 of 3 verdicts not evaluated" in err, err
    assert "0 requests: part 3 of 3's share of the run's 2 requests" in err
