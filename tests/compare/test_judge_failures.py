"""Judge failures decide nothing silently: every failure mode of the judge (through the real google-genai client and
the fake Gemini server, and through the real openai client and the fake Chat Completions server) is counted, named in the comment's headline, and blocks (exit 3) unless judge_failures is
warn; missing credentials warn. The other half, through entrypoint.py, is in tests/e2e/test_judge_outage.py."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from evalbot.compare.baseline import build_baseline
from evalbot.compare.delta import compare
from evalbot.compare.gate import GatePolicy
from evalbot.compare.model import Comparison
from evalbot.criteria.base import BuildContext
from evalbot.errors import RetryPolicy
from evalbot.judges.factory import MISSING_CREDENTIALS, build_stack
from evalbot.pipeline import evaluate
from evalbot.render.comment import comment_marker, render_comment
from evalbot.results import Report
from tests.fakes.fake_gemini import FakeError, FakeGemini, Recorded, Scripted
from tests.fakes.judged import BACKENDS, fake_server, judge_backend

DATA = Path(__file__).parents[1] / "e2e" / "data"
VALID = '{"reasoning": "same facts", "is_the_agent_response_valid": "valid"}'
FAST = RetryPolicy(attempts=3, base_delay=0.001, max_delay=0.005, max_retry_after=0.005)
MARK = comment_marker()


def scored(fake: FakeGemini | None, *, timeout: float = 5.0, reason: str | None = None,
           backend: str = "gemini") -> Report:
    """The e2e eval set (3 cases, final_response_match_v2 with 1 sample) scored with a ``backend`` judge on
    ``fake``."""
    stack = None
    if fake is not None:
        stack = build_stack(judge_backend(backend, fake, timeout=timeout), retry=FAST)
    ctx = BuildContext(judge=stack, judge_unavailable_reason=reason)
    return evaluate([str(DATA / "evals")], actuals=[str(DATA / "actuals" / "good.json")], ctx=ctx)


@pytest.fixture(scope="module")
def main_baseline() -> object:
    with FakeGemini(responder=lambda prompt, index, request: VALID) as fake:
        report = scored(fake)
    assert report.totals.passed == report.totals.cases == 3
    return build_baseline(report, commit="b" * 40, created_at="2026-01-01T00:00:00+00:00")


def raising(status: int) -> Callable[[str, int, Recorded], str]:
    def respond(prompt: str, index: int, request: Recorded) -> str:
        raise FakeError(status, f"injected {status}")
    return respond


def set_up(mode: str, fake: FakeGemini) -> tuple[str, float]:
    """Make ``fake`` fail every call in ``mode``; returns the reason words expected and the client timeout."""
    if mode in ("401", "429", "503"):
        fake.responder = raising(int(mode))
        return f"HTTP {mode}", 5.0
    if mode == "garbled":
        fake.malformed(count=1000)
        return "malformed answer", 5.0
    if mode == "empty_candidates":
        fake.script(*[Scripted(texts=[])] * 1000)
        return "no recognisable verdict", 5.0
    if mode == "no_verdict":
        fake.responder = lambda prompt, index, request: "The answer looks fine to me."
        return "no recognisable verdict", 5.0
    assert mode == "timeout"
    fake.script(*[Scripted(delay=1.0)] * 1000)
    return "timed out", 0.2


def headline(comparison: Comparison) -> str:
    body = render_comment(comparison, marker=MARK)
    return "\n".join(body.splitlines()[1:4])


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("mode", ["401", "429", "503", "garbled", "empty_candidates", "no_verdict", "timeout"])
def test_each_judge_failure_mode_is_named_and_blocks_or_warns(mode: str, backend: str, main_baseline: object) -> None:
    """block: verdict error, exit 3, the headline names the count and the cause; warn: exit 0 with that warning,
    and never a plain "no regressions"."""
    with fake_server(backend) as fake:
        words, timeout = set_up(mode, fake)
        report = scored(fake, timeout=timeout, backend=backend)
    judged = [c.metrics["final_response_match_v2"].status for c in report.eval_sets[0].cases]
    assert judged == ["not_evaluated"] * 3
    blocked = compare(current=report, baseline=main_baseline, policy=GatePolicy())  # type: ignore[arg-type]
    assert (blocked.gate.verdict, blocked.gate.exit_code) == ("error", 3)
    top = headline(blocked)
    assert top.startswith("### ⛔ evalbot: could not measure, not passing: judge unavailable"), top
    assert "judge unavailable: 3 of 3 judged verdict(s) not evaluated — " in top and words in top, top
    warned = compare(current=report, baseline=main_baseline,  # type: ignore[arg-type]
                     policy=GatePolicy(judge_failures="warn"))
    assert (warned.gate.verdict, warned.gate.exit_code) == ("passed", 0)
    top = headline(warned)
    assert top.startswith("### ⚠️ evalbot: no regressions in what was measured"), top
    assert "judge unavailable: 3 of 3" in top and words in top and "judge-failures: warn" in top


def test_missing_credentials_warn_in_the_headline(main_baseline: object) -> None:
    """No judge (a fork PR's first stage): a prominent warning, exit 0, not "✅ no regressions"."""
    report = scored(None, reason=MISSING_CREDENTIALS)
    c = compare(current=report, baseline=main_baseline, policy=GatePolicy())  # type: ignore[arg-type]
    assert (c.gate.verdict, c.gate.exit_code) == ("passed", 0)
    top = headline(c)
    assert top.startswith("### ⚠️ evalbot: no regressions in what was measured"), top
    assert "judged criteria not measured: 3 of 3 judged verdict(s) not evaluated — no judge credentials" in top


def test_missing_credentials_where_expected_are_a_judge_failure(main_baseline: object) -> None:
    """Where the run should have had its secrets (``credentials_expected``), no judge is a judge failure: exit 3 under
    ``judge_failures: block``, a warning under ``warn``; the whole message naming the variables is kept."""
    report = scored(None, reason=MISSING_CREDENTIALS)
    c = compare(current=report, baseline=main_baseline, policy=GatePolicy(),  # type: ignore[arg-type]
                credentials_expected=True)
    assert (c.gate.verdict, c.gate.exit_code) == ("error", 3)
    assert headline(c).splitlines()[0] == "### ⛔ evalbot: could not measure, not passing: judge credentials missing"
    assert c.alerts == [f"judge credentials missing: 3 of 3 judged verdict(s) not evaluated — {MISSING_CREDENTIALS} "
                        "(judge-failures: block)"]
    warned = compare(current=report, baseline=main_baseline,  # type: ignore[arg-type]
                     policy=GatePolicy(judge_failures="warn"), credentials_expected=True)
    assert (warned.gate.verdict, warned.gate.exit_code) == ("passed", 0)
    assert headline(warned).startswith("### ⚠️ evalbot: no regressions in what was measured")


def test_a_long_no_judge_reason_is_cut_at_a_word(main_baseline: object) -> None:
    """A reason longer than the cap (e.g. from an untrusted artifact) is cut at a word boundary with "…"."""
    reason = "set " + " ".join(f"VARIABLE_{i:03d}" for i in range(80))
    c = compare(current=scored(None, reason=reason), baseline=main_baseline,  # type: ignore[arg-type]
                policy=GatePolicy())
    shown = c.alerts[0].split(" — ", 1)[1].removesuffix(" (not blocking; regressions on these criteria cannot be "
                                                         "detected)")
    assert shown.endswith("…") and len(shown) <= 480
    assert all(word.startswith("VARIABLE_") and len(word) == 12 for word in shown[4:-1].split())


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_partial_outage_counts_only_the_missing_verdicts(backend: str, main_baseline: object) -> None:
    """One call of three fails: "1 of 3", the other verdicts kept."""
    with fake_server(backend) as fake:
        fake.responder = lambda prompt, index, request: VALID
        fake.fault(401, count=1, message="API key not valid")
        report = scored(fake, backend=backend)
    c = compare(current=report, baseline=main_baseline, policy=GatePolicy())  # type: ignore[arg-type]
    assert c.gate.exit_code == 3
    assert c.gate.reasons[0].startswith("judge unavailable: 1 of 3 judged verdict(s) not evaluated — "
                                        "judge call failed: HTTP 401")
    statuses = [c.metrics["final_response_match_v2"].status for c in report.eval_sets[0].cases]
    assert sorted(statuses) == ["not_evaluated", "passed", "passed"]
