#!/usr/bin/env python3
"""What reading a baseline file costs: ``parse_baseline``'s CPU time, then building every case once (what
``compare`` does), and with tracemalloc what the parsed baseline holds and the peak while it is parsed.

    python bench/bench_baseline_read.py BASELINE.json

The file's text is read before tracing starts (the caller holds it either way). Use the ``baseline.json`` that
``bench_compare.py --keep DIR`` leaves in ``DIR/100002`` for issue 28's 33,334 cases.
"""

from __future__ import annotations

import argparse
import gc
import os
import time
import tracemalloc

from evalbot.compare.baseline import parse_baseline


def main(path: str) -> None:
    with open(path, encoding="utf-8") as f:
        text = f.read()
    gc.collect()
    start = time.process_time()
    baseline = parse_baseline(text, path)
    parse = time.process_time() - start
    start = time.process_time()
    metrics = sum(len(case.metrics) for es in baseline.eval_sets.values() for case in es.cases.values())
    walk = time.process_time() - start
    cases = sum(len(es.cases) for es in baseline.eval_sets.values())
    del baseline
    gc.collect()
    tracemalloc.start()
    kept = parse_baseline(text, path)
    gc.collect()
    held, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    del kept
    print(f"{path}: {len(text) / 1e6:.1f} MB of text, {cases:,} cases, {metrics:,} criteria results")
    print(f"  parse {parse:.3f} s CPU; every case built once {walk:.3f} s CPU")
    print(f"  held {held / 1e6:.1f} MB, peak while parsing {peak / 1e6:.1f} MB (tracemalloc)")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     epilog="Use the baseline.json that bench_compare.py --keep DIR leaves in "
                                     "DIR/100002 for issue 28's 33,334 cases.")
    parser.add_argument("baseline", metavar="BASELINE.json", help="the baseline file to read")
    path = parser.parse_args().baseline
    if not os.path.isfile(path):
        parser.error(f"{path}: no such file (make one with bench_compare.py --keep DIR)")
    main(path)
