"""A split judge vote that flipped against the baseline is settled with more samples in one job and in a sharded run
alike (the shard job holding the case settles it): the comment, summary and report are the same bytes; a part that
settled otherwise (or claims to) is never merged into a verdict. Real CLI, real google-genai client, fake Gemini."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from evalbot.cli.commands import main
from tests.fakes.builders import Writer, case, eval_set, inv
from tests.fakes.fake_gemini import FakeGemini, TaggedResponder

V = '{"reasoning": "same facts", "is_the_agent_response_valid": "valid"}'
I = '{"reasoning": "a fact differs", "is_the_agent_response_valid": "invalid"}'  # noqa: E741
CONFIG: dict[str, Any] = {"criteria": {"final_response_match_v2": {
    "threshold": 0.5, "judge_model_options": {"num_samples": 5}}}}
CASES = ["a", "b", "c", "d"]
SPLIT = "c"
"""The case whose vote flips on a split vote: 5-0 on main, 2-3 on the PR, then 10 more samples (0-10): 2-13."""
N = 3


def script() -> TaggedResponder:
    """Main's run of the split case is tagged @@main@@, the PR's @@pr@@; every other judged text passes."""
    return TaggedResponder({"main": [V], "pr": [I, V, I, V, I] + [I] * 10, "": [V]})


@pytest.fixture
def proj(write: Writer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    write("evals/test_config.json", CONFIG)
    write("evals/s.evalset.json", eval_set("s", *(case(c, inv(f"q {c}", f"reference {c}")) for c in CASES)))
    for run in ("main", "pr"):
        write(f"runs/{run}.json", {c: [inv(f"q {c}", f"answer {c}" + (f" @@{run}@@" if c == SPLIT else ""))]
                                   for c in CASES})
    monkeypatch.chdir(tmp_path)
    return tmp_path


class Judge:
    """Each command gets the judge's script afresh, as a fresh job would."""

    def __init__(self, server: FakeGemini) -> None:
        self.server = server
        self.env = {"GOOGLE_API_KEY": "k", "GOOGLE_GEMINI_BASE_URL": server.url}

    def run(self, argv: list[str]) -> int:
        self.server.reset()
        self.server.responder = script()
        return main(argv, env=self.env)


@pytest.fixture
def judge(proj: Path) -> Iterator[Judge]:
    with FakeGemini() as server:
        j = Judge(server)
        assert j.run(["baseline", "evals", "--actuals", "runs/main.json", "--output", "base.json", "--commit", "a1",
                      "--created-at", "2026-01-01T00:00:00+00:00"]) == 0
        yield j


RUN = ["evals", "--actuals", "runs/pr.json"]
OUT = ["--report", "out/report.json", "--comment", "out/comment.md", "--summary", "out/summary.md"]
FILES = ["report.json", "comment.md", "summary.md"]


def _one_job(judge: Judge) -> dict[str, bytes]:
    assert judge.run(["compare", "--baseline", "base.json", *RUN, *OUT]) == 1
    return _taken()


def _taken() -> dict[str, bytes]:
    out = {name: (Path("out") / name).read_bytes() for name in FILES}
    for name in FILES:
        (Path("out") / name).unlink()
    return out


def _parts(judge: Judge, *flags: str) -> list[str]:
    parts = []
    for k in range(1, N + 1):
        part = f"parts/{k}.json"
        assert judge.run(["compare", *RUN, *flags, "--shard", f"{k}/{N}", "--report", part]) == 0
        parts.append(part)
    return parts


def _merge(judge: Judge, parts: list[str], *flags: str) -> int:
    return judge.run(["merge", *parts, "--eval-sets", "evals", "--actuals", "runs/pr.json", "--baseline", "base.json",
                      *flags, *OUT])


def _votes(report: bytes) -> dict[str, Any]:
    cases = {c["eval_id"]: c for es in json.loads(report)["eval_sets"] for c in es["cases"]}
    return dict(cases[SPLIT]["metrics"]["final_response_match_v2"]["per_invocation"][0]["details"]["votes"])


def test_one_job_and_shards_settle_alike(judge: Judge) -> None:
    """The split 2-3 flip gets 10 more samples in the one job and in the shard job that holds it (given the same
    --baseline): 2-13, settled, a blocking regression; comment, summary and report are byte-identical, and the
    comment's "Reproduce locally" command carries no --resample-split 0 any more."""
    one = _one_job(judge)
    assert _votes(one["report.json"]) == {"yes": 2, "no": 13, "unparsed": 0, "resampled": 10, "settled": True}
    assert "2–13 (after 10 more samples)" in one["comment.md"].decode()
    parts = _parts(judge, "--baseline", "base.json")
    holding = [p for p in parts if any(c["eval_id"] == SPLIT for es in json.loads(Path(p).read_text())["eval_sets"]
                                       for c in es["cases"])]
    assert len(holding) == 1 and len(parts) == N
    assert _merge(judge, parts) == 1
    sharded = _taken()
    for name in FILES:
        assert sharded[name] == one[name], name
    assert "--resample-split" not in sharded["comment.md"].decode()


def test_resample_split_zero_on_both_sides(judge: Judge) -> None:
    """--resample-split 0 to the shards and the merge: nothing settled, the flip stays inconclusive, and the comment
    equals the one job's with --resample-split 0."""
    assert judge.run(["compare", "--baseline", "base.json", *RUN, "--resample-split", "0", *OUT]) == 0
    alone = _taken()
    assert _votes(alone["report.json"]) == {"yes": 2, "no": 3, "unparsed": 0}
    parts = _parts(judge, "--baseline", "base.json", "--resample-split", "0")
    assert _merge(judge, parts, "--resample-split", "0") == 0
    sharded = _taken()
    for name in FILES:
        assert sharded[name] == alone[name], name


def test_shards_that_did_not_settle_are_never_merged_into_a_verdict(judge: Judge,
                                                                    capsys: pytest.CaptureFixture[str]) -> None:
    """Shards without the baseline settled nothing: merged and compared with base.json, the flip would read as
    inconclusive (not blocking) where one job blocks, so the merge refuses: exit 3, the headline saying why."""
    parts = _parts(judge)
    capsys.readouterr()
    assert _merge(judge, parts) == 3
    err = capsys.readouterr().err
    assert "settled split judge votes against no baseline" in err and "base.json (resample_split 10" in err
    headline = Path("out/comment.md").read_text(encoding="utf-8").splitlines()[1]
    assert headline.startswith("### ⛔ evalbot: could not measure, not passing: parts/1.json, parts/2.json, "
                               "parts/3.json settled split judge votes"), headline


@pytest.mark.parametrize("forged", [None, "0" * 32, "not a fingerprint"])
def test_a_forged_settling_fingerprint_is_refused(forged: str | None, judge: Judge,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    """A part whose settled_against was edited (removed, or another value) is not merged into a verdict: exit 3."""
    parts = _parts(judge, "--baseline", "base.json")
    data = json.loads(Path(parts[1]).read_text(encoding="utf-8"))
    assert data["shard"]["settled_against"]
    data["shard"]["settled_against"] = forged
    Path(parts[1]).write_text(json.dumps(data), encoding="utf-8")
    capsys.readouterr()
    assert _merge(judge, parts) == 3
    assert "parts/2.json settled split judge votes against" in capsys.readouterr().err


def test_a_shard_job_settles_against_the_baseline_it_is_given(judge: Judge) -> None:
    """The part of the split case records the 10 extra samples and what it settled against; the other parts
    record the same fingerprint."""
    parts = _parts(judge, "--baseline", "base.json")
    infos = [json.loads(Path(p).read_text(encoding="utf-8")) for p in parts]
    assert len({i["shard"]["settled_against"] for i in infos}) == 1
    split = next(i for i in infos if any(c["eval_id"] == SPLIT for es in i["eval_sets"] for c in es["cases"]))
    assert _votes(json.dumps(split).encode())["resampled"] == 10


def test_gate_options_are_still_refused_on_a_shard_job(proj: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """--fail-on and --comment remain the merge's: a shard job refuses them (exit 2), naming them."""
    assert main(["compare", *RUN, "--shard", "1/2", "--report", "p.json", "--fail-on", "never"], env={}) == 2
    assert "give --fail-on to `evalbot merge`" in capsys.readouterr().err
