"""Fuzzing: hostile eval sets, actuals and configs never crash a run (bounded for CI; see scripts/fuzz_campaign.py).

Each example runs ``evalbot compare`` and ``evalbot run`` on a good eval set plus the mutated document; any exception
other than evalbot's own input errors (which the CLI turns into exit 2) fails the test.
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, given, settings

from tests.fakes.fuzz_inputs import actuals_texts, config_texts, eval_set_texts, run_once

EXAMPLES = int(os.environ.get("EVALBOT_FUZZ_EXAMPLES", "15"))
FUZZ = settings(max_examples=EXAMPLES, deadline=None, database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


@FUZZ
@given(eval_set_texts)
def test_fuzzed_eval_sets_never_crash(text: str) -> None:
    run_once(eval_set=text)


@FUZZ
@given(actuals_texts)
def test_fuzzed_actuals_never_crash(text: str) -> None:
    run_once(actuals=text)


@FUZZ
@given(config_texts)
def test_fuzzed_configs_never_crash(text: str) -> None:
    run_once(config=text)
