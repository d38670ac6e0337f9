"""Hypothesis strategies for hostile eval sets, actuals and configs, and one run of evalbot over them.

Shared by tests/test_fuzz_inputs.py (a few dozen examples per kind, in CI) and scripts/fuzz_campaign.py (thousands,
counting crashes).  A document is a valid one with one node replaced by a hostile value (JSON of any shape, text
with lone surrogates or markup, 250- to 100,000-deep nesting, 5,000-digit integers, NaN, 1e999) or a key added or
removed; the run must end with an exit code (0, 1 or 2) and printable, postable output — never an exception.
"""

from __future__ import annotations

import contextlib
import io
import json
import tempfile
from pathlib import Path
from typing import Any

from hypothesis import strategies as st

from evalbot.cli.commands import main

RAW: dict[str, str] = {
    "__RAW_DEEP__": "[" * 100_000 + "]" * 100_000,
    "__RAW_DEEP_OBJ__": '{"a":' * 250 + "1" + "}" * 250,
    "__RAW_DEEP_MID__": "[" * 300 + "]" * 300,
    "__RAW_BIGINT__": "9" * 5_000,
    "__RAW_NEG_BIGINT__": "-" + "1" * 4_400,
    "__RAW_NAN__": "NaN",
    "__RAW_INF__": "1e999",
    "__RAW_MINF__": "-Infinity",
}
TEXTS = ["", "\ud800", "a\udfff b", "ok \ud83d", "#1 @user GH-45 owner/repo#9", "</details>\n| a |", "x" * 300,
         "évé 日本", "{{ 7*7 }}", "<!-- evalbot id=default -->", "\x00\x1f", "EXACT", "ROUGE_1"]

leaves = st.one_of(
    st.none(), st.booleans(), st.integers(-(2**70), 2**70), st.floats(allow_nan=False, allow_infinity=False),
    st.sampled_from(TEXTS), st.text(max_size=12), st.sampled_from(sorted(RAW)),
)
values = st.recursive(
    leaves,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from(TEXTS) | st.text(max_size=8), inner,
                                                                max_size=3),
    max_leaves=8,
)


def _inv(user: str, response: str, calls: list[tuple[str, dict[str, Any]]]) -> dict[str, Any]:
    return {
        "invocation_id": "t1",
        "user_content": {"role": "user", "parts": [{"text": user}]},
        "final_response": {"role": "model", "parts": [{"text": response}]},
        "intermediate_data": {"tool_uses": [{"name": n, "args": a} for n, a in calls],
                              "intermediate_responses": [["sub", [{"text": "looking"}]]]},
    }


def _events(response: str, calls: list[tuple[str, dict[str, Any]]]) -> dict[str, Any]:
    return {
        "user_content": {"role": "user", "parts": [{"text": "q"}]},
        "final_response": {"role": "model", "parts": [{"text": response}]},
        "intermediate_data": {"invocation_events": [
            {"author": "agent", "content": {"role": "model", "parts": [{"function_call": {"name": n, "args": a}}]}}
            for n, a in calls
        ]},
    }


EVAL_SETS: list[Any] = [
    {"eval_set_id": "fz", "eval_cases": [
        {"eval_id": "c1", "conversation": [_inv("weather?", "sunny 20C", [("get_weather", {"city": "Paris"})])],
         "session_input": {"app_name": "a", "user_id": "u", "state": {"k": 1}}},
        {"eval_id": "c2", "conversation": [_inv("hi", "hello", [])],
         "rubrics": [{"rubric_id": "r", "rubric_content": {"text_property": "polite"}}]},
    ]},
    [{"query": "turn off", "expected_tool_use": [{"tool_name": "set", "tool_input": {"on": False}}],
      "expected_intermediate_agent_responses": [{"author": "sub", "text": "ok"}], "reference": "done"}],
    [{"name": "c1", "data": [{"query": "hi", "expected_tool_use": [], "reference": "hello"}],
      "initial_session": {"app_name": "a", "user_id": "u", "state": {}}}],
]
ACTUALS: list[Any] = [
    {"c1": [_events("sunny 20C", [("get_weather", {"city": "Paris"})])], "c2": [_events("hello", [])]},
    {"eval_set_id": "fz", "eval_case_results": [
        {"eval_id": "c1", "eval_metric_result_per_invocation": [
            {"actual_invocation": _events("sunny", [("get_weather", {"city": "Paris"})])}]},
        {"eval_id": "c2", "eval_metric_result_per_invocation": [{"actual_invocation": _events("hello", [])}]},
    ]},
]
CONFIGS: list[Any] = [
    {"criteria": {"tool_trajectory_avg_score": {"threshold": 1.0, "match_type": "IN_ORDER"},
                  "response_match_score": 0.5, "safety_v1": 0.8,
                  "final_response_match_v2": {"threshold": 0.5, "judge_model_options": {"num_samples": 1}}},
     "evalbot": {"tolerance": 0.1, "fail_on": "regression"}},
    {"criteria": {"tool_trajectory_avg_score": 1.0, "response_match_score": {"threshold": 0.8,
                                                                            "description": "d"}}},
]


@st.composite
def mutated(draw: st.DrawFn, bases: list[Any]) -> str:
    """One base document with one node replaced, a key added or removed, as JSON text (raw markers spliced in)."""
    doc = json.loads(json.dumps(draw(st.sampled_from(bases))))
    holder: Any = None
    key: Any = None
    node = doc
    while isinstance(node, dict | list) and node and draw(st.booleans()):
        keys = list(node) if isinstance(node, dict) else list(range(len(node)))
        holder, key = node, draw(st.sampled_from(keys))
        node = node[key]
    action = draw(st.sampled_from(["replace", "add", "delete"]))
    value = draw(values)
    if holder is None:
        doc = value if action == "replace" else doc
    elif action == "delete" and isinstance(holder, dict):
        del holder[key]
    elif action == "add" and isinstance(holder, dict):
        holder[draw(st.sampled_from(TEXTS) | st.text(max_size=6))] = value
    elif action == "add" and isinstance(holder, list):
        holder.append(value)
    else:
        holder[key] = value
    text = json.dumps(doc)  # ensure_ascii: lone surrogates become \ud800 escapes, as a hostile file would hold
    for marker, raw in RAW.items():
        text = text.replace(f'"{marker}"', raw)
    return text


eval_set_texts = mutated(EVAL_SETS)
actuals_texts = mutated(ACTUALS)
config_texts = mutated(CONFIGS)


def run_once(eval_set: str | None = None, actuals: str | None = None, config: str | None = None) -> int:
    """Run ``evalbot compare`` then ``evalbot run`` on the good example plus the given documents (None: a valid one).

    Returns the exit code; raises whatever evalbot raised (a crash).  Asserts that every output is valid UTF-8.
    """
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "good").mkdir()
        (root / "good" / "good.evalset.json").write_text(
            json.dumps({"eval_set_id": "good", "eval_cases": [{"eval_id": "g1", "conversation": [
                _inv("hi", "hello", [])]}]}), encoding="utf-8")
        (root / "fz").mkdir()
        (root / "fz" / "fz.evalset.json").write_text(eval_set or json.dumps(EVAL_SETS[0]), encoding="utf-8")
        (root / "fz" / "test_config.json").write_text(config or json.dumps(CONFIGS[1]), encoding="utf-8")
        (root / "runs.json").write_text(json.dumps({"g1": [_events("hello", [])]}), encoding="utf-8")
        (root / "fz_runs.json").write_text(actuals or json.dumps(ACTUALS[0]), encoding="utf-8")
        common = [str(root / "good"), str(root / "fz"), "--actuals", str(root / "runs.json"),
                  "--actuals", str(root / "fz_runs.json")]
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main(["compare", *common, "--baseline", str(root / "none.json"), "--report",
                         str(root / "report.json"), "--comment", str(root / "comment.md")], env={})
            again = main(["run", *common], env={})
        out.getvalue().encode("utf-8")
        err.getvalue().encode("utf-8")
        assert code in (0, 1, 2, 3) and again in (0, 1, 2, 3), (code, again)
        if (root / "report.json").exists():
            json.loads((root / "report.json").read_text(encoding="utf-8"))
        return code
