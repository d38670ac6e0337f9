"""Every shell command in the docs runs as written, on the bundled example, and does what its comment says.

Each ```sh / ```bash block (and each ```console block's ``$ `` lines) is run by bash in a temporary copy of
``examples/`` committed to a fresh git repository (so ``HEAD:`` and ``origin/main:`` baselines resolve), offline,
with this environment's ``evalbot`` first on PATH. An evalbot command may exit 0 or 1 (1 is the gate's "blocked",
which the docs say when it happens); any other code (2: the command line or an input is wrong, 3: could not measure,
70: a bug), or any other command failing, fails the test naming the command.

What the docs claim about a command is checked too. Its comment (the ``#`` lines right above it, and a trailing
``# ...`` on its last line) may name its exit code ("exit 1", "exits 0") and quote what it prints ("no regressions";
a ``…`` inside a quote stands for any text): the command must exit with that code and print each quote (stdout and
stderr, whitespace folded). In a ```console block, every output line shown must be printed by its command, decimal
numbers aside (timings differ between runs); a line of ``...`` stands for lines left out.

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
DOCS = ("README.md", "SECURITY.md", "CONTRIBUTING.md",
        *sorted(p.relative_to(ROOT).as_posix() for pattern in ("docs/*.md", "examples/**/*.md")
                for p in ROOT.glob(pattern)))
"""Every user-facing page: the README, SECURITY.md, CONTRIBUTING.md, docs/ and the examples' READMEs."""
FENCE = re.compile(r"^```(sh|bash|shell|console)\n(.*?)^```", re.MULTILINE | re.DOTALL)
MARKER = re.compile(r"<!-- commands: not run by tests \((?P<why>[^)]{10,})\) -->")


@dataclass(frozen=True)
class Block:
    doc: str
    line: int
    text: str
    skip: str | None
    """Why the block is not run (from its marker), or None."""
    console: bool = False
    """A ```console block: ``$ `` lines are the commands, the others their output."""

    def commands(self) -> list[Command]:
        """The block's commands in order, each with what its comment claims (and, in a console block, its output)."""
        found: list[Command] = []
        comment: list[str] = []
        lines = self.text.split("\n")
        i = 0
        while i < len(lines):
            line = lines[i]
            start = i
            if self.console and not line.startswith("$ "):
                if found and line.strip():
                    found[-1].output.append(line)
                i += 1
                continue
            if self.console:
                line = line[2:]
            if not line.strip():
                comment = []
                i += 1
                continue
            if line.lstrip().startswith("#"):
                comment.append(line.lstrip().lstrip("#").strip())
                i += 1
                continue
            text = [line]
            while text[-1].endswith("\\") and i + 1 < len(lines):
                i += 1
                text.append(lines[i])
            i += 1
            trailing = re.search(r"\s#\s(.*)$", text[-1])
            claim = " ".join([*comment, trailing.group(1) if trailing else ""]).strip()
            found.append(Command("\n".join(text), self.line + 1 + start, claim, []))
            comment = []
        return found


@dataclass(frozen=True)
class Command:
    text: str
    line: int
    """Its line in the doc."""
    claim: str
    """Its comment, one line."""
    output: list[str]
    """In a console block, the output shown under it."""

    def exit_code(self) -> int | None:
        """The exit code its comment names (two different ones are a doc to fix)."""
        codes = set(re.findall(r"\bexit(?:s| code| with code)? \**(\d+)\b", self.claim))
        assert len(codes) <= 1, f"line {self.line}: the comment names exit codes {sorted(codes)}"
        return int(codes.pop()) if codes else None

    def quotes(self) -> list[str]:
        """What its comment quotes it prints."""
        return re.findall(r'"([^"]+)"', self.claim)


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
                           marker.group("why") if marker else None, match.group(1) == "console"))
    return found


ALL = [b for doc in DOCS for b in blocks(doc)]


def test_the_docs_have_shell_blocks_and_most_run() -> None:
    """The extraction finds the blocks (a change of fence style must not silently skip them all), and the claims
    in their comments."""
    assert {"README.md", "SECURITY.md", "CONTRIBUTING.md", "docs/cli.md", "docs/baselines.md",
            "docs/github-action.md", "docs/vertex.md", "examples/README.md", "examples/agent/README.md"} <= set(DOCS)
    assert len(ALL) >= 9
    assert sum(b.skip is None for b in ALL) >= 7
    run = [c for b in ALL if b.skip is None for c in b.commands()]
    assert len(run) >= 12
    assert sum(c.exit_code() is not None for c in run) >= 6
    assert sum(bool(c.quotes()) for c in run) >= 3
    assert sum(bool(c.output) for c in run) >= 1


def test_commands_and_claims_are_read_as_written() -> None:
    block = Block("d", 10, '# 1. Blocked, exit 1:\n#    "a b"\nevalbot x \\\n  --y   # "c…d"\n\n# gone\n\nls\n', None)
    first, second = block.commands()
    assert (first.text, first.line, first.exit_code(), first.quotes()) == ("evalbot x \\\n  --y   # \"c…d\"", 13, 1,
                                                                          ["a b", "c…d"])
    assert (second.text, second.claim, second.exit_code()) == ("ls", "", None)
    console = Block("d", 1, "$ evalbot run x \\\n    --z\nPASS 1.000\n...\n$ ls\n", None, console=True)
    run, ls = console.commands()
    assert (run.text, run.output, ls.text, ls.output) == ("evalbot run x \\\n    --z", ["PASS 1.000", "..."], "ls", [])


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


def _env() -> dict[str, str]:
    """Offline: no credentials; this environment's evalbot first on PATH."""
    env = {k: v for k, v in os.environ.items() if not k.endswith(("_API_KEY", "_BASE_URL")) and
           not k.startswith(("GOOGLE_", "OPENAI_", "AZURE_", "GITHUB_", "EVALBOT_"))}
    env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", "")
    return env


def run_block(text: str, workspace: Path) -> subprocess.CompletedProcess[str]:
    """Run a block's text with bash in ``workspace``, offline: no credentials, this environment's evalbot."""
    return subprocess.run(["bash", "-c", TRAP + text], cwd=workspace, env=_env(), capture_output=True, text=True,
                          timeout=300, check=False)


@dataclass(frozen=True)
class Ran:
    code: int | None
    """None: not reached (an earlier command stopped the block)."""
    output: str


def run_commands(commands: list[Command], workspace: Path, scratch: Path) -> tuple[int, str, list[Ran]]:
    """Run the commands in order in one bash (so a ``cd`` or a file one writes carries over), each one's exit code
    and output (stdout and stderr) kept in ``scratch``: the block's exit code, its stderr, and each command's."""
    script = [TRAP.replace('>&2', '>&9'), "exec 8>&1 9>&2"]
    for n, command in enumerate(commands):
        out = scratch / f"{n}.out"
        script += [f"exec >'{out}' 2>&1", command.text, f"echo $? > '{scratch}/{n}.rc'", "exec >&8 2>&9"]
    done = subprocess.run(["bash", "-c", "\n".join(script)], cwd=workspace, env=_env(), capture_output=True,
                          text=True, timeout=300, check=False)
    ran = []
    for n in range(len(commands)):
        rc, out = scratch / f"{n}.rc", scratch / f"{n}.out"
        ran.append(Ran(int(rc.read_text()) if rc.exists() else None,
                       out.read_text(encoding="utf-8", errors="replace") if out.exists() else ""))
    return done.returncode, done.stderr, ran


def fold(text: str) -> str:
    return " ".join(text.split())


def prints(output: str, quote: str) -> bool:
    """Whether ``output`` holds ``quote`` (whitespace folded; a ``…`` in the quote is any text). The docs quote a
    headline without its "evalbot: " ("✅ baseline created by this PR" for "### ✅ evalbot: baseline created by
    this PR"), so a quote may leave that out."""
    pattern = ".*?".join(re.escape(fold(part)) for part in quote.split("…"))
    return any(re.search(pattern, text) is not None
               for text in (fold(output), re.sub(r"(?<=\S) evalbot: ", " ", fold(output))))


DECIMAL = re.compile(r"\d+\.\d+(?:e[+-]\d+)?")


def shows(output: str, line: str) -> bool:
    """Whether ``output`` has a line that reads as ``line`` (whitespace folded, any decimal for a decimal)."""
    want = re.escape(fold(line))
    for number in set(DECIMAL.findall(fold(line))):
        want = want.replace(re.escape(number), DECIMAL.pattern)
    return any(re.fullmatch(want, fold(got)) for got in output.splitlines())


def claims_broken(command: Command, ran: Ran) -> list[str]:
    """What ``command``'s doc says that its run did not do."""
    broken = []
    code = command.exit_code()
    if code is not None and ran.code != code:
        broken.append(f"exit {ran.code}, the doc says exit {code}")
    broken += [f"does not print {quote!r}" for quote in command.quotes() if not prints(ran.output, quote)]
    broken += [f"does not print the line {line!r}" for line in command.output
               if line.strip() != "..." and not shows(ran.output, line)]
    return broken


@pytest.mark.parametrize("block", ALL, ids=[f"{b.doc}:{b.line}" for b in ALL])
def test_documented_commands_run_as_written(block: Block, workspace: Path, tmp_path_factory: pytest.TempPathFactory,
                                            ) -> None:
    if block.skip is not None:
        pytest.skip(f"{block.doc}:{block.line} is marked: {block.skip}")
    commands = block.commands()
    code, stderr, ran = run_commands(commands, workspace, tmp_path_factory.mktemp("ran"))
    where = {c.text: f"{block.doc}:{c.line}" for c in commands}
    last = next((r for r in reversed(ran) if r.code is not None), Ran(None, ""))
    assert code in (0, 1) and "EXIT " not in stderr, f"{block.doc}:{block.line}: exit {code}\n{stderr[-3000:]}" \
        f"\n{last.output[-3000:]}"
    broken = [f"{where[c.text]}: {c.text.splitlines()[0]}: {problem}\n{r.output[-2000:]}"
              for c, r in zip(commands, ran, strict=True) for problem in claims_broken(c, r)]
    assert not broken, "\n".join(broken)


def test_a_claim_the_command_does_not_keep_fails(workspace: Path, tmp_path: Path) -> None:
    """The checks are not vacuous: a wrong exit code, a missing quote or a changed output line is caught."""
    block = Block("d", 1, "# exit 1: \"no regressions\"\nevalbot compare --baseline examples/.evalbot/baseline.json "
                  "examples/evals --actuals examples/runs/main.json --judge-cache examples/judge-cache --judge-replay"
                  "\n# exit 0\necho ok   # \"ok\"\n", None)
    commands = block.commands()
    _, _, ran = run_commands(commands, workspace, tmp_path)
    assert claims_broken(commands[0], ran[0]) == ["exit 0, the doc says exit 1"]
    assert claims_broken(commands[1], ran[1]) == []
    assert claims_broken(Command("x", 1, 'exit 0, "no such text"', []), Ran(0, "text")) == \
        ["does not print 'no such text'"]
    shown = Command("x", 1, "", ["  latency   5.000       —       —     3", "..."])
    assert claims_broken(shown, Ran(0, "latency 5.000 0.000917 — 3\n")) == \
        ["does not print the line '  latency   5.000       —       —     3'"]
    timed = Command("x", 1, "", ["  latency   5.000 0.00092       —     3"])
    assert claims_broken(timed, Ran(0, "x\n  latency   5.000 0.00483 —  3\n")) == []
    assert claims_broken(timed, Ran(0, "latency 5.000 0.00483 — 4\n")) != []
    assert prints("evalbot: blocked (exit 1); comment written to c.md (5,390 characters)",
                  "evalbot: blocked (exit 1); comment written to c.md (…)")
    assert prints("### ✅ evalbot: 2 changes accepted by this PR's baseline update\n", "✅ 2 changes accepted")
    assert not prints("### ✅ evalbot: 2 changes accepted\n", "✅ 3 changes accepted")


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
