"""Browse: find, inspect, edit, delete, restore, add and export memories.

Texts are always shown as plain text (st.code / dataframe cells), never as markdown or HTML:
memories come from conversations and may contain markup.
"""

from __future__ import annotations

import json
import math
from datetime import date, datetime, time, timedelta, timezone

import pandas as pd
import streamlit as st

from memory_core import CATEGORIES, KINDS, ORDERS, STATUSES, TIERS
from memory_core.index.scoring import COLD_DAYS, HOT_DAYS
from dashboard.common import configured_password, ensure_loaded, get_bank, namespace_picker, password_matches, readable_errors

PAGE_SIZE = 50
ANY = "(any)"
DATE_MIN, DATE_MAX = date(1970, 1, 1), date(2100, 12, 31)  # imported memories may be old
PINNED = {"any": None, "pinned": True, "not pinned": False}

bank = get_bank()
st.title("Browse memories")


def flash(message: str) -> None:
    """Remember a success message for the next run, then rerun so every table shows the change."""
    st.session_state["browse_flash"] = message
    st.rerun()


def when(dt) -> str:
    return "" if dt is None else f"{dt:%Y-%m-%d %H:%M}"


def day_bounds(picked) -> tuple[datetime | None, datetime | None]:
    """A date_input range → (start of the first day, end of the last day) in UTC; missing ends are None.

    An empty range means no bound; a single picked day (a range still being chosen) bounds the start only.
    """
    days = [d for d in (picked if isinstance(picked, (list, tuple)) else [picked]) if isinstance(d, date)]
    start = datetime.combine(days[0], time.min, tzinfo=timezone.utc) if days else None
    end = (datetime.combine(days[1], time.min, tzinfo=timezone.utc) + timedelta(days=1) - timedelta(microseconds=1)
           if len(days) > 1 else None)
    return start, end


def row_of(m, score: float | None = None) -> dict:
    row = {} if score is None else {"score": round(score, 3)}
    row.update({"id": m.id, "text": m.text if m.text is not None else "(erased)", "namespace": m.namespace,
                "category": m.category, "kind": m.kind, "importance": round(m.importance, 3),
                "status": m.status, "pinned": m.pinned, "created": when(m.created_at),
                # recalled: recalls that returned it; used: those whose answer used it (feedback)
                "recalled": m.access_count, "used": m.use_count})
    return row


def add_form(default_namespace: str) -> None:
    with st.expander("Add a memory by hand", expanded=False):
        with st.form("add_form", clear_on_submit=False):
            text = st.text_area("Text", key="add_text", placeholder="Prefers vegetarian food")
            c1, c2, c3, c4 = st.columns(4)
            namespace = c1.text_input("Namespace", value=default_namespace, key=f"add_namespace::{default_namespace}")
            importance = c2.number_input("Importance", 0.0, 1.0, 0.5, 0.05, key="add_importance")
            kind = c3.selectbox("Kind", KINDS, key="add_kind")
            category = c4.selectbox("Category", CATEGORIES, index=CATEGORIES.index("other"), key="add_category")
            if st.form_submit_button("Add memory"):
                with readable_errors():
                    mid = bank.add(text, namespace=namespace.strip(), importance=float(importance),
                                   kind=kind, category=category)
                    flash(f"Added memory #{mid} to {namespace.strip()}.")


if msg := st.session_state.pop("browse_flash", None):
    st.success(msg)

with readable_errors():
    if not bank.namespaces():
        st.info("This bank has no memories yet: add one below, or import with `memctl import`.")
        add_form("default")
        st.stop()

    # -- filters ----------------------------------------------------------------------------
    namespace = namespace_picker(bank, key="browse_namespace", allow_all=True)
    f1, f2, f3 = st.columns(3)
    status = f1.selectbox("Status", list(STATUSES) + [ANY], key="browse_status")
    kind = f2.selectbox("Kind", [ANY, *KINDS], key="browse_kind")
    category = f3.selectbox("Category", [ANY, *CATEGORIES], key="browse_category")
    s1, s2 = st.columns(2)
    contains = s1.text_input("Text contains", key="browse_contains", placeholder="plain text, case-insensitive")
    query = s2.text_input("Semantic search (what-if: records nothing)", key="browse_query",
                          placeholder="what kind of food do I like?")
    r1, r2, r3 = st.columns(3)
    imp_lo, imp_hi = r1.slider("Importance", 0.0, 1.0, (0.0, 1.0), 0.05, key="browse_importance")
    imp_lo, imp_hi = round(float(imp_lo), 2), round(float(imp_hi), 2)  # no float noise from the slider steps
    created_after, created_before = day_bounds(r2.date_input("Created between", value=(), key="browse_created",
                                                             min_value=DATE_MIN, max_value=DATE_MAX,
                                                             help="leave empty for no bound"))
    used_after, used_before = day_bounds(r3.date_input("Last used between", value=(), key="browse_used",
                                                       min_value=DATE_MIN, max_value=DATE_MAX,
                                                       help="leave empty for no bound"))
    o1, o2, o3 = st.columns(3)
    pinned = o1.selectbox("Pinned", list(PINNED), key="browse_pinned")
    tier = o2.selectbox("Tier", [ANY, *TIERS], key="browse_tier",
                        help=f"hot: touched in the last {HOT_DAYS:g} days; warm: {HOT_DAYS:g}-{COLD_DAYS:g} days; "
                             "cold: longer ago")
    order = o3.selectbox("Sort by", ORDERS, key="browse_order")
    filters = dict(namespace=namespace, status=None if status == ANY else status,
                   kind=None if kind == ANY else kind, category=None if category == ANY else category,
                   contains=contains.strip() or None, pinned=PINNED[pinned],
                   min_importance=imp_lo if imp_lo > 0 else None, max_importance=imp_hi if imp_hi < 1 else None,
                   created_after=created_after, created_before=created_before,
                   used_after=used_after, used_before=used_before, tier=None if tier == ANY else tier)

    # -- the table --------------------------------------------------------------------------
    semantic = bool(query.strip())
    if semantic:
        if namespace is None:
            st.warning("Semantic search works within one namespace: pick one above.")
            shown, rows = [], []
        else:
            ensure_loaded(bank, namespace)
            hits = bank.recall(query, namespace=namespace, record=False, threshold=0, k=50)
            # recall sees active memories only; the other filters apply to its hits, as the bank filters.
            narrowing = {k: v for k, v in filters.items() if k not in ("namespace", "status") and v is not None}
            if narrowing and hits:
                kept = {m.id for m in bank.memories(namespace, status="active", limit=None, **narrowing)}
                hits = [h for h in hits if h.memory.id in kept]
            shown = [h.memory for h in hits]
            rows = [row_of(h.memory, h.score) for h in hits]
            st.caption(f"{len(hits)} active memories ranked by recall score (threshold 0, top 50; "
                       "the sort order does not apply).")
    else:
        total = bank.count(**filters)
        n_pages = max(1, math.ceil(total / PAGE_SIZE))
        p1, p2 = st.columns([1, 4])
        page_no = p1.selectbox("Page", list(range(1, n_pages + 1)), key="browse_page")
        page_no = min(int(page_no or 1), n_pages)  # the filters may have shrunk the page count
        shown = bank.memories(**filters, order=order, limit=PAGE_SIZE, offset=(page_no - 1) * PAGE_SIZE)
        rows = [row_of(m) for m in shown]
        first = (page_no - 1) * PAGE_SIZE
        p2.caption(f"{total} matching memories · showing {first + 1 if shown else 0}–{first + len(shown)}")

    df = pd.DataFrame(rows)
    selected_ids: list[int] = []
    if rows:
        event = st.dataframe(df, hide_index=True, width="stretch", key="browse_table",
                             on_select="rerun", selection_mode="multi-row")
        picked = list(getattr(getattr(event, "selection", None), "rows", []) or [])
        selected_ids = [int(df["id"].iloc[i]) for i in picked if i < len(df)]
    else:
        st.write("No memory matches these filters.")

    # -- selection: bulk actions and exports --------------------------------------------------
    by_id = {m.id: m for m in shown}
    b1, b2, b3 = st.columns(3)
    active_selected = [i for i in selected_ids if by_id.get(i) and by_id[i].status == "active"]
    if active_selected and b1.button(f"Archive {len(active_selected)} selected", key="bulk_forget"):
        with readable_errors():
            bank.forget_many(active_selected)
            flash(f"Archived {len(active_selected)} memories (restorable).")
    export = shown if semantic else bank.memories(**filters, order=order, limit=None)
    if export:
        b2.download_button("Export filtered set as CSV", key="export_csv", mime="text/csv",
                           file_name="memories.csv",
                           data=pd.DataFrame([row_of(m) for m in export]).to_csv(index=False))
        b3.download_button("Export filtered set as JSONL", key="export_jsonl", mime="application/jsonl",
                           file_name="memories.jsonl",
                           data="".join(json.dumps({k: v for k, v in m.to_dict().items() if k != "content_hash"},
                                                   ensure_ascii=False) + "\n" for m in export))

    # -- detail view ------------------------------------------------------------------------
    st.divider()
    options = selected_ids or [m.id for m in shown]
    if options:
        label = {m.id: (m.text or "(erased)") for m in shown}
        mid = st.selectbox("Details of", options, key="browse_detail",
                           format_func=lambda i: f"#{i} · {label.get(i, '')[:70]}")
        m = bank.get(mid)
        st.subheader(f"Memory #{m.id}")
        st.code(m.text if m.text is not None else "(text erased by a hard delete)", language=None, wrap_lines=True)
        fields = {k: v for k, v in m.to_dict().items() if k != "text"}
        st.dataframe(pd.DataFrame({"field": list(fields), "value": ["" if v is None else str(v) for v in fields.values()]}),
                     hide_index=True, key="detail_fields")
        n_conf = len(bank.conflicts(status="open", memory_id=m.id))
        if n_conf:
            st.caption(f"This memory is part of {n_conf} open conflict(s).")

        a1, a2 = st.columns(2)
        if m.status == "active":
            if a1.button("Unpin" if m.pinned else "Pin", key=f"pin_{m.id}"):
                with readable_errors():
                    bank.update(m.id, pinned=not m.pinned)
                    flash(f"{'Unpinned' if m.pinned else 'Pinned'} memory #{m.id}.")
            if a2.button("Soft delete (archive)", key=f"forget_{m.id}"):
                with readable_errors():
                    bank.forget(m.id)
                    flash(f"Archived memory #{m.id}: it is no longer recalled; restore it any time.")
        elif m.status == "archived":
            if a2.button("Restore", key=f"restore_{m.id}"):
                with readable_errors():
                    bank.restore(m.id)
                    flash(f"Restored memory #{m.id}.")

        if m.status != "deleted":
            with st.expander("Edit", expanded=False):
                with st.form(f"edit_form_{m.id}"):
                    text = st.text_area("Text", value=m.text, key=f"edit_text_{m.id}")
                    e1, e2, e3 = st.columns(3)
                    importance = e1.number_input("Importance", 0.0, 1.0, float(m.importance), 0.05,
                                                 key=f"edit_importance_{m.id}")
                    category_new = e2.selectbox("Category", CATEGORIES, index=CATEGORIES.index(m.category),
                                                key=f"edit_category_{m.id}")
                    kind_new = e3.selectbox("Kind", KINDS, index=KINDS.index(m.kind), key=f"edit_kind_{m.id}")
                    if st.form_submit_button("Save changes"):
                        changes = {}
                        if text != m.text:
                            changes["text"] = text
                        if abs(float(importance) - m.importance) > 1e-9:
                            changes["importance"] = float(importance)
                        if category_new != m.category:
                            changes["category"] = category_new
                        if kind_new != m.kind:
                            changes["kind"] = kind_new
                        if not changes:
                            st.info("Nothing changed.")
                        else:
                            with readable_errors():
                                bank.update(m.id, **changes)
                                flash(f"Updated {', '.join(changes)} of memory #{m.id}.")

            with st.expander("Delete forever", expanded=False):
                st.warning(f"Hard delete erases memory #{m.id} for good: its text (below), its vector "
                           "and its content are removed from the file; its history keeps only the id and a "
                           "content hash. This cannot be undone (a soft delete can).")
                st.text((m.text or "")[:80])  # plain text: a warning box would render the memory's markdown
                confirm = st.text_input(f"Type the memory id {m.id} to confirm", key=f"hard_confirm_{m.id}")
                # On a dashboard guarded by a password, erasing for good asks for it again.
                again = (st.text_input("Password again", type="password", key=f"hard_password_{m.id}")
                         if configured_password() else None)
                if st.button("Delete forever", key=f"hard_delete_{m.id}", type="primary"):
                    if confirm.strip() != str(m.id):
                        st.error(f"Type {m.id} in the box to confirm: nothing was deleted.")
                    elif again is not None and not password_matches(again):
                        st.error("Wrong password: nothing was deleted.")
                    else:
                        with readable_errors():
                            bank.forget(m.id, hard=True)
                            flash(f"Memory #{m.id} was deleted forever.")

        st.markdown("**Recall log**")
        log = [{"when": when(r["recalled_at"]), "query": r.get("query") or "",
                "rank": h["rank"], "score": None if h.get("score") is None else round(h["score"], 3)}
               for r in bank.retrievals(memory_id=m.id, limit=50) for h in r["hits"] if h["memory_id"] == m.id]
        if log:
            st.caption(f"The {len(log)} most recent logged recall(s) that returned this memory (at most 50).")
            st.dataframe(pd.DataFrame(log), hide_index=True, width="stretch", key="detail_recalls")
        else:
            st.caption("This memory was never recalled yet.")

        st.markdown("**History**")
        events = bank.history(m.id)
        st.dataframe(pd.DataFrame([{
            "at": when(e.at), "actor": e.actor, "action": e.action, "note": e.note or "",
            "before": json.dumps(e.before, ensure_ascii=False, default=str) if e.before else "",
            "after": json.dumps(e.after, ensure_ascii=False, default=str) if e.after else "",
        } for e in events]), hide_index=True, width="stretch", key="detail_history")

    st.divider()
    add_form(namespace or "default")
