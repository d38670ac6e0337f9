"""``test_config.json`` parsing: shorthand thresholds, criterion objects, and per-criterion errors."""

from __future__ import annotations

from typing import Any

import pytest

from evalbot.errors import InputError
from evalbot.formats.config import DEFAULT_CRITERIA, CriterionSpec, default_config, parse_config, snake_keys

WHERE = "cfg/test_config.json"


def spec(value: Any, name: str = "tool_trajectory_avg_score") -> CriterionSpec:
    """The single criterion parsed from ``{"criteria": {name: value}}``."""
    (only,) = parse_config({"criteria": {name: value}}, WHERE).criteria
    return only


def test_shorthand_number_and_numeric_string() -> None:
    """A bare number is the threshold (ints become floats; ADK's lax parsing accepts numeric strings too)."""
    assert (spec(1).threshold, spec(1).options, spec(1).error) == (1.0, {}, None)
    assert spec("0.5").threshold == 0.5


def test_object_keeps_options_in_snake_case() -> None:
    """An object's threshold is taken out; camelCase option keys become snake_case, nested ones too."""
    got = spec({"threshold": 0.9, "matchType": "IN_ORDER", "judgeModelOptions": {"numSamples": 3}})
    assert got.threshold == 0.9
    assert got.options == {"match_type": "IN_ORDER", "judge_model_options": {"num_samples": 3}}


def test_source_points_at_the_criterion() -> None:
    """Every spec knows the file and pointer it came from."""
    assert spec(1.0, name="a/b").source == f"{WHERE}:/criteria/a~1b"


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ({"match_type": "EXACT"}, "criterion object needs a 'threshold' key"),
        (True, "threshold must be a number, got True"),
        ("high", "threshold must be a number, got 'high'"),
        ([1], "threshold must be a number, got [1]"),
        ({"threshold": "x"}, "threshold must be a number, got 'x'"),
    ],
)
def test_bad_threshold_is_an_error_on_that_criterion(value: Any, message: str) -> None:
    """An unusable threshold is recorded on the criterion (ADK would reject the whole config or accept ``true``)."""
    parsed = parse_config({"criteria": {"response_match_score": 0.8, "tool_trajectory_avg_score": value}}, WHERE)
    good, bad = parsed.criteria
    assert good.error is None and good.threshold == 0.8
    assert (bad.threshold, bad.error) == (None, message)


@pytest.mark.parametrize(
    ("name", "value", "message"),
    [
        ("tool_trajectory_avg_score", float("nan"), "threshold must be a finite number, got nan"),
        ("tool_trajectory_avg_score", float("-inf"), "threshold must be a finite number, got -inf"),
        ("response_match_score", float("inf"), "threshold must be a finite number, got inf"),
        ("response_match_score", "-Infinity", "threshold must be a finite number, got '-Infinity'"),
        ("response_match_score", 1.5, "threshold must be between 0 and 1 (scores are in 0..1), got 1.5"),
        ("final_response_match_v2", -0.1, "threshold must be between 0 and 1 (scores are in 0..1), got -0.1"),
        ("failure", 2, "threshold must be between 0 and 1 (scores are in 0..1), got 2"),
        ("latency", -1, "threshold of latency is a maximum in seconds and cannot be negative, got -1"),
        ("latency", float("inf"), "threshold must be a finite number, got inf"),
    ],
)
def test_non_finite_or_out_of_range_threshold_is_an_error(name: str, value: Any, message: str) -> None:
    """NaN, ±Infinity and thresholds outside the score range are errors on that criterion (−Infinity used to make
    every case pass); latency takes any finite number of seconds ≥ 0."""
    got = spec(value, name=name)
    assert (got.threshold, got.error) == (None, message)
    assert spec(30, name="latency").threshold == 30.0 and spec(0, name="latency").error is None


def test_non_finite_threshold_from_json_text_errors_the_cases() -> None:
    """End to end through the JSON parser (which accepts NaN and -Infinity literals): the cases are errors."""
    import json

    parsed = parse_config(json.loads('{"criteria": {"tool_trajectory_avg_score": -Infinity}}'), WHERE)
    assert parsed.criteria[0].error is not None and parsed.criteria[0].threshold is None


def test_null_threshold_in_object_is_no_threshold() -> None:
    """``{"threshold": null}`` means no threshold, which is not an error here."""
    assert (spec({"threshold": None}).threshold, spec({"threshold": None}).error) == (None, None)


@pytest.mark.parametrize(
    ("data", "pointer", "message"),
    [
        ([], "", "expected a JSON object with a 'criteria' key, got list"),
        ("x", "", "expected a JSON object with a 'criteria' key, got str"),
        ({"criteria": [1]}, "/criteria", "expected an object mapping criterion names to thresholds"),
        ({"user_simulator_config": 1}, "/user_simulator_config", "expected an object"),
        ({"custom_metrics": [1]}, "/custom_metrics", "expected an object mapping metric names to definitions"),
        ({"evalbot": "on"}, "/evalbot", "expected an object of evalbot settings"),
    ],
)
def test_unusable_config_raises_with_pointer(data: Any, pointer: str, message: str) -> None:
    """A config that is not an object, or whose sections have the wrong type, raises InputError naming the spot."""
    with pytest.raises(InputError) as info:
        parse_config(data, WHERE)
    assert (info.value.path, info.value.pointer, info.value.message) == (WHERE, pointer, message)


def test_sections_accept_camel_case() -> None:
    """userSimulatorConfig and customMetrics are read in either casing and normalised to snake_case."""
    parsed = parse_config(
        {"userSimulatorConfig": {"maxAllowedInvocations": 5}, "customMetrics": {"m": {"codeConfig": {"name": "f"}}},
         "evalbot": {"comment": "x"}},
        WHERE,
    )
    assert parsed.user_simulator == {"max_allowed_invocations": 5}
    assert parsed.custom_metrics == {"m": {"code_config": {"name": "f"}}}
    assert parsed.extras == {"comment": "x"} and parsed.path == WHERE


def test_missing_criteria_means_adk_defaults() -> None:
    """A config without 'criteria' uses ADK's default criteria, like no config at all."""
    names = [(c.name, c.threshold) for c in parse_config({}, WHERE).criteria]
    assert names == [(c.name, c.threshold) for c in default_config().criteria] == list(DEFAULT_CRITERIA.items())


def test_snake_keys_recurses_into_lists() -> None:
    """Keys inside lists of objects are converted; values are left alone."""
    assert snake_keys({"aB": [{"cD": "eF"}]}) == {"a_b": [{"c_d": "eF"}]}
