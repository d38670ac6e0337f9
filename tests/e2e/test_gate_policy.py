"""The gate cannot be set or escaped by the pull request: templates are data-only and confined, the policy and the
template come from the base commit, and a PR that changes them is told so."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evalbot.errors import RetryPolicy
from tests.e2e.conftest import (
    BASE_SHA,
    BASELINE,
    CONFIG,
    Action,
    base_commit_template,
    event,
    make_baseline,
    pull_request_event,
    with_evalbot_section,
)
from tests.fakes.fake_github import APP_TOKEN

JUDGE_KEY = "fake-gemini-key"


def pickle_template(marker: Path) -> str:
    """The published escape: a pydantic method reached from the template context unpickles a shell command."""
    payload = f"cos\\nsystem\\n(S'touch {marker}'\\ntR."
    return (
        '{{ c.gate.parse_raw("' + payload + '", content_type="application/pickle", allow_pickle=True) }}'
        '{{ c.report.parse_raw("' + payload + '", content_type="application/pickle", allow_pickle=True) }}'
    )


def nothing_leaked(action: Action, *texts: str) -> None:
    """Neither secret (outside the runner's own ``::add-mask::`` command) nor the environment was written."""
    for text in texts + tuple(c.body for c in action.github.comments.values()):
        text = "\n".join(line for line in text.splitlines() if not line.startswith("::add-mask::"))
        assert APP_TOKEN not in text and JUDGE_KEY not in text and "GITHUB_API_URL" not in text


def test_pickle_template_from_the_base_commit_runs_no_code(
    action: Action, baseline_text: str, tmp_path: Path
) -> None:
    """Even a template on main cannot call methods: the context is plain data, so the payload is an undefined
    name (exit 2) and the command never runs."""
    make_baseline(action, baseline_text)
    marker = tmp_path / "pwned"
    template = pickle_template(marker)
    base_commit_template(action, "evil.md.j2", template)
    run = action.run("pull_request", pull_request_event(), inputs={"actuals": "actuals/good.json"})
    assert run.code == 2, run.stdout + run.stderr
    assert not marker.exists()
    assert any("comment template" in a and "parse_raw" in a for a in run.annotations()), run.stdout
    nothing_leaked(action, run.stdout, run.stderr, run.summary)


def test_pickle_template_input_runs_no_code(action: Action, baseline_text: str, tmp_path: Path) -> None:
    """The same payload through the comment-template input (present in the PR and at the base commit)."""
    make_baseline(action, baseline_text)
    marker = tmp_path / "pwned"
    template = pickle_template(marker)
    (action.workspace / "evil.md.j2").write_text(template, encoding="utf-8")
    action.github.put_file("evil.md.j2", template, ref=BASE_SHA)
    run = action.run(
        "pull_request", pull_request_event(), inputs={"actuals": "actuals/good.json", "comment-template": "evil.md.j2"}
    )
    assert run.code == 2, run.stdout + run.stderr
    assert not marker.exists() and action.github.comments_on(7) == []
    nothing_leaked(action, run.stdout, run.stderr, run.summary)


@pytest.mark.fresh_process  # /proc/self/environ must hold the run's secrets, as only a fresh process's does
def test_environ_template_path_in_the_pr_config_is_refused(action: Action, baseline_text: str) -> None:
    """``comment_template: /proc/self/environ`` in the PR's config: input error naming the setting, nothing read."""
    make_baseline(action, baseline_text)
    with_evalbot_section(action, {"comment_template": "/proc/self/environ"})
    run = action.run("pull_request", pull_request_event(), inputs={"actuals": "actuals/good.json"})
    assert run.code == 2, run.stdout + run.stderr
    assert run.outputs["verdict"] == "invalid"
    refused = [a for a in run.annotations() if "/evalbot/comment_template" in a]
    assert refused and "refused" in refused[0], run.stdout
    assert action.github.comments_on(7) == []
    nothing_leaked(action, run.stdout, run.stderr, run.summary)


@pytest.mark.fresh_process  # /proc/self/environ must hold the run's secrets, as only a fresh process's does
def test_environ_template_input_is_refused(action: Action, baseline_text: str) -> None:
    """The comment-template input pointing outside the workspace (absolute or ``..``) is an input error."""
    make_baseline(action, baseline_text)
    for path in ("/proc/self/environ", "../../../../proc/self/environ"):
        run = action.run(
            "pull_request", pull_request_event(), inputs={"actuals": "actuals/good.json", "comment-template": path}
        )
        assert run.code == 2, run.stdout + run.stderr
        assert any("input comment-template" in a and "refused" in a for a in run.annotations()), run.stdout
        nothing_leaked(action, run.stdout, run.stderr, run.summary)
    assert action.github.comments_on(7) == []


def test_pr_cannot_set_fail_on_never(action: Action, baseline_text: str) -> None:
    """A PR whose config says ``fail_on: never`` is still blocked by main's policy, and the comment says the PR
    changes the gate policy (taking effect after merge)."""
    make_baseline(action, baseline_text)
    original = with_evalbot_section(action, {"fail_on": "never", "tolerance": 0.5})
    action.github.put_file(CONFIG, original, ref=BASE_SHA)
    run = action.run("pull_request", pull_request_event(), inputs={"actuals": "actuals/regressed.json"})
    assert run.code == 1, run.stdout + run.stderr
    assert run.outputs["verdict"] == "blocked"
    body = action.github.comments_on(7)[0].body
    assert "This PR changes the gate policy: fail\\_on regression → never; tolerance 0.0 → 0.5" in body
    assert "takes effect after merge" in body
    assert "fail-on: regression" in body  # the policy applied is the base commit's


def test_base_policy_applies_even_when_the_pr_drops_it(action: Action, baseline_text: str) -> None:
    """The base commit's ``fail_on: threshold`` still applies to a PR that removed it from its config."""
    make_baseline(action, baseline_text)
    path = action.workspace / CONFIG
    base = json.loads(path.read_text(encoding="utf-8"))
    base["evalbot"] = {"fail_on": "threshold"}
    action.github.put_file(CONFIG, json.dumps(base), ref=BASE_SHA)
    run = action.run("pull_request", pull_request_event(), inputs={"actuals": "actuals/regressed.json"})
    assert run.code == 1 and "fail-on: threshold" in action.github.comments_on(7)[0].body
    assert "fail\\_on threshold → regression" in action.github.comments_on(7)[0].body


def test_base_config_unreadable_fails_closed(action: Action, baseline_text: str) -> None:
    """If neither the API nor git can read the base commit's config, the run is exit 3 (verdict error, the cause
    in the headline), never the PR's ``fail_on: never``."""
    make_baseline(action, baseline_text)
    with_evalbot_section(action, {"fail_on": "never"})
    # GitHub's Retry-After, which PyGithub's retry honours: each retry waits 1 s instead of the doubling backoff
    action.github.fail("GET", r"/contents/evals/test_config\.json", 503, headers={"Retry-After": "1"}, times=50)
    run = action.run("pull_request", pull_request_event(), inputs={"actuals": "actuals/regressed.json"})
    assert run.code == 3, run.stdout + run.stderr
    assert run.outputs["verdict"] == "error"
    body = action.github.comments_on(7)[0].body
    assert "could not measure, not passing" in body.splitlines()[1]
    assert "gate settings at the base commit are unreadable" in body
    assert action.github.calls("repos/get-content", status=503) == RetryPolicy().attempts  # one read, every retry made


def base_tree(action: Action, files: dict[str, str]) -> None:
    """Publish ``files`` (repository path → text) at the base commit."""
    for path, text in files.items():
        action.github.put_file(path, text, ref=BASE_SHA)


def test_moving_the_eval_sets_and_config_keeps_the_base_policy(action: Action) -> None:
    """Issue 23: the PR moves ``evals/`` into ``evals/moved/`` with a config that has no evalbot section. The base
    commit's eval sets (same eval-sets input) are under ``evals/``, so their config's ``fail_on: threshold`` still
    applies and the case still failing blocks (exit 1); with the defaults it would pass as "still failing"."""
    made = action.run("push", event("push"), inputs={"mode": "baseline", "actuals": "actuals/regressed.json"},
                      ref="refs/heads/main", sha=BASE_SHA)
    assert made.code == 0, made.stdout + made.stderr
    ws = action.workspace
    evalset = (ws / "evals" / "shop.evalset.json").read_text(encoding="utf-8")
    config = json.loads((ws / CONFIG).read_text(encoding="utf-8"))
    base_tree(action, {
        BASELINE: (ws / BASELINE).read_text(encoding="utf-8"),
        "evals/shop.evalset.json": evalset,
        CONFIG: json.dumps({**config, "evalbot": {"fail_on": "threshold"}}),
    })
    (ws / BASELINE).unlink()  # the PR does not touch the baseline
    moved = ws / "evals" / "moved"
    moved.mkdir()
    (ws / "evals" / "shop.evalset.json").rename(moved / "shop.evalset.json")
    (ws / CONFIG).rename(moved / "test_config.json")
    run = action.run("pull_request", pull_request_event(), inputs={"actuals": "actuals/regressed.json"})
    assert run.code == 1, run.stdout + run.stderr
    body = action.github.comments_on(7)[0].body
    assert "fail-on: threshold" in body
    assert ("The gate policy is the base commit's evals/test\\_config.json (the config of its eval sets there); this "
            "PR's eval sets use no evalbot section.") in body
    assert "fail\\_on threshold → regression" in body  # the PR would drop it: said, taking effect after merge


def test_different_sections_in_the_base_commits_folders_are_refused(action: Action, baseline_text: str) -> None:
    """Eval sets in two folders whose configs at the base commit hold different evalbot sections: exit 2 naming
    both files, never the first one silently (the PR's own tree agreeing changes nothing)."""
    make_baseline(action, baseline_text)
    ws = action.workspace
    evalset = (ws / "evals" / "shop.evalset.json").read_text(encoding="utf-8")
    config = json.loads((ws / CONFIG).read_text(encoding="utf-8"))
    base_tree(action, {
        "evals/a/shop.evalset.json": evalset,
        "evals/a/test_config.json": json.dumps({**config, "evalbot": {"fail_on": "threshold"}}),
        "evals/b/other.evalset.json": evalset.replace('"shop"', '"other"'),
        "evals/b/test_config.json": json.dumps({**config, "evalbot": {"fail_on": "never"}}),
    })
    run = action.run("pull_request", pull_request_event(), inputs={"actuals": "actuals/good.json"})
    assert run.code == 2, run.stdout + run.stderr + "".join(c.body for c in action.github.comments_on(7))
    (refused,) = [a for a in run.annotations() if "differs from the one in" in a]
    assert f"{BASE_SHA[:12]}:evals/b/test_config.json" in refused and f"{BASE_SHA[:12]}:evals/a/test_config.json" \
        in refused, refused
    assert action.github.comments_on(7) == []


def test_different_sections_in_the_prs_folders_are_refused(action: Action, baseline_text: str) -> None:
    """The same rule on the run's own tree (push mode reads it; a PR's is checked so main does not break)."""
    ws = action.workspace
    config = json.loads((ws / CONFIG).read_text(encoding="utf-8"))
    for name, section in (("a", {"fail_on": "threshold"}), ("b", {"block_flaky": True})):
        (ws / "evals" / name).mkdir()
        (ws / "evals" / name / "test_config.json").write_text(json.dumps({**config, "evalbot": section}))
        (ws / "evals" / name / f"{name}.evalset.json").write_text(
            (ws / "evals" / "shop.evalset.json").read_text(encoding="utf-8").replace('"shop"', f'"{name}"'))
    run = action.run("push", event("push"), inputs={"actuals": "actuals/good.json"}, ref="refs/heads/main")
    assert run.code == 2, run.stdout + run.stderr
    assert any("evals/b/test_config.json" in a and "evals/a/test_config.json" in a for a in run.annotations())
