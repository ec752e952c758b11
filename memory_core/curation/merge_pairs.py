"""Whether two memories of a namespace state the same fact: a pair classifier over cheap signals.

A cosine bar alone cannot tell a paraphrase from a progression, two events of one kind or another
fact about the same subject: on the default model they sit at the same cosines. The classifier
combines what each pair shows (:data:`FEATURES`): the cosine of the stored vectors and the
cosine after the namespace's mean is taken out (what the namespace's memories share says little),
how close each is to the other among their neighbours (a paraphrase is usually its twin's nearest),
shared words and character n-grams, shared numbers, a name on each side the other lacks (two
events: Copenhagen's race and Gothenburg's), and whether the pair crosses languages. Pairs
whose numbers differ, with a negation on one side only, or where one side moved on (a plan and its
next step, a supersede signal) never reach it: :mod:`merge` vetoes them first.

The weights are a logistic regression fitted with cross-validation on the curation set's dev half
(``bench/data/duplicates.json``, written for this, not from the demo texts) by
``python -m bench.fit_merge_pairs``, kept in ``merge_pairs.json`` beside this module with the bar
whose out-of-fold precision was at least 0.85 (0.8 with a margin). They are fitted on
multilingual-e5-small's vectors: :func:`scorer` returns None for any other model, whose banks keep
the cosine bar.
"""

from __future__ import annotations

import functools
import json
import re
import unicodedata
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..embedding.embedder import canonical_model_name
from ..language.text import detect_language, tokenize

__all__ = ["FEATURES", "PairScorer", "Pool", "WEIGHTS", "neighbour_pairs", "scorer"]

WEIGHTS = Path(__file__).resolve().parent / "merge_pairs.json"
FEATURES = ("cosine", "centred_cosine", "rank", "margin", "shared_words", "char_ngrams", "same_numbers",
            "other_numbers", "other_names", "across_languages", "nearest_both", "across_cosine")
# The centre the centred cosine takes out is the namespace's mean drawn toward the fitted corpus's
# mean as if that were this many memories: a namespace of three has no mean worth the name.
PRIOR_MEMORIES = 50
# Row blocks of the similarity matrix, as in merge._neighbour_edges.
_BLOCK_ROWS = 1024
_CJK = re.compile(r"[\u3400-\u9fff]")
# A capitalised word after a memory's first word: a name (a place, a person, a company, a product).
_NAME = re.compile(r"(?<=\s)[A-ZÅÄÖ][\w'-]*")


def _grams(text: str) -> frozenset[str]:
    """Character trigrams of the casefolded text, and bigrams where it holds Chinese (two
    characters are often a whole word)."""
    t = " ".join(unicodedata.normalize("NFKC", text).casefold().split())
    out = {t[i:i + 3] for i in range(len(t) - 2)}
    if _CJK.search(t):
        out |= {t[i:i + 2] for i in range(len(t) - 1)}
    return frozenset(out)


def _names(text: str) -> frozenset[str]:
    """The names a text mentions (capitalised words but the first; none in Chinese, which has no capitals)."""
    return frozenset(w.casefold() for w in _NAME.findall(unicodedata.normalize("NFKC", text)))


def neighbour_pairs(mat: np.ndarray, rank: int) -> tuple[dict[tuple[int, int], int], np.ndarray]:
    """Pairs (i < j) of rows of unit vectors ``mat`` that are each among the other's ``rank``
    nearest, with the worse of the two ranks (0: each is the other's nearest); and each row's
    highest cosine to another row. Blocked, so memory stays O(block x n)."""
    n = mat.shape[0]
    best = np.full(n, -1.0, dtype=np.float32)
    if n < 2:
        return {}, best
    m = min(rank, n - 1)
    top = np.empty((n, m), dtype=np.int64)
    for start in range(0, n, _BLOCK_ROWS):
        stop = min(n, start + _BLOCK_ROWS)
        block = mat[start:stop] @ mat.T
        block[np.arange(stop - start), np.arange(start, stop)] = -np.inf
        part = np.argpartition(-block, m - 1, axis=1)[:, :m]
        order = np.argsort(-np.take_along_axis(block, part, axis=1), axis=1, kind="stable")
        top[start:stop] = np.take_along_axis(part, order, axis=1)
        best[start:stop] = block.max(axis=1)
    place = [{int(j): r for r, j in enumerate(row)} for row in top]
    pairs = {}
    for i in range(n):
        for j, r in place[i].items():
            if i < j and i in place[j]:
                pairs[(i, j)] = max(r, place[j][i])
    return pairs, best


class Pool:
    """One namespace's memories as the classifier reads them: texts, unit vectors, the centre the
    centred cosine takes out (the namespace's mean, drawn toward ``prior`` as if it were
    :data:`PRIOR_MEMORIES` memories), each memory's nearest-neighbour cosine (:func:`neighbour_pairs`);
    per-text signals lazily. ``numbers`` reads a text's numbers (merge's rule, given by it)."""

    def __init__(self, texts: Sequence[str], mat: np.ndarray, best: np.ndarray,
                 numbers: Callable[[str], Collection[str]], prior: np.ndarray | None = None):
        self.texts = list(texts)
        self._numbers = numbers
        self.mat = mat
        self.best = best
        centre = mat.mean(axis=0)
        if prior is not None:
            centre = (len(mat) * centre + PRIOR_MEMORIES * prior) / (len(mat) + PRIOR_MEMORIES)
        centred = mat - centre
        norms = np.linalg.norm(centred, axis=1, keepdims=True)
        self.centred = centred / np.where(norms > 1e-6, norms, 1.0)
        self._cache: dict[int, tuple[str, frozenset[str], frozenset[str], frozenset[str], frozenset[str]]] = {}

    def _signals(self, i: int) -> tuple[str, frozenset[str], frozenset[str], frozenset[str], frozenset[str]]:
        if i not in self._cache:
            t = self.texts[i]
            self._cache[i] = (detect_language(t), frozenset(tokenize(t)), _grams(t), frozenset(self._numbers(t)),
                              _names(t))
        return self._cache[i]

    def features(self, pairs: dict[tuple[int, int], int]) -> np.ndarray:
        """One row of :data:`FEATURES` per pair, in the order of ``pairs`` (pair -> rank)."""
        rows = []
        for (i, j), rank in pairs.items():
            li, ti, gi, ni, mi = self._signals(i)
            lj, tj, gj, nj, mj = self._signals(j)
            cos = float(self.mat[i] @ self.mat[j])
            across = float(li != lj)
            rows.append((cos, float(self.centred[i] @ self.centred[j]), float(np.log1p(rank)),
                         cos - float(max(self.best[i], self.best[j])),
                         2 * len(ti & tj) / max(1, len(ti) + len(tj)),
                         len(gi & gj) / max(1, len(gi | gj)),
                         float(bool(ni) and ni == nj), float(ni != nj),
                         float(li == lj and bool(mi - mj) and bool(mj - mi)), across,
                         float(rank == 0), across * cos))
        return np.asarray(rows, dtype=np.float64).reshape(len(rows), len(FEATURES))


@dataclass(frozen=True)
class PairScorer:
    """A fitted logistic regression over :data:`FEATURES` (standardised by ``mean`` and ``scale``),
    the bar a pair's probability must reach to be offered, the neighbour rank candidates come from,
    and the mean vector of the texts it was fitted on (:class:`Pool`'s prior centre)."""

    model: str
    centre: np.ndarray
    mean: np.ndarray
    scale: np.ndarray
    coef: np.ndarray
    intercept: float
    bar: float
    rank: int

    def probability(self, features: np.ndarray) -> np.ndarray:
        """P(same fact) of each row of features."""
        if features.shape[0] == 0:
            return np.empty(0)
        z = ((features - self.mean) / self.scale) @ self.coef + self.intercept
        return 1.0 / (1.0 + np.exp(-z))

    @classmethod
    def from_dict(cls, data: dict) -> "PairScorer":
        if tuple(data["features"]) != FEATURES:
            raise ValueError(f"{WEIGHTS.name} was fitted on other features: refit with python -m bench.fit_merge_pairs")
        return cls(model=data["model"], centre=np.asarray(data["centre"], dtype=np.float32), mean=np.asarray(data["mean"]), scale=np.asarray(data["scale"]),
                   coef=np.asarray(data["coef"]), intercept=float(data["intercept"]), bar=float(data["bar"]),
                   rank=int(data["rank"]))


@functools.lru_cache(maxsize=1)
def _load() -> PairScorer | None:
    if not WEIGHTS.exists():
        return None
    return PairScorer.from_dict(json.loads(WEIGHTS.read_text(encoding="utf-8")))


def scorer(model: str | None) -> PairScorer | None:
    """The fitted classifier when it applies to ``model``'s vectors (the model it was fitted on),
    else None: the caller keeps the cosine bar."""
    fitted = _load()
    if fitted is None or canonical_model_name(model) != fitted.model:
        return None
    return fitted
