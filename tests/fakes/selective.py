"""A repository of several eval sets, each with its agent's folder, for ``evalbot plan`` and ``--only-affected``:
``evals/<name>/`` (the eval set, its test_config.json with the gate policy's ``affected_by``), ``agents/<name>/``,
``shared/``; main's runs of every case, a PR's runs, and git helpers (real repositories in tmp_path)."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from tests.fakes.builders import case, eval_set, inv

CRITERIA: dict[str, Any] = {"tool_trajectory_avg_score": 1.0, "response_match_score": 0.5}
NAMES = ("billing", "search", "orders")


def mapping(names: Sequence[str]) -> dict[str, list[str]]:
    """Each eval set folder depends on its agent's folder and on shared/."""
    return {f"evals/{n}": [f"agents/{n}/**", "shared/**"] for n in names}


def good(name: str, k: int) -> dict[str, Any]:
    return inv(f"{name} question {k}", f"{name} answer {k}", [(f"{name}_tool", {"k": k})])


def bad(name: str, k: int) -> dict[str, Any]:
    """The case's run gone wrong: another tool and answer (fails both criteria)."""
    return inv(f"{name} question {k}", "no idea at all", [("wrong_tool", {"k": k})])


def write_repo(root: Path, names: Sequence[str] = NAMES, *, cases: int = 2,
               section: dict[str, Any] | None = None) -> None:
    """The repository's files (not committed): every config holds the same ``evalbot`` section (default: the
    ``affected_by`` of :func:`mapping`), and ``runs/main.json`` passes every case."""
    section = {"affected_by": mapping(names)} if section is None else section
    runs: dict[str, list[dict[str, Any]]] = {}
    for name in names:
        folder = root / "evals" / name
        folder.mkdir(parents=True, exist_ok=True)
        data = eval_set(name, *(case(f"{name}-{k}", good(name, k)) for k in range(cases)))
        (folder / f"{name}.evalset.json").write_text(json.dumps(data), encoding="utf-8")
        config = {"criteria": CRITERIA, **({"evalbot": section} if section else {})}
        (folder / "test_config.json").write_text(json.dumps(config), encoding="utf-8")
        agent = root / "agents" / name
        agent.mkdir(parents=True, exist_ok=True)
        (agent / "agent.py").write_text(f"NAME = {name!r}\n", encoding="utf-8")
        runs.update({f"{name}-{k}": [good(name, k)] for k in range(cases)})
    (root / "shared").mkdir(exist_ok=True)
    (root / "shared" / "util.py").write_text("SHARED = 1\n", encoding="utf-8")
    (root / "README.md").write_text("a repository\n", encoding="utf-8")
    (root / "runs").mkdir(exist_ok=True)
    (root / "runs" / "main.json").write_text(json.dumps(runs), encoding="utf-8")


def pr_runs(root: Path, names: Sequence[str], *, cases: int = 2, broken: Sequence[str] = (),
            out: str = "runs/pr.json") -> str:
    """A PR's runs of the eval sets ``names`` only (the agent step ran the affected ones); case ids in ``broken``
    go wrong. Returns the file's path."""
    runs = {f"{n}-{k}": [bad(n, k) if f"{n}-{k}" in broken else good(n, k)] for n in names for k in range(cases)}
    path = root / out
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(runs), encoding="utf-8")
    return out


def git(where: Path, *args: str) -> str:
    done = subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", "-c", "commit.gpgsign=false", *args],
                          cwd=where, check=True, capture_output=True, text=True)
    return done.stdout.strip()


def commit_main(where: Path) -> str:
    """Everything in ``where`` becomes main's first commit; then a branch ``pr`` is checked out. Returns main's sha."""
    git(where, "init", "-q", "-b", "main")
    git(where, "add", "-A")
    git(where, "commit", "-q", "-m", "main")
    git(where, "checkout", "-q", "-b", "pr")
    return git(where, "rev-parse", "HEAD")


def change(where: Path, path: str, text: str = "changed = True\n", *, commit: bool = True) -> None:
    """Change (or add) ``path`` on the PR branch, committed unless ``commit`` is False (then staged: a working tree
    change git tracks)."""
    target = where / path
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text, encoding="utf-8")
    git(where, "add", path)
    if commit:
        git(where, "commit", "-q", "-m", f"change {path}")
