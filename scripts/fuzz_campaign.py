"""Fuzz campaign: run evalbot on thousands of hostile eval sets, actuals and configs and count the crashes.

    PYTHONPATH=. python scripts/fuzz_campaign.py [--runs 3000] [--kinds eval_sets,actuals,configs]

A crash is any exception escaping the CLI (evalbot's own input errors are exit 2, not crashes).  Prints runs,
crashes and the distinct crash sites per kind; the strategies are those of tests/test_fuzz_inputs.py.
"""

from __future__ import annotations

import argparse
import logging
import sys
import traceback
from collections import Counter
from pathlib import Path

from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.fakes.fuzz_inputs import actuals_texts, config_texts, eval_set_texts, run_once

KINDS = {"eval_sets": ("eval_set", eval_set_texts), "actuals": ("actuals", actuals_texts),
         "configs": ("config", config_texts)}


def campaign(kind: str, runs: int) -> tuple[int, Counter[str], Counter[int]]:
    """Run ``runs`` examples of one kind; the crash sites and the exit codes seen."""
    arg, strategy = KINDS[kind]
    crashes: Counter[str] = Counter()
    codes: Counter[int] = Counter()
    done = 0

    @settings(max_examples=runs, deadline=None, database=None, phases=[Phase.generate],
              suppress_health_check=list(HealthCheck))
    @given(st.data())
    def one(data: st.DataObject) -> None:
        nonlocal done
        text = data.draw(strategy)
        done += 1
        try:
            codes[run_once(**{arg: text})] += 1
        except Exception as exc:  # a crash: where it came from
            frame = traceback.extract_tb(exc.__traceback__)[-1]
            crashes[f"{type(exc).__name__} at {Path(frame.filename).name}:{frame.lineno}: {str(exc)[:100]}"] += 1

    one()
    return done, crashes, codes


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3000)
    parser.add_argument("--kinds", default=",".join(KINDS))
    args = parser.parse_args()
    logging.disable(logging.CRITICAL)  # criteria log the exceptions they turn into error results
    total = 0
    for kind in args.kinds.split(","):
        done, crashes, codes = campaign(kind, args.runs)
        total += sum(crashes.values())
        print(f"{kind}: {done} runs, {sum(crashes.values())} crashes, exit codes {dict(sorted(codes.items()))}")
        for site, n in crashes.most_common():
            print(f"  {n:5d}  {site}")
    return 1 if total else 0


if __name__ == "__main__":
    sys.exit(main())
