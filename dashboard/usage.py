"""Usage: how agents use the bank — recalls over time, gate and empty rates, usage rate from feedback,
ablation results, scores, ranks, tiers.

Thin page: every number comes from memory_core.evaluation.metrics; this file reads the filters and renders.
Memory texts are shown as plain text (dataframe cells), never as markdown.
"""

from __future__ import annotations

from datetime import date, timedelta

import pandas as pd
import plotly.express as px
import streamlit as st

from memory_core.evaluation import metrics as mx
from dashboard.common import (THRESHOLD_LABEL_ROOM, get_bank, id_column, memory_href, namespace_picker, readable_errors,
                              threshold_line)

COLORS = {"returned": "#2e7d32", "empty": "#f9a825", "skipped": "#9e9e9e"}
DAY_MS = 86_400_000  # a day on a plotly date axis
TIER_COLORS = {"hot": "#d84315", "warm": "#fb8c00", "cold": "#1e88e5"}


def _pct(x: float | None) -> str:
    return "—" if x is None else f"{x:.0%}"


def _ms(x: float | None) -> str:
    return "—" if x is None else f"{x:.0f} ms"


def _show(fig, key: str, height: int = 280, top: int = 10) -> None:
    fig.update_layout(height=height, margin=dict(l=10, r=10, t=top, b=10))
    st.plotly_chart(fig, width="stretch", key=key)


def _day_axis(fig, view: str):
    """Ticks on whole days (weeks), never on the hours between them (a date axis zooms into hours
    when it holds a few days); the x axis untitled, the chart's heading says what it is."""
    fig.update_xaxes(title=None)
    days = sorted({pd.Timestamp(d) for trace in fig.data for d in (trace.x if trace.x is not None else ())})
    if 0 < len(days) <= 10:  # a short span: one tick per day (per week), padded by one on each side
        step = timedelta(days=7 if view == "weekly" else 1)
        fig.update_xaxes(dtick=step.days * DAY_MS, tick0=days[0], range=[days[0] - step, days[-1] + step])
        fig.update_traces(width=0.8 * step.days * DAY_MS, selector={"type": "bar"})  # else one bar is a hairline
    return fig


def _whole_counts(fig, most: int):
    """Counts of a few things tick 0, 1, 2 …, not 0.2, 0.4 …"""
    if most <= 10:
        fig.update_yaxes(dtick=1)
    return fig


bank = get_bank()
st.title("Usage")
with readable_errors():
    if not bank.retrievals(limit=1):
        st.info("No recalls logged yet. Every real recall is logged when an agent calls "
                "`bank.recall(query, namespace=...)` (record=True, the default); "
                "`memctl demo` replays a history of recalls into a bank.")
        st.stop()

    left, right = st.columns([1, 2])
    with left:
        namespace = namespace_picker(bank, key="usage_namespace", allow_all=True)
    everything = mx.usage_frame(bank, namespace)
    first, last = mx.span(everything) or (date.today(), date.today())
    with right:
        picked = st.date_input("Dates (UTC)", value=(first, last), key="usage_dates")
    picked = tuple(picked) if isinstance(picked, (tuple, list)) else (picked,)
    start = picked[0] if picked else first
    end = picked[1] if len(picked) > 1 else start

    df = everything[(everything["day"] >= start) & (everything["day"] <= end)].reset_index(drop=True)
    hits = mx.hits_frame(bank, namespace, since=start, until=end)
    s = mx.summary(df)

    cols = st.columns(6)
    cols[0].metric("retrievals", s["retrievals"], help="Logged recall turns in the window.")
    cols[1].metric("retrieval frequency", _pct(s["retrieval_frequency"]),
                   help="Share of logged turns where retrieval ran (the gate said yes or was not asked) "
                        "and returned at least one memory.")
    cols[2].metric("gate yes-rate", _pct(s["gate_yes_rate"]),
                   help=f"Share of the {s['gated']} turn(s) that asked the gate which it let through.")
    cols[3].metric("empty results", _pct(s["empty_rate"]),
                   help=f"Share of the {s['searched']} search(es) that returned nothing.")
    cols[4].metric("latency p50", _ms(s["latency_p50_ms"]),
                   help=f"Mean {_ms(s['latency_mean_ms'])}, over the turns that searched.")
    cols[5].metric("latency p95", _ms(s["latency_p95_ms"]))
    fb = mx.feedback_metrics(bank, namespace, since=start, until=end)
    ab = mx.ablation_metrics(bank, namespace, since=start, until=end)
    labels = mx.stored_labels(bank, namespace, since=start, until=end)
    pr = mx.precision_at_k(bank, labels, namespace, since=start, until=end, k=5) if labels else None
    cols = st.columns(6)
    if fb is None:
        cols[0].metric("usage rate", "—", help=mx.FEEDBACK_NOTE)
    else:
        lo, hi = fb["usage_rate_ci"] or (None, None)
        cols[0].metric("usage rate", _pct(fb["usage_rate"]),
                       help=f"Share of returned memories the answer used: {fb['used']} of {fb['judged']}, over "
                            f"{fb['with_feedback']} recall(s) with feedback; 95% CI {_pct(lo)}–{_pct(hi)} (Wilson). "
                            "Decided by " + ", ".join(f"{p} {n}" for p, n in sorted(fb["by_path"].items())) + ".")
        cols[1].metric("helpful", _pct(fb["helpful_rate"]),
                       help=f"Agents' own verdict on {fb['rated']} answer(s) they rated.")
    if ab is None:
        cols[2].metric("net benefit", "—", help=mx.ABLATION_NOTE)
    else:
        nb = ab["net_benefit"]
        ci = ab["net_benefit_ci"]
        cols[2].metric("net benefit", "—" if nb is None else f"{nb:+.2f}",
                       help=f"(better − worse) / n over {ab['n']} judged ablation case(s) from {ab['runs']} run(s)"
                            + ("" if ci is None else f"; 95% CI {ci[0]:+.2f} to {ci[1]:+.2f} (Agresti–Min)") + ".")
        for col, key, label in ((cols[3], "usefulness", "usefulness"), (cols[4], "disturbance", "disturbance")):
            ci = ab[f"{key}_ci"]
            col.metric(label, _pct(ab[key]), help=("better" if key == "usefulness" else "worse")
                       + " with memory than without" + ("" if ci is None else f"; 95% CI {_pct(ci[0])}–{_pct(ci[1])}"))
    if pr is None or pr["labelled"] == 0:
        cols[5].metric("precision@5", "—", help="No logged recall in the window matches a labeled query: mark "
                       "results on the Tune page or `memctl labels import FILE`.")
    else:
        cols[5].metric("precision@5", _pct(pr["precision"]),
                       help=f"Share of the first 5 returned memories labeled relevant, over {pr['evaluated']} "
                            f"labeled recall(s) that returned something; {pr['empty']} returned nothing "
                            f"({pr['empty_correct']} of them rightly, nothing being relevant).")
    notes = []
    if fb is None:
        notes.append(f"Usage rate: {mx.FEEDBACK_NOTE}")
    if ab is None:
        outside = len(bank.ablation_runs(limit=None))
        notes.append(mx.ABLATION_NOTE if not outside else
                     f"No ablation run started between {start} and {end} ({outside} run(s) at other dates: "
                     "widen the dates, or see the Evaluate page).")
    st.caption(" ".join(notes))

    if df.empty:
        st.info(f"No recalls between {start} and {end}"
                + ("" if namespace is None else f" in namespace {namespace}")
                + f". Recalls were logged from {first} to {last}.")
    else:
        st.subheader("Retrievals over time")
        view = st.radio("View", mx.VIEWS, horizontal=True, key="usage_view",
                        index=mx.VIEWS.index(mx.readable_view(everything)),
                        help="A quiet day holds a recall or two, so its rates are 0 or 100 %: a rolling "
                             "window or a week reads as a trend. The page opens on the shortest window "
                             f"that typically holds {mx.READABLE_TURNS} recalls. Days without recalls are "
                             "left out (no rate), never drawn as 0 %.")
        # The bars follow the view: a rolling view sums each day with the days before it, as the lines do.
        counts = mx.daily(df, start, end) if view == "daily" else mx.retrievals_over_time(df, view)
        long = counts[["day", *mx.OUTCOMES]].melt(id_vars="day", var_name="outcome", value_name="turns")
        long["outcome"] = long["outcome"].replace({"skipped": "skipped by gate"})
        fig = px.bar(long, x="day", y="turns", color="outcome", barmode="stack",
                     color_discrete_map={**COLORS, "skipped by gate": COLORS["skipped"]},
                     labels={"day": "week" if view == "weekly" else "day",
                             "turns": "turns" if view in ("daily", "weekly") else f"turns ({view} sum)"})
        _show(_day_axis(_whole_counts(fig, int(counts["turns"].max())), view), "usage_daily")

        rates = mx.retrievals_over_time(df, view)
        a, b = st.columns(2)
        with a:
            st.markdown(f"**Retrieval frequency ({view})**")
            fig = px.line(rates, x="day", y="retrieval_frequency", markers=True, hover_data=["turns"],
                          labels={"retrieval_frequency": "retrieval frequency"})
            fig.update_yaxes(tickformat=".0%", range=[0, 1.05])
            _show(_day_axis(fig, view), "usage_frequency", 240)
        with b:
            st.markdown(f"**Share of searches with empty results ({view})**")
            fig = px.line(rates, x="day", y="empty_share", markers=True, color_discrete_sequence=[COLORS["empty"]],
                          hover_data=["turns"], labels={"empty_share": "empty results"})
            fig.update_yaxes(tickformat=".0%", range=[0, 1.05])
            _show(_day_axis(fig, view), "usage_empty", 240)

    if fb is not None:
        view = st.session_state.get("usage_view", mx.VIEWS[0])
        st.subheader(f"Usage rate ({view})")
        per_day = mx.usage_over_time(mx.feedback_frame(bank, namespace, since=start, until=end), view)
        fig = px.line(per_day, x="day", y="usage_rate", markers=True, hover_data=["used", "judged"],
                      labels={"usage_rate": "usage rate"})
        fig.update_yaxes(tickformat=".0%", range=[0, 1.05])
        _show(_day_axis(fig, view), "usage_rate_daily", 240)
        st.caption("Share of the memories the recalls returned that the answer used (from `bank.feedback`), "
                   f"{view}; days without feedback are left out.")

    a, b = st.columns(2)
    with a:
        st.markdown("**Hit scores and the threshold**")
        dist = mx.score_distribution(hits)
        if not dist["scores"]:
            st.caption("no hits in this window")
        else:
            fig = px.histogram(pd.DataFrame({"score": dist["scores"]}), x="score", nbins=30)
            span = (min(dist["scores"] + list(dist["thresholds"])), max(dist["scores"] + list(dist["thresholds"])))
            for row, (t, n) in enumerate(dist["thresholds"].items()):
                threshold_line(fig, t, f"threshold {t:g} ({n} hits)", span, row=row)
            _whole_counts(fig, len(dist["scores"]))
            _show(fig, "usage_scores", top=10 + THRESHOLD_LABEL_ROOM * len(dist["thresholds"]))
            if dist["below_threshold"]:
                st.caption(f"{dist['below_threshold']} hit(s) below their threshold: partners of "
                           "acknowledged conflicts come back together.")
    with b:
        st.markdown("**Hits by rank**")
        ranks = mx.rank_distribution(hits)
        if ranks.empty:
            st.caption("no hits in this window")
        else:
            fig = px.bar(ranks.astype({"rank": str}), x="rank", y="hits")
            fig.update_xaxes(type="category")  # ranks 1, 2, 3 …: a number axis drew 0.6 … 1.4 for one
            _show(_whole_counts(fig, int(ranks["hits"].max())), "usage_ranks")

    a, b = st.columns(2)
    with a:
        st.markdown("**Most recalled memories** (in the window)")
        top = mx.most_recalled(bank, hits, n=15)
        if top.empty:
            st.caption("no hits in this window")
        else:
            # Counts first and the text last, so the numbers are on screen whatever the width.
            top = top.assign(memory_id=[memory_href(i) for i in top["memory_id"]])
            st.dataframe(top, hide_index=True, column_order=["memory_id", "recalls", "used", "mean_rank", "access_count",
                                                             "last_recalled", "namespace", "status", "text"],
                         column_config={
                "memory_id": id_column("memory"),
                "recalls": st.column_config.NumberColumn(width="small"),
                "used": st.column_config.NumberColumn(width="small"),
                "access_count": st.column_config.NumberColumn("recalled (all time)", width="small"),
                "mean_rank": st.column_config.NumberColumn(format="%.1f", width="small"),
                "last_recalled": st.column_config.DatetimeColumn(format="YYYY-MM-DD HH:mm")})
    with b:
        never = mx.never_recalled(bank, namespace)
        st.markdown(f"**Never recalled** ({len(never)} active memories, all time)")
        if never.empty:
            st.caption("every active memory has been recalled at least once")
        else:
            st.dataframe(never, hide_index=True, column_config={
                "importance": st.column_config.NumberColumn(format="%.2f"),
                "created_at": st.column_config.DatetimeColumn(format="YYYY-MM-DD")})

    st.subheader("Memories by tier over time")
    tiers = mx.tiers_over_time(bank, namespace, mx.weekly_dates(start, end))
    # One point (a window of a week or less) has no area to fill: stacked bars show it.
    chart = px.area if tiers["date"].nunique() > 1 else px.bar
    fig = chart(tiers, x="date", y="memories", color="tier", color_discrete_map=TIER_COLORS,
                category_orders={"tier": ["hot", "warm", "cold"]})
    _show(_day_axis(fig, "weekly"), "usage_tiers")
    st.caption("Weekly points, each as of the end of that day. Status and last access are today's "
               "(the bank keeps no history of them), so past points are approximate.")
