"""Issue 37 rows 5 and 6 end to end: criteria whose threshold is a maximum (``latency``'s seconds, ``failure``'s
rate; lower is better) are read as maxima by the yardstick and by the test of their mean.

Row 5: a PR raising ``latency`` from 2.0 to 60.0 s while its agent now takes 45 s passed ("raised thresholds ... not
blocking"); a higher maximum loosens, so it blocks unless accepted, and a lower one tightens (shown, not blocking).
Row 6: the agent's failure rate rising from 0 % to 25 % on every case (each under the 0.5 maximum) passed with "▲ mean
rose significantly" shown as good news; a rise is the regression there.

The workspace holds one eval set of 8 cases of 4 invocations each, scored on ``latency`` and ``failure`` from recorded
Vertex rows (``latency_in_seconds``, ``failure``); main's baseline is made by the Action's mode baseline on main's
rows and published at the base commit only.
"""

from __future__ import annotations

import json
import shutil

from tests.e2e.conftest import Action, measure_baseline, pr_comment

CASES = 8
STEPS = 4
CONFIG = "evals/test_config.json"


def rows(*, seconds: float, failures: int) -> str:
    """Vertex rows of every case's invocations: ``failures`` of each case's 4 invocations failed."""
    out = [json.dumps({"eval_id": f"op{i}", "prompt": f"task {i} step {k}", "response": "done",
                       "latency_in_seconds": seconds, "failure": k < failures})
           for i in range(CASES) for k in range(STEPS)]
    return "\n".join(out) + "\n"


def ops_workspace(action: Action, criteria: dict[str, float]) -> None:
    """Replace the workspace's eval sets with the ``ops`` eval set and ``criteria``, and write the recorded runs:
    main's (1.5 s, no failure), a slow agent's (45 s) and a failing one's (1 of 4 invocations of every case)."""
    shutil.rmtree(action.workspace / "evals")
    (action.workspace / "evals").mkdir()
    cases = [{"eval_id": f"op{i}", "conversation": [
        {"invocation_id": f"op{i}-{k}", "user_content": {"role": "user", "parts": [{"text": f"task {i} step {k}"}]},
         "final_response": {"role": "model", "parts": [{"text": "done"}]}} for k in range(STEPS)]}
        for i in range(CASES)]
    (action.workspace / "evals" / "ops.evalset.json").write_text(
        json.dumps({"eval_set_id": "ops", "eval_cases": cases}), encoding="utf-8")
    set_criteria(action, criteria)
    for name, text in (("main", rows(seconds=1.5, failures=0)), ("slow", rows(seconds=45.0, failures=0)),
                       ("failing", rows(seconds=1.5, failures=1))):
        (action.workspace / "actuals" / f"{name}.jsonl").write_text(text, encoding="utf-8")


def set_criteria(action: Action, criteria: dict[str, float]) -> None:
    (action.workspace / CONFIG).write_text(json.dumps({"criteria": criteria}), encoding="utf-8")


def test_raising_a_maximum_loosens_and_blocks(action: Action) -> None:
    """Row 5: latency 2.0 → 60.0 s with the agent at 45 s is a loosened threshold, named with the cases main's
    maximum fails; before, "not blocking: raised thresholds"."""
    ops_workspace(action, {"latency": 2.0, "failure": 0.5})
    measure_baseline(action, "actuals/main.jsonl")
    set_criteria(action, {"latency": 60.0, "failure": 0.5})
    code, headline, body = pr_comment(action, "actuals/slow.jsonl")
    assert code == 1, body
    assert headline.startswith("### ❌ evalbot: blocked: ⚠️ 1 yardstick change not accepted (ops / latency: "
                               "threshold 2.000 → 60.000 (a maximum: raising it loosens))"), headline
    row = next(line for line in body.splitlines() if line.startswith("| ops / latency |"))
    assert "over main's maximum 2.000: regressed: op0 45.000" in row, row
    assert "not blocking" not in headline


def test_lowering_a_maximum_tightens_and_does_not_block(action: Action) -> None:
    """The control: latency 2.0 → 1.8 s (the agent at 1.5 s, as on main) is shown as a tightened threshold."""
    ops_workspace(action, {"latency": 2.0, "failure": 0.5})
    measure_baseline(action, "actuals/main.jsonl")
    set_criteria(action, {"latency": 1.8, "failure": 0.5})
    code, headline, body = pr_comment(action, "actuals/main.jsonl")
    assert code == 0, body
    assert headline == ("### ⚠️ evalbot: no regressions · ⚠️ 1 yardstick change (ops / latency: threshold 2.000 → "
                        "1.800 (a maximum: lowering it tightens)) (not blocking: tightened thresholds and moved files "
                        "only)"), headline


def test_a_rising_failure_rate_is_a_regression(action: Action) -> None:
    """Row 6: every case's failure rate 0 → 0.25 (each under the 0.5 maximum): the row's mean rose significantly,
    which on a lower-is-better criterion is the regression; before, exit 0 with "▲ mean rose significantly" as
    good news."""
    ops_workspace(action, {"latency": 2.0, "failure": 0.5})
    measure_baseline(action, "actuals/main.jsonl")
    code, headline, body = pr_comment(action, "actuals/failing.jsonl")
    assert code == 1, body
    assert headline.startswith("### ❌ evalbot: blocked"), headline
    row = next(line for line in body.splitlines() if line.startswith("| failure |"))
    assert "▲ +0.250" in row and "mean rose significantly, lower is better (p = 0.008, n = 8)" in row, row
    assert "ops: failure mean +0.250" in body, body


def test_a_falling_failure_rate_is_an_improvement(action: Action) -> None:
    """The control, the other way: main failed 1 of 4 invocations of every case, this run none: an improvement."""
    ops_workspace(action, {"latency": 2.0, "failure": 0.5})
    (action.workspace / "actuals" / "main.jsonl").write_text(rows(seconds=1.5, failures=1), encoding="utf-8")
    measure_baseline(action, "actuals/main.jsonl")
    (action.workspace / "actuals" / "main.jsonl").write_text(rows(seconds=1.5, failures=0), encoding="utf-8")
    code, headline, body = pr_comment(action, "actuals/main.jsonl")
    assert code == 0, body
    assert headline == "### ✅ evalbot: no regressions", headline
    row = next(line for line in body.splitlines() if line.startswith("| failure |"))
    assert "▼ −0.250" in row and "mean fell significantly, lower is better (p = 0.008, n = 8)" in row, row
