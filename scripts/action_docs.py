"""The Action's inputs and outputs tables in docs/github-action.md, generated from action.yml.

    python scripts/action_docs.py           # rewrite the tables between their markers in docs/github-action.md
    python scripts/action_docs.py --check   # exit 1 when the page's tables differ from action.yml

The tables sit between ``<!-- action-inputs:begin -->`` / ``<!-- action-inputs:end -->`` and
``<!-- action-outputs:begin -->`` / ``<!-- action-outputs:end -->``; tests/action/test_readme.py checks them.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from ruamel.yaml import YAML

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "github-action.md"


def _cell(text: str) -> str:
    return " ".join(str(text).split()).replace("|", "\\|")


def action(root: Path = ROOT) -> dict[str, Any]:
    loaded: dict[str, Any] = YAML(typ="safe").load((root / "action.yml").read_text(encoding="utf-8"))
    return loaded


def inputs_table(spec: dict[str, Any]) -> str:
    rows = ["| Input | Default | What it does |", "|---|---|---|"]
    for name, entry in spec["inputs"].items():
        default = entry.get("default", "")
        shown = f"`{default}`" if default != "" else "(empty)"
        rows.append(f"| `{name}` | {shown} | {_cell(entry['description'])} |")
    return "\n".join(rows)


def outputs_table(spec: dict[str, Any]) -> str:
    rows = ["| Output | What it holds |", "|---|---|"]
    rows += [f"| `{name}` | {_cell(entry['description'])} |" for name, entry in spec["outputs"].items()]
    return "\n".join(rows)


def render(page: str, spec: dict[str, Any]) -> str:
    """``page`` with both tables replaced by the ones action.yml gives."""
    for marker, table in (("action-inputs", inputs_table(spec)), ("action-outputs", outputs_table(spec))):
        begin, end = f"<!-- {marker}:begin -->", f"<!-- {marker}:end -->"
        if page.count(begin) != 1 or page.count(end) != 1:
            raise ValueError(f"{PAGE.name} needs exactly one {begin} and one {end}")
        head, rest = page.split(begin)
        _, tail = rest.split(end)
        page = f"{head}{begin}\n{table}\n{end}{tail}"
    return page


def main(argv: list[str]) -> int:
    page = PAGE.read_text(encoding="utf-8")
    fresh = render(page, action())
    if argv == ["--check"]:
        if fresh != page:
            print(f"{PAGE.relative_to(ROOT)}: the inputs/outputs tables differ from action.yml; "
                  "run python scripts/action_docs.py", file=sys.stderr)
            return 1
        return 0
    if argv:
        print(__doc__, file=sys.stderr)
        return 2
    PAGE.write_text(fresh, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
