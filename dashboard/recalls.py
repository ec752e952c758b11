"""Recalls: the logged recalls, the best evidence of what memory does for an agent.

Filter them by namespace, dates, empty or not, preset and feedback (all in the URL); open one to
see every candidate with its score components against the recall's threshold, which of them the
agent received, the feedback it gave, and a link that opens the same query, moment and preset on
the Tune page. The candidates are ranked again here as a what-if (nothing is recorded) with the
recall's own settings and moment, from the bank as it is now; the logged scores sit beside them.
"""

from __future__ import annotations

from datetime import date, datetime, time, timedelta, timezone
from typing import Any

import pandas as pd
import streamlit as st

from memory_core import Hit, NotFoundError, ScoringParams, ValidationError, format_for_prompt
from dashboard.common import (bad_link, check_param, ensure_loaded, get_bank, id_column, memory_href,
                              namespace_picker, readable_errors)

LIMIT = 500  # the newest recalls read for the list; the filters narrow these
RESULTS = ("any", "empty", "not empty")
FEEDBACK = ("any", "helpful", "not helpful", "used a memory", "no feedback")
ANY_PRESET = "(any)"
CANDIDATES = 15
PARTS = ("similarity", "lexical", "recency", "importance", "frequency")


def when(dt: datetime | None) -> str:
    return "" if dt is None else f"{dt:%Y-%m-%d %H:%M:%S} UTC"


def day_bounds(picked: Any) -> tuple[datetime | None, datetime | None]:
    days = [d for d in (picked if isinstance(picked, (list, tuple)) else [picked]) if isinstance(d, date)]
    start = datetime.combine(days[0], time.min, tzinfo=timezone.utc) if days else None
    end = datetime.combine(days[-1], time.max, tzinfo=timezone.utc) if len(days) > 1 else None
    return start, end


def feedback_word(f: Any) -> str:
    if f is None:
        return ""
    parts = []
    if f.helpful is not None:
        parts.append("helpful" if f.helpful else "not helpful")
    if f.hits:
        parts.append(f"used {len(f.used_ids)} of {len(f.hits)}")
    return ", ".join(parts) or "given"


def keep(r: dict, f: Any, results: str, preset: str, feedback: str) -> bool:
    if results == "empty" and r["n_results"]:
        return False
    if results == "not empty" and not r["n_results"]:
        return False
    if preset != ANY_PRESET and (r.get("preset") or "") != preset:
        return False
    return {"any": True, "helpful": f is not None and f.helpful is True,
            "not helpful": f is not None and f.helpful is False,
            "used a memory": f is not None and bool(f.used_ids), "no feedback": f is None}[feedback]


def logged_params(r: dict) -> ScoringParams | None:
    try:
        return ScoringParams.from_dict(r["params"]) if r.get("params") else None
    except (ValidationError, TypeError, KeyError):
        return None


def detail(r: dict, f: Any) -> None:
    """One recall: the candidates against its threshold, what the agent received, its feedback."""
    st.subheader(f"Recall {r['id']}: “{(r.get('query') or '')[:120]}”")
    st.caption(f"{when(r['recalled_at'])} · namespace {r['namespace']} · preset {r.get('preset') or '(own settings)'} · "
               f"{r['n_results']} returned · {r['latency_ms'] or 0:.0f} ms · by {r.get('actor') or '?'}")
    p = logged_params(r)
    received = {h["memory_id"]: h for h in r["hits"]}
    presets = bank.presets()
    link: dict[str, str] = {"ns": r["namespace"], "tune_query": r.get("query") or "",
                            "tune_as_of": r["recalled_at"].date().isoformat(),
                            "at": r["recalled_at"].isoformat()}
    name = r.get("preset")
    if name in presets:
        link["tune_preset"] = name
    st.page_link("dashboard/tune.py", label="Open in Tune (same query, moment and preset)", icon="🎚️",
                 query_params=link)
    if name in presets and p is not None and presets[name] != p:
        st.caption(f"The preset {name} was changed after this recall: Tune starts from its settings of today.")
    if p is None:
        st.warning("This recall logged no settings: its candidates cannot be ranked again.")
        return
    ensure_loaded(bank, r["namespace"])
    hits: list[Hit] = bank.recall(r.get("query") or "", namespace=r["namespace"],
                                  params=p.replace(threshold=0.0, k=max(p.k, CANDIDATES)),
                                  now=r["recalled_at"], record=False)
    held = bank.calibrated(p, r.get("query") or "")  # the threshold the question's language holds it to
    rows = []
    for h in hits:
        in_ = h.score >= held.threshold and h.rank <= p.k
        logged = received.get(h.memory.id)
        rows.append({"id": memory_href(h.memory.id), "rank": h.rank, "score": round(h.score, 3),
                     "vs threshold": f"{'in' if in_ else 'out'} ({h.score - held.threshold:+.3f})",
                     **{k: round(float(h.components.get(k, 0.0)), 3) for k in PARTS},
                     "received": "yes" if logged else "no",
                     "logged score": None if logged is None or logged.get("score") is None else round(logged["score"], 3),
                     "text": h.memory.text or "(erased)"})
    st.markdown(f"**Candidates** against the threshold **{held.threshold:.2f}** and k = {p.k} "
                f"(weights α {p.alpha:g} · β {p.beta:g} · γ {p.gamma:g} · δ {p.delta:g}, divided by their sum)")
    if rows:
        st.dataframe(pd.DataFrame(rows), hide_index=True, width="stretch", key="recall_candidates",
                     column_config={"id": id_column(), "text": st.column_config.TextColumn(width="large")})
    gone = [i for i in received if i not in {h.memory.id for h in hits}]
    if gone:
        st.caption("Received then, not a candidate now (forgotten or changed since): "
                   + ", ".join(f"[#{i}]({memory_href(i)})" for i in gone))
    st.markdown("**What the agent received**")
    if not received:
        st.caption("Nothing: no memory cleared the threshold (an empty recall is a correct answer when nothing fits).")
    else:
        try:
            memories = bank.get_many(list(received))
        except NotFoundError:
            memories = {}
        given = [Hit(memory=memories[i], score=float(h["score"] or 0.0), components={}, rank=h["rank"])
                 for i, h in received.items() if i in memories]
        st.markdown("Received, in rank order: " + " · ".join(f"[#{i}]({memory_href(i)})" for i in received))
        st.code(format_for_prompt(given, now=r["recalled_at"]), language=None, wrap_lines=True)
    st.markdown("**Feedback**")
    if f is None:
        st.caption("No feedback was recorded for this recall.")
    else:
        st.write(f"{feedback_word(f)} · given {when(f.given_at)}"
                 + (f" · used {', '.join(f'#{i}' for i in f.used_ids)}" if f.used_ids else ""))
        if f.answer:
            st.text(f"Answer: {f.answer[:600]}")


bank = get_bank()
st.title("Recalls")
st.caption("What agents asked and what memory gave them. Filters and the open recall live in the URL.")

with readable_errors():
    namespace = namespace_picker(bank, key="recalls_namespace", allow_all=True,
                                 empty="Recalls appear here once an agent recalls memories.")
    for name, options in (("results", RESULTS), ("feedback", FEEDBACK)):
        check_param(name, lambda raw, o=options: raw in o, f"one of {', '.join(options)}")
    check_param("dates", lambda raw: all(date.fromisoformat(x.strip().strip("'\"")) for x in
                                         raw.strip("[]()").split(",") if x.strip()), "one or two days")
    c1, c2, c3, c4 = st.columns([2, 1, 1, 1])
    since, until = day_bounds(c1.date_input("Dates (UTC)", value=(), key="dates", bind="query-params",
                                            help="leave empty for every day"))
    results = c2.selectbox("Results", RESULTS, key="results", bind="query-params")
    feedback = c3.selectbox("Feedback", FEEDBACK, key="feedback", bind="query-params")
    logged = bank.retrievals(namespace, limit=LIMIT, since=since, until=until)
    seen = sorted({r.get("preset") or "" for r in logged} - {""})
    check_param("preset", lambda raw: raw in seen, "a preset these recalls used"
                + (f" ({', '.join(seen)})" if seen else ""))
    preset = c4.selectbox("Preset", [ANY_PRESET, *seen], key="preset", bind="query-params")
    feedbacks = ({f.retrieval_id: f for f in bank.feedback_log(namespace, since=min(r["recalled_at"] for r in logged))}
                 if logged else {})
    shown = [r for r in logged if keep(r, feedbacks.get(r["id"]), results, preset, feedback)]
    st.caption(f"**{len(shown):,}** of the {len(logged):,} newest logged recalls"
               + (f" (at most {LIMIT}: narrow the dates for older ones)" if len(logged) == LIMIT else "")
               + f" · {sum(1 for r in shown if not r['n_results']):,} empty")
    rows = [{"recall": r["id"], "when": f"{r['recalled_at']:%Y-%m-%d %H:%M}", "namespace": r["namespace"],
             "query": r.get("query") or "", "preset": r.get("preset") or "", "returned": r["n_results"],
             "ms": round(r["latency_ms"] or 0.0, 1), "feedback": feedback_word(feedbacks.get(r["id"]))}
            for r in shown]
    picked_id: int | None = None
    if rows:
        event = st.dataframe(pd.DataFrame(rows), hide_index=True, width="stretch", key="recalls_table",
                             on_select="rerun", selection_mode="single-row", height=min(len(rows), 12) * 35 + 40,
                             column_config={"recall": st.column_config.NumberColumn(width=56),
                                            "when": st.column_config.TextColumn("when (UTC)", width=128),
                                            "namespace": st.column_config.TextColumn(width=80),
                                            "query": st.column_config.TextColumn(width=200),
                                            "preset": st.column_config.TextColumn(width=90),
                                            "returned": st.column_config.NumberColumn(width=70),
                                            "ms": st.column_config.NumberColumn(width=60),
                                            "feedback": st.column_config.TextColumn(width=100)})
        picked = list(getattr(getattr(event, "selection", None), "rows", []) or [])
        if picked and picked[0] < len(shown):
            picked_id = shown[picked[0]]["id"]
    else:
        st.info("No logged recall matches these filters.")

    typed = st.text_input("Open recall by id", key="id", bind="query-params", placeholder="select a row, or type an id")
    if picked_id is not None:
        chosen: int | None = picked_id
    elif (typed or "").strip():
        try:
            chosen = int(typed.strip())
        except ValueError:
            bad_link(f"`id={typed.strip()[:40]}` is not a recall id (a whole number).")
            chosen = None
    else:
        chosen = None
    if chosen is not None:
        r = next((r for r in logged if r["id"] == chosen), None)
        if r is None:  # outside the filters or the newest LIMIT: read it on its own
            r = next((x for x in bank.retrievals(None, limit=None) if x["id"] == chosen), None)
        if r is None:
            bad_link(f"there is no logged recall {chosen} in this bank.")
        else:
            st.divider()
            f = feedbacks.get(r["id"]) or next((x for x in bank.feedback_log(r["namespace"], since=r["recalled_at"],
                                                                             until=r["recalled_at"] + timedelta(seconds=1))
                                                if x.retrieval_id == r["id"]), None)
            detail(r, f)
