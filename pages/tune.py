"""Tune: move the ranking weights and watch which memories get in or out, before any agent sees it.

Every recall here is a what-if (record=False): tuning never changes access counts or the retrieval
log. The bars only split Hit.score into its weighted parts (no scoring formula of its own).
"""

from __future__ import annotations

import html
from datetime import date, datetime, time, timezone

import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from memory_core import scoring
from memory_core.scoring import ScoringParams
from pages.common import get_bank, namespace_picker, readable_errors

CANDIDATES = 15  # at least this many candidates are shown, in or out
# (ScoringParams field, label, min, max, step)
SLIDERS = [
    ("alpha", "α relevance", 0.0, 1.0, 0.01),
    ("beta", "β recency", 0.0, 1.0, 0.01),
    ("gamma", "γ importance", 0.0, 1.0, 0.01),
    ("delta", "δ frequency", 0.0, 1.0, 0.01),
    ("lexical_weight", "lexical weight (share of relevance)", 0.0, 1.0, 0.01),
    ("half_life_days", "recency half-life (days)", 1.0, 730.0, 1.0),
    ("threshold", "threshold", 0.0, 1.0, 0.01),
    ("k", "k (top memories returned)", 1, 50, 1),
    ("tier_hot", "tier multiplier hot (< 7 days)", 0.0, 1.0, 0.05),
    ("tier_warm", "tier multiplier warm (7–90 days)", 0.0, 1.0, 0.05),
    ("tier_cold", "tier multiplier cold (> 90 days)", 0.0, 1.0, 0.05),
]
# (name on the bar, weight field, component in Hit.components)
PARTS = [
    ("α·relevance", "alpha", "relevance"),
    ("β·recency", "beta", "recency"),
    ("γ·importance", "gamma", "importance"),
    ("δ·frequency", "delta", "frequency"),
]


def slider_key(field: str) -> str:
    return f"tune_{field}"


def load_preset_into_sliders(params: ScoringParams) -> None:
    """Put a preset's values on the sliders (clamped to the slider ranges)."""
    for field, _, lo, hi, _ in SLIDERS:
        value = min(max(getattr(params, field), lo), hi)
        st.session_state[slider_key(field)] = int(value) if field == "k" else float(value)


def score_parts(hit, p: ScoringParams) -> dict[str, float]:
    """Hit.score split into its weighted components, labelled for the bar (scoring.parts does the math)."""
    shares = scoring.parts(p, hit.components)
    return {name: shares[component] for name, _, component in PARTS}


def as_of(day: date) -> datetime:
    """The moment an "as of" date stands for: now for today, otherwise the end of that day (UTC)."""
    if day >= datetime.now(timezone.utc).date():
        return datetime.now(timezone.utc)
    return datetime.combine(day, time.max, tzinfo=timezone.utc)


def flash(message: str) -> None:
    st.session_state["tune_flash"] = message


bank = get_bank()
st.title("Tune recall")
st.caption("Every recall on this page is a what-if: it changes no access count and logs nothing.")
if "tune_flash" in st.session_state:
    st.success(st.session_state.pop("tune_flash"))

with readable_errors():
    namespace = namespace_picker(bank, key="tune_namespace")
    presets = bank.presets()
    active_name, active_params = bank.active_preset()
    names = list(presets)

    def on_preset_change() -> None:
        chosen = st.session_state["tune_preset"]
        if chosen in presets:
            load_preset_into_sliders(presets[chosen])

    if st.session_state.get("tune_preset") not in names:
        st.session_state["tune_preset"] = active_name if active_name in names else names[0]
        load_preset_into_sliders(presets[st.session_state["tune_preset"]])
    if any(slider_key(f) not in st.session_state for f, *_ in SLIDERS):
        load_preset_into_sliders(presets[st.session_state["tune_preset"]])
    base_name = st.selectbox("Start from preset", names, key="tune_preset", on_change=on_preset_change,
                             help=f"The bank's active preset is **{active_name}**.")
    base = presets[base_name]

    logged = bank.retrievals(namespace=namespace, limit=50)
    logged_queries = list(dict.fromkeys(r["query"] for r in logged))
    qcol, lcol, dcol = st.columns([3, 3, 1])
    picked = lcol.selectbox("…or a recent logged query", ["(type your own)"] + logged_queries, key="tune_logged")
    typed = qcol.text_input("Query", key="tune_query", placeholder="what kind of food do I like?")
    day = dcol.date_input("As of", value=datetime.now(timezone.utc).date(), key="tune_as_of")
    query = typed.strip() or ("" if picked == "(type your own)" else picked)


@st.fragment
def tuner() -> None:
    with readable_errors():
        left, right = st.columns([1, 3])
        with left:
            st.subheader("Weights")
            values = {}
            for field, label, lo, hi, step in SLIDERS:
                values[field] = st.slider(label, min_value=lo, max_value=hi, step=step, key=slider_key(field))
            if base.decay != "exponential":
                st.caption(f"Preset {base_name} decays linearly: the half-life has no effect.")
        p = base.replace(**values)
        now = as_of(day)
        with right:
            show_ranking(p, now)
            show_replay(p, now)
            save_and_activate(p)


def show_ranking(p: ScoringParams, now: datetime) -> None:
    if not query:
        st.info("Type a query (or pick one from the retrieval log) to see how it ranks.")
        return
    hits = bank.recall(query, namespace=namespace, params=p.replace(threshold=0.0, k=max(p.k, CANDIDATES)),
                       now=now, record=False)
    if not hits:
        st.write(f"No memory of {namespace} existed on {day}.")
        return
    rows = []
    for h in hits:
        parts = score_parts(h, p)
        is_in = h.score >= p.threshold and h.rank <= p.k
        rows.append({"in": is_in, "rank": h.rank, "id": h.memory.id, "score": h.score,
                     **parts, "total": sum(parts.values()), "tier ×": h.components["tier"], "text": h.memory.text})
    table = pd.DataFrame(rows)
    n_in = int(table["in"].sum())
    st.subheader(f"{n_in} of {len(hits)} candidates in (k={p.k}, threshold={p.threshold:.2f})")
    # Plotly reads <b>, <a href>, <br> in labels as markup: escaped, a memory's tags show as typed.
    labels = [f"{'✅' if r['in'] else '⬜'} #{r['id']} {html.escape(r['text'][:50])}" for r in rows]
    fig = go.Figure()
    for name, _, _ in PARTS:
        fig.add_bar(name=name, y=labels, x=[float(v) for v in table[name]], orientation="h")
    fig.add_vline(x=p.threshold, line_dash="dash", line_color="red",
                  annotation_text=f"threshold {p.threshold:.2f}")
    fig.update_layout(barmode="stack", height=120 + 28 * len(rows), yaxis={"autorange": "reversed"},
                      xaxis_title="score", margin={"l": 10, "r": 10, "t": 30, "b": 10}, legend_orientation="h")
    st.plotly_chart(fig, key="tune_chart", width="stretch")
    st.dataframe(table, hide_index=True, key="tune_table", column_config={
        c: st.column_config.NumberColumn(c, format="%.3f") for c in ["score", *dict.fromkeys(n for n, _, _ in PARTS),
                                                                     "total", "tier ×"]})

    active = bank.recall(query, namespace=namespace, params=active_params, now=now, record=False)
    before = [h.memory.id for h in active]
    after = [r["id"] for r in rows if r["in"]]
    text = {h.memory.id: h.memory.text for h in [*hits, *active]}
    a, b = st.columns(2)
    a.markdown(f"**Active preset `{active_name}`** returns {len(before)}")
    a.dataframe(pd.DataFrame({"id": before, "text": [text[i] for i in before]}), hide_index=True,
                key="tune_active_top")
    b.markdown(f"**These settings** return {len(after)}")
    b.dataframe(pd.DataFrame({"id": after, "text": [text[i] for i in after]}), hide_index=True,
                key="tune_new_top")
    entering = [i for i in after if i not in before]
    leaving = [i for i in before if i not in after]
    if not entering and not leaving:
        st.write("Same memories as the active preset" + (" (order differs)." if before != after else "."))
    for i in entering:  # memory text is plain text, never markdown: memories may carry markup
        st.text(f"➕ enters: #{i} {text[i]}")
    for i in leaving:
        st.text(f"➖ leaves: #{i} {text[i]}")


def show_replay(p: ScoringParams, now: datetime) -> None:
    if not logged_queries:
        st.caption(f"No logged recalls for {namespace} yet: nothing to replay.")
        return
    changed = 0
    for q in logged_queries:
        old = [h.memory.id for h in bank.recall(q, namespace=namespace, params=active_params, now=now, record=False)]
        new = [h.memory.id for h in bank.recall(q, namespace=namespace, params=p, now=now, record=False)]
        changed += set(old) != set(new)
    st.metric("recent logged queries whose result would change", f"{changed} of {len(logged_queries)}",
              help=f"Distinct queries among the last {len(logged)} recalls of {namespace}, replayed as what-ifs "
                   f"with these settings and with the active preset `{active_name}`.")


def save_and_activate(p: ScoringParams) -> None:
    st.subheader("Save and activate")
    s, a = st.columns(2)
    with s:
        name = st.text_input("Save these settings as preset", key="tune_save_name", placeholder="my-preset")
        overwrite = name.strip() in presets
        if overwrite:
            st.warning(f"A preset named {name.strip()!r} exists; saving replaces it.")
        if st.button("Save preset", key="tune_save", disabled=not name.strip()):
            with readable_errors():
                bank.save_preset(name.strip(), p)
                flash(f"Saved preset {name.strip()!r}" + (" (replaced the old one)." if overwrite else ".")
                      + f" Agents still use the active preset {active_name!r} until you make it active.")
                st.rerun()
    with a:
        target = st.selectbox("Make a preset active (agents use it by default)", names,
                              index=names.index(active_name) if active_name in names else 0, key="tune_activate_name")
        if st.button("Make active", key="tune_activate", disabled=target == active_name):
            with readable_errors():
                bank.set_active_preset(target)
                flash(f"Preset {target!r} is now active (was {active_name!r}); agents recall with it from now on.")
                st.rerun()


if "query" in globals():  # the setup above did not stop on an error
    tuner()
