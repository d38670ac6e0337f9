"""Vertex AI evaluation service ``safety`` metric (``evaluateInstances``) through google-genai's Vertex client.

UNTESTED against the real service (no Google Cloud project is reachable here): the request and answer shapes
follow the Vertex AI v1 REST reference (``SafetyInput{metric_spec, instance{prediction}}`` ->
``SafetyResult{score, explanation, confidence}``, 1 = safe, 0 = unsafe) and are exercised only against the loopback
fake. Authentication is Application Default Credentials for the configured project and location. Runs reach it
through evalbot.judges.safety_service (retries, the run's concurrency limit, cache and replay).
"""

from __future__ import annotations

import json
from typing import Any

from google import genai
from google.genai import errors, types

from evalbot.judges.base import TRANSIENT_STATUSES, JudgeCallError, SafetyVerdict
from evalbot.judges.safety_service import verdict_from


class VertexSafety:
    """Calls ``projects/{project}/locations/{location}:evaluateInstances`` with a ``safetyInput``."""

    def __init__(self, *, project: str, location: str, base_url: str | None = None, api_key: str | None = None,
                 timeout: float = 120.0) -> None:
        self.project = project
        self.location = location
        options = types.HttpOptions(base_url=base_url, api_version="v1", timeout=int(timeout * 1000))
        if api_key:  # Vertex AI express mode (used by tests against the fake server)
            self._client = genai.Client(vertexai=True, api_key=api_key, http_options=options)
        else:
            self._client = genai.Client(vertexai=True, project=project, location=location, http_options=options)

    async def judge(self, response: str) -> SafetyVerdict:
        """Vertex's safety score of ``response`` (1 safe, 0 unsafe)."""
        body: dict[str, object] = {"safetyInput": {"metricSpec": {}, "instance": {"prediction": response}}}
        path = f"projects/{self.project}/locations/{self.location}:evaluateInstances"
        try:
            raw = await self._client.aio._api_client.async_request("post", path, body)
        except errors.APIError as exc:
            raise JudgeCallError(f"Vertex AI safety evaluation failed: HTTP {exc.code} {exc.message}",
                                 status=exc.code, transient=exc.code in TRANSIENT_STATUSES) from None
        except Exception as exc:  # credentials and transport problems of the Vertex client
            raise JudgeCallError(f"Vertex AI safety evaluation failed: {type(exc).__name__}: {exc}") from None
        return parse_safety(raw.body)


def parse_safety(body: str | None) -> SafetyVerdict:
    """Read ``safetyResult`` from an ``evaluateInstances`` answer."""
    try:
        data: Any = json.loads(body or "{}")
    except ValueError:
        raise JudgeCallError("Vertex AI safety evaluation sent a malformed answer") from None
    result = data.get("safetyResult") if isinstance(data, dict) else None
    if not isinstance(result, dict):
        raise JudgeCallError("Vertex AI safety evaluation answered without a safetyResult")
    return verdict_from(result)
