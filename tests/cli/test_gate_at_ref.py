"""``evalbot compare --baseline REF:PATH`` takes the gate policy and the comment template at ``REF``, as the Action
takes them at a pull request's base commit: a working tree that sets its own ``fail_on: never``, ``yardstick_changes:
warn``, a looser budget or another template is still gated by ``REF``'s, and each change is a notice. ``REF``
unreadable is verdict error (exit 3), never the working tree's policy; a plain ``--baseline FILE`` keeps the working
tree's policy (how a new policy is tried locally). Real git repositories in tmp_path."""

from __future__ import annotations

import json
import os
import random
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.fakes.builders import Writer, case, eval_set, inv
from tests.fakes.cli_project import CONFIG, cli, make_baseline, proj

__all__ = ["proj"]  # the fixture (tests/fakes/cli_project.py)

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")

BASE = ".evalbot/baseline.json"
AT_MAIN = ("--baseline", f"main:{BASE}")
PR_RUN = ("evals", "--actuals", "runs/pr.json")


def git(where: Path, *args: str) -> str:
    done = subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=where, check=True,
                          capture_output=True, text=True)
    return done.stdout.strip()


def commit_main(where: Path) -> None:
    """Everything in ``where`` becomes main's commit (the base); the working tree is then changed like a PR's."""
    git(where, "init", "-q", "-b", "main")
    git(where, "add", "-A")
    git(where, "commit", "-q", "-m", "main")


def set_section(write: Writer, section: dict[str, Any], **config: Any) -> None:
    write("evals/test_config.json", {**CONFIG, **config, "evalbot": section})


def headline(out: str) -> str:
    return out.splitlines()[1]


def test_the_working_trees_fail_on_never_does_not_gate_itself(
    proj: Path, write: Writer, capsys: pytest.CaptureFixture[str]
) -> None:
    """main's policy (the default: regression) blocks the regression; the working tree's ``fail_on: never`` is a
    notice in the comment and on stderr. A plain file baseline takes the working tree's policy (trying it locally)."""
    make_baseline(capsys)
    commit_main(proj)
    set_section(write, {"fail_on": "never"})
    code, out, err = cli(capsys, "compare", *AT_MAIN, *PR_RUN)
    assert code == 1, out
    assert headline(out).startswith("### ❌ evalbot: blocked: 1 regressed"), headline(out)
    assert ("This PR changes the gate policy: fail\\_on regression → never; takes effect after merge (this run uses "
            "the base commit's)") in out
    assert "this change's gate policy (fail_on regression → never) takes effect after the merge; this run uses " \
           "main's" in err
    code, out, _ = cli(capsys, "compare", "--baseline", BASE, *PR_RUN)
    assert code == 0 and "changes the gate policy" not in out, out


def test_a_flag_still_overrides_refs_policy(proj: Path, write: Writer, capsys: pytest.CaptureFixture[str]) -> None:
    """--fail-on is the command line's own, as the Action's inputs: it overrides REF's section."""
    make_baseline(capsys)
    set_section(write, {"fail_on": "regression"})
    commit_main(proj)
    code, out, _ = cli(capsys, "compare", *AT_MAIN, *PR_RUN, "--fail-on", "never")
    assert code == 0 and "changes the gate policy" not in out, out


def test_yardstick_changes_warn_in_the_working_tree_still_blocks(
    proj: Path, write: Writer, capsys: pytest.CaptureFixture[str]
) -> None:
    """Lowered thresholds with ``yardstick_changes: warn`` in the working tree: main's ``block`` decides (exit 1)."""
    make_baseline(capsys)
    commit_main(proj)
    set_section(write, {"yardstick_changes": "warn"},
                criteria={"tool_trajectory_avg_score": 0.0, "response_match_score": 0.0})
    code, out, _ = cli(capsys, "compare", *AT_MAIN, "evals", "--actuals", "runs/main.json")
    assert code == 1, out
    assert "⚠️ 2 yardstick changes not accepted" in headline(out), headline(out)
    assert "yardstick\\_changes block → warn" in out
    code, out, _ = cli(capsys, "compare", "--baseline", BASE, "evals", "--actuals", "runs/main.json")
    assert code == 0, out  # the same run against the plain file: the working tree's warn


def test_a_section_at_ref_applies_when_the_working_tree_drops_it(
    proj: Path, write: Writer, capsys: pytest.CaptureFixture[str]
) -> None:
    """main says ``fail_on: threshold`` (the still-failing case blocks); the working tree removes the section."""
    make_baseline(capsys)
    set_section(write, {"fail_on": "threshold"})
    commit_main(proj)
    write("evals/test_config.json", CONFIG)
    code, out, _ = cli(capsys, "compare", *AT_MAIN, "evals", "--actuals", "runs/main.json")
    assert code == 1, out
    assert "fail\\_on threshold → regression" in out
    assert "The gate policy is the base commit's evals/test\\_config.json" in out  # the working tree has no section


def test_the_template_at_ref_is_used_and_a_change_is_named(
    proj: Path, write: Writer, capsys: pytest.CaptureFixture[str]
) -> None:
    """main's config names comment.md.j2; the working tree rewrites it (and a --comment-template file in the
    repository is read at REF too): the output is main's template, the notice names the change."""
    make_baseline(capsys)
    set_section(write, {"comment_template": "comment.md.j2"})
    write("evals/comment.md.j2", "Main {{ c.gate.verdict }} {{ c.policy_changes | join(', ') }}")
    write("flag.j2", "Flag main {{ c.gate.exit_code }}")
    commit_main(proj)
    write("evals/comment.md.j2", "Mine: always green")
    code, out, err = cli(capsys, "compare", *AT_MAIN, *PR_RUN)
    assert code == 1
    assert out == "<!-- evalbot id=default -->\nMain blocked the comment template's text", out
    assert "the comment template's text" in err
    write("flag.j2", "Flag mine")
    code, out, _ = cli(capsys, "compare", *AT_MAIN, *PR_RUN, "--comment-template", "flag.j2")
    assert out == "<!-- evalbot id=default -->\nFlag main 1", out
    outside = proj.parent / f"{proj.name}-own.j2"  # outside the repository: the user's own file, read as it is
    outside.write_text("Own {{ c.gate.exit_code }}", encoding="utf-8")
    code, out, _ = cli(capsys, "compare", *AT_MAIN, *PR_RUN, "--comment-template", str(outside))
    assert out == "<!-- evalbot id=default -->\nOwn 1", out


def test_a_template_named_by_the_working_tree_only_is_not_used(
    proj: Path, write: Writer, capsys: pytest.CaptureFixture[str]
) -> None:
    make_baseline(capsys)
    commit_main(proj)
    set_section(write, {"comment_template": "mine.j2"})
    write("evals/mine.j2", "Mine")
    code, out, _ = cli(capsys, "compare", *AT_MAIN, *PR_RUN)
    assert code == 1 and headline(out).startswith("### ❌ evalbot: blocked"), out
    assert "comment\\_template (not set) → mine.j2" in out


def test_from_a_subdirectory_with_config_at_ref(proj: Path, write: Writer, capsys: pytest.CaptureFixture[str],
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """Paths on the command line are the current directory's; REF's files are the repository's: run from a
    subfolder, and with --config, main's section is still found."""
    make_baseline(capsys)
    set_section(write, {"fail_on": "threshold"})
    write("sub/.keep", "")
    commit_main(proj)
    set_section(write, {"fail_on": "never"})
    monkeypatch.chdir(proj / "sub")
    code, out, _ = cli(capsys, "compare", *AT_MAIN, "../evals", "--actuals", "../runs/main.json")
    assert code == 1 and "fail\\_on threshold → never" in out, out
    code, out, _ = cli(capsys, "compare", *AT_MAIN, "../evals", "--actuals", "../runs/main.json",
                       "--config", "../evals/test_config.json")
    assert code == 1 and "fail\\_on threshold → never" in out, out


def test_not_a_repository_fails_closed(proj: Path, write: Writer, capsys: pytest.CaptureFixture[str],
                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """No git repository here: neither the baseline nor the gate at REF can be read: verdict error, exit 3, the
    reason under the headline; the working tree's ``fail_on: never`` is never the fallback."""
    make_baseline(capsys)
    set_section(write, {"fail_on": "never"})
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(proj.parent))  # no repository above tmp_path either
    code, out, err = cli(capsys, "compare", *AT_MAIN, *PR_RUN)
    assert code == 3, out
    assert headline(out) == "### ⛔ evalbot: could not measure, not passing: baseline unreadable"
    assert "the gate settings at main are unreadable: find the repository: git rev-parse failed" in out
    assert "not a git repository" in err


def test_an_unreadable_ref_with_a_readable_baseline_fails_closed(
    proj: Path, write: Writer, capsys: pytest.CaptureFixture[str]
) -> None:
    """The baseline is readable at REF but the config is a submodule-like entry git cannot show (here: its
    object is deleted from the repository): exit 3 naming the config, not the working tree's policy."""
    make_baseline(capsys)
    set_section(write, {"fail_on": "threshold"})
    commit_main(proj)
    blob = git(proj, "rev-parse", "main:evals/test_config.json")
    obj = proj / ".git" / "objects" / blob[:2] / blob[2:]
    obj.chmod(0o644)
    obj.unlink()
    set_section(write, {"fail_on": "never"})
    code, out, _ = cli(capsys, "compare", *AT_MAIN, *PR_RUN)
    assert code == 3, out
    assert "could not measure, not passing" in headline(out)
    assert "the gate settings at main are unreadable: read the config: git could not read " \
           "main:evals/test\\_config.json" in out


@pytest.mark.parametrize("hostile", ["invalid-json", "huge", "symlink-out", "not-an-object"])
def test_a_hostile_working_tree_config_is_handled(
    proj: Path, write: Writer, capsys: pytest.CaptureFixture[str], hostile: str
) -> None:
    """The working tree's config is untrusted: broken, huge or a symlink out of the repository, it never sets the
    gate (main's blocks the regression or the input error is exit 2 naming the file), and nothing crashes."""
    make_baseline(capsys)
    commit_main(proj)
    target = proj / "evals/test_config.json"
    if hostile == "invalid-json":
        target.write_text('{"evalbot": {"fail_on": "never"', encoding="utf-8")
    elif hostile == "huge":
        target.write_text(json.dumps({**CONFIG, "evalbot": {"fail_on": "never"}, "pad": "x" * (40 << 20)}),
                          encoding="utf-8")
    elif hostile == "symlink-out":
        outside = proj.parent / f"{proj.name}-outside.json"
        outside.write_text(json.dumps({**CONFIG, "evalbot": {"fail_on": "never"}}), encoding="utf-8")
        target.unlink()
        target.symlink_to(outside)
    else:
        set_section(write, ["fail_on", "never"])  # type: ignore[arg-type]
    code, out, err = cli(capsys, "compare", *AT_MAIN, *PR_RUN)
    if hostile in ("invalid-json", "not-an-object"):  # the working tree's own section is still checked
        assert code == 2, out + err
        assert headline(out).startswith("### ⚠️ evalbot: invalid input: evals/test\\_config.json")
        assert "- evals/test\\_config.json" in out
    else:  # read (the loader's business), never the gate: main's blocks, the change is a notice
        assert code == 1, out + err
        assert headline(out).startswith("### ❌ evalbot: blocked: 1 regressed"), out
        assert "fail\\_on regression → never" in out
    assert "Traceback" not in err


# --- budgets: a loosened one is a yardstick change the working tree's baseline update can accept ------------------

N = 40


def _run(scale: float, seed: int) -> dict[str, list[dict[str, Any]]]:
    rng = random.Random(seed)
    out = {}
    for i in range(N):
        total = 1000 * (1 + i % 5) * scale * rng.gauss(1, 0.05)
        events = [{"author": "agent", "usage_metadata": {"prompt_token_count": int(total * 0.8),
                                                         "candidates_token_count": int(total * 0.2)},
                   "content": {"role": "model", "parts": [{"text": "ok"}]}}]
        out[f"c{i}"] = [inv("q", "ok", None, intermediate_data={"invocation_events": events})]
    return out


def test_a_loosened_budget_blocks_until_the_working_trees_baseline_update_accepts_it(
    write: Writer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    write("evals/shop.evalset.json", eval_set("shop", *(case(f"c{i}", inv("q", "ok")) for i in range(N))))
    write("evals/test_config.json", {"criteria": {"response_match_score": 0.5}, "evalbot": {"budgets": {"tokens": "+20%"}}})
    write("runs/main.json", _run(1.0, 1))
    write("runs/pr.json", _run(1.4, 2))
    monkeypatch.chdir(tmp_path)
    code, _, err = cli(capsys, "baseline", "evals", "--actuals", "runs/main.json", "--output", BASE)
    assert code == 0, err
    commit_main(tmp_path)
    write("evals/test_config.json", {"criteria": {"response_match_score": 0.5},
                                     "evalbot": {"budgets": {"tokens": "+100%"}}})
    compare = ("compare", *AT_MAIN, "evals", "--actuals", "runs/pr.json")
    code, out, _ = cli(capsys, *compare)
    assert code == 1, out
    assert "budgets / tokens: budget loosened from +20% to +100%" in headline(out), headline(out)
    assert "tokens" in headline(out) and "over the +20% budget" in headline(out)
    code, _, err = cli(capsys, "baseline", "evals", "--actuals", "runs/pr.json", "--output", BASE)
    assert code == 0, err
    code, out, _ = cli(capsys, *compare)
    assert code == 0, out
    assert "accepted by this PR's baseline update" in headline(out), headline(out)
    assert "except the budgets this PR's baseline update accepts" in out


def test_a_sharded_run_is_gated_by_ref_in_its_jobs_and_its_merge(
    proj: Path, write: Writer, capsys: pytest.CaptureFixture[str]
) -> None:
    """``compare --shard`` settles its split votes with REF's policy and ``merge --baseline REF:PATH`` gates with it:
    the parts agree with the merge (no "settled differently"), and the working tree's fail_on: never is a notice."""
    make_baseline(capsys)
    commit_main(proj)
    set_section(write, {"fail_on": "never", "alpha": 0.2})
    for k in (1, 2):
        code, _, err = cli(capsys, "compare", *AT_MAIN, *PR_RUN, "--shard", f"{k}/2", "--report", f"part{k}.json")
        assert code == 0, err
    code, out, err = cli(capsys, "merge", "part1.json", "part2.json", "--eval-sets", "evals", "--actuals",
                         "runs/pr.json", *AT_MAIN, "--comment", "c.md")
    assert code == 1, out + err
    comment = (proj / "c.md").read_text(encoding="utf-8")
    assert headline(comment).startswith("### ❌ evalbot: blocked: 1 regressed"), comment
    assert "alpha 0.05 → 0.2; fail\\_on regression → never" in comment


def test_a_baseline_path_that_git_would_read_as_an_option_is_refused(
    proj: Path, write: Writer, capsys: pytest.CaptureFixture[str]
) -> None:
    """A change's config naming its baseline ``--output=FILE:x`` (``git show`` would write FILE:x) is an input error
    naming it, exit 2, and git writes nothing."""
    make_baseline(capsys)
    commit_main(proj)
    target = proj / "pwned"
    write("evals/test_config.json", {**CONFIG, "evalbot": {"baseline_path": f"--output={target}:x"}})
    code, out, err = cli(capsys, "compare", *PR_RUN)
    assert code == 2, out + err
    assert f"--output={target}:x: '--output={target}' is not a git revision" in err, err
    assert not list(proj.glob("pwned*"))


@pytest.mark.parametrize("hostile", ["not-utf8", "nul", "long"])
def test_a_baseline_path_naming_an_unreadable_blob_is_refused(
    proj: Path, write: Writer, capsys: pytest.CaptureFixture[str], hostile: str
) -> None:
    """A change's config naming its baseline as a committed file that is not UTF-8, with a NUL byte in the path
    (JSON's \\u0000) or a path of 200,000 characters (git could not even start: E2BIG) is an unreadable baseline: verdict error (exit 3) saying why; no traceback (exit 70)."""
    make_baseline(capsys)
    (proj / "evals" / "odd.json").write_bytes(b'\xff\xfe{"schema_version": 1}')
    commit_main(proj)
    path = {"not-utf8": "evals/odd.json", "nul": "evals/odd.json\0x", "long": "x" * 200_000}[hostile]
    write("evals/test_config.json", {**CONFIG, "evalbot": {"baseline_path": f"main:{path}"}})
    code, out, err = cli(capsys, "compare", *PR_RUN)
    assert code == 3, out + err  # a baseline that may exist but cannot be read: measured, not passing
    assert "could not measure, not passing" in headline(out), out
    said = {"not-utf8": "not UTF-8 text", "nul": "NUL byte", "long": "longer than 4,096 characters"}[hostile]
    assert said in err, err[-2000:]
    assert "Traceback" not in err


def test_a_config_at_ref_that_is_not_utf8_fails_closed(
    proj: Path, write: Writer, capsys: pytest.CaptureFixture[str]
) -> None:
    """The config at REF is not UTF-8: the gate settings there are unreadable, verdict error (exit 3) naming it,
    never the working tree's policy and never a crash."""
    make_baseline(capsys)
    commit_main(proj)
    (proj / "evals" / "test_config.json").write_bytes(b"\xff" + json.dumps(CONFIG).encode())
    git(proj, "commit", "-qam", "broken config")
    set_section(write, {"fail_on": "never"})
    code, out, err = cli(capsys, "compare", *AT_MAIN, *PR_RUN)
    assert code == 3, out + err
    assert "could not measure, not passing" in headline(out)
    assert "main:evals/test\\_config.json" in out and "not UTF-8 text" in out, out
    assert "Traceback" not in err


@pytest.mark.parametrize("hostile", ["dev-zero", "fifo", "long-name", "huge"])
def test_a_working_tree_baseline_that_is_not_a_small_regular_file_is_refused(
    proj: Path, write: Writer, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, hostile: str
) -> None:
    """Without --baseline, compare reads the working tree's baseline_path, the change's text: a committed symlink to
    /dev/zero (read to its end: memory runs out), a FIFO (open blocks) or a file over the cap is an input error naming
    it, exit 2; a name too long for the system (OSError, exit 70) is no baseline; never a hang or a crash."""
    import evalbot.cli.compare as compare_module

    path = {"dev-zero": "evals/b.json", "fifo": "evals/b.json", "long-name": "n" * 5000, "huge": "evals/b.json"}
    if hostile == "dev-zero":
        (proj / "evals" / "b.json").symlink_to("/dev/zero")
    elif hostile == "fifo":
        os.mkfifo(proj / "evals" / "b.json")
    elif hostile == "huge":
        make_baseline(capsys, "evals/b.json")  # a valid baseline, over the (lowered) cap
        monkeypatch.setattr(compare_module, "MAX_BASELINE_BYTES", 100)
    write("evals/test_config.json", {**CONFIG, "evalbot": {"baseline_path": path[hostile]}})
    code, out, err = cli(capsys, "compare", *PR_RUN)
    assert "Traceback" not in err and "internal error" not in err
    assert path[hostile][:100] in err, err[-2000:]
    if hostile == "long-name":  # no file can have that name: no baseline, said as for any absent one
        assert code == 0 and "warning: no baseline at nnn" in err, (out + err)[-2000:]
    else:
        assert code == 2 and "refused" in err, (out + err)[-2000:]


def test_a_config_at_ref_nested_too_deep_is_skipped_like_invalid_json(
    proj: Path, write: Writer, capsys: pytest.CaptureFixture[str]
) -> None:
    """A config at REF nested 100,000 levels deep (json.loads raised RecursionError: exit 70) is skipped like one
    that is not JSON: REF's default policy gates (the regression blocks), the working tree's fail_on: never does not."""
    make_baseline(capsys)
    (proj / "evals" / "test_config.json").write_text(
        '{"criteria": {"tool_trajectory_avg_score": 1.0}, "evalbot": ' + "[" * 100_000 + "]" * 100_000 + "}",
        encoding="utf-8")
    commit_main(proj)
    set_section(write, {"fail_on": "never"})
    code, out, err = cli(capsys, "compare", *AT_MAIN, *PR_RUN)
    assert "Traceback" not in err and "internal error" not in err, err[-2000:]
    assert code == 1, (out + err)[-2000:]
    assert headline(out).startswith("### ❌ evalbot: blocked: 1 regressed"), out
