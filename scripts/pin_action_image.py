"""Point action.yml's ``runs.image`` at a released image by digest (the release workflow's release commit).

    python scripts/pin_action_image.py action.yml docker://ghcr.io/evalbot/evalbot@sha256:<64 hex>

Only the ``image:`` line of the ``runs:`` block changes; everything else stays byte for byte. A reference that is
not ``docker://<registry>/<name>@sha256:<64 hex>`` is refused: a release must never run a mutable tag.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

PINNED = re.compile(r"^docker://[a-z0-9.-]+(?::[0-9]+)?(?:/[a-z0-9._-]+)+@sha256:[0-9a-f]{64}$")
_RUNS_IMAGE = re.compile(r"(?m)^(runs:\n(?:[ \t]+.*\n|\n)*?[ \t]+image:[ \t]*)(\S.*)$")


def pin(text: str, image: str) -> str:
    """``text`` (an action.yml) with ``runs.image`` set to ``image``."""
    if not PINNED.match(image):
        raise ValueError(f"{image!r} is not docker://REGISTRY/NAME@sha256:<64 hex digits>")
    found = _RUNS_IMAGE.search(text)
    if found is None:
        raise ValueError("no `image:` line in the `runs:` block of action.yml")
    return f"{text[: found.start(2)]}{image}{text[found.end(2) :]}"


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    path = Path(argv[0])
    try:
        path.write_text(pin(path.read_text(encoding="utf-8"), argv[1]), encoding="utf-8")
    except ValueError as exc:
        print(f"{path}: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
