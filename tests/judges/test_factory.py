"""Building the run's judge from an environment mapping."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path

import pytest

from evalbot.errors import ConfigError, RetryPolicy
from evalbot.judges.base import SERVICE_MISSING, JudgeCallError, JudgeRequest, ReplayMiss
from evalbot.judges.factory import MISSING_CREDENTIALS, DeferredBackend, judge_from_environ, service_credentials
from tests.fakes.fake_gemini import FakeGemini

FAST = RetryPolicy(attempts=3, base_delay=0.001, max_delay=0.01, max_retry_after=0.01)


def test_no_credentials_means_no_judge(monkeypatch: pytest.MonkeyPatch) -> None:
    """An empty mapping gives None even if the process environment has a key (only the mapping is read)."""
    monkeypatch.setenv("GOOGLE_API_KEY", "from-process-env")
    assert judge_from_environ({}) == (None, MISSING_CREDENTIALS)
    assert judge_from_environ({"GOOGLE_GENAI_USE_VERTEXAI": "true"}) == (None, MISSING_CREDENTIALS)


def test_gemini_api_key_and_base_url(fake: FakeGemini) -> None:
    """GEMINI_API_KEY and GOOGLE_GEMINI_BASE_URL from the mapping reach the service."""
    judge, _ = judge_from_environ({"GEMINI_API_KEY": "gk", "GOOGLE_GEMINI_BASE_URL": fake.url}, retry=FAST)
    assert judge is not None
    reply = asyncio.run(judge.generate(JudgeRequest("gemini-2.5-flash", "p", num_samples=5, purpose="c")))
    assert len(reply.texts) == 5
    assert [r.api_key for r in fake.requests] == ["gk"]
    assert judge.usage_summary().per_criterion["c"].requests == 1


def test_full_stack_retries_and_caches(fake: FakeGemini, tmp_path: Path) -> None:
    """Through the whole stack a 429 is retried, and a rebuilt stack answers from EVALBOT_JUDGE_CACHE."""
    env = {"GOOGLE_API_KEY": "k", "GOOGLE_GEMINI_BASE_URL": fake.url, "EVALBOT_JUDGE_CACHE": str(tmp_path)}
    fake.fault(429, retry_after="0")
    first, _ = judge_from_environ(env, retry=FAST)
    assert first is not None
    asyncio.run(first.generate(JudgeRequest("gemini-2.5-flash", "p", num_samples=5)))
    assert len(fake.requests) == 2 and first.usage_summary().retries == 1
    second, _ = judge_from_environ(env, retry=FAST)
    assert second is not None
    reply = asyncio.run(second.generate(JudgeRequest("gemini-2.5-flash", "p", num_samples=5)))
    assert reply.from_cache and len(fake.requests) == 2
    cache = second.usage_summary().cache
    assert cache is not None and cache.hits == 5 and cache.writes == 0


def test_replay_needs_a_cache_and_never_needs_credentials(tmp_path: Path) -> None:
    """Replay without a cache directory is a config error; with one it works without any key."""
    with pytest.raises(ConfigError, match="--judge-cache"):
        judge_from_environ({}, replay=True)
    judge, notice = judge_from_environ({}, replay=True, cache_dir=tmp_path)
    assert judge is not None and judge.backend is None and notice is None
    with pytest.raises(ReplayMiss):
        asyncio.run(judge.generate(JudgeRequest("gemini-2.5-flash", "p")))


def test_concurrency_setting_reaches_the_limiter(fake: FakeGemini) -> None:
    """--judge-concurrency becomes the limiter's bound."""
    judge, _ = judge_from_environ({"GOOGLE_API_KEY": "k", "GOOGLE_GEMINI_BASE_URL": fake.url}, concurrency=3)
    assert judge is not None and judge.limiter is not None and judge.limiter.limit == 3


def test_replay_with_service_credentials_replays_vertex_verdicts(tmp_path: Path) -> None:
    """With the evaluation service's credentials (a project and location, or GOOGLE_API_KEY), replay mode routes the
    Vertex criteria to the cache of the service's verdicts (a miss raises ReplayMiss); without them there is no
    service, and the reason says what to set."""
    for env in ({"GOOGLE_CLOUD_PROJECT": "p", "GOOGLE_CLOUD_LOCATION": "l"}, {"GOOGLE_API_KEY": "k"}):
        judge, _ = judge_from_environ(env, replay=True, cache_dir=tmp_path)
        assert judge is not None and judge.vertex_service is not None
        with pytest.raises(ReplayMiss, match="not in the cache"):
            asyncio.run(judge.vertex_service.evaluate({"instance": {}}, "safety_v1"))
    plain, _ = judge_from_environ({"GEMINI_API_KEY": "g"}, replay=True, cache_dir=tmp_path)
    assert plain is not None and plain.vertex_service is None
    assert plain.vertex_unavailable is not None and "GOOGLE_API_KEY" in plain.vertex_unavailable


def test_service_credentials_follow_adk() -> None:
    """As ADK 2.13's facade: GOOGLE_API_KEY first (express mode), else project and location; a project without a
    location (or the reverse) names the missing variable; GEMINI_API_KEY alone does not reach the service."""
    both = {"GOOGLE_API_KEY": "k", "GOOGLE_CLOUD_PROJECT": "p", "GOOGLE_CLOUD_LOCATION": "l"}
    assert service_credentials(both) == ({"api_key": "k"}, None)
    assert service_credentials({"GOOGLE_CLOUD_PROJECT": "p", "GOOGLE_CLOUD_LOCATION": "l"}) == (
        {"project": "p", "location": "l"}, None)
    none, why = service_credentials({"GOOGLE_CLOUD_PROJECT": "p"})
    assert none is None and why is not None and "GOOGLE_CLOUD_LOCATION is not set" in why
    assert service_credentials({"GEMINI_API_KEY": "g"}) == (None, SERVICE_MISSING)


def test_a_project_alone_reaches_the_service_without_an_llm_judge() -> None:
    """GOOGLE_CLOUD_PROJECT and GOOGLE_CLOUD_LOCATION without any LLM judge credentials still give a stack whose
    evaluation service is set (ADK needs nothing else); an LLM judge request then fails saying what to set."""
    judge, notice = judge_from_environ({"GOOGLE_CLOUD_PROJECT": "p", "GOOGLE_CLOUD_LOCATION": "l"})
    assert judge is not None and notice is None and judge.vertex_service is not None
    with pytest.raises(JudgeCallError, match="no Gemini credentials"):
        asyncio.run(judge.generate(JudgeRequest("gemini-2.5-flash", "p")))


def test_cached_answers_never_load_google_genai(fake: FakeGemini, tmp_path: Path) -> None:
    """With an API key, a run answered from the cache builds no client and never imports google-genai; the first
    miss builds it (the backend is deferred to the first request that reaches it)."""
    env = {"GOOGLE_API_KEY": "k", "GOOGLE_GEMINI_BASE_URL": fake.url, "EVALBOT_JUDGE_CACHE": str(tmp_path)}
    seeded, _ = judge_from_environ(env, retry=FAST)
    assert seeded is not None
    asyncio.run(seeded.generate(JudgeRequest("gemini-2.5-flash", "p", num_samples=2)))
    assert seeded.backend.built and len(fake.requests) == 1
    script = (
        "import asyncio, json, sys\n"
        "from evalbot.judges.base import JudgeRequest\n"
        "from evalbot.judges.factory import judge_from_environ\n"
        "judge, _ = judge_from_environ(json.loads(sys.argv[1]))\n"
        "hit = asyncio.run(judge.generate(JudgeRequest('gemini-2.5-flash', 'p', num_samples=2)))\n"
        "before = 'google.genai' in sys.modules\n"
        "miss = asyncio.run(judge.generate(JudgeRequest('gemini-2.5-flash', 'other', num_samples=2)))\n"
        "print(json.dumps([hit.from_cache, before, judge.backend.built, miss.from_cache,"
        " 'google.genai' in sys.modules]))\n"
    )
    done = subprocess.run([sys.executable, "-c", script, json.dumps(env)], capture_output=True, text=True, check=True)
    assert json.loads(done.stdout) == [True, False, True, False, True]
    assert len(fake.requests) == 2  # only the miss went to the service


def test_a_backend_that_cannot_be_built_is_a_config_error(tmp_path: Path) -> None:
    """A deferred backend failing to build raises ConfigError on the request that needed it (exit code 2)."""
    def broken() -> DeferredBackend:
        raise ValueError("bad option")

    backend = DeferredBackend(broken)  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="cannot set up the judge client: ValueError: bad option"):
        asyncio.run(backend.generate(JudgeRequest("gemini-2.5-flash", "p")))
    assert not backend.built
