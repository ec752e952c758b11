"""Choose the default's lifts and priors on two public conversation sets at once.

The neighbours' lift and the recency prior decide much of what recall finds in a long conversation
(a short reply found through the turn before it; a turn of months ago against one of last week).
Settings chosen on LoCoMo alone cost LongMemEval, so each setting of :data:`GRID` is scored, exactly
as recall ranks (``MemoryBank.candidates``), on:

* LoCoMo, plain turns (``bench/locomo.py``): R@10 of categories 1-4 on conversations 0-4 (dev,
  where the choice is made) and 5-9 (test), and the share of general questions
  (``bench/data/general_questions.jsonl``) that get nothing at the threshold;
* LongMemEval-S (``bench/longmemeval.py``): turn recall@5 and @10 on its dev and test halves;
* the first multilingual set's dev and test halves (``bench/data/multilingual.json``): hit@1 at the
  threshold and general questions empty, per language (what short facts get).

A setting is eligible when, on the dev halves, LongMemEval's R@5 and R@10, the general questions'
empty shares (LoCoMo and every language) and multilingual hit@1 at the threshold are each at least
the current default's (``--slack`` below it at most); the eligible setting with the best LoCoMo dev
R@10 wins. Vectors come from the benchmarks' cache (``bench/vectors.py``).

    python -m bench.lifts LOCOMO_DATASET [--lme-questions N] [--json bench/results/lifts.json]
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from memory_core import MemoryBank, ScoringParams  # noqa: E402

from . import calibrate, locomo, longmemeval, multilingual  # noqa: E402
from . import vectors as vector_cache  # noqa: E402

GRID = {
    "neighbour_weight": [0.4, 0.5, 0.6, 0.7],
    "half_life_days": [180.0, 365.0, 730.0, 1460.0],
    "beta": [0.1, 0.07, 0.05],
}


def _cached(bank: MemoryBank, texts: Any) -> dict[str, np.ndarray]:
    emb = bank.embedder
    return vector_cache.vectors(texts, lambda part: emb.encode(part, kind="memory"), bank.model, emb.dim)


def locomo_cases(bank: MemoryBank, path: str, log=print) -> list[dict[str, Any]]:
    """Per LoCoMo conversation (plain turns): candidates for its questions of categories 1-4 and for
    the general questions, and each question's evidence ids."""
    convs = locomo.load(path, None, context=False)
    general = locomo.load_general()
    vecs = _cached(bank, (t["text"] for c in convs for t in c["turns"]))
    general_vecs = bank.embedder.encode(general, kind="query")
    out = []
    for conv in convs:
        ns = conv["id"]
        ids = bank.add_many([{"text": t["text"], "namespace": ns, "created_at": t["created_at"],
                              "embedding": vecs[t["text"]]} for t in conv["turns"]], dedupe=False)
        by_dia = {t["dia_id"]: i for t, i in zip(conv["turns"], ids)}
        qs = [(q["question"], sorted({by_dia[e] for e in q["evidence"] if e in by_dia}))
              for q in conv["questions"] if q["category"] != 5]
        qs = [(q, want) for q, want in qs if want]
        out.append({"split": "dev" if conv["index"] in locomo.TUNE_SPLIT else "test", "want": [w for _, w in qs],
                    "cand": bank.candidates([q for q, _ in qs], namespace=ns, now=conv["now"]),
                    "general": bank.candidates(general, namespace=ns, now=conv["now"], vectors=general_vecs)})
        log(f"  LoCoMo {ns}: {len(conv['turns'])} turns, {len(qs)} questions")
    return out


def longmemeval_cases(bank: MemoryBank, limit: int | None = None, log=print) -> list[dict[str, Any]]:
    """Per LongMemEval question with evidence turns (of the first ``limit`` in the file): its
    haystack's candidates and evidence ids."""
    questions = [q for q in longmemeval.load(limit=limit) if any(t["evidence"] for t in q["turns"])]
    vecs = _cached(bank, (t["text"] for q in questions for t in q["turns"]))
    out = []
    for q in questions:
        ns = f"lme-{q['id']}"
        ids = bank.add_many([{"text": t["text"], "namespace": ns, "created_at": t["created_at"],
                              "embedding": vecs[t["text"]]} for t in q["turns"]], dedupe=False)
        out.append({"split": q["split"], "want": [[i for i, t in zip(ids, q["turns"]) if t["evidence"]]],
                    "cand": bank.candidates([q["question"]], namespace=ns, now=q["now"])})
    log(f"  LongMemEval: {len(out)} questions")
    return out


def recall_at(cases: list[dict[str, Any]], params: ScoringParams, k: int) -> dict[str, float]:
    """Mean share of evidence found in the top k (threshold 0), per split."""
    acc: dict[str, list[float]] = {"dev": [], "test": []}
    for case in cases:
        top, _ = calibrate._top(case["cand"], params, k)
        for row, want in zip(top, case["want"]):
            got = {int(i) for i in row}
            acc[case["split"]].append(sum(w in got for w in want) / len(want))
    return {s: float(np.mean(v)) for s, v in acc.items() if v}


def general_empty(cases: list[dict[str, Any]], params: ScoringParams) -> dict[str, float]:
    """Per split, the share of general questions whose best score is under the threshold."""
    acc: dict[str, list[bool]] = {"dev": [], "test": []}
    for case in cases:
        best = case["general"].scores(params.replace(threshold=0.0)).max(axis=1)
        acc[case["split"]].extend((best < params.threshold).tolist())
    return {s: float(np.mean(v)) for s, v in acc.items() if v}


def measure(lc: list[dict[str, Any]], lme: list[dict[str, Any]], ml: dict[str, Any],
            params: ScoringParams) -> dict[str, Any]:
    """Every figure of one setting, per split."""
    by = calibrate.multilingual_metrics(ml, params, [params.threshold])[params.threshold]
    return {"locomo_r10": recall_at(lc, params, 10), "locomo_general_empty": general_empty(lc, params),
            "lme_r5": recall_at(lme, params, 5), "lme_r10": recall_at(lme, params, 10),
            "multilingual": {s: {key: by[s][key] for key in ("en", "zh", "sv", "empty_en", "empty_zh", "empty_sv")}
                             for s in ("dev", "test")}}


def _floors(m: dict[str, Any]) -> dict[str, float]:
    """The dev figures a setting may not lose."""
    out = {"lme_r5": m["lme_r5"]["dev"], "lme_r10": m["lme_r10"]["dev"],
           "locomo_general_empty": m["locomo_general_empty"]["dev"]}
    out.update({f"ml_{key}": v for key, v in m["multilingual"]["dev"].items()})
    return out


def choose(rows: list[dict[str, Any]], default: dict[str, Any], slack: float) -> dict[str, Any]:
    """The eligible row with the best LoCoMo dev R@10 (the default itself is always eligible)."""
    floor = _floors(default)
    ok = [r for r in rows if all(v >= floor[key] - slack for key, v in _floors(r).items())]
    return max(ok, key=lambda r: r["locomo_r10"]["dev"], default=default)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("locomo_data")
    parser.add_argument("--slack", type=float, default=0.0, help="how far below the default a dev figure may fall")
    parser.add_argument("--lme-questions", type=int, default=None,
                        help="only LongMemEval's first N questions (in file order: dev and test alternate)")
    parser.add_argument("--json", dest="json_out", default=None)
    args = parser.parse_args()
    load = [os.getloadavg()[0]]
    with tempfile.TemporaryDirectory() as tmp, MemoryBank.open(Path(tmp) / "lifts.duckdb") as bank:
        lc = locomo_cases(bank, args.locomo_data)
        lme = longmemeval_cases(bank, args.lme_questions)
        ml = calibrate.multilingual_cases(bank.model, path=multilingual.DATA)
        base = bank.active_preset()[1]
        default = {"setting": {key: getattr(base, key) for key in GRID}, **measure(lc, lme, ml, base)}
        rows = [{"setting": dict(zip(GRID, values)), **measure(lc, lme, ml, base.replace(**dict(zip(GRID, values))))}
                for values in itertools.product(*GRID.values())]
        ml["bank"].close()
    best = choose(rows, default, args.slack)
    load.append(os.getloadavg()[0])
    print(json.dumps({"default": default, "chosen": best, "load_average": load}, indent=1))
    if args.json_out:
        Path(args.json_out).write_text(json.dumps({"default": default, "chosen": best, "rows": rows,
                                                   "load_average": load}, indent=1) + "\n")


if __name__ == "__main__":
    main()
