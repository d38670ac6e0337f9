"""Plain-text rendering of a report for the terminal: a table per eval set, then failing cases."""

from __future__ import annotations

from evalbot.formats.numbers import score_text
from evalbot.judges.usage import format_usage
from evalbot.results import EvalSetReport, MetricResult, Report, mean

_MARK = {"passed": "PASS", "failed": "FAIL", "not_evaluated": "N/E", "error": "ERROR", "informational": "info"}


def _fmt(value: float | None) -> str:
    return score_text(value)


def _failed(name: str, result: MetricResult) -> str:
    """``name score < threshold``; the sign follows the numbers (``failure`` and ``latency`` are maxima), and a
    metric that reports a value instead of a score (``latency``) shows its largest value."""
    shown = result.score
    if shown is None and result.details:
        raw = result.details.get("max", result.details.get("value"))
        shown = float(raw) if isinstance(raw, int | float) else None
    if shown is None or result.threshold is None:
        return f"{name} {_fmt(shown)} (threshold {_fmt(result.threshold)})"
    return f"{name} {_fmt(shown)} {'<' if shown < result.threshold else '>'} {_fmt(result.threshold)}"


def _value(es: EvalSetReport, name: str) -> str:
    """Mean over cases of a metric that reports a value instead of a score (seconds, counts): ``details.value``."""
    values = [
        float(v)
        for case in es.cases
        if (result := case.metrics.get(name)) is not None and result.details
        and isinstance(v := result.details.get("value"), int | float)
    ]
    average = mean(values)
    return "—" if average is None else f"{average:.3g}"


def render_text(report: Report, *, max_failures: int = 50) -> str:
    """A compact summary: eval set × criterion (mean, std, counts), then each failing or erroring case."""
    lines: list[str] = []
    for problem in report.errors:
        where = f"{problem.path}:{problem.pointer}" if problem.pointer else problem.path
        lines.append(f"ERROR {where}: {problem.message}")
    for es in report.eval_sets:
        lines.append("")
        lines.append(f"{_MARK[es.status]:5} {es.eval_set_id}  ({es.path}, {len(es.cases)} case(s))")
        if es.config is not None:
            configured = [c.name for c in es.criteria if c.threshold is not None or c.error]
            lines.append(f"      config: {es.config} · criteria: {', '.join(configured) or 'none'}")
        for err in es.errors:
            lines.append(f"      ERROR {err.path}:{err.pointer or ''} {err.message}")
        for notice in es.notices:
            lines.append(f"      NOTE {notice}")
        if es.metrics:
            lines.append(f"      {'criterion':38} {'threshold':>9} {'mean':>7} {'std':>7}  pass fail  n/e  err")
        for name, m in es.metrics.items():
            avg = _fmt(m.mean) if m.mean is not None else _value(es, name)
            if m.informational and not (m.passed or m.failed):
                lines.append(f"      {name:38} {'':>9} {avg:>7} {_fmt(m.std):>7}  (informational)")
                continue
            lines.append(
                f"      {name:38} {_fmt(m.threshold):>9} {avg:>7} {_fmt(m.std):>7}"
                f"  {m.passed:4} {m.failed:4} {m.not_evaluated:4} {m.error:4}"
            )
    bad = [(es, c) for es in report.eval_sets for c in es.cases if c.status in ("failed", "error")]
    shown = bad[:max_failures]
    if bad:
        lines.append("")
        lines.append("Failing cases:")
    for es, case in shown:
        reasons = [case.reason] if case.reason else []
        for name, result in case.metrics.items():
            if result.status == "failed":
                reasons.append(_failed(name, result))
        lines.append(f"  {_MARK[case.status]:5} {es.eval_set_id} / {case.eval_id}: " + "; ".join(reasons))
    if len(bad) > len(shown):
        lines.append(f"  … and {len(bad) - len(shown)} more (see the JSON report)")
    if report.usage:
        lines.append("")
        lines.append(format_usage(report.usage))
    for notice in report.notices:
        lines.append(f"NOTE {notice}")
    t = report.totals
    lines.append("")
    lines.append(
        f"{t.cases} case(s): {t.passed} passed, {t.failed} failed, {t.not_evaluated} not evaluated, {t.error} error(s)"
    )
    return "\n".join(lines).lstrip("\n")
