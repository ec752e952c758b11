"""Whether two memories of a namespace state the same fact: a pair classifier over cheap signals.

A cosine bar alone cannot tell a paraphrase from a progression, two events of one kind or another
fact about the same subject: on the default model they sit at the same cosines. The classifier
combines what each pair shows (:data:`FEATURES`): the cosine of the stored vectors and the
cosine after the namespace's mean is taken out (what the namespace's memories share says little),
how close each is to the other among their neighbours of the other's language (a paraphrase is
usually its twin's nearest there, a translation seldom the nearest of all), shared words and
character n-grams, shared numbers, a name on each side the other lacks (two events: Copenhagen's
race and Gothenburg's), whether the pair crosses languages, and for two English memories the
cosine of an English paraphrase model (the bundled all-MiniLM-L6-v2, loaded when a plan first
needs it; without it the plan reads English pairs on e5's scale alone). Pairs
whose numbers differ, with a negation on one side only, or where one side moved on (a plan and its
next step, a supersede signal) never reach it: :mod:`merge` vetoes them first.

The weights are a logistic regression fitted with cross-validation on the curation set's dev half
(``bench/data/duplicates.json``, written for this, not from the demo texts) by
``python -m bench.fit_merge_pairs``, kept in ``merge_pairs.json`` beside this module with the bar
whose out-of-fold precision was at least 0.85 (0.8 with a margin), and the higher bar at 0.97 (0.95 with a margin) above
which a maintenance run merges without an operator (the rest wait on the Merges page). They are fitted on
multilingual-e5-small's vectors: :func:`scorer` returns None for any other model, whose banks keep
the cosine bar.
"""

from __future__ import annotations

import functools
import json
import os
import re
import threading
import unicodedata
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..embedding.embedder import MINILM_MODEL, canonical_model_name, get_embedder
from ..errors import ValidationError
from ..language.text import detect_language, tokenize

__all__ = ["FEATURES", "PairScorer", "Pool", "WEIGHTS", "design", "neighbour_pairs", "paraphrase_encoder", "scorer"]

WEIGHTS = Path(__file__).resolve().parent / "merge_pairs.json"
FEATURES = ("cosine", "centred_cosine", "rank", "margin", "shared_words", "char_ngrams", "same_numbers",
            "other_numbers", "other_names", "across_languages", "nearest_both", "across_cosine", "paraphrase",
            "english_pair")
# The centre the centred cosine takes out is the namespace's mean drawn toward the fitted corpus's
# mean as if that were this many memories: a namespace of three has no mean worth the name.
PRIOR_MEMORIES = 50
# Set to 0 to plan merges without the paraphrase model (English pairs are then read on e5's scale alone).
PARAPHRASE_ENV = "MEMCTL_MERGE_PARAPHRASE"
# English texts whose paraphrase vectors are kept between plans (a 384-float vector each).
PARAPHRASE_CACHE = 20_000
_paraphrases: dict[str, np.ndarray] = {}
_paraphrase_lock = threading.Lock()
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


def neighbour_pairs(mat: np.ndarray, rank: int, languages: Sequence[str] | None = None
                    ) -> tuple[dict[tuple[int, int], int], np.ndarray]:
    """Pairs (i < j) of rows of unit vectors ``mat`` that are each among the other's ``rank``
    nearest, with the worse of the two ranks (0: each is the other's nearest); and each row's
    highest cosine to another row, one column per language. With ``languages`` (one per row), the
    nearest are counted among the rows of the other's language: a Swedish memory's nearest is
    mostly another Swedish memory, and its English twin would never be a candidate; without, all
    rows are one language. Blocked, so memory stays O(block x n)."""
    n = mat.shape[0]
    langs = list(languages) if languages is not None else [""] * n
    names = sorted(set(langs))
    column = np.array([names.index(x) for x in langs], dtype=np.int64)
    best = np.full((n, len(names)), -1.0, dtype=np.float32)
    place: list[dict[int, int]] = [{} for _ in range(n)]
    for k in range(len(names)):
        cols = np.flatnonzero(column == k)
        m = min(rank, cols.size - 1) if cols.size > 1 else min(rank, cols.size)
        if m < 1:
            continue
        for start in range(0, n, _BLOCK_ROWS):
            stop = min(n, start + _BLOCK_ROWS)
            block = mat[start:stop] @ mat[cols].T
            own = np.flatnonzero((cols >= start) & (cols < stop))
            block[cols[own] - start, own] = -np.inf
            part = np.argpartition(-block, m - 1, axis=1)[:, :m]
            order = np.argsort(-np.take_along_axis(block, part, axis=1), axis=1, kind="stable")
            top = cols[np.take_along_axis(part, order, axis=1)]
            best[start:stop, k] = block.max(axis=1)
            for i, row in zip(range(start, stop), top.tolist()):
                place[i].update((j, r) for r, j in enumerate(row) if j != i)
    pairs = {}
    for i in range(n):
        for j, r in place[i].items():
            if i < j and i in place[j]:
                pairs[(i, j)] = max(r, place[j][i])
    return pairs, best


class Pool:
    """One namespace's memories as the classifier reads them: texts, unit vectors, their languages,
    the centre the centred cosine takes out (the namespace's mean, drawn toward ``prior`` as if it
    were :data:`PRIOR_MEMORIES` memories); per-text signals lazily. ``numbers`` reads a text's
    numbers (merge's rule, given by it). ``paraphrase``, when given, embeds English texts with a
    paraphrase model (:func:`paraphrase_encoder`): English pairs are then also read on its scale."""

    def __init__(self, texts: Sequence[str], mat: np.ndarray, numbers: Callable[[str], Collection[str]],
                 prior: np.ndarray | None = None, paraphrase: Callable[[list[str]], np.ndarray | None] | None = None):
        self.texts = list(texts)
        self._numbers = numbers
        self._paraphrase = paraphrase
        self.mat = mat
        self.languages = [detect_language(t) for t in self.texts]
        names = sorted(set(self.languages))
        self._column = [names.index(x) for x in self.languages]
        self.best = np.full((len(self.texts), len(names)), -1.0, dtype=np.float32)
        centre = mat.mean(axis=0)
        if prior is not None:
            centre = (len(mat) * centre + PRIOR_MEMORIES * prior) / (len(mat) + PRIOR_MEMORIES)
        centred = mat - centre
        norms = np.linalg.norm(centred, axis=1, keepdims=True)
        self.centred = centred / np.where(norms > 1e-6, norms, 1.0)
        self._cache: dict[int, tuple[frozenset[str], frozenset[str], frozenset[str], frozenset[str]]] = {}

    def neighbours(self, rank: int) -> dict[tuple[int, int], int]:
        """The candidate pairs: each among the other's ``rank`` nearest in its own language
        (:func:`neighbour_pairs`), pair -> the worse rank; keeps each memory's nearest cosine per
        language for the margin."""
        pairs, self.best = neighbour_pairs(self.mat, rank, self.languages)
        return pairs

    def _signals(self, i: int) -> tuple[frozenset[str], frozenset[str], frozenset[str], frozenset[str]]:
        if i not in self._cache:
            t = self.texts[i]
            self._cache[i] = (frozenset(tokenize(t)), _grams(t), frozenset(self._numbers(t)), _names(t))
        return self._cache[i]

    def _english(self, pairs: Collection[tuple[int, int]]) -> dict[int, np.ndarray]:
        """The paraphrase model's vectors of the texts of English pairs (none without the model)."""
        rows = sorted({x for i, j in pairs if self.languages[i] == self.languages[j] == "en" for x in (i, j)})
        vectors = self._paraphrase([self.texts[x] for x in rows]) if self._paraphrase and rows else None
        return {} if vectors is None else dict(zip(rows, vectors))

    def features(self, pairs: dict[tuple[int, int], int]) -> np.ndarray:
        """One row of :data:`FEATURES` per pair, in the order of ``pairs`` (pair -> rank). Call
        :meth:`neighbours` first: the margin reads each memory's nearest cosines."""
        english = self._english(pairs)
        rows = []
        for (i, j), rank in pairs.items():
            ti, gi, ni, mi = self._signals(i)
            tj, gj, nj, mj = self._signals(j)
            cos, centred = float(self.mat[i] @ self.mat[j]), float(self.centred[i] @ self.centred[j])
            same = self.languages[i] == self.languages[j]
            para = i in english and j in english
            rows.append((cos, centred, float(np.log1p(rank)),
                         cos - float(max(self.best[i, self._column[j]], self.best[j, self._column[i]])),
                         2 * len(ti & tj) / max(1, len(ti) + len(tj)),
                         len(gi & gj) / max(1, len(gi | gj)),
                         float(bool(ni) and ni == nj), float(ni != nj),
                         float(same and bool(mi - mj) and bool(mj - mi)), float(not same),
                         float(rank == 0), float(not same) * cos,
                         float(english[i] @ english[j]) if para else centred, float(para)))
        return np.asarray(rows, dtype=np.float64).reshape(len(rows), len(FEATURES))


def design(features: np.ndarray) -> np.ndarray:
    """The regression's inputs: :data:`FEATURES`, and each of them again for pairs across two
    languages (zero for the others), so such pairs, whose cosines sit on a scale of their own,
    get weights of their own."""
    across = FEATURES.index("across_languages")
    others = [k for k in range(len(FEATURES)) if k != across]
    return np.hstack([features, features[:, others] * features[:, [across]]])


@dataclass(frozen=True)
class PairScorer:
    """A fitted logistic regression over :func:`design` of :data:`FEATURES` (standardised by ``mean`` and ``scale``),
    the bar a pair's probability must reach to be offered, the higher bar a maintenance run merges at
    without an operator (``auto_bar``), the neighbour rank candidates come from, and the mean vector of the texts it was fitted on (:class:`Pool`'s prior centre)."""

    model: str
    centre: np.ndarray
    mean: np.ndarray
    scale: np.ndarray
    coef: np.ndarray
    intercept: float
    bar: float
    auto_bar: float
    rank: int

    def probability(self, features: np.ndarray) -> np.ndarray:
        """P(same fact) of each row of features (:data:`FEATURES`; :func:`design` widens them)."""
        if features.shape[0] == 0:
            return np.empty(0)
        z = ((design(features) - self.mean) / self.scale) @ self.coef + self.intercept
        return 1.0 / (1.0 + np.exp(-z))

    @classmethod
    def from_dict(cls, data: dict) -> "PairScorer":
        if tuple(data["features"]) != FEATURES:
            raise ValueError(f"{WEIGHTS.name} was fitted on other features: refit with python -m bench.fit_merge_pairs")
        return cls(model=data["model"], centre=np.asarray(data["centre"], dtype=np.float32), mean=np.asarray(data["mean"]), scale=np.asarray(data["scale"]),
                   coef=np.asarray(data["coef"]), intercept=float(data["intercept"]), bar=float(data["bar"]),
                   auto_bar=float(data["auto_bar"]), rank=int(data["rank"]))


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


def paraphrase_encoder() -> Callable[[list[str]], np.ndarray | None] | None:
    """The bundled English paraphrase model (all-MiniLM-L6-v2) as an encoder of texts, loaded when
    first asked to encode (a merge plan with English pairs, never an add); the encoder answers None
    when the model cannot load. None with ``MEMCTL_MERGE_PARAPHRASE=0``. Either way the plan then
    reads English pairs on e5's scale alone. The last :data:`PARAPHRASE_CACHE` texts' vectors are
    kept: the Merges page plans every namespace again on each visit."""
    if os.environ.get(PARAPHRASE_ENV, "1") == "0":
        return None

    def encode(texts: list[str]) -> np.ndarray | None:
        with _paraphrase_lock:
            todo = [t for t in dict.fromkeys(texts) if t not in _paraphrases]
        if todo:
            try:
                vectors = get_embedder(MINILM_MODEL).encode(todo)
            except (ImportError, OSError, ValidationError):
                return None
            with _paraphrase_lock:
                for text, vector in zip(todo, vectors):
                    if len(_paraphrases) >= PARAPHRASE_CACHE:
                        _paraphrases.pop(next(iter(_paraphrases)))
                    _paraphrases[text] = vector
        with _paraphrase_lock:
            found = [_paraphrases.get(t) for t in texts]
        if any(v is None for v in found):  # evicted meanwhile by a larger plan: encode them together
            return get_embedder(MINILM_MODEL).encode(texts)
        return np.vstack(found)

    return encode
