"""JUnit XML of a report: one suite per eval set, one test case per eval case (the Jenkins/Surefire dialect)."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from evalbot.paths import write_output
from evalbot.redact import scrub
from evalbot.render.annotations import failing_summary, metric_line
from evalbot.results import CaseResult, EvalSetReport, Report

_XML_INVALID = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")


@dataclass(frozen=True)
class JUnitCase:
    """One test case: ``failure``/``error``/``skipped`` hold a message when that is its outcome."""

    name: str
    classname: str
    time_s: float = 0.0
    failure: str | None = None
    error: str | None = None
    skipped: str | None = None
    details: str = ""
    """Longer text (per-criterion scores) shown inside the failure/error element or as system-out."""


@dataclass(frozen=True)
class JUnitSuite:
    """A named group of cases, typically one eval set."""

    name: str
    cases: Sequence[JUnitCase] = field(default_factory=tuple)


def _clean(text: str) -> str:
    """Text XML 1.0 can carry (control characters removed)."""
    return _XML_INVALID.sub("", text)


def junit_xml(suites: Sequence[JUnitSuite], *, name: str = "evalbot") -> str:
    """The JUnit XML document (the Jenkins/Surefire dialect most CI systems read)."""
    root = ET.Element("testsuites", name=_clean(name))
    totals = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
    total_time = 0.0
    for suite in suites:
        counts = {
            "tests": len(suite.cases),
            "failures": sum(c.failure is not None for c in suite.cases),
            "errors": sum(c.error is not None for c in suite.cases),
            "skipped": sum(c.skipped is not None for c in suite.cases),
        }
        suite_time = sum(c.time_s for c in suite.cases)
        attrib = {"name": _clean(suite.name), **{k: str(v) for k, v in counts.items()}, "time": f"{suite_time:.3f}"}
        node = ET.SubElement(root, "testsuite", attrib)
        for case in suite.cases:
            item = ET.SubElement(
                node, "testcase", name=_clean(case.name), classname=_clean(case.classname), time=f"{case.time_s:.3f}"
            )
            for tag, message in (("failure", case.failure), ("error", case.error), ("skipped", case.skipped)):
                if message is not None:
                    child = ET.SubElement(item, tag, message=_clean(message))
                    if tag != "skipped" and case.details:
                        child.text = _clean(case.details)
            if case.details and case.failure is None and case.error is None:
                ET.SubElement(item, "system-out").text = _clean(case.details)
        totals = {k: totals[k] + counts[k] for k in totals}
        total_time += suite_time
    root.attrib.update({k: str(v) for k, v in totals.items()}, time=f"{total_time:.3f}")
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


def write_junit(path: Path, suites: Sequence[JUnitSuite], *, name: str = "junit", root: Path | None = None) -> None:
    """Write the JUnit XML file, creating parent directories, never through a symbolic link (evalbot.paths); a
    failure is an InputError naming ``name``."""
    write_output(path, scrub(junit_xml(suites)), name=name, root=root)


def junit_suites(report: Report) -> list[JUnitSuite]:
    """One suite per eval set, one case per eval case; unusable files appear as an errored case."""
    suites = []
    for es in report.eval_sets:
        cases = [_junit_case(es, case) for case in es.cases]
        cases += [
            JUnitCase(name="(eval set)", classname=es.eval_set_id, error=f"{p.pointer or ''} {p.message}".strip())
            for p in es.errors
        ]
        suites.append(JUnitSuite(name=es.path, cases=cases))
    if report.errors:
        suites.append(
            JUnitSuite(
                name="(inputs)",
                cases=[JUnitCase(name=p.path or "(run)", classname="inputs", error=p.message) for p in report.errors],
            )
        )
    return suites


def _junit_case(es: EvalSetReport, case: CaseResult) -> JUnitCase:
    details = "\n".join(metric_line(name, m) for name, m in case.metrics.items())
    base = JUnitCase(name=case.eval_id, classname=es.eval_set_id, details=details)
    if case.status == "failed":
        return replace(base, failure=failing_summary(case))
    if case.status == "error":
        return replace(base, error=case.reason or failing_summary(case))
    if case.status == "not_evaluated":
        return replace(base, skipped=case.reason or "not evaluated")
    return base
