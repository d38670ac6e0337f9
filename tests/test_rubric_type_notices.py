"""Case and invocation rubrics no configured criterion reads get a notice (ADK drops them without a word): one per
rubric type, untyped ones, and unknown types (named, clipped, collapsed); rubrics missing an id are refused."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from evalbot.pipeline import evaluate
from tests.fakes.builders import case, eval_set, inv


def rubric(rid: str, rtype: str | None) -> dict[str, Any]:
    out: dict[str, Any] = {"rubric_id": rid, "rubric_content": {"text_property": f"Property {rid}."}}
    if rtype is not None:
        out["type"] = rtype
    return out


def _notices(tmp_path: Path, criteria: dict[str, Any], case_rubrics: list[dict[str, Any]],
             turn_rubrics: list[dict[str, Any]] | None = None) -> list[str]:
    turn = {**inv("hello"), **({"rubrics": turn_rubrics} if turn_rubrics else {})}
    path = tmp_path / "s.evalset.json"
    path.write_text(json.dumps(eval_set("s", case("a", turn, rubrics=case_rubrics))), encoding="utf-8")
    config = tmp_path / "test_config.json"
    config.write_text(json.dumps({"criteria": criteria}), encoding="utf-8")
    report = evaluate([str(path)], config=str(config))
    assert not report.errors, report.errors
    return [n for n in report.eval_sets[0].notices if "rubrics" in n]


def test_trajectory_rubrics_without_their_criterion_get_a_notice_naming_it(tmp_path: Path) -> None:
    """TRAJECTORY_QUALITY rubrics on a case, with only a non-rubric criterion configured: the notice says which
    criterion would read them; the types a configured criterion reads get none."""
    notices = _notices(tmp_path, {"response_match_score": 0.5},
                       [rubric("t", "TRAJECTORY_QUALITY")], [rubric("u", "TOOL_USE_QUALITY")])
    assert len(notices) == 2
    trajectory = next(n for n in notices if "rubrics typed 'TRAJECTORY_QUALITY' are not used" in n)
    assert "add rubric_based_multi_turn_trajectory_quality_v1 to the config" in trajectory
    assert any("rubrics typed 'TOOL_USE_QUALITY' are not used" in n for n in notices)
    configured = {"rubric_based_multi_turn_trajectory_quality_v1": 0.5, "rubric_based_tool_use_quality_v1": 0.5}
    assert _notices(tmp_path, configured, [rubric("t", "TRAJECTORY_QUALITY")],
                    [rubric("u", "TOOL_USE_QUALITY")]) == []


def test_untyped_and_unknown_types_are_named_clipped_and_collapsed(tmp_path: Path) -> None:
    """Untyped rubrics: one notice listing the types read; unknown types: one notice naming three (each at most 40
    characters) and how many more."""
    weird = ["X" * 5000, "<b>bold</b>", "trajectory_quality", "other", "zzz"]
    notices = _notices(tmp_path, {"rubric_based_final_response_quality_v1": 0.5},
                       [rubric("n", None)] + [rubric(f"w{k}", t) for k, t in enumerate(weird)])
    assert len(notices) == 2
    assert "without a \"type\" are not used" in notices[0] and "'TRAJECTORY_QUALITY'" in notices[0]
    assert "and 2 more are not used: no criterion reads those types" in notices[1]
    assert "X" * 41 not in notices[1] and len(notices[1]) < 400


def test_a_rubric_without_an_id_is_refused_naming_the_file(tmp_path: Path) -> None:
    """A rubric missing its rubric_id is an input error on that eval set, not a silent skip."""
    path = tmp_path / "s.evalset.json"
    bad = {"rubric_content": {"text_property": "No id."}, "type": "TRAJECTORY_QUALITY"}
    path.write_text(json.dumps(eval_set("s", case("a", rubrics=[bad]))), encoding="utf-8")
    report = evaluate([str(path)])
    problems = [p.message for p in report.errors] + [p.message for es in report.eval_sets for p in es.errors]
    problems += [c.reason or "" for es in report.eval_sets for c in es.cases]
    assert any("rubric_id" in p for p in problems), problems
