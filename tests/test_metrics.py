"""Usage metrics (memory_core.evaluation.metrics) on a small real bank whose numbers are counted by hand."""

from __future__ import annotations

from collections import Counter
from datetime import date, datetime, timedelta, timezone

import pandas as pd
import pytest

from memory_core import MemoryBank
from memory_core.evaluation import metrics as mx


def at(day: str, hour: int = 12) -> datetime:
    return datetime.fromisoformat(day).replace(hour=hour, tzinfo=timezone.utc)


def build_history(bank: MemoryBank) -> dict:
    """Memories in alice, bob and carol, and six logged turns over three days (2026-03-02/03/05).

    2026-03-02 alice: returned (k=2 → ranks 1, 2), skipped by the gate, empty (threshold 0.99)
    2026-03-03 alice: gate says yes, returned (k=1); bob: returned (k=5 → both bob memories, ranks 1, 2)
    2026-03-05 alice: skipped by the gate
    carol is never recalled: its memories exist only for the tier trend.
    """
    add = lambda text, ns, day: bank.add(text, namespace=ns, created_at=at(day, 0),  # noqa: E731
                                         detect_conflicts=False)
    ids = {
        "veg": add("Prefers vegetarian food", "alice", "2026-01-01"),
        "berlin": add("Moved to Berlin in August", "alice", "2026-01-01"),
        "marathon": add("Wants to run a marathon next year", "alice", "2026-01-01"),
        "peanuts": add("Allergic to peanuts", "alice", "2026-01-01"),
        "cat": add("Has a cat called Miso", "alice", "2026-02-20"),
        "gone": add("Used to live in Paris", "alice", "2026-01-01"),
        "night": add("Works night shifts", "bob", "2026-01-01"),
        "coffee": add("Drinks coffee black", "bob", "2026-02-20"),
        "c1": add("Plays the cello", "carol", "2026-01-01"),
        "c2": add("Learning Japanese", "carol", "2026-02-20"),
        "c3": add("Lives near the sea", "carol", "2026-03-01"),
    }
    bank.forget(ids["gone"])  # archived and never recalled: not in "never recalled"
    r1 = bank.recall("vegetarian food for dinner", namespace="alice", now=at("2026-03-02", 9), k=2, threshold=0.0)
    r2 = bank.recall("what is the capital of France", namespace="alice", now=at("2026-03-02", 10), gate=True)
    r3 = bank.recall("quantum chromodynamics lecture", namespace="alice", now=at("2026-03-02", 11), threshold=0.99)
    r4 = bank.recall("remember my diet?", namespace="alice", now=at("2026-03-03", 9), gate=True, k=1, threshold=0.0)
    r5 = bank.recall("night shifts schedule", namespace="bob", now=at("2026-03-03", 10), k=5, threshold=0.0)
    r6 = bank.recall("hello there", namespace="alice", now=at("2026-03-05", 8), gate=True)
    assert (len(r1), len(r2), len(r3), len(r4), len(r5), len(r6)) == (2, 0, 0, 1, 2, 0)
    return {"ids": ids, "alice_hits": r1 + r4, "bob_hits": r5, "all_hits": r1 + r4 + r5}


@pytest.fixture(scope="module")
def history(tmp_path_factory, embedder):
    """Built once for the module: the metrics only read (test_metrics_change_nothing checks it)."""
    with MemoryBank.open(tmp_path_factory.mktemp("metrics") / "metrics.duckdb", embedder=embedder) as bank:
        yield bank, build_history(bank)


def test_usage_frame_one_row_per_turn_with_outcomes(history):
    bank, _ = history
    df = mx.usage_frame(bank)
    assert len(df) == 6
    assert list(df["outcome"]) == ["returned", "skipped", "empty", "returned", "returned", "skipped"]
    assert list(df["gated"]) == [False, True, False, True, False, True]
    assert list(df["n_results"]) == [2, 0, 0, 1, 2, 0]
    assert list(df["threshold"])[0] == 0.0 and list(df["threshold"])[2] == 0.99
    assert df["day"].tolist() == [date(2026, 3, 2)] * 3 + [date(2026, 3, 3)] * 2 + [date(2026, 3, 5)]
    assert "what is" in df["gate_reason"].iloc[1] and pd.isna(df["gate_reason"].iloc[0])
    assert mx.span(df) == (date(2026, 3, 2), date(2026, 3, 5))


def test_summary_rates_equal_hand_counts(history):
    bank, _ = history
    s = mx.summary(mx.usage_frame(bank))
    assert (s["retrievals"], s["returned"], s["empty"], s["skipped"], s["searched"], s["gated"]) == (6, 3, 1, 2, 4, 3)
    assert s["retrieval_frequency"] == pytest.approx(3 / 6)
    assert s["gate_yes_rate"] == pytest.approx(1 / 3)
    assert s["empty_rate"] == pytest.approx(1 / 4)
    lat = mx.usage_frame(bank).query("recalled")["latency_ms"]
    assert s["latency_mean_ms"] == pytest.approx(lat.mean())
    assert s["latency_p50_ms"] <= s["latency_p95_ms"]

    alice = mx.summary(mx.usage_frame(bank, namespace="alice"))
    assert (alice["retrievals"], alice["returned"], alice["empty"], alice["skipped"]) == (5, 2, 1, 2)
    bob = mx.summary(mx.usage_frame(bank, namespace="bob"))
    assert bob["retrievals"] == 1 and bob["gate_yes_rate"] is None and bob["empty_rate"] == 0


def test_an_empty_bank_has_no_rates(bank):
    df = mx.usage_frame(bank)
    s = mx.summary(df)
    assert s["retrievals"] == 0 and s["retrieval_frequency"] is None and s["empty_rate"] is None
    assert s["gate_yes_rate"] is None and s["latency_p95_ms"] is None
    assert mx.daily(df).empty and mx.span(df) is None
    hits = mx.hits_frame(bank)
    assert hits.empty and mx.rank_distribution(hits).empty and mx.most_recalled(bank, hits).empty
    assert mx.never_recalled(bank).empty


def test_date_filter_keeps_whole_days(history):
    bank, _ = history
    df = mx.usage_frame(bank, since=date(2026, 3, 3), until=date(2026, 3, 3))
    assert len(df) == 2 and set(df["day"]) == {date(2026, 3, 3)}
    assert len(mx.usage_frame(bank, since=date(2026, 3, 4))) == 1
    assert len(mx.usage_frame(bank, until=date(2026, 3, 2))) == 3


def test_daily_counts_per_day_including_quiet_days(history):
    bank, _ = history
    d = mx.daily(mx.usage_frame(bank)).set_index("day")
    assert list(d.index) == [date(2026, 3, 2), date(2026, 3, 3), date(2026, 3, 4), date(2026, 3, 5)]
    assert d["turns"].tolist() == [3, 2, 0, 1]
    assert d["returned"].tolist() == [1, 2, 0, 0]
    assert d["empty"].tolist() == [1, 0, 0, 0]
    assert d["skipped"].tolist() == [1, 0, 0, 1]
    assert d.loc[date(2026, 3, 2), "retrieval_frequency"] == pytest.approx(1 / 3)
    assert d.loc[date(2026, 3, 2), "empty_share"] == pytest.approx(1 / 2)
    assert d.loc[date(2026, 3, 3), "retrieval_frequency"] == 1.0
    assert d["retrieval_frequency"].isna().tolist() == [False, False, True, False]
    padded = mx.daily(mx.usage_frame(bank), start=date(2026, 3, 1), end=date(2026, 3, 6))
    assert len(padded) == 6 and padded["turns"].sum() == 6


def test_over_time_windows_and_weeks_leave_out_days_without_turns():
    """Each rolling point sums its day and the six before (days between with nothing count as
    zero); weeks start on Monday; a day (week) without turns has no row; the usage rate follows."""
    counts = pd.DataFrame({"day": [date(2026, 3, 1), date(2026, 3, 2), date(2026, 3, 9), date(2026, 3, 9)],
                           "turns": [2, 1, 4, 1], "returned": [1, 1, 0, 1]})
    rolling = mx.over_time(counts, "7-day rolling", by="turns")
    assert rolling["day"].tolist() == [date(2026, 3, 1), date(2026, 3, 2), date(2026, 3, 9)]
    assert rolling["turns"].tolist() == [2, 3, 5] and rolling["returned"].tolist() == [1, 2, 1]  # 03-09: 03-03..09
    weekly = mx.over_time(counts, "weekly", by="turns")
    assert weekly["day"].tolist() == [date(2026, 2, 23), date(2026, 3, 2), date(2026, 3, 9)]  # Mondays
    assert weekly["turns"].tolist() == [2, 1, 5]
    assert mx.over_time(counts, "daily", by="turns")["turns"].tolist() == [2, 1, 5]
    assert mx.over_time(counts.iloc[:0], "weekly", by="turns").empty
    with pytest.raises(ValueError, match="view must be one of"):
        mx.over_time(counts, "monthly", by="turns")

    thirty = mx.over_time(counts, "30-day rolling", by="turns")
    assert thirty["turns"].tolist() == [2, 3, 8]

    fb = pd.DataFrame({"day": [date(2026, 3, 2), date(2026, 3, 2), date(2026, 3, 5)], "used": [True, False, True]})
    usage = mx.usage_over_time(fb, "7-day rolling")
    assert usage["day"].tolist() == [date(2026, 3, 2), date(2026, 3, 5)]
    assert usage["usage_rate"].tolist() == pytest.approx([1 / 2, 2 / 3])


def test_the_readable_view_is_the_shortest_window_that_holds_enough_turns():
    """Ten turns a week fill a 7-day window; one every few days needs thirty; none: the first view."""
    def turns(every: int, n: int) -> pd.DataFrame:
        days = [date(2026, 1, 1) + timedelta(days=every * i) for i in range(n)]
        return pd.DataFrame({"day": days, "outcome": ["returned"] * n})

    busy = pd.concat([turns(1, 60), turns(1, 60)])  # two a day
    assert mx.readable_view(busy) == "7-day rolling"
    assert mx.readable_view(turns(3, 40)) == "30-day rolling"  # ten per 30 days
    assert mx.readable_view(turns(9, 10)) == "30-day rolling"  # too quiet for any: the longest window
    assert mx.readable_view(turns(1, 1).iloc[:0]) == "7-day rolling"


def test_scores_and_ranks_match_the_recalls(history):
    bank, h = history
    hits = mx.hits_frame(bank)
    assert len(hits) == 5
    assert sorted(hits["score"].round(9)) == sorted(round(x.score, 9) for x in h["all_hits"])
    dist = mx.score_distribution(hits)
    assert dist["thresholds"] == {0.0: 5} and dist["below_threshold"] == 0
    assert len(dist["scores"]) == 5 and min(dist["scores"]) >= 0.0
    ranks = mx.rank_distribution(hits)
    assert dict(zip(ranks["rank"], ranks["hits"])) == {1: 3, 2: 2}
    assert mx.rank_distribution(mx.hits_frame(bank, namespace="alice"))["hits"].tolist() == [2, 1]
    assert mx.score_distribution(mx.hits_frame(bank, since=date(2026, 3, 5)))["scores"] == []


def test_most_and_never_recalled(history):
    bank, h = history
    ids = h["ids"]
    counted = Counter(x.memory.id for x in h["alice_hits"])
    top = mx.most_recalled(bank, mx.hits_frame(bank, namespace="alice"), n=10)
    assert dict(zip(top["memory_id"], top["recalls"])) == dict(counted)
    assert top["recalls"].tolist() == sorted(top["recalls"], reverse=True)
    texts = {x.memory.id: x.memory.text for x in h["alice_hits"]}
    assert dict(zip(top["memory_id"], top["text"])) == texts
    assert len(mx.most_recalled(bank, mx.hits_frame(bank), n=1)) == 1

    alice_active = {ids[k] for k in ("veg", "berlin", "marathon", "peanuts", "cat")}
    never = mx.never_recalled(bank, "alice")
    assert set(never["memory_id"]) == alice_active - set(counted)
    assert ids["gone"] not in set(never["memory_id"])
    assert mx.never_recalled(bank, "bob").empty
    assert set(mx.never_recalled(bank, "carol")["memory_id"]) == {ids["c1"], ids["c2"], ids["c3"]}


def test_tiers_over_time(history):
    bank, _ = history

    def tiers(ns, d):
        t = mx.tiers_over_time(bank, ns, [d])
        return dict(zip(t["tier"], t["memories"]))
    # carol: created 01-01, 02-20, 03-01 and never touched since
    assert tiers("carol", date(2025, 12, 31)) == {"hot": 0, "warm": 0, "cold": 0}
    assert tiers("carol", date(2026, 1, 5)) == {"hot": 1, "warm": 0, "cold": 0}
    assert tiers("carol", date(2026, 2, 25)) == {"hot": 1, "warm": 1, "cold": 0}
    assert tiers("carol", date(2026, 4, 5)) == {"hot": 0, "warm": 2, "cold": 1}
    # bob: both recalled on 03-03 → hot three days later, warm a month later
    assert tiers("bob", date(2026, 3, 6)) == {"hot": 2, "warm": 0, "cold": 0}
    assert tiers("bob", date(2026, 4, 10)) == {"hot": 0, "warm": 2, "cold": 0}
    long = mx.tiers_over_time(bank, "carol", mx.weekly_dates(date(2026, 1, 1), date(2026, 1, 20)))
    assert sorted(set(long["date"])) == [date(2026, 1, 1), date(2026, 1, 8), date(2026, 1, 15), date(2026, 1, 20)]
    # one read for a whole trend, and each point is what stats says as of that moment
    dates = mx.weekly_dates(date(2025, 12, 25), date(2026, 4, 12))
    trend = mx.tiers_over_time(bank, None, dates)
    for d in dates:
        point = trend[trend["date"] == d]
        assert dict(zip(point["tier"], point["memories"])) == bank.stats(now=mx.day_bounds(None, d)[1])["by_tier"]


def test_weekly_dates_and_feedback_note(history):
    bank, _ = history
    assert mx.weekly_dates(date(2026, 3, 1), date(2026, 3, 15)) == [date(2026, 3, 1), date(2026, 3, 8),
                                                                   date(2026, 3, 15)]
    assert mx.weekly_dates(date(2026, 3, 2), date(2026, 3, 1)) == []
    assert mx.feedback_metrics(bank) is None
    assert "bank.feedback" in mx.FEEDBACK_NOTE


def test_metrics_change_nothing(history):
    bank, _ = history
    seq = bank.stats()["change_seq"]
    hits = mx.hits_frame(bank)
    mx.summary(mx.usage_frame(bank)), mx.most_recalled(bank, hits), mx.never_recalled(bank)
    mx.tiers_over_time(bank, None, [date(2026, 3, 1)])
    assert bank.stats()["change_seq"] == seq and len(bank.retrievals(limit=None)) == 6


@pytest.mark.slow
def test_precision_uses_the_banks_own_labels(demo_labeled, copy_bank):
    """With no labels given, precision@k comes from the labeled queries stored in the bank, each
    applied to the recall logged at its own moment."""
    path, truth, queries = demo_labeled
    with MemoryBank.open(copy_bank(path)) as bank:  # the model the demo bank records
        replayed = queries[:40]
        for q in replayed:
            bank.recall(q["query"], namespace=q["namespace"], now=q["at"])
        labelled = mx.stored_labels(bank)
        rep = mx.report(bank, k=5)
        by_hand = mx.precision_at_k(bank, labelled, k=5)
    assert rep["precision"] is not None
    assert rep["precision"]["labelled"] == len(replayed)  # every replayed turn found its label
    assert rep["precision"] == by_hand
    assert 0 < rep["precision"]["evaluated"] <= len(replayed)
