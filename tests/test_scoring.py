"""scoring.py: the blended score's parts at known values, presets, validation and top-k selection."""

from __future__ import annotations

import math
from datetime import datetime, timedelta, timezone

import numpy as np
import pytest

from memory_core import ScoringParams
from memory_core.errors import ValidationError
from memory_core.index.scoring import COLD_DAYS, DAY, HOT_DAYS, TIERS, blend, tier_bounds, tier_of, top_k, top_k_rows

NOW = 1_800_000_000.0


def score_one(p: ScoringParams, sim=0.5, lex=0.0, age_days=0.0, last_days=None, importance=0.5, uses=0,
              neighbour=None, date=None):
    score, comps = blend(
        p, similarity=np.array([sim]), lexical=np.array([lex]), created=np.array([NOW - age_days * DAY]),
        last_access=np.array([math.nan if last_days is None else NOW - last_days * DAY]),
        importance=np.array([importance]), access_count=np.array([uses]), now=NOW,
        neighbour_relevance=None if neighbour is None else np.array([neighbour]),
        date_match=None if date is None else np.array([date]))
    return float(score[0]), {k: float(v[0]) for k, v in comps.items()}


def test_exponential_recency_halves_every_half_life():
    p = ScoringParams(half_life_days=30)
    assert score_one(p, age_days=0)[1]["recency"] == pytest.approx(1.0)
    assert score_one(p, age_days=30)[1]["recency"] == pytest.approx(0.5)
    assert score_one(p, age_days=90)[1]["recency"] == pytest.approx(0.125)


def test_linear_recency_with_floor_as_weighted_recall():
    p = ScoringParams.preset("weighted-recall")
    assert score_one(p, age_days=90)[1]["recency"] == pytest.approx(0.5)
    assert score_one(p, age_days=170)[1]["recency"] == pytest.approx(0.3)  # floor
    assert score_one(p, age_days=1000)[1]["recency"] == pytest.approx(0.3)


def test_recency_from_last_access():
    p = ScoringParams(half_life_days=10, recency_from="last_access")
    assert score_one(p, age_days=100, last_days=0)[1]["recency"] == pytest.approx(1.0)
    assert score_one(p, age_days=100, last_days=None)[1]["recency"] == pytest.approx(0.5 ** 10)
    created = ScoringParams(half_life_days=10)
    assert score_one(created, age_days=100, last_days=0)[1]["recency"] == pytest.approx(0.5 ** 10)


def test_access_after_now_is_ignored_in_as_of_views():
    p = ScoringParams(half_life_days=10, recency_from="last_access")
    assert score_one(p, age_days=10, last_days=-5)[1]["recency"] == pytest.approx(0.5)


def test_frequency_grows_with_use_and_caps_at_one():
    p = ScoringParams.preset("weighted-recall")
    assert score_one(p, uses=0)[1]["frequency"] == pytest.approx(0.5)
    assert score_one(p, uses=3)[1]["frequency"] == pytest.approx(0.8)
    assert score_one(p, uses=50)[1]["frequency"] == pytest.approx(1.0)


def test_relevance_blends_stretched_cosine_and_lexical():
    p = ScoringParams(similarity_floor=0.2, similarity_ceiling=0.7, lexical_weight=0.25)
    _, c = score_one(p, sim=0.45, lex=0.8)
    assert c["relevance"] == pytest.approx(0.75 * 0.5 + 0.25 * 0.8)
    assert score_one(p, sim=0.1)[1]["relevance"] == 0.0  # below the floor: no dense relevance
    assert score_one(p, sim=0.95)[1]["relevance"] == pytest.approx(0.75)  # clipped at the ceiling


def test_score_is_weighted_mean_so_threshold_keeps_meaning():
    p = ScoringParams(alpha=2, beta=1, gamma=1, delta=0, lexical_weight=0, similarity_floor=0, similarity_ceiling=1)
    s, c = score_one(p, sim=0.6, age_days=0, importance=0.2)
    assert s == pytest.approx((2 * 0.6 + 1 * 1.0 + 1 * 0.2) / 4)
    doubled = p.replace(alpha=4, beta=2, gamma=2)
    assert score_one(doubled, sim=0.6, importance=0.2)[0] == pytest.approx(s)


@pytest.mark.parametrize("days,tier", [(0, "hot"), (6.9, "hot"), (7, "warm"), (90, "warm"), (90.1, "cold")])
def test_tiers(days, tier):
    assert tier_of(days) == tier
    p = ScoringParams(tier_hot=1.0, tier_warm=0.8, tier_cold=0.5)
    assert score_one(p, age_days=days)[1]["tier"] == {"hot": 1.0, "warm": 0.8, "cold": 0.5}[tier]


@pytest.mark.parametrize("age", [timedelta(days=HOT_DAYS), timedelta(days=COLD_DAYS), timedelta(0),
                                 timedelta(days=-3), timedelta(days=4000)])
@pytest.mark.parametrize("nudge_us", [-1, 0, 1])
def test_tier_bounds_say_what_tier_of_says(age, nudge_us):
    """The bank filters tiers by time with tier_bounds; a memory must land in the tier tier_of gives
    it, also a microsecond either side of the 7- and 90-day edges."""
    now = datetime(2025, 6, 1, 12, tzinfo=timezone.utc)
    touched = now - age + timedelta(microseconds=nudge_us)

    def holds(tier: str) -> bool:
        after, before = tier_bounds(tier, now)
        return (after is None or touched >= after) and (before is None or touched <= before)

    assert [t for t in TIERS if holds(t)] == [tier_of((now - touched).total_seconds() / DAY)]


def test_tier_bounds_refuse_an_unknown_tier():
    with pytest.raises(ValidationError, match="hot, warm, cold"):
        tier_bounds("lukewarm", datetime(2025, 1, 1, tzinfo=timezone.utc))


def test_recent_use_keeps_a_memory_hot():
    p = ScoringParams(tier_hot=1.0, tier_cold=0.5)
    assert score_one(p, age_days=300, last_days=1)[1]["tier"] == 1.0


def test_top_k_threshold_and_ties_by_id():
    score = np.array([0.5, 0.9, 0.5, 0.1, 0.5])
    ids = np.array([50, 10, 20, 40, 30])
    assert list(ids[top_k(score, ids, 3, 0.0)]) == [10, 20, 30]
    assert list(ids[top_k(score, ids, 10, 0.5)]) == [10, 20, 30, 50]
    assert len(top_k(score, ids, 3, 0.95)) == 0


def test_equal_scores_go_to_the_closer_meaning_before_the_smaller_id():
    """Relevance clipped at the floor reads 0 for every unrelated-looking memory: among equal
    scores the higher cosine ranks first, and only equal cosines fall back to the id."""
    score = np.array([0.5, 0.9, 0.5, 0.1, 0.5])
    ids = np.array([50, 10, 20, 40, 30])
    sim = np.array([0.12, 0.8, 0.05, 0.3, 0.12])
    assert list(ids[top_k(score, ids, 3, 0.0, sim)]) == [10, 30, 50]
    asked = []
    got = top_k(score, ids, 2, 0.0, lambda pos: asked.append(len(pos)) or sim[pos])
    assert list(ids[got]) == [10, 30] and asked == [4]  # only the best and those tied with the k-th
    rows = top_k_rows(np.vstack([score, score]), ids, 3, np.array([0.0, 0.6]), np.vstack([sim, -sim]))
    assert [list(ids[r]) for r in rows] == [[10, 30, 50], [10]]


def test_prior_bound_is_what_priors_alone_can_reach():
    p = ScoringParams(min_relevance=0.0)
    s, _ = score_one(p, sim=-1.0, lex=0.0, age_days=0, importance=1.0, uses=100)
    assert s == pytest.approx(p.prior_bound())


def test_a_memory_with_no_relevance_of_its_own_is_never_carried_by_priors_or_neighbours():
    p = ScoringParams()
    # Brand new, important, much used, and next to a perfect match: still nothing to do with the question.
    s, comps = score_one(p, sim=0.05, lex=0.0, age_days=0, importance=1.0, uses=100, neighbour=1.0, date=1.0)
    assert comps["neighbours"] == 0.0 and comps["dates"] == 0.0
    assert s <= p.prior_bound() < p.threshold  # the default threshold is out of the priors' reach
    assert len(top_k(np.array([s]), np.array([1]), 5, p.threshold)) == 0
    # A little relevance of its own, and the same neighbour lifts it.
    s2, comps2 = score_one(p, sim=0.5, lex=0.0, neighbour=1.0)
    assert s2 > s and comps2["neighbours"] > 0
    # Without the rule the neighbour lifts it (the published presets keep their own formulas).
    assert score_one(p.replace(min_relevance=0.0), sim=0.16, neighbour=1.0)[1]["neighbours"] > 0
    assert ScoringParams.preset("generative-agents").min_relevance == 0.0


def test_params_round_trip_and_copy():
    p = ScoringParams.preset("generative-agents")
    assert ScoringParams.from_dict(p.to_dict()) == p
    q = p.replace(k=7)
    assert q.k == 7 and p.k == 3
    with pytest.raises(Exception, match="unknown scoring parameter"):
        p.replace(gamma_ray=1)
    with pytest.raises(Exception, match="unknown built-in preset"):
        ScoringParams.preset("fast")


def test_parts_add_up_to_the_score():
    p = ScoringParams(alpha=0.5, beta=0.3, gamma=0.15, delta=0.05, tier_warm=0.8)
    s, c = score_one(p, sim=0.6, lex=0.4, age_days=30, importance=0.7, uses=2, neighbour=0.9, date=0.5)
    from memory_core.index.scoring import parts
    shares = parts(p, {k: float(v) for k, v in c.items()})
    assert set(shares) == {"relevance", "dates", "neighbours", "recency", "importance", "frequency"}
    assert shares["dates"] > 0
    assert shares["neighbours"] > 0
    assert sum(shares.values()) == pytest.approx(s)


def test_a_neighbour_lifts_relevance_part_of_the_way_and_never_lowers_it():
    """A memory borrows neighbour_weight of the gap up to its best neighbour's relevance; a less
    relevant neighbour takes nothing away, and without neighbour_weight nothing changes."""
    p = ScoringParams(neighbour_weight=0.5)
    _, alone = score_one(p, sim=0.45, lex=0.2)
    _, lifted = score_one(p, sim=0.45, lex=0.2, neighbour=0.9)
    _, lower = score_one(p, sim=0.45, lex=0.2, neighbour=0.1)
    own = alone["relevance"]
    assert lifted["neighbours"] == pytest.approx(0.5 * (0.9 - own))
    assert lifted["relevance"] == pytest.approx(own + 0.5 * (0.9 - own))
    assert lower["relevance"] == pytest.approx(own) and lower["neighbours"] == 0
    _, off = score_one(p.replace(neighbour_weight=0.0), sim=0.45, lex=0.2, neighbour=0.9)
    assert off["relevance"] == pytest.approx(own)


# -- lexical relevance: how a query's BM25 becomes a [0, 1] component --------------------------------


def test_lexical_relevance_one_common_word_cannot_reach_full_match():
    """A query of one word ("do you dream?") matches many chatty memories fully; with
    lexical_min_terms it is weighed as if it carried that many rare words, so it stays partial,
    while a query with enough distinct words still reaches 1."""
    from memory_core.index import LexicalIndex
    from memory_core.index.scoring import lexical_relevance

    lex = LexicalIndex()
    for d in (["dream", "big", "plan"], ["dream", "job", "offer"], ["paint", "sunset", "lake"], ["run", "charity", "race"]):
        lex.append(d)
    p_off, p_on = ScoringParams(lexical_min_terms=0), ScoringParams(lexical_min_terms=2)
    raw, idf_sum, rarest = lex.match(["dream"])
    assert lexical_relevance(p_off, raw, idf_sum, rarest, lex.k1).max() == pytest.approx(1.0)
    assert lexical_relevance(p_on, raw, idf_sum, rarest, lex.k1).max() < 0.5
    raw, idf_sum, rarest = lex.match(["paint", "sunset", "lake"])
    full = lexical_relevance(p_on, raw, idf_sum, rarest, lex.k1)
    assert full[2] == pytest.approx(1.0) and full[[0, 1, 3]].tolist() == [0.0, 0.0, 0.0]
    # Off, the normalization is the index's own absolute one.
    raw, idf_sum, rarest = lex.match(["dream", "sunset"])
    assert np.allclose(lexical_relevance(p_off, raw, idf_sum, rarest, lex.k1), lex.scores(["dream", "sunset"]))
    assert lexical_relevance(p_on, *lex.match([])[0:3], lex.k1).tolist() == [0.0] * 4


def test_lexical_min_terms_is_validated():
    with pytest.raises(ValidationError):
        ScoringParams(lexical_min_terms=-1)
    with pytest.raises(ValidationError):
        ScoringParams(lexical_min_terms=math.nan)


def test_a_date_match_lifts_relevance_part_of_the_way_to_one_before_neighbours():
    """A memory from a period the query names takes date_weight × match of the gap up to full
    relevance; its neighbours then lift from there. No match, no weight: nothing changes."""
    p = ScoringParams(date_weight=0.3, neighbour_weight=0.0)
    _, plain = score_one(p, sim=0.45, lex=0.2)
    own = plain["relevance"]
    _, dated = score_one(p, sim=0.45, lex=0.2, date=0.5)
    assert dated["dates"] == pytest.approx(0.3 * 0.5 * (1 - own))
    assert dated["relevance"] == pytest.approx(own + dated["dates"])
    assert score_one(p.replace(date_weight=0.0), sim=0.45, lex=0.2, date=1.0)[1]["dates"] == 0
    assert score_one(p, sim=0.45, lex=0.2, date=0.0)[1]["dates"] == 0
    # With neighbours: the lift is measured from the dated relevance.
    q = p.replace(neighbour_weight=0.5)
    _, both = score_one(q, sim=0.45, lex=0.2, date=0.5, neighbour=0.9)
    assert both["neighbours"] == pytest.approx(0.5 * (0.9 - (own + both["dates"])))


def test_presets_of_other_systems_take_no_date_lift():
    assert ScoringParams.preset("generative-agents").date_weight == 0
    assert ScoringParams.preset("weighted-recall").date_weight == 0
    with pytest.raises(ValidationError):
        ScoringParams(date_weight=1.5)
