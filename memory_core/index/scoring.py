"""How recall ranks memories: ScoringParams, the presets, and the vectorized blended score.

This module is the only place a score is computed. Agent recall, the dashboard's what-if
view and the benchmarks all call :func:`blend`.

The blended score of a memory for a query is::

    tier × (α·relevance + β·recency + γ·importance + δ·frequency) / (α + β + γ + δ)

* relevance = (1 − lexical_weight)·dense + lexical_weight·lexical, where dense is the cosine
  similarity rescaled from [similarity_floor, similarity_ceiling] to [0, 1] (clipped), and lexical
  is the BM25 score of the memory's text and context normalized by what an average-length memory
  holding every query term once would score, clipped to [0, 1] (:func:`lexical_relevance`). A query
  carrying less than ``lexical_min_terms`` rare words' worth of idf is normalized as if it carried
  that much, so one common word ("dream", "thanks") cannot reach full lexical relevance on its own.
  A memory whose cosine is below the floor keeps ``lexical_below_floor`` of its lexical match: a
  word shared with an unrelated text is mostly chance.
  BM25 uses k1 1.5 and b 0.4 (less length normalization than Lucene's 0.75: a turn stored with its
  context is long, and the answer).
* dates (:func:`date_lift`): when the query names periods of time (``memory_core.language.periods``: "in May
  2023", "on June 26, 2023", "in 2022", "2023-06-26", and relative to ``now`` "yesterday", "last
  week", "last month", "this year", "July last year"; in English, Swedish and Chinese, as the
  tokenizer reads them; "today" is left out, a greeting more often than a question), a memory's
  match (:func:`date_match`) is 1 when it was created in one or up to ``DATE_AFTER_DAYS`` (7) after
  its end (people tell of an event days later) and ``exp(−days away / DATE_SCALE_DAYS)`` (30)
  outside, the best over the periods; its relevance then takes ``date_weight × match`` of the gap
  up to 1. That stays in [0, 1] and is non-decreasing in the relevance. A query naming no period is
  ranked as before; ``components["dates"]`` is the lift and :func:`parts` shows it apart. Unlike
  the neighbours' lift it can raise a namespace's best score (every memory of a named month comes
  closer to the threshold), so it is kept to queries that name a period. Exactness: such a query is
  scored whole (``NamespaceIndex.rank``: the pruning bounds do not describe the lift; only queries
  naming a period pay for a full scan); :func:`upper_bound` takes the largest match.
* neighbours (:func:`neighbour_lift`): the relevance above (the dates' lift included) is a memory's
  own; it then takes ``neighbour_weight`` of the gap up to the best own relevance among its
  neighbours, the ``NEIGHBOURS`` (2) memories of its namespace created just before it and just
  after it, within ``NEIGHBOUR_SECONDS`` (an hour) of it (ties by id;
  ``NamespaceIndex.neighbour_rows``: extended in place for memories added after the newest, sorted
  again after a removal, a re-dated memory or one added among older ones). One created after an "as
  of" moment lends nothing. The lift is never negative and never goes above the neighbour's
  relevance, so the best score of a namespace, and what the threshold means, stay as they were;
  ``components["neighbours"]`` is the lift and :func:`parts` shows it apart. Exactness: ``relevance
  + lift`` is non-decreasing in both relevances, so bounds of both bound it; the projected pruning
  bounds a row's neighbours by their own bounds (the 1,024 most relevant by bound, and rows the
  side structures do not describe, computed exactly), and the 8-bit first pass, which bounds only
  the rows it returns, gives way to a full scan.
* recency decays from creation or last access: ``exp(−ln2·age/half_life)`` or ``1 −
  age/linear_horizon``, never below ``recency_floor``.
* frequency = ``min(1, frequency_base + frequency_step·count)``, where count is the memory's
  ``access_count`` (recalls that returned it) with ``frequency_from="retrievals"``, or its
  ``use_count`` (recalls whose answer used it, from feedback) with ``frequency_from="uses"``.
* tier multiplies by ``tier_hot`` / ``tier_warm`` / ``tier_cold`` by the time since the memory was
  last touched (created or recalled): hot < 7 days ≤ warm ≤ 90 days < cold.

Dividing by the weight sum keeps scores in [0, 1] (with tier multipliers ≤ 1) whatever the
weights, so a threshold keeps its meaning while an operator moves the sliders. A question's language
moves the threshold it is held to by the model's offset for that language (:func:`for_language`);
equal scores go to the higher cosine (:func:`top_k`).
"""

from __future__ import annotations

import dataclasses
import functools
import json
import math
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Callable, Mapping

import numpy as np

from ..errors import ValidationError

DAY = 86400.0
HOT_DAYS = 7.0
COLD_DAYS = 90.0
COMPONENTS = ("similarity", "lexical", "dates", "neighbours", "recency", "importance", "frequency")
# A memory's neighbours: this many memories on each side of it, in creation order, in its namespace,
# created within NEIGHBOUR_SECONDS of it (the same conversation: facts stored days apart lend nothing).
NEIGHBOURS = 2
NEIGHBOUR_SECONDS = 3600.0
# A period a query names ("in July 2023", "last week": memory_core.language.periods) matches a memory created
# in it, or up to DATE_AFTER_DAYS after it (people tell of an event days later), fully; one created
# further away by exp(-days / DATE_SCALE_DAYS) of the distance (date_match).
DATE_AFTER_DAYS = 7.0
DATE_SCALE_DAYS = 30.0
FREQUENCY_FROM = ("retrievals", "uses")  # what ScoringParams.frequency_from may name


@functools.lru_cache(maxsize=64)
def _params_json(params: "ScoringParams") -> str:
    # Every recorded recall logs its settings; they rarely change, so their JSON is kept.
    return json.dumps(params.to_dict(), sort_keys=True)


TIERS = ("hot", "warm", "cold")
_TICK = timedelta(microseconds=1)  # the resolution of stored times (DuckDB, PostgreSQL, datetime)


def tier_of(age_days: float) -> str:
    """The storage tier of a memory last touched ``age_days`` ago: hot, warm or cold.

    This is the tier rule; :func:`tier_bounds` states it as times, and :func:`blend` applies it."""
    if age_days < HOT_DAYS:
        return "hot"
    if age_days <= COLD_DAYS:
        return "warm"
    return "cold"


def tier_bounds(tier: str, now: datetime) -> tuple[datetime | None, datetime | None]:
    """When a memory in ``tier`` as of ``now`` was last touched: ``(after, before)``, both inclusive,
    None where unbounded (the convention of the bank's ``*_after``/``*_before`` filters).

    Agrees with :func:`tier_of` to the microsecond: a memory touched exactly ``HOT_DAYS`` or
    ``COLD_DAYS`` ago is warm, so hot starts and cold ends one microsecond inside those instants.
    """
    hot, cold = now - timedelta(days=HOT_DAYS), now - timedelta(days=COLD_DAYS)
    if tier == "hot":
        return hot + _TICK, None
    if tier == "warm":
        return cold, hot
    if tier == "cold":
        return None, cold - _TICK
    raise ValidationError(f"tier must be one of {', '.join(TIERS)}, got {tier!r}")


@dataclass(frozen=True)
class ScoringParams:
    """Weights and shape of the blended recall score. Frozen and validated on construction.

    ``ScoringParams()`` is the project's recommended default. Use :meth:`preset` for a named
    preset and :meth:`replace` for a modified copy.
    """

    # The default is calibrated for the default model, multilingual-e5-small: chosen on the dev
    # halves of the multilingual set and of LoCoMo, reported on the test halves (BENCHMARKS.md, "A
    # multilingual default"; python -m bench.calibrate). Other models' values: embed.MODEL_DEFAULTS.
    alpha: float = 0.7  # relevance
    beta: float = 0.1  # recency
    gamma: float = 0.15  # importance
    delta: float = 0.05  # usage frequency
    # The share of relevance that is lexical match (BM25 in the memory's language); the rest is dense.
    lexical_weight: float = 0.4
    # The share of its lexical match a memory keeps when its cosine is below similarity_floor: a word
    # shared with an unrelated text ("love" asked of films, in a fact about steak) is mostly chance.
    # 1: lexical match counts whatever the cosine. See BENCHMARKS.md, "A multilingual default".
    lexical_below_floor: float = 0.25
    # A query must carry this many rarest-word idfs before one memory matching all its words
    # reaches full lexical relevance: "do you dream?" shares one word with many chatty memories.
    lexical_min_terms: float = 2.0
    # Cosines are stretched from [floor, ceiling] to [0, 1]: below the floor texts are unrelated,
    # above the ceiling they say the same; relevance then outweighs the priors' spread.
    similarity_floor: float = 0.15
    similarity_ceiling: float = 0.70
    # The share of the gap up to its best neighbour's relevance (NEIGHBOURS memories on each side,
    # by creation time) a memory's relevance takes: "Yes, last Sunday!" is found through the turn
    # before it. It only lifts (the best relevance in a namespace stays what it was, so the
    # threshold keeps its meaning). See BENCHMARKS.md, "LoCoMo" and "A multilingual default".
    neighbour_weight: float = 0.5
    # The relevance of its own (dense and lexical, before any lift) a memory needs before its
    # neighbours or the query's dates may lift it: a neighbour lends relevance only to a memory that
    # has some. With the threshold above what recency, importance and usage alone can reach
    # (prior_bound), a memory with nothing to do with the question is never returned. 0: no rule.
    min_relevance: float = 0.05
    # The share of the gap up to full relevance a memory takes when it was created in a period the
    # query names ("What did Audrey sign up for in May 2023?"; scoring.date_match). Queries that
    # name no period are unchanged. See BENCHMARKS.md, "LoCoMo".
    date_weight: float = 0.3
    # A 180-day half-life keeps recency from burying questions about last year.
    half_life_days: float = 180.0
    decay: str = "exponential"
    linear_horizon_days: float = 180.0
    recency_floor: float = 0.0
    recency_from: str = "created"
    frequency_base: float = 0.5
    frequency_step: float = 0.1
    # What frequency counts: "retrievals" (every recall that returned the memory) or "uses" (only
    # the recalls whose answer used it, as MemoryBank.feedback decided): a memory recalled often
    # but never used then gains nothing from being recalled.
    frequency_from: str = "retrievals"
    tier_hot: float = 1.0
    tier_warm: float = 1.0
    tier_cold: float = 1.0
    k: int = 5
    # What a memory's score must reach to be returned: general questions that no memory answers
    # get nothing (BENCHMARKS.md, "A multilingual default"): an irrelevant memory is worse than none.
    threshold: float = 0.35

    def __post_init__(self) -> None:
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if f.name in ("decay", "recency_from", "frequency_from"):
                if not isinstance(value, str):
                    raise ValidationError(f"{f.name} must be a string, got {type(value).__name__}")
                continue
            if f.name == "k":
                if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
                    raise ValidationError(f"k must be a whole number, got {value!r}")
                if not 1 <= int(value) <= 1000:
                    raise ValidationError(f"k must be between 1 and 1000, got {value}")
                object.__setattr__(self, "k", int(value))
                continue
            if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
                raise ValidationError(f"{f.name} must be a number, got {value!r}")
            value = float(value)
            if not math.isfinite(value):
                raise ValidationError(f"{f.name} must be a finite number, got {value}")
            if value < 0:
                raise ValidationError(f"{f.name} must not be negative, got {value}")
            object.__setattr__(self, f.name, value)
        if self.alpha + self.beta + self.gamma + self.delta <= 0:
            raise ValidationError("at least one of alpha, beta, gamma, delta must be above 0")
        for name in ("lexical_weight", "lexical_below_floor", "neighbour_weight", "date_weight", "similarity_floor",
                     "recency_floor", "frequency_base", "min_relevance"):
            if getattr(self, name) > 1:
                raise ValidationError(f"{name} must be between 0 and 1, got {getattr(self, name)}")
        if not self.similarity_floor < self.similarity_ceiling <= 1:
            raise ValidationError(
                "similarity_floor must be below similarity_ceiling, and the ceiling at most 1 "
                f"(got {self.similarity_floor} and {self.similarity_ceiling})"
            )
        top = max(1.0, self.tier_hot, self.tier_warm, self.tier_cold)  # no score is higher (see upper_bound)
        if self.threshold > top:
            raise ValidationError(f"threshold must be between 0 and {top:g} (the highest score a memory can reach"
                                  f"{' with these tier multipliers' if top > 1 else ''}), got {self.threshold:g}")
        if self.half_life_days <= 0 or self.linear_horizon_days <= 0:
            raise ValidationError("half_life_days and linear_horizon_days must be above 0")
        if self.decay not in ("exponential", "linear"):
            raise ValidationError(f"decay must be 'exponential' or 'linear', got {self.decay!r}")
        if self.recency_from not in ("created", "last_access"):
            raise ValidationError(
                f"recency_from must be 'created' or 'last_access', got {self.recency_from!r}"
            )
        if self.frequency_from not in FREQUENCY_FROM:
            raise ValidationError(
                f"frequency_from must be 'retrievals' or 'uses', got {self.frequency_from!r}"
            )

    @classmethod
    def preset(cls, name: str) -> "ScoringParams":
        """One of the built-in presets: ``default``, ``generative-agents``, ``weighted-recall``, as
        set for the reference scale (MiniLM's, e5's for ``default``). A bank's own, on its model's
        scale: ``bank.presets()[name]``, or the name passed as recall's ``params``."""
        try:
            return PRESETS[name]
        except (KeyError, TypeError):
            raise ValidationError(
                f"unknown built-in preset {name!r}; choose one of {', '.join(PRESETS)}"
            ) from None

    def replace(self, **changes: Any) -> "ScoringParams":
        """A validated copy with ``changes`` applied."""
        unknown = set(changes) - {f.name for f in dataclasses.fields(self)}
        if unknown:
            raise ValidationError(f"unknown scoring parameter(s): {', '.join(sorted(unknown))}")
        return dataclasses.replace(self, **changes)

    def to_dict(self) -> dict[str, Any]:
        """Plain values, JSON-safe."""
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any], base: "ScoringParams | None" = None) -> "ScoringParams":
        """Build from :meth:`to_dict` output; unknown keys are an error, missing ones take ``base``'s
        values (a bank's model's default, for a preset saved before a parameter existed), else the
        reference defaults."""
        if not isinstance(data, dict):
            raise ValidationError(f"scoring parameters must be a mapping, got {type(data).__name__}")
        return (base or cls()).replace(**data)

    def to_json(self) -> str:
        return _params_json(self)

    @property
    def weight_sum(self) -> float:
        return self.alpha + self.beta + self.gamma + self.delta

    def prior_bound(self) -> float:
        """The most recency, importance and frequency together can add to a score.

        A memory whose relevance is 0 can never score above this; candidate pruning and the
        Tune page use it to show how much of a score relevance must carry.
        """
        tier = max(self.tier_hot, self.tier_warm, self.tier_cold)
        return tier * (self.beta + self.gamma + self.delta) / self.weight_sum


PRESETS: dict[str, ScoringParams] = {
    "default": ScoringParams(),
    "generative-agents": ScoringParams(
        alpha=0.6, beta=0.2, gamma=0.2, delta=0.0, lexical_weight=0.0,
        similarity_floor=0.0, similarity_ceiling=1.0,
        half_life_days=30.0, decay="exponential", k=3, threshold=0.45, neighbour_weight=0.0, date_weight=0.0,
        min_relevance=0.0,
    ),
    "weighted-recall": ScoringParams(
        alpha=0.5, beta=0.2, gamma=0.2, delta=0.1, lexical_weight=0.0,
        similarity_floor=0.0, similarity_ceiling=1.0,
        decay="linear", linear_horizon_days=180.0, recency_floor=0.3,
        frequency_base=0.5, frequency_step=0.1, k=5, threshold=0.0, neighbour_weight=0.0, date_weight=0.0,
        min_relevance=0.0,
    ),
}


def _last_touch(created: np.ndarray, last_access: np.ndarray, now: float) -> np.ndarray:
    """Each memory's last access as of ``now``, or its creation when it had none by then (an
    access after ``now``, seen from an "as of" view of the past, counts as none)."""
    return np.where(np.isfinite(last_access) & (last_access <= now), last_access, created)


def _touched_days(created: np.ndarray, last: np.ndarray, now: float) -> np.ndarray:
    """Days since each memory was created or last accessed, what its tier goes by."""
    return np.maximum(now - np.maximum(created, last), 0.0) / DAY


def blend(
    params: ScoringParams,
    *,
    similarity: np.ndarray,
    lexical: np.ndarray,
    created: np.ndarray,
    last_access: np.ndarray,
    importance: np.ndarray,
    access_count: np.ndarray,
    now: float,
    use_count: np.ndarray | None = None,
    neighbour_relevance: np.ndarray | None = None,
    date_match: np.ndarray | None = None,
) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """Blended scores of n memories, and their components.

    Times are POSIX seconds; ``last_access`` is NaN for a memory never recalled, and an access
    after ``now`` (an "as of" view of the past) counts as no access. ``similarity`` is raw cosine,
    ``lexical`` already normalized to [0, 1]. Frequency counts ``access_count`` or, with
    ``params.frequency_from == "uses"``, ``use_count`` (required then). ``neighbour_relevance``
    is each memory's best neighbour's relevance (:func:`neighbour_best`; None: no neighbours), of
    relevance as :func:`own_relevance` gives it; ``date_match`` each memory's match with the
    periods the query names (:func:`date_match`; None: it names none).
    Returns ``(score, components)`` where components maps each name in :data:`COMPONENTS` (plus
    ``relevance``, the neighbours' lift included, and ``tier``) to an array.
    """
    p = params
    sim = np.asarray(similarity, dtype=np.float64)
    lex = np.asarray(lexical, dtype=np.float64)
    created = np.asarray(created, dtype=np.float64)
    last = np.asarray(last_access, dtype=np.float64)
    last = _last_touch(created, last, now)

    relevance = relevance_of(p, sim, lex)
    eligible = relevant(p, relevance)
    dated = date_lift(p, relevance, date_match) * eligible
    relevance = relevance + dated
    lift = neighbour_lift(p, relevance, neighbour_relevance) * eligible
    relevance = relevance + lift

    ref = last if p.recency_from == "last_access" else created
    age_days = np.maximum(now - ref, 0.0) / DAY
    if p.decay == "exponential":
        recency = np.exp(-math.log(2.0) * age_days / p.half_life_days)
    else:
        recency = 1.0 - age_days / p.linear_horizon_days
    recency = np.maximum(recency, p.recency_floor)

    if p.frequency_from == "uses":
        if use_count is None:
            raise ValidationError("frequency_from='uses' needs every memory's use_count")
        count = use_count
    else:
        count = access_count
    frequency = np.minimum(1.0, p.frequency_base + p.frequency_step * np.asarray(count, dtype=np.float64))
    imp = np.asarray(importance, dtype=np.float64)

    touched_days = _touched_days(created, last, now)
    tier = np.where(
        touched_days < HOT_DAYS, p.tier_hot, np.where(touched_days <= COLD_DAYS, p.tier_warm, p.tier_cold)
    )
    score = tier * (p.alpha * relevance + p.beta * recency + p.gamma * imp + p.delta * frequency) / p.weight_sum
    components = {
        "similarity": sim,
        "lexical": lex,
        "dates": dated,
        "neighbours": lift,
        "recency": recency,
        "importance": imp,
        "frequency": frequency,
        "relevance": relevance,
        "tier": tier,
    }
    return score, components


def relevant(params: ScoringParams, relevance: np.ndarray) -> np.ndarray:
    """Which memories have enough relevance of their own (:func:`relevance_of`) to be lifted by
    their neighbours or the query's dates."""
    return np.asarray(relevance) >= params.min_relevance


def relevance_of(params: ScoringParams, similarity: np.ndarray, lexical: np.ndarray) -> np.ndarray:
    """A memory's own relevance: raw cosine stretched over [floor, ceiling], blended with lexical
    match (already in [0, 1]; ``lexical_below_floor`` of it for a cosine below the floor) by
    ``lexical_weight``. Non-decreasing in both (the share kept is at most 1)."""
    p = params
    sim = np.asarray(similarity, dtype=np.float64)
    dense = np.clip((sim - p.similarity_floor) / (p.similarity_ceiling - p.similarity_floor), 0.0, 1.0)
    lex = np.asarray(lexical, dtype=np.float64)
    if p.lexical_below_floor < 1:
        lex = np.where(sim >= p.similarity_floor, lex, p.lexical_below_floor * lex)
    return (1.0 - p.lexical_weight) * dense + p.lexical_weight * lex


def for_language(params: ScoringParams, offset: float) -> ScoringParams:
    """``params`` calibrated for a question's language: the threshold moved by ``offset`` (the bank's
    model's ``language_threshold`` for the language), kept within what a score can reach.

    A model reads some languages' questions closer to every memory than others (e5: English above
    Swedish), so one threshold would let an English question no memory answers through and cut
    the right Swedish memory. Only the threshold moves: within one question the order is the
    blend's whatever the language, and a score means the same on every page. A threshold of 0
    (the top k, whatever their scores) stays 0. Recall, pruning (which ranks against the moved
    threshold) and :class:`Candidates` all go through here."""
    if not offset or params.threshold == 0:
        return params
    top = max(1.0, params.tier_hot, params.tier_warm, params.tier_cold)
    return params.replace(threshold=round(min(max(params.threshold + offset, 0.0), top), 9))


def date_match(created: np.ndarray, periods: "tuple[tuple[float, float], ...] | list") -> np.ndarray | None:
    """Per memory, how well its creation time matches the periods a query names (``(start, end)``
    POSIX seconds, end exclusive; :func:`memory_core.language.periods.query_periods`): 1 inside a period
    or up to ``DATE_AFTER_DAYS`` after its end, else ``exp(-days away / DATE_SCALE_DAYS)``; the
    best over the periods. None when there are no periods (nothing to match)."""
    if not periods:
        return None
    created = np.asarray(created, dtype=np.float64)
    best = np.zeros(created.shape)
    for start, end in periods:
        away = np.maximum(np.maximum(start - created, created - (end + DATE_AFTER_DAYS * DAY)), 0.0) / DAY
        np.maximum(best, np.exp(-away / DATE_SCALE_DAYS), out=best)
    return best


def date_lift(params: ScoringParams, relevance: np.ndarray, match: np.ndarray | None) -> np.ndarray:
    """What a memory's own relevance gains from matching the query's periods: ``date_weight ×
    match`` of the gap up to 1. ``relevance + lift`` stays in [0, 1] and is non-decreasing in the
    relevance (slope ``1 − date_weight × match`` ≥ 0)."""
    if match is None or params.date_weight == 0:
        return np.zeros_like(relevance)
    return params.date_weight * np.asarray(match, dtype=np.float64) * (1.0 - relevance)


def own_relevance(params: ScoringParams, similarity: np.ndarray, lexical: np.ndarray,
                  match: np.ndarray | None = None) -> np.ndarray:
    """A memory's relevance before its neighbours lift it: :func:`relevance_of` plus
    :func:`date_lift`. What a neighbour lends (``neighbour_relevance`` of :func:`blend`)."""
    rel = relevance_of(params, similarity, lexical)
    return rel + date_lift(params, rel, match) * relevant(params, rel)


def neighbour_lift(params: ScoringParams, relevance: np.ndarray, neighbour_relevance: np.ndarray | None) -> np.ndarray:
    """What a memory's relevance gains from its neighbours: ``neighbour_weight`` of the gap up to the
    best neighbour's relevance, when that is higher (never a loss).

    ``relevance + lift`` is non-decreasing in both relevances (its slope in the memory's own is
    1 or 1 - neighbour_weight), and never above the larger of the two: bounds of both bound it.
    """
    if neighbour_relevance is None or params.neighbour_weight == 0:
        return np.zeros_like(relevance)
    return params.neighbour_weight * np.maximum(np.asarray(neighbour_relevance, dtype=np.float64) - relevance, 0.0)


def neighbour_best(relevance: np.ndarray, neighbours: np.ndarray) -> np.ndarray:
    """Per memory, the best relevance among its neighbours (0 without any).

    ``relevance`` is (..., n); ``neighbours`` (n, 2 × NEIGHBOURS) holds each row's neighbour rows,
    -1 where there is none (see ``NamespaceIndex.neighbour_rows``).
    """
    relevance = np.asarray(relevance, dtype=np.float64)
    if neighbours.shape[-1] == 0 or relevance.shape[-1] == 0:
        return np.zeros_like(relevance)
    pad = np.zeros(relevance.shape[:-1] + (1,))
    padded = np.concatenate([relevance, pad], axis=-1)  # row -1 reads the 0 at the end
    # One gather per column: a max over a small last axis is several times slower at 1M rows.
    best = np.take(padded, neighbours[:, 0], axis=-1)
    for j in range(1, neighbours.shape[1]):
        np.maximum(best, np.take(padded, neighbours[:, j], axis=-1), out=best)
    return best


def lexical_relevance(params: ScoringParams, raw: np.ndarray, idf_sum: float, max_idf: float,
                      k1: float) -> np.ndarray:
    """BM25 scores normalized to [0, 1] for :func:`blend`'s ``lexical``.

    ``raw`` is every memory's BM25 for the query (k1 as given), ``idf_sum`` the query terms'
    summed idf (terms no memory holds included, so a query sharing one rare word out of five
    scores low), and ``max_idf`` the idf of a word one memory holds. 1 means: as much as an
    average-length memory holding every query term once, for a query of at least
    ``lexical_min_terms`` rarest words' weight.
    """
    raw = np.asarray(raw, dtype=np.float64)
    mass = max(idf_sum, params.lexical_min_terms * max_idf)
    if mass <= 0:
        return np.zeros_like(raw)
    return np.minimum(raw * (1.0 + k1) / mass, 1.0)


PARTS = (("relevance", "alpha"), ("dates", "alpha"), ("neighbours", "alpha"), ("recency", "beta"),
         ("importance", "gamma"), ("frequency", "delta"))


def parts(params: ScoringParams, components: dict[str, float]) -> dict[str, float]:
    """A hit's score split into what each weighted component contributes (they add up to the score):
    ``weight × component ÷ weight sum × tier``, with relevance split into the memory's own and
    what the periods the query names and its neighbours lifted it by. The Tune page draws these as a
    stacked bar."""
    tier = components["tier"]
    lift = components.get("neighbours", 0.0)  # hits logged before neighbours counted have none
    dated = components.get("dates", 0.0)  # nor before dates did
    own = dict(components, relevance=components["relevance"] - lift - dated, neighbours=lift, dates=dated)
    return {name: getattr(params, weight) * own[name] / params.weight_sum * tier for name, weight in PARTS}


def top_k(score: np.ndarray, ids: np.ndarray, k: int, threshold: float,
          similarity: "np.ndarray | Callable[[np.ndarray], np.ndarray] | None" = None) -> np.ndarray:
    """Positions of the best ``k`` scores that reach ``threshold`` (and are above 0), best first.

    Equal scores go to the higher cosine ``similarity`` (an array, or a function of the positions
    it is asked about: only the few kept are), then to the smaller id, so results are deterministic
    whatever the storage order. Scores tie where relevance is clipped (every cosine below the
    floor reads 0): the closer meaning then wins, not the older memory.
    """
    keep = np.flatnonzero((score >= threshold) & (score > 0))
    if keep.size == 0:
        return keep
    if keep.size > k:
        # argpartition narrows to the k best (plus everything tied with the k-th) cheaply.
        kth = np.partition(-score[keep], k - 1)[k - 1]
        keep = keep[-score[keep] <= kth]
    if similarity is None:
        order = np.lexsort((ids[keep], -score[keep]))
    else:
        sim = similarity(keep) if callable(similarity) else np.asarray(similarity)[keep]
        order = np.lexsort((ids[keep], -np.asarray(sim, dtype=np.float64), -score[keep]))
    return keep[order][:k]


def upper_bound(
    params: ScoringParams,
    *,
    similarity: np.ndarray | float,
    lexical: np.ndarray | float = 1.0,
    importance_max: float = 1.0,
    access_count_max: float = math.inf,
    use_count_max: float = math.inf,
    neighbour: np.ndarray | float = 1.0,
    date: np.ndarray | float = 1.0,
) -> np.ndarray | float:
    """The highest blended score any memory can reach with cosine similarity at most ``similarity``,
    lexical match at most ``lexical``, no neighbour more relevant than ``neighbour`` (default:
    any neighbour) and a match with the query's periods of at most ``date`` (default: any),
    whatever its age, tier and usage, given that no memory
    of the namespace has importance above ``importance_max``, more than ``access_count_max``
    retrievals or more than ``use_count_max`` uses (the one ``params.frequency_from`` counts bounds
    frequency).

    Exact recall prunes with it: a memory whose bound is below the k-th best score found so far
    cannot be in the top k, so it never needs scoring. It relies on :func:`blend` being
    non-decreasing in similarity, lexical match and neighbour relevance for fixed priors, and on recency, importance,
    frequency and tier each staying within the maxima used here; tests/test_recall_scale.py checks
    ``blend <= upper_bound`` on random inputs, so a change to the formula that breaks it fails there.
    """
    p = params
    sim = np.asarray(similarity, dtype=np.float64)
    lex = np.clip(np.asarray(lexical, dtype=np.float64), 0.0, 1.0)
    relevance = relevance_of(p, sim, lex)
    # r + w·m·(1 − r) grows with m, and with r: the largest match bounds it.
    relevance = relevance + date_lift(p, relevance, np.clip(np.asarray(date, dtype=np.float64), 0.0, 1.0))
    relevance = relevance + neighbour_lift(p, relevance, np.clip(np.asarray(neighbour, dtype=np.float64), 0.0, 1.0))
    recency = max(1.0, p.recency_floor)
    count_max = use_count_max if p.frequency_from == "uses" else access_count_max
    frequency = min(1.0, p.frequency_base + p.frequency_step * count_max) if math.isfinite(
        count_max) else (1.0 if p.frequency_step > 0 else min(1.0, p.frequency_base))
    frequency = max(frequency, min(1.0, p.frequency_base))
    importance = min(max(importance_max, 0.0), 1.0)
    tier = max(p.tier_hot, p.tier_warm, p.tier_cold)
    out = tier * (p.alpha * relevance + p.beta * recency + p.gamma * importance + p.delta * frequency) / p.weight_sum
    return float(out) if out.ndim == 0 else out


def prior_bounds(
    params: ScoringParams,
    *,
    created: np.ndarray,
    last_access: np.ndarray,
    importance: np.ndarray,
    access_count: np.ndarray,
    now: float,
    use_count: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per memory, ``(rest, dense_gain, lexical_gain)`` such that, for any query recalled at
    ``now`` or later and as long as the memory's own fields do not change, :func:`blend` gives it
    at most ``rest + dense_gain × dense + lexical_gain × lexical`` (dense: its similarity
    rescaled to [0, 1] as blend does; lexical: its normalized lexical match).

    Time only lowers recency, and the tier a memory can still reach is the largest of its
    current one and the later ones, so the bound holds at any later moment. Exact recall uses it
    to skip memories that cannot reach the k-th best score (``NamespaceIndex.rank``). With
    neighbours, the bound of a memory whose own relevance is at most ``r`` and whose neighbours'
    at most ``nb`` adds ``(dense_gain + lexical_gain) × lift(r, nb)`` (:func:`neighbour_lift`):
    the two gains are the relevance's weight split by ``lexical_weight``.
    """
    p = params
    n = len(created)
    _, comps = blend(p, similarity=np.zeros(n), lexical=np.zeros(n), created=created, last_access=last_access,
                     importance=importance, access_count=access_count, use_count=use_count, now=now)
    # The largest tier multiplier a memory can still get: its current tier or a later one (time
    # moves a memory from hot to warm to cold, and an operator may weigh cold above hot).
    created = np.asarray(created, dtype=np.float64)
    touched_days = _touched_days(created, _last_touch(created, np.asarray(last_access, dtype=np.float64), now), now)
    later = np.where(touched_days < HOT_DAYS, max(p.tier_hot, p.tier_warm, p.tier_cold),
                     np.where(touched_days <= COLD_DAYS, max(p.tier_warm, p.tier_cold), p.tier_cold))
    scale = later / p.weight_sum
    rest = scale * (p.beta * comps["recency"] + p.gamma * comps["importance"] + p.delta * comps["frequency"])
    # Summed in another order than blend sums, the bound could round below a score it bounds.
    up = 1 + 1e-9
    return rest * up + 1e-9, scale * (p.alpha * (1.0 - p.lexical_weight) * up), scale * (p.alpha * p.lexical_weight * up)


def top_k_rows(score: np.ndarray, ids: np.ndarray, k: int, threshold: float | np.ndarray,
               similarity: np.ndarray | None = None) -> list[np.ndarray]:
    """:func:`top_k` for every row of a (queries × memories) score matrix, with the same selection
    and tie-break (``similarity``: the same shape as ``score``; ``threshold``: one, or one per
    row); the tuner ranks many queries per parameter setting this way."""
    score = np.atleast_2d(score)
    q, n = score.shape
    thresholds = np.broadcast_to(np.asarray(threshold, dtype=np.float64), (q,))
    if n == 0:
        return [np.zeros(0, dtype=np.int64) for _ in range(q)]
    sims = None if similarity is None else np.atleast_2d(similarity)
    if n > 4096:  # one full sort per row would cost more than top_k's partition
        return [top_k(row, ids, k, float(t), None if sims is None else sims[i])
                for i, (row, t) in enumerate(zip(score, thresholds))]
    masked = np.where((score >= thresholds[:, None]) & (score > 0), score, -np.inf)
    keys = (np.broadcast_to(ids, score.shape), -masked) if sims is None else (
        np.broadcast_to(ids, score.shape), -sims, -masked)
    order = np.lexsort(keys, axis=-1)[:, :k]
    keep = np.isfinite(np.take_along_axis(masked, order, axis=-1))
    return [order[i][keep[i]] for i in range(q)]


def add_kept_pairs(rows: list[int], ids: np.ndarray, row_of: dict[int, int],
                   score: np.ndarray | Mapping[int, float],
                   pairs: dict[int, set[int]]) -> tuple[list[int], dict[int, int]]:
    """Insert the partner of each selected memory an operator chose to keep both of, right after it.

    A pair resolved "keep both" comes back together, even below the threshold, so the model sees
    the contradiction instead of one side of it. ``score`` maps a row to its score (an array, or
    a dict when only some rows were scored). Returns the rows and memory id → partner id.
    """
    rows = list(rows)
    partner_of: dict[int, int] = {}
    for r in list(rows):
        for partner in sorted(pairs.get(int(ids[r]), ())):
            pr = row_of.get(partner)
            if pr is not None and np.isfinite(score[pr]):
                partner_of[int(ids[r])] = partner
                partner_of.setdefault(partner, int(ids[r]))
                if pr not in rows:
                    rows.insert(rows.index(r) + 1, pr)
    return rows, partner_of


@dataclass
class Candidates:
    """What ranking needs of one namespace for several queries, captured once.

    Similarity and lexical match depend on the query only, so the tuner computes them once per
    query (one embedding each) and re-ranks under any number of parameter settings with
    :meth:`select`, which blends and picks exactly as recall does. Built by
    ``MemoryBank.candidates``; ``now`` holds each query's moment (POSIX seconds).
    """

    ids: np.ndarray  # (n,) memory ids
    created: np.ndarray  # (n,)
    last_access: np.ndarray  # (n,)
    importance: np.ndarray  # (n,)
    access_count: np.ndarray  # (n,)
    similarity: np.ndarray  # (q, n) raw cosine
    lexical_raw: np.ndarray  # (q, n) raw BM25, normalized per setting by lexical_relevance
    idf_sum: np.ndarray  # (q,) the query terms' summed idf
    max_idf: float  # the idf of a term one memory holds
    k1: float  # BM25's k1
    now: np.ndarray  # (q,)
    pairs: dict[int, set[int]]
    row_of: dict[int, int]
    use_count: np.ndarray  # (n,) recalls whose answer used the memory (frequency_from="uses")
    neighbours: np.ndarray | None = None  # (n, 2 × NEIGHBOURS) neighbour rows, -1 for none
    dates: np.ndarray | None = None  # (q, n) match with each query's periods (date_match; 0: names none)
    offsets: np.ndarray | None = None  # (q,) each query's language's threshold offset (for_language; None: 0)

    def thresholds(self, params: ScoringParams) -> np.ndarray:
        """(q,) the threshold each query is held to: ``params``' own, calibrated for its language."""
        offsets = np.zeros(len(self.now)) if self.offsets is None else self.offsets
        return np.array([for_language(params, float(o)).threshold for o in offsets], dtype=np.float64)

    def scores(self, params: ScoringParams) -> np.ndarray:
        """(q, n) blended scores under ``params``; memories created after a query's moment score −inf.
        A question's language moves only its threshold (:meth:`thresholds`), not its scores."""
        now = self.now[:, None]
        lexical = np.array([lexical_relevance(params, raw, float(total), self.max_idf, self.k1)
                            for raw, total in zip(self.lexical_raw, self.idf_sum)]).reshape(self.similarity.shape)
        nb = None
        if self.neighbours is not None and params.neighbour_weight > 0:
            own = np.where(self.created[None, :] <= now,
                           own_relevance(params, self.similarity, lexical, self.dates), 0.0)
            nb = neighbour_best(own, self.neighbours)
        score, _ = blend(params, similarity=self.similarity, lexical=lexical, created=self.created,
                         last_access=self.last_access, importance=self.importance,
                         access_count=self.access_count, use_count=self.use_count, now=now,
                         neighbour_relevance=nb, date_match=self.dates)
        return np.where(self.created[None, :] <= now, score, -np.inf)

    def select(self, params: ScoringParams) -> list[list[int]]:
        """The memory ids recall would return for each query under ``params``, best first."""
        if self.ids.size == 0:
            return [[] for _ in range(len(self.now))]
        score = self.scores(params)
        out = []
        for i, rows in enumerate(top_k_rows(score, self.ids, params.k, self.thresholds(params), self.similarity)):
            rows = [int(r) for r in rows]
            if self.pairs and rows:
                rows, _ = add_kept_pairs(rows, self.ids, self.row_of, score[i], self.pairs)
            out.append([int(self.ids[r]) for r in rows])
        return out
