"""Record the judge answers of examples/vertex_seed (the Vertex seed's EvalTask example) into its judge cache, so
``evalbot run examples/vertex_seed/eval.jsonl --judge-cache examples/vertex_seed/judge-cache --judge-replay`` runs
without a key or network.

Run from the repository root: ``python scripts/make_vertex_seed_example.py``. Re-run it when the pointwise judge
prompt template changes (the cache is keyed by the full prompt; tests/test_vertex_seed_example.py then fails).
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

from evalbot.criteria.base import BuildContext
from evalbot.judges.base import JudgeReply, JudgeRequest, Usage
from evalbot.judges.factory import build_stack
from evalbot.pipeline import evaluate

ROOT = Path(__file__).resolve().parent.parent / "examples" / "vertex_seed"

FOLLOWS: dict[str, tuple[int, str]] = {
    "bedroom_ac_schedule": (1, "The response reports the schedule that set_schedule created, for the bedroom device."),
    "living_room_lights_off": (1, "The response reports the state change made by set_device_state."),
    "thermostat_preference": (0, "The response cites a usual temperature of 21 degrees and a setting of 21, but no call "
                                 "read the user's preferences and set_temperature was called with 22."),
    "garage_door_status": (1, "The response reports the door state that get_device_state returned."),
}


def responses() -> dict[str, str]:
    """eval_id -> the agent's response, from the dataset."""
    rows = [json.loads(line) for line in (ROOT / "eval.jsonl").read_text(encoding="utf-8").splitlines() if line]
    return {row["eval_id"]: row["response"] for row in rows}


class RecordedAnswers:
    """A judge backend answering from FOLLOWS: finds which row's response the prompt is about."""

    def __init__(self) -> None:
        self.by_response = {text: FOLLOWS[eval_id] for eval_id, text in responses().items()}

    async def generate(self, request: JudgeRequest) -> JudgeReply:
        found = next((v for text, v in self.by_response.items() if text in request.prompt), None)
        if found is None:
            raise SystemExit(f"no recorded answer for prompt:\n{request.prompt[:500]}")
        score, why = found
        texts = tuple(json.dumps({"explanation": why, "score": score}) for _ in range(request.num_samples))
        return JudgeReply(texts, Usage(input_tokens=500, output_tokens=50 * len(texts), requests=1), 0)


def record() -> None:
    """Score the dataset once with the recorded answers behind evalbot's on-disk cache."""
    cache = ROOT / "judge-cache"
    shutil.rmtree(cache, ignore_errors=True)
    ctx = BuildContext(judge=build_stack(RecordedAnswers(), cache_dir=cache))
    report = evaluate([str(ROOT / "eval.jsonl")], ctx=ctx)
    bad = [(c.eval_id, c.status) for es in report.eval_sets for c in es.cases if c.status in {"error", "not_evaluated"}]
    if bad:
        raise SystemExit(f"cases not scored: {bad}")


if __name__ == "__main__":
    record()
    sys.exit(0)
