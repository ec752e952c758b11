"""One memory's page (``./memory?id=N``): what it says, where it stands, what happened to it.

Every memory id shown elsewhere links here. The page shows the text (as plain text: memories may
hold markup), the fields, the tier, the history with the memory's own dates and a before/after
of the fields that changed, its conflicts, the merges it took part in, the recalls that returned
it with their feedback, and the actions: edit, pin, forget, restore, and undo of a past change.
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

import pandas as pd
import streamlit as st

from memory_core import CATEGORIES, DURABILITIES, KINDS, Event, Memory, NotFoundError
from memory_core.language.durability import infer as infer_durability
from memory_core.index.scoring import COLD_DAYS, HOT_DAYS, tier_of
from dashboard.common import bad_link, configured_password, get_bank, memory_link, password_matches, readable_errors

FLASH = "memory_flash"
SKIP = {"text", "content_hash", "context"}  # shown on their own, or not worth a row


def when(dt: datetime | None) -> str:
    return "" if dt is None else f"{dt:%Y-%m-%d %H:%M} UTC"


def flash(message: str) -> None:
    """Show ``message`` after the rerun that redraws the memory as it now is."""
    st.session_state[FLASH] = message
    st.rerun()


def shown(value: Any) -> str:
    """A field's value as an operator reads it: short, no JSON quoting."""
    if value is None:
        return "—"
    if isinstance(value, float):
        return f"{value:.3g}"
    text = str(value)
    return text if len(text) <= 160 else text[:157] + "…"


def changes(e: Event) -> str:
    """The fields an event changed, as ``field: before → after`` lines."""
    before, after = e.before or {}, e.after or {}
    keys = [k for k in dict.fromkeys([*before, *after]) if k not in ("content_hash", "embedding", "updated_at")
            and before.get(k) != after.get(k)]
    if not before and after:
        return "created" if e.action == "add" else ", ".join(f"{k}: {shown(after[k])}" for k in keys[:6])
    return "\n".join(f"{k}: {shown(before.get(k))} → {shown(after.get(k))}" for k in keys) or "(no field changed)"


def memory_id(raw: str | None) -> int | None:
    """The memory id typed or linked (``?id=``), or None with a message saying what is wrong with it."""
    raw = (raw or "").strip()
    if not raw:
        return None
    try:
        mid = int(raw)
        if mid <= 0:
            raise ValueError
        return mid
    except ValueError:
        bad_link(f"`id={raw[:40]}` is not a memory id (a whole number, such as `id=42`).")
        return None


def tier_line(m: Memory, now: datetime) -> str:
    touched = max(m.created_at, m.last_accessed_at or m.created_at)
    age = (now - touched).total_seconds() / 86400
    return (f"**{tier_of(age)}** tier: last touched {age:.0f} days ago (hot under {HOT_DAYS:g} days, "
            f"warm to {COLD_DAYS:g}, cold beyond)")


bank = get_bank()
st.title("Memory")
opened = st.text_input("Memory id", key="id", bind="query-params", placeholder="42",
                       help="Every memory id on the other pages links here.")
if msg := st.session_state.pop(FLASH, None):
    st.success(msg)

mid = memory_id(opened)
if mid is None:
    st.info("Open a memory by its id above, or follow a memory id from Browse, Recalls, Activity or Conflicts.")
    st.stop()

with readable_errors():
    try:
        m = bank.get(mid)
    except NotFoundError:
        bad_link(f"there is no memory #{mid} in this bank. It may never have existed, or the link is from "
                 "another bank.")
        st.stop()
    now = datetime.now(timezone.utc)

    st.subheader(f"#{m.id} · {m.namespace} · {m.status}")
    st.code(m.text if m.text is not None else "(text erased by a hard delete)", language=None, wrap_lines=True)
    st.markdown(tier_line(m, now))
    reading = infer_durability(m.text, m.category, m.kind, m.importance)
    st.markdown(f"Durability: **{m.durability}** · the rule reads it as {reading.durability}: {reading.reason}"
                + ("" if reading.durability == m.durability else " (set by hand)"))
    for label, other in (("Superseded by", m.superseded_by), ("Merged into", m.merged_into)):
        if other:
            st.markdown(f"{label} {memory_link(other)}")
    fields = {k: v for k, v in m.to_dict().items() if k not in SKIP}
    st.dataframe(pd.DataFrame({"field": list(fields), "value": [shown(v) for v in fields.values()]}),
                 hide_index=True, key="memory_fields", width=640)

    # -- actions ----------------------------------------------------------------------------------
    a1, a2, a3 = st.columns(3)
    if m.status == "active":
        if a1.button("Unpin" if m.pinned else "Pin", key="memory_pin"):
            with readable_errors():
                bank.update(m.id, pinned=not m.pinned)
                flash(f"{'Unpinned' if m.pinned else 'Pinned'} memory #{m.id}.")
        if a2.button("Forget (archive)", key="memory_forget", help="Kept, never recalled; restore it any time"):
            with readable_errors():
                bank.forget(m.id)
                flash(f"Archived memory #{m.id}: it is no longer recalled; restore it any time.")
    elif m.status == "archived":
        if a2.button("Restore", key="memory_restore"):
            with readable_errors():
                bank.restore(m.id)
                flash(f"Restored memory #{m.id}.")
    if m.status != "deleted":
        with st.expander("Edit", expanded=False):
            with st.form("memory_edit"):
                text = st.text_area("Text", value=m.text, key="memory_edit_text")
                e1, e2, e3, e4 = st.columns(4)
                importance = e1.number_input("Importance", 0.0, 1.0, float(m.importance), 0.05,
                                             key="memory_edit_importance")
                category = e2.selectbox("Category", CATEGORIES, index=CATEGORIES.index(m.category),
                                        key="memory_edit_category")
                kind = e3.selectbox("Kind", KINDS, index=KINDS.index(m.kind), key="memory_edit_kind")
                durability = e4.selectbox("Durability", DURABILITIES, index=DURABILITIES.index(m.durability),
                                          key="memory_edit_durability",
                                          help="durable: never expired for age or disuse alone; transient: "
                                               "expired by maintenance once its time has passed")
                if st.form_submit_button("Save changes"):
                    edits: dict[str, Any] = {}
                    if text != m.text:
                        edits["text"] = text
                    if abs(float(importance) - m.importance) > 1e-9:
                        edits["importance"] = float(importance)
                    if category != m.category:
                        edits["category"] = category
                    if kind != m.kind:
                        edits["kind"] = kind
                    if durability != m.durability:
                        edits["durability"] = durability
                    if not edits:
                        st.info("Nothing changed.")
                    else:
                        with readable_errors():
                            bank.update(m.id, **edits)
                            flash(f"Updated {', '.join(edits)} of memory #{m.id}.")
        with st.expander("Delete forever", expanded=False):
            st.warning(f"Hard delete erases memory #{m.id} for good: its text, its vector and its content are "
                       "removed from the bank; its history keeps only the id and a content hash. This cannot "
                       "be undone (forgetting can).")
            confirm = st.text_input(f"Type the memory id {m.id} to confirm", key="memory_hard_confirm")
            # On a dashboard guarded by a password, erasing for good asks for it again.
            again = (st.text_input("Password again", type="password", key="memory_hard_password")
                     if configured_password() else None)
            if st.button("Delete forever", key="memory_hard_delete", type="primary"):
                if confirm.strip() != str(m.id):
                    st.error(f"Type {m.id} in the box to confirm: nothing was deleted.")
                elif again is not None and not password_matches(again):
                    st.error("Wrong password: nothing was deleted.")
                else:
                    with readable_errors():
                        bank.forget(m.id, hard=True)
                        flash(f"Memory #{m.id} was deleted forever.")

    # -- history ------------------------------------------------------------------------------------
    st.subheader("History")
    events = bank.history(m.id)
    st.caption(f"Created {when(m.created_at)} (the memory's own date); last changed {when(m.updated_at)}; "
               f"last recalled {when(m.last_accessed_at) or 'never'}. Each row's time is when the bank "
               "recorded the change.")
    rows = [{"event": e.id, "recorded": when(e.at),
             "dated": when(m.created_at) if e.action == "add" else "",
             "actor": e.actor, "action": e.action, "change": changes(e), "note": e.note or "",
             "group": e.group_id, "undone": "yes" if e.undone_by else ""} for e in events]
    if rows:
        st.dataframe(pd.DataFrame(rows), hide_index=True, width="stretch", key="memory_history",
                     column_config={"change": st.column_config.TextColumn(width="large")})
        undoable = [e for e in reversed(events) if not e.undone_by and e.action not in ("add", "undo")
                    and not (e.action == "forget" and (e.after or {}).get("status") == "deleted")]
        if undoable:
            u1, u2 = st.columns([3, 1])
            target = u1.selectbox("Undo a change", [e.id for e in undoable], key="memory_undo_event",
                                  format_func=lambda i: next(f"event {e.id}: {e.action} by {e.actor}, {when(e.at)}"
                                                             for e in undoable if e.id == i))
            if u2.button("Undo", key="memory_undo"):
                with readable_errors():
                    bank.undo(int(target))
                    flash(f"Undid event {target} of memory #{m.id}.")

    # -- conflicts and merges -----------------------------------------------------------------------
    st.subheader("Conflicts")
    conflicts = bank.conflicts(status=None, memory_id=m.id)
    if not conflicts:
        st.caption("Never part of a recorded conflict.")
    for c in conflicts:
        other = c.b if c.a.id == m.id else c.a
        st.markdown(f"Conflict {c.id} ({c.status}{', ' + c.resolution if c.resolution else ''}) with "
                    f"{memory_link(other.id)}, {c.kind}, detected {when(c.detected_at)} · "
                    f"[open conflicts of {c.namespace}](./conflicts?ns={c.namespace})")
        st.text(f"  #{other.id}: {(other.text or '(erased)')[:200]}")

    st.subheader("Merges")
    merges = [r for r in bank.merges(m.namespace) if m.id == r.merged_id or m.id in r.member_ids]
    if not merges:
        st.caption("Never part of a merge.")
    for r in merges:
        role = "the merged memory" if r.merged_id == m.id else "a member"
        st.markdown(f"Merge {r.id} on {when(r.created_at)} ({role}{', undone ' + when(r.undone_at) if r.undone_at else ''}): "
                    f"{' + '.join(memory_link(i) for i in r.member_ids)} → {memory_link(r.merged_id)}")

    # -- recalls that returned it ---------------------------------------------------------------------
    st.subheader("Recalls that returned it")
    recalls = bank.retrievals(memory_id=m.id, limit=50)
    if not recalls:
        st.caption("No logged recall returned this memory yet.")
    else:
        since = min(r["recalled_at"] for r in recalls)
        feedback = {f.retrieval_id: f for f in bank.feedback_log(m.namespace, since=since)}
        rows = []
        for r in recalls:
            hit = next(h for h in r["hits"] if h["memory_id"] == m.id)
            f = feedback.get(r["id"])
            rows.append({"recall": f"./recalls?id={r['id']}", "when": when(r["recalled_at"]),
                         "query": r.get("query") or "", "rank": hit["rank"],
                         "score": None if hit.get("score") is None else round(hit["score"], 3),
                         "preset": r.get("preset") or "",
                         "used": "" if f is None or not f.hits else ("yes" if m.id in f.used_ids else "no"),
                         "helpful": "" if f is None or f.helpful is None else ("yes" if f.helpful else "no")})
        st.caption(f"The {len(rows)} most recent logged recalls that returned this memory (at most 50); "
                   "used and helpful come from the agent's feedback.")
        st.dataframe(pd.DataFrame(rows), hide_index=True, width="stretch", key="memory_recalls",
                     column_config={"recall": st.column_config.LinkColumn(
                         "recall", display_text=r"id=(\d+)", help="Opens the recall in the Recalls explorer")})
    st.page_link("dashboard/browse.py", label=f"Browse {m.namespace}", icon="🔎", query_params={"ns": m.namespace})
