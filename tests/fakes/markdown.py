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


# CommonMark's HTML blocks of kind 6: a line starting with one of these tags opens a block that only a blank line
# ends; markdown written inside it (a list, emphasis, a table) is shown as raw text.
_HTML_BLOCK = re.compile(
    r"^ {0,3}</?(?:address|article|aside|blockquote|details|dialog|div|dl|fieldset|figure|footer|form|h[1-6]|header|"
    r"hr|li|main|nav|ol|p|section|summary|table|ul)(?:[\s/>]|$)", re.IGNORECASE)
# Forms GitHub turns into links or notifications in comment text (a zero-width joiner breaks them).
_LIVE = {
    "issue reference": re.compile(r"#\d"),
    "GH- reference": re.compile(r"(?<![A-Za-z0-9])(?i:gh)-\d"),
    "commit sha": re.compile(r"(?<![A-Za-z0-9.])[0-9A-Fa-f]{7,}(?![A-Za-z0-9])"),
    "entity that decodes to # or @": re.compile(r"(?i)&(?:#|num;|commat;)"),
}
_CODE_SPAN = re.compile(r"(`+)(?:.*?[^`])?\1(?!`)")


def markdown_in_html_blocks(lines: list[str]) -> list[str]:
    """Lines (outside code) that CommonMark puts inside an HTML block although they are markdown."""
    found: list[str] = []
    in_block = False
    for line in lines:
        if not line.strip():
            in_block = False
        elif _HTML_BLOCK.match(line):
            in_block = True
        elif in_block and not line.lstrip().startswith("<"):
            found.append(f"markdown inside an HTML block (no blank line before it): {line[:80]!r}")
    return found


def live_references(lines: list[str]) -> list[str]:
    """References GitHub would autolink in lines outside code (code spans removed, but for lines inside an HTML
    block, where backticks are literal text)."""
    found = []
    in_block = False
    for line in lines:
        if not line.strip():
            in_block = False
        elif _HTML_BLOCK.match(line):
            in_block = True
        bare = line if in_block else _CODE_SPAN.sub("", line)
        found += [f"live {name}: {line[:80]!r}" for name, pattern in _LIVE.items() if pattern.search(bare)]
    return found


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
    return found + markdown_in_html_blocks(lines) + live_references(lines)
