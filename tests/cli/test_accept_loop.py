"""The accept loop end to end, as a user runs it: ``evalbot`` as a process in a real git repository, a scripted agent
whose answers and timings vary from run to run, main refreshing its baseline while a pull request waits.

A branch makes one intended change (the refund flow notifies the customer; its expected trajectory is updated) and
one accidental regression (a wrong argument when tracking a package). Accepting only the intended change keeps the
accident blocking; a whole refresh passes but names the regression; an update written before main's refreshes still
applies; a stale one gets one line whose command, run verbatim, fixes it; ``git merge main`` with the merge driver
ends cleanly."""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.fakes.builders import case, eval_set, inv

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")

ROOT = Path(__file__).resolve().parents[2]
BASE = ".evalbot/baseline.json"
AGENT = "shop_agent:agent"

REFUND = [("get_order", {"id": "A17"}), ("refund", {"id": "A17", "amount": 25})]
NOTIFY = ("notify", {"id": "A17"})
TRACK = [("track", {"id": "B42"})]
STATUS = [("get_order", {"id": "C9"})]

AGENT_CODE = '''\
import random
import time

REFUND = {refund}
TRACK = {track}
STATUS = {status}


def _calls(calls):
    return [{{"tool_name": name, "tool_input": args}} for name, args in calls]


def agent(prompt):
    time.sleep(random.random() / 500)  # 0-2 ms: the seconds differ on every run
    text = prompt.lower()
    if "refund" in text:  # the same words, cased and punctuated differently from run to run
        return {{"response": random.choice(["Refunded 25 dollars.", "refunded 25 dollars!"]),
                "predicted_trajectory": _calls(REFUND)}}
    if "where" in text:
        return {{"response": random.choice(["It is in Lyon.", "it is in Lyon"]), "predicted_trajectory": _calls(TRACK)}}
    return {{"response": random.choice(["Order C9 shipped.", "order C9 shipped"]),
            "predicted_trajectory": _calls(STATUS)}}
'''


def write_agent(proj: Path, *, refund: list = REFUND, track: list = TRACK, status: list = STATUS) -> None:  # type: ignore[type-arg]
    (proj / "shop_agent.py").write_text(AGENT_CODE.format(refund=refund, track=track, status=status),
                                        encoding="utf-8")


def write_evals(proj: Path, *, refund: list = REFUND) -> None:  # type: ignore[type-arg]
    (proj / "evals").mkdir(exist_ok=True)
    (proj / "evals" / "test_config.json").write_text(json.dumps({"criteria": {
        "tool_trajectory_avg_score": 1.0, "response_match_score": 0.5, "latency": 5.0}}), encoding="utf-8")
    (proj / "evals" / "shop.evalset.json").write_text(json.dumps(eval_set(
        "shop",
        case("refund", inv("refund order A17", "Refunded 25 dollars.", refund)),
        case("track_package", inv("where is B42", "It is in Lyon.", TRACK)),
        case("order_status", inv("status of C9", "Order C9 shipped.", STATUS)),
    ), indent=2), encoding="utf-8")


def git(proj: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", "-c", "commit.gpgsign=false", *args],
                          cwd=proj, capture_output=True, text=True, check=False)


def evalbot(proj: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``evalbot ARGS`` as a process in ``proj`` (this checkout's evalbot)."""
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(proj), "PYTHONPATH": str(ROOT),
           "PYTHONDONTWRITEBYTECODE": "1"}
    return subprocess.run([sys.executable, "-m", "evalbot.cli", *args], cwd=proj, env=env, capture_output=True,
                          text=True, timeout=300, check=False)


def verbatim(proj: Path, command: str) -> subprocess.CompletedProcess[str]:
    """A command evalbot printed, run as printed (``evalbot`` is this checkout's)."""
    argv = shlex.split(command)
    assert argv[0] == "evalbot", command
    return evalbot(proj, *argv[1:])


COMPARE = ("compare", "--baseline", f"main:{BASE}", "evals", "--agent", AGENT)


def headline(result: subprocess.CompletedProcess[str]) -> str:
    return result.stdout.splitlines()[1]


def what_to_do(comment: str) -> str:
    """The selective command the comment's "What to do" offers first."""
    steps = comment.split("**What to do**", 1)[1]
    first = steps.strip().splitlines()[0]
    assert first.startswith("- If these changes are intended, accept exactly them"), steps
    found = re.search(r"`(evalbot baseline [^`]+)`", first)
    assert found is not None, first
    return found.group(1)


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """main: the agent, its eval set and the baseline written by `evalbot baseline` (committed)."""
    proj = tmp_path / "shop"
    proj.mkdir()
    write_agent(proj)
    write_evals(proj)
    assert git(proj, "init", "-q", "-b", "main").returncode == 0
    made = evalbot(proj, "baseline", "evals", "--agent", AGENT)
    assert made.returncode == 0, made.stderr
    assert "--output: .evalbot/baseline.json" in made.stderr or (proj / BASE).is_file()
    git(proj, "add", "-A")
    assert git(proj, "commit", "-q", "-m", "main").returncode == 0, "commit"
    return proj


def branch_with_changes(proj: Path, *, accident: bool = True) -> None:
    """The pull request's branch: the intended refund change (agent and expected trajectory), and the accidental
    regression when ``accident``."""
    assert git(proj, "checkout", "-q", "-b", "feature").returncode == 0
    write_agent(proj, refund=[*REFUND, NOTIFY], track=[("track", {"id": "b42"})] if accident else TRACK)
    write_evals(proj, refund=[*REFUND, NOTIFY])
    git(proj, "add", "-A")
    assert git(proj, "commit", "-q", "-m", "notify on refund").returncode == 0


def entries(text: str) -> dict[str, object]:
    """A baseline's entries by name (header fields, and each case as ``shop/CASE``)."""
    data = json.loads(text)
    out: dict[str, object] = {k: v for k, v in data.items() if k != "eval_sets"}
    for key, es in data["eval_sets"].items():
        out[f"{key}:set"] = {k: v for k, v in es.items() if k != "cases"}
        out.update({f"{key}/{name}": c for name, c in es["cases"].items()})
    return out


def test_accepting_the_intended_change_only_keeps_the_accident_blocking(repo: Path) -> None:
    proj = repo
    main_file = (proj / BASE).read_text(encoding="utf-8")
    branch_with_changes(proj)
    blocked = evalbot(proj, *COMPARE, "--comment", "comment.md")
    assert blocked.returncode == 1, blocked.stdout + blocked.stderr
    comment = (proj / "comment.md").read_text(encoding="utf-8")
    command = what_to_do(comment)
    assert "--accept shop/track_package" in command and "--accept shop/refund" in command
    assert f"--previous main:{BASE}" in command

    # only the intended change: the previous baseline is the base branch's, every other entry stays main's
    selective = evalbot(proj, "baseline", "evals", "--agent", AGENT, "--accept", "shop/refund")
    assert selective.returncode == 0, selective.stderr
    assert f"--previous: main:{BASE} (the base branch's baseline" in selective.stderr
    assert "passed → failed" not in selective.stderr
    written = entries((proj / BASE).read_text(encoding="utf-8"))
    before = entries(main_file)
    assert [k for k in before if before[k] != written.get(k)] == ["shop/refund"]
    assert json.loads(json.dumps(written["shop/refund"]))["history"] == "P"  # a new definition: started afresh
    still = evalbot(proj, *COMPARE)
    assert still.returncode == 1, still.stdout
    assert headline(still).startswith("### ❌ evalbot: blocked: 1 regressed · ")
    assert "accepted by this PR's baseline update: 1 definition change" in headline(still)
    assert "<b>shop / track_package</b>" in still.stdout

    # the whole refresh: passes, but says it accepts a regression, and warned when it was written
    whole = evalbot(proj, "baseline", "evals", "--agent", AGENT)
    assert whole.returncode == 0, whole.stderr
    assert "evalbot: warning: shop/track_package: passed → failed recorded" in whole.stderr
    accepted = evalbot(proj, *COMPARE)
    assert accepted.returncode == 0, accepted.stdout
    assert headline(accepted) == ("### ✅ evalbot: accepted by this PR's baseline update: 1 regression "
                                  "(shop/track\\_package) · 1 definition change")
    assert "<b>shop / track_package</b>" in accepted.stdout and "track" in accepted.stdout  # its trajectory shown

    # the comment's command, run verbatim, accepts both (drop the accident from it to keep it blocking)
    git(proj, "checkout", "-q", "--", BASE)
    ran = verbatim(proj, command)
    assert ran.returncode == 0, ran.stderr
    assert "shop/track_package: passed → failed recorded" in ran.stderr
    assert evalbot(proj, *COMPARE).returncode == 0


def changed_lines(proj: Path, old: str, new: str) -> list[str]:
    diff = git(proj, "diff", "--unified=0", old, new, "--", BASE).stdout
    return [line[1:].strip() for line in diff.splitlines()
            if line[:1] in "+-" and not line.startswith(("+++", "---"))]


def test_main_moves_and_the_update_still_applies_merges_and_is_fixed_when_stale(repo: Path) -> None:
    proj = repo
    branch_with_changes(proj, accident=False)
    made = evalbot(proj, "baseline", "evals", "--agent", AGENT, "--accept", "shop/refund")
    assert made.returncode == 0, made.stderr
    git(proj, "commit", "-q", "-am", "accept the refund change")
    assert evalbot(proj, *COMPARE).returncode == 0

    # main refreshes its baseline three times (as the push workflow does); the same outcomes each time
    git(proj, "checkout", "-q", "main")
    for i in range(3):
        refreshed = evalbot(proj, "baseline", "evals", "--agent", AGENT, "--commit", f"{i + 1:040x}",
                            "--created-at", f"2027-01-0{i + 1}T00:00:00+00:00")
        assert refreshed.returncode == 0 and "passed → failed" not in refreshed.stderr, refreshed.stderr
        git(proj, "commit", "-q", "-am", f"refresh {i + 1}")
    lines = changed_lines(proj, "HEAD~1", "HEAD")
    per_case = [line for line in lines if line.startswith('"history"')]
    assert len(per_case) == 2 * 3  # one line per case, old and new
    assert all(line.startswith(('"history"', '"trend"', '"commit"', '"created_at"', '"mean"', '"p95"'))
               for line in lines), lines
    assert len([line for line in lines if line.startswith('"trend"')]) == 2 * 2  # one per criterion with a mean

    # the update written before those refreshes still applies
    git(proj, "checkout", "-q", "feature")
    assert evalbot(proj, *COMPARE).returncode == 0

    # git merge main: the driver merges the baseline (main's entries, the branch's accepted one, histories continued)
    (proj / ".gitattributes").write_text(f"{BASE} merge=evalbot\n", encoding="utf-8")
    driver = f"{shlex.quote(sys.executable)} -m evalbot.cli baseline --merge-driver %O %A %B"
    git(proj, "config", "merge.evalbot.driver", driver)
    merged = subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", "merge", "-q", "--no-edit", "main"],
                            cwd=proj, capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(ROOT)},
                            check=False)
    assert merged.returncode == 0 and "CONFLICT" not in merged.stdout + merged.stderr, merged.stdout + merged.stderr
    data = json.loads((proj / BASE).read_text(encoding="utf-8"))
    main_data = json.loads(git(proj, "show", f"main:{BASE}").stdout)
    assert data["commit"] == main_data["commit"] and data["eval_sets"]["shop"]["cases"]["track_package"] == \
        main_data["eval_sets"]["shop"]["cases"]["track_package"]
    assert data["eval_sets"]["shop"]["cases"]["refund"]["history"] == "P"  # its new definition: afresh
    after_merge = evalbot(proj, *COMPARE)
    assert after_merge.returncode == 0, after_merge.stdout
    assert "accepted by this PR's baseline update: 1 definition change" in headline(after_merge)

    # main changes the same entry (order_status now fails there, and main accepts it): the update is stale
    git(proj, "checkout", "-q", "main")
    write_agent(proj, status=[("get_order", {"id": "C10"})])
    main_change = evalbot(proj, "baseline", "evals", "--agent", AGENT, "--commit", "9" * 40)
    assert "shop/order_status: passed → failed recorded" in main_change.stderr
    git(proj, "commit", "-q", "-am", "main: order status changes")
    git(proj, "checkout", "-q", "feature")
    stale = evalbot(proj, *COMPARE)
    assert stale.returncode == 1, stale.stdout
    assert "this PR's baseline update is stale (shop/order\\_status: main changed it since)" in headline(stale)
    (line,) = [x for x in stale.stderr.splitlines() if "stale:" in x]
    assert line.startswith("evalbot: stale: main's baseline changed shop/order_status since this update was written")
    fix = line.split(f"rewrite it on main:{BASE}: ", 1)[1]
    assert f"--previous main:{BASE}" in fix and "--accept shop/order_status" in fix
    fixed = verbatim(proj, fix)
    assert fixed.returncode == 0, fixed.stderr
    again = evalbot(proj, *COMPARE)
    assert again.returncode == 0, again.stdout + again.stderr
