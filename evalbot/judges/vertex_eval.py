"""The Vertex AI evaluation service (``evaluateInstances``) through google-genai's Vertex client, as ADK 2.13 reaches it.

ADK 2.13 (``vertex_ai_eval_facade.py``) builds its client from ``GOOGLE_API_KEY`` (Vertex AI express mode) when set,
else from ``GOOGLE_CLOUD_PROJECT`` and ``GOOGLE_CLOUD_LOCATION`` (application default credentials); so does
evalbot (judges.factory). The request goes to ``v1beta1`` at the path the Gen AI evaluation SDK uses,
``:evaluateInstances`` below the client's base (``projects/{project}/locations/{location}/`` in project mode), with
the JSON body the criterion builds (``metrics: [{predefined_metric_spec: {metric_spec_name}}]`` and ``instance``, or
a legacy ``coherence_input``).

UNTESTED against the real service (no Google Cloud project or express-mode key is reachable here). The request
paths, headers and bodies were recorded from google-adk 2.13.0 with google-cloud-agentplatform 2.6.0 talking to a
loopback server; the answer shape (``metricResults[0]``: ``score``, ``explanation``, ``rubricVerdicts``, ``error``;
``coherenceResult``: ``score``, ``explanation``) follows the v1beta1 REST reference and the SDK's parser, and is
exercised only against the loopback fake (tests/fakes/fake_vertex_eval.py). Runs reach the service through
evalbot.judges.service_layers (retries, the run's concurrency limit, cache and replay).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from google import genai
from google.genai import errors, types

from evalbot.judges.base import TRANSIENT_STATUSES, JudgeCallError, ServiceVerdict
from evalbot.judges.service_layers import verdict_from_answer
from evalbot.redact import scrub

API_VERSION = "v1beta1"
PATH = ":evaluateInstances"


class VertexEvaluation:
    """Posts ``evaluateInstances`` requests: express mode with ``api_key``, else ``project`` and ``location``."""

    def __init__(self, *, api_key: str | None = None, project: str | None = None, location: str | None = None,
                 base_url: str | None = None, timeout: float = 120.0) -> None:
        options = types.HttpOptions(base_url=base_url, api_version=API_VERSION, timeout=int(timeout * 1000))
        self._secret = (api_key,) if api_key else ()
        if api_key:
            self._client = genai.Client(vertexai=True, api_key=api_key, http_options=options)
        else:
            self._client = genai.Client(vertexai=True, project=project, location=location, http_options=options)

    async def evaluate(self, body: Mapping[str, Any], purpose: str) -> ServiceVerdict:
        """The service's verdict on ``body``; error messages never carry the API key (a proxy may echo it)."""
        try:
            raw = await self._client.aio._api_client.async_request("post", PATH, dict(body))
        except errors.APIError as exc:
            message = scrub(f"Vertex AI evaluation service ({purpose}) failed: HTTP {exc.code} {exc.message}",
                            self._secret)
            raise JudgeCallError(message, status=exc.code, transient=exc.code in TRANSIENT_STATUSES) from None
        except Exception as exc:  # credentials and transport problems of the Vertex client
            raise JudgeCallError(scrub(f"Vertex AI evaluation service ({purpose}) failed: {type(exc).__name__}: "
                                       f"{exc}", self._secret)) from None
        try:
            answer: Any = json.loads(raw.body or "{}")
        except ValueError:
            raise JudgeCallError(f"Vertex AI evaluation service ({purpose}) sent a malformed answer") from None
        return verdict_from_answer(answer, purpose)
