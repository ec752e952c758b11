"""Browse: find memories, act on a selection, export the view, add by hand.

Every filter lives in the URL (each widget is bound to a query parameter named by its key), so a
reload or a copied link shows the same view; a value the page cannot use is named on the page.
Each memory id links to the memory's own page, where it is read, edited, forgotten or undone.
Texts are always shown as plain text (dataframe cells), never as markdown or HTML: memories come
from conversations and may contain markup.
"""

from __future__ import annotations

import json
import math
from datetime import date, datetime, time, timedelta, timezone

import pandas as pd
import streamlit as st

from memory_core import CATEGORIES, DURABILITIES, KINDS, LANGUAGES, ORDERS, STATUSES, TIERS
from memory_core.index.scoring import COLD_DAYS, HOT_DAYS
from dashboard.common import (check_choice_param, check_param, ensure_loaded, get_bank, id_column, linked_select,
                              memory_href, namespace_picker, readable_errors)

PAGE_SIZES = (25, 50, 100, 200)
PAGE_SIZE = 50
ANY = "(any)"
DATE_MIN, DATE_MAX = date(1970, 1, 1), date(2100, 12, 31)  # imported memories may be old
PINNED = {"any": None, "pinned": True, "not pinned": False}

bank = get_bank()
st.title("Browse memories")


def flash(message: str, undo: int | None = None) -> None:
    """Remember a success message (and the operation its Undo reverts) for the next run, then rerun
    so every table shows the change."""
    st.session_state["browse_flash"] = message
    st.session_state["browse_undo"] = undo
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


def row_of(m, score: float | None = None, link: bool = False) -> dict:
    row = {} if score is None else {"score": round(score, 3)}
    row.update({"id": memory_href(m.id) if link else m.id, "text": m.text if m.text is not None else "(erased)", "namespace": m.namespace,
                "category": m.category, "kind": m.kind, "durability": m.durability,
                "importance": round(m.importance, 3),
                "status": m.status, "pinned": m.pinned,
                # the table shows the day (its width fits 1,280 px); an export keeps the time
                "created": f"{m.created_at:%Y-%m-%d}" if link else when(m.created_at),
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


def counted(counts: dict[str, int]):
    """A facet's option label: the value and how many memories of the namespace have it."""
    return lambda v: v if v == ANY else f"{v} ({counts.get(v, 0):,})"


def valid_range(raw: str) -> bool:
    """An importance range as the URL holds it: two numbers in [0, 1], low first."""
    lo, hi = (float(x) for x in raw.strip("[]()").split(","))
    return 0 <= lo <= hi <= 1


def valid_days(raw: str) -> bool:
    """A date range as the URL holds it: one or two ISO days."""
    days = [date.fromisoformat(x.strip().strip("'\"")) for x in raw.strip("[]()").split(",") if x.strip()]
    return 1 <= len(days) <= 2


def bulk_actions(ids: list[int], by_id: dict) -> None:
    """Act on the selected rows: forget or restore them, set their importance, category or
    durability; each one operation, undone as a whole from the Activity page or right here."""
    active = [i for i in ids if by_id[i].status == "active"]
    archived = [i for i in ids if by_id[i].status == "archived"]
    box = st.container(border=True)
    box.markdown(f"**{len(ids)} selected**: " + " ".join(f"[#{i}]({memory_href(i)})" for i in ids[:12])
                 + (" …" if len(ids) > 12 else ""))
    c1, c2, c3, c4, c5 = box.columns(5)
    if active and c1.button(f"Forget {len(active)}", key="bulk_forget", help="Archive: kept, never recalled, undoable"):
        with readable_errors():
            group = bank.forget_many(active)
            flash(f"Archived {len(active)} memories (restorable; operation {group}).", undo=group)
    if archived and c2.button(f"Restore {len(archived)}", key="bulk_restore"):
        with readable_errors():
            group = bank.restore_many(archived)
            flash(f"Restored {len(archived)} memories (operation {group}).", undo=group)
    importance = c3.number_input("Set importance", 0.0, 1.0, 0.5, 0.05, key="bulk_importance")
    if active and c3.button(f"Set importance of {len(active)}", key="bulk_set_importance"):
        with readable_errors():
            group = bank.update_many(active, importance=float(importance))
            flash(f"Set the importance of {len(active)} memories to {importance:.2f} (operation {group}).",
                  undo=group)
    category_new = c4.selectbox("Set category", CATEGORIES, key="bulk_category")
    if active and c4.button(f"Set category of {len(active)}", key="bulk_set_category"):
        with readable_errors():
            group = bank.update_many(active, category=category_new)
            flash(f"Set the category of {len(active)} memories to {category_new} (operation {group}).",
                  undo=group)
    durability_new = c5.selectbox("Set durability", DURABILITIES, key="bulk_durability",
                                  help="durable: never expired for age or disuse; transient: expired once its "
                                       "time has passed")
    if active and c5.button(f"Set durability of {len(active)}", key="bulk_set_durability"):
        with readable_errors():
            group = bank.update_many(active, durability=durability_new)
            flash(f"Set the durability of {len(active)} memories to {durability_new} (operation {group}).",
                  undo=group)


def undo_last() -> None:
    """The Undo of the last bulk action, shown with its confirmation until the next one."""
    group = st.session_state.get("browse_undo")
    if group is None:
        return
    if st.button(f"Undo operation {group}", key="browse_undo_button"):
        with readable_errors():
            bank.undo_group(group)
            st.session_state.pop("browse_undo", None)
            flash(f"Undid operation {group}.")


if msg := st.session_state.pop("browse_flash", None):
    st.success(msg)
undo_last()


with readable_errors():
    if not bank.namespaces():
        st.info("This bank has no memories yet: add one below, or import with `memctl import`.")
        add_form("default")
        st.stop()

    # -- filters: each bound to the URL; a bad value in a link is named, then ignored ----------------
    namespace = namespace_picker(bank, key="browse_namespace", allow_all=True)
    stats = bank.stats(namespace)
    for name, options, noun in (("sort", ORDERS, "sort order"), ("pinned", list(PINNED), "pinned choice"),
                                ("size", PAGE_SIZES, "page size")):
        check_choice_param(name, options, noun)
    check_param("importance", valid_range, "two numbers from 0 to 1, low first, such as 0.5,1")
    for name in ("created", "used"):
        check_param(name, valid_days, "one or two days, such as 2025-01-01,2025-12-31")
    check_param("page", lambda raw: int(raw) >= 1, "a page number from 1")

    s1, s2 = st.columns(2)
    contains = s1.text_input("Text contains", key="text", bind="query-params", live="400ms",
                             placeholder="plain text, case-insensitive; applies as you type")
    query = s2.text_input("Semantic search (what-if: records nothing)", key="q", bind="query-params",
                          live="600ms", placeholder="what kind of food do I like?")
    f1, f2, f3, f4, f5, f6 = st.columns(6)
    status = linked_select(f1, "Status", list(STATUSES) + [ANY], "status", noun="status",
                           format_func=counted({**stats["by_status"], ANY: stats["total"]}))
    kind = linked_select(f2, "Kind", [ANY, *KINDS], "kind", noun="kind", format_func=counted(stats["by_kind"]),
                         help="counts: active memories")
    category = linked_select(f3, "Category", [ANY, *CATEGORIES], "category", noun="category",
                             format_func=counted(stats["by_category"]), help="counts: active memories")
    tier = linked_select(f4, "Tier", [ANY, *TIERS], "tier", noun="tier", format_func=counted(stats["by_tier"]),
                         help=f"hot: touched in the last {HOT_DAYS:g} days; warm: {HOT_DAYS:g}-{COLD_DAYS:g} days; "
                              "cold: longer ago (counts: active memories)")
    language = linked_select(f5, "Language", [ANY, *LANGUAGES], "lang", noun="language",
                             format_func=counted(stats["by_language"]),
                             help="read from each memory's text when it is written (counts: active memories)")
    order = f6.selectbox("Sort by", ORDERS, key="sort", bind="query-params")
    with st.expander("More filters: importance, dates, pinned, durability"):
        r1, r2, r3, r4, r5 = st.columns(5)
        imp_lo, imp_hi = r1.slider("Importance", 0.0, 1.0, (0.0, 1.0), 0.05, key="importance", bind="query-params")
        imp_lo, imp_hi = round(float(imp_lo), 2), round(float(imp_hi), 2)  # no float noise from the slider steps
        created_after, created_before = day_bounds(r2.date_input("Created between", value=(), key="created",
                                                                 bind="query-params", min_value=DATE_MIN,
                                                                 max_value=DATE_MAX, help="leave empty for no bound"))
        used_after, used_before = day_bounds(r3.date_input("Last used between", value=(), key="used",
                                                           bind="query-params", min_value=DATE_MIN,
                                                           max_value=DATE_MAX, help="leave empty for no bound"))
        pinned = r4.selectbox("Pinned", list(PINNED), key="pinned", bind="query-params")
        durability = linked_select(r5, "Durability", [ANY, *DURABILITIES], "durability", noun="durability",
                                   format_func=counted(stats.get("by_durability", {})),
                                   help="durable: never expired for age or disuse alone; transient: expired by "
                                        "maintenance once its time has passed (counts: active memories)")
    filters = dict(namespace=namespace, status=None if status == ANY else status,
                   kind=None if kind == ANY else kind, category=None if category == ANY else category,
                   language=None if language == ANY else language,
                   durability=None if durability == ANY else durability,
                   contains=(contains or "").strip() or None, pinned=PINNED[pinned],
                   min_importance=imp_lo if imp_lo > 0 else None, max_importance=imp_hi if imp_hi < 1 else None,
                   created_after=created_after, created_before=created_before,
                   used_after=used_after, used_before=used_before, tier=None if tier == ANY else tier)

    # -- the table --------------------------------------------------------------------------
    semantic = bool((query or "").strip())
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
            rows = [row_of(h.memory, h.score, link=True) for h in hits]
            st.caption(f"{len(hits)} active memories ranked by recall score (threshold 0, top 50; "
                       "the sort order does not apply).")
    else:
        total = bank.count(**filters)
        p1, p2, p3 = st.columns([1, 4, 3])
        size = p1.selectbox("Page size", PAGE_SIZES, index=PAGE_SIZES.index(PAGE_SIZE), key="size",
                            bind="query-params")
        n_pages = max(1, math.ceil(total / size))
        with p3:
            page_no = st.pagination(n_pages, key="page", bind="query-params", width="stretch")
        page_no = min(int(page_no or 1), n_pages)  # the filters may have shrunk the page count
        shown = bank.memories(**filters, order=order, limit=size, offset=(page_no - 1) * size)
        rows = [row_of(m, link=True) for m in shown]
        first = (page_no - 1) * size
        p2.caption(f"**{total:,}** matching memories · showing {first + 1 if shown else 0}–{first + len(shown)} "
                   f"· page {page_no} of {n_pages}")

    df = pd.DataFrame(rows)
    selected_ids: list[int] = []
    if rows:
        # Widths in pixels that fit every column in the main area of a 1,280 px window (the sidebar open).
        many = namespace is None
        event = st.dataframe(
            df, hide_index=True, width="stretch", key="browse_table", on_select="rerun",
            selection_mode="multi-row", height=min(len(rows), 20) * 35 + 38,
            column_order=[c for c in df.columns if c != "namespace" or many],
            column_config={"id": id_column(), "score": st.column_config.NumberColumn(width=52, format="%.3f"),
                           "text": st.column_config.TextColumn("text", width=110 if many else 180),
                           "namespace": st.column_config.TextColumn("ns", width=70),
                           "category": st.column_config.TextColumn(width=80),
                           "kind": st.column_config.TextColumn(width=58),
                           "durability": st.column_config.TextColumn(
                               "lasts", width=56, help="durability: durable (never expired for age or disuse "
                                                       "alone) or transient; set it on a selection below"),
                           "importance": st.column_config.NumberColumn("imp.", width=46, format="%.2f"),
                           "status": st.column_config.TextColumn(width=64),
                           "pinned": st.column_config.CheckboxColumn("pin", width=36),
                           "created": st.column_config.TextColumn(width=84, help="day created (UTC); the time is on "
                                                                                 "the memory's page"),
                           "recalled": st.column_config.NumberColumn(width=58, help="recalls that returned it"),
                           "used": st.column_config.NumberColumn(width=44, help="recalls whose answer used it")})
        picked = list(getattr(getattr(event, "selection", None), "rows", []) or [])
        selected_ids = [shown[i].id for i in picked if i < len(shown)]
    else:
        st.write("No memory matches these filters.")

    # -- selection: bulk actions and exports --------------------------------------------------
    by_id = {m.id: m for m in shown}
    if selected_ids:
        bulk_actions(selected_ids, by_id)
    else:
        st.caption("Select rows (the boxes at the left) to forget, restore or re-grade them together (importance, "
                   "category, durability); "
                   "click an id to open the memory.")
    # The export is built when a button is pressed (Streamlit calls ``data`` then), not on every rerun.
    n_export = len(shown) if semantic else total
    if n_export:
        def view() -> list:
            return shown if semantic else bank.memories(**filters, order=order, limit=None)

        b1, b2 = st.columns(2)
        b1.download_button(f"Export this view as CSV ({n_export:,})", key="export_csv", mime="text/csv",
                           file_name="memories.csv", on_click="ignore",
                           data=lambda: pd.DataFrame([row_of(m) for m in view()]).to_csv(index=False))
        b2.download_button(f"Export this view as JSONL ({n_export:,})", key="export_jsonl",
                           mime="application/jsonl", file_name="memories.jsonl", on_click="ignore",
                           data=lambda: "".join(json.dumps({k: v for k, v in m.to_dict().items()
                                                            if k != "content_hash"}, ensure_ascii=False) + "\n"
                                                for m in view()))

    st.divider()
    add_form(namespace or "default")
