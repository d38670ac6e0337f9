"""GitHub Actions runner protocol: outputs, step summary and workflow commands (pure text + tiny writers)."""

from __future__ import annotations

import re
import secrets
from collections.abc import Mapping
from pathlib import Path

from evalbot.formats.lookalike import escape_invisible
from evalbot.redact import scrub
from evalbot.render.annotations import Annotation, Level
from evalbot.render.comment import SUMMARY_LIMIT_BYTES

TRUNCATION_NOTICE = "\n\n> **Summary truncated** at GitHub's 1 MiB limit; the full report is in the report file.\n"

_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_-]*$")


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
    """An ``::error``/``::warning``/``::notice`` annotation line (file path relative to the workspace). Invisible and
    default-ignorable characters (a zero-width space, a bidi override, a variation selector from an id) are written
    as escapes in every part: they never reach the runner's command raw."""
    return command(level, escape_invisible(scrub(message)), file=file and escape_invisible(file), line=line,
                   endLine=end_line, col=col, title=title and escape_invisible(title))


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


def annotation_line(found: Annotation) -> str:
    """The workflow command of an annotation chosen by :mod:`evalbot.render.annotations`."""
    return annotation(found.level, found.message, file=found.file, line=found.line, title=found.title)
