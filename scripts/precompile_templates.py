"""Write evalbot/render/templates/precompiled.json: Jinja's generated code for evalbot's own templates (the comment's
and the HTML page's), so a process loads them without running Jinja's parser and code generator
(evalbot.render.precompiled). Run from the repository root after editing a template, or upgrading Jinja:
``python scripts/precompile_templates.py``; ``--check`` exits 1 when the file is stale (tests run it).
"""

from __future__ import annotations

import json
import sys

from evalbot.render import comment, html, precompiled


def content() -> str:
    data = precompiled.generated([(comment.environment(None), lambda name: name.endswith(".md.j2")),
                                  (html.environment(), lambda name: name.startswith("report."))])
    return json.dumps(data, indent=1, sort_keys=True) + "\n"


def main(argv: list[str]) -> int:
    text = content()
    if argv[1:] == ["--check"]:
        current = precompiled.PRECOMPILED.read_text(encoding="utf-8") if precompiled.PRECOMPILED.exists() else None
        if current != text:
            print(f"{precompiled.PRECOMPILED} is stale: run python scripts/precompile_templates.py", file=sys.stderr)
            return 1
        return 0
    precompiled.PRECOMPILED.write_text(text, encoding="utf-8")
    print(f"wrote {precompiled.PRECOMPILED} ({len(text):,} characters)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv))
