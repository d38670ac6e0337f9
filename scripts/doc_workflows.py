"""The GitHub Actions workflows shown in the docs: found, written out for the linters, and held to our conventions.

    python scripts/doc_workflows.py --check    # every convention a workflow breaks, "DOC:LINE: problem"; exit 1 if any
    python scripts/doc_workflows.py OUT_DIR    # write each one as OUT_DIR/<doc>-<n>.yml for actionlint and zizmor,
                                               # with `uses: evalbot/evalbot@<ref>` pointed at the local action.yml

Every ```yaml block of README.md, SECURITY.md, CONTRIBUTING.md, examples/**/*.md and docs/**/*.md is a complete
workflow, and so is every ```diff block that starts with ``--- `` and ``+++ `` header lines: a variant written as a delta
to the first ```yaml block of its page (the canonical workflow), applied here hunk by hunk (each hunk's context and
``-`` lines must appear, in order, in the canonical text; they are replaced by its context and ``+`` lines). Each:

- the Action is referenced one way only, ``evalbot/evalbot@v<major>`` (the tag the release workflow moves for the
  version in pyproject.toml), also in ``pip install "evalbot @ git+https://github.com/evalbot/evalbot@..."``;
- its ``with:`` keys are inputs of action.yml and its ``mode`` is one the Action knows;
- an exit code is tolerated with ``|| [ $? -eq 1 ]`` only (never ``|| true``, ``|| :``, ``set +e`` or
  ``continue-on-error``, which would hide exit 2, an invalid input);
- no placeholder (``# ...``, "run your agent here"): a job that scores ``actuals`` runs the agent in an earlier step
  (``adk eval`` or ``evalbot run ... --record``) that produces them;
- fork safety: no ``pull_request_target``, ``permissions: {}`` on top and granted per job, every checkout with
  ``persist-credentials: false`` and never of the PR's head in a privileged run, and the judge cache's signing key
  given only to the Action, never to a step that runs the PR's code.
"""

from __future__ import annotations

import re
import sys
import tomllib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ruamel.yaml import YAML

ROOT = Path(__file__).resolve().parents[1]
FENCE = re.compile(r"^```(ya?ml|diff)[ \t]*\n(.*?)^```", re.MULTILINE | re.DOTALL)
ACTION_USES = re.compile(r"\b[\w.-]+/evalbot@[\w.-]+")
LOCAL_USES = re.compile(r"(uses:\s*)[\w.-]+/evalbot@[\w.-]+")
PIP_REF = re.compile(r"git\+https://github\.com/([\w.-]+/evalbot)@([\w.-]+)")
TOLERATED = "[ $? -eq 1 ]"
OR_ELSE = re.compile(r"\|\|\s*(?P<rest>[^\n;&|]*)")
PLACEHOLDER = re.compile(r"(?im)^\s*#\s*\.\.\.|run (?:your|the) agent here|<your[ -]agent>")
AGENT_RUN = re.compile(r"\badk eval\b|\bevalbot run\b[^\n]*(?:\\\n[^\n]*)*--record\b")
STEP_OUTPUT = re.compile(r"^\$\{\{\s*steps\.([\w-]+)\.outputs\.[\w-]+\s*\}\}$")
SECOND_STAGE_MODES = ("workflow_run", "merge")


@dataclass(frozen=True)
class Block:
    doc: str
    line: int
    text: str
    error: str | None = None
    """Why a delta could not be applied to its page's canonical workflow (then ``text`` is empty)."""

    @property
    def where(self) -> str:
        return f"{self.doc}:{self.line}"


def docs(root: Path = ROOT) -> list[str]:
    """The documents whose workflows are checked: the README, SECURITY.md, CONTRIBUTING.md, the examples' and
    docs/'s Markdown."""
    found = [p for pattern in ("examples/**/*.md", "docs/**/*.md") for p in sorted(root.glob(pattern))]
    top = [name for name in ("SECURITY.md", "CONTRIBUTING.md") if (root / name).exists()]
    return ["README.md", *top, *(p.relative_to(root).as_posix() for p in found)]


def apply_delta(base: str, delta: str) -> str:
    """``base`` with the hunks of ``delta`` (a unified diff without line numbers) applied in order.

    ValueError naming the hunk when its context and ``-`` lines are not found in order in ``base``."""
    lines = base.split("\n")
    body = delta.split("\n")
    while body and body[0].startswith(("--- ", "+++ ")):
        body.pop(0)
    hunks: list[list[str]] = [[]]
    for line in body:
        if line.startswith("@@"):
            hunks.append([])
        elif line.strip() or hunks[-1]:
            hunks[-1].append(line)
    cursor = 0
    for n, hunk in enumerate(h for h in hunks if h):
        while hunk and not hunk[-1].strip():
            hunk.pop()
        bad = [line for line in hunk if line and line[0] not in " +-"]
        if bad:
            raise ValueError(f"hunk {n + 1}: {bad[0]!r} starts with none of ' ', '+', '-'")
        old = [line[1:] for line in hunk if not line or line[0] in " -"]
        new = [line[1:] for line in hunk if not line or line[0] in " +"]
        at = next((i for i in range(cursor, len(lines) - len(old) + 1) if lines[i : i + len(old)] == old), None)
        if at is None or not old:
            raise ValueError(f"hunk {n + 1}: its context and - lines are not in the canonical workflow (in order): "
                             f"{(old or [''])[0].strip()!r}")
        lines[at : at + len(old)] = new
        cursor = at + len(new)
    return "\n".join(lines)


def blocks(root: Path = ROOT) -> list[Block]:
    """Every workflow of the docs, with the line of its fence: each ```yaml block, and each ```diff block with
    ``---``/``+++`` headers applied to the first ```yaml block of its page."""
    out = []
    for doc in docs(root):
        text = (root / doc).read_text(encoding="utf-8")
        canonical: str | None = None
        for m in FENCE.finditer(text):
            line = text[: m.start()].count("\n") + 1
            if m.group(1) != "diff":
                canonical = m.group(2) if canonical is None else canonical
                out.append(Block(doc, line, m.group(2)))
            elif m.group(2).startswith("--- "):
                try:
                    if canonical is None:
                        raise ValueError("a delta before any ```yaml workflow on its page")
                    out.append(Block(doc, line, apply_delta(canonical, m.group(2))))
                except ValueError as exc:
                    out.append(Block(doc, line, "", f"the delta does not apply: {exc}"))
    return out


def action_ref(root: Path = ROOT) -> str:
    """``evalbot/evalbot@v<major>``: the tag the release workflow moves for pyproject's version."""
    version = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))["project"]["version"]
    return f"evalbot/evalbot@v{str(version).split('.')[0]}"


def action_inputs(root: Path = ROOT) -> set[str]:
    return set(YAML(typ="safe").load((root / "action.yml").read_text(encoding="utf-8"))["inputs"])


def load(block: Block) -> dict[str, Any] | None:
    try:
        data = YAML(typ="safe").load(block.text)
    except Exception:  # any parse error is reported as one problem of that block
        return None
    return data if isinstance(data, dict) else None


def triggers(flow: dict[str, Any]) -> list[str]:
    """The workflow's events (YAML 1.1 readers load the key ``on`` as True)."""
    on = flow.get("on", flow.get(True))
    if isinstance(on, str):
        return [on]
    return [str(name) for name in on] if isinstance(on, (dict, list)) else []


def steps(flow: dict[str, Any]) -> Iterator[tuple[str, int, dict[str, Any]]]:
    for job_id, job in (flow.get("jobs") or {}).items():
        for index, step in enumerate((job or {}).get("steps") or []):
            if isinstance(step, dict):
                yield str(job_id), index, step


def is_evalbot(step: dict[str, Any]) -> bool:
    return bool(ACTION_USES.fullmatch(str(step.get("uses", "")).split()[0] if step.get("uses") else ""))


def shell_problems(script: str) -> list[str]:
    """What in a ``run:`` script hides an exit code or stands in for a real command."""
    found = []
    for match in OR_ELSE.finditer(script):
        if match.group("rest").strip() != TOLERATED:
            found.append(f"`|| {match.group('rest').strip()}` tolerates every exit code (exit 2, an invalid input, "
                         f"included): write `|| {TOLERATED}`")
    if re.search(r"(?m)^\s*set\s+\+e\b", script):
        found.append("`set +e` hides exit codes: tolerate exit 1 only, with `|| [ $? -eq 1 ]`")
    if PLACEHOLDER.search(script) or re.search(r"(?m)\s\.\.\.(\s|$)", script):
        found.append("a placeholder in a run step: show the real command")
    return found


def problems(block: Block, *, ref: str, inputs: set[str], modes: tuple[str, ...]) -> list[str]:
    """Every convention ``block`` breaks, each as "DOC:LINE: problem"."""
    if block.error is not None:
        return [f"{block.where}: {block.error}"]
    flow = load(block)
    if flow is None or "jobs" not in flow or not triggers(flow):
        return [f"{block.where}: not a complete workflow (YAML with `on:` and `jobs:`)"]
    found: list[str] = []
    if PLACEHOLDER.search(block.text):
        found.append("a placeholder (`# ...`): show the step that really runs")
    if "pull_request_target" in triggers(flow):
        found.append("pull_request_target runs with secrets and a write token: use pull_request (and the "
                     "workflow_run second stage for forks)")
    if flow.get("permissions") != {}:
        found.append("top-level `permissions` must be `{}` (grant each job what it needs)")
    for job_id, job in (flow.get("jobs") or {}).items():
        if not isinstance(job, dict) or "permissions" not in job:
            found.append(f"job {job_id}: no `permissions` (least privilege: grant them per job)")
    privileged = bool({"workflow_run", "pull_request_target"} & set(triggers(flow)))
    produced: dict[str, set[str]] = {}
    for job_id, _, step in steps(flow):
        name = f"job {job_id}, step {step.get('name') or step.get('uses') or step.get('id') or '(run)'}"
        uses = str(step.get("uses", ""))
        with_ = step.get("with") or {}
        if step.get("continue-on-error") not in (None, False):
            found.append(f"{name}: `continue-on-error` hides every exit code (exit 2 included)")
        if uses.startswith("actions/checkout@"):
            if with_.get("persist-credentials") is not False:
                found.append(f"{name}: actions/checkout needs `persist-credentials: false`")
            if privileged and "ref" in with_:
                found.append(f"{name}: a privileged run must not check out the PR's code (`ref:`)")
        for other in ACTION_USES.findall(uses):
            if other != ref:
                found.append(f"{name}: `uses: {other}`: reference the Action as `{ref}`")
        script = str(step.get("run", ""))
        found += [f"{name}: {p}" for p in shell_problems(script)]
        for repo, tag in PIP_REF.findall(script):
            if f"{repo}@{tag}" != ref:
                found.append(f"{name}: installs {repo}@{tag}: use the Action's reference, {ref}")
        env = " ".join(str(v) for v in (step.get("env") or {}).values())
        if "EVALBOT_JUDGE_CACHE_KEY" in env or ("EVALBOT_JUDGE_CACHE_KEY" in script):
            found.append(f"{name}: the judge cache's signing key goes to the Action only, never to a step that runs "
                         "the PR's code")
        if AGENT_RUN.search(script):
            produced.setdefault(job_id, set()).update({str(step.get("id", "")), *re.findall(r"--record\s+(\S+)",
                                                                                            script)})
        if not is_evalbot(step):
            continue
        unknown = sorted(set(with_) - inputs)
        if unknown:
            found.append(f"{name}: {', '.join(unknown)} not inputs of action.yml")
        mode = str(with_.get("mode", "auto"))
        if mode not in modes:
            found.append(f"{name}: mode {mode!r} is not one of {', '.join(modes)}")
        granted = (flow.get("jobs") or {}).get(job_id, {}).get("permissions")
        if mode == "workflow_run" and not (isinstance(granted, dict) and granted.get("statuses") == "write"):
            found.append(f"{name}: mode workflow_run sets the `evalbot` commit status, the merge gate of a fork's "
                         "pull request: its job needs `statuses: write`")
        actuals = str(with_.get("actuals", "")).strip()
        if actuals and mode not in SECOND_STAGE_MODES:
            output = STEP_OUTPUT.match(actuals)
            made = produced.get(job_id, set())
            wanted = {output.group(1)} if output else {a.strip() for a in re.split(r"[\n,]", actuals) if a.strip()}
            if not wanted <= made:
                found.append(f"{name}: actuals {actuals!r} are not produced by an earlier step of the job that runs "
                             "the agent (`adk eval` with its results listed in a step output, or `evalbot run ... "
                             "--record FILE`)")
    return [f"{block.where}: {p}" for p in found]


def check(root: Path = ROOT) -> list[str]:
    from evalbot.action.settings import MODES  # the modes the Action accepts

    ref, inputs = action_ref(root), action_inputs(root)
    return [p for block in blocks(root) for p in problems(block, ref=ref, inputs=inputs, modes=MODES)]


def write_local(out: Path, root: Path = ROOT) -> list[Path]:
    """Each workflow as ``out/<doc>-<n>.yml`` with the Action's reference pointed at ``./`` (action.yml beside)."""
    written = []
    for n, block in enumerate(blocks(root), 1):
        slug = re.sub(r"[^a-z0-9]+", "-", block.doc.lower()).strip("-")
        path = out / f"{slug}-{n}.yml"
        path.write_text(LOCAL_USES.sub(r"\1./", block.text), encoding="utf-8")
        written.append(path)
    return written


def main(argv: list[str]) -> int:
    if argv == ["--check"]:
        found = check()
        print("\n".join(found) if found else f"{len(blocks())} workflow(s) in the docs follow the conventions")
        return 1 if found else 0
    if len(argv) == 1:
        written = write_local(Path(argv[0]))
        print(f"{len(written)} workflow(s) from {', '.join(docs())}")
        return 0
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
