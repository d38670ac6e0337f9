"""Issue 37 row 12 end to end: what a baseline file may hold is bounded by what a run writes, and a custom metric's
stderr is bounded too.

- One case's ``votes`` list of 4 million entries (68 MB; a few hundred KB as git stores it) took 2.9 GB and 20 s
  (73 s here under load) to read; it is now refused before anything is decoded: exit 2 naming the file and the
  JSON pointer, in seconds and a few hundred MB (the file's own text).
- A score outside [0, 1] (``-3.0``) in main's baseline was compared as a score; it is refused at parse time with
  its pointer (exit 2).
- A custom metric printing 24 MB to stderr had it all written to a temporary file; under a 16 MB file-size limit
  (``ulimit -f``) the worker was killed by SIGXFSZ. Its stderr is now a pipe of which the gate keeps the last bytes.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from tests.e2e import conftest
from tests.e2e.conftest import Action, add_repo_metric, make_baseline, pull_request_event

VOTE = {"yes": 1, "no": 0}


def hostile(baseline_text: str, edit: str) -> str:
    data = json.loads(baseline_text)
    metric = data["eval_sets"]["shop"]["cases"]["refund"]["metrics"]["final_response_match_v2"]
    if edit == "votes":
        metric["votes"] = [VOTE] * 4_000_000
    else:
        metric["score"] = -3.0
    return json.dumps(data)


def test_a_votes_list_of_4_million_entries_is_refused_fast_with_its_pointer(
        action: Action, baseline_text: str) -> None:
    text = make_baseline(action, hostile(baseline_text, "votes"))
    assert len(text) > 60_000_000
    started = time.monotonic()
    run = action.run("pull_request", pull_request_event(), inputs={"actuals": "actuals/good.json"})
    assert time.monotonic() - started < 30
    assert run.code == 2, run.stdout[-3000:] + run.stderr[-3000:]
    said = run.stdout + run.stderr
    assert ".evalbot/baseline.json:/eval_sets/shop/cases/refund/metrics/final_response_match_v2/votes: a list of " \
        in said, said[-3000:]
    assert "more than a run writes there (at most 10,000 votes per criterion of a case" in said
    assert "Traceback" not in said


def test_a_score_outside_0_1_in_mains_baseline_is_refused_with_its_pointer(action: Action, baseline_text: str) -> None:
    make_baseline(action, hostile(baseline_text, "score"))
    run = action.run("pull_request", pull_request_event(), inputs={"actuals": "actuals/good.json"})
    assert run.code == 2, run.stdout[-3000:] + run.stderr[-3000:]
    said = run.stdout + run.stderr
    assert ".evalbot/baseline.json:/eval_sets/shop/cases/refund/metrics/final_response_match_v2/score" in said
    assert "greater than or equal to 0" in said


def test_the_honest_baseline_still_compares(action: Action, baseline_text: str) -> None:
    make_baseline(action, baseline_text)
    run = action.run("pull_request", pull_request_event(), inputs={"actuals": "actuals/good.json"})
    assert run.code == 0, run.stdout[-3000:] + run.stderr[-3000:]


LOUD = """
import sys

def tools_used(instance):
    sys.stderr.write("x" * (1 << 20) * 24 + "\\nthe metric's last words\\n")
    sys.stderr.flush()
    return {"tools_used": 1.0, "explanation": "loud"}
"""


@pytest.mark.skipif(os.name != "posix", reason="ulimit -f is POSIX")
def test_a_custom_metric_printing_24_mb_to_stderr_stores_none_of_it(
        action: Action, baseline_text: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Under a 16 MB file-size limit on the whole Action: the worker's stderr is not a file, so the metric answers."""
    wrapper = tmp_path / "limited-python"
    wrapper.write_text(f"#!/bin/sh\nulimit -f 16384\nexec {conftest.PYTHON} \"$@\"\n", encoding="utf-8")
    wrapper.chmod(0o755)
    monkeypatch.setattr(conftest, "PYTHON", str(wrapper))
    add_repo_metric(action, LOUD)
    make_baseline(action, baseline_text)
    run = action.run("pull_request", pull_request_event(), inputs={"actuals": "actuals/good.json"})
    report = json.loads((action.workspace / ".evalbot-out" / "report.json").read_text(encoding="utf-8"))
    statuses = {c["metrics"]["tools_used"]["status"] for c in report["eval_sets"][0]["cases"]}
    assert statuses == {"passed"}, (statuses, run.stdout[-2000:])
    assert "SIGXFSZ" not in run.stdout + json.dumps(report)
