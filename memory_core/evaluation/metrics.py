"""Usage metrics over a bank's retrieval log: what the Usage page of the dashboard shows.

Pure functions over the bank's public API (:meth:`MemoryBank.retrievals`, :meth:`MemoryBank.memories`,
:meth:`MemoryBank.get_many`, :meth:`MemoryBank.stats`); they read, never write, and return pandas
DataFrames or plain dicts so a page only renders them.

Vocabulary. A *turn* is one logged recall (one row of ``bank.retrievals()``). Its *outcome* is

* ``skipped`` — the recall gate said no (``recalled`` is false), nothing was searched;
* ``empty`` — the bank was searched and nothing reached the threshold;
* ``returned`` — the bank was searched and at least one memory came back.

Rates over time are drawn per day only on request: on a quiet bank a day holds a recall or two,
so its rate is 0 or 100 percent. ``over_time`` groups the daily counts into a 7- or 30-day rolling
window or weeks, and leaves out the days (weeks) without turns: they have no rate, which is not a
rate of 0 percent. The Usage page opens on ``readable_view``: the shortest window whose typical point
holds ten turns.

Usage rate (did the answer use what was recalled?) comes from agent feedback
(:meth:`MemoryBank.feedback`); precision@k from relevance labels passed in as a mapping;
usefulness, disturbance and net benefit from ablation runs (:mod:`memory_core.evaluation.evaluate`).

Confidence intervals are 95-percent. Rates (usage, usefulness, disturbance, ties) use the Wilson
score interval. Net benefit, (better − worse) / n over the same judged cases, is a difference of
two proportions from one multinomial sample; its interval is the Agresti–Min adjusted Wald
interval (half a case added to each of the four cells of the paired table, i.e. +0.5 better,
+0.5 worse, n + 2), which keeps a sensible width when every case tied or all went one way.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import date, datetime, time, timedelta, timezone
from typing import TYPE_CHECKING, Any

import math

import pandas as pd

from ..models import parse_time

if TYPE_CHECKING:  # only read through its public API; the façade sits above this module
    from ..bank import MemoryBank

__all__ = [
    "OUTCOMES", "FEEDBACK_NOTE", "ABLATION_NOTE", "day_bounds", "usage_frame", "summary", "daily", "hits_frame",
    "score_distribution", "rank_distribution", "most_recalled", "never_recalled", "weekly_dates",
    "tiers_over_time", "feedback_metrics", "span", "wilson_interval", "net_benefit_interval",
    "feedback_frame", "daily_usage", "stored_labels", "precision_at_k", "ablation_rates", "ablation_metrics",
    "report", "VIEWS", "READABLE_TURNS", "readable_view", "over_time", "retrievals_over_time", "usage_over_time",
]

OUTCOMES: tuple[str, ...] = ("returned", "empty", "skipped")
FEEDBACK_NOTE = ("No feedback recorded yet — after answering, an agent reports it with "
                 "`bank.feedback(bank.last_retrieval_id, answer=...)`; the usage rate appears here once "
                 "feedback exists.")
ABLATION_NOTE = ("No ablation runs yet — run `memctl ablate CASES.jsonl` or use the Evaluate page to measure "
                 "usefulness, disturbance and net benefit.")
Z95 = 1.959963984540054

_USAGE_COLUMNS = ["id", "recalled_at", "day", "namespace", "query", "preset", "threshold", "k", "gated",
                  "gate_reason", "recalled", "latency_ms", "n_results", "top_score", "outcome"]
_HIT_COLUMNS = ["retrieval_id", "recalled_at", "day", "namespace", "query", "rank", "memory_id", "score",
                "threshold", "margin", "similarity", "lexical", "recency", "importance", "frequency"]


def day_bounds(start: date | None, end: date | None) -> tuple[datetime | None, datetime | None]:
    """UTC datetimes covering whole days ``start`` … ``end`` inclusive (None stays open-ended)."""
    since = None if start is None else datetime.combine(start, time.min, tzinfo=timezone.utc)
    until = None if end is None else datetime.combine(end, time.max, tzinfo=timezone.utc)
    return since, until


def _retrievals(bank: MemoryBank, namespace: str | None, since: Any, until: Any) -> list[dict[str, Any]]:
    if isinstance(since, date) and not isinstance(since, datetime):
        since = day_bounds(since, None)[0]
    if isinstance(until, date) and not isinstance(until, datetime):
        until = day_bounds(None, until)[1]
    rows = bank.retrievals(namespace, limit=None, since=since, until=until)
    return sorted(rows, key=lambda r: (r["recalled_at"], r["id"]))


def usage_frame(bank: MemoryBank, namespace: str | None = None, since: Any = None,
                until: Any = None) -> pd.DataFrame:
    """One row per logged recall, oldest first.

    ``since``/``until`` are datetimes (or ISO strings), or dates meaning whole UTC days inclusive.
    Columns: id, recalled_at (UTC), day (date), namespace, query, preset, threshold, k, gated (the turn
    asked the gate), gate_reason, recalled (the gate let it search), latency_ms, n_results, top_score
    (best hit score or NaN) and outcome (returned / empty / skipped).
    """
    records = []
    for r in _retrievals(bank, namespace, since, until):
        params = r.get("params") or {}
        gate = r.get("gate")
        recalled = bool(r["recalled"])
        n = int(r["n_results"])
        records.append({
            "id": int(r["id"]),
            "recalled_at": r["recalled_at"],
            "day": r["recalled_at"].astimezone(timezone.utc).date(),
            "namespace": r["namespace"],
            "query": r["query"],
            "preset": r.get("preset"),
            "threshold": params.get("threshold"),
            "k": params.get("k"),
            "gated": gate is not None,
            "gate_reason": None if gate is None else gate.get("reason"),
            "recalled": recalled,
            "latency_ms": float(r["latency_ms"]) if r.get("latency_ms") is not None else float("nan"),
            "n_results": n,
            "top_score": max((h["score"] for h in r["hits"]), default=float("nan")),
            "outcome": "skipped" if not recalled else ("empty" if n == 0 else "returned"),
        })
    return pd.DataFrame.from_records(records, columns=_USAGE_COLUMNS)


def _rate(num: int, den: int) -> float | None:
    return None if den == 0 else num / den


def summary(df: pd.DataFrame) -> dict[str, Any]:
    """Headline numbers of a :func:`usage_frame`.

    * ``retrievals``: logged turns; ``searched`` / ``returned`` / ``empty`` / ``skipped``: turns by outcome;
    * ``retrieval_frequency``: share of logged turns where retrieval ran and returned something;
    * ``gate_yes_rate``: share of gated turns the gate let through (None when no turn asked the gate);
    * ``empty_rate``: share of searches that returned nothing;
    * ``latency_mean_ms`` / ``latency_p50_ms`` / ``latency_p95_ms``: over the turns that searched.

    Rates are fractions in [0, 1], or None when their denominator is zero.
    """
    total = len(df)
    counts = df["outcome"].value_counts() if total else pd.Series(dtype=int)
    returned, empty, skipped = (int(counts.get(o, 0)) for o in OUTCOMES)
    gated = df[df["gated"]] if total else df
    searched_lat = df.loc[df["recalled"], "latency_ms"].dropna() if total else pd.Series(dtype=float)
    lat = (None, None, None) if searched_lat.empty else (
        float(searched_lat.mean()), float(searched_lat.quantile(0.5)), float(searched_lat.quantile(0.95)))
    return {
        "retrievals": total,
        "searched": returned + empty,
        "returned": returned,
        "empty": empty,
        "skipped": skipped,
        "gated": len(gated),
        "retrieval_frequency": _rate(returned, total),
        "gate_yes_rate": _rate(int(gated["recalled"].sum()) if len(gated) else 0, len(gated)),
        "empty_rate": _rate(empty, returned + empty),
        "latency_mean_ms": lat[0],
        "latency_p50_ms": lat[1],
        "latency_p95_ms": lat[2],
    }


def daily(df: pd.DataFrame, start: date | None = None, end: date | None = None) -> pd.DataFrame:
    """Turns per UTC day, one row per day from ``start`` (default: first recall) to ``end`` (default: last).

    Columns: day, returned, empty, skipped, turns, retrieval_frequency (returned / turns) and
    empty_share (empty / searched); days without turns are zeros and NaN rates.
    """
    cols = ["day", *OUTCOMES, "turns", "retrieval_frequency", "empty_share"]
    if df.empty and (start is None or end is None):
        return pd.DataFrame(columns=cols)
    first = start if start is not None else min(df["day"])
    last = end if end is not None else max(df["day"])
    days = [first + timedelta(days=i) for i in range((last - first).days + 1)]
    table = pd.crosstab(df["day"], df["outcome"]) if not df.empty else pd.DataFrame()
    table = table.reindex(index=days, columns=list(OUTCOMES), fill_value=0)
    out = table.rename_axis(index="day", columns=None).reset_index()
    out[list(OUTCOMES)] = out[list(OUTCOMES)].astype(int)
    out["turns"] = out[list(OUTCOMES)].sum(axis=1)
    searched = out["returned"] + out["empty"]
    out["retrieval_frequency"] = (out["returned"] / out["turns"]).where(out["turns"] > 0)
    out["empty_share"] = (out["empty"] / searched).where(searched > 0)
    return out[cols]


# How a chart of daily rates reads the days: on a quiet bank a day holds one or two recalls, so its
# rate is all or nothing and a daily line jumps between them; a window's rate reads as a trend.
ROLLING: dict[str, int] = {"7-day rolling": 7, "30-day rolling": 30}
VIEWS: tuple[str, ...] = (*ROLLING, "weekly", "daily")
READABLE_TURNS = 10  # a rate over fewer turns moves a tenth or more with each one


def readable_view(df: pd.DataFrame) -> str:
    """The shortest rolling window of :data:`VIEWS` whose typical point (the median over the days
    with turns) holds at least ``READABLE_TURNS`` turns of a :func:`usage_frame`; else the longest."""
    if df.empty:
        return VIEWS[0]
    for view in ROLLING:
        if over_time(daily(df)[["day", "turns"]], view, by="turns")["turns"].median() >= READABLE_TURNS:
            return view
    return list(ROLLING)[-1]


def over_time(counts: pd.DataFrame, view: str, by: str) -> pd.DataFrame:
    """Counts per day (a ``day`` column and count columns; days may be missing) grouped for a chart.

    ``view`` is one of :data:`VIEWS`: ``daily`` as they are; ``weekly`` summed per week (``day``
    is its Monday); ``N-day rolling`` each day's counts summed with the N - 1 days before it. Only
    days (weeks) whose own ``by`` count is positive are kept: a day without recalls has no rate
    (drawn as nothing, not as zero).
    """
    if view not in VIEWS:
        raise ValueError(f"view must be one of {', '.join(VIEWS)}, not {view!r}")
    if counts.empty:
        return counts.copy()
    c = counts.groupby("day").sum(numeric_only=True).sort_index()
    if view == "weekly":
        c = c.groupby([d - timedelta(days=d.weekday()) for d in c.index]).sum()
    elif view != "daily":
        first, last = c.index[0], c.index[-1]
        days = [first + timedelta(days=i) for i in range((last - first).days + 1)]
        window = c.reindex(days, fill_value=0).rolling(ROLLING[view], min_periods=1).sum().astype(int)
        c = window.loc[c.index[c[by] > 0]]
    return c.loc[c[by] > 0].rename_axis("day").reset_index()


def retrievals_over_time(df: pd.DataFrame, view: str) -> pd.DataFrame:
    """:func:`daily` grouped by :func:`over_time`: turns by outcome, retrieval_frequency and empty_share
    per day (week, window) that had turns; empty_share is NaN where nothing was searched."""
    cols = ["day", *OUTCOMES, "turns", "retrieval_frequency", "empty_share"]
    if df.empty:
        return pd.DataFrame(columns=cols)
    out = over_time(daily(df)[["day", *OUTCOMES, "turns"]], view, by="turns")
    searched = out["returned"] + out["empty"]
    out["retrieval_frequency"] = out["returned"] / out["turns"]
    out["empty_share"] = (out["empty"] / searched).where(searched > 0)
    return out[cols]


def usage_over_time(fb: pd.DataFrame, view: str) -> pd.DataFrame:
    """:func:`daily_usage` grouped by :func:`over_time`. Columns: day, judged, used, usage_rate."""
    per_day = daily_usage(fb)
    if per_day.empty:
        return per_day
    out = over_time(per_day[["day", "judged", "used"]], view, by="judged")
    out["usage_rate"] = out["used"] / out["judged"]
    return out


def hits_frame(bank: MemoryBank, namespace: str | None = None, since: Any = None,
               until: Any = None) -> pd.DataFrame:
    """One row per returned memory of every logged recall: its rank, score, components and the
    threshold that recall used (``margin`` = score − threshold). Same filters as :func:`usage_frame`."""
    records = []
    for r in _retrievals(bank, namespace, since, until):
        threshold = (r.get("params") or {}).get("threshold")
        for h in r["hits"]:
            score = float(h["score"])
            records.append({
                "retrieval_id": int(r["id"]), "recalled_at": r["recalled_at"],
                "day": r["recalled_at"].astimezone(timezone.utc).date(), "namespace": r["namespace"],
                "query": r["query"], "rank": int(h["rank"]), "memory_id": int(h["memory_id"]), "score": score,
                "threshold": threshold, "margin": None if threshold is None else score - float(threshold),
                **{c: h.get(c) for c in ("similarity", "lexical", "recency", "importance", "frequency")},
            })
    return pd.DataFrame.from_records(records, columns=_HIT_COLUMNS)


def score_distribution(hits: pd.DataFrame) -> dict[str, Any]:
    """Hit scores against the thresholds their recalls used.

    Returns ``scores`` (list of floats), ``thresholds`` (threshold → number of hits scored under it,
    most used first) and ``below_threshold`` (hits that came back below their threshold: the partner
    of an acknowledged conflict pair does).
    """
    if hits.empty:
        return {"scores": [], "thresholds": {}, "below_threshold": 0}
    th = hits["threshold"].dropna().astype(float).value_counts()
    return {
        "scores": [float(s) for s in hits["score"]],
        "thresholds": {float(t): int(n) for t, n in th.items()},
        "below_threshold": int((hits["margin"].dropna() < 0).sum()),
    }


def rank_distribution(hits: pd.DataFrame) -> pd.DataFrame:
    """How many hits came back at each rank (1 = best). Columns: rank, hits."""
    if hits.empty:
        return pd.DataFrame({"rank": pd.Series(dtype=int), "hits": pd.Series(dtype=int)})
    counts = hits["rank"].value_counts().sort_index()
    return pd.DataFrame({"rank": counts.index.astype(int), "hits": counts.values.astype(int)})


def most_recalled(bank: MemoryBank, hits: pd.DataFrame, n: int = 10) -> pd.DataFrame:
    """The ``n`` memories returned most often in ``hits`` (a :func:`hits_frame`), most first.

    Columns: memory_id, text, namespace, status, recalls (in the window), used (how many of those
    recalls' answers used it, from feedback), mean_rank, last_recalled, access_count (all time).
    Ties break by the smaller id.
    """
    cols = ["memory_id", "text", "namespace", "status", "recalls", "used", "mean_rank", "last_recalled",
            "access_count"]
    if hits.empty:
        return pd.DataFrame(columns=cols)
    g = hits.groupby("memory_id").agg(recalls=("rank", "size"), mean_rank=("rank", "mean"),
                                      last_recalled=("recalled_at", "max")).reset_index()
    g = g.sort_values(["recalls", "memory_id"], ascending=[False, True]).head(int(n))
    in_window = set(int(r) for r in hits["retrieval_id"])
    used: dict[int, int] = {}
    for f in bank.feedback_log(since=hits["recalled_at"].min(), until=hits["recalled_at"].max()):
        if f.retrieval_id in in_window:
            for mid in f.used_ids:
                used[mid] = used.get(mid, 0) + 1
    g["used"] = [used.get(int(i), 0) for i in g["memory_id"]]
    found = bank.get_many(int(i) for i in g["memory_id"])
    g["text"] = [found[i].text if i in found else "(deleted)" for i in g["memory_id"]]
    g["namespace"] = [found[i].namespace if i in found else None for i in g["memory_id"]]
    g["status"] = [found[i].status if i in found else "deleted" for i in g["memory_id"]]
    g["access_count"] = [found[i].access_count if i in found else None for i in g["memory_id"]]
    return g[cols].reset_index(drop=True)


def never_recalled(bank: MemoryBank, namespace: str | None = None) -> pd.DataFrame:
    """Active memories no real recall ever returned (access_count 0), oldest first.

    Columns: memory_id, text, namespace, category, importance, created_at, age_days.
    """
    now = datetime.now(timezone.utc)
    rows = [{"memory_id": m.id, "text": m.text, "namespace": m.namespace, "category": m.category,
             "importance": m.importance, "created_at": m.created_at,
             "age_days": round((now - m.created_at).total_seconds() / 86400.0, 1)}
            for m in bank.memories(namespace, status="active", limit=None) if m.access_count == 0]
    df = pd.DataFrame.from_records(rows, columns=["memory_id", "text", "namespace", "category", "importance",
                                                  "created_at", "age_days"])
    return df.sort_values(["created_at", "memory_id"]).reset_index(drop=True)


def weekly_dates(start: date, end: date) -> list[date]:
    """Points for a trend: every 7 days from ``start``, always ending with ``end``."""
    if end < start:
        return []
    out = [start + timedelta(days=7 * i) for i in range((end - start).days // 7 + 1)]
    if out[-1] != end:
        out.append(end)
    return out


def tiers_over_time(bank: MemoryBank, namespace: str | None, dates: Iterable[date]) -> pd.DataFrame:
    """Live memories by tier as of the end of each date (UTC): ``bank.tiers_over_time``, one read for all.

    Long format: date, tier (hot / warm / cold), memories. A memory counts from its creation;
    status and last access are today's (the bank keeps no history of them), so a memory recalled
    after a date counts as hot on it, and one archived since does not count at all.
    """
    dates = list(dates)
    rows = []
    for d, tiers in zip(dates, bank.tiers_over_time(namespace, [day_bounds(None, d)[1] for d in dates])):
        rows.extend({"date": d, "tier": t, "memories": int(tiers.get(t, 0))} for t in ("hot", "warm", "cold"))
    return pd.DataFrame.from_records(rows, columns=["date", "tier", "memories"])


def wilson_interval(successes: int, n: int, z: float = Z95) -> tuple[float, float] | None:
    """The Wilson score interval of a proportion ``successes / n`` (95 % by default); None when n = 0."""
    if n <= 0:
        return None
    p = successes / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z / (1 + z * z / n) * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return max(0.0, centre - half), min(1.0, centre + half)


def net_benefit_interval(better: int, worse: int, n: int, z: float = Z95) -> tuple[float, float] | None:
    """95 % interval of (better − worse) / n: the Agresti–Min adjusted Wald interval for a difference
    of paired proportions (+0.5 to better and worse, n + 2), clipped to [−1, 1]; None when n = 0."""
    if n <= 0:
        return None
    b, w, m = better + 0.5, worse + 0.5, n + 2.0
    d = (b - w) / m
    var = max(0.0, ((b + w) / m - d * d) / m)
    half = z * math.sqrt(var)
    return max(-1.0, d - half), min(1.0, d + half)


def feedback_frame(bank: MemoryBank, namespace: str | None = None, since: Any = None,
                   until: Any = None) -> pd.DataFrame:
    """One row per returned memory of every recall with feedback (same filters as :func:`usage_frame`).

    Columns: retrieval_id, day (of the recall), namespace, memory_id, used, decided_by
    (given / citation / similarity), similarity, helpful.
    """
    since, until = _bounds(since, until)
    days = {r["id"]: r["recalled_at"].astimezone(timezone.utc).date()
            for r in bank.retrievals(namespace, limit=None, since=since, until=until)}
    rows = [{"retrieval_id": f.retrieval_id, "day": days.get(f.retrieval_id), "namespace": f.namespace,
             "memory_id": h.memory_id, "used": h.used, "decided_by": h.decided_by, "similarity": h.similarity,
             "helpful": f.helpful}
            for f in bank.feedback_log(namespace, since=since, until=until) for h in f.hits]
    return pd.DataFrame.from_records(rows, columns=["retrieval_id", "day", "namespace", "memory_id", "used",
                                                    "decided_by", "similarity", "helpful"])


def _bounds(since: Any, until: Any) -> tuple[Any, Any]:
    if isinstance(since, date) and not isinstance(since, datetime):
        since = day_bounds(since, None)[0]
    if isinstance(until, date) and not isinstance(until, datetime):
        until = day_bounds(None, until)[1]
    return since, until


def feedback_metrics(bank: MemoryBank, namespace: str | None = None, since: Any = None,
                     until: Any = None) -> dict[str, Any] | None:
    """Usage rate from agent feedback, or None while no recall in the window has feedback.

    * ``with_feedback``: recalls with feedback; ``judged`` / ``used``: returned memories whose use
      was decided, and those the answer used; ``usage_rate`` = used / judged with ``usage_rate_ci``;
    * ``by_path``: judged memories per deciding path (given / citation / similarity);
    * ``helpful`` / ``helpful_rate`` (+ ``helpful_rate_ci``): over feedback that said either way.
    """
    since, until = _bounds(since, until)
    log = bank.feedback_log(namespace, since=since, until=until)
    if not log:
        return None
    hits = [h for f in log for h in f.hits]
    used = sum(h.used for h in hits)
    rated = [f.helpful for f in log if f.helpful is not None]
    by_path: dict[str, int] = {}
    for h in hits:
        by_path[h.decided_by] = by_path.get(h.decided_by, 0) + 1
    return {
        "with_feedback": len(log), "judged": len(hits), "used": int(used),
        "usage_rate": _rate(int(used), len(hits)), "usage_rate_ci": wilson_interval(int(used), len(hits)),
        "by_path": by_path, "rated": len(rated), "helpful": int(sum(rated)),
        "helpful_rate": _rate(int(sum(rated)), len(rated)), "helpful_rate_ci": wilson_interval(int(sum(rated)), len(rated)),
    }


def daily_usage(fb: pd.DataFrame) -> pd.DataFrame:
    """Usage rate per day of a :func:`feedback_frame`. Columns: day, judged, used, usage_rate."""
    if fb.empty:
        return pd.DataFrame(columns=["day", "judged", "used", "usage_rate"])
    g = fb.groupby("day").agg(judged=("used", "size"), used=("used", "sum")).reset_index()
    g["used"] = g["used"].astype(int)
    g["usage_rate"] = g["used"] / g["judged"]
    return g


def _label_key(labels: Mapping[Any, Any], retrieval: dict[str, Any]) -> Any:
    for key in (retrieval["id"], (retrieval["namespace"], retrieval["query"]), retrieval["query"]):
        if key in labels:
            return key
    return None


def stored_labels(bank: MemoryBank, namespace: str | None = None, since: Any = None,
                  until: Any = None) -> dict[Any, tuple[int, ...]]:
    """The bank's labeled queries (``bank.labels``) as :func:`precision_at_k` labels.

    A label without ``as_of`` applies to every logged recall of its query, keyed by
    ``(namespace, query)``; one with ``as_of`` only to the recall logged at that moment (the same
    words can mean different memories before and after an update), keyed by retrieval id.
    """
    out: dict[Any, tuple[int, ...]] = {}
    timed: dict[tuple[str, str, datetime], tuple[int, ...]] = {}
    for q in bank.labels(namespace=namespace):
        if q.as_of is None:
            out[(q.namespace, q.query)] = q.relevant
        else:
            timed[(q.namespace, q.query, q.as_of)] = q.relevant
    if timed:
        for r in bank.retrievals(namespace, limit=None, since=since, until=until):
            hit = timed.get((r["namespace"], r["query"], r["recalled_at"]))
            if hit is not None:
                out[int(r["id"])] = hit
    return out


def precision_at_k(bank: MemoryBank, labels: Mapping[Any, Iterable[int]], namespace: str | None = None,
                   since: Any = None, until: Any = None, k: int | None = None) -> dict[str, Any]:
    """Precision@k of logged recalls against relevance labels.

    ``labels`` maps a retrieval id, a ``(namespace, query)`` pair or a query text to the ids of the
    memories relevant to it (the first key that matches a logged recall is used, in that order).
    For every logged recall that searched, matches a label and returned something: the share of
    its first ``k`` results (all of them when ``k`` is None) that are relevant. Returns
    ``precision`` (mean over those recalls, None when there are none), ``labelled`` (logged recalls
    that matched a label), ``evaluated``, ``empty`` (labelled recalls that returned nothing: correct
    exactly when nothing is relevant, counted in ``empty_correct``) and ``per_retrieval``.
    """
    if k is not None and (isinstance(k, bool) or not isinstance(k, int) or k < 1):
        from ..errors import ValidationError
        raise ValidationError(f"k must be a whole number >= 1, got {k!r}")
    since, until = _bounds(since, until)
    per: list[dict[str, Any]] = []
    labelled = empty = empty_correct = 0
    for r in bank.retrievals(namespace, limit=None, since=since, until=until):
        key = _label_key(labels, r)
        if key is None or not r["recalled"]:
            continue
        labelled += 1
        relevant = {int(i) for i in labels[key]}
        returned = [int(h["memory_id"]) for h in sorted(r["hits"], key=lambda h: h["rank"])]
        if k is not None:
            returned = returned[:k]
        if not returned:
            empty += 1
            empty_correct += not relevant
            continue
        hit = sum(m in relevant for m in returned)
        per.append({"retrieval_id": int(r["id"]), "query": r["query"], "returned": len(returned),
                    "relevant_returned": hit, "precision": hit / len(returned)})
    return {"k": k, "precision": (sum(p["precision"] for p in per) / len(per)) if per else None,
            "labelled": labelled, "evaluated": len(per), "empty": empty, "empty_correct": empty_correct,
            "per_retrieval": sorted(per, key=lambda p: p["retrieval_id"])}


def ablation_rates(better: int, worse: int, ties: int) -> dict[str, Any]:
    """The four ablation rates over ``n = better + worse + ties`` judged cases, each with its 95 % CI:
    usefulness (better with memory), disturbance (worse with memory), tie rate, and net benefit
    (better − worse) / n (None for all when n = 0)."""
    n = better + worse + ties
    return {
        "n": n, "better": better, "worse": worse, "ties": ties,
        "usefulness": _rate(better, n), "usefulness_ci": wilson_interval(better, n),
        "disturbance": _rate(worse, n), "disturbance_ci": wilson_interval(worse, n),
        "tie_rate": _rate(ties, n), "tie_rate_ci": wilson_interval(ties, n),
        "net_benefit": None if n == 0 else (better - worse) / n,
        "net_benefit_ci": net_benefit_interval(better, worse, n),
    }


def ablation_metrics(bank: MemoryBank, namespace: str | None = None, since: Any = None,
                     until: Any = None) -> dict[str, Any] | None:
    """:func:`ablation_rates` over every ablation case of runs started in the window (cases of
    ``namespace`` only, when given), plus ``runs`` and ``errors`` (cases the judge could not
    decide; left out of n). None when no run is in the window."""
    since, until = _bounds(since, until)
    since_dt = None if since is None else parse_time(since, "since")
    until_dt = None if until is None else parse_time(until, "until")
    runs = [r for r in bank.ablation_runs(limit=None)
            if (since_dt is None or r["started_at"] >= since_dt) and (until_dt is None or r["started_at"] <= until_dt)]
    if not runs:
        return None
    counts = {"with": 0, "without": 0, "tie": 0, "error": 0}
    for run in runs:
        for c in bank.ablation_cases(run["id"]):
            if namespace is None or c["namespace"] == namespace:
                counts[c["verdict"]] += 1
    out = ablation_rates(counts["with"], counts["without"], counts["tie"])
    out.update(runs=len(runs), errors=counts["error"])
    return out


def report(bank: MemoryBank, namespace: str | None = None, since: Any = None, until: Any = None,
           labels: Mapping[Any, Iterable[int]] | None = None, k: int | None = None) -> dict[str, Any]:
    """Every metric of a namespace (or all) and date range, as plain data (what `memctl metrics` prints).

    ``retrieval``: :func:`summary` of the log (retrieval frequency, empty-result rate...);
    ``feedback``: :func:`feedback_metrics`; ``precision``: :func:`precision_at_k` against
    ``labels``, or, when none are given, the bank's own labeled queries (:func:`stored_labels`);
    ``ablation``: :func:`ablation_metrics`. Sections without data are None.
    """
    since, until = _bounds(since, until)
    if labels is None:
        labels = stored_labels(bank, namespace, since, until) or None
    s = summary(usage_frame(bank, namespace, since, until))
    return {
        "namespace": namespace,
        "since": None if since is None else parse_time(since, "since").isoformat(),
        "until": None if until is None else parse_time(until, "until").isoformat(),
        "retrieval": s,
        "feedback": feedback_metrics(bank, namespace, since, until),
        "precision": None if labels is None else precision_at_k(bank, labels, namespace, since, until, k),
        "ablation": ablation_metrics(bank, namespace, since, until),
    }


def span(df: pd.DataFrame) -> tuple[date, date] | None:
    """The first and last day of a :func:`usage_frame`, or None when it is empty."""
    return None if df.empty else (min(df["day"]), max(df["day"]))

