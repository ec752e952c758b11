"""Activity: every change to the bank, who made it and when, one row per operation, each undoable.

An operation (a group of events) is what an undo reverses as a whole: a bulk forget, a merge, a
conflict's resolution, a maintenance step, one edit. The actor says who acted: a token's name (an
agent through the server), ``dashboard``, ``cli``, ``maintenance``, ``api``. An undo that can no
longer apply (already undone, an undo itself, a hard delete, or later changes to the same
memories) says why instead of failing. Filters live in the URL.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

import pandas as pd
import streamlit as st

from memory_core import Event, MemoryCoreError, StateError
from dashboard.common import check_param, get_bank, memory_href, namespace_picker, readable_errors

LIMITS = (200, 1000, 5000)
ALL = "(any)"
FLASH = "activity_flash"


def when(dt: datetime | None) -> str:
    return "" if dt is None else f"{dt:%Y-%m-%d %H:%M:%S} UTC"


def operations(events: list[Event]) -> list[list[Event]]:
    """Events grouped by operation, newest operation first (an event without a group stands alone)."""
    groups: dict[Any, list[Event]] = {}
    for e in events:
        groups.setdefault(e.group_id if e.group_id is not None else f"event {e.id}", []).append(e)
    return sorted(groups.values(), key=lambda es: -max(e.id for e in es))


def why_not_undoable(events: list[Event]) -> str | None:
    """Why this operation cannot be undone any more, or None when an undo may apply."""
    first = events[0]
    if first.action == "undo" or (first.note or "").startswith("undo "):
        return "it is an undo itself: make the change again instead"
    if any(e.action == "hard_delete" or (e.action == "forget" and (e.after or {}).get("status") == "deleted")
           for e in events):
        return "a hard delete erased the text for good"
    undone = {e.undone_by for e in events if e.undone_by is not None}
    if undone:
        return f"already undone (by operation {', '.join(str(u) for u in sorted(undone))})"
    if first.group_id is None:
        return "this event belongs to no operation"
    return None


def summary(events: list[Event]) -> str:
    first = events[0]
    ids = sorted({e.memory_id for e in events if e.memory_id is not None})
    if first.note:
        return first.note
    keys = sorted({k for e in events for k in (e.after or {}) if (e.before or {}).get(k) != (e.after or {}).get(k)}
                  - {"updated_at", "content_hash"})
    return f"{first.action} of {len(ids)} memor{'y' if len(ids) == 1 else 'ies'}" + (f": {', '.join(keys[:5])}" if keys and first.action != "add" else "")


def undo(group: int) -> None:
    try:
        done = bank.undo_group(group)
    except StateError as exc:
        st.session_state[FLASH] = ("warning", f"Operation {group} cannot be undone: {exc}")
    except MemoryCoreError as exc:
        st.session_state[FLASH] = ("error", str(exc))
    else:
        st.session_state[FLASH] = ("success", f"Undid operation {group} (the undo is operation {done}).")


bank = get_bank()
st.title("Activity")
st.caption("Every change to the bank, newest first, one row per operation. Undo reverses an operation as a whole.")
if flash := st.session_state.pop(FLASH, None):
    getattr(st, flash[0])(flash[1])

with readable_errors():
    namespace = namespace_picker(bank, key="activity_namespace", allow_all=True,
                                 empty="Changes appear here once memories are added.")
    check_param("limit", lambda raw: int(raw) in LIMITS, f"one of {', '.join(map(str, LIMITS))}")
    c1, c2, c3, c4 = st.columns([1, 1, 1, 1])
    limit = c1.selectbox("Latest changes read", LIMITS, key="limit", bind="query-params")
    events = bank.events(limit=int(limit))
    memories = bank.get_many({e.memory_id for e in events if e.memory_id is not None}) if events else {}
    actions = sorted({e.action for e in events})
    actors = sorted({e.actor for e in events})
    check_param("action", lambda raw: raw in actions, f"an action among the latest changes ({', '.join(actions)})")
    check_param("actor", lambda raw: raw in actors, f"an actor among the latest changes ({', '.join(actors)})")
    action = c2.selectbox("Action", [ALL, *actions], key="action", bind="query-params")
    actor = c3.selectbox("Actor", [ALL, *actors], key="actor", bind="query-params")
    undoable_only = c4.toggle("Undoable only", key="undoable", bind="query-params")

    def in_view(e: Event) -> bool:
        if namespace is not None:
            m = memories.get(e.memory_id) if e.memory_id is not None else None
            if m is None or m.namespace != namespace:
                return False
        return (action == ALL or e.action == action) and (actor == ALL or e.actor == actor)

    ops = [es for es in operations(events) if any(in_view(e) for e in es)]
    if undoable_only:
        ops = [es for es in ops if why_not_undoable(es) is None]
    st.caption(f"**{len(ops):,}** operations among the {len(events):,} latest changes"
               + (" (read more above for older ones)" if len(events) == int(limit) else ""))
    if not ops:
        st.info("No change matches these filters.")
        st.stop()

    rows = []
    for es in ops:
        ids = sorted({e.memory_id for e in es if e.memory_id is not None})
        reason = why_not_undoable(es)
        rows.append({"operation": es[0].group_id, "time": when(max(e.at for e in es)), "actor": es[0].actor,
                     "action": es[0].action, "memories": len(ids),
                     "first memory": memory_href(ids[0]) if ids else None,
                     "what": summary(es), "undo": "possible" if reason is None else f"no: {reason}"})
    st.dataframe(pd.DataFrame(rows), hide_index=True, width="stretch", key="activity_table",
                 height=min(len(rows), 15) * 35 + 40,
                 column_config={"first memory": st.column_config.LinkColumn(display_text=r"id=(\d+)", width="small"),
                                "what": st.column_config.TextColumn(width="large"),
                                "undo": st.column_config.TextColumn(width="medium")})

    st.subheader("Undo an operation")
    by_group = {es[0].group_id: es for es in ops if es[0].group_id is not None}
    if not by_group:
        st.caption("None of these changes belongs to an operation that can be undone.")
    else:
        u1, u2 = st.columns([3, 1])
        group = u1.selectbox("Operation", list(by_group), key="activity_undo_group",
                             format_func=lambda g: f"{g}: {by_group[g][0].action} by {by_group[g][0].actor}, "
                                                   f"{when(by_group[g][0].at)} — {summary(by_group[g])[:60]}")
        es = by_group[group]
        reason = why_not_undoable(es)
        ids = sorted({e.memory_id for e in es if e.memory_id is not None})
        st.markdown("Memories: " + " ".join(f"[#{i}]({memory_href(i)})" for i in ids[:30])
                    + (" …" if len(ids) > 30 else ""))
        if reason is not None:
            st.warning(f"Operation {group} cannot be undone: {reason}.")
        elif u2.button(f"Undo operation {group}", key="activity_undo", type="primary"):
            undo(int(group))
            st.rerun()
