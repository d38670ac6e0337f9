"""Issue 37 row 9 end to end: a budget holds on the cases measured on main. A PR whose recorded runs lose
``usage_metadata`` on 11 of 12 cases while its tokens tripled passed (the token budget tested the one case left:
n = 1, ``✅ within budget``); now the budget is "not measured" (exit 3) naming how many cases and which.

The workspace holds one eval set of 12 cases; the base commit's policy has ``budgets: {"tokens": "+20%"}``; main's
baseline is made by the Action's mode baseline on main's recorded runs and published at the base commit only.
"""

from __future__ import annotations

import json
import shutil
from typing import Any

from tests.e2e.conftest import BASE_SHA, CONFIG, Action, measure_baseline, pr_comment
from tests.fakes.builders import case, eval_set, inv

N = 12


def recorded(scale: float, *, stripped: int = 0) -> dict[str, list[dict[str, Any]]]:
    """Each case's run with ADK events carrying ``usage_metadata`` (``scale`` × 1000 tokens, varying by case); the
    first ``stripped`` cases' events without it."""
    out = {}
    for i in range(N):
        total = 1000 * (1 + i % 5) * scale
        event_: dict[str, Any] = {"author": "agent", "content": {"role": "model", "parts": [{"text": "ok"}]}}
        if i >= stripped:
            event_["usage_metadata"] = {"prompt_token_count": int(total * 0.8),
                                        "candidates_token_count": int(total * 0.2)}
        out[f"c{i}"] = [inv("q", "ok", None, intermediate_data={"invocation_events": [event_]})]
    return out


def budget_workspace(action: Action) -> None:
    shutil.rmtree(action.workspace / "evals")
    (action.workspace / "evals").mkdir()
    (action.workspace / "evals" / "shop.evalset.json").write_text(
        json.dumps(eval_set("shop", *(case(f"c{i}", inv("q", "ok")) for i in range(N)))), encoding="utf-8")
    config = {"criteria": {"response_match_score": 0.5}, "evalbot": {"budgets": {"tokens": "+20%"}}}
    (action.workspace / CONFIG).write_text(json.dumps(config), encoding="utf-8")
    action.github.put_file(CONFIG, json.dumps(config), ref=BASE_SHA)
    for name, runs in (("main", recorded(1.0)), ("stripped", recorded(3.0, stripped=N - 1)),
                       ("same", recorded(1.05)), ("tripled", recorded(3.0))):
        (action.workspace / "actuals" / f"{name}.json").write_text(json.dumps(runs), encoding="utf-8")
    measure_baseline(action, "actuals/main.json")


def test_token_counts_stripped_from_11_of_12_runs_leave_the_budget_not_measured(action: Action) -> None:
    budget_workspace(action)
    code, headline, body = pr_comment(action, "actuals/stripped.json")
    assert code == 3, body
    assert headline == "### ⛔ evalbot: could not measure, not passing: budget tokens +20% not measured on shop", \
        headline
    why = "this run recorded no tokens on 11 of the 12 case(s) main measured (c0, c1, c2, c3, c4 and 6 more)"
    alert = next(line for line in body.splitlines() if "budget tokens +20% not measured on shop: " in line)
    assert why in alert, alert
    row = next(line for line in body.splitlines() if line.startswith("| shop | tokens |"))
    assert "⚠️ not measured: " + why in row and "within budget" not in row, row


def test_controls_every_case_measured_within_and_over_budget(action: Action) -> None:
    """Every case measured on both sides: +5% passes, tripled tokens block (as before)."""
    budget_workspace(action)
    code, headline, body = pr_comment(action, "actuals/same.json")
    assert (code, headline) == (0, "### ✅ evalbot: no regressions"), body
    assert "✅ within budget" in next(line for line in body.splitlines() if line.startswith("| shop | tokens |"))
    code, headline, body = pr_comment(action, "actuals/tripled.json")
    assert code == 1, body
    assert headline.startswith("### ❌ evalbot: blocked: ⛔ tokens +200% over the +20% budget"), headline
