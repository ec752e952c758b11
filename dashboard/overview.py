"""Overview (home): the bank at a glance — counts, distributions, growth, conflicts, maintenance.

Each tile links to the view it counts (Browse, Recalls, Conflicts), filtered as the tile says.
"""

from __future__ import annotations

import os
from datetime import datetime, timedelta, timezone

import pandas as pd
import plotly.express as px
import streamlit as st

from memory_core.curation import merge
from memory_core.index.scoring import COLD_DAYS, HOT_DAYS
from dashboard.common import get_bank, merge_candidates, readable_errors

TREND_DAYS = 7  # the empty-recall trend compares the last week with the week before

HERE = os.path.dirname(os.path.abspath(__file__))


def _bar(title: str, counts: dict, x: str) -> None:
    """A small plotly bar chart of name → count (or a caption when there is nothing to draw)."""
    st.markdown(f"**{title}**")
    if not counts:
        st.caption("nothing yet")
        return
    df = pd.DataFrame({x: [str(k) for k in counts], "memories": list(counts.values())})
    fig = px.bar(df, x=x, y="memories", height=260)
    fig.update_layout(margin=dict(l=10, r=10, t=10, b=10))
    st.plotly_chart(fig, width="stretch", key=f"chart_{x}")


def growth(by_month: dict[str, int]) -> pd.DataFrame:
    """New memories per month ("YYYY-MM" → count) as labelled rows ("Mar 2026"), from the first month
    to the last with the months between at zero, so the bars keep the spacing of time; and the total."""
    first, last = min(by_month), max(by_month)
    months = [str(p) for p in pd.period_range(first, last, freq="M")]
    df = pd.DataFrame({"month": [pd.Period(m, freq="M").strftime("%b %Y") for m in months],
                       "new memories": [int(by_month.get(m, 0)) for m in months]})
    df["total"] = df["new memories"].cumsum()
    return df


bank = get_bank()
st.title("Memory Console")
with readable_errors():
    stats = bank.stats()
    if notice := bank.language_notice():
        st.warning(notice, icon="🌐")
    open_conflicts = stats["open_conflicts"]
    now = datetime.now(timezone.utc)
    recent = bank.retrievals(limit=None, since=now - timedelta(days=2 * TREND_DAYS))
    cut = now - timedelta(days=TREND_DAYS)

    def empty_rate(rs: list) -> float | None:
        return sum(1 for r in rs if not r["n_results"]) / len(rs) if rs else None

    this_week = empty_rate([r for r in recent if r["recalled_at"] >= cut])
    last_week = empty_rate([r for r in recent if r["recalled_at"] < cut])
    rate = stats["empty_retrievals"] / stats["retrievals"] if stats["retrievals"] else None
    cols = st.columns(5)
    cols[0].metric("active memories", stats["active"])
    cols[0].page_link("dashboard/browse.py", label="Browse them", icon="🔎")
    cols[1].metric("namespaces", stats["namespaces"])
    cols[1].page_link("dashboard/browse.py", label="Every namespace", icon="🔎", query_params={"ns": "(all)"})
    cols[2].metric("recalls logged", stats["retrievals"],
                   help=f"{len([r for r in recent if r['recalled_at'] >= cut])} in the last {TREND_DAYS} days")
    cols[2].page_link("dashboard/recalls.py", label="Explore recalls", icon="🔁", query_params={"ns": "(all)"})
    cols[3].metric("empty recalls", f"{stats['empty_retrievals']}" + ("" if rate is None else f" ({rate:.0%})"),
                   None if this_week is None or last_week is None or abs(this_week - last_week) < 0.005
                   else f"{(this_week - last_week) * 100:+.0f} points this week",
                   delta_color="off",
                   help=f"Share of all logged recalls that returned nothing; the arrow compares the last {TREND_DAYS} "
                        f"days ({'—' if this_week is None else f'{this_week:.0%}'}) with the {TREND_DAYS} before "
                        f"({'—' if last_week is None else f'{last_week:.0%}'}). An empty recall is a correct answer "
                        "when nothing fits; many may mean a threshold set too high.")
    cols[3].page_link("dashboard/recalls.py", label="See empty recalls", icon="🔁",
                      query_params={"ns": "(all)", "results": "empty"})
    cols[4].metric("open conflicts", open_conflicts)
    cols[4].page_link("dashboard/conflicts.py", label="Review conflicts", icon="⚖️", query_params={"ns": "(all)"})

    if stats["total"] == 0:
        st.info("This bank is empty. Build the demo into it with `make demo` "
                f"(or `memctl --bank {bank.path} demo --if-empty`), let an agent write to it, "
                "or add a memory by hand on the Browse page.")
    else:
        left, right = st.columns(2)
        with left:
            _bar("Memories by status", stats["by_status"], "status")
            _bar("Active memories by category", stats["by_category"], "category")
        with right:
            _bar("Active memories by namespace", dict(bank.namespaces()), "namespace")
            _bar("Active memories by tier", stats["by_tier"], "tier")
            st.caption(f"Tiers follow when a memory was last touched (added or recalled): hot within "
                       f"{HOT_DAYS:g} days, warm up to {COLD_DAYS:g}, cold beyond. No hot memory means none was "
                       f"added or recalled in the last {HOT_DAYS:g} days.")

        # Growth: every memory (any status) by the month it was created, counted by the bank.
        if stats["by_month"]:
            df = growth(stats["by_month"])
            st.markdown("**Growth: memories by created month**")
            fig = px.bar(df, x="month", y="new memories", hover_data=["total"], height=280)
            # Months as categories: a date axis given one or two bars zooms into hours (ticks like 23:59:59.9996).
            fig.update_xaxes(type="category", title=None)
            fig.update_layout(margin=dict(l=10, r=10, t=10, b=10))
            st.plotly_chart(fig, width="stretch", key="chart_growth")

    st.subheader("Conflicts")
    if open_conflicts:
        st.write(f"**{open_conflicts}** open conflict(s) wait for a decision.")
    else:
        st.write("No open conflicts.")
    if os.path.exists(os.path.join(HERE, "conflicts.py")):
        st.page_link("dashboard/conflicts.py", label="Review conflicts", icon="⚖️")

    st.subheader("Merge candidates")
    clusters = merge_candidates(bank)
    if clusters:
        st.write(f"**{sum(clusters.values())}** cluster(s) of near-duplicates could be merged: "
                 + ", ".join(f"{ns} {n}" for ns, n in clusters.items()) + ".")
    else:
        st.write("No near-duplicates to merge.")
    large = [(ns, count) for ns, count in bank.namespaces() if count >= merge.LARGE_NAMESPACE]
    if large:
        st.caption("Not searched here (every pair is compared: about a minute per 100,000 memories): "
                   + ", ".join(f"{ns} ({count:,} memories)" for ns, count in large)
                   + ". Search them on the Merges page.")
    if os.path.exists(os.path.join(HERE, "merges.py")):
        st.page_link("dashboard/merges.py", label="Review merges", icon="🧩")

    st.subheader("Maintenance and scoring")
    runs = bank.maintenance_runs(limit=1)
    if runs:
        run = runs[0]
        kind = "dry run" if run.get("dry_run") else "run"
        st.write(f"Last maintenance {kind}: {run['started_at']:%Y-%m-%d %H:%M} UTC"
                 + (f" (finished {run['finished_at']:%H:%M})" if run.get("finished_at") else ""))
    else:
        st.write("No maintenance run yet.")
    name, params = bank.active_preset()
    st.write(f"Active scoring preset: **{name}**")
    with st.expander("Preset parameters"):
        st.json(params.to_dict())
