"""Near-duplicate memories: find clusters, and write the text of their merge.

Pure logic, no database: :class:`MemoryBank` hands over a namespace's live memories and vectors,
:func:`candidates` turns them into :class:`Candidate` rows, :func:`find_clusters` says what to merge,
:func:`plan_merges` adds a :func:`preview` of each merge for the operator, and the bank applies (and
can undo) the merges itself.

Clustering
    Exact duplicates (equal content hash) are always clustered. By default, on the model the pair
    classifier was fitted on (:mod:`merge_pairs`), near duplicates are pairs of each other's nearest
    neighbours (in each other's language) that the lexical checks below let through and whose
    calibrated probability of stating one fact clears the classifier's bar, grouped so that every
    pair inside a cluster does.
    With an explicit ``threshold`` (or another model), near duplicates are memories whose
    embeddings have cosine similarity >= ``threshold`` and whose wording agrees (no conflicting
    numbers, no negation on one side only, some shared content words), grouped by complete
    linkage: *every* pair inside a cluster clears the bar, so a chain A~B~C where A and C are
    unrelated never becomes one cluster. An optional, lower ``related_threshold`` adds "same subject" clusters of
    closely related memories among those left over; with an LLM configured, :func:`llm_groups` finds
    those instead, including paraphrases across languages. The thresholds default to the bank's
    model's (``model=``; ``embed.MODEL_DEFAULTS``, picked on the demo set's planted duplicates, see
    its comments): a multilingual model's cosines sit lower (USE rates a paraphrase about 0.55, MiniLM
    about 0.6 but unrelated Chinese 0.85), and with it a pair in two languages is spared the
    shared-words check it could never pass (``across_languages``); numbers and negation still apply.

Merged text
    With an LLM, one short statement keeping every distinct fact (:func:`llm_merge_text`); without
    one, or when it answers something unusable, an extractive merge (:func:`extractive_merge`):
    the most informative member plus every member that adds facts it does not cover.
    :func:`preview` says which path produced the text.
"""

from __future__ import annotations

import json
import re
import unicodedata
from collections import Counter
from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import numpy as np

from ..embedding.embedder import DEFAULT_MODEL, model_defaults
from ..errors import LLMError, ValidationError
from ..language.text import detect_language, mostly_cjk, tokenize
from ..language.llm import LLMClient, with_fallback
from . import merge_pairs
from .conflicts.subject import moved_on

__all__ = [
    "Candidate",
    "Cluster",
    "DEFAULT_RELATED_THRESHOLD",
    "RELATED_MUTUAL_RANK",
    "DEFAULT_THRESHOLD",
    "LARGE_NAMESPACE",
    "MAX_MERGED_CHARS",
    "MergePreview",
    "candidates",
    "cluster_signals",
    "extractive_merge",
    "find_clusters",
    "llm_groups",
    "llm_merge_text",
    "merged_fields",
    "plan_merges",
    "preview",
]

# The bundled model's near-duplicate threshold; every model's (and why) is in embed.MODEL_DEFAULTS.
DEFAULT_THRESHOLD = model_defaults(DEFAULT_MODEL).merge_threshold
# Active memories in a namespace from which a near-duplicate search is too slow to run unasked:
# it compares every pair (20,000 memories take about 2 s, 100,000 about 50 s on two cores).
LARGE_NAMESPACE = 20_000
# "Same subject" suggestions (the bundled model's threshold; each model's in embed.MODEL_DEFAULTS):
# lower, only offered when asked for, always previewed. Loose
# paraphrases ("Prefers dark mode everywhere" / "Always asks for dark themes", 0.54) sit among
# unrelated pairs of the same namespace (templated logs, the English model on Chinese text), so a
# cosine bar alone is weak: on the demo set at 0.70 it puts few of the planted duplicate pairs in
# a suggestion (12 of 34 planted clusters) at pair precision 0.22, and lowering it to 0.60 gains
# recall (0.19, 16 clusters) at precision 0.17. Also requiring every pair to be among each other's
# RELATED_MUTUAL_RANK closest memories (mutual nearest neighbours: a subject's paraphrases pick
# each other, a generic memory close to many does not) keeps that recall at precision 0.23. What
# stays out is mostly beyond any cosine bar: a third of the planted pairs cross languages (Chinese
# or Swedish beside English) and the bundled English model rates them 0.0-0.4. Run conflict
# detection first: a suggestion can still hold an update ("CSV export is only on Team" / "... in
# all plans").
DEFAULT_RELATED_THRESHOLD = model_defaults(DEFAULT_MODEL).related_threshold
RELATED_MUTUAL_RANK = 2
# A near-duplicate pair must also share this much of its content words (Dice coefficient of the
# index's tokens); see _Compatibility for why.
MIN_SHARED_TOKENS = 0.25
# An LLM-written merge longer than this is not a "short statement"; the extractive text is used.
MAX_MERGED_CHARS = 300

REASON_EXACT = "exact duplicate"
REASON_NEAR = "near duplicate"
REASON_RELATED = "same subject"
REASON_LLM = "same fact (LLM)"
_REASON_RANK = {REASON_EXACT: 0, REASON_NEAR: 1, REASON_LLM: 2, REASON_RELATED: 3}
# Memories shown to the LLM per grouping request: ~150 short lines is ~3k tokens, which every
# chat model takes; a namespace larger than that is grouped chunk by chunk (see llm_groups).
LLM_GROUP_CHUNK = 150

# Rows of the similarity matrix computed at once: a block of 1024 x 20k float32, small enough for a
# laptop, large enough that BLAS (not Python) does the work.
_BLOCK_ROWS = 1024
# Neighbours kept per memory when building the candidate graph. A cluster holds at most max_size
# members, so a memory with hundreds of neighbours above the threshold (e.g. templated log lines)
# would only make the edge list quadratic; the closest ones are the ones that matter. Membership is
# still checked on all pairs, so the guarantee "every pair >= threshold" does not depend on this.
_MAX_NEIGHBOURS = 32


# --------------------------------------------------------------------------- data types


@dataclass(frozen=True)
class Candidate:
    """One live memory as the clusterer sees it. ``vector`` is its unit-length embedding."""

    id: int
    text: str
    content_hash: str
    vector: np.ndarray
    importance: float
    created_at: datetime
    access_count: int
    kind: str
    category: str
    use_count: int = 0


@dataclass(frozen=True)
class Cluster:
    """Memories that could be merged into one.

    ``ids`` are sorted; ``reason`` is ``"exact duplicate"``, ``"near duplicate"`` or
    ``"same subject"``; ``min_similarity`` is the smallest pairwise cosine similarity inside the
    cluster (1.0 for exact duplicates). ``confidence`` is the pair classifier's lowest probability
    of a pair inside the cluster stating one fact (:mod:`merge_pairs`), when it found the cluster.
    """

    ids: tuple[int, ...]
    reason: str
    min_similarity: float
    detail: str = ""  # how the cluster was found when not by the embedding alone (the LLM, or why not)
    confidence: float | None = None

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (for the CLI and the dashboard)."""
        return {
            "ids": list(self.ids),
            "size": len(self.ids),
            "reason": self.reason,
            "min_similarity": round(float(self.min_similarity), 4),
            "confidence": None if self.confidence is None else round(float(self.confidence), 4),
            "detail": self.detail,
        }


@dataclass(frozen=True)
class MergePreview:
    """What merging ``ids`` would write: the new memory's text and fields.

    ``path`` is ``"llm"`` when the configured LLM wrote ``text`` and ``"fallback"`` when the
    extractive merge did; ``detail`` names the model, or says why the fallback was used.
    """

    ids: tuple[int, ...]
    text: str
    importance: float
    created_at: datetime
    access_count: int
    kind: str
    category: str
    path: str
    detail: str
    use_count: int = 0

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (``created_at`` as ISO 8601)."""
        return {
            "ids": list(self.ids),
            "text": self.text,
            "importance": self.importance,
            "created_at": self.created_at.isoformat(),
            "access_count": self.access_count,
            "use_count": self.use_count,
            "kind": self.kind,
            "category": self.category,
            "path": self.path,
            "detail": self.detail,
        }


# --------------------------------------------------------------------------- clustering


def _check_threshold(name: str, value: object) -> float:
    is_number = isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, bool)
    if not is_number or not np.isfinite(value):
        raise ValidationError(f"{name} must be a number between 0 and 1, got {value!r}")
    if not 0.0 < float(value) <= 1.0:
        raise ValidationError(f"{name} must be in (0, 1] (a cosine similarity), got {value!r}")
    return float(value)


def _unit_matrix(candidates: Sequence[Candidate]) -> np.ndarray:
    """Stack the candidates' vectors as float32 unit rows; reject what would give nonsense cosines."""
    try:
        mat = np.asarray(np.stack([np.asarray(c.vector, dtype=np.float32).ravel() for c in candidates]))
    except ValueError:
        raise ValidationError("every candidate vector must have the same dimension") from None
    if not np.all(np.isfinite(mat)):
        raise ValidationError("candidate vectors must be finite (no NaN or inf)")
    norms = np.linalg.norm(mat, axis=1)
    if np.any(norms < 1e-6):
        bad = [candidates[i].id for i in np.flatnonzero(norms < 1e-6)[:5]]
        raise ValidationError(f"candidate vectors must not be zero (ids {bad})")
    # Renormalizing costs nothing and keeps a slightly-off vector (float16 storage, a model that
    # does not normalize) from pushing cosines above 1 or below the threshold.
    return mat / norms[:, None]


def _neighbour_edges(mat: np.ndarray, threshold: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """All pairs (i < j) with cosine >= threshold, at most ``_MAX_NEIGHBOURS`` per row i.

    The n x n similarity matrix is computed ``_BLOCK_ROWS`` rows at a time, so memory stays
    O(block x n) and the work stays in BLAS.
    """
    n = mat.shape[0]
    rows: list[np.ndarray] = []
    cols: list[np.ndarray] = []
    sims: list[np.ndarray] = []
    for start in range(0, n, _BLOCK_ROWS):
        stop = min(n, start + _BLOCK_ROWS)
        # Only columns j >= start: pairs with j < start were seen by an earlier block, which halves
        # the work. Column k of the block is memory start + k.
        block = mat[start:stop] @ mat[start:].T  # (b, n - start)
        # Keep each pair once (j > i) and never a memory with itself.
        b = stop - start
        block[:, :b][np.tril_indices(b)] = -np.inf
        hit = block >= threshold
        counts = hit.sum(axis=1)
        dense = np.flatnonzero(counts > _MAX_NEIGHBOURS)
        if dense.size:
            # Rows with too many neighbours keep only their closest ones. argpartition is linear
            # per row (a full sort of 20k columns per row would dominate a pathological bank).
            keep = np.argpartition(-block[dense], _MAX_NEIGHBOURS - 1, axis=1)[:, :_MAX_NEIGHBOURS]
            hit[dense] = False
            hit[dense[:, None], keep] = True
        r_idx, c_idx = np.nonzero(hit)
        rows.append(r_idx + start)
        cols.append(c_idx + start)
        sims.append(block[r_idx, c_idx])
    if not rows:
        empty = np.empty(0, dtype=np.int64)
        return empty, empty, np.empty(0, dtype=np.float32)
    return np.concatenate(rows), np.concatenate(cols), np.concatenate(sims)


class _Compatibility:
    """Evidence besides the embedding that two memories state the same fact.

    Cosine similarity alone merges too much: "5 km personal best is 26:30" and "New 5 km personal
    best: 25:05" embed at 0.80 (an update, not a duplicate), templated logs ("Did 13 km for the
    long run", "Did 15 km ...") at 0.9, and the bundled English model rates unrelated Swedish or
    Chinese sentences 0.85 and more because it does not understand them. Cheap lexical checks
    (numbers, negation, a plan or supersede signal on one side only, shared content words) veto such pairs; with a model that places
    languages in one space (``across_languages``), a pair in two languages is spared the shared-word
    check, which it could never pass. They only ever remove pairs,
    so every cluster still has all pairs above the threshold. Tokens, numbers and negations are
    computed lazily: only memories with a close neighbour need them.
    """

    def __init__(self, cands: Sequence[Candidate], min_shared: float, across_languages: bool = False):
        self._cands = cands
        self._min_shared = min_shared
        self._across = across_languages
        self._language: dict[int, str] = {}
        self._tokens: dict[int, frozenset[str]] = {}
        self._numbers: dict[int, frozenset[str]] = {}
        self._negation: dict[int, bool] = {}

    def _toks(self, i: int) -> frozenset[str]:
        if i not in self._tokens:
            self._tokens[i] = frozenset(tokenize(self._cands[i].text))
        return self._tokens[i]

    def _nums(self, i: int) -> frozenset[str]:
        if i not in self._numbers:
            self._numbers[i] = frozenset(_numbers(self._cands[i].text))
        return self._numbers[i]

    def _lang(self, i: int) -> str:
        if i not in self._language:
            self._language[i] = detect_language(self._cands[i].text)
        return self._language[i]

    def _negated(self, i: int) -> bool:
        if i not in self._negation:
            self._negation[i] = _has_negation(self._cands[i].text)
        return self._negation[i]

    def __call__(self, i: int, j: int) -> bool:
        # Numbers: one side may add detail ("in 2026" -> "in March 2026"), but two different
        # numbers are two events or an update (a contradiction for conflicts.py, never a silent merge).
        ni, nj = self._nums(i), self._nums(j)
        if not (ni <= nj or nj <= ni):
            return False
        # "Eats meat" / "Doesn't eat meat" embed very close; a negation on one side only is far
        # more often a contradiction than a paraphrase, and contradictions are shown, not merged.
        if self._negated(i) != self._negated(j):
            return False
        # "Considering X" / "Signed up for X", "Runs" / "Quit running": the subject moved on (an
        # update, or a contradiction), and merging the two would lose the latest state.
        if moved_on(self._cands[i].text, self._cands[j].text):
            return False
        if self._min_shared <= 0:
            return True
        if self._across and self._lang(i) != self._lang(j):
            return True  # two languages share no words; a multilingual model's cosine is the evidence
        ti, tj = self._toks(i), self._toks(j)
        if not ti or not tj:
            return True  # nothing to compare (numbers or stop words only): trust the embedding
        return 2 * len(ti & tj) / (len(ti) + len(tj)) >= self._min_shared


def _mutual_neighbours(mat: np.ndarray, rank: int) -> set[tuple[int, int]]:
    """Pairs (i < j) of rows that are each among the other's ``rank`` most similar rows."""
    return set(merge_pairs.neighbour_pairs(mat, rank)[0])


def _complete_linkage(
    mat: np.ndarray,
    pool: np.ndarray,
    threshold: float,
    max_size: int,
    compatible: Callable[[int, int], bool],
    mutual: set[tuple[int, int]] | None = None,
) -> list[list[int]]:
    """Group rows of ``pool`` so that every pair in a group has cosine >= threshold and is compatible.

    Agglomerative, strongest pair first: candidate pairs are visited by descending similarity
    (ties by row, which is by id) and two groups are joined only when every cross pair clears the
    threshold (and ``compatible``) and the result fits in ``max_size``. Checking all cross pairs (not
    just the pair that triggered the join) is what keeps chains A~B~C from collapsing into one
    group. With ``mutual`` (pairs of rows of ``mat``), only those pairs start or join a group; the
    threshold and ``compatible`` still hold for every pair. Returns groups of two or more rows
    (indices into ``mat``).
    """
    if pool.size < 2:
        return []
    sub = mat[pool]
    r, c, s = _neighbour_edges(sub, threshold)
    if mutual is not None and r.size:
        keep = np.fromiter(((int(pool[a]), int(pool[b])) in mutual for a, b in zip(r, c)), bool, r.size)
        r, c, s = r[keep], c[keep], s[keep]
    if r.size == 0:
        return []
    # Rounding the sort key makes the order immune to last-bit BLAS differences between machines;
    # exact ties are then broken by position (= id order), so the result is deterministic.
    order = np.lexsort((c, r, -np.round(s.astype(np.float64), 6)))
    group_of = np.arange(pool.size)  # row of sub -> group representative
    members: dict[int, list[int]] = {i: [i] for i in range(pool.size)}
    for e in order:
        a, b = int(group_of[r[e]]), int(group_of[c[e]])
        if a == b:
            continue
        ga, gb = members[a], members[b]
        if len(ga) + len(gb) > max_size:
            continue
        if len(ga) > 1 or len(gb) > 1:
            cross = sub[ga] @ sub[gb].T
            if cross.min() < threshold:
                continue
        if not all(compatible(int(pool[x]), int(pool[y])) for x in ga for y in gb):
            continue
        if mutual is not None and not all(
                (min(pool[x], pool[y]), max(pool[x], pool[y])) in mutual for x in ga for y in gb):
            continue
        keep, drop = (a, b) if a < b else (b, a)
        members[keep] = sorted(ga + gb)
        for m in members.pop(drop):
            group_of[m] = keep
    return [[int(pool[i]) for i in g] for g in members.values() if len(g) > 1]


def _classified(cands: Sequence[Candidate], mat: np.ndarray, taken: np.ndarray, classifier: merge_pairs.PairScorer,
                max_size: int) -> list[tuple[list[int], float]]:
    """Near duplicates by the pair classifier: pairs of each other's nearest neighbours (each counted
    among the memories of the other's language) that pass the lexical vetoes (numbers, negation, a
    subject that moved on; shared words are one of its signals, not a veto) and clear its bar, joined strongest pair first into groups in which every pair does.
    Returns (rows, the lowest probability of a pair inside)."""
    pool = merge_pairs.Pool([c.text for c in cands], mat, _numbers, classifier.centre,
                            merge_pairs.paraphrase_encoder())
    compatible = _Compatibility(cands, 0.0)
    near = {p: r for p, r in pool.neighbours(classifier.rank).items()
            if not taken[p[0]] and not taken[p[1]] and compatible(*p)}
    prob = {p: float(x) for p, x in zip(near, classifier.probability(pool.features(near))) if x >= classifier.bar}
    group_of: dict[int, int] = {}
    members: dict[int, list[int]] = {}
    for (a, b), _ in sorted(prob.items(), key=lambda kv: (-round(kv[1], 6), kv[0])):
        ga, gb = members.get(group_of.get(a, a), [a]), members.get(group_of.get(b, b), [b])
        if ga is gb or a in gb or len(ga) + len(gb) > max_size:
            continue
        if not all((min(x, y), max(x, y)) in prob for x in ga for y in gb):
            continue
        joined = sorted(ga + gb)
        for key in {group_of.get(a, a), group_of.get(b, b)}:
            members.pop(key, None)
        members[joined[0]] = joined
        for x in joined:
            group_of[x] = joined[0]
    return [(g, min(prob[(x, y)] for k, x in enumerate(g) for y in g[k + 1:])) for g in members.values()]


def _min_pairwise(mat: np.ndarray, rows: Sequence[int]) -> float:
    sims = mat[list(rows)] @ mat[list(rows)].T
    iu = np.triu_indices(len(rows), k=1)
    return float(np.clip(sims[iu].min(), -1.0, 1.0))


def cluster_signals(members: Sequence[Candidate]) -> dict[str, Any]:
    """Why a cluster was suggested, as the clusterer sees it: the lowest and mean pairwise cosine,
    the content words (stems) and numbers every member shares, and the members' languages.

    For an operator judging a suggestion: a high cosine with no shared word is a paraphrase or a
    translation, shared numbers make a restatement likely, a lone number on one side an update.
    """
    if len(members) < 2:
        raise ValidationError("a cluster has two or more members")
    mat = _unit_matrix(members)
    sims = mat @ mat.T
    iu = np.triu_indices(len(members), k=1)
    words = [set(tokenize(m.text)) for m in members]
    numbers = [_numbers(m.text) for m in members]
    return {
        "min_cosine": round(float(np.clip(sims[iu].min(), -1.0, 1.0)), 4),
        "mean_cosine": round(float(np.clip(sims[iu].mean(), -1.0, 1.0)), 4),
        "shared_words": sorted(set.intersection(*words)),
        "shared_numbers": sorted(n.lstrip("@") for n in set.intersection(*numbers)),
        "numbers_only_in_some": sorted(n.lstrip("@") for n in set.union(*numbers) - set.intersection(*numbers)),
        "languages": sorted({detect_language(m.text) for m in members}),
    }


def _exact_clusters(cands: list[Candidate], taken: np.ndarray, max_size: int) -> list[Cluster]:
    """Groups of the same ``content_hash`` (marked in ``taken``), split into runs of at most ``max_size``."""
    by_hash: dict[str, list[int]] = {}
    for i, c in enumerate(cands):
        if c.content_hash:  # an unset hash ("") says nothing; it must not make everything a duplicate
            by_hash.setdefault(c.content_hash, []).append(i)
    clusters = []
    for rows in by_hash.values():
        if len(rows) < 2:
            continue
        taken[rows] = True
        # Too many copies: split into the fewest runs of consecutive ids, as even as possible
        # (7 copies, max 6 -> 4 + 3, not 6 + a lone leftover that no merge would pick up).
        parts = -(-len(rows) // max_size)
        for chunk in np.array_split(np.asarray(rows), parts):
            if len(chunk) > 1:  # only possible with max_size 2 and an odd count
                clusters.append(Cluster(tuple(cands[i].id for i in chunk), REASON_EXACT, 1.0))
    return clusters


def find_clusters(
    candidates: list[Candidate],
    threshold: float | None = None,
    related_threshold: float | None = None,
    max_size: int = 6,
    *,
    model: str | None = None,
) -> list[Cluster]:
    """Find groups of memories that could be merged into one.

    1. **Exact duplicates** (same ``content_hash``) are always clustered, reason
       ``"exact duplicate"``.
    2. **Near duplicates** (reason ``"near duplicate"``). With ``threshold`` None on the model the pair
       classifier was fitted on (:func:`merge_pairs.scorer`): groups in which every pair is a pair of
       mutual nearest neighbours (each among the other's nearest in its own language) that passes the
       number, negation and moved-on checks below and whose
       probability of stating one fact clears the classifier's bar (``Cluster.confidence``: the
       lowest inside). Otherwise: among the rest, complete-linkage groups in which every pair has cosine
       similarity >= ``threshold`` and passes the lexical checks:
       no two different numbers ("3 users" / "5 users" is an update, not a duplicate), no
       negation on one side only ("Eats meat" / "Doesn't eat meat"), and a Dice overlap of
       content tokens >= :data:`MIN_SHARED_TOKENS` (the bundled model is English-only and rates
       unrelated Swedish or Chinese sentences as close), except, with a model whose
       ``across_languages`` default is set, for a pair in two languages.
    3. **Same subject** (only when ``related_threshold`` is given, and lower than ``threshold``):
       among memories still unclustered, complete-linkage groups at ``related_threshold`` whose
       pairs also pass the lexical checks and are mutual nearest neighbours (each among the
       other's :data:`RELATED_MUTUAL_RANK` closest candidates).

    A memory is in at most one cluster (an exact-duplicate group is not extended with its
    paraphrases: after that merge, the next run finds them). No cluster has more than
    ``max_size`` members: exact-duplicate groups are split into consecutive runs of ids, and the
    similarity groups never grow past it. The result does not depend on the input order: it is
    sorted by reason (exact, near, same subject), then by ``min_similarity`` descending, then ids.

    ``model`` is the embedding model of the vectors (default: the bundled one): the classifier applies
    to it or not, and ``threshold`` (when None and it does not) and the cross-language rule are its
    defaults (:func:`memory_core.embedding.embedder.model_defaults`).
    Vectorized: similarities are computed in row blocks with numpy, so 20k memories take seconds.
    Raises ``ValidationError`` for bad thresholds, ``max_size`` < 2, repeated ids or bad vectors.
    """
    defaults = model_defaults(model)
    classifier = merge_pairs.scorer(model) if threshold is None else None
    threshold = _check_threshold("threshold", defaults.merge_threshold if threshold is None else threshold)
    if related_threshold is not None:
        related_threshold = _check_threshold("related_threshold", related_threshold)
        if related_threshold >= threshold:
            raise ValidationError(
                f"related_threshold ({related_threshold}) must be lower than threshold ({threshold}); "
                f"it widens the search to related memories"
            )
    if not isinstance(max_size, int) or isinstance(max_size, bool) or max_size < 2:
        raise ValidationError(f"max_size must be a whole number >= 2, got {max_size!r}")
    if not isinstance(candidates, (list, tuple)):
        raise ValidationError(f"candidates must be a list of Candidate, got {type(candidates).__name__}")
    if len(candidates) < 2:
        return []
    for c in candidates:
        if not isinstance(c, Candidate):
            raise ValidationError(f"candidates must be Candidate objects, got {type(c).__name__}")
    ids = [c.id for c in candidates]
    if len(set(ids)) != len(ids):
        repeated = sorted(i for i, k in Counter(ids).items() if k > 1)[:5]
        raise ValidationError(f"candidate ids must be unique; repeated: {repeated}")

    # Sorting by id first makes every later tie-break (and so the whole result) order-independent.
    cands = sorted(candidates, key=lambda c: c.id)
    mat = _unit_matrix(cands)
    clusters: list[Cluster] = []
    taken = np.zeros(len(cands), dtype=bool)

    clusters.extend(_exact_clusters(cands, taken, max_size))

    compatible = _Compatibility(cands, MIN_SHARED_TOKENS, defaults.across_languages)
    stages: list[tuple[float, str, set[tuple[int, int]] | None]] = [(threshold, REASON_NEAR, None)]
    if classifier is not None:
        stages = []
        for group, confidence in _classified(cands, mat, taken, classifier, max_size):
            taken[group] = True
            clusters.append(Cluster(tuple(cands[i].id for i in group), REASON_NEAR, _min_pairwise(mat, group),
                                    confidence=confidence))
    if related_threshold is not None:
        stages.append((related_threshold, REASON_RELATED, _mutual_neighbours(mat, RELATED_MUTUAL_RANK)))
    for level, reason, mutual in stages:
        pool = np.flatnonzero(~taken)
        for group in _complete_linkage(mat, pool, level, max_size, compatible, mutual):
            taken[group] = True
            clusters.append(Cluster(tuple(cands[i].id for i in group), reason, _min_pairwise(mat, group)))

    clusters.sort(key=lambda cl: (_REASON_RANK[cl.reason], -round(cl.min_similarity, 6), cl.ids))
    return clusters


# --------------------------------------------------------------------------- merged fields


def merged_fields(members: Sequence[Candidate]) -> dict[str, Any]:
    """The fields of the memory that replaces ``members`` (everything but the text).

    importance: the highest (merging must not demote a central fact); created_at: the newest (the
    fact was still true then); access_count and use_count: the sums (all past retrievals and uses
    were of this fact); kind:
    ``"explicit"`` if any member was stated by the user, else ``"inferred"``; category: the most
    common, ties going to the category of the most important member (then the newest, then the
    lowest id).
    """
    if not members:
        raise ValidationError("a merge needs at least one member")
    counts = Counter(m.category for m in members)
    top = max(counts.values())
    tied = {cat for cat, n in counts.items() if n == top}
    ranked = sorted(members, key=lambda m: (-m.importance, -m.created_at.timestamp(), m.id))
    category = next(m.category for m in ranked if m.category in tied)
    return {
        "importance": max(float(m.importance) for m in members),
        "created_at": max(m.created_at for m in members),
        "access_count": sum(int(m.access_count) for m in members),
        "use_count": sum(int(getattr(m, "use_count", 0)) for m in members),
        "kind": "explicit" if any(m.kind == "explicit" for m in members) else "inferred",
        "category": category,
    }


# --------------------------------------------------------------------------- extractive merge

# A member is a "distinct fact" unless at least this share of its content tokens is already in the
# merged text. Below 1.0 so a paraphrase adding one filler word ("every" morning) is not repeated.
COVERAGE = 0.8
_SENTENCE_END = ("." , "!", "?", "。", "！", "？")
# A number with its decimals or clock parts: "6.5" and "6:40" are one fact each, not "6" and "5".
_NUMBER = re.compile(r"\d+(?:[.,:]\d+)*")


def _is_sentence(text: str) -> bool:
    # "..." ends a trailing-off clause, not a sentence.
    return text.endswith(_SENTENCE_END) and not text.endswith("..")


def _numbers(text: str) -> set[str]:
    """The numbers in ``text``, normalized ("０７:３０" -> "7:30", "6,5" -> "6.5").

    Numbers are the facts a word-overlap ratio hides best: "under 55 minutes" and "under 50
    minutes" share every word but one.
    """
    out = set()
    normalized = unicodedata.normalize("NFKC", text)
    for match in _NUMBER.findall(normalized):
        parts = re.split(r"([.,:])", match)
        # Only the integer part loses leading zeros: "07:30" == "7:30", but "6.05" != "6.5".
        head, rest = parts[0], parts[1:]
        out.add(str(int(head)) + "".join("." if p == "," else p for p in rest))
    # Months, weekdays and holidays are values too: "move in March" and "move in April" are an
    # update, "visited at Christmas" and "at Easter" two visits, 周一 and 周四 two days.
    out.update(f"@{_CALENDAR_KEY.get(m.lower()[:3], m.lower()[:3])}" for m in _CALENDAR.findall(normalized))
    out.update(f"@{_MONTHS[_cn_number(m) - 1]}" for m in _CN_MONTH.findall(normalized) if 1 <= _cn_number(m) <= 12)
    out.update(f"@{_WEEKDAYS[min('一二三四五六日天'.index(d), 6)]}" for d in _CN_WEEKDAY.findall(normalized))
    out.update(f"@{_HOLIDAYS[h.group(0).lower()]}" for h in _HOLIDAY.finditer(normalized))
    return out


_CALENDAR = re.compile(
    r"\b(january|february|march|april|may|june|july|august|september|october|november|december|"
    r"januari|februari|mars|maj|juni|juli|augusti|oktober|"
    r"(?:monday|tuesday|wednesday|thursday|friday|saturday|sunday|"
    r"måndag|tisdag|onsdag|torsdag|fredag|lördag|söndag)(?:s|ar|arna|en)?)\b", re.IGNORECASE)
# Swedish names whose first three letters are not the English key: "lördag" and "Saturday" are one day.
_CALENDAR_KEY = {"maj": "may", "okt": "oct", "mån": "mon", "tis": "tue", "ons": "wed", "tor": "thu", "fre": "fri",
                 "lör": "sat", "sön": "sun"}
_MONTHS = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")
_WEEKDAYS = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")
# Chinese months written in numerals (八月, 十一月; 5月 is read as the number 5) and weekdays (周四, 星期天).
_CN_MONTH = re.compile(r"(?<![一二三四五六七八九十])([一二三四五六七八九十]{1,2})月")
_CN_WEEKDAY = re.compile(r"(?:周|星期|礼拜)([一二三四五六日天])")
_HOLIDAY = re.compile(r"\b(christmas|easter|midsummer|jul|julen|julas|påsk|påsken|påskas|midsommar)\b|(圣诞|复活节|春节|中秋)",
                      re.IGNORECASE)
_HOLIDAYS = {"christmas": "xmas", "jul": "xmas", "julen": "xmas", "julas": "xmas", "圣诞": "xmas",
             "easter": "easter", "påsk": "easter", "påsken": "easter", "påskas": "easter", "复活节": "easter",
             "midsummer": "midsummer", "midsommar": "midsummer", "春节": "spring festival", "中秋": "mid-autumn"}


def _cn_number(text: str) -> int:
    """一 to 十二 as a number (0 when it is not one)."""
    digits = "一二三四五六七八九"
    if text == "十":
        return 10
    if len(text) == 2 and text[0] == "十" and text[1] in digits:
        return 10 + digits.index(text[1]) + 1
    return digits.index(text) + 1 if len(text) == 1 and text in digits else 0


# Negation words of the languages the project serves (English, Swedish, Chinese). Chinese 不/没
# also start some positive words (不错 "good"); the cost is a missed merge, never a wrong one. 别,
# 未 and 无 are left out: they are mostly inside ordinary words (识别, 未来, 无论).
_NEGATION = re.compile(
    r"n['’]t\b|\b(?:not|no|never|cannot|nor|neither|none|nothing|nobody|without|no longer"
    r"|inte|ej|aldrig|ingen|inget|inga|icke)\b|[不没沒]",
    re.IGNORECASE,
)


# 无…不 and 非…不 are a double negation, a positive statement: 无辣不欢 "no meal is good without spice".
_DOUBLE_NEGATION = re.compile(r"[无無非][^\s，。、,.;；]{1,2}不")


def _has_negation(text: str) -> bool:
    return _NEGATION.search(_DOUBLE_NEGATION.sub("", unicodedata.normalize("NFKC", text))) is not None


def _norm(text: str) -> str:
    return " ".join(unicodedata.normalize("NFKC", text).casefold().split())


def _append(result: str, piece: str) -> str:
    """Append one member to the merged text: a sentence after a sentence, else a "; " clause."""
    cjk = mostly_cjk(piece)
    if _is_sentence(piece):
        if not _is_sentence(result):
            result += "。" if mostly_cjk(result) else "."
        return result + ("" if cjk and mostly_cjk(result) else " ") + piece
    # A clause: drop a single closing full stop so "A.; b" never happens.
    if result.endswith((".", "。")) and not result.endswith(".."):
        result = result[:-1]
    return result + ("；" if cjk else "; ") + piece.rstrip(";；,，")


def extractive_merge(texts: list[str]) -> str:
    """Merge paraphrases without an LLM: the most informative member plus every distinct fact.

    The base is the member with the most distinct content tokens (``memory_core.language.text.tokenize``:
    stemmed words without stop words; characters and bigrams for Chinese), ties going to the
    longer text, then the first. The others are visited from most to least informative; one whose
    tokens are at least 80 % covered by what is already kept (and that adds no new number) says
    nothing new and is dropped; any other is appended, as a "; " clause (a "；" clause in Chinese)
    or, when it is already a full sentence, as a sentence. Exact repeats are dropped. So no
    distinct fact is lost, and the result stays one short statement for the usual 2-4
    paraphrases. Raises ``ValidationError`` when there is no non-empty text.
    """
    if isinstance(texts, str) or not isinstance(texts, Sequence):
        raise ValidationError("texts must be a list of strings")
    cleaned: list[str] = []
    seen: set[str] = set()
    for t in texts:
        if not isinstance(t, str):
            raise ValidationError(f"texts must be strings, got {type(t).__name__}")
        t = " ".join(t.split())
        if t and _norm(t) not in seen:
            seen.add(_norm(t))
            cleaned.append(t)
    if not cleaned:
        raise ValidationError("nothing to merge: every text is empty")

    tokens = [set(tokenize(t)) for t in cleaned]
    # Most informative first; Python's sort is stable, so equal keys keep the given order.
    order = sorted(range(len(cleaned)), key=lambda i: (-len(tokens[i]), -len(cleaned[i])))
    base = order[0]
    result = cleaned[base]
    covered = set(tokens[base])
    numbers = _numbers(cleaned[base])
    for i in order[1:]:
        toks, nums = tokens[i], _numbers(cleaned[i])
        if toks:
            share = len(toks & covered) / len(toks)
        else:  # only stop words: new only if its words do not already appear verbatim
            share = 1.0 if _norm(cleaned[i]) in _norm(result) else 0.0
        if share >= COVERAGE and nums <= numbers:
            continue
        result = _append(result, cleaned[i])
        covered |= toks
        numbers |= nums
    return result


# --------------------------------------------------------------------------- LLM merge

_SYSTEM_PROMPT = (
    "You maintain the long-term memory of an AI assistant. The memories below are near-duplicates: "
    "statements the assistant stored about the same user at different times. Merge them into ONE short "
    "standalone statement written in the same style (e.g. 'Prefers tea in the morning'). Keep every "
    "distinct fact, name, number, date and qualifier that appears in any of them; do not add anything "
    "that none of them says; do not mention that this is a merge. Write in the language most of the "
    f"memories use. At most {MAX_MERGED_CHARS} characters."
)
_SCHEMA_HINT = '{"text": "<the merged memory, one short statement>"}'


def _check_texts(texts: object) -> list[str]:
    if isinstance(texts, str) or not isinstance(texts, Sequence):
        raise ValidationError("texts must be a list of strings")
    out = []
    for t in texts:
        if not isinstance(t, str):
            raise ValidationError(f"texts must be strings, got {type(t).__name__}")
        if t.strip():
            out.append(" ".join(t.split()))
    if not out:
        raise ValidationError("nothing to merge: every text is empty")
    return out


def llm_merge_text(texts: list[str], client: LLMClient) -> str:
    """Ask the LLM to write one short statement that keeps every distinct fact of ``texts``.

    The model must answer strict JSON ``{"text": "..."}`` (one repair request is made by
    :meth:`LLMClient.chat_json` when it does not). Raises :class:`~memory_core.errors.LLMError`
    when the answer is unusable: not an object with a string ``text``, empty, longer than
    :data:`MAX_MERGED_CHARS`, or missing a number that one of the memories contains (a dropped
    number is a silently lost fact). Transport failures raise ``LLMError`` too.
    """
    items = _check_texts(texts)
    listing = "\n".join(f"{i}. {json.dumps(t, ensure_ascii=False)}" for i, t in enumerate(items, 1))
    messages = [
        {"role": "system", "content": _SYSTEM_PROMPT},
        {"role": "user", "content": f"Memories to merge:\n{listing}"},
    ]
    reply = client.chat_json(messages, schema_hint=_SCHEMA_HINT)
    if not isinstance(reply, dict) or not isinstance(reply.get("text"), str):
        raise LLMError(f'LLM merge reply is not {{"text": "..."}} (got {json.dumps(reply, ensure_ascii=False)[:120]})')
    text = " ".join(reply["text"].split())
    if not text:
        raise LLMError("LLM merge reply has an empty text")
    if len(text) > MAX_MERGED_CHARS:
        raise LLMError(f"LLM merge text is {len(text)} characters, over the {MAX_MERGED_CHARS} allowed for one memory")
    missing = set().union(*(_numbers(t) for t in items)) - _numbers(text)
    if missing:
        raise LLMError(f"LLM merge text dropped the number(s) {', '.join(sorted(missing))} stated in the memories")
    return text


def preview(members: list[Candidate], client: LLMClient | None = None) -> MergePreview:
    """What merging ``members`` would produce: the text plus the fields of :func:`merged_fields`.

    The text comes from :func:`llm_merge_text` when ``client`` is given and answers usably, else
    from :func:`extractive_merge`; ``path``/``detail`` say which, and why (no LLM configured, the
    endpoint failed, the reply was unusable). Members are read in id order (the order they were
    stored). Changes nothing. Raises ``ValidationError`` for fewer than two members or repeated ids.
    """
    if isinstance(members, Candidate) or not isinstance(members, Sequence):
        raise ValidationError("members must be a list of Candidate")
    if any(not isinstance(m, Candidate) for m in members):
        raise ValidationError("members must be Candidate objects")
    if len(members) < 2:
        raise ValidationError("a merge needs at least two memories")
    ids = [m.id for m in members]
    if len(set(ids)) != len(ids):
        raise ValidationError(f"a merge lists the same memory twice: {sorted(ids)}")
    ordered = sorted(members, key=lambda m: m.id)
    texts = [m.text for m in ordered]
    result = with_fallback(lambda c: llm_merge_text(texts, c), lambda: extractive_merge(texts), client)
    return MergePreview(
        ids=tuple(sorted(ids)),
        text=result.value,
        path=result.path,
        detail=result.detail,
        **merged_fields(ordered),
    )


# --------------------------------------------------------------------------- LLM grouping

_GROUP_PROMPT = (
    "You maintain the long-term memory of an AI assistant. Below are memories it stored about one user "
    "or project, one per line as [id] \"text\". Find the groups of memories that state the same fact, "
    "preference or goal, so that each group can be merged into one memory: paraphrases, rewordings "
    "and translations (the same fact in two languages) belong together. Do NOT group memories that "
    "disagree or update each other (\"lives in Paris\" / \"moved to Berlin\"), separate events "
    "(two different runs, two different exam scores), or merely related facts that would lose meaning "
    "as one statement. Most memories belong to no group; leave them out. Use only ids from the list."
)
_GROUP_HINT = '{"groups": [[<id>, <id>, ...], ...]}'


def _group_ids(reply: object, shown: set[int]) -> list[list[int]]:
    """The groups of an LLM grouping reply, checked against the ids it was shown."""
    if not isinstance(reply, dict) or not isinstance(reply.get("groups"), list):
        raise LLMError(f'LLM grouping reply is not {{"groups": [[ids]]}} (got {json.dumps(reply, ensure_ascii=False)[:120]})')
    groups: list[list[int]] = []
    seen: set[int] = set()
    for group in reply["groups"]:
        if not isinstance(group, list):
            raise LLMError(f"LLM grouping reply has a group that is not a list of ids: {group!r}"[:200])
        ids = []
        for x in group:
            if isinstance(x, str) and x.strip().lstrip("[").rstrip("]").isdigit():
                x = int(x.strip().lstrip("[").rstrip("]"))  # "[12]" or "12": the id as the prompt showed it
            if isinstance(x, bool) or not isinstance(x, int) or x not in shown:
                raise LLMError(f"LLM grouping named {x!r}, which is not one of the memories it was shown")
            if x in seen or x in ids:
                raise LLMError(f"LLM grouping put memory {x} in two groups")
            ids.append(x)
        seen.update(ids)
        if len(ids) > 1:
            groups.append(sorted(ids))
    return groups


def llm_groups(cands: Sequence[Candidate], client: LLMClient, *, max_size: int = 6,
               chunk_size: int = LLM_GROUP_CHUNK) -> list[tuple[int, ...]]:
    """Ask the LLM which memories state the same fact, including across languages.

    This finds what the bundled English embedding cannot: "不喜欢早上八点的课" and "Not a morning
    person; struggles with 8 a.m. classes" embed at -0.04. Memories are shown in id order,
    ``chunk_size`` per request, so on a namespace larger than one chunk two paraphrases in
    different chunks are not paired (the embedding stages still pair same-language ones). The
    lexical vetoes of :func:`find_clusters` apply (two different numbers, negation on one side
    only), and a group larger than ``max_size`` is left out (one short statement could not keep
    it all). Returns sorted id tuples. Raises :class:`LLMError` when a reply is unusable: not
    ``{"groups": [[ids]]}``, an id it was not shown (an invented id), or an id in two groups.
    """
    ordered = sorted(cands, key=lambda c: c.id)
    index = {c.id: i for i, c in enumerate(ordered)}
    compatible = _Compatibility(ordered, 0.0)
    out: list[tuple[int, ...]] = []
    for start in range(0, len(ordered), chunk_size):
        chunk = ordered[start:start + chunk_size]
        if len(chunk) < 2:
            continue
        listing = "\n".join(f"[{c.id}] {json.dumps(' '.join(c.text.split()), ensure_ascii=False)}" for c in chunk)
        reply = client.chat_json([{"role": "system", "content": _GROUP_PROMPT},
                                  {"role": "user", "content": f"Memories:\n{listing}"}], schema_hint=_GROUP_HINT)
        for ids in _group_ids(reply, {c.id for c in chunk}):
            rows = [index[i] for i in ids]
            if len(ids) <= max_size and all(compatible(a, b) for a in rows for b in rows if a < b):
                out.append(tuple(ids))
    return out


# --------------------------------------------------------------------------- from the bank's data


def candidates(ids: np.ndarray, vectors: np.ndarray, memories: Iterable[Any], *, held: Collection[int] = (),
               exclude: Collection[int] | None = None) -> list[Candidate]:
    """A namespace's live memories as clustering candidates: ``ids`` and their unit ``vectors``
    (``MemoryBank.live_vectors``) with the live ``memories`` they belong to, except those an operator
    pinned, those ``held`` (in an open conflict: a contradiction must be resolved, not merged away)
    and ``exclude``."""
    by_id = {m.id: m for m in memories}
    out = []
    for mid, vec in zip(ids.tolist(), vectors):
        m = by_id.get(mid)
        if m is None or m.pinned or mid in held or (exclude and mid in exclude):
            continue
        out.append(Candidate(id=mid, text=m.text, content_hash=m.content_hash, vector=vec, importance=m.importance,
                             created_at=m.created_at, access_count=m.access_count, kind=m.kind, category=m.category,
                             use_count=m.use_count))
    return out


def plan_merges(cands: Sequence[Candidate], *, threshold: float | None = None,
                related_threshold: float | None = None, client: LLMClient | None = None,
                max_size: int = 6, model: str | None = None) -> list[tuple[Cluster, MergePreview]]:
    """Every merge worth making among ``cands`` (see :func:`candidates`) with its preview.

    ``model``: the vectors' embedding model, whose defaults apply (see :func:`find_clusters`).

    Exact and near duplicates come from the embedding (near ones from the pair classifier unless a
    ``threshold`` is given; see :func:`find_clusters`). With ``related_threshold``, "same subject"
    suggestions are added: grouped by the LLM when ``client`` is given (:func:`llm_groups`), else,
    or when it fails, by the embedding; each cluster's ``detail`` says which. Apply one with
    ``bank.merge(cluster.ids, preview.text, path=preview.path, detail=preview.detail)``.
    """
    cands = list(cands)
    by_id = {c.id: c for c in cands}
    if related_threshold is None or client is None:
        clusters = find_clusters(cands, threshold=threshold, related_threshold=related_threshold, max_size=max_size,
                                 model=model)
    else:
        clusters = _with_llm_groups(cands, threshold, related_threshold, client, max_size, model)
    return [(cl, preview([by_id[i] for i in cl.ids], client)) for cl in clusters]


def _with_llm_groups(cands: list[Candidate], threshold: float | None, related_threshold: float, client: LLMClient,
                     max_size: int, model: str | None) -> list[Cluster]:
    """Exact and near duplicates by the embedding, then "same subject" groups by the LLM (which also
    sees paraphrases across languages) among the rest; when the LLM fails, the embedding's related
    stage instead. ``Cluster.detail`` of the same-subject clusters says which, and why."""
    found = find_clusters(cands, threshold=threshold, max_size=max_size, model=model)
    taken = {i for cl in found for i in cl.ids}
    rest = [c for c in cands if c.id not in taken]
    result = with_fallback(lambda cl: llm_groups(rest, cl, max_size=max_size), lambda: None, client)
    if result.value is None:
        every = find_clusters(cands, threshold=threshold, related_threshold=related_threshold, max_size=max_size,
                              model=model)
        detail = f"grouped by the embedding: {result.detail}"
        return [cl if cl.reason != REASON_RELATED else Cluster(cl.ids, cl.reason, cl.min_similarity, detail)
                for cl in every]
    by_id = {c.id: c for c in rest}
    clusters = [Cluster(ids, REASON_LLM, _min_pairwise(_unit_matrix([by_id[i] for i in ids]), range(len(ids))),
                        f"grouped by {result.detail}") for ids in result.value]
    clusters.sort(key=lambda cl: (-round(cl.min_similarity, 6), cl.ids))
    return found + clusters
