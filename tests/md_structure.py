"""A small checker of the markdown structure evalbot's comments rely on (used by the rendering tests)."""

from __future__ import annotations

import re

_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})(.*)$")
_MENTION = re.compile(r"(?<![\w`])@[A-Za-z0-9]")


def unescaped_pipes(line: str) -> int:
    """Pipes in a table row that are cell separators (a backslash escapes the next character)."""
    count, i = 0, 0
    while i < len(line):
        if line[i] == "\\":
            i += 2
            continue
        count += line[i] == "|"
        i += 1
    return count


def outside_code(text: str) -> tuple[list[str], list[str]]:
    """Lines outside fenced code blocks, and problems with the fences themselves."""
    problems: list[str] = []
    lines: list[str] = []
    fence: str | None = None
    for line in text.split("\n"):
        match = _FENCE.match(line)
        if fence is None:
            if match:
                fence = match.group(1)
                continue
            lines.append(line)
        elif match and match.group(1)[0] == fence[0] and len(match.group(1)) >= len(fence) and not match.group(2).strip():
            fence = None
    if fence is not None:
        problems.append("a code fence is never closed")
    return lines, problems


def problems(text: str, marker: str | None) -> list[str]:
    """Everything structurally wrong with a rendered comment (empty when it is well formed)."""
    lines, found = outside_code(text)
    if marker is not None:
        if not text.startswith(marker + "\n"):
            found.append("the marker is not the first line")
        if text.count(marker) != 1:
            found.append(f"the marker appears {text.count(marker)} times")
        if text.count("<!--") != 1:
            found.append(f"{text.count('<!--')} HTML comments (only the marker is allowed)")
    elif "<!--" in text:
        found.append("an HTML comment in a text without marker")
    depth = 0
    for line in lines:
        depth += len(re.findall(r"<details[ >]", line)) - line.count("</details>")
        if depth < 0:
            found.append("</details> without an open <details>")
            depth = 0
    if depth:
        found.append(f"{depth} <details> never closed")
    table: int | None = None
    for line in lines:
        if line.startswith("|"):
            cells = unescaped_pipes(line)
            if table is None:
                table = cells
            elif cells != table:
                found.append(f"table row with {cells} separators instead of {table}: {line[:80]!r}")
        else:
            table = None
        if _MENTION.search(line):
            found.append(f"live @-mention: {line[:80]!r}")
    return found
