"""Tune: move the ranking weights and watch which memories get in or out, before any agent sees it.

Every recall here is a what-if (record=False): tuning never changes access counts or the retrieval
log. The bars only split Hit.score into its weighted parts (no scoring formula of its own). Beside
the blend stand the model's cosine and its own rank, so the operator sees what the other parts add.
"""

from __future__ import annotations

import html
from datetime import date, datetime, time, timedelta, timezone

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from memory_core import ScoringParams
from memory_core.index import scoring
from memory_core.evaluation import tuning
from dashboard.common import (THRESHOLD_LABEL_ROOM, check_choice_param, check_param, ensure_loaded, get_bank,
                              memory_href, model_caption, namespace_picker, readable_errors, set_param,
                              threshold_line, url_param)

CANDIDATES = 15  # at least this many candidates are shown, in or out
# (ScoringParams field, label, min, max, step)
SLIDERS = [
    ("alpha", "α relevance", 0.0, 1.0, 0.01),
    ("beta", "β recency", 0.0, 1.0, 0.01),
    ("gamma", "γ importance", 0.0, 1.0, 0.01),
    ("delta", "δ frequency", 0.0, 1.0, 0.01),
    ("lexical_weight", "lexical weight (share of relevance)", 0.0, 1.0, 0.01),
    ("neighbour_weight", "neighbour weight (share of the gap to the best neighbour's relevance)", 0.0, 1.0, 0.01),
    ("date_weight", "date weight (share of the gap to full relevance for memories from a period the query names)",
     0.0, 1.0, 0.01),
    ("half_life_days", "recency half-life (days)", 1.0, 730.0, 1.0),
    ("threshold", "threshold", 0.0, 1.0, 0.01),
    ("k", "k (top memories returned)", 1, 50, 1),
    ("tier_hot", f"tier multiplier hot (< {scoring.HOT_DAYS:g} days)", 0.0, 1.0, 0.05),
    ("tier_warm", f"tier multiplier warm ({scoring.HOT_DAYS:g}–{scoring.COLD_DAYS:g} days)", 0.0, 1.0, 0.05),
    ("tier_cold", f"tier multiplier cold (> {scoring.COLD_DAYS:g} days)", 0.0, 1.0, 0.05),
]
# (ScoringParams field, label, options, help): settings chosen from a few values, beside the sliders
CHOICES = [
    ("frequency_from", "δ frequency counts", scoring.FREQUENCY_FROM,
     "retrievals: every recall that returned the memory; uses: only recalls whose answer used it "
     "(from feedback)"),
]
# (name on the bar, weight field, component in Hit.components)
PARTS = [
    ("α·relevance", "alpha", "relevance"),
    ("α·dates", "alpha", "dates"),
    ("α·neighbours", "alpha", "neighbours"),
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
    for field, *_ in CHOICES:
        st.session_state[slider_key(field)] = getattr(params, field)


def score_parts(hit, p: ScoringParams) -> dict[str, float]:
    """Hit.score split into its weighted components, labelled for the bar (scoring.parts does the math)."""
    shares = scoring.parts(p, hit.components)
    return {name: shares[component] for name, _, component in PARTS}


def linked_moment(day: date) -> datetime | None:
    """The exact moment a link carried (``?at=``, from a logged recall) when it falls on ``day``: the
    ranking then uses the recency that recall saw."""
    raw = url_param("at")
    try:
        moment = datetime.fromisoformat(raw) if raw else None
    except ValueError:
        return None
    if moment is not None and moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    return moment if moment is not None and moment.date() == day else None


def as_of(day: date) -> datetime:
    """The moment an "as of" date stands for: the linked recall's moment on its day, now for today,
    otherwise the end of that day (UTC)."""
    if (moment := linked_moment(day)) is not None:
        return moment
    if day >= datetime.now(timezone.utc).date():
        return datetime.now(timezone.utc)
    return datetime.combine(day, time.max, tzinfo=timezone.utc)


def flash(message: str) -> None:
    st.session_state["tune_flash"] = message


MARKS = ["unlabeled", "relevant", "not relevant"]
OBJECTIVES = ["f0.5", "f1", "precision", "recall"]


@st.cache_resource
def query_vectors(path: str, model: str) -> dict:
    """Query text → embedding, shared by the page's reruns: after a new label only new queries are embedded."""
    return {}


def query_vector(text: str):
    """The query's embedding, from the page's cache (the same one the label set's queries use)."""
    vectors = query_vectors(str(bank.path), bank.model)
    if text not in vectors:
        vectors[text] = bank.embedder.encode([text], kind="query")[0]
    return vectors[text]


def cosine_order(text: str, now: datetime, shown: list[int]) -> list[int]:
    """The namespace's memories that existed at ``now``, by the model's cosine with the query alone
    (best first): what the blend starts from, before lexical match, lifts, recency and the rest.

    Kept across slider moves (no slider changes it; capturing it costs about a recall): made again
    when the query, the day or the namespace's size changes, or a shown candidate is not in it."""
    key = (str(bank.path), namespace, text, day, bank.count(namespace=namespace))
    kept = st.session_state.get("tune_cosine")
    if kept is not None and kept[0] == key and set(shown) <= set(kept[1]):
        return kept[1]
    cands = bank.candidates([text], namespace, now=now, vectors=query_vector(text)[None, :])
    alive = cands.created <= cands.now[0]
    sim = np.where(alive, cands.similarity[0], -np.inf) if cands.ids.size else np.zeros(0)
    order = [int(cands.ids[r]) for r in np.argsort(-sim, kind="stable") if alive[r]]
    st.session_state["tune_cosine"] = (key, order)
    return order


def agreement(blend: list[int], cosine: list[int], blend_rank: dict[int, int], cosine_rank: dict[int, int],
              k: int) -> str:
    """One line saying how many of the top k the blend and the cosine alone share, and which differ."""
    mine, theirs = blend[:k], cosine[:k]
    shared = len(set(mine) & set(theirs))
    text = (f"Of the top {k}, the blend and the model's cosine alone agree on {shared}"
            + (" (order aside)." if shared == min(len(mine), len(theirs)) and mine != theirs else "."))
    brought = [f"#{i} (cosine rank {cosine_rank.get(i, '-')})" for i in mine if i not in theirs]
    dropped = [f"#{i} (blend rank {blend_rank[i] if i in blend_rank else f'beyond {len(blend_rank)}'})"
               for i in theirs if i not in mine]
    if brought:
        text += " The blend brings in " + ", ".join(brought) + "."
    if dropped:
        text += " The cosine alone would return " + ", ".join(dropped) + "."
    return text


def label_moment(day: date) -> datetime | None:
    """The as_of a label made on this page gets: none for today (the query is about now), else that day."""
    return None if day >= datetime.now(timezone.utc).date() else as_of(day)


def labeled_set(label_set: str) -> tuning.LabeledSet | None:
    """The chosen label set, ready to score; prepared again only when its labels changed."""
    queries = bank.labels(set_name=label_set)
    if not queries:
        return None
    cached = st.session_state.get("tune_labeled")
    if cached is not None and cached[0] == (label_set, tuple(queries)):
        return cached[1]
    with st.spinner(f"Embedding the {len(queries)} labeled queries of {label_set!r}…"):
        prepared = tuning.prepare(bank, queries, vectors=query_vectors(str(bank.path), bank.model))
    st.session_state["tune_labeled"] = ((label_set, tuple(queries)), prepared)
    return prepared


def setting_text(v: float | str) -> str:
    """A setting as text: a column holding numbers and a choice's name (frequency_from) is not one Arrow type."""
    return v if isinstance(v, str) else f"{v:g}"


def fmt(v: float) -> str:
    return "n/a" if v != v else f"{v:.3f}"


bank = get_bank()
st.title("Tune recall")
st.caption(f"{model_caption(bank)} (relevance and the threshold are on its scale). Every recall on this page "
           "is a what-if: it changes no access count and logs nothing.")
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

    # A link (a reload, or "open in Tune" from a logged recall) names the preset, the query and the day.
    if "tune_preset" not in st.session_state and check_choice_param("tune_preset", names, "preset"):
        if (linked := url_param("tune_preset")) is not None:
            st.session_state["tune_preset"] = linked
            load_preset_into_sliders(presets[linked])
    check_param("tune_as_of", date.fromisoformat, "a day such as 2025-06-30")
    check_param("at", datetime.fromisoformat, "a moment such as 2025-06-30T14:05:00+00:00")

    if st.session_state.get("tune_preset") not in names:
        st.session_state["tune_preset"] = active_name if active_name in names else names[0]
        load_preset_into_sliders(presets[st.session_state["tune_preset"]])
    if any(slider_key(f) not in st.session_state for f, *_ in [*SLIDERS, *CHOICES]):
        load_preset_into_sliders(presets[st.session_state["tune_preset"]])
    base_name = st.selectbox("Start from preset", names, key="tune_preset", on_change=on_preset_change,
                             help=f"The bank's active preset is **{active_name}**.")
    base = presets[base_name]
    set_param("tune_preset", base_name)
    if (other := bank.presets_from_other_models().get(base_name)) is not None:
        st.warning(f"Preset **{base_name}** was set on {other}; this bank now uses {bank.model}, whose cosines "
                   "read differently: check its threshold here before relying on it.")

    logged = bank.retrievals(namespace=namespace, limit=50)
    logged_queries = list(dict.fromkeys(r["query"] for r in logged))
    qcol, lcol, dcol = st.columns([3, 3, 1])
    picked = lcol.selectbox("…or a recent logged query", ["(type your own)"] + logged_queries, key="tune_logged")
    typed = qcol.text_input("Query", key="tune_query", placeholder="what kind of food do I like?", bind="query-params")
    day = dcol.date_input("As of", value=datetime.now(timezone.utc).date(), key="tune_as_of", bind="query-params")
    query = typed.strip() or ("" if picked == "(type your own)" else picked)
    sets = bank.label_sets()
    set_names = list(dict.fromkeys([*sets, "default"]))
    label_set = st.selectbox("Label set", set_names, key="tune_label_set",
                             format_func=lambda n: f"{n} ({sets.get(n, 0)} labeled queries)",
                             help="Marks on this page go into this set; its metrics and the tuner use it.")


# Slider rows of the weights panel: (heading, fields), laid out across the page so labels read whole.
SLIDER_ROWS = [
    ("Weights (divided by their sum)", ["alpha", "beta", "gamma", "delta"]),
    ("Inside relevance", ["lexical_weight", "neighbour_weight", "date_weight"]),
    ("Recency, cut-off and size", ["half_life_days", "threshold", "k"]),
    ("Tier multipliers", ["tier_hot", "tier_warm", "tier_cold"]),
]


def normalised(values: dict) -> str:
    """The weights as scoring uses them: each divided by their sum (α 0.10 of a sum 0.32 draws 0.31)."""
    names = {"alpha": "α", "beta": "β", "gamma": "γ", "delta": "δ"}
    total = sum(float(values[f]) for f in names)
    if total <= 0:
        return "All four weights are 0: every score is 0."
    return (f"Scores divide the weights by their sum ({total:.2f}), so what counts is each one's share: "
            + " · ".join(f"{n} {float(values[f]) / total:.2f}" for f, n in names.items())
            + ". The bars below are drawn with these shares.")


@st.fragment
def tuner() -> None:
    with readable_errors():
        spec = {field: (label, lo, hi, step) for field, label, lo, hi, step in SLIDERS}
        values = {}
        with st.expander("Settings", expanded=True):
            for heading, fields in SLIDER_ROWS:
                st.markdown(f"**{heading}**")
                for col, field in zip(st.columns(4), fields):
                    label, lo, hi, step = spec[field]
                    values[field] = col.slider(label, min_value=lo, max_value=hi, step=step, key=slider_key(field))
                if heading.startswith("Weights"):
                    st.caption(normalised(values))
            for field, label, options, help_text in CHOICES:
                values[field] = st.radio(label, options, key=slider_key(field), horizontal=True, help=help_text)
            if base.decay != "exponential":
                st.caption(f"Preset {base_name} decays linearly: the half-life has no effect.")
        p = base.replace(**values)
        now = as_of(day)
        show_metrics(p)
        show_ranking(p, now)
        show_replay(p, now)
        save_and_activate(p)


def show_ranking(p: ScoringParams, now: datetime) -> None:
    if not query:
        st.info("Type a query (or pick one from the retrieval log) to see how it ranks.")
        return
    ensure_loaded(bank, namespace)
    hits = bank.recall(query, namespace=namespace, params=p.replace(threshold=0.0, k=max(p.k, CANDIDATES)),
                       now=now, record=False)
    if not hits:
        st.write(f"No memory of {namespace} existed on {day}.")
        return
    held = bank.calibrated(p, query).threshold  # the threshold the question's language holds it to
    cosine = cosine_order(query, now, [h.memory.id for h in hits])
    cosine_rank = {mid: i + 1 for i, mid in enumerate(cosine)}
    rows = []
    for h in hits:
        parts = score_parts(h, p)
        is_in = h.score >= held and h.rank <= p.k
        rows.append({"in": is_in, "rank": h.rank, "cosine rank": cosine_rank.get(h.memory.id), "id": h.memory.id,
                     "open": memory_href(h.memory.id), "score": h.score, "cosine": h.components["similarity"],
                     **parts, "total": sum(parts.values()), "tier ×": h.components["tier"], "text": h.memory.text})
    table = pd.DataFrame(rows)
    n_in = int(table["in"].sum())
    st.subheader(f"{n_in} of {len(hits)} candidates in (k={p.k}, threshold={held:.2f} for this question's language)")
    # Plotly reads <b>, <a href>, <br> in labels as markup: escaped, a memory's tags show as typed.
    labels = [f"{'✅ in' if r['in'] else '⬜ out'} #{r['id']} {html.escape(r['text'][:50])}" for r in rows]
    fig = go.Figure()
    for name, _, _ in PARTS:
        fig.add_bar(name=name, y=labels, x=[float(v) for v in table[name]], orientation="h")
    top = max([held, *(float(t) for t in table["total"])]) * 1.05 or 1.0
    threshold_line(fig, held, f"threshold {held:.2f}", (0.0, top))
    fig.update_layout(barmode="stack", height=120 + 28 * len(rows), yaxis={"autorange": "reversed"},
                      xaxis={"title": "score", "range": [0.0, top]}, legend_orientation="h",
                      margin={"l": 10, "r": 10, "t": 10 + THRESHOLD_LABEL_ROOM, "b": 10})
    st.plotly_chart(fig, key="tune_chart", width="stretch")
    st.caption(agreement([h.memory.id for h in hits], cosine, {h.memory.id: h.rank for h in hits}, cosine_rank, p.k)
               + f" The cosine is {bank.model}'s alone, as the relevance part starts from it.")
    st.dataframe(table, hide_index=True, key="tune_table", column_config={
        "cosine rank": st.column_config.NumberColumn("cosine rank", help="The memory's rank by the model's cosine "
                                                     "with the query alone, among the namespace's memories"),
        "cosine": st.column_config.NumberColumn("cosine", format="%.3f", help="The model's cosine with the query "
                                                "(raw, before the blend stretches it into relevance)"),
        "open": st.column_config.LinkColumn("memory", display_text="open", width=60),
        "in": st.column_config.CheckboxColumn("in", help="in: returned to the agent (score ≥ threshold, rank ≤ k); "
                                                         "unticked: out"),
        **{c: st.column_config.NumberColumn(c, format="%.3f") for c in ["score", *dict.fromkeys(n for n, _, _ in PARTS),
                                                                     "total", "tier ×"]}})

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
    for i in entering:
        st.text(f"➕ enters: #{i} {text[i]}")
    for i in leaving:
        st.text(f"➖ leaves: #{i} {text[i]}")
    mark_results(rows)


def mark_results(rows: list[dict]) -> None:
    """Relevant / not relevant for each shown candidate, written to the label set as it is clicked."""
    moment = label_moment(day)
    st.subheader(f"Label these results (set {label_set!r})")
    st.caption("Mark what this query should bring back. A query marked with nothing relevant means "
               "\"recall should come back empty\". Unmarked memories count as not relevant.")
    existing = next((q for q in bank.labels(namespace=namespace, set_name=label_set)
                     if q.query == query and q.as_of == moment), None)
    tag = abs(hash((label_set, namespace, query, moment))) % 10**10

    def on_mark(mid: int, key: str) -> None:
        choice = st.session_state[key]
        with readable_errors():
            if choice == "unlabeled":
                bank.unlabel(namespace, query, mid, as_of=moment, set_name=label_set)
            else:
                bank.label(namespace, query, mid, relevant=choice == "relevant", as_of=moment, set_name=label_set)

    for r in rows:
        mid = r["id"]
        current = ("relevant" if existing and mid in existing.relevant else
                   "not relevant" if existing and mid in existing.irrelevant else "unlabeled")
        key = f"tune_mark_{tag}_{mid}"
        t, m = st.columns([1, 1])  # room for the three marks on one line beside the text
        t.text(f"{'✅ in ' if r['in'] else '⬜ out'} #{mid} {r['text']}")
        m.radio(f"mark #{mid}", MARKS, index=MARKS.index(current), key=key, horizontal=True,
                label_visibility="collapsed", on_change=on_mark, args=(mid, key))


def show_metrics(p: ScoringParams) -> None:
    """precision@k, recall@k and the empty rate of the label set, for these settings and the active preset."""
    labeled = labeled_set(label_set)
    if labeled is None:
        st.info(f"The label set {label_set!r} is empty: mark results below (or `memctl labels import`) to see "
                "precision@k and recall@k for these settings.")
        return
    mine, theirs = labeled.evaluate(p), labeled.evaluate(active_params)
    st.subheader(f"On {len(labeled)} labeled queries ({label_set})")
    cols = st.columns(4)
    for col, (name, attr) in zip(cols, [("precision@k", "precision"), ("recall@k", "recall"),
                                        ("empty when nothing relevant", "empty_rate"), ("F0.5", "f_beta")]):
        a, b = getattr(mine, attr), getattr(theirs, attr)
        same = a != a or b != b or abs(a - b) < 0.0005  # no arrow for "no change"
        col.metric(name, fmt(a), None if same else f"{a - b:+.3f} vs {active_name}",
                   help=f"Active preset {active_name}: {fmt(b)}")
    tune_panel(labeled)


def tune_panel(labeled: tuning.LabeledSet) -> None:
    """Search settings on the label set (cross-validated), show the proposal beside the active preset."""
    with st.expander("Tune from labels", expanded="tune_result" in st.session_state):
        o, f, t = st.columns(3)
        objective = o.selectbox("Objective", OBJECTIVES, key="tune_objective",
                                help="F0.5 weighs precision above recall: an irrelevant memory is worse than none.")
        folds = f.number_input("Folds", min_value=2, max_value=10, value=5, key="tune_folds")
        trials = t.number_input("Random settings", min_value=10, max_value=2000, value=150, step=10,
                                key="tune_trials")
        if st.button("Tune from labels", key="tune_run"):
            with readable_errors():
                bar = st.progress(0.0, text="trying settings…")
                total, done = tuning.plan_size(int(trials), int(folds)), [0]

                def step(n: int) -> None:
                    done[0] += n
                    bar.progress(min(done[0] / total, 1.0), text=f"trying settings… {done[0]} of {total}")

                st.session_state["tune_result"] = tuning.tune(
                    labeled, active_params, objective=objective, folds=int(folds), trials=int(trials),
                    progress=step)
                st.session_state.pop("tune_proposal_saved", None)
                bar.progress(1.0, text="done")
        result = st.session_state.get("tune_result")
        if result is None:
            return
        st.write(f"{result.objective.name} on held-out folds: **proposal {result.cv_mean:.3f}** vs "
                 f"active `{active_name}` {result.cv_base_mean:.3f} ({len(result.folds)} folds, "
                 f"{result.queries} queries, {result.trials} settings tried)")
        metrics = ("precision", "recall", "empty_rate", "f_beta")
        rows = [{"": "proposal (held out)", **{m: getattr(result.held_out, m) for m in metrics}},
                {"": f"active {active_name}", **{m: getattr(result.held_out_base, m) for m in metrics}}]
        st.dataframe(pd.DataFrame(rows), hide_index=True, key="tune_result_scores")
        st.dataframe(pd.DataFrame([{"setting": k, f"active {active_name}": setting_text(getattr(result.base, k)),
                                    "proposal": setting_text(getattr(result.proposal, k))} for k in tuning.TUNED]),
                     hide_index=True, key="tune_result_params")
        if not result.changes:
            st.info(f"No setting beat the active preset {active_name!r} on these labels: keep it.")
            return
        name_col, save_col, act_col = st.columns([2, 1, 1])
        name = name_col.text_input("Preset name for the proposal", key="tune_proposal_name",
                                   value=f"tuned-{result.objective.name}")
        if save_col.button("Save as preset", key="tune_proposal_save", disabled=not name.strip()):
            with readable_errors():
                bank.save_preset(name.strip(), result.proposal, description=(
                    f"tuned for {result.objective.name} on {result.queries} labeled queries"))
                st.session_state["tune_proposal_saved"] = name.strip()
                flash(f"Saved the proposal as {name.strip()!r}. It is not active: agents still use "
                      f"{active_name!r} until you click Activate.")
                st.rerun()
        saved = st.session_state.get("tune_proposal_saved")
        if act_col.button("Activate", key="tune_proposal_activate", disabled=saved is None or saved == active_name,
                          help="Make the saved proposal the preset agents get by default."):
            with readable_errors():
                bank.set_active_preset(saved)
                flash(f"Preset {saved!r} is now active (was {active_name!r}).")
                st.rerun()


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
    replay_panel(p)


def replay_panel(p: ScoringParams) -> None:
    """Re-run the logged recalls of a date range under these settings, as what-ifs."""
    with st.expander("Replay the retrieval log under these settings"):
        today = datetime.now(timezone.utc).date()
        a, b = st.columns(2)
        since = a.date_input("From", value=today - timedelta(days=30), key="tune_replay_since")
        until = b.date_input("To", value=today, key="tune_replay_until")
        if not st.button("Replay", key="tune_replay_run"):
            return
        with readable_errors():
            report = tuning.replay(bank, p, since=datetime.combine(since, time.min, tzinfo=timezone.utc),
                                   until=datetime.combine(until, time.max, tzinfo=timezone.utc),
                                   namespace=namespace, label_set=label_set)
            c1, c2, c3, c4 = st.columns(4)
            c1.metric("recalls replayed", report.replayed, help=f"{report.skipped} the gate had declined are skipped.")
            c2.metric("results that change", report.changed)
            c3.metric("become empty", report.newly_empty)
            c4.metric("were empty, now return something", report.newly_nonempty)
            if report.labeled:
                metrics = ("precision", "recall", "empty_rate", "f_beta")
                st.write(f"On the {report.labeled} replayed recalls whose query is labeled ({label_set}):")
                st.dataframe(pd.DataFrame([
                    {"": "as logged", **{m: getattr(report.before, m) for m in metrics}},
                    {"": "these settings", **{m: getattr(report.after, m) for m in metrics}},
                    {"": "change", **report.deltas()}]), hide_index=True, key="tune_replay_metrics")
            else:
                st.caption("No replayed recall has labels in this set: no metric deltas.")
            changed_rows = [r for r in report.rows if set(r["before"]) != set(r["after"])]
            if changed_rows:
                st.dataframe(pd.DataFrame([{"when": r["recalled_at"], "query": r["query"],
                                            "logged": ", ".join(map(str, r["before"])) or "(empty)",
                                            "now": ", ".join(map(str, r["after"])) or "(empty)"}
                                           for r in changed_rows]), hide_index=True, key="tune_replay_rows")


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
