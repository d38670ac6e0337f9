"""GitHub Actions runner protocol: outputs, step summary, workflow commands and JUnit XML (pure text + tiny writers)."""

from __future__ import annotations

import re
import secrets
import xml.etree.ElementTree as ET
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from evalbot.redact import scrub

SUMMARY_LIMIT_BYTES = 1024 * 1024
"""GitHub refuses a step summary above 1 MiB ("upload aborted, supports content up to a size of 1024k")."""
TRUNCATION_NOTICE = "\n\n> **Summary truncated** at GitHub's 1 MiB limit; the full report is in the report file.\n"

Level = Literal["error", "warning", "notice"]
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_-]*$")
_XML_INVALID = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")


# -- GITHUB_OUTPUT -------------------------------------------------------------------------------


def format_output(name: str, value: str, *, delimiter: str | None = None) -> str:
    """One ``name<<DELIM`` heredoc entry; the delimiter never occurs in the value, so any text is safe."""
    if not _NAME.match(name):
        raise ValueError(f"output name {name!r} must be letters, digits, '-' or '_'")
    delim = delimiter or f"ghadelimiter_{secrets.token_hex(16)}"
    while delim in value:
        delim = f"ghadelimiter_{secrets.token_hex(16)}"
    return f"{name}<<{delim}\n{value}\n{delim}\n"


def write_outputs(path: Path, outputs: Mapping[str, str]) -> None:
    """Append ``outputs`` to the GITHUB_OUTPUT file."""
    with path.open("a", encoding="utf-8", newline="\n") as handle:
        for name, value in outputs.items():
            handle.write(format_output(name, value))


# -- GITHUB_STEP_SUMMARY -------------------------------------------------------------------------


def fit_summary(markdown: str, *, already: int = 0, limit: int = SUMMARY_LIMIT_BYTES) -> str:
    """``markdown`` cut (on a line boundary, with a notice) so the file stays within ``limit`` bytes."""
    room = limit - already
    if len(markdown.encode("utf-8")) <= room:
        return markdown
    budget = room - len(TRUNCATION_NOTICE.encode("utf-8"))
    if budget <= 0:
        return ""
    cut = markdown.encode("utf-8")[:budget].decode("utf-8", errors="ignore")
    if "\n" in cut:
        cut = cut[: cut.rindex("\n")]
    return cut + TRUNCATION_NOTICE


def append_summary(path: Path, markdown: str, *, limit: int = SUMMARY_LIMIT_BYTES) -> bool:
    """Append to GITHUB_STEP_SUMMARY within the 1 MiB cap; False when it had to be truncated."""
    already = path.stat().st_size if path.exists() else 0
    text = fit_summary(scrub(markdown), already=already, limit=limit)
    with path.open("a", encoding="utf-8", newline="\n") as handle:
        handle.write(text)
    return text == markdown


# -- workflow commands (printed to stdout) ---------------------------------------------------------


def escape_data(text: str) -> str:
    """Escape a command's message: %, CR and LF."""
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    """Escape a command property value: the message escapes plus ':' and ','."""
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def command(name: str, message: str = "", **properties: str | int | None) -> str:
    """``::name key=value,...::message`` with every part escaped; None-valued properties are left out."""
    props = ",".join(f"{k}={escape_property(str(v))}" for k, v in properties.items() if v is not None)
    return f"::{name}{' ' + props if props else ''}::{escape_data(message)}"


def annotation(
    level: Level,
    message: str,
    *,
    file: str | None = None,
    line: int | None = None,
    end_line: int | None = None,
    col: int | None = None,
    title: str | None = None,
) -> str:
    """An ``::error``/``::warning``/``::notice`` annotation line (file path relative to the workspace)."""
    return command(level, scrub(message), file=file, line=line, endLine=end_line, col=col, title=title)


def add_mask(value: str) -> str:
    """Ask the runner to mask ``value`` in every later log line."""
    return command("add-mask", value)


def quoted(untrusted: str, *, token: str | None = None) -> str:
    """Wrap untrusted text (model output) so any ``::command::`` inside it is printed, not obeyed."""
    stop = token or secrets.token_hex(16)
    return f"::stop-commands::{stop}\n{untrusted}\n::{stop}::"


def group(title: str, body: str) -> str:
    """A collapsible log group."""
    return f"::group::{escape_data(title)}\n{body}\n::endgroup::"


# -- JUnit XML -----------------------------------------------------------------------------------


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


def write_junit(path: Path, suites: Sequence[JUnitSuite]) -> None:
    """Write the JUnit XML file, creating parent directories."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(scrub(junit_xml(suites)), encoding="utf-8")
