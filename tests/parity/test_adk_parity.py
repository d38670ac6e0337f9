"""evalbot must score exactly as google-adk 2.13.0 does on the goldens made by scripts/make_adk_goldens.py.

Each golden holds ADK's LocalEvalService verdicts for one eval set + actuals file + criteria config; evalbot is
run on the same three inputs and every case, metric and invocation is compared: scores bit for bit (the same
IEEE-754 double, or both null), statuses and thresholds exactly.  ADK's informational efficiency metrics are
compared in their own test.  ``goldens/public/`` holds the goldens of the real eval sets collected from public
ADK projects (``samples/public/sources.json``); ``test_public_corpus_tally`` counts what was compared there and
prints CONTRIBUTING.md's figure (run it with ``-s`` to see the line).
"""

from __future__ import annotations

import hashlib
import json
import re
from functools import cache
from itertools import zip_longest
from pathlib import Path
from typing import Any

import pytest

from evalbot.criteria import INFORMATIONAL
from evalbot.criteria.response_match import UnicodeTokenizer, rouge1_f
from evalbot.pipeline import evaluate
from evalbot.results import CaseResult, MetricResult, Report

REPO = Path(__file__).resolve().parents[2]
GOLDENS = REPO / "tests/data/adk_parity/goldens"
PUBLIC = REPO / "tests/data/adk_parity/samples/public"
DERIVED_GOLDENS = sorted(p.name for p in GOLDENS.glob("*__*__*.json"))
PUBLIC_GOLDENS = sorted(f"public/{p.name}" for p in (GOLDENS / "public").glob("*__*__*.json"))
GOLDEN_FILES = DERIVED_GOLDENS + PUBLIC_GOLDENS
EFFICIENCY = ("tool_call_count_v1", "inference_call_count_v1", "token_usage_v1", "invocation_duration_v1")


@cache
def _golden(name: str) -> dict[str, Any]:
    """A golden, parsed once (the tests only read it)."""
    data: dict[str, Any] = json.loads((GOLDENS / name).read_text(encoding="utf-8"))
    return data


@cache
def _run(name: str) -> dict[str, CaseResult]:
    """evalbot's case results for a golden's inputs, given as repo-relative paths (cwd is the repo) like ADK's."""
    golden = _golden(name)
    # The eval set's own test_config.json is found beside it, as ADK finds it; other configs are passed explicitly.
    config = None if golden["config_name"] == "own" else golden["config_path"]
    report: Report = evaluate([golden["evalset"]], actuals=[golden["actuals"]], config=config)
    assert not report.errors, report.errors
    assert len(report.eval_sets) == 1
    eval_set = report.eval_sets[0]
    assert not eval_set.errors, eval_set.errors
    return {case.eval_id: case for case in eval_set.cases}


def _same(a: float | None, b: float | None) -> bool:
    """Bit for bit: both null, or the same IEEE-754 double (so 0.0 and -0.0 differ; an int equals its float)."""
    if a is None or b is None:
        return a is b
    return float(a).hex() == float(b).hex()


def _diffs(name: str, case_id: str, metric: str, adk: dict[str, Any], ours: MetricResult) -> list[str]:
    where = f"{name} case {case_id!r} {metric}"
    out = []
    if not _same(adk["score"], ours.score):
        out.append(f"{where}: score ADK {adk['score']!r} evalbot {ours.score!r}")
    if adk["status"] != ours.status:
        out.append(f"{where}: status ADK {adk['status']} evalbot {ours.status} ({ours.reason})")
    if not _same(adk["threshold"], ours.threshold):
        out.append(f"{where}: threshold ADK {adk['threshold']!r} evalbot {ours.threshold!r}")
    if len(adk["per_invocation"]) != len(ours.per_invocation):
        out.append(f"{where}: {len(adk['per_invocation'])} ADK invocations, {len(ours.per_invocation)} evalbot")
        return out
    for a, o in zip(adk["per_invocation"], ours.per_invocation, strict=True):
        at = f"{where} invocation #{a['index']}"
        if (a["invocation_id"] or None) != o.invocation_id:
            out.append(f"{at}: invocation_id ADK {a['invocation_id']!r} evalbot {o.invocation_id!r}")
        if not _same(a["score"], o.score):
            out.append(f"{at}: score ADK {a['score']!r} evalbot {o.score!r}")
        if a["status"] != o.status:
            out.append(f"{at}: status ADK {a['status']} evalbot {o.status} ({o.reason})")
    return out


@pytest.mark.parametrize("name", GOLDEN_FILES)
def test_case_and_criterion_verdicts_match_adk(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Case status, configured criteria and their per-invocation results equal ADK's."""
    monkeypatch.chdir(REPO)  # legacy list-of-turns eval_ids are the path string as passed
    golden = _golden(name)
    ours = _run(name)
    assert sorted(ours) == sorted(golden["cases"])
    problems: list[str] = []
    for case_id, adk_case in golden["cases"].items():
        case = ours[case_id]
        if case.status != adk_case["final_status"]:
            problems.append(f"{name} case {case_id!r}: status ADK {adk_case['final_status']} evalbot {case.status}"
                            f" ({case.reason})")
        for metric, adk_metric in adk_case["metrics"].items():
            if metric in EFFICIENCY:
                continue
            if metric not in case.metrics:
                problems.append(f"{name} case {case_id!r}: evalbot has no {metric}")
                continue
            problems += _diffs(name, case_id, metric, adk_metric, case.metrics[metric])
    assert not problems, "\n".join(problems)


EFFICIENCY_GOLDENS = [n for n in GOLDEN_FILES if _golden(n)["efficiency_metrics_included"]]


@pytest.mark.skipif(not INFORMATIONAL, reason="evalbot does not report ADK's efficiency metrics yet")
@pytest.mark.parametrize("name", EFFICIENCY_GOLDENS)
def test_efficiency_metrics_match_adk(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """ADK's informational efficiency metrics (tool calls, inference calls, tokens, duration) equal ADK's."""
    monkeypatch.chdir(REPO)
    golden = _golden(name)
    ours = _run(name)
    problems: list[str] = []
    for case_id, adk_case in golden["cases"].items():
        for metric in EFFICIENCY:
            if metric not in ours[case_id].metrics:
                problems.append(f"{name} case {case_id!r}: evalbot has no {metric}")
                continue
            ours_metric = _as_value(ours[case_id].metrics[metric])
            problems += _diffs(name, case_id, metric, adk_case["metrics"][metric], ours_metric)
    assert not problems, "\n".join(problems)


def _as_value(result: MetricResult) -> MetricResult:
    """Efficiency values are counts/seconds, kept in ``details["value"]`` (report scores stay in [0, 1] or null)."""
    per = [p.model_copy(update={"score": (p.details or {}).get("value")}) for p in result.per_invocation]
    return result.model_copy(update={"score": (result.details or {}).get("value"), "per_invocation": per})


DEVIATIONS = sorted(p.name for p in (GOLDENS / "deviations").glob("*.json"))


@pytest.mark.parametrize("name", DEVIATIONS)
def test_documented_deviations_report_error(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Where ADK aborts or silently skips a broken criterion, evalbot reports `error`; the rest still matches."""
    monkeypatch.chdir(REPO)
    golden = _golden(f"deviations/{name}")
    report = evaluate([golden["evalset"]], actuals=[golden["actuals"]], config=golden["config_path"])
    (case,) = report.eval_sets[0].cases
    assert case.status == "error", case
    if golden["adk_error"] is not None:  # ADK aborted the whole run: nothing else to compare
        assert "invocation" in (case.reason or ""), case.reason
        return
    (adk_case,) = golden["cases"].values()
    assert adk_case["final_status"] == "passed"  # what ADK would have let through
    skipped = {m for m, r in adk_case["metrics"].items() if r["status"] == "not_evaluated"}
    assert len(skipped) == 1
    problems: list[str] = []
    for metric, adk_metric in adk_case["metrics"].items():
        if metric in skipped:
            assert case.metrics[metric].status == "error", case.metrics[metric]
            assert case.metrics[metric].reason
        elif metric not in EFFICIENCY:
            problems += _diffs(name, case.eval_id, metric, adk_metric, case.metrics[metric])
    assert not problems, "\n".join(problems)


ROUGE = json.loads((GOLDENS / "rouge_tokens.json").read_text(encoding="utf-8"))


@pytest.mark.parametrize("item", ROUGE["tokens"], ids=lambda item: repr(item["text"])[:40])
def test_tokenizer_matches_adk(item: dict[str, Any]) -> None:
    """evalbot's ROUGE tokenizer yields ADK's tokens for mixed scripts, NFKC cases and stemming."""
    assert UnicodeTokenizer().tokenize(item["text"]) == item["tokens"]


@pytest.mark.parametrize(
    "pair", ROUGE["rouge1_pairs"], ids=lambda p: f"{p['candidate'][:20]!r}-{p['reference'][:20]!r}"
)
def test_rouge1_f_matches_adk(pair: dict[str, Any]) -> None:
    """ROUGE-1 F-measure between a candidate and a reference equals ADK's, bit for bit."""
    assert _same(rouge1_f(pair["candidate"], pair["reference"]), pair["fmeasure"])


def test_goldens_are_present() -> None:
    """The golden set covers every sample eval set and was made with ADK 2.13.0."""
    samples = {n.split("__")[0] for n in DERIVED_GOLDENS}
    assert len(DERIVED_GOLDENS) > 1000
    assert len(samples) == 10
    assert {_golden(n)["adk_version"] for n in GOLDEN_FILES[:: max(1, len(GOLDEN_FILES) // 50)]} == {"2.13.0"}


SOURCES: list[dict[str, Any]] = json.loads((PUBLIC / "sources.json").read_text(encoding="utf-8"))
UNLOADABLE: list[dict[str, str]] = _golden("public/unloadable.json")["files"]


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_public_files_are_the_recorded_bytes() -> None:
    """Every collected file is byte for byte the one at the recorded repository, commit and path, under a
    permissive licence, its test_config.json beside it; nothing else sits in samples/public."""
    expected = {PUBLIC / "README.md", PUBLIC / "sources.json"}
    problems = []
    for row in SOURCES:
        root = PUBLIC / row["repo"].replace("/", "__")
        assert row["license"] in {"Apache-2.0", "MIT"}, row
        assert len(row["commit"]) == 40 and int(row["commit"], 16) >= 0, row
        files = [(row["path"], row["sha256"])]
        if row["test_config"] is not None:
            files.append((row["test_config"]["path"], row["test_config"]["sha256"]))
        for rel, sha in files:
            expected.add(root / rel)
            if _sha256(root / rel) != sha:
                problems.append(f"{row['repo']}:{rel} is not the recorded file")
    assert not problems, problems
    assert {p for p in PUBLIC.rglob("*") if p.is_file()} == expected
    assert len({row["sha256"] for row in SOURCES}) == len(SOURCES)  # no two identical files


@pytest.mark.parametrize("item", UNLOADABLE, ids=lambda item: item["evalset"].split("/public/")[1])
def test_public_files_adk_cannot_load_get_a_clear_error(item: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> None:
    """Where ADK's own loader refuses a real file, evalbot scores nothing in it and says why, naming the file and
    the JSON path, instead of crashing or passing it."""
    monkeypatch.chdir(REPO)
    report = evaluate([item["evalset"]])
    (eval_set,) = report.eval_sets
    reasons = [str(p) for p in eval_set.errors] + [c.reason or "" for c in eval_set.cases]
    assert all(c.status == "error" for c in eval_set.cases), eval_set.cases
    assert reasons and all(Path(item["evalset"]).name in r and "/" in r for r in reasons), reasons


_MISSING = object()


def _tally(names: list[str]) -> tuple[int, int, set[str]]:
    """(scores compared, scores equal, eval sets) over these goldens: each metric's score and each invocation's,
    ADK's efficiency metrics included when evalbot reports them."""
    compared = equal = 0
    sets: set[str] = set()
    for name in names:
        golden = _golden(name)
        sets.add(golden["evalset"])
        ours = _run(name)
        for case_id, adk_case in golden["cases"].items():
            for metric, adk_metric in adk_case["metrics"].items():
                if metric in EFFICIENCY and not INFORMATIONAL:
                    continue
                result = ours[case_id].metrics.get(metric)
                if result is None:  # counted, never equal
                    compared += 1 + len(adk_metric["per_invocation"])
                    continue
                if metric in EFFICIENCY:
                    result = _as_value(result)
                ours_scores = [result.score, *(o.score for o in result.per_invocation)]
                adk_scores = [adk_metric["score"], *(a["score"] for a in adk_metric["per_invocation"])]
                for adk_score, our_score in zip_longest(adk_scores, ours_scores, fillvalue=_MISSING):
                    compared += adk_score is not _MISSING
                    equal += _MISSING not in (adk_score, our_score) and _same(adk_score, our_score)
    return compared, equal, sets


def test_public_corpus_tally(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """CONTRIBUTING.md's figure, computed: every score ADK gave on the real public eval sets (and on the derived
    samples), and evalbot's equal, bit for bit."""
    monkeypatch.chdir(REPO)
    compared, equal, sets = _tally(PUBLIC_GOLDENS)
    all_compared, all_equal, _ = _tally(DERIVED_GOLDENS)
    with capsys.disabled():
        print(f"\nADK parity: {equal} of {compared} scores bit for bit on {len(sets)} real eval sets from public ADK"
              f" projects ({len(PUBLIC_GOLDENS)} goldens; {len(UNLOADABLE)} more files ADK itself cannot load or score);"
              f" {all_equal} of {all_compared} on the {len(DERIVED_GOLDENS)} goldens of the derived samples")
    assert (equal, all_equal) == (compared, all_compared)
    assert len(sets) >= 50
    readme = " ".join((REPO / "CONTRIBUTING.md").read_text(encoding="utf-8").split())
    claim = re.search(r"on (\d+) real eval sets from public ADK projects, ([\d,]+) of ([\d,]+) deterministic scores"
                      r".*?plus ([\d,]+) of ([\d,]+) on the derived", readme)
    assert claim, "CONTRIBUTING.md lost its parity figure"
    assert [int(g.replace(",", "")) for g in claim.groups()] == [len(sets), equal, compared, all_equal, all_compared]
    assert sets <= {f"tests/data/adk_parity/samples/public/{r['repo'].replace('/', '__')}/{r['path']}" for r in SOURCES}
