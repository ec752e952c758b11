"""Tuning on the demo answer key: held-out figures of the tuned setting vs the presets, and what
re-ranking from captured candidates saves over calling recall per query.

    python -m memory_core.cli --bank data/demo.duckdb demo        # once: the demo bank with its labels
    python -m bench.tune_demo --bank data/demo.duckdb [--json bench/results/tune_demo.json]

The presets do not learn from the labels, so their figures are on every labeled turn; the tuned
figures are pooled over held-out folds (each turn scored by the setting chosen without it). The
speed ratio compares, per query and setting, ranking from captured candidates with a what-if
``bank.recall`` whose query vector is already cached (so neither side runs the model).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from memory_core import MemoryBank, ScoringParams
from memory_core.evaluation import tuning  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bank", required=True, help="A bank built by `memctl demo` (it holds the 'demo' labels).")
    parser.add_argument("--trials", type=int, default=200)
    parser.add_argument("--folds", type=int, default=5)
    parser.add_argument("--seeds", type=int, default=3, help="Repeat the CV with this many fold seeds.")
    parser.add_argument("--json", dest="json_out", default=None)
    args = parser.parse_args()
    with MemoryBank.open(args.bank, read_only=True) as bank:
        queries = bank.labels(set_name="demo")
        if not queries:
            raise SystemExit(f"{args.bank} has no 'demo' labels: build it with `memctl demo`")
        t = time.perf_counter()
        labeled = tuning.prepare(bank, queries)
        prepare_s = time.perf_counter() - t

        # Side by side: one setting over every labeled turn, by captured candidates and by recall.
        p = ScoringParams()
        t = time.perf_counter()
        for _ in range(5):
            labeled.returned(p)
        select_s = (time.perf_counter() - t) / 5
        sample = queries[:: max(1, len(queries) // 100)]
        for q in sample:  # warm the query-vector cache: recall is timed on ranking, not on the model
            bank.recall(q.query, namespace=q.namespace, params=p, now=q.as_of, record=False)
        t = time.perf_counter()
        for _ in range(3):
            for q in sample:
                bank.recall(q.query, namespace=q.namespace, params=p, now=q.as_of, record=False)
        recall_per_query_s = (time.perf_counter() - t) / (3 * len(sample))

        presets = {name: labeled.evaluate(bank.preset(name)).to_dict()
                   for name in ("default", "generative-agents", "weighted-recall")}
    runs = []
    for seed in range(args.seeds):
        t = time.perf_counter()
        r = tuning.tune(labeled, ScoringParams(), objective="f0.5", folds=args.folds, trials=args.trials, seed=seed)
        runs.append({"seed": seed, "seconds": time.perf_counter() - t, "settings_tried": r.trials,
                     "cv_mean": r.cv_mean, "cv_base_mean": r.cv_base_mean, "held_out": r.held_out.to_dict(),
                     "proposal": {k: getattr(r.proposal, k) for k in tuning.TUNED}})
    result = {
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}",
        "labeled_queries": len(queries),
        "with_relevant": sum(1 for q in queries if q.relevant),
        "objective": "f0.5", "folds": args.folds, "trials": args.trials,
        "presets_all_queries": presets,
        "tuned_held_out": runs,
        "prepare_s": prepare_s,
        "select_ms_per_query": 1000 * select_s / len(queries),
        "what_if_recall_ms_per_query": 1000 * recall_per_query_s,
        "recall_vs_select_per_query": recall_per_query_s / (select_s / len(queries)),
    }
    print(json.dumps(result, indent=1))
    if args.json_out:
        with open(args.json_out, "w", encoding="utf-8") as fh:
            json.dump(result, fh, indent=1)
            fh.write("\n")


if __name__ == "__main__":
    main()
