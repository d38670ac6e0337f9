"""Issue 24, item 6 end to end: what a PR's config or the base commit's template asks for is bounded.

``num_samples`` of 20,000 (or 2,000,000) in the PR's config made 14,174 judge requests before the deadline (or
1.8 GB and a segfault); a base-commit comment template with nested ``range(100000)`` loops rendered for minutes.
Now the first is a config error naming the file and the JSON path (exit 2, no judge request), the second a clean
template error (exit 2) within the render's time and work budget."""

from __future__ import annotations

import json
import time

import pytest

from tests.e2e.conftest import CONFIG, Action, base_commit_template, make_baseline, pull_request_event

NESTED_RANGES = "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}done"


@pytest.mark.parametrize("samples", [20_000, 2_000_000])
def test_num_samples_beyond_64_is_a_config_error_before_any_judge_request(
        action: Action, baseline_text: str, samples: int) -> None:
    make_baseline(action, baseline_text)
    path = action.workspace / CONFIG
    data = json.loads(path.read_text(encoding="utf-8"))
    data["criteria"]["final_response_match_v2"]["judge_model_options"]["num_samples"] = samples
    path.write_text(json.dumps(data), encoding="utf-8")
    started = time.monotonic()
    run = action.run("pull_request", pull_request_event(), inputs={"actuals": "actuals/good.json"})
    assert time.monotonic() - started < 60
    assert run.code == 2, run.stdout + run.stderr
    assert action.gemini.requests == []
    text = run.stdout + "\n".join(c.body for c in action.github.comments_on(7))
    assert "evals/test_config.json" in text and "/criteria/final_response_match_v2" in text
    assert "num_samples" in text and "64" in text


def test_a_base_commit_template_with_nested_ranges_fails_cleanly(action: Action, baseline_text: str) -> None:
    """The template is the base commit's (trusted not to escape the sandbox, not to be cheap): exit 2 with the
    limit named, in seconds rather than minutes, and no comment rendered from it."""
    make_baseline(action, baseline_text)
    base_commit_template(action, "slow.md.j2", NESTED_RANGES)
    started = time.monotonic()
    run = action.run("pull_request", pull_request_event(), inputs={"actuals": "actuals/good.json"})
    assert time.monotonic() - started < 60, "the template rendered for too long"
    assert run.code == 2, run.stdout + run.stderr
    errors = [a for a in run.annotations() if "comment template" in a]
    assert errors and "range() would yield more than 1,000,000 items" in errors[0], run.stdout
    assert "Traceback" not in run.stdout + run.stderr
    assert all("done" not in c.body for c in action.github.comments_on(7))
