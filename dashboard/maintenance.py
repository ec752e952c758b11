"""Maintenance: the plan's settings, a dry run listing exactly what would change, apply, past runs."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from memory_core.curation import maintenance
from memory_core.curation.maintenance import STEPS, MaintenancePlan
from dashboard.common import get_bank, namespace_picker, readable_errors

bank = get_bank()
st.title("Maintenance")
st.caption("Expire old, unimportant, unused memories; settle clear conflicts; merge near duplicates. "
           "Preview with a dry run first; every applied change is undoable except hard expiry.")
DEFAULTS = MaintenancePlan()


def _changes_table(changes: list[dict]) -> None:
    if not changes:
        st.info("Nothing to change: every memory is within the plan's limits.")
        return
    st.dataframe(pd.DataFrame([{"step": c["step"], "action": c["action"], "namespace": c.get("namespace"),
                                "memories": ", ".join(map(str, c["memory_ids"])), "detail": c["detail"],
                                "undo group": c.get("group_id")} for c in changes]),
                 hide_index=True, width="stretch")


def _report(report: dict, title: str) -> None:
    st.subheader(title)
    counts = report.get("counts", {})
    cols = st.columns(5)
    for col, (key, label) in zip(cols, [("expired", "expired"), ("superseded", "superseded"),
                                        ("conflicts_detected", "conflicts found"), ("merges", "merges"),
                                        ("merged", "memories merged")]):
        col.metric(label, counts.get(key, 0))
    _changes_table(report.get("changes", []))


with readable_errors():
    namespace = namespace_picker(bank, allow_all=True, empty=", so there is nothing to maintain. Add memories "
                                 "on the Browse page or import them with `memctl import`.")

    st.subheader("Plan")
    c1, c2, c3 = st.columns(3)
    expire_after = c1.number_input("Expire memories older than (days)", 0.0, value=DEFAULTS.expire_after_days,
                                   step=1.0, key="m_expire_after")
    below = c2.slider("…with importance below", 0.0, 1.0, DEFAULTS.expire_below_importance, 0.05, key="m_below")
    unused = c3.number_input("…and not recalled for (days)", 0.0, value=DEFAULTS.unused_days, step=1.0,
                             key="m_unused")
    action = c1.selectbox("Expiry", ["archive", "hard"], key="m_action",
                          format_func=lambda a: {"archive": "archive (restorable)", "hard": "hard delete (erased for good)"}[a])
    detect = c2.checkbox("Detect new conflicts", DEFAULTS.detect_conflicts, key="m_detect")
    resolve = c2.checkbox("Resolve clear conflicts (newer wins / explicit wins)", DEFAULTS.resolve_conflicts,
                          key="m_resolve")
    min_conf = c3.slider("…when the detector's confidence is at least", 0.0, 1.0,
                         DEFAULTS.conflict_min_confidence, 0.05, key="m_min_conf")
    custom_merge = c1.checkbox("Custom merge threshold", key="m_custom_merge")
    merge_threshold = c1.slider("Merge threshold", 0.5, 1.0, 0.88, 0.01, key="m_merge_threshold",
                                disabled=not custom_merge)
    cleanup_every = c2.number_input("Cleanup every (days)", 0.1, value=DEFAULTS.cleanup_every_days, step=1.0,
                                    key="m_cleanup_every")
    merge_every = c3.number_input("Merge every (days)", 0.1, value=DEFAULTS.merge_every_days, step=1.0,
                                  key="m_merge_every")
    plan = MaintenancePlan(
        expire_after_days=float(expire_after), expire_below_importance=float(below), unused_days=float(unused),
        expire_action=action, detect_conflicts=detect, resolve_conflicts=resolve,
        conflict_min_confidence=float(min_conf), merge_threshold=float(merge_threshold) if custom_merge else None,
        cleanup_every_days=float(cleanup_every), merge_every_days=float(merge_every))
    due = maintenance.due_steps(bank, plan=plan)
    steps = st.multiselect("Steps", list(STEPS), default=list(STEPS), key="m_steps",
                           help=f"Due by the schedule now: {', '.join(due) or 'none'}")
    st.caption(f"Due by the schedule now: {', '.join(due) or 'none'} · scope: {namespace or 'every namespace'}")

    confirmed = True
    if action == "hard":
        confirmed = st.checkbox("I understand hard expiry erases memories for good (no undo)", key="m_confirm_hard")

    left, right = st.columns(2)
    dry = left.button("Dry run", key="m_dry", help="Lists exactly what would change; changes nothing.",
                      disabled=not steps)
    apply = right.button("Apply", key="m_apply", type="primary", disabled=not steps or not confirmed)

    if dry:
        report = bank.maintain(plan=plan, steps=steps, namespace=namespace, dry_run=True)
        st.session_state["m_last"] = ("Dry run: what would change", report.to_dict())
    if apply:
        bar = st.progress(0.0, text="Maintaining…")

        def progress(done: int, total: int, label: str) -> None:
            bar.progress(min(done / max(total, 1), 1.0), text=label)

        report = bank.maintain(plan=plan, steps=steps, namespace=namespace, dry_run=False, progress=progress)
        bar.progress(1.0, text="Done")
        st.session_state["m_last"] = ("Applied: what changed", report.to_dict())
        st.success(f"Maintenance applied (run {report.run_id}).")
    if st.session_state.get("m_last"):
        _report(st.session_state["m_last"][1], st.session_state["m_last"][0])

    st.subheader("Past runs")
    runs = bank.maintenance_runs(limit=30)
    if not runs:
        st.caption("No maintenance has run on this bank yet. Start with a dry run above.")
    for r in runs:
        rep = r["report"]
        counts = rep.get("counts", {})
        summary = ", ".join(f"{k} {v}" for k, v in counts.items() if v) or "no changes"
        label = (f"Run {r['id']} · {r['started_at']:%Y-%m-%d %H:%M} · {'dry run' if r['dry_run'] else 'applied'} · "
                 f"{', '.join(rep.get('steps', [])) or 'no steps'} · {summary}")
        with st.expander(label):
            _changes_table(rep.get("changes", []))
            st.json(r["plan"], expanded=False)
