"""Did an answer use the memories a recall returned? The decision behind ``bank.feedback``.

Three paths, strongest first:

* **given** — the agent says which memories it used (``used_ids``);
* **citation** — the answer carries explicit markers ``[m:ID]`` (``format_for_prompt(...,
  cite=True)`` asks the model to write them); when any marker is present, exactly the cited
  hits count as used;
* **similarity** — otherwise the answer is split into sentences, each is embedded with the
  bank's model, and a hit counts as used when its best cosine against a sentence reaches
  :data:`USED_BAR`.

:data:`USED_BAR` is calibrated by ``python -m bench.calibrate_usage`` on
``data/usage_calibration.jsonl``: hand-labelled recalls with answers written as an agent would,
whose unused memories are mostly *on the same topic* as the answer, since that is what a recall
returns. The bar is the best F1 on that set, checked by cross-validation over cases (figures:
BENCHMARKS.md, "Figures behind the code"). Implicit use (an answer shaped by a memory without
restating it: "I left out trail mix") is what the bar misses; topical overlap without use is what
it wrongly counts. Citation markers avoid both."""

from __future__ import annotations

import re
from collections.abc import Iterable

import numpy as np

from ..models import HitUsage  # a record a Feedback carries: it lives with the records
from ..embedding.vectors import dot

__all__ = ["USED_BAR", "MIN_SENTENCE_WORDS", "HitUsage", "citations", "sentences", "decide_by_similarity"]

USED_BAR = 0.41
"""Cosine (all-MiniLM-L6-v2) an answer sentence must reach with a memory for it to count as used."""

MIN_SENTENCE_WORDS = 2
"""Shorter fragments ("Sure!", "OK.") say nothing about any memory; they are left out."""

_CITATION_RE = re.compile(r"\[\s*m\s*:\s*(\d+)\s*\]", re.IGNORECASE)
# Sentence ends: . ! ? … and their CJK forms, and line breaks (bullet lists). A full stop between
# digits (3.5) or after a single capital (J. Smith) does not end a sentence.
_SENTENCE_END_RE = re.compile(r"(?<!\d\.)(?<!\b[A-Z]\.)(?<=[.!?…])\s+|(?<=[。！？])|\n+")


def citations(answer: str) -> list[int]:
    """Memory ids cited as ``[m:ID]`` in ``answer``, in order of first appearance."""
    seen: dict[int, None] = {}
    for m in _CITATION_RE.finditer(answer or ""):
        seen.setdefault(int(m.group(1)), None)
    return list(seen)


def sentences(answer: str) -> list[str]:
    """The answer's sentences worth comparing with memories (citation markers removed)."""
    text = re.sub(r"[ \t]+([.,!?;:])", r"\1", _CITATION_RE.sub(" ", answer or ""))  # "tea [m:4]." → "tea."
    parts = (" ".join(p.split()) for p in _SENTENCE_END_RE.split(text))
    out = [p.strip(" -*•\t") for p in parts if p and p.strip()]
    # CJK text has no spaces between words: count characters instead.
    return [p for p in out if len(p.split()) >= MIN_SENTENCE_WORDS or len(p) >= 6 and not p.isascii()]


def best_similarities(sentence_vectors: np.ndarray, memory_vectors: Iterable[np.ndarray | None]) -> list[float | None]:
    """For each memory vector, the best cosine with any sentence (vectors are unit length)."""
    out: list[float | None] = []
    for v in memory_vectors:
        if v is None or len(sentence_vectors) == 0:
            out.append(None)
        else:
            out.append(float(np.max(dot(sentence_vectors, v))))
    return out


def decide_by_similarity(memory_ids: list[int], sims: list[float | None], bar: float = USED_BAR) -> list[HitUsage]:
    """Used when the best sentence cosine reaches ``bar``; a memory without a vector is not used."""
    return [HitUsage(mid, s is not None and s >= bar, "similarity", s) for mid, s in zip(memory_ids, sims)]


# -- calibration ------------------------------------------------------------------------------


def calibration_pairs(embedder, cases: Iterable[dict]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Best sentence cosines, labels and case numbers of every answer/memory pair of a labelled set.

    Each case is ``{"answer": str, "memories": [{"text": str, "used": bool}, ...]}`` (the format
    of ``data/usage_calibration.jsonl``). Returns three aligned arrays: similarity, used, case.
    """
    sims: list[float] = []
    labels: list[bool] = []
    case_of: list[int] = []
    for i, case in enumerate(cases):
        sent = sentences(case["answer"])
        svec = embedder.encode(sent) if sent else np.zeros((0, 1), dtype=np.float32)
        mvec = embedder.encode([m["text"] for m in case["memories"]])
        for m, s in zip(case["memories"], best_similarities(svec, list(mvec))):
            sims.append(-1.0 if s is None else s)
            labels.append(bool(m["used"]))
            case_of.append(i)
    return np.array(sims), np.array(labels), np.array(case_of)


def precision_recall(sims: np.ndarray, used: np.ndarray, bar: float) -> dict[str, float]:
    """Precision, recall and F1 of "used when similarity ≥ bar" against the labels."""
    predicted = sims >= bar
    tp = int(np.sum(predicted & used))
    fp = int(np.sum(predicted & ~used))
    fn = int(np.sum(~predicted & used))
    precision = tp / (tp + fp) if tp + fp else 1.0
    recall = tp / (tp + fn) if tp + fn else 1.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return {"bar": float(bar), "precision": precision, "recall": recall, "f1": f1, "tp": tp, "fp": fp, "fn": fn}


def best_bar(sims: np.ndarray, used: np.ndarray) -> float:
    """The bar with the best F1 on the pairs (ties: the higher bar, favouring precision).

    Candidates are midpoints between neighbouring observed similarities, rounded to 0.01.
    """
    values = np.unique(np.round(sims, 2))
    candidates = np.unique(np.round(np.concatenate([values, (values[:-1] + values[1:]) / 2]), 2))
    scored = [(precision_recall(sims, used, b)["f1"], b) for b in candidates]
    return float(max(scored)[1])
