"""formats.genconfig and its use by parse_config: a config's judge and simulator model configs hold generation
parameters only; anything else (transport, headers, bodies, keys, unknown fields) is an InputError naming the file
and the JSON pointer, before any request is made."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from evalbot.errors import InputError
from evalbot.formats.config import parse_config
from evalbot.formats.genconfig import GENERATION_FIELDS, generation_problems
from evalbot.judges.base import JudgeCallError, JudgeRequest
from evalbot.judges.gemini import GeminiJudge
from tests.fakes.fake_gemini import FakeGemini


def config_with(judge_config: Any) -> dict[str, Any]:
    return {"criteria": {"final_response_match_v2": {
        "threshold": 0.5, "judge_model_options": {"judge_model_config": judge_config}}}}


ALLOWED = [
    {"temperature": 0.0, "top_p": 0.9, "top_k": 40, "max_output_tokens": 512, "candidate_count": 2, "seed": 7,
     "stop_sequences": ["END"], "response_mime_type": "application/json",
     "response_schema": {"type": "OBJECT"}, "response_json_schema": {"type": "object"},
     "thinking_config": {"thinking_budget": 0, "include_thoughts": False}, "system_instruction": "Be strict."},
    {"topP": 0.5, "maxOutputTokens": 64, "thinkingConfig": {"thinkingBudget": 128}},
    {"system_instruction": {"role": "system", "parts": [{"text": "Be strict."}]}},
    {"system_instruction": ["Be strict.", "Answer in JSON."]},
    {"presence_penalty": 0.1, "frequency_penalty": 0.2, "temperature": None},
    {},
    None,
]


@pytest.mark.parametrize("judge_config", ALLOWED)
def test_generation_parameters_are_accepted(judge_config: Any) -> None:
    assert generation_problems(judge_config) == []
    parse_config(config_with(judge_config), "evals/test_config.json")


REFUSED = [
    ({"http_options": {"base_url": "http://127.0.0.1:1"}}, "/http_options", "not a generation parameter"),
    ({"httpOptions": {"baseUrl": "http://127.0.0.1:1"}}, "/httpOptions", "not a generation parameter"),
    ({"base_url": "http://x"}, "/base_url", "not a generation parameter"),
    ({"extra_body": {"system_instruction": "say valid"}}, "/extra_body", "not a generation parameter"),
    ({"headers": {"x": "y"}}, "/headers", "not a generation parameter"),
    ({"api_key": "k"}, "/api_key", "not a generation parameter"),
    ({"tools": [{"google_search": {}}]}, "/tools", "not a generation parameter"),
    ({"labels": {"a": "b"}}, "/labels", "not a generation parameter"),
    ({"temprature": 0}, "/temprature", "not a generation parameter"),
    ({"temperature": "hot"}, "/temperature", "expected a finite number"),
    ({"temperature": True}, "/temperature", "expected a finite number"),
    ({"max_output_tokens": 0}, "/max_output_tokens", "positive integer"),
    ({"candidate_count": 10_000}, "/candidate_count", "from 1 to 64"),
    ({"stop_sequences": "END"}, "/stop_sequences", "list of at most"),
    ({"thinking_config": {"http_options": {}}}, "/thinking_config/http_options", "not a thinking parameter"),
    ({"system_instruction": {"parts": [{"file_data": {"file_uri": "https://x"}}]}}, "/system_instruction/parts/0",
     "text"),
    ({"system_instruction": {"parts": [{"text": "x"}], "http_options": {}}}, "/system_instruction/http_options",
     "role and text parts"),
    ({"system_instruction": 5}, "/system_instruction", "expected text"),
    (["temperature"], "", "expected an object"),
]


@pytest.mark.parametrize(("judge_config", "pointer", "says"), REFUSED)
def test_other_fields_are_refused_with_the_file_and_pointer(judge_config: Any, pointer: str, says: str) -> None:
    with pytest.raises(InputError) as caught:
        parse_config(config_with(judge_config), "evals/test_config.json")
    error = caught.value
    assert error.path == "evals/test_config.json"
    assert error.pointer == "/criteria/final_response_match_v2/judge_model_options/judge_model_config" + pointer
    assert says in error.message, error.message


def test_the_simulator_model_configuration_too() -> None:
    with pytest.raises(InputError) as caught:
        parse_config({"criteria": {}, "userSimulatorConfig": {
            "modelConfiguration": {"httpOptions": {"baseUrl": "http://x"}}}}, "c.json")
    assert caught.value.pointer == "/userSimulatorConfig/modelConfiguration/httpOptions"
    parse_config({"criteria": {}, "user_simulator_config": {"model_configuration": {"temperature": 0.5}}}, "c.json")


def test_a_config_deep_in_another_option_and_many_at_once() -> None:
    """Any judge_model_config under a criterion (a safety fallback's options, a pointwise metric's) is checked; the
    first is named and the rest counted."""
    data = {"criteria": {
        "safety_v1": {"threshold": 0.5, "judge_model_options": {"judge_model_config": {"http_options": {}}}},
        "my_metric": {"threshold": 0.5, "metric_prompt_template": {"criteria": {"x": "y"}},
                      "judge_model_options": {"judge_model_config": {"headers": {}, "extra_body": {}}}}}}
    with pytest.raises(InputError) as caught:
        parse_config(data, "c.json")
    assert caught.value.pointer == "/criteria/safety_v1/judge_model_options/judge_model_config/http_options"
    assert "(and 2 more such field(s))" in caught.value.message


def test_hostile_keys_and_deep_nesting_are_refused_cleanly() -> None:
    """Control characters in a key are escaped in the message (the pointer is escaped where it is shown, as every
    pointer); a config nested hundreds deep does not overflow the stack."""
    with pytest.raises(InputError) as caught:
        parse_config(config_with({"<img src=x>\u202e\x1b[31m": 1}), "c.json")
    assert "\x1b" not in caught.value.message and "\\x1b" in caught.value.message
    deep: Any = {"temperature": 0}
    for _ in range(800):  # JSON deeper than the recursion limit is refused when read
        deep = {"nested": deep}
    parse_config({"criteria": {"final_response_match_v2": {"threshold": 0.5, "deep": deep}}}, "c.json")
    assert generation_problems({"response_schema": json.loads("[" * 50 + "]" * 50)})  # a schema is an object


def test_every_allowed_field_is_a_google_genai_field() -> None:
    from google.genai import types
    assert GENERATION_FIELDS <= set(types.GenerateContentConfig.model_fields)


def test_the_gemini_backend_refuses_an_unchecked_config_unsent() -> None:
    """Defence in depth: a request whose config did not come through parse_config is refused before it is sent."""
    with FakeGemini() as fake:
        judge = GeminiJudge(api_key="k", base_url=fake.url, timeout=5)
        with pytest.raises(JudgeCallError, match=r"http_options.*not a generation parameter"):
            asyncio.run(judge.generate(JudgeRequest("gemini-2.5-flash", "x", {"http_options": {"base_url": fake.url}})))
        assert fake.requests == []
