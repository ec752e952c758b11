"""Conflicts: contradictions between memories, side by side, resolved by a rule and undoable.

Filters (kind, minimum confidence) and the sort live in the URL, so a triage view can be shared
or reloaded. The latest resolution (one card, or a bulk dismissal as one operation) and its Undo are
drawn in a box above the filters and announced by a toast, which stays in view wherever the page is
scrolled.

Memory text is shown as plain text (st.text), never as markdown: memories may contain markup.
"""

from __future__ import annotations


import streamlit as st

from memory_core import Conflict, Memory
from dashboard.common import (check_param, get_bank, linked_select, memory_link, namespace_picker,
                              paged, readable_errors)

RULES = [  # (rule, button label, what it does)
    ("newer_wins", "Newer wins", "the older memory becomes superseded by the newer one"),
    ("explicit_wins", "Explicit wins", "the inferred memory becomes superseded by the explicit one"),
    ("keep_both", "Keep both", "both stay; recall returns them together and states the contradiction"),
    ("dismiss", "Dismiss", "not a conflict; this pair is never flagged again"),
]
LABELS = {rule: label for rule, label, _ in RULES} | {"edit": "Edit"}
PAGE_SIZE = 20  # conflicts drawn at once: each is a dozen widgets, and 1,600 of them took minutes
ANY = "any"
SORTS = {"confidence": "confidence, high first", "newest": "newest first", "oldest": "oldest first"}
LAST = "conflicts_last_resolution"  # (what was done, its group id) of this browser tab's last resolution
TOAST = "conflicts_toast"  # the message to toast on the next run, after st.rerun

bank = get_bank()
st.title("Conflicts")
st.caption("Memories that contradict each other. Resolve each by a rule; every resolution can be undone.")
top = st.container()  # the latest resolution and its Undo: above the cards, whichever card was resolved


def _done(message: str, group_id: int | None) -> None:
    st.session_state[LAST] = (message, group_id)
    st.session_state[TOAST] = message + (" Undo is at the top of the page." if group_id is not None else "")
    st.rerun()


def _resolve(c: Conflict, rule: str, **kwargs) -> None:
    with readable_errors():
        done = bank.resolve_conflict(c.id, rule, **kwargs)
        _done(f"Conflict {done.id} resolved: {LABELS.get(rule, rule)}.", done.group_id)


def _dismiss(conflicts: list[Conflict]) -> None:
    with readable_errors():
        group = bank.dismiss_conflicts([c.id for c in conflicts])
        _done(f"Dismissed {len(conflicts)} conflict{'s' if len(conflicts) != 1 else ''} "
              f"({', '.join(str(c.id) for c in conflicts[:10])}{'…' if len(conflicts) > 10 else ''}).", group)


def _undo(group_id: int) -> None:
    with readable_errors():
        bank.undo_group(group_id)
        st.session_state.pop(LAST, None)
        st.session_state["conflicts_undone"] = group_id
        st.session_state[TOAST] = "Undone: the memories and the conflicts are back as they were."
        st.rerun()


def _memory(col, m: Memory, label: str) -> None:
    col.markdown(f"**{label}** · {memory_link(m.id, f'memory {m.id}')}")
    col.text(m.text if m.text is not None else "(erased)")
    col.caption(f"created {m.created_at:%Y-%m-%d %H:%M} · {m.kind} · importance {m.importance:.2f} · "
                f"{m.category} · {m.status}")


with readable_errors():
    namespace = namespace_picker(bank, allow_all=True, empty=", so nothing can conflict. Add memories on the "
                                 "Browse page or import them with `memctl import`, then run detection here.")
    namespaces = [namespace] if namespace else [ns for ns, n in bank.namespaces() if n]

    if st.button("Run detection now", help="Look for new contradictions (pairs found before are not flagged again)"):
        bar = st.progress(0.0, text="Detecting conflicts…")
        found = 0
        for i, ns in enumerate(namespaces):
            bar.progress(i / max(len(namespaces), 1), text=f"Detecting in {ns}…")
            found += len(bank.detect_conflicts(ns))
        bar.progress(1.0, text="Detection done")
        st.success(f"Detection found {found} new conflict{'s' if found != 1 else ''}.")

    if (toast := st.session_state.pop(TOAST, None)) is not None:
        st.toast(toast, icon="⚖️")
    if st.session_state.pop("conflicts_undone", None) is not None:
        top.success("Undone: the memories and the conflicts are back as they were.")
    last = st.session_state.get(LAST)
    if last:
        message, gid = last
        box = top.container(border=True)
        box.success(message)
        if gid is not None and box.button("Undo", key="undo-last", type="primary"):
            _undo(gid)

    all_open = bank.conflicts(namespace=namespace, status="open")
    where = namespace or "any namespace"
    counts: dict[str, int] = {}
    for c in all_open:
        counts[c.kind] = counts.get(c.kind, 0) + 1
    f1, f2, f3 = st.columns(3)
    kind = linked_select(f1, "Kind", [ANY, *sorted(counts)], "kind", noun="conflict kind",
                         format_func=lambda k: k if k == ANY else f"{k} ({counts[k]})")
    check_param("min_confidence", lambda raw: 0.0 <= float(raw) <= 1.0, "a number from 0 to 1, such as 0.8")
    min_confidence = f2.slider("Minimum confidence", 0.0, 1.0, 0.0, 0.05, key="min_confidence",
                               bind="query-params", help="Show only conflicts at least this sure")
    order = linked_select(f3, "Sort by", list(SORTS), "sort", noun="sort order", format_func=SORTS.get)
    open_conflicts = [c for c in all_open if (kind == ANY or c.kind == kind) and c.confidence >= min_confidence - 1e-9]
    if order == "confidence":
        open_conflicts.sort(key=lambda c: (-c.confidence, -c.detected_at.timestamp(), -c.id))
    else:
        open_conflicts.sort(key=lambda c: (c.detected_at, c.id), reverse=order == "newest")
    shown = f"{len(open_conflicts)} of {len(all_open)}" if len(open_conflicts) != len(all_open) else f"{len(all_open)}"
    st.subheader(f"Open conflicts ({shown})")
    if not all_open:
        st.info(f"No open conflicts in {where}. Press “Run detection now” to look for contradictions; "
                "conflicts also appear when agents add memories or maintenance runs.")
    elif not open_conflicts:
        st.info(f"No open conflict in {where} passes the filters: lower the minimum confidence or pick any kind.")
    if open_conflicts:
        picked = [c for c in open_conflicts if st.session_state.get(f"pick-{c.id}")]
        bulk = st.container(border=True)
        b1, b2, b3 = bulk.columns([2, 2, 3], vertical_alignment="center")
        if b1.button(f"Dismiss the {len(picked)} selected", key="bulk-dismiss-selected", disabled=not picked,
                     help="Tick “Select” on the cards to dismiss, then dismiss them all as one undoable step"):
            _dismiss(picked)
        sure = b3.checkbox(f"Yes, every one of the {len(open_conflicts)} the filters show is not a conflict",
                           key="bulk-confirm")
        if b2.button(f"Dismiss all {len(open_conflicts)} shown by the filters", key="bulk-dismiss-filtered",
                     disabled=not sure, help="Every conflict that passes the filters above, on every page; "
                                             "one undoable step"):
            _dismiss(open_conflicts)
    for c in paged(open_conflicts, "conflicts_page", PAGE_SIZE, f"conflicts ({SORTS[order]})"):
        with st.container(border=True):
            head, pick = st.columns([5, 1], vertical_alignment="center")
            head.markdown(f"#### Conflict {c.id} · {c.kind}")
            pick.checkbox("Select", key=f"pick-{c.id}", help="Select for “Dismiss the selected”")
            st.caption(f"namespace {c.namespace} · confidence {c.confidence:.2f} · found by {c.path} · "
                       f"detected {c.detected_at:%Y-%m-%d %H:%M}")
            st.text(f"Evidence: {c.evidence}")
            left, right = st.columns(2)
            _memory(left, c.a, "Older")
            _memory(right, c.b, "Newer")
            st.markdown(f"Suggested rule: **{LABELS.get(c.suggestion, c.suggestion)}**")
            cols = st.columns(len(RULES))
            for col, (rule, label, help_text) in zip(cols, RULES):
                disabled = rule == "explicit_wins" and c.a.kind == c.b.kind
                if col.button(label, key=f"resolve-{c.id}-{rule}", help=help_text, disabled=disabled,
                              type="primary" if rule == c.suggestion else "secondary", width="stretch"):
                    _resolve(c, rule)
            with st.expander("Edit one of the two instead"):
                which = st.radio("Memory to edit", [c.a.id, c.b.id], key=f"edit-which-{c.id}", horizontal=True,
                                 format_func=lambda mid, c=c: f"{'older' if mid == c.a.id else 'newer'} ({mid})")
                current = c.a if which == c.a.id else c.b
                text = st.text_input("New text", value=current.text or "", key=f"edit-text-{c.id}-{which}")
                if st.button("Save edit and resolve", key=f"resolve-{c.id}-edit",
                             type="primary" if c.suggestion == "edit" else "secondary"):
                    _resolve(c, "edit", memory_id=which, text=text)

    recent = [c for c in bank.conflicts(namespace=namespace, status=None) if c.status != "open"]
    recent.sort(key=lambda c: c.resolved_at or c.detected_at, reverse=True)
    st.subheader("Recently resolved")
    if not recent:
        st.caption("Nothing resolved yet.")
    for c in recent[:20]:
        with st.container(border=True):
            info, action = st.columns([5, 1])
            when = f" · {c.resolved_at:%Y-%m-%d %H:%M}" if c.resolved_at else ""
            info.markdown(f"Conflict {c.id} · **{c.status}** by {LABELS.get(c.resolution, c.resolution)}{when}")
            info.text(f"older ({c.a.id}, now {c.a.status}): {c.a.text}\nnewer ({c.b.id}, now {c.b.status}): {c.b.text}")
            if c.group_id is not None and action.button("Undo", key=f"undo-{c.id}"):
                _undo(c.group_id)
