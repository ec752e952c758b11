"""The Usage page: renders a bank with a recall history and an empty one; its filters change the numbers."""

from __future__ import annotations

import base64
import json
from datetime import date
from pathlib import Path

import numpy as np
import pytest

from streamlit.testing.v1 import AppTest

from memory_core import MemoryBank
from test_metrics import build_history

ROOT = Path(__file__).resolve().parent.parent
APP = str(ROOT / "app.py")


def usage_page(path: Path, monkeypatch) -> AppTest:
    """The Usage page, reached through the app's navigation."""
    monkeypatch.setenv("MEMCTL_BANK", str(path))
    at = AppTest.from_file(APP, default_timeout=60).run()
    at.switch_page("dashboard/usage.py").run()
    assert not at.exception, at.exception
    return at


def tiles(at) -> dict[str, str]:
    return {m.label: m.value for m in at.metric}


def frame(at, column: str):
    """The table that has ``column`` ("recalls": most recalled; "age_days": never recalled), or None."""
    found = [d.value for d in at.dataframe if column in d.value.columns]
    return found[0] if found else None


def test_usage_page_shows_the_history_and_filters_change_the_numbers(tmp_path, embedder, monkeypatch):
    path = tmp_path / "usage.duckdb"
    with MemoryBank.open(path, embedder=embedder) as bank:
        h = build_history(bank)
        seq = bank.stats()["change_seq"]
    at = usage_page(path, monkeypatch)
    t = tiles(at)
    assert t["retrievals"] == "6" and t["retrieval frequency"] == "50%"
    assert t["gate yes-rate"] == "33%" and t["empty results"] == "25%"
    assert at.date_input(key="usage_dates").value == (date(2026, 3, 2), date(2026, 3, 5))
    assert len(at.get("plotly_chart")) == 6  # daily, frequency, empty share, scores, ranks, tiers
    assert any("bank.feedback" in c.value for c in at.caption)
    scores = next(json.loads(c.proto.spec) for c in at.get("plotly_chart") if "usage_scores" in c.proto.id)
    [label] = scores["layout"]["annotations"]  # the threshold's label, above the bars (in the top margin)
    assert label["text"].startswith("threshold 0 (") and label["xanchor"] == "left"
    assert (label["yref"], label["y"], label["yanchor"]) == ("paper", 1, "bottom")
    assert scores["layout"]["margin"]["t"] >= 30
    most = frame(at, "recalls")
    assert most["recalls"].sum() == 5  # every hit of every recall
    never = frame(at, "age_days")
    assert {h["ids"]["c1"], h["ids"]["c2"], h["ids"]["c3"]} <= set(never["memory_id"])
    assert "Plays the cello" in set(never["text"])  # plain text cell

    at.selectbox(key="usage_namespace").select("bob").run()
    assert not at.exception
    t = tiles(at)
    assert t["retrievals"] == "1" and t["retrieval frequency"] == "100%" and t["gate yes-rate"] == "—"
    assert frame(at, "age_days") is None  # both bob memories were recalled

    at.selectbox(key="usage_namespace").select("alice").run()
    at.date_input(key="usage_dates").set_value((date(2026, 3, 3), date(2026, 3, 5))).run()
    assert not at.exception
    t = tiles(at)
    assert t["retrievals"] == "2" and t["retrieval frequency"] == "50%" and t["gate yes-rate"] == "50%"
    assert t["empty results"] == "0%"
    assert frame(at, "recalls")["recalls"].sum() == 1

    at.date_input(key="usage_dates").set_value((date(2026, 4, 1), date(2026, 4, 30))).run()
    assert not at.exception
    assert tiles(at)["retrievals"] == "0"
    assert any("No recalls between 2026-04-01 and 2026-04-30" in i.value for i in at.info)
    with MemoryBank.open(path, embedder=embedder) as bank:
        assert bank.stats()["change_seq"] == seq  # looking changes nothing


def test_usage_page_of_a_bank_without_recalls_says_how_they_get_logged(tmp_path, embedder, monkeypatch):
    path = tmp_path / "empty.duckdb"
    MemoryBank.open(path, embedder=embedder).close()
    at = usage_page(path, monkeypatch)
    text = " ".join(i.value for i in at.info)
    assert "No recalls logged yet" in text and "bank.recall" in text and "memctl demo" in text
    assert len(at.get("plotly_chart")) == 0 and not at.metric


def test_usage_page_with_memories_but_no_recalls(tmp_path, embedder, monkeypatch):
    path = tmp_path / "quiet.duckdb"
    with MemoryBank.open(path, embedder=embedder) as bank:
        bank.add("Prefers vegetarian food", namespace="alice")
    at = usage_page(path, monkeypatch)
    assert "No recalls logged yet" in at.info[0].value


def test_usage_page_shows_usage_rate_and_ablation_figures(tmp_path, embedder, monkeypatch):
    path = tmp_path / "feedback.duckdb"
    with MemoryBank.open(path, embedder=embedder) as bank:
        h = build_history(bank)
        log = {r["query"]: r for r in bank.retrievals(limit=None)}
        bank.feedback(log["vegetarian food for dinner"]["id"], used_ids=[h["ids"]["veg"]], helpful=True)
        bank.feedback(log["night shifts schedule"]["id"], used_ids=[h["ids"]["night"], h["ids"]["coffee"]])
        bank.label("alice", "vegetarian food for dinner", h["ids"]["veg"], relevant=True)
        returned = [x["memory_id"] for x in log["vegetarian food for dinner"]["hits"]][:5]
        case = {"namespace": "alice", "question": "q", "memory_ids": []}
        bank.record_ablation({"started_at": "2026-03-03T12:00:00Z"},
                             [{**case, "verdict": v} for v in ("with", "with", "with", "without", "tie")])
    at = usage_page(path, monkeypatch)
    t = tiles(at)
    assert t["usage rate"] == "75%" and t["helpful"] == "100%"  # 3 of 4 returned memories used
    assert t["net benefit"] == "+0.40" and t["usefulness"] == "60%" and t["disturbance"] == "20%"
    # precision@5 from the bank's own labels: the one labeled recall returned the labeled memory
    assert h["ids"]["veg"] in returned and t["precision@5"] == f"{1 / len(returned):.0%}"
    assert len(at.get("plotly_chart")) == 7  # the usage rate by day joins the six
    assert not any("No feedback recorded yet" in c.value for c in at.caption)

    at.selectbox(key="usage_namespace").select("bob").run()
    t = tiles(at)
    assert t["usage rate"] == "100%" and t["net benefit"] == "—"  # every ablation case was alice's
    assert t["precision@5"] == "—"  # alice's label does not count for bob

    at.date_input(key="usage_dates").set_value((date(2026, 3, 4), date(2026, 3, 5))).run()
    assert not at.exception and tiles(at)["net benefit"] == "—"
    assert any("1 run(s) at other dates" in c.value for c in at.caption)


def _line(at, key: str) -> tuple[list[str], list[float]]:
    """The days and values of a one-line chart of the page."""
    spec = next(json.loads(c.proto.spec) for c in at.get("plotly_chart") if key in c.proto.id)
    [trace] = spec["data"]
    y = trace["y"]
    if isinstance(y, dict):  # plotly's typed-array encoding
        y = np.frombuffer(base64.b64decode(y["bdata"]), dtype=np.dtype(y["dtype"])).tolist()
    return [str(d)[:10] for d in trace["x"]], [float(v) for v in y]


def test_rates_over_time_read_as_a_trend_and_skip_days_without_recalls(tmp_path, embedder, monkeypatch):
    """Six turns: 03-02 one of three returned something, 03-03 two of two, none on 03-04, 03-05 none
    of one. Daily, the line jumps 33 % → 100 % → 0 %; the page opens on a rolling window (the
    30-day one: so few turns fill no 7-day window with ten), reading 3 of 5, then 3 of 6 by 03-05;
    it offers a 7-day window, weekly and daily, and never draws 03-04 as 0 %."""
    path = tmp_path / "trend.duckdb"
    with MemoryBank.open(path, embedder=embedder) as bank:
        build_history(bank)
    at = usage_page(path, monkeypatch)
    assert at.radio(key="usage_view").value == "30-day rolling"
    assert at.radio(key="usage_view").options == ["7-day rolling", "30-day rolling", "weekly", "daily"]
    days, freq = _line(at, "usage_frequency")
    assert days == ["2026-03-02", "2026-03-03", "2026-03-05"] and freq == pytest.approx([1 / 3, 3 / 5, 3 / 6])

    # The bars above the lines follow the view: rolling sums, not the day's own turns.
    bars = next(json.loads(c.proto.spec) for c in at.get("plotly_chart") if "usage_daily" in c.proto.id)
    turns = {}
    for trace in bars["data"]:
        y = trace["y"]
        if isinstance(y, dict):
            y = np.frombuffer(base64.b64decode(y["bdata"]), dtype=np.dtype(y["dtype"])).tolist()
        for d, v in zip(trace["x"], y):
            turns[str(d)[:10]] = turns.get(str(d)[:10], 0) + v
    assert turns["2026-03-03"] == 5 and turns["2026-03-05"] == 6  # 3 + 2, then 3 + 2 + 1

    at.radio(key="usage_view").set_value("7-day rolling").run()
    assert not at.exception
    days, freq = _line(at, "usage_frequency")
    assert days == ["2026-03-02", "2026-03-03", "2026-03-05"]  # 03-04 had no recall: no point
    assert freq == pytest.approx([1 / 3, 3 / 5, 3 / 6])
    assert _line(at, "usage_empty")[1] == pytest.approx([1 / 2, 1 / 4, 1 / 4])

    at.radio(key="usage_view").set_value("weekly").run()
    assert not at.exception
    assert _line(at, "usage_frequency") == (["2026-03-02"], [pytest.approx(0.5)])  # the week of Monday 03-02

    at.radio(key="usage_view").set_value("daily").run()
    days, freq = _line(at, "usage_frequency")
    assert days == ["2026-03-02", "2026-03-03", "2026-03-05"] and freq == pytest.approx([1 / 3, 1.0, 0.0])


def test_a_single_day_draws_days_and_ranks_not_hours_and_fractions(tmp_path, embedder, monkeypatch):
    """One day of recalls: the time axes tick whole days around it (a date axis holding one day
    zooms into hours, ticks like 23:59:59.999), the tiers' one point is drawn (bars: an area
    of one point is nothing), ranks are 1, 2 (not 0.6 … 1.4) and counts tick 0, 1, 2."""
    path = tmp_path / "one-day.duckdb"
    with MemoryBank.open(path, embedder=embedder) as bank:
        build_history(bank)
    at = usage_page(path, monkeypatch)
    at.date_input(key="usage_dates").set_value((date(2026, 3, 3), date(2026, 3, 3))).run()
    assert not at.exception
    charts = {c.proto.id: json.loads(c.proto.spec) for c in at.get("plotly_chart")}
    spec = {key: next(s for i, s in charts.items() if key in i) for key in
            ("usage_daily", "usage_frequency", "usage_ranks", "usage_tiers", "usage_scores")}
    for key in ("usage_daily", "usage_frequency"):
        axis = spec[key]["layout"]["xaxis"]
        assert axis["dtick"] == 86_400_000 and [str(d)[:10] for d in axis["range"]] == ["2026-03-02", "2026-03-04"]
    assert spec["usage_ranks"]["layout"]["xaxis"]["type"] == "category"
    assert [t["type"] for t in spec["usage_tiers"]["data"]] == ["bar"] * 3
    assert {t["width"] for t in spec["usage_tiers"]["data"]} == {0.8 * 7 * 86_400_000}  # not a hairline
    assert spec["usage_tiers"]["layout"]["xaxis"]["dtick"] == 7 * 86_400_000
    for key in ("usage_daily", "usage_ranks", "usage_scores"):
        assert spec[key]["layout"]["yaxis"]["dtick"] == 1
