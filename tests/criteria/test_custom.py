"""Custom metrics (criteria.custom): the user's functions, Vertex's one-argument contract and ADK's four-argument one.

Each test writes a small repository (a ``.git`` folder, a metrics module, an eval set, its test_config.json and the
agent's actual runs) into a temporary directory and evaluates it through evalbot's public entry point.  The ADK
contract tests need google-adk (the extra ``evalbot[adk]``; .ci/run runs tests/criteria in such a venv) and skip
with the reason otherwise; the missing-google-adk test runs only where it is missing.
"""

from __future__ import annotations

import importlib.util
import json
import os
import sys
import textwrap
import threading
import time
from collections.abc import Iterator
from itertools import count
from pathlib import Path
from typing import Any

import pytest

from evalbot.compare.baseline import build_baseline
from evalbot.compare.delta import compare
from evalbot.compare.gate import GatePolicy
from evalbot.criteria.base import BuildContext
from evalbot.errors import install_hint
from evalbot.pipeline import evaluate
from evalbot.redact import forget_secrets, register_secret
from evalbot.results import CUSTOM_NOT_RUN, CaseResult, Report

HAVE_ADK = importlib.util.find_spec("google.adk") is not None
needs_adk = pytest.mark.skipif(not HAVE_ADK, reason="google-adk (evalbot[adk]) is not installed")
_ids = count()


def _invocation(inv_id: str, user: str, text: str, tools: list[str]) -> dict[str, Any]:
    return {
        "invocation_id": inv_id,
        "user_content": {"role": "user", "parts": [{"text": user}]},
        "final_response": {"role": "model", "parts": [{"text": text}]},
        "intermediate_data": {"tool_uses": [{"name": t, "args": {"q": user}} for t in tools]},
    }


EXPECTED = {
    "two_turns": [_invocation("a1", "find order 7", "order 7 shipped", ["get_order"]),
                  _invocation("a2", "refund it", "refund started", ["get_order", "create_refund"])],
    "one_turn": [_invocation("b1", "hello", "hi there", [])],
}
ACTUAL = {
    "two_turns": [_invocation("a1", "find order 7", "order 7 shipped", ["get_order"]),
                  _invocation("a2", "refund it", "refund started", ["create_refund"])],
    "one_turn": [_invocation("b1", "hello", "hi there", [])],
}


@pytest.fixture
def clean_imports() -> Iterator[None]:
    """Forget the modules and import paths a test's repository added (a new process would not have them)."""
    modules, path = set(sys.modules), list(sys.path)
    yield
    for name in set(sys.modules) - modules:
        del sys.modules[name]
    sys.path[:] = path


class Repo:
    """A throwaway repository with a metrics package; ``run`` evaluates its eval set from ``cwd``."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.package = f"evalbot_user_metrics_{next(_ids)}"
        (root / ".git").mkdir(parents=True)
        (root / self.package).mkdir()
        (root / self.package / "__init__.py").write_text("", encoding="utf-8")
        (root / "evals").mkdir()
        cases = [{"eval_id": k, "conversation": v} for k, v in EXPECTED.items()]
        (root / "evals" / "shop.evalset.json").write_text(
            json.dumps({"eval_set_id": "shop", "eval_cases": cases}), encoding="utf-8"
        )
        (root / "actuals.json").write_text(json.dumps(ACTUAL), encoding="utf-8")

    def module(self, source: str, name: str = "metrics") -> None:
        (self.root / self.package / f"{name}.py").write_text(textwrap.dedent(source), encoding="utf-8")

    def config(self, criteria: dict[str, Any], custom: dict[str, Any]) -> None:
        (self.root / "evals" / "test_config.json").write_text(
            json.dumps({"criteria": criteria, "custom_metrics": custom}), encoding="utf-8"
        )

    def metric(self, function: str, threshold: Any = 0.5, **entry: Any) -> None:
        """Configure ``my_metric`` (plus a trajectory criterion that must keep working) backed by ``function``."""
        self.config(
            {"tool_trajectory_avg_score": 1.0, "my_metric": threshold},
            {"my_metric": {"code_config": {"name": f"{self.package}.metrics.{function}"}, **entry}},
        )

    def seen(self) -> list[Any]:
        """What the module recorded with ``record(...)`` (the module runs in a worker process: it writes a file)."""
        path = self.root / self.package / "seen.jsonl"
        return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()] if path.exists() else []

    def run(self, ctx: BuildContext | None = None) -> Report:
        return evaluate([str(self.root / "evals")], actuals=[str(self.root / "actuals.json")], ctx=ctx)


@pytest.fixture
def repo(tmp_path: Path, clean_imports: None, monkeypatch: pytest.MonkeyPatch) -> Repo:
    monkeypatch.chdir(tmp_path)  # not the repository: the module is found through the eval set's repository root
    return Repo(tmp_path / "repo")


def _cases(report: Report) -> dict[str, CaseResult]:
    assert not report.errors, report.errors
    (eval_set,) = report.eval_sets
    return {c.eval_id: c for c in eval_set.cases}


RECORD = """import json, pathlib
def record(value):
    with pathlib.Path(__file__).with_name("seen.jsonl").open("a", encoding="utf-8") as f:
        f.write(json.dumps(value) + "\\n")
"""


VERTEX_SEED = """
    def essential_tools_present(instance, required_tools=["get_order", "create_refund"]):
        trajectory = instance["predicted_trajectory"]
        tools_present = [tool_used["tool_name"] for tool_used in trajectory]
        if len(required_tools) == 0:
            return {"essential_tools_present": 1}
        score = 0
        for tool in required_tools:
            if tool in tools_present:
                score += 1
        return {"essential_tools_present": score / len(required_tools), "explanation": f"saw {tools_present}"}
"""


def test_vertex_contract_scores_each_invocation_and_the_case_mean(repo: Repo) -> None:
    """The seed's essential_tools_present: per invocation the fraction of required tools, case = mean, >= rule."""
    repo.module(VERTEX_SEED)
    repo.config(
        {"essential_tools_present": 0.5},
        {"essential_tools_present": {"code_config": {"name": f"{repo.package}.metrics.essential_tools_present"}}},
    )
    cases = _cases(repo.run())
    two = cases["two_turns"].metrics["essential_tools_present"]
    assert [p.score for p in two.per_invocation] == [0.5, 0.5]
    assert [p.status for p in two.per_invocation] == ["passed", "passed"]
    assert two.score == 0.5 and two.status == "passed" and two.threshold == 0.5
    assert two.per_invocation[0].details == {"explanation": "saw ['get_order']"}
    one = cases["one_turn"].metrics["essential_tools_present"]
    assert one.score == 0.0 and one.status == "failed" and cases["one_turn"].status == "failed"


def test_vertex_instance_has_vertex_columns(repo: Repo) -> None:
    """The instance carries prompt/response/reference and both trajectories in Vertex's shape."""
    repo.module(RECORD + """
def seen_by(instance):
    record(instance)
    return {"my_metric": 1.0}
""")
    repo.metric("seen_by")
    cases = _cases(repo.run())
    assert cases["two_turns"].metrics["my_metric"].status == "passed"
    seen = repo.seen()
    assert seen[1] == {
        "prompt": "refund it", "response": "refund started", "reference": "refund started",
        "predicted_trajectory": [{"tool_name": "create_refund", "tool_input": {"q": "refund it"}}],
        "reference_trajectory": [{"tool_name": "get_order", "tool_input": {"q": "refund it"}},
                                 {"tool_name": "create_refund", "tool_input": {"q": "refund it"}}],
    }


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ("raise RuntimeError('boom')", "raised RuntimeError: boom"),
        ("return 'high'", "returned str"),
        ("return {'other': 1}", "without the score"),
        ("return {'my_metric': float('nan')}", "not a finite number"),
        ("return {'my_metric': 1.5}", "outside the metric's range [0, 1]"),
        ("return {'my_metric': True}", "not a number"),
        ("return None", "returned NoneType"),
    ],
)
def test_a_misbehaving_function_is_an_error_on_the_case_not_a_crash(repo: Repo, body: str, message: str) -> None:
    """Raising, garbage, NaN, out-of-range: that metric is `error` with the message; the other criterion runs."""
    repo.module(f"def bad(instance):\n    {body}\n")
    repo.metric("bad")
    cases = _cases(repo.run())
    for case in cases.values():
        metric = case.metrics["my_metric"]
        assert metric.status == "error" and message in (metric.reason or ""), metric.reason
        assert case.status == "error"
        assert case.metrics["tool_trajectory_avg_score"].status in ("passed", "failed")


def test_a_hanging_function_times_out_and_is_not_called_again(repo: Repo) -> None:
    """A call past timeout_seconds is an error; later cases are skipped at once, naming the case that hung."""
    repo.module(RECORD + """
import time
def slow(instance):
    record(1)
    time.sleep(30)
    return {"my_metric": 1.0}
""")
    repo.metric("slow", timeout_seconds=0.2)
    started = time.monotonic()
    cases = _cases(repo.run())
    assert time.monotonic() - started < 10
    first, second = cases["two_turns"].metrics["my_metric"], cases["one_turn"].metrics["my_metric"]
    assert first.status == "error" and "did not return within 0.2 s" in (first.reason or "")
    assert second.status == "error" and "hung on case 'two_turns'" in (second.reason or "")
    assert repo.seen() == [1]
    assert cases["one_turn"].metrics["tool_trajectory_avg_score"].status == "passed"


def test_declared_range_is_validated_and_reported_on_the_unit_scale(repo: Repo) -> None:
    """metric_info's interval [1, 5]: a 4 passes a threshold of 3 and is reported as 0.75 with the raw value."""
    repo.module("def stars(instance):\n    return {'my_metric': 4 if instance['response'] == 'hi there' else 2}\n")
    interval = {"metric_value_info": {"interval": {"min_value": 1, "max_value": 5}}}
    repo.metric("stars", threshold=3, metric_info={"metric_name": "my_metric", **interval})
    report = repo.run()
    cases = _cases(report)
    one = cases["one_turn"].metrics["my_metric"]
    assert one.status == "passed" and one.score == 0.75 and one.threshold == 0.5
    assert one.details == {"value": 4.0, "range": "[1, 5]", "threshold_value": 3.0}
    assert cases["two_turns"].metrics["my_metric"].status == "failed"
    (info,) = [c for c in report.eval_sets[0].criteria if c.name == "my_metric"]
    assert info.threshold == 0.5


@pytest.mark.parametrize(
    ("source", "function", "message"),
    [
        ("def two(a, b):\n    return 1\n", "two", "has the wrong signature"),
        ("def kw(instance, *, must):\n    return 1\n", "kw", "has the wrong signature"),
        ("VALUE = 3\n", "VALUE", "is a int, not a function"),
        ("x = 1\n", "missing", "defines no 'missing'"),
        ("raise ImportError('no numpy here')\n", "f", "raised ImportError: no numpy here"),
        ("import time\ntime.sleep(30)\n", "f", "did not return within 0.3 s"),
    ],
)
def test_resolution_problems_are_config_errors_naming_file_pointer_and_function(
    repo: Repo, source: str, function: str, message: str
) -> None:
    """Wrong signature, non-callable, missing attribute, failing import: error naming where; other criteria run."""
    repo.module(source)
    repo.metric(function, timeout_seconds=0.3)
    report = repo.run()
    (info,) = [c for c in report.eval_sets[0].criteria if c.name == "my_metric"]
    assert info.error is not None and message in info.error, info.error
    assert f"{repo.package}.metrics" in info.error
    assert "test_config.json:/custom_metrics/my_metric" in info.error
    for case in _cases(report).values():
        assert case.metrics["my_metric"].status == "error"
        assert case.metrics["tool_trajectory_avg_score"].status in ("passed", "failed")


def test_missing_module_is_a_config_error(repo: Repo) -> None:
    """A module that is nowhere on the path: the error names the function path and where it looked."""
    repo.config({"my_metric": 0.5}, {"my_metric": {"code_config": {"name": "no_such_pkg_xyz.metrics.fn"}}})
    report = repo.run()
    (info,) = report.eval_sets[0].criteria[:1]
    assert info.error is not None
    assert "cannot import no_such_pkg_xyz.metrics.fn" in info.error and str(repo.root.resolve()) in info.error


@pytest.mark.parametrize(
    "entry",
    [{"code_config": {}}, {"code_config": {"name": "justname"}}, {"code_config": {"name": "a.b c.fn"}}, "pkg.fn",
     {"code_config": {"name": "a.fn"}, "timeout_seconds": 0}],
)
def test_malformed_definitions_are_config_errors(repo: Repo, entry: Any) -> None:
    repo.config({"my_metric": 0.5}, {"my_metric": entry})
    (info,) = repo.run().eval_sets[0].criteria[:1]
    assert info.error is not None and "custom_metrics" in info.error


def test_working_directory_is_searched_too(tmp_path: Path, clean_imports: None, monkeypatch: pytest.MonkeyPatch) -> None:
    """Without a .git above the eval set, the module is found from the working directory (the project root)."""
    repo = Repo(tmp_path / "proj")
    (repo.root / ".git").rmdir()
    monkeypatch.chdir(repo.root)
    repo.module("def ok(instance):\n    return {'my_metric': 1}\n")
    repo.metric("ok")
    assert _cases(repo.run())["one_turn"].metrics["my_metric"].status == "passed"


def test_a_refused_context_never_imports_and_is_not_evaluated(repo: Repo) -> None:
    """When the run must not execute repository code, the module is never imported and the metric is
    not_evaluated with the reason on every case (a notice for the eval set, not a configuration error)."""
    marker = repo.root / "imported"
    repo.module(f"open({str(marker)!r}, 'w').close()\ndef ok(instance):\n    return 1\n")
    repo.metric("ok")
    reason = CUSTOM_NOT_RUN + "schedule"
    report = repo.run(BuildContext(custom_code_refused=reason))
    assert not marker.exists()
    (info,) = [c for c in report.eval_sets[0].criteria if c.name == "my_metric"]
    assert info.error is None and info.notice == f"my_metric: {reason}"
    for case in _cases(report).values():
        assert case.metrics["my_metric"].status == "not_evaluated"
        assert case.metrics["my_metric"].reason == reason


def test_a_changed_function_is_a_changed_definition_not_a_regression(repo: Repo) -> None:
    """Same path, edited source: the fingerprint changes, so the comparison says changed_definition, and the edited
    code is a yardstick change (blocking by default, a warning with yardstick_changes: warn)."""
    repo.module("def m(instance):\n    return {'my_metric': 1.0}\n")
    repo.metric("m")
    before = repo.run()
    baseline = build_baseline(before, commit=None, created_at=None)
    for name in [n for n in sys.modules if n.startswith(repo.package)]:
        del sys.modules[name]  # the PR's run is a new process
    repo.module("def m(instance):\n    # stricter now\n    return {'my_metric': 0.0}\n")
    after = repo.run()
    fp = {c.name: c.fingerprint for c in before.eval_sets[0].criteria}
    fp_after = {c.name: c.fingerprint for c in after.eval_sets[0].criteria}
    assert fp["my_metric"] != fp_after["my_metric"]
    assert fp["tool_trajectory_avg_score"] == fp_after["tool_trajectory_avg_score"]
    comparison = compare(current=after, baseline=baseline, policy=GatePolicy())
    (eval_set,) = comparison.eval_sets
    one = next(c for c in eval_set.cases if c.eval_id == "one_turn")
    assert one.category == "changed_definition", one  # passed -> failed only on the edited metric
    assert [d.change for d in one.metrics if d.criterion == "my_metric"] == ["changed_definition"]
    assert [(y.kind, y.criterion, y.what) for y in comparison.yardstick] == [
        ("custom_metric", "my_metric", f"custom metric code changed ({repo.package}.metrics.m)")]
    assert comparison.gate.exit_code == 1, comparison.gate
    warned = compare(current=after, baseline=baseline, policy=GatePolicy(yardstick_changes="warn"))
    assert warned.gate.exit_code == 0, warned.gate


def test_unchanged_function_compares_normally(repo: Repo) -> None:
    """Same source in a new process: same fingerprint (a real score drop would be a regression)."""
    repo.module("def m(instance):\n    return {'my_metric': 1.0}\n")
    repo.metric("m")
    first = repo.run()
    for name in [n for n in sys.modules if n.startswith(repo.package)]:
        del sys.modules[name]
    second = repo.run()
    assert [c.fingerprint for c in first.eval_sets[0].criteria] == [c.fingerprint for c in second.eval_sets[0].criteria]


# -- ADK's contract ------------------------------------------------------------------------------------------------

ADK_METRIC = """
    import json, pathlib
    from google.adk.evaluation.eval_metrics import EvalStatus
    from google.adk.evaluation.evaluator import EvaluationResult, PerInvocationResult

    def {name}(eval_metric, actual_invocations, expected_invocations, conversation_scenario):
        with pathlib.Path(__file__).with_name("seen.jsonl").open("a", encoding="utf-8") as f:
            seen = [eval_metric.threshold, eval_metric.criterion.threshold, type(actual_invocations[0]).__module__]
            f.write(json.dumps(seen) + "\\n")
        threshold = eval_metric.criterion.threshold
        per = []
        for actual, expected in zip(actual_invocations, expected_invocations):
            got = [c.name for c in actual.intermediate_data.tool_uses]
            want = [c.name for c in expected.intermediate_data.tool_uses]
            score = 1.0 if set(want) <= set(got) else 0.0
            status = EvalStatus.PASSED if score >= threshold else EvalStatus.FAILED
            per.append(PerInvocationResult(actual_invocation=actual, score=score, eval_status=status))
        overall = sum(p.score for p in per) / len(per)
        return EvaluationResult(
            overall_score=overall,
            overall_eval_status=EvalStatus.PASSED if overall >= threshold else EvalStatus.FAILED,
            per_invocation_results=per,
        )
"""


@needs_adk
@pytest.mark.parametrize("asynchronous", [False, True], ids=["sync", "async"])
def test_adk_contract_reads_the_evaluation_result(repo: Repo, asynchronous: bool) -> None:
    """Called once per case with ADK's types and threshold=None; overall + per-invocation results read back."""
    source = textwrap.dedent(ADK_METRIC.format(name="covers"))
    if asynchronous:
        source = source.replace("def covers(", "async def covers(")
    repo.module(source)
    repo.metric("covers", threshold={"threshold": 0.6, "note": "kept"})
    cases = _cases(repo.run())
    two = cases["two_turns"].metrics["my_metric"]
    assert [p.score for p in two.per_invocation] == [1.0, 0.0]
    assert [p.status for p in two.per_invocation] == ["passed", "failed"]
    assert two.score == 0.5 and two.status == "failed" and two.threshold == 0.6
    assert cases["one_turn"].metrics["my_metric"].status == "passed"
    assert repo.seen()[0] == [None, 0.6, "google.adk.evaluation.eval_case"]


@needs_adk
def test_adk_status_is_the_functions_and_a_contradiction_is_noted(repo: Repo) -> None:
    """As in ADK the returned status counts; NOT_EVALUATED (ADK's default) with a score is said so."""
    repo.module("""
        from google.adk.evaluation.eval_metrics import EvalStatus
        from google.adk.evaluation.evaluator import EvaluationResult, PerInvocationResult
        def f(eval_metric, actual, expected, scenario):
            if len(actual) == 1:
                return EvaluationResult(overall_score=0.9)
            per = [PerInvocationResult(actual_invocation=a, score=0.1, eval_status=EvalStatus.PASSED) for a in actual]
            return EvaluationResult(overall_score=0.1, overall_eval_status=EvalStatus.PASSED, per_invocation_results=per)
    """)
    repo.metric("f")
    cases = _cases(repo.run())
    one = cases["one_turn"].metrics["my_metric"]
    assert one.status == "not_evaluated" and one.score == 0.9 and "NOT_EVALUATED" in (one.reason or "")
    two = cases["two_turns"].metrics["my_metric"]
    assert two.status == "passed" and "score 0.1 vs threshold 0.5" in (two.reason or "")


@needs_adk
@pytest.mark.parametrize(
    ("body", "message"),
    [
        ("raise ValueError('bad case')", "raised ValueError: bad case"),
        ("return 0.7", "returned float, not an EvaluationResult"),
        ("return EvaluationResult(overall_score=0.5, overall_eval_status=EvalStatus.PASSED)",
         "returned 0 per-invocation result(s)"),
        ("return EvaluationResult(overall_score=7.0, overall_eval_status=EvalStatus.PASSED)", "outside"),
    ],
)
def test_adk_function_misbehaving_is_an_error(repo: Repo, body: str, message: str) -> None:
    repo.module(
        "from google.adk.evaluation.eval_metrics import EvalStatus\n"
        "from google.adk.evaluation.evaluator import EvaluationResult\n"
        f"async def f(eval_metric, actual, expected, scenario):\n    {body}\n"
    )
    repo.metric("f")
    for case in _cases(repo.run()).values():
        metric = case.metrics["my_metric"]
        assert metric.status == "error" and message in (metric.reason or ""), metric.reason


@needs_adk
def test_adk_async_function_that_hangs_times_out(repo: Repo) -> None:
    repo.module("""
        import asyncio
        async def f(eval_metric, actual, expected, scenario):
            await asyncio.sleep(30)
    """)
    repo.metric("f", timeout_seconds=0.2)
    cases = _cases(repo.run())
    assert "did not return within 0.2 s" in (cases["two_turns"].metrics["my_metric"].reason or "")


@pytest.mark.skipif(HAVE_ADK, reason="checks the message shown when google-adk is missing; it is installed here")
def test_adk_contract_without_google_adk_says_how_to_install(repo: Repo) -> None:
    repo.module("def f(eval_metric, actual, expected, scenario):\n    return None\n")
    repo.metric("f")
    report = repo.run()
    (info,) = [c for c in report.eval_sets[0].criteria if c.name == "my_metric"]
    assert info.error is not None
    assert "google-adk is not installed" in info.error and install_hint("adk") in info.error
    assert f"{repo.package}.metrics.f" in info.error


def test_camel_case_metric_names_are_kept_verbatim(repo: Repo) -> None:
    """A custom metric's name is the user's own (matched to ``criteria`` as written); its entry's keys may be camelCase."""
    repo.module("def ok(instance):\n    return {'toolsUsed': 1}\n")
    repo.config(
        {"toolsUsed": 0.5},
        {"toolsUsed": {"codeConfig": {"name": f"{repo.package}.metrics.ok"}, "timeoutSeconds": 5}},
    )
    assert _cases(repo.run())["one_turn"].metrics["toolsUsed"].status == "passed"


# -- issue 24: the worker process ----------------------------------------------------------------------------------

def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def test_a_hang_kills_the_worker_and_leaves_no_thread(repo: Repo) -> None:
    """Past timeout_seconds the worker (and a process it started) is killed: no process, no thread is left."""
    repo.module(RECORD + """
import os, subprocess, sys, time
def slow(instance):
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    record([os.getpid(), child.pid])
    time.sleep(60)
""")
    repo.metric("slow", timeout_seconds=0.5)
    threads = set(threading.enumerate())  # other tests' threads may end meanwhile: only new ones count
    cases = _cases(repo.run())
    assert "did not return within 0.5 s" in (cases["two_turns"].metrics["my_metric"].reason or "")
    assert "hung on case 'two_turns'" in (cases["one_turn"].metrics["my_metric"].reason or "")
    ((worker, child),) = repo.seen()
    deadline = time.monotonic() + 5
    while (_alive(worker) or _alive(child)) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(worker) and not _alive(child)
    assert [t for t in threading.enumerate() if t not in threads] == []


def test_a_function_that_exits_the_process_is_an_error_on_its_cases(repo: Repo) -> None:
    repo.module("import os\ndef bye(instance):\n    os._exit(0)\n")
    repo.metric("bye")
    cases = _cases(repo.run())
    first, second = cases["two_turns"].metrics["my_metric"], cases["one_turn"].metrics["my_metric"]
    assert first.status == "error" and "process exited with code 0 before answering" in (first.reason or "")
    assert second.status == "error" and "failed on case 'two_turns'" in (second.reason or "")
    assert cases["one_turn"].metrics["tool_trajectory_avg_score"].status == "passed"


def test_a_crash_names_the_signal(repo: Repo) -> None:
    repo.module("import os, signal\ndef boom(instance):\n    os.kill(os.getpid(), signal.SIGSEGV)\n")
    repo.metric("boom")
    reason = _cases(repo.run())["two_turns"].metrics["my_metric"].reason or ""
    assert "killed by signal SIGSEGV" in reason, reason


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ("return object()", "returned object, which is not JSON data"),
        ("return {'my_metric': {1, 2}}", "returned dict, which is not JSON data"),
        ("import os\n    [os.write(fd, b'{\"value\": 1.0}\\nnot json at all\\n') for fd in range(3, 8) "
         "if fd != 0]\n    return {'my_metric': 1.0}", "not evalbot's protocol"),
        ("import os\n    [os.write(fd, b'[' * 100000 + b'\\n') for fd in range(3, 8) "
         "if fd != 0]\n    return {'my_metric': 1.0}", "not evalbot's protocol"),
    ],
    ids=["object", "set", "forged-protocol", "forged-deep-nesting"],
)
def test_garbage_is_an_error_never_a_score(repo: Repo, body: str, message: str) -> None:
    """Unserializable returns, and bytes written straight into the answer channel, are errors on the cases."""
    repo.module(f"def bad(instance):\n    {body}\n")
    repo.metric("bad")
    cases = _cases(repo.run())
    reasons = [c.metrics["my_metric"].reason or "" for c in cases.values()]
    assert all(c.metrics["my_metric"].status == "error" for c in cases.values())
    assert any(message in r for r in reasons), reasons


def test_prints_do_not_disturb_the_answers(repo: Repo) -> None:
    repo.module("print('hello from import')\ndef chatty(instance):\n    print('{\"value\": 0}')\n    return 1.0\n")
    repo.metric("chatty")
    assert {c.metrics["my_metric"].status for c in _cases(repo.run()).values()} == {"passed"}


def test_the_worker_gets_no_secrets(repo: Repo, monkeypatch: pytest.MonkeyPatch) -> None:
    secret = "s3cr3t-value-xyz"
    register_secret(secret)
    for name in ("GITHUB_TOKEN", "ACTIONS_RUNTIME_TOKEN", "ACTIONS_ID_TOKEN_REQUEST_URL", "INPUT_JUDGE-API-KEY",
                 "GOOGLE_API_KEY", "OPENAI_API_KEY", "AWS_SECRET_ACCESS_KEY", "DB_PASSWORD"):
        monkeypatch.setenv(name, "x-" + name.lower())
    monkeypatch.setenv("INNOCENT_LOOKING", secret)
    monkeypatch.setenv("HARMLESS_SETTING", "kept")
    try:
        repo.module(RECORD + "import os\ndef env(instance):\n    record(sorted(os.environ))\n    return 1.0\n")
        repo.metric("env")
        _cases(repo.run())
    finally:
        forget_secrets()
    seen = set(repo.seen()[0])
    assert "HARMLESS_SETTING" in seen and "PATH" in seen
    assert not seen & {"GITHUB_TOKEN", "ACTIONS_RUNTIME_TOKEN", "ACTIONS_ID_TOKEN_REQUEST_URL", "INPUT_JUDGE-API-KEY",
                       "GOOGLE_API_KEY", "OPENAI_API_KEY", "AWS_SECRET_ACCESS_KEY", "DB_PASSWORD", "INNOCENT_LOOKING"}


def test_monkeypatching_evalbot_in_the_module_does_not_reach_the_gate(repo: Repo) -> None:
    """The module rewrites evalbot's verdict functions on import and scores 0: the gate's copy is untouched."""
    repo.module("""
import evalbot.results
evalbot.results.case_status = lambda statuses: "passed"
evalbot.results.threshold_status = lambda value, threshold: "passed"
def zero(instance):
    return 0.0
""")
    repo.metric("zero")
    cases = _cases(repo.run())
    assert {c.metrics["my_metric"].status for c in cases.values()} == {"failed"}
    assert {c.status for c in cases.values()} == {"failed"}
    assert not any(name.startswith(repo.package) for name in sys.modules)  # never imported here


# -- one worker per function and run, shared by its eval sets -------------------------------------------------------

def _second_eval_set(repo: Repo) -> None:
    shop = json.loads((repo.root / "evals" / "shop.evalset.json").read_text(encoding="utf-8"))
    (repo.root / "evals" / "shop2.evalset.json").write_text(json.dumps({**shop, "eval_set_id": "shop2"}),
                                                             encoding="utf-8")


def _all_cases(report: Report) -> dict[str, dict[str, CaseResult]]:
    assert not report.errors, report.errors
    return {es.eval_set_id: {c.eval_id: c for c in es.cases} for es in report.eval_sets}


def test_a_run_imports_a_function_once_for_all_its_eval_sets_and_stops_it_at_the_end(repo: Repo) -> None:
    """Two eval sets naming the same function: one worker imports it and answers both, then is stopped."""
    repo.module(RECORD + "import os\nrecord(['import', os.getpid()])\n"
                "def pid(instance):\n    record(['call', os.getpid()])\n    return 1.0\n")
    repo.metric("pid")
    _second_eval_set(repo)
    sets = _all_cases(repo.run())
    assert sorted(sets) == ["shop", "shop2"]
    assert {c.metrics["my_metric"].status for cases in sets.values() for c in cases.values()} == {"passed"}
    seen = repo.seen()
    imports = [pid for what, pid in seen if what == "import"]
    calls = [pid for what, pid in seen if what == "call"]
    assert len(imports) == 1 and len(calls) == 6 and set(calls) == set(imports)  # 3 invocations per eval set
    assert imports[0] != os.getpid()  # still out of process
    deadline = time.monotonic() + 5
    while _alive(imports[0]) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(imports[0])


def test_a_worker_lost_in_one_eval_set_is_replaced_for_the_other(repo: Repo) -> None:
    """The shared worker exits on its first call: that eval set's cases are errors, the other eval set gets a new
    worker and is scored (one eval set's failure never skips the metric in the others)."""
    repo.module(RECORD + """import os, pathlib
def once(instance):
    marker = pathlib.Path(__file__).with_name("crashed")
    if not marker.exists():
        marker.write_text("x")
        os._exit(0)
    record(os.getpid())
    return 1.0
""")
    repo.metric("once")
    _second_eval_set(repo)
    sets = _all_cases(repo.run())
    statuses = {name: {c.metrics["my_metric"].status for c in cases.values()} for name, cases in sets.items()}
    assert sorted(sorted(s) for s in statuses.values()) == [["error"], ["passed"]], statuses
    (lost,) = [cases for name, cases in sets.items() if statuses[name] == {"error"}]
    reasons = sorted(c.metrics["my_metric"].reason or "" for c in lost.values())
    assert any("process exited with code 0 before answering" in r for r in reasons), reasons
    assert any("failed on case 'two_turns'" in r or "failed on case 'one_turn'" in r for r in reasons), reasons
    assert len(repo.seen()) == 3  # the other eval set's three invocations, by the new worker


def test_a_baseline_from_before_the_code_was_read_from_files_is_not_comparable(repo: Repo) -> None:
    """A baseline written when the worker reported a hash of the function's text (no ``custom_code``, another
    fingerprint): the unchanged metric cannot be told unchanged, so it is a yardstick change that says so and blocks."""
    repo.module("def m(instance):\n    return {'my_metric': 1.0}\n")
    repo.metric("m")
    report = repo.run()
    baseline = build_baseline(report, commit=None, created_at=None)
    entry = baseline.eval_sets["shop"].criteria["my_metric"]
    assert entry.custom_code is not None and len(entry.custom_code) == 16
    old = entry.model_copy(update={"custom_code": None, "fingerprint": "0123456789abcdef"})
    baseline.eval_sets["shop"].criteria["my_metric"] = old
    comparison = compare(current=report, baseline=baseline, policy=GatePolicy())
    assert [(y.kind, y.what) for y in comparison.yardstick] == [
        ("custom_metric", f"custom metric code not comparable ({repo.package}.metrics.m): main's baseline was written "
                          "before evalbot read a metric's code from its files; refresh it on main")]
    assert comparison.gate.exit_code == 1


# -- the worker runs exactly the repository files the gate hashed -------------------------------------------------

def _code(report: Report) -> str | None:
    (eval_set,) = report.eval_sets
    return next(c.custom_code for c in eval_set.criteria if c.name == "my_metric")


def _reasons(report: Report) -> str:
    return report.model_dump_json()


def test_committed_bytecode_beside_the_module_never_runs(repo: Repo) -> None:
    """A pull request commits ``__pycache__/metrics.<tag>.pyc`` (an unchecked hash-based pyc, which Python loads
    without looking at the source) built from other code: the worker runs the source the gate hashed."""
    import py_compile

    repo.module("def m(instance):\n    return {'my_metric': 1.0}\n")
    forged = repo.root / "forged.py"
    forged.write_text("def m(instance):\n    return {'my_metric': 0.0}\n", encoding="utf-8")
    cache = repo.root / repo.package / "__pycache__" / f"metrics.{sys.implementation.cache_tag}.pyc"
    cache.parent.mkdir()
    py_compile.compile(str(forged), cfile=str(cache), invalidation_mode=py_compile.PycInvalidationMode.UNCHECKED_HASH)
    repo.metric("m")
    cases = _cases(repo.run())
    assert {c.metrics["my_metric"].score for c in cases.values()} == {1.0}


DATA_METRIC = """import json, pathlib
def m(instance):
    weight = json.loads(pathlib.Path(__file__).with_name("weights.json").read_text())["w"]
    return {"my_metric": weight}
"""


def test_a_data_file_is_read_only_when_declared_and_then_is_part_of_the_code(repo: Repo) -> None:
    """Undeclared, the read is refused (an error naming the file and data_files); declared in ``data_files``, the
    metric scores with it, and a changed data file changes the metric's code identity (a yardstick change)."""
    repo.module(DATA_METRIC)
    weights = repo.root / repo.package / "weights.json"
    weights.write_text('{"w": 0.75}', encoding="utf-8")
    repo.metric("m")
    refused = repo.run()
    metric = next(iter(_cases(refused).values())).metrics["my_metric"]
    assert metric.status == "error" and "weights.json" in (metric.reason or "")
    assert "data_files" in (metric.reason or "") and "code identity" in (metric.reason or ""), metric.reason
    repo.metric("m", data_files=[f"{repo.package}/*.json"])
    declared = repo.run()
    assert {c.metrics["my_metric"].score for c in _cases(declared).values()} == {0.75}
    assert _code(declared) != _code(refused)
    weights.write_text('{"w": 1.0}', encoding="utf-8")
    changed = repo.run()
    assert {c.metrics["my_metric"].score for c in _cases(changed).values()} == {1.0}
    assert _code(changed) != _code(declared)


@pytest.mark.parametrize("body", [
    "import importlib\n    importlib.import_module('.'.join([__name__.rpartition('.')[0], 'hel' + 'per']))",
    "import sys, pathlib\n    sys.path.append(str(pathlib.Path(__file__).with_name('vendor')))\n    import vendored",
    "from . import sourceless",
    "from . import _bisect",
], ids=["computed name", "sys.path edit", "bytecode without source", "extension module"])
def test_repository_code_the_gate_could_not_hash_is_refused(repo: Repo, body: str) -> None:
    """A helper imported by a computed name, from a folder the module adds to sys.path, as bytecode without a source
    or as an extension module (here a copy of the standard library's _bisect): none of them was hashed, so the
    worker refuses to load it and the metric is an error saying why, never a score."""
    import py_compile
    import shutil

    repo.module(f"def m(instance):\n    {body}\n    return {{'my_metric': 1.0}}\n")
    (repo.root / repo.package / "helper.py").write_text("X = 1\n", encoding="utf-8")
    (repo.root / repo.package / "vendor").mkdir()
    (repo.root / repo.package / "vendor" / "vendored.py").write_text("X = 1\n", encoding="utf-8")
    source = repo.root / "sourceless_src.py"
    source.write_text("X = 1\n", encoding="utf-8")
    py_compile.compile(str(source), cfile=str(repo.root / repo.package / "sourceless.pyc"))
    bisect_so = Path(importlib.util.find_spec("_bisect").origin or "")  # type: ignore[union-attr]
    shutil.copy(bisect_so, repo.root / repo.package / bisect_so.name)
    repo.metric("m")
    for case in _cases(repo.run()).values():
        metric = case.metrics["my_metric"]
        assert metric.status == "error" and "code identity" in (metric.reason or ""), metric.reason


def test_a_declared_data_file_may_not_leave_the_repository(repo: Repo) -> None:
    repo.module(DATA_METRIC)
    for bad in (["../outside.json"], ["/etc/passwd"], "weights.json", [""], [3]):
        repo.metric("m", data_files=bad)
        report = repo.run()
        assert "data_files" in _reasons(report), bad
        assert all(c.metrics["my_metric"].status == "error" or c.status == "error"
                   for c in report.eval_sets[0].cases) or report.eval_sets[0].errors, bad


def test_a_module_imported_by_a_computed_name_runs_once_listed_and_is_then_part_of_the_code(repo: Repo) -> None:
    """What ``ast`` cannot follow, the entry lists in ``data_files``: the import works, and editing it changes the
    metric's code identity."""
    repo.module("import importlib\ndef m(instance):\n"
                "    helper = importlib.import_module(__name__.rpartition('.')[0] + '.hel' + 'per')\n"
                "    return {'my_metric': helper.X}\n")
    helper = repo.root / repo.package / "helper.py"
    helper.write_text("X = 0.75\n", encoding="utf-8")
    repo.metric("m", data_files=[f"{repo.package}/helper.py"])
    before = repo.run()
    assert {c.metrics["my_metric"].score for c in _cases(before).values()} == {0.75}
    helper.write_text("X = 1.0\n", encoding="utf-8")
    after = repo.run()
    assert {c.metrics["my_metric"].score for c in _cases(after).values()} == {1.0}
    assert _code(after) != _code(before)
