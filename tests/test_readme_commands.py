"""Every shell command in README.md and examples/README.md runs as written, on the bundled example.

Each ```sh / ```bash block is run by bash in a temporary copy of ``examples/`` committed to a fresh git repository
(so ``HEAD:`` and ``origin/main:`` baselines resolve), offline, with this environment's ``evalbot`` first on PATH.
An evalbot command may exit 0 or 1 (1 is the gate's "blocked", which the docs say when it happens); any other code
(2: the command line or an input is wrong, 3: could not measure, 70: a bug), or any other command failing, fails
the test naming the command.

A block that cannot run here says so with an HTML comment right above its fence, naming why, e.g.
``<!-- commands: not run by tests (installs packages: needs the network) -->``; the test skips it and checks the
reason is given.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = ("README.md", "examples/README.md")
FENCE = re.compile(r"^```(sh|bash|shell)\n(.*?)^```", re.MULTILINE | re.DOTALL)
MARKER = re.compile(r"<!-- commands: not run by tests \((?P<why>[^)]{10,})\) -->")


@dataclass(frozen=True)
class Block:
    doc: str
    line: int
    text: str
    skip: str | None
    """Why the block is not run (from its marker), or None."""


def blocks(doc: str) -> list[Block]:
    """The shell blocks of ``doc`` with their markers (the HTML comment lines right above the fence)."""
    text = (ROOT / doc).read_text(encoding="utf-8")
    found = []
    for match in FENCE.finditer(text):
        above = text[: match.start()].rstrip("\n").split("\n")
        comments = []
        while above and above[-1].startswith("<!--"):
            comments.append(above.pop())
        marker = next((m for m in map(MARKER.search, comments) if m), None)
        found.append(Block(doc, text[: match.start()].count("\n") + 1, match.group(2),
                           marker.group("why") if marker else None))
    return found


ALL = [b for doc in DOCS for b in blocks(doc)]


def test_the_docs_have_shell_blocks_and_most_run() -> None:
    """The extraction finds the blocks (a change of fence style must not silently skip them all)."""
    assert len(ALL) >= 6
    assert sum(b.skip is None for b in ALL) >= 4


def test_a_marker_without_a_reason_is_not_a_marker() -> None:
    assert MARKER.search("<!-- commands: not run by tests (needs a key for the judge) -->")
    assert not MARKER.search("<!-- commands: not run by tests () -->")


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    """The example in a fresh repository whose HEAD (and origin/main) holds it as committed."""
    shutil.copytree(ROOT / "examples", tmp_path / "examples")
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@example.com"}
    for argv in (["git", "init", "-q", "-b", "main"], ["git", "add", "-A"], ["git", "commit", "-q", "-m", "example"],
                 ["git", "update-ref", "refs/remotes/origin/main", "HEAD"]):
        subprocess.run(argv, cwd=tmp_path, check=True, env=env, capture_output=True)
    return tmp_path


TRAP = r"""set -u
allowed() { case "$BASH_COMMAND" in evalbot\ *) [ "$1" -le 1 ] ;; *) false ;; esac; }
trap 'rc=$?; if ! allowed "$rc"; then echo "EXIT $rc: $BASH_COMMAND" >&2; exit "$rc"; fi' ERR
"""


def run_block(text: str, workspace: Path) -> subprocess.CompletedProcess[str]:
    """Run a block's text with bash in ``workspace``, offline: no credentials, this environment's evalbot."""
    env = {k: v for k, v in os.environ.items() if not k.endswith(("_API_KEY", "_BASE_URL")) and
           not k.startswith(("GOOGLE_", "OPENAI_", "AZURE_", "GITHUB_", "EVALBOT_"))}
    env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", "")
    return subprocess.run(["bash", "-c", TRAP + text], cwd=workspace, env=env, capture_output=True, text=True,
                          timeout=300, check=False)


@pytest.mark.parametrize("block", ALL, ids=[f"{b.doc}:{b.line}" for b in ALL])
def test_documented_commands_run_as_written(block: Block, workspace: Path) -> None:
    if block.skip is not None:
        pytest.skip(f"{block.doc}:{block.line} is marked: {block.skip}")
    done = run_block(block.text, workspace)
    assert done.returncode in (0, 1), (
        f"{block.doc}:{block.line}: exit {done.returncode}\n{done.stderr[-3000:]}\n{done.stdout[-2000:]}"
    )
    assert "EXIT " not in done.stderr


@pytest.mark.parametrize(("text", "code"), [
    ("evalbot compare ... --fail-on never\necho after", 2),  # an abbreviated command: exit 2, stops the block
    ("evalbot compare --baseline examples/.evalbot/baseline.json examples/evals --actuals examples/runs/pr.json \\\n"
     "  --judge-cache examples/judge-cache --judge-replay --comment /dev/null", 2),
    ("ls no-such-file\necho after", 2),  # any other command must succeed
    ("evalbot compare --baseline examples/.evalbot/baseline.json examples/evals --actuals examples/runs/pr.json \\\n"
     "  --judge-cache examples/judge-cache --judge-replay > /dev/null\necho after", 0),  # blocked (1) is fine
])
def test_the_runner_stops_on_a_failing_command(text: str, code: int, workspace: Path) -> None:
    done = run_block(text, workspace)
    assert done.returncode == code
    assert ("after" in done.stdout) == (code == 0)
