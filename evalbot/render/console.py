"""Plain-text rendering of a report for the terminal: a table per eval set, then failing cases."""

from __future__ import annotations

from evalbot.formats.numbers import score_text
from evalbot.judges.usage import format_usage
from evalbot.results import CaseView, EvalSetReport, MetricView, Report

_MARK = {"passed": "PASS", "failed": "FAIL", "not_evaluated": "N/E", "error": "ERROR", "informational": "info"}


def _fmt(value: float | None) -> str:
    return score_text(value)


def _failed(name: str, result: MetricView) -> str:
    """``name score < threshold``; the sign follows the numbers (``failure`` and ``latency`` are maxima), and a
    metric that reports a value instead of a score (``latency``) shows its largest value."""
    shown = result.score
    if shown is None and result.details:
        raw = result.details.get("max", result.details.get("value"))
        shown = float(raw) if isinstance(raw, int | float) else None
    if shown is None or result.threshold is None:
        return f"{name} {_fmt(shown)} (threshold {_fmt(result.threshold)})"
    return f"{name} {_fmt(shown)} {'<' if shown < result.threshold else '>'} {_fmt(result.threshold)}"


Bad = tuple[str, str, int, list[str]]
"""A line of the failing cases: (mark, reason, how many cases, the first cases' ``eval set / id`` labels)."""

MAX_LABELS = 3
"""Cases named on a line that counts several sharing one error."""


class ConsoleTally:
    """What the console shows of the cases, gathered one case at a time (a run that streams its cases keeps none):
    how many each eval set has, the mean ``details.value`` of each criterion that reports a value instead of a
    score (seconds, counts), and the first ``max_failures`` lines of failing or erroring cases. Erroring cases that
    share one reason (a root error: an unusable --actuals file, a misconfigured criterion, a judge that cannot be set
    up) are one line counting them, not one line each."""

    def __init__(self, max_failures: int = 50, *, keep_values: bool = False) -> None:
        self.max_failures = max_failures
        self.cases: dict[int, int] = {}
        self.values: dict[tuple[int, str], list[float]] = {}
        """(eval set index, criterion) -> [running total, count], as ``results.mean`` adds them."""
        self.series: dict[tuple[int, str], list[float]] | None = {} if keep_values else None
        """With ``keep_values``: (eval set index, criterion) -> each value added, in order (``absorb`` adds them)."""
        self.bad: list[Bad] = []
        self.bad_count = 0
        self._shared: dict[str, int] = {}
        """An erroring case's reason -> its line in ``bad``."""

    @classmethod
    def of(cls, report: Report, max_failures: int = 50) -> ConsoleTally:
        """The tally of a report that holds its cases."""
        tally = cls(max_failures)
        for index, es in enumerate(report.eval_sets):
            for case in es.cases:
                tally.add(index, es, case)
        return tally

    def add(self, index: int, es: EvalSetReport, case: CaseView) -> None:
        """Count one case of the ``index``-th eval set (a CaseStream)."""
        self.cases[index] = self.cases.get(index, 0) + 1
        for name, result in case.metrics.items():
            if result.details and isinstance(v := result.details.get("value"), int | float):
                acc = self.values.get((index, name))
                if acc is None:
                    acc = self.values[index, name] = [0.0, 0]
                acc[0] += float(v)
                acc[1] += 1
                if self.series is not None:
                    self.series.setdefault((index, name), []).append(float(v))
        if case.status not in ("failed", "error"):
            return
        self.bad_count += 1
        reasons = [case.reason] if case.reason else []
        for name, result in case.metrics.items():
            if result.status == "failed":
                reasons.append(_failed(name, result))
        self.absorb_line((_MARK[case.status], "; ".join(reasons), 1, [f"{es.eval_set_id} / {case.eval_id}"]))

    def absorb_line(self, line: Bad) -> None:
        """Add a line of ``bad``: an erroring one whose reason is already there adds to that line's count."""
        mark, reason, count, labels = line
        at = self._shared.get(reason) if mark == _MARK["error"] else None
        if at is not None:
            old = self.bad[at]
            self.bad[at] = (mark, reason, old[2] + count, (old[3] + labels)[:MAX_LABELS])
        elif len(self.bad) < self.max_failures:
            if mark == _MARK["error"]:
                self._shared[reason] = len(self.bad)
            self.bad.append((mark, reason, count, labels[:MAX_LABELS]))

    def absorb(self, other: ConsoleTally) -> None:
        """Count after these cases those ``other`` counted (with ``keep_values``), the cases that follow them in the
        report (``run --jobs``: a later job's, eval set by eval set): the same tally as adding all the cases in that
        order."""
        assert other.series is not None
        for index, count in other.cases.items():
            self.cases[index] = self.cases.get(index, 0) + count
        for key, values in other.series.items():
            acc = self.values.setdefault(key, [0.0, 0])
            for v in values:
                acc[0] += v
                acc[1] += 1
        for line in other.bad:
            self.absorb_line((line[0], line[1], line[2], list(line[3])))
        self.bad_count += other.bad_count

    def lines(self) -> list[str]:
        """The failing cases' lines: ``MARK eval set / id: reason``, or ``ERROR N case(s): reason (a, b, c, …)``."""
        out = []
        for mark, reason, count, labels in self.bad:
            if count == 1:
                out.append(f"  {mark:5} {labels[0]}: {reason}")
            else:
                named = ", ".join(labels) + (", …" if count > len(labels) else "")
                out.append(f"  {mark:5} {count} case(s): {reason} ({named})")
        return out

    def shown(self) -> int:
        """How many failing cases the lines account for."""
        return sum(line[2] for line in self.bad)

    def value(self, index: int, name: str) -> str:
        """Mean over the cases of a metric that reports a value instead of a score: ``details.value``."""
        acc = self.values.get((index, name))
        return "—" if acc is None else _fit(acc[0] / acc[1])


_WIDTH = 7
"""The table's mean column: a value wider than this would push the row's other columns out of line."""


def _fit(value: float) -> str:
    """``value`` with three significant digits, or fewer where that would not fit the mean column (0.000917 s of
    latency is 0.00092, 12345678 is 1.2e+07)."""
    text = f"{value:.3g}"
    for digits in (2, 1):
        if len(text) <= _WIDTH:
            break
        text = f"{value:.{digits}g}"
    return text


def _unevaluated_verdicts(report: Report, cases: int) -> str:
    """What tells the totals' "not evaluated" (cases no criterion decided) from the table's n/e column (criteria not
    evaluated, case by case) when the column counts more: without it "0 not evaluated" reads as a contradiction of
    "n/e 6" a few lines above."""
    verdicts = sum(m.not_evaluated for es in report.eval_sets for m in es.metrics.values()
                   if not (m.informational and not (m.passed or m.failed)))
    if verdicts <= cases:
        return ""
    return (f"; the n/e column counts criteria: {verdicts} criterion verdict(s) not evaluated (a case counts as not "
            "evaluated only when no criterion passed or failed it)")


def render_text(report: Report, *, max_failures: int = 50, tally: ConsoleTally | None = None) -> str:
    """A compact summary: eval set × criterion (mean, std, counts), then each failing or erroring case.
    ``tally``: the cases as they were streamed out of ``report`` (default: the report's own cases)."""
    tally = tally or ConsoleTally.of(report, max_failures)
    lines: list[str] = []
    for problem in report.errors:
        where = f"{problem.path}:{problem.pointer}" if problem.pointer else problem.path
        lines.append(f"ERROR {where}: {problem.message}")
    for index, es in enumerate(report.eval_sets):
        lines.append("")
        lines.append(f"{_MARK[es.status]:5} {es.eval_set_id}  ({es.path}, {tally.cases.get(index, 0)} case(s))")
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
            avg = _fmt(m.mean) if m.mean is not None else tally.value(index, name)
            if m.informational and not (m.passed or m.failed):
                lines.append(f"      {name:38} {'':>9} {avg:>7} {_fmt(m.std):>7}  (informational)")
                continue
            lines.append(
                f"      {name:38} {_fmt(m.threshold):>9} {avg:>7} {_fmt(m.std):>7}"
                f"  {m.passed:4} {m.failed:4} {m.not_evaluated:4} {m.error:4}"
            )
    if tally.bad_count:
        lines.append("")
        lines.append("Failing cases:")
    lines.extend(tally.lines())
    if tally.bad_count > tally.shown():
        lines.append(f"  … and {tally.bad_count - tally.shown()} more (see the JSON report)")
    if report.usage:
        lines.append("")
        lines.append(format_usage(report.usage))
    for notice in report.notices:
        lines.append(f"NOTE {notice}")
    t = report.totals
    lines.append("")
    lines.append(
        f"{t.cases} case(s): {t.passed} passed, {t.failed} failed, {t.not_evaluated} not evaluated, {t.error} error(s)"
        + _unevaluated_verdicts(report, t.not_evaluated)
    )
    return "\n".join(lines).lstrip("\n")
