"""The matrix flow through entrypoint.py against the fake GitHub: four shard jobs upload their parts, one merge job
posts the one comment and gates; the same in the fork-safe second stage; a missing shard is verdict error, exit 3.

The comment and the report of the sharded run equal, byte for byte, those of the same run as one job.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.e2e.conftest import (
    BASE_SHA,
    HEAD_SHA,
    REPO,
    RUN_ID,
    VALID,
    Action,
    event,
    make_baseline,
    pull_request_event,
    uploaded,
    workflow_run_event,
)
from tests.fakes.fake_gemini import FakeGemini, TaggedResponder
from tests.fakes.fake_github import FakeGitHub, Pull

ACTUALS = "actuals/regressed.json"
N = 4


def _one_job(action: Action, baseline_text: str) -> tuple[str, bytes]:
    """The unsharded run on PR 7: its comment and its report."""
    make_baseline(action, baseline_text)
    run = action.run("pull_request", pull_request_event(number=7), inputs={"actuals": ACTUALS})
    assert run.code == 1, run.stdout + run.stderr
    (comment,) = action.github.comments_on(7)
    return comment.body, (run.workspace / ".evalbot-out" / "report.json").read_bytes()


@pytest.fixture(scope="module")
def parts(tmp_path_factory: pytest.TempPathFactory, baseline_text: str) -> list[dict[str, bytes]]:
    """The matrix, run once for the module: each shard job of PR 8 writes its part and nothing else (no comment, no
    write to GitHub: it only reads the gate settings and the baseline at the base commit, to settle split votes as
    one job would; exit 0); the parts as they are uploaded (the report directory: report.json and the recorded runs
    in runs/, which the fork-safe second stage re-measures)."""
    tmp = tmp_path_factory.mktemp("matrix")
    with FakeGitHub(repo=REPO) as github, FakeGemini(responder=lambda prompt, index, request: VALID) as gemini:
        action = Action(tmp, github, gemini)
        make_baseline(action, baseline_text)
        out = []
        for k in range(1, N + 1):
            run = action.run("pull_request", pull_request_event(number=8), inputs={"actuals": ACTUALS,
                                                                                  "shard": f"{k}/{N}"})
            assert run.code == 0, run.stdout + run.stderr
            assert run.outputs["verdict"] == "passed" and f"shard {k}/{N}" in run.stdout
            part = run.workspace / ".evalbot-out" / "report.json"
            assert json.loads(part.read_text())["shard"]["index"] == k
            assert not (run.workspace / ".evalbot-out" / "junit.xml").exists()
            out.append(uploaded(run.workspace / ".evalbot-out"))
            assert list(out[-1]) == ["report.json", "runs/0-regressed.json"]
            shutil.rmtree(run.workspace / ".evalbot-out")
        assert github.comments == {} and {e.method for e in github.exchanges} == {"GET"}  # reads only
    return out


def _download(action: Action, parts: list[dict[str, bytes]], skip: int | None = None) -> None:
    """What actions/download-artifact with pattern evalbot-part-* and path .evalbot-parts leaves: one folder per
    artifact (the runs/ folder in each is not a part)."""
    for k, files in enumerate(parts, start=1):
        if k != skip:
            for name, data in files.items():
                target = action.workspace / ".evalbot-parts" / f"evalbot-part-{k}" / name
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(data)


def test_four_shards_and_a_merge_job_post_the_one_jobs_comment(action: Action, baseline_text: str,
                                                              parts: list[dict[str, bytes]]) -> None:
    body, report = _one_job(action, baseline_text)
    shutil.rmtree(action.workspace / ".evalbot-out")
    _download(action, parts)
    merge = action.run("pull_request", pull_request_event(number=8), inputs={"actuals": ACTUALS, "mode": "merge"})
    assert merge.code == 1, merge.stdout + merge.stderr  # the regression blocks, as in the one job
    assert merge.outputs["verdict"] == "blocked" and merge.outputs["regressed"] == "1"
    (comment,) = action.github.comments_on(8)
    assert comment.body == body
    assert (merge.workspace / ".evalbot-out" / "report.json").read_bytes() == report
    assert (merge.workspace / ".evalbot-out" / "junit.xml").exists()
    assert any("title=Regression" in a for a in merge.annotations())


def test_a_missing_shard_is_error_exit_3_naming_it(action: Action, baseline_text: str,
                                                  parts: list[dict[str, bytes]]) -> None:
    make_baseline(action, baseline_text)
    lost = [c["eval_id"] for es in json.loads(parts[0]["report.json"])["eval_sets"] for c in es["cases"]]
    assert lost  # shard 1 holds a case (3 cases over 4 shards: one shard is empty)
    _download(action, parts, skip=1)
    merge = action.run("pull_request", pull_request_event(number=8), inputs={"actuals": ACTUALS, "mode": "merge"})
    assert merge.code == 3 and merge.outputs["verdict"] == "error", merge.stdout + merge.stderr
    (error,) = merge.annotations()
    assert "shard 1/4 missing" in error and all(case in error for case in lost)
    assert "could not measure, not passing: shard 1/4 missing" in merge.summary
    (comment,) = action.github.comments_on(8)  # never a partial pass: the headline says what is missing
    headline = comment.body.splitlines()[1]
    assert headline == "### ⛔ evalbot: could not measure, not passing: shard 1/4 missing", comment.body
    assert all(case in comment.body for case in lost) and "Regression" not in comment.body
    shutil.rmtree(action.workspace / ".evalbot-parts")  # every shard failed: download-artifact found nothing
    merge = action.run("pull_request", pull_request_event(number=8), inputs={"actuals": ACTUALS, "mode": "merge"})
    assert merge.code == 3 and merge.outputs["verdict"] == "error"
    assert any("no part in .evalbot-parts" in a for a in merge.annotations())
    (comment,) = action.github.comments_on(8)  # the same sticky comment, updated
    assert "could not measure, not passing: no part in .evalbot-parts" in comment.body


def test_a_missing_shard_replaces_an_earlier_green_comment(action: Action, baseline_text: str,
                                                            parts: list[dict[str, bytes]]) -> None:
    """A PR whose earlier run passed, then a new push whose shard job failed: the old green comment must not stand
    for the new commit."""
    make_baseline(action, baseline_text)
    first = action.run("pull_request", pull_request_event(number=8), inputs={"actuals": "actuals/good.json"})
    assert first.code == 0, first.stdout + first.stderr
    (green,) = action.github.comments_on(8)
    assert "✅" in green.body.splitlines()[1]
    _download(action, parts, skip=2)
    merge = action.run("pull_request", pull_request_event(number=8), inputs={"actuals": ACTUALS, "mode": "merge"})
    assert merge.code == 3 and merge.outputs["comment-url"]
    (comment,) = action.github.comments_on(8)
    assert comment.id == green.id and "⛔ evalbot: could not measure, not passing: shard 2/4 missing" in comment.body
    assert "✅" not in comment.body


def test_hostile_parts_directory_is_refused(action: Action, baseline_text: str,
                                           parts: list[dict[str, bytes]]) -> None:
    make_baseline(action, baseline_text)
    _download(action, parts)
    victim = action.workspace / ".evalbot-parts" / "evalbot-part-2" / "report.json"
    victim.unlink()
    victim.symlink_to(action.workspace / "evals" / "shop.evalset.json")
    merge = action.run("pull_request", pull_request_event(number=8), inputs={"actuals": ACTUALS, "mode": "merge"})
    assert merge.code == 2 and merge.outputs["verdict"] == "invalid"
    assert any("symlink" in a for a in merge.annotations())
    victim.unlink()
    victim.write_bytes(b'{"eval_sets": ' + b"[" * 5000 + b"]" * 5000 + b"}")
    merge = action.run("pull_request", pull_request_event(number=8), inputs={"actuals": ACTUALS, "mode": "merge"})
    assert merge.code == 2 and any("not an evalbot report" in a for a in merge.annotations())
    assert action.github.comments_on(8) == []


def test_shard_input_is_validated(action: Action) -> None:
    for inputs, message in (({"shard": "5/4"}, "input shard"), ({"shard": "1/4", "mode": "merge"}, "input shard")):
        run = action.run("pull_request", pull_request_event(), inputs={"actuals": ACTUALS, **inputs})
        assert run.code == 2 and any(message in a for a in run.annotations()), run.stdout


def test_fork_safe_second_stage_merges_the_part_artifacts(action: Action, baseline_text: str,
                                                          parts: list[dict[str, bytes]]) -> None:
    """The fork's matrix uploads evalbot-part-1..4; the workflow_run stage downloads them by pattern, merges them as
    untrusted data and posts the one comment."""
    make_baseline(action, baseline_text)
    for k, files in enumerate(parts, start=1):
        action.github.add_artifact(RUN_ID, f"evalbot-part-{k}", files)
    action.github.add_artifact(RUN_ID, "unrelated", {"report.json": b"not json"})
    action.github.add_pull(Pull(7, head_sha=HEAD_SHA, base_sha=BASE_SHA, head_ref="feature", head_owner="forker"))
    second = action.run("workflow_run", workflow_run_event(), judge_key=None, sha="d" * 40, ref="refs/heads/main",
                        inputs={"mode": "workflow_run", "artifact-name": "evalbot-part-*"})
    assert second.code == 1, second.stdout + second.stderr  # the verdict's exit code
    assert second.outputs["verdict"] == "blocked"
    (comment,) = action.github.comments_on(7)
    assert "refund" in comment.body
    assert action.github.calls("blob") == N  # each part's archive, fetched from storage

    action.github.artifacts.clear()  # shard 3's job failed: its artifact is missing
    for k, files in enumerate(parts, start=1):
        if k != 3:
            action.github.add_artifact(RUN_ID, f"evalbot-part-{k}", files)
    again = action.run("workflow_run", workflow_run_event(), judge_key=None,
                       inputs={"mode": "workflow_run", "artifact-name": "evalbot-part-*"})
    assert again.code == 3 and again.outputs["verdict"] == "error"
    assert any("shard 3/4 missing" in a for a in again.annotations())
    (comment,) = action.github.comments_on(7)  # the earlier blocked comment now says the run was not measured
    assert comment.body.splitlines()[1] == "### ⛔ evalbot: could not measure, not passing: shard 3/4 missing"
    assert "refund" not in comment.body.split("missing:", 1)[0]


def test_readme_matrix_workflow_names_the_inputs_used_here() -> None:
    """docs/github-action.md's copy-paste matrix workflow uses the inputs this test drives (shard, mode merge, parts path)."""
    readme = (Path(__file__).resolve().parents[2] / "docs" / "github-action.md").read_text(encoding="utf-8")
    section = readme[readme.index("### Sharded runs"):]
    for needle in ("shard: ${{ matrix.shard }}/4", "mode: merge", "pattern: evalbot-part-*", "path: .evalbot-parts",
                   "artifact-name: evalbot-part-*"):
        assert needle in section, needle


def _omitting_part(tmp_path: Path, drop: str) -> bytes:
    """The attack: a shard job whose checkout's eval set lacks case ``drop`` writes a part "1/1". It is internally
    consistent (its case list matches its fingerprint, every listed case is there), so the parts agree with each
    other; only the merging job's own eval sets show the case is missing."""
    with FakeGitHub(repo=REPO) as github, FakeGemini(responder=lambda prompt, index, request: VALID) as gemini:
        action = Action(tmp_path, github, gemini)
        sets = action.workspace / "evals" / "shop.evalset.json"
        data = json.loads(sets.read_text(encoding="utf-8"))
        data["eval_cases"] = [c for c in data["eval_cases"] if c["eval_id"] != drop]
        sets.write_text(json.dumps(data), encoding="utf-8")
        run = action.run("pull_request", pull_request_event(number=8), inputs={"actuals": ACTUALS, "shard": "1/1"})
        assert run.code == 0, run.stdout + run.stderr
        part = (run.workspace / ".evalbot-out" / "report.json").read_bytes()
    assert drop not in {c["eval_id"] for es in json.loads(part)["eval_sets"] for c in es["cases"]}
    return part


def test_a_part_1_of_1_omitting_the_regressed_case_is_error_naming_it(
        action: Action, baseline_text: str, tmp_path: Path) -> None:
    """Issue 24: one consistent part "1/1" without the regressed case was merged into exit 0 "✅ no regressions";
    the merge job compares the merged case list with the eval sets it loaded: exit 3, the headline names the case."""
    make_baseline(action, baseline_text)
    part = _omitting_part(tmp_path / "attacker", "refund")
    folder = action.workspace / ".evalbot-parts" / "evalbot-part-1"
    folder.mkdir(parents=True)
    (folder / "report.json").write_bytes(part)
    merge = action.run("pull_request", pull_request_event(number=8), inputs={"actuals": ACTUALS, "mode": "merge"})
    assert merge.code == 3 and merge.outputs["verdict"] == "error", merge.stdout + merge.stderr
    (comment,) = action.github.comments_on(8)
    headline = comment.body.splitlines()[1]
    assert headline.startswith("### ⛔ evalbot: could not measure, not passing: 1 case(s)"), comment.body
    assert "shop/refund" in headline and "✅" not in comment.body


def test_second_stage_part_1_of_1_omitting_the_regressed_case_is_error(
        action: Action, baseline_text: str, tmp_path: Path) -> None:
    """The same part uploaded by a fork's run: the trusted stage checks it against the default branch's eval sets."""
    make_baseline(action, baseline_text)
    part = _omitting_part(tmp_path / "attacker", "refund")
    action.github.add_artifact(RUN_ID, "evalbot-part-1", {"report.json": part})
    action.github.add_pull(Pull(7, head_sha=HEAD_SHA, base_sha=BASE_SHA, head_ref="feature", head_owner="forker"))
    second = action.run("workflow_run", workflow_run_event(), judge_key=None, sha="d" * 40, ref="refs/heads/main",
                        inputs={"mode": "workflow_run", "artifact-name": "evalbot-part-*"})
    assert second.code == 3 and second.outputs["verdict"] == "error", second.stdout + second.stderr
    (comment,) = action.github.comments_on(7)
    assert "shop/refund" in comment.body.splitlines()[1] and "✅" not in comment.body


def test_merged_cases_unknown_to_the_checkout_are_a_notice(action: Action, baseline_text: str,
                                                           parts: list[dict[str, bytes]]) -> None:
    """A case the parts hold but the merge job's eval sets do not: reported with a notice, not an error."""
    make_baseline(action, baseline_text)
    _download(action, parts)
    sets = action.workspace / "evals" / "shop.evalset.json"
    data = json.loads(sets.read_text(encoding="utf-8"))
    data["eval_cases"] = [c for c in data["eval_cases"] if c["eval_id"] != "greeting"]
    sets.write_text(json.dumps(data), encoding="utf-8")
    merge = action.run("pull_request", pull_request_event(number=8), inputs={"actuals": ACTUALS, "mode": "merge"})
    assert merge.code == 1, merge.stdout + merge.stderr  # still gated: the regression of refund blocks
    report = json.loads((merge.workspace / ".evalbot-out" / "report.json").read_text(encoding="utf-8"))
    assert any("in no eval set in this job's checkout (shop/greeting)" in n for n in report["notices"])


INVALID = '{"reasoning": "a fact differs", "is_the_agent_response_valid": "invalid"}'


def _split_vote_script() -> TaggedResponder:
    """Main's greeting passes 3-0; the PR's fails 2-3 (a split flip), then 10 more samples fail: 2-13."""
    return TaggedResponder({"main": [VALID], "pr": [INVALID, VALID, INVALID, VALID, INVALID] + [INVALID] * 10,
                            "": [VALID]})


def _tagged_actuals(action: Action, tag: str) -> str:
    data = json.loads((action.workspace / "actuals" / "good.json").read_text(encoding="utf-8"))
    data["greeting"][0]["final_response"]["parts"][0]["text"] += f" @@{tag}@@"
    path = f"actuals/{tag}.json"
    (action.workspace / path).write_text(json.dumps(data), encoding="utf-8")
    return path


def test_a_split_vote_is_settled_alike_in_one_job_and_in_the_matrix(action: Action) -> None:
    """The judge votes 5 samples; the PR's greeting flips against main's 3-0 on a 2-3 split. The one job settles it
    with 10 more samples (2-13, a blocking regression); so does the shard job holding the greeting (it reads the
    baseline and gate settings at the base commit), and the merge job posts the same comment, byte for byte."""
    config = action.workspace / "evals" / "test_config.json"
    data = json.loads(config.read_text(encoding="utf-8"))
    data["criteria"]["final_response_match_v2"]["judge_model_options"]["num_samples"] = 5
    config.write_text(json.dumps(data), encoding="utf-8")
    action.github.put_file("evals/test_config.json", json.dumps(data), ref=BASE_SHA)
    main_run, pr_run = _tagged_actuals(action, "main"), _tagged_actuals(action, "pr")
    action.gemini.responder = _split_vote_script()
    base = action.run("push", event("push"), inputs={"mode": "baseline", "actuals": main_run},
                      ref="refs/heads/main", sha=BASE_SHA)
    assert base.code == 0, base.stdout + base.stderr
    make_baseline(action, (action.workspace / ".evalbot" / "baseline.json").read_text(encoding="utf-8"))
    (action.workspace / ".evalbot" / "baseline.json").unlink()

    action.gemini.responder = _split_vote_script()
    one = action.run("pull_request", pull_request_event(number=7), inputs={"actuals": pr_run})
    assert one.code == 1 and one.outputs["verdict"] == "blocked", one.stdout + one.stderr
    (body,) = [c.body for c in action.github.comments_on(7)]
    assert "2–13 (after 10 more samples)" in body
    report = (action.workspace / ".evalbot-out" / "report.json").read_bytes()
    shutil.rmtree(action.workspace / ".evalbot-out")

    n = 3
    parts = []
    for k in range(1, n + 1):
        action.gemini.responder = _split_vote_script()  # each job is a fresh process asking the judge afresh
        run = action.run("pull_request", pull_request_event(number=8), inputs={"actuals": pr_run, "shard": f"{k}/{n}"})
        assert run.code == 0, run.stdout + run.stderr
        parts.append(uploaded(run.workspace / ".evalbot-out"))
        shutil.rmtree(run.workspace / ".evalbot-out")
    _download(action, parts)
    merge = action.run("pull_request", pull_request_event(number=8), inputs={"actuals": pr_run, "mode": "merge"})
    assert merge.code == 1 and merge.outputs["verdict"] == "blocked", merge.stdout + merge.stderr
    (comment,) = action.github.comments_on(8)
    assert comment.body == body
    assert (merge.workspace / ".evalbot-out" / "report.json").read_bytes() == report

    # A forged part that claims it settled nothing (so the flip would read as inconclusive) is never merged.
    forged = json.loads(parts[0]["report.json"])
    forged["shard"]["settled_against"] = None
    target = action.workspace / ".evalbot-parts" / "evalbot-part-1" / "report.json"
    target.write_text(json.dumps(forged), encoding="utf-8")
    again = action.run("pull_request", pull_request_event(number=8), inputs={"actuals": pr_run, "mode": "merge"})
    assert again.code == 3 and again.outputs["verdict"] == "error", again.stdout + again.stderr
    (comment,) = action.github.comments_on(8)
    assert "could not measure, not passing: .evalbot-parts/evalbot-part-1/report.json settled split judge votes " \
           "against no baseline" in comment.body.splitlines()[1]
