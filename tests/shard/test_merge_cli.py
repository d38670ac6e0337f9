"""``--shard K/N`` and ``evalbot merge`` through the CLI: 1 job and 4 shards + merge give the same report and the
same comment, byte for byte; every merge refusal names what is wrong; hostile part files are refused cleanly."""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

import pytest

import evalbot.cli.compare as cli_compare
import evalbot.shard.parts
from evalbot.cli.commands import main
from evalbot.pipeline import PackedSpill
from tests.fakes.suites import write_suite

EXAMPLE = ["examples/evals", "--actuals", "examples/runs/pr.json", "--judge-cache", "examples/judge-cache",
           "--judge-replay"]
EXAMPLE_BASELINE = "examples/.evalbot/baseline.json"


def _shards(tmp_path: Path, command: str, inputs: list[str], n: int = 4, *, out: str = "--report") -> list[Path]:
    parts = []
    for k in range(1, n + 1):
        part = tmp_path / "parts" / f"part-{k}.json"
        assert main([command, *inputs, "--shard", f"{k}/{n}", out, str(part)], {}) in ((0, 1) if command == "run" else (0,))
        parts.append(part)
    return parts


def _same_files(a: Path, b: Path) -> None:
    assert a.read_bytes() == b.read_bytes()


def _aside(paths: list[Path], folder: Path) -> list[Path]:
    """Move the one job's outputs aside, so that the merge writes (and the comment links) the same paths."""
    folder.mkdir(parents=True, exist_ok=True)
    return [p.rename(folder / p.name) for p in paths]


def test_example_one_job_equals_four_shards_merged(tmp_path: Path) -> None:
    """The bundled example (judged criteria replayed from the cache): same report and byte-identical comment. Its
    store_hours verdict flipped on a split vote: the one job settles it with 10 more samples (7-8), and so does the
    shard job holding that case, given the same --baseline."""
    report, comment = tmp_path / "report.json", tmp_path / "comment.md"
    argv = ["compare", "--baseline", EXAMPLE_BASELINE, *EXAMPLE]
    assert main([*argv, "--report", str(report), "--comment", str(comment)], {}) == 1
    one = _aside([report, comment], tmp_path / "one")
    assert "7–8 (after 10 more samples)" in one[1].read_text(encoding="utf-8")
    parts = _shards(tmp_path, "compare", [*EXAMPLE, "--baseline", EXAMPLE_BASELINE])
    code = main(["merge", *map(str, parts), "--baseline", EXAMPLE_BASELINE, "--eval-sets", "examples/evals",
                 "--actuals", "examples/runs/pr.json", "--judge-cache", "examples/judge-cache", "--judge-replay",
                 "--report", str(report), "--comment", str(comment)], {})
    assert code == 1  # the example's regression blocks, as in the one job
    _same_files(one[0], report)
    _same_files(one[1], comment)
    sizes = [len([c for es in json.loads(p.read_text())["eval_sets"] for c in es["cases"]]) for p in parts]
    assert sum(sizes) == json.loads(report.read_text())["totals"]["cases"] == 6 and all(sizes)


def test_generated_300_cases_one_job_equals_four_shards(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """300 multi-turn cases in 3 eval sets: baseline, run and comparison are the same sharded and not."""
    monkeypatch.chdir(tmp_path)
    evals, main_run, pr_run = write_suite(Path("suite"))
    base_inputs = [str(evals), "--actuals", str(main_run)]
    stamp = ["--commit", "abc", "--created-at", "2026-01-01T00:00:00+00:00"]
    assert main(["baseline", *base_inputs, "--output", "one/baseline.json", *stamp], {}) == 0
    base_parts = _shards(tmp_path / "b", "baseline", base_inputs, out="--output")
    assert main(["merge", *map(str, base_parts), "--write-baseline", "four/baseline.json", *stamp], {}) == 0
    _same_files(Path("one/baseline.json"), Path("four/baseline.json"))

    pr_inputs = [str(evals), "--actuals", str(pr_run)]
    outputs = [Path("out/report.json"), Path("out/comment.md"), Path("out/summary.md")]
    common = ["--baseline", "one/baseline.json", "--report", "out/report.json", "--comment", "out/comment.md",
              "--summary", "out/summary.md"]
    assert main(["compare", *pr_inputs, *common], {}) == 1  # the "pr" run regresses cases
    one = _aside(outputs, tmp_path / "one")
    parts = _shards(tmp_path / "c", "compare", pr_inputs)
    sizes = [len([c for es in json.loads(p.read_text())["eval_sets"] for c in es["cases"]]) for p in parts]
    assert sum(sizes) == 300 and max(sizes) - min(sizes) <= 10
    assert main(["merge", *map(str, parts), "--eval-sets", str(evals), "--actuals", str(pr_run), *common], {}) == 1
    for before, after in zip(one, outputs, strict=True):
        _same_files(before, after)
    report = json.loads(outputs[0].read_text())
    assert report["shard"] is None and report["totals"]["cases"] == 300
    assert any("unknown key 'owner'" in n for es in report["eval_sets"] for n in es["notices"])


@pytest.fixture(scope="module")
def parts(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    """Four parts of the bundled example."""
    return _shards(tmp_path_factory.mktemp("parts"), "run", EXAMPLE)


def _edited(tmp_path: Path, part: Path, edit: Any, name: str | None = None) -> Path:
    data = json.loads(part.read_text())
    edit(data)
    out = tmp_path / (name or part.name)
    out.write_text(json.dumps(data))
    return out


def _merge(paths: list[Path], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    code = main(["merge", *map(str, paths)], {})
    return code, capsys.readouterr().err


def test_merge_joins_a_directory_of_parts(parts: list[Path], capsys: pytest.CaptureFixture[str]) -> None:
    code, err = _merge([parts[0].parent], capsys)
    assert code == 1  # the example has failing cases: run's exit code
    assert err.startswith("evalbot: warning: no --eval-sets given") and err.count("\n") == 1


def test_missing_shard_is_exit_3_naming_the_shard_and_cases(parts: list[Path],
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    lost = [c["eval_id"] for es in json.loads(parts[2].read_text())["eval_sets"] for c in es["cases"]]
    code, err = _merge([parts[0], parts[1], parts[3]], capsys)
    assert code == 3
    assert "shard 3/4 missing" in err and all(case in err for case in lost), err


def test_missing_shard_overwrites_the_comment_and_summary_files(parts: list[Path], tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    """A stale comment file from an earlier (passing) run must not be posted for this one."""
    comment, summary = tmp_path / "comment.md", tmp_path / "summary.md"
    comment.write_text("<!-- evalbot id=default -->\n### ✅ evalbot: passed\n")
    summary.write_text("### ✅ evalbot: passed\n")
    code = main(["merge", str(parts[0]), str(parts[3]), "--comment", str(comment), "--summary", str(summary)], {})
    assert code == 3, capsys.readouterr().err
    lines = comment.read_text().splitlines()
    assert lines[:2] == ["<!-- evalbot id=default -->",
                         "### ⛔ evalbot: could not measure, not passing: shards 2/4, 3/4 missing"]
    assert summary.read_text().startswith("### ⛔ evalbot: could not measure, not passing: shards 2/4, 3/4 missing")


def test_case_dropped_from_a_part_is_missing(parts: list[Path], tmp_path: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    def drop(data: dict[str, Any]) -> None:
        for es in data["eval_sets"]:
            es["cases"] = es["cases"][1:]
    code, err = _merge([_edited(tmp_path, parts[0], drop), *parts[1:]], capsys)
    assert code == 3 and "cases missing" in err


@pytest.mark.parametrize(("edit", "message"), [
    (lambda d: d.update(evalbot_version="9.9.9"), "different evalbot versions"),
    (lambda d: d["shard"].update(count=5), "different shard counts"),
    (lambda d: d["shard"].update(judge_models=["gemini-other"]), "different judge models"),
    (lambda d: d["shard"].update(config="0" * 32), "different configs"),
    (lambda d: d["shard"]["eval_sets"][0]["cases"].pop(), "does not match its own fingerprint"),
    (lambda d: d["eval_sets"][0]["criteria"][0].update(threshold=0.1), "do not match its config fingerprint"),
    (lambda d: d.update(shard=None), "not part of a sharded run"),
    (lambda d: d["eval_sets"][0]["notices"].append("forged"), "different results for eval set"),
])
def test_merge_refuses_parts_that_disagree(parts: list[Path], tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                           edit: Any, message: str) -> None:
    code, err = _merge([parts[0], _edited(tmp_path, parts[1], edit), *parts[2:]], capsys)
    assert code == 2 and message in err and "part-2.json" in err, err


def test_overlapping_parts_are_refused(parts: list[Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, err = _merge([parts[0], parts[0], *parts[1:]], capsys)
    assert code == 2 and "shard 1/4 is given twice" in err
    relabelled = _edited(tmp_path, parts[1], lambda d: d["shard"].update(index=3), "forged.json")
    code, err = _merge([parts[0], relabelled, parts[3]], capsys)
    assert code == 2 and "forged.json (shard 3/4) holds case" in err and "the parts overlap" in err


def test_a_part_with_a_config_of_its_own_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = tmp_path / "test_config.json"
    config.write_text(json.dumps({"criteria": {"response_match_score": 0.1}}))
    one = tmp_path / "1.json"
    two = tmp_path / "2.json"
    assert main(["run", *EXAMPLE, "--shard", "1/2", "--report", str(one)], {}) in (0, 1)
    assert main(["run", *EXAMPLE, "--shard", "2/2", "--config", str(config), "--report", str(two)], {}) in (0, 1)
    capsys.readouterr()
    code, err = _merge([one, two], capsys)
    assert code == 2 and "different configs" in err


def test_old_report_without_shard_loads() -> None:
    """Reports written before sharding existed have no ``shard`` key: they still load."""
    from evalbot.results import Report

    old = {"schema_version": 1, "evalbot_version": "0.0.9", "eval_sets": [], "errors": [], "notices": [],
           "totals": {"cases": 0}, "usage": None}
    assert Report.model_validate_json(json.dumps(old)).shard is None


@pytest.mark.parametrize(("content", "message"), [
    (b"\xff\xfe{}", "not an evalbot report"),
    (b'{"eval_sets": ' + b"[" * 3000 + b"]" * 3000 + b"}", "not an evalbot report"),
    (b'{"schema_version": 1, "hacked": true}', "not an evalbot report"),
    (b'{"notices": ["\\ud800"]}', "not an evalbot report"),
    (b"", "not an evalbot report"),
])
def test_hostile_part_content_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str], content: bytes,
                                         message: str) -> None:
    bad = tmp_path / "bad.json"
    bad.write_bytes(content)
    code, err = _merge([bad], capsys)
    assert code == 2 and "bad.json" in err and message in err, err


def test_hostile_part_files_are_refused(parts: list[Path], tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                        monkeypatch: pytest.MonkeyPatch) -> None:
    fifo = tmp_path / "fifo.json"
    os.mkfifo(fifo)
    code, err = _merge([parts[0], fifo], capsys)
    assert code == 2 and "not a regular file" in err
    link = tmp_path / "link.json"
    link.symlink_to(parts[1])
    code, err = _merge([parts[0], link], capsys)
    assert code == 2 and "symlink" in err
    folder = tmp_path / "dir"
    folder.mkdir()
    (folder / "evil.json").symlink_to("/etc/passwd")
    code, err = _merge([folder], capsys)
    assert code == 2 and "symlink" in err
    monkeypatch.setattr(evalbot.shard.parts, "MAX_PART_BYTES", 1000)
    code, err = _merge(parts, capsys)
    assert code == 2 and "limit 1,000" in err
    code, err = _merge([tmp_path / "absent.json"], capsys)
    assert code == 2 and "not found" in err


def test_shard_flag_is_validated(capsys: pytest.CaptureFixture[str]) -> None:
    for raw in ("0/3", "4/3", "x"):
        with pytest.raises(SystemExit) as exc:
            main(["run", *EXAMPLE, "--shard", raw], {})
        assert exc.value.code == 2
        assert "argument --shard" in capsys.readouterr().err


def test_shard_of_compare_only_writes_its_part(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["compare", *EXAMPLE, "--shard", "1/2", "--comment", str(tmp_path / "c.md")], {})
    assert code == 2 and "give --comment to `evalbot merge`" in capsys.readouterr().err
    code = main(["compare", *EXAMPLE, "--shard", "1/2"], {})
    assert code == 2 and "--shard needs --report PART.json" in capsys.readouterr().err


def test_agent_runs_only_the_shards_cases(tmp_path: Path) -> None:
    """With --agent each shard runs and records only its cases; merged, they are the whole run."""
    folder = tmp_path / "suite"
    evals, _, _ = write_suite(folder, cases=12, sets=2)
    recorded: list[set[str]] = []
    parts = []
    for k in (1, 2, 3):
        record, part = tmp_path / f"rec{k}.json", tmp_path / f"part{k}.json"
        main(["run", str(evals), "--agent", "tests.fakes.agents:echo", "--shard", f"{k}/3", "--record", str(record),
              "--report", str(part)], {})
        data = json.loads(record.read_text())
        recorded.append({c["eval_id"] for r in (data if isinstance(data, list) else [data])
                         for c in r["eval_case_results"]})
        parts.append(part)
    assert sum(len(r) for r in recorded) == 12 and len(set().union(*recorded)) == 12
    merged = tmp_path / "merged.json"
    main(["merge", *map(str, parts), "--report", str(merged)], {})
    assert json.loads(merged.read_text())["totals"]["cases"] == 12


def test_a_part_1_of_1_omitting_the_regressed_case_is_exit_3_naming_it(tmp_path: Path,
                                                                      capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 24: a part "1/1" scored on eval sets that lack the regressed case is internally consistent, so merged
    alone it was exit 0 "no regressions"; with --eval-sets the merged case list is checked against those eval sets:
    exit 3, the headline names the case. A case the eval sets do not have is a notice."""
    evals = tmp_path / "evals"
    shutil.copytree("examples/evals", evals)
    orders = evals / "orders" / "orders.evalset.json"
    data = json.loads(orders.read_text())
    data["eval_cases"] = [c for c in data["eval_cases"] if c["eval_id"] != "refund_damaged_item"]
    orders.write_text(json.dumps(data))
    part = tmp_path / "part.json"
    inputs = [str(evals), *EXAMPLE[1:]]
    assert main(["run", *inputs, "--shard", "1/1", "--report", str(part)], {}) in (0, 1)
    comment = tmp_path / "comment.md"
    code = main(["merge", str(part), "--baseline", EXAMPLE_BASELINE, "--eval-sets", "examples/evals",
                 "--comment", str(comment)], {})
    assert code == 3, capsys.readouterr().err
    headline = comment.read_text().splitlines()[1]
    assert headline.startswith("### ⛔ evalbot: could not measure, not passing: 1 case(s) of the eval sets given with "
                               "--eval-sets missing from the merged results (orders/refund\\_damaged\\_item)"), headline
    assert "orders/refund_damaged_item" in capsys.readouterr().err

    report = tmp_path / "merged.json"  # the other way round: the part has a case the eval sets given lack
    assert main(["merge", str(part), "--eval-sets", str(evals / "faq"), "--report", str(report)], {}) in (0, 1)
    notices = json.loads(report.read_text())["notices"]
    assert any("in no eval set given with --eval-sets (orders/" in n for n in notices), notices


def test_pass_rule_problems_of_each_part_merge_into_the_one_jobs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A pass_rule "2/3" over one recorded run per case: each shard job names its own undecidable cases (its part's
    errors differ), which is not a disagreement; the merge's comment is the one job's, byte for byte (exit 2)."""
    shutil.copytree("examples", tmp_path / "examples")
    monkeypatch.chdir(tmp_path)
    for config in Path("examples/evals").glob("*/test_config.json"):
        data = json.loads(config.read_text())
        data["evalbot"] = {**data.get("evalbot", {}), "pass_rule": "2/3"}
        config.write_text(json.dumps(data))
    compare = ["compare", "--baseline", EXAMPLE_BASELINE, *EXAMPLE]
    assert main([*compare, "--comment", "one.md"], {}) == 2
    for k in (1, 2):
        assert main([*compare, "--shard", f"{k}/2", "--report", f"p{k}.json"], {}) == 2
    errors = [[p["message"] for es in json.loads(Path(f"p{k}.json").read_text())["eval_sets"] for p in es["errors"]]
              for k in (1, 2)]
    assert errors[0] != errors[1] and all(m.startswith("pass_rule 2/3") for e in errors for m in e)
    assert main(["merge", "p1.json", "p2.json", "--eval-sets", "examples/evals", "--actuals", "examples/runs/pr.json",
                 "--judge-cache", "examples/judge-cache", "--judge-replay", "--baseline", EXAMPLE_BASELINE,
                 "--comment", "two.md"], {}) == 2
    _same_files(Path("one.md"), Path("two.md"))


def test_the_merge_of_a_compared_run_spills_its_cases(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`evalbot merge --baseline` holds every case of the parts, as compare does: their turns and verdicts go to a
    PackedSpill (written there, read back for the comment and report), and the outputs are those of a merge whose
    spill cannot be made (no temporary folder: everything held in memory)."""
    made: list[PackedSpill] = []

    class Watched(PackedSpill):
        def __init__(self) -> None:
            super().__init__()
            made.append(self)

    parts = _shards(tmp_path, "compare", [*EXAMPLE, "--baseline", EXAMPLE_BASELINE])
    monkeypatch.setattr(cli_compare, "PackedSpill", Watched)
    outputs = []
    for tmp in (None, str(tmp_path / "missing")):
        if tmp is not None:
            monkeypatch.setattr(tempfile, "tempdir", tmp)
        made.clear()
        report, comment = tmp_path / "report.json", tmp_path / "comment.md"
        code = main(["merge", *map(str, parts), "--baseline", EXAMPLE_BASELINE, "--eval-sets", "examples/evals",
                     "--actuals", "examples/runs/pr.json", "--judge-cache", "examples/judge-cache", "--judge-replay",
                     "--report", str(report), "--comment", str(comment)], {})
        assert code == 1 and len(made) == 1
        assert (made[0]._written + len(made[0]._pending) > 0) is (tmp is None) and made[0]._broken is (tmp is not None)
        outputs.append((report.read_bytes(), comment.read_bytes()))
    assert outputs[0] == outputs[1]
