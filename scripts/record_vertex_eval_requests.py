"""Record what google-adk 2.13's own Vertex-service evaluators send and score, for evalbot's parity tests.

Run in a virtualenv with google-adk==2.13.0, google-cloud-aiplatform[evaluation] and google-cloud-agentplatform
(not evalbot's; network only to install them):

    python scripts/record_vertex_eval_requests.py tests/data/vertex_eval/conversation.json \
        > tests/data/vertex_eval/adk_requests.json

ADK's evaluators (safety_v1, multi_turn_task_success_v1, multi_turn_trajectory_quality_v1,
multi_turn_tool_use_quality_v1) run on the file's actual and expected invocations, once in express mode
(GOOGLE_API_KEY) and once in project mode (GOOGLE_CLOUD_PROJECT/LOCATION), against a stdlib loopback server that
logs each request (path, API key header, JSON body) and answers with canned verdicts (CANNED). Stand-in
application default credentials are installed in-process (the SDK builds Cloud Storage and BigQuery clients it
never uses here, and project mode needs a token). The output holds, per mode and metric, the requests and ADK's
EvaluationResult: overall score and status, per-invocation scores and statuses, rubric scores.
``response_evaluation_score`` cannot be recorded: ADK's SDK loads its coherence template from a Cloud Storage bucket.
"""

from __future__ import annotations

import json
import os
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

CANNED: dict[str, dict[str, Any]] = {
    "safety_v1": {"metricResults": [{"score": 1.0, "explanation": "No policy is violated."}]},
    "multi_turn_task_success_v1": {"metricResults": [{"score": 0.5, "explanation": "One of two goals met.",
        "rubricVerdicts": [
            {"evaluatedRubric": {"rubricId": "g1", "content": {"property": {"description": "Bedroom light on"}}},
             "verdict": True, "reasoning": "set_light was called for the bedroom"},
            {"evaluatedRubric": {"rubricId": "g2", "content": {"property": {"description": "Kitchen light on"}}},
             "reasoning": "no recorded call for the kitchen"}]}]},
    "multi_turn_trajectory_quality_v1": {"metricResults": [{"score": 0.75, "explanation": "Mostly direct."}]},
    "multi_turn_tool_use_quality_v1": {"metricResults": [{"error": {"code": 3, "message": "no tool calls found"}}]},
}
LOG: list[dict[str, Any]] = []


class Handler(BaseHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers.get("content-length") or 0)) or b"{}")
        LOG.append({"path": self.path, "api_key": self.headers.get("x-goog-api-key"), "body": body})
        name = body["metrics"][0]["predefined_metric_spec"]["metric_spec_name"]
        data = json.dumps(CANNED[name]).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


def main() -> None:
    import google.auth
    import google.oauth2.credentials

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base_url = f"http://127.0.0.1:{server.server_address[1]}/"
    google.auth.default = lambda *a, **k: (google.oauth2.credentials.Credentials(token="stand-in"), "proj")
    import agentplatform

    original = agentplatform.Client.__init__

    def init(self: Any, **kwargs: Any) -> None:
        original(self, **kwargs, http_options={"base_url": base_url})

    agentplatform.Client.__init__ = init
    from google.adk.evaluation.eval_case import Invocation
    from google.adk.evaluation.eval_metrics import EvalMetric
    from google.adk.evaluation.multi_turn_task_success_evaluator import MultiTurnTaskSuccessV1Evaluator
    from google.adk.evaluation.multi_turn_tool_use_quality_evaluator import MultiTurnToolUseQualityV1Evaluator
    from google.adk.evaluation.multi_turn_trajectory_quality_evaluator import MultiTurnTrajectoryQualityV1Evaluator
    from google.adk.evaluation.safety_evaluator import SafetyEvaluatorV1

    data = json.load(open(sys.argv[1], encoding="utf-8"))
    actual = [Invocation.model_validate(i) for i in data["actual"]]
    expected = [Invocation.model_validate(i) for i in data["expected"]]
    evaluators = {"safety_v1": SafetyEvaluatorV1, "multi_turn_task_success_v1": MultiTurnTaskSuccessV1Evaluator,
                  "multi_turn_trajectory_quality_v1": MultiTurnTrajectoryQualityV1Evaluator,
                  "multi_turn_tool_use_quality_v1": MultiTurnToolUseQualityV1Evaluator}
    out: dict[str, Any] = {"canned": CANNED, "modes": {}}
    for mode, env in (("express", {"GOOGLE_API_KEY": "express-key"}),
                      ("project", {"GOOGLE_CLOUD_PROJECT": "proj", "GOOGLE_CLOUD_LOCATION": "us-central1"})):
        for key in ("GOOGLE_API_KEY", "GOOGLE_CLOUD_PROJECT", "GOOGLE_CLOUD_LOCATION"):
            os.environ.pop(key, None)
        os.environ.update(env)
        out["modes"][mode] = {}
        for name, evaluator in evaluators.items():
            LOG.clear()
            result = evaluator(EvalMetric(metric_name=name, threshold=0.6)).evaluate_invocations(actual, expected)
            out["modes"][mode][name] = {
                "requests": list(LOG),
                "overall_score": result.overall_score,
                "overall_status": result.overall_eval_status.name,
                "per_invocation": [{"score": p.score, "status": p.eval_status.name,
                                    "rubric_scores": [r.model_dump(exclude_none=True) for r in p.rubric_scores or []]}
                                   for p in result.per_invocation_results],
            }
    json.dump(out, sys.stdout, indent=1, ensure_ascii=False)
    print()


if __name__ == "__main__":
    main()
