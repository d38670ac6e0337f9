"""How the Actions runner reads the files the Action writes (GITHUB_OUTPUT)."""

from __future__ import annotations


def parse_outputs(text: str) -> dict[str, str]:
    """The runner's reading of GITHUB_OUTPUT (FileCommandManager: heredoc or name=value per line)."""
    lines, out, i = text.split("\n"), {}, 0
    while i < len(lines):
        line = lines[i]
        if "<<" in line:
            name, delim = line.split("<<", 1)
            end = lines.index(delim, i + 1)
            out[name] = "\n".join(lines[i + 1 : end])
            i = end + 1
        elif "=" in line:
            name, value = line.split("=", 1)
            out[name] = value
            i += 1
        else:
            i += 1
    return out
