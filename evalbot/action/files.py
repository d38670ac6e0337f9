"""Hand what the container wrote into the workspace back to the workspace's owner (the runner's user).

The container runs as root; a file it leaves in the bind-mounted workspace would stay owned by root, and on a
persistent self-hosted runner the next job's checkout could not delete it (EACCES). After every run, whatever its
outcome, each path evalbot may have written (report, JUnit file, HTML report, baseline, judge cache) is chowned to the owner
of the workspace directory, together with the directories created above it. Only entries owned by this process's
user are changed, symlinks are never followed, and nothing outside the workspace is touched.
"""

from __future__ import annotations

import logging
import os
import stat
from collections.abc import Callable, Iterable
from pathlib import Path

log = logging.getLogger("evalbot")
Chown = Callable[[str, int, int], None]


def _inside(root: Path, path: Path) -> Path | None:
    """``path`` (relative to ``root`` unless absolute) with its parent resolved, when that lies inside ``root``."""
    candidate = path if path.is_absolute() else root / path
    try:
        parent = candidate.parent.resolve()
        parent.relative_to(root)
    except (OSError, ValueError):
        return None
    return parent / candidate.name


def hand_over(
    workspace: Path,
    paths: Iterable[str | None],
    *,
    owner: tuple[int, int] | None = None,
    me: int | None = None,
    chown: Chown = os.lchown,
) -> int:
    """Chown ``paths`` (files or directory trees) and the directories between them and ``workspace`` to the
    workspace's owner; returns how many entries changed. A no-op when this process already is that owner."""
    try:
        root = workspace.resolve()
        info = root.stat()
    except OSError:
        return 0
    uid, gid = owner if owner is not None else (info.st_uid, info.st_gid)
    me = os.geteuid() if me is None else me
    if uid == me:
        return 0
    changed = 0
    seen: set[Path] = set()

    def give(entry: Path) -> None:
        nonlocal changed
        if entry in seen:
            return
        seen.add(entry)
        try:
            st = entry.lstat()
            if st.st_uid != me or (st.st_uid == uid and st.st_gid == gid):
                return
            chown(str(entry), uid, gid)
            changed += 1
        except OSError as exc:
            log.debug("evalbot: could not hand %s to %d:%d: %s", entry, uid, gid, exc)

    for raw in paths:
        if not raw:
            continue
        target = _inside(root, Path(raw))
        if target is None or target == root:
            continue
        up = target.parent
        while up != root and root in up.parents:
            give(up)
            up = up.parent
        give(target)
        try:
            is_dir = stat.S_ISDIR(target.lstat().st_mode)
        except OSError:
            continue
        if is_dir:
            for top, dirs, files in os.walk(target):  # never follows symlinks
                for name in (*dirs, *files):
                    give(Path(top) / name)
    return changed
