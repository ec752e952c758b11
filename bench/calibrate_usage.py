"""Calibrate the usage bar of bank.feedback's similarity path on a labelled set of answers.

    python -m bench.calibrate_usage [--data data/usage_calibration.jsonl] [--json bench/results/usage_calibration.json]

For every answer/memory pair of the set: the best cosine between one of the answer's sentences
and the memory (the bank's model). Reports precision/recall/F1 of the shipped bar
(memory_core.evaluation.usage.USED_BAR), the bar with the best F1 on the whole set, a sweep, and a 5-fold
cross-validated estimate (folds by case: the bar is picked on four folds, scored on the fifth).
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

import numpy as np

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from memory_core.evaluation import usage  # noqa: E402
from memory_core.embedding.embedder import get_embedder  # noqa: E402

DATA = Path(__file__).resolve().parent.parent / "data" / "usage_calibration.jsonl"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default=str(DATA))
    parser.add_argument("--json", dest="json_out", default=None)
    parser.add_argument("--folds", type=int, default=5)
    args = parser.parse_args()
    cases = [json.loads(line) for line in Path(args.data).read_text(encoding="utf-8").splitlines() if line.strip()]
    embedder = get_embedder()
    sims, used, case_of = usage.calibration_pairs(embedder, cases)
    best = usage.best_bar(sims, used)
    folds = np.arange(len(cases)) % args.folds
    tp = fp = fn = 0
    fold_bars = []
    for f in range(args.folds):
        test = folds[case_of] == f
        bar = usage.best_bar(sims[~test], used[~test])
        fold_bars.append(bar)
        r = usage.precision_recall(sims[test], used[test], bar)
        tp, fp, fn = tp + r["tp"], fp + r["fp"], fn + r["fn"]
    cv_p, cv_r = tp / (tp + fp), tp / (tp + fn)
    result = {
        "model": embedder.name, "cases": len(cases), "pairs": int(len(sims)), "used_pairs": int(used.sum()),
        "shipped_bar": usage.precision_recall(sims, used, usage.USED_BAR),
        "best_bar_on_all": usage.precision_recall(sims, used, best),
        "cross_validated": {"folds": args.folds, "bars": fold_bars, "precision": cv_p, "recall": cv_r,
                            "f1": 2 * cv_p * cv_r / (cv_p + cv_r)},
        "sweep": [usage.precision_recall(sims, used, b) for b in np.round(np.arange(0.30, 0.71, 0.05), 2)],
        "used_similarity": {"min": float(sims[used].min()), "median": float(np.median(sims[used]))},
        "unused_similarity": {"max": float(sims[~used].max()), "median": float(np.median(sims[~used]))},
    }
    print(json.dumps(result, indent=2))
    if args.json_out:
        Path(args.json_out).write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
