"""Fit the merge plan's pair classifier (``memory_core/curation/merge_pairs.py``) and its bar.

The curation set's dev half (``bench/data/duplicates.json``: paraphrases, progressions, two events,
another fact of the same subject, contradictions, in English, Swedish, Chinese and across two) is
put in four pools (:func:`labelled_pools`), as namespaces of a bank hold memories. Each pair of
memories each among the other's ``RANK`` nearest in its language (``merge_pairs.Pool.neighbours``)
that the merge plan's lexical vetoes let through is a training row: a labelled pair by its label,
any other pair whose two memories come from different subjects as "not the same fact" (pairs of one
subject that the set does not label, such as a case's two translations, are left out). A logistic
regression (numpy, L2) is fitted in five folds split by subject, over five such splits; the bar is
the lowest probability at which the out-of-fold pairs of all splits offered are right at least ``TARGET_PRECISION`` of the time. The
final weights are fitted on the whole dev half and written with the bar and the cross-validated
figures to ``merge_pairs.json``. The test half is never read here (``bench.curation_quality``
reports it).

    python -m bench.fit_merge_pairs [--check]   # --check: fit and compare, write nothing
"""

from __future__ import annotations

import argparse
import json
import os
import zlib
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import numpy as np  # noqa: E402

from memory_core.curation import merge, merge_pairs  # noqa: E402
from memory_core.embedding.embedder import DEFAULT_MODEL, get_embedder  # noqa: E402

DATA = Path(__file__).resolve().parent / "data" / "duplicates.json"
TARGET_PRECISION = 0.85  # 0.8 and a margin: out-of-fold precision over ~40 offered pairs is good to about 0.05
AUTO_PRECISION = 0.97  # 0.95 and a margin, as TARGET_PRECISION: the bar a maintenance run merges at unattended
RANK = 3  # candidates: pairs each among the other's RANK nearest of its language
FOLDS = 5
SPLITS = 5  # fold splits pooled: on one split alone the bar moved between 0.62 and 0.84
L2 = 3.0  # chosen among 1, 3, 5, 10, 20 by out-of-fold recall at the bar on the dev half
MIN_OFFERED = 10  # a bar is read off at least this many offered out-of-fold pairs (per split)


def labelled_pools(split: str) -> list[tuple[list[str], dict[tuple[int, int], str], dict[int, set[str]]]]:
    """One half of the set as four namespaces: its English, Swedish and Chinese pairs, and its pairs
    across two languages (a namespace holding every fact in three languages would make each text's
    translations its nearest neighbours, which no bank is like). Each: the texts (sorted, so row i
    is text i), the labelled pairs as (row, row) -> kind, each row's subjects (pairs sharing one
    are left unlabelled)."""
    every = [p for p in json.loads(DATA.read_text(encoding="utf-8"))["pairs"] if p["split"] == split]
    pools = []
    for group in ("en", "sv", "zh", "cross"):
        pairs = [p for p in every if p["lang"] == group or (group == "cross" and "-" in p["lang"])]
        texts = sorted({p[side] for p in pairs for side in ("a", "b")})
        row = {t: i for i, t in enumerate(texts)}
        kinds: dict[tuple[int, int], str] = {}
        subjects: dict[int, set[str]] = {}
        for p in pairs:
            a, b = row[p["a"]], row[p["b"]]
            kinds[(min(a, b), max(a, b))] = p["kind"]
            for r in (a, b):
                subjects.setdefault(r, set()).add(p["subject"])
        pools.append((texts, kinds, subjects))
    return pools


def label(pair: tuple[int, int], kinds: dict[tuple[int, int], str], subjects: dict[int, set[str]]) -> str | None:
    """A pair's kind: its label, ``"unrelated"`` across subjects, None (left out) within one."""
    if pair in kinds:
        return kinds[pair]
    return None if subjects[pair[0]] & subjects[pair[1]] else "unrelated"


def centre(split: str, model: str = DEFAULT_MODEL) -> np.ndarray:
    """The mean vector of one half's texts: the prior centre of a namespace (``merge_pairs.Pool``)."""
    return get_embedder(model).encode(sorted({t for texts, _, _ in labelled_pools(split) for t in texts})).mean(axis=0)


def rows(split: str, model: str = DEFAULT_MODEL) -> tuple[np.ndarray, np.ndarray, list[str], int, dict[str, int]]:
    """Features (:func:`merge_pairs.design`), labels (1: the same fact) and subjects (what folds are
    split by) of one half's candidate pairs, how many duplicate pairs the half labels (recall's
    denominator), and how many of those never reach the classifier: not a candidate pair, or vetoed."""
    feats, ys, groups, planted = [], [], [], 0
    lost = {"not_candidates": 0, "vetoed": 0}
    prior = centre(split, model)
    for texts, kinds, subjects in labelled_pools(split):
        mat = get_embedder(model).encode(texts)
        pool = merge_pairs.Pool(texts, mat, merge._numbers, prior, merge_pairs.paraphrase_encoder())
        near = pool.neighbours(RANK)
        cands = [merge.Candidate(i, t, "", v, 0.5, None, 0, "explicit", "fact")
                 for i, (t, v) in enumerate(zip(texts, mat))]
        compatible = merge._Compatibility(cands, 0.0)
        kept = {}
        for pair, rank in near.items():
            kind = label(pair, kinds, subjects)
            if kind is not None and compatible(*pair):
                kept[pair] = (rank, kind)
        feats.append(merge_pairs.design(pool.features({p: r for p, (r, _) in kept.items()})))
        ys += [kind == "duplicate" for _, kind in kept.values()]
        groups += [min(subjects[a]) for a, _ in kept]
        planted += sum(k == "duplicate" for k in kinds.values())
        duplicates = [p for p, k in kinds.items() if k == "duplicate"]
        lost["not_candidates"] += sum(p not in near for p in duplicates)
        lost["vetoed"] += sum(p in near and p not in kept for p in duplicates)
    return np.vstack(feats), np.array(ys, dtype=float), groups, planted, lost


def fit(x: np.ndarray, y: np.ndarray, l2: float = L2, steps: int = 4000) -> dict[str, Any]:
    """Logistic regression on standardised features by gradient descent (the loss is convex)."""
    mean, scale = x.mean(axis=0), x.std(axis=0)
    scale = np.where(scale > 1e-9, scale, 1.0)
    z = (x - mean) / scale
    w, b = np.zeros(z.shape[1]), 0.0
    for _ in range(steps):
        p = 1.0 / (1.0 + np.exp(-(z @ w + b)))
        w -= 0.5 * ((z.T @ (p - y)) / len(y) + l2 * w / len(y))
        b -= 0.5 * float((p - y).mean())
    return {"mean": mean, "scale": scale, "coef": w, "intercept": b}


def _probability(weights: dict[str, Any], x: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-(((x - weights["mean"]) / weights["scale"]) @ weights["coef"] + weights["intercept"])))


def choose_bar(prob: np.ndarray, y: np.ndarray, min_offered: int = MIN_OFFERED,
               target: float = TARGET_PRECISION) -> float:
    """The lowest bar at which the pairs at or above it are right at least ``target`` of the
    time, and so are the pairs above every higher bar (precision does not dip again above it)."""
    bars = np.round(np.arange(0.05, 0.991, 0.01), 2)
    ok = [b for b in bars if (prob >= b).sum() >= min_offered and y[prob >= b].mean() >= target]
    for b in ok:
        if all(bb in ok or (prob >= bb).sum() < min_offered for bb in bars if bb > b):
            return float(b)
    return 0.99


def figures(prob: np.ndarray, y: np.ndarray, planted: int, bar: float) -> dict[str, Any]:
    offered = prob >= bar
    return {"offered": int(offered.sum()), "right": int(y[offered].sum()), "planted": planted,
            "precision": round(float(y[offered].mean()), 3) if offered.any() else None,
            "recall": round(float(y[offered].sum()) / planted, 3)}


def out_of_fold(x: np.ndarray, y: np.ndarray, subjects: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """Out-of-fold probabilities of ``SPLITS`` splits into ``FOLDS`` folds by subject, pooled (and
    the labels repeated to match): the bar is read off all of them, not off one split's luck."""
    probs = []
    for split in range(SPLITS):
        groups = np.array([zlib.crc32(f"{s}{split or ''}".encode()) % FOLDS for s in subjects])
        oof = np.zeros(len(y))
        for fold in range(FOLDS):
            held = groups == fold
            oof[held] = _probability(fit(x[~held], y[~held]), x[held])
        probs.append(oof)
    return np.concatenate(probs), np.tile(y, SPLITS)


def run(model: str = DEFAULT_MODEL) -> dict[str, Any]:
    x, y, subjects, planted, lost = rows("dev", model)
    oof, labels = out_of_fold(x, y, subjects)
    bar = choose_bar(oof, labels, MIN_OFFERED * SPLITS)
    auto_bar = max(bar, choose_bar(oof, labels, MIN_OFFERED * SPLITS, AUTO_PRECISION))
    final = fit(x, y)
    return {"about": "Weights of the merge plan's pair classifier (memory_core/curation/merge_pairs.py), fitted by "
                     "python -m bench.fit_merge_pairs on the dev half of bench/data/duplicates.json.",
            "model": model, "features": list(merge_pairs.FEATURES), "rank": RANK,
            "centre": centre("dev", model).astype(float).round(6).tolist(),
            "mean": final["mean"].round(6).tolist(), "scale": final["scale"].round(6).tolist(),
            "coef": final["coef"].round(6).tolist(), "intercept": round(final["intercept"], 6), "bar": bar,
            "auto_bar": auto_bar,
            "cross_validated": {"pairs": int(len(y)), "same_fact": int(y.sum()), "splits": SPLITS,
                                **figures(oof, labels, planted * SPLITS, bar),
                                "lost": {**lost, "under_bar": round(float(((oof < bar) & (labels > 0)).sum()) / SPLITS, 1)},
                                "auto": figures(oof, labels, planted * SPLITS, auto_bar)}}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="fit and print, write nothing")
    args = parser.parse_args()
    result = run()
    print(json.dumps({k: result[k] for k in ("features", "coef", "bar", "auto_bar", "cross_validated")}, indent=1))
    if not args.check:
        # One key a line: the vectors stay one line each, the figures readable.
        lines = ",\n".join(f" {json.dumps(k)}: {json.dumps(v)}" for k, v in result.items())
        merge_pairs.WEIGHTS.write_text("{\n" + lines + "\n}\n", encoding="utf-8")
        print(f"wrote {merge_pairs.WEIGHTS.name}")


if __name__ == "__main__":
    main()
