"""Maintenance: the plan's settings, a dry run listing what would change and why (rows can be left
out), apply (only after a dry run of the same settings), past runs with an undo each."""

from __future__ import annotations

import json

import pandas as pd
import streamlit as st

from memory_core.curation import maintenance
from memory_core.curation.maintenance import EXPIRE_RULES, STEPS, MaintenancePlan
from dashboard.common import get_bank, namespace_picker, readable_errors

bank = get_bank()
st.title("Maintenance")
st.caption("Expire transient memories once their time has passed and list durable ones long unused for review "
           "(a durable memory is never expired for age alone); settle clear conflicts; merge near duplicates. "
           "Apply follows a dry run of the same settings; every applied run can be undone, except hard expiry.")
DEFAULTS = MaintenancePlan()
RULES = {"durability": "by durability: transient memories once their time has passed",
         "age_importance": "by age and importance (seed 004): old, unimportant, unused, durable or not"}


def _label(c: dict) -> str:
    text = c["detail"].split(": ")[0] if c["action"] in ("expire", "review") else c["detail"]
    return f"{c['action']} {', '.join(map(str, c['memory_ids']))} · {text[:70]}"


def _rows(changes: list[dict]) -> pd.DataFrame:
    """One line per change with why: durability, age, last use, and the rule's words."""
    out = []
    for c in changes:
        why = c.get("why") or {}
        out.append({"action": c["action"], "namespace": c.get("namespace"),
                    "memories": ", ".join(map(str, c["memory_ids"])), "durability": why.get("durability"),
                    "age (days)": why.get("age_days"), "last used": (why.get("last_used") or "never")[:10] if why else None,
                    "why": c["detail"], "undo group": c.get("group_id")})
    return pd.DataFrame(out)


def _report(report: dict, title: str) -> None:
    st.subheader(title)
    counts = report.get("counts", {})
    cols = st.columns(6)
    for col, (key, label) in zip(cols, [("expired", "expired"), ("review", "for review"), ("superseded", "superseded"),
                                        ("conflicts_detected", "conflicts found"), ("merges", "merges"),
                                        ("merged", "memories merged")]):
        col.metric(label, counts.get(key, 0))
    changes = [c for c in report.get("changes", []) if c["action"] != "review"]
    reviews = [c for c in report.get("changes", []) if c["action"] == "review"]
    if not changes:
        st.info("Nothing to change: every memory is within the plan's limits.")
    else:
        st.dataframe(_rows(changes), hide_index=True, width="stretch", key=f"m_table_{title[:3]}")
    if reviews:
        st.caption(f"{len(reviews)} durable memories long unused, listed for review (nothing is done to them):")
        st.dataframe(_rows(reviews), hide_index=True, width="stretch", key=f"m_review_{title[:3]}")


def _undo(run_id: int) -> None:
    try:
        bank.undo_maintenance_run(run_id)
        st.session_state["m_undone"] = ("success", f"Run {run_id} undone: every memory it changed is back as it was.")
    except Exception as e:  # a clear message on the page, whatever refused it
        st.session_state["m_undone"] = ("error", f"Run {run_id} could not be undone: {e}")


with readable_errors():
    namespace = namespace_picker(bank, allow_all=True, empty=", so there is nothing to maintain. Add memories "
                                 "on the Browse page or import them with `memctl import`.")

    st.subheader("Plan")
    rule = st.radio("Expiry rule", list(EXPIRE_RULES), format_func=RULES.get, key="m_rule", horizontal=True)
    c1, c2, c3 = st.columns(3)
    by_durability = rule == "durability"
    day = c1.number_input("A day's state expires after (days)", 0.0, value=DEFAULTS.day_state_days, step=1.0,
                          key="m_day", disabled=not by_durability)
    week = c2.number_input("A week's state after (days)", 0.0, value=DEFAULTS.week_state_days, step=1.0,
                           key="m_week", disabled=not by_durability)
    after_date = c3.number_input("A dated one, days after its date", 0.0, value=DEFAULTS.after_date_days, step=1.0,
                                 key="m_after_date", disabled=not by_durability)
    transient_after = c1.number_input("Logs, small talk, events: older and unused than (days)", 0.0,
                                      value=DEFAULTS.transient_after_days, step=1.0, key="m_transient_after",
                                      disabled=not by_durability)
    expire_after = c2.number_input("Old: older than (days)" + (" (durable: review)" if by_durability else ""), 0.0,
                                   value=DEFAULTS.expire_after_days, step=1.0, key="m_expire_after")
    unused = c3.number_input("…and not recalled for (days)", 0.0, value=DEFAULTS.unused_days, step=1.0,
                             key="m_unused")
    below = c1.slider("…with importance below (seed 004's rule)", 0.0, 1.0, DEFAULTS.expire_below_importance, 0.05,
                      key="m_below", disabled=by_durability)
    action = c2.selectbox("Expiry", ["archive", "hard"], key="m_action",
                          format_func=lambda a: {"archive": "archive (restorable)", "hard": "hard delete (erased for good)"}[a])
    detect = c3.checkbox("Detect new conflicts", DEFAULTS.detect_conflicts, key="m_detect")
    resolve = c3.checkbox("Resolve clear conflicts (newer wins / explicit wins)", DEFAULTS.resolve_conflicts,
                          key="m_resolve")
    min_conf = c1.slider("…when the detector's confidence is at least", 0.0, 1.0,
                         DEFAULTS.conflict_min_confidence, 0.05, key="m_min_conf")
    custom_merge = c2.checkbox("Custom merge threshold", key="m_custom_merge")
    merge_threshold = c2.slider("Merge threshold", 0.5, 1.0, 0.88, 0.01, key="m_merge_threshold",
                                disabled=not custom_merge)
    cleanup_every = c3.number_input("Cleanup every (days)", 0.1, value=DEFAULTS.cleanup_every_days, step=1.0,
                                    key="m_cleanup_every")
    merge_every = c3.number_input("Merge every (days)", 0.1, value=DEFAULTS.merge_every_days, step=1.0,
                                  key="m_merge_every")
    plan = MaintenancePlan(
        expire_after_days=float(expire_after), expire_below_importance=float(below), unused_days=float(unused),
        expire_action=action, expire_rule=rule, day_state_days=float(day), week_state_days=float(week),
        after_date_days=float(after_date), transient_after_days=float(transient_after), detect_conflicts=detect,
        resolve_conflicts=resolve, conflict_min_confidence=float(min_conf),
        merge_threshold=float(merge_threshold) if custom_merge else None,
        cleanup_every_days=float(cleanup_every), merge_every_days=float(merge_every))
    due = maintenance.due_steps(bank, plan=plan)
    steps = st.multiselect("Steps", list(STEPS), default=list(STEPS), key="m_steps",
                           help=f"Due by the schedule now: {', '.join(due) or 'none'}")
    st.caption(f"Due by the schedule now: {', '.join(due) or 'none'} · scope: {namespace or 'every namespace'}")
    settings = json.dumps([plan.to_dict(), steps, namespace], sort_keys=True)

    confirmed = True
    if action == "hard":
        confirmed = st.checkbox("I understand hard expiry erases memories for good (no undo)", key="m_confirm_hard")

    if st.button("Dry run", key="m_dry", help="Lists exactly what would change; changes nothing.", disabled=not steps):
        report = bank.maintain(plan=plan, steps=steps, namespace=namespace, dry_run=True)
        st.session_state["m_preview"] = {"settings": settings, "report": report.to_dict()}
        st.session_state.pop("m_last", None)
        st.session_state.pop("m_leave_out", None)
    preview = st.session_state.get("m_preview")
    previewed = preview is not None and preview["settings"] == settings
    if preview is not None and not previewed:
        st.warning("The settings changed since the dry run below: run a dry run of these settings before applying.")

    leave_out: list[str] = []
    if preview is not None:
        _report(preview["report"], "Dry run: what would change")
        rows = {maintenance.row_key(c): _label(c) for c in preview["report"]["changes"] if c["action"] != "review"}
        if rows:
            leave_out = st.multiselect("Leave these rows out of Apply", list(rows), format_func=rows.get,
                                       key="m_leave_out", disabled=not previewed)
    apply = st.button(f"Apply{' (' + str(len(leave_out)) + ' rows left out)' if leave_out else ''}", key="m_apply",
                      type="primary", disabled=not steps or not confirmed or not previewed,
                      help="Makes the dry run's changes, less the rows left out." if previewed
                      else "Run a dry run of these settings first.")
    if apply and previewed:
        bar = st.progress(0.0, text="Maintaining…")

        def progress(done: int, total: int, label: str) -> None:
            bar.progress(min(done / max(total, 1), 1.0), text=label)

        work = maintenance.plan_run(bank, plan=plan, steps=steps, namespace=namespace, client=bank.llm,
                                    progress=progress)
        chosen = {maintenance.row_key(c) for c in preview["report"]["changes"]} - set(leave_out)
        work.keep_only(chosen)  # only what the preview showed and the operator kept
        report = bank.apply_maintenance(work)
        bar.progress(1.0, text="Done")
        st.session_state.pop("m_preview", None)
        st.session_state["m_last"] = ("Applied: what changed", report.to_dict())
        st.success(f"Maintenance applied (run {report.run_id}).")
    if st.session_state.get("m_last"):
        _report(st.session_state["m_last"][1], st.session_state["m_last"][0])

    st.subheader("Past runs")
    if st.session_state.get("m_undone"):
        kind, message = st.session_state.pop("m_undone")
        (st.success if kind == "success" else st.error)(message)
    runs = bank.maintenance_runs(limit=30)
    if not runs:
        st.caption("No maintenance has run on this bank yet. Start with a dry run above.")
    for r in runs:
        rep = r["report"]
        counts = rep.get("counts", {})
        summary = ", ".join(f"{k} {v}" for k, v in counts.items() if v) or "no changes"
        state = "dry run" if r["dry_run"] else "applied, undone" if rep.get("undone") else "applied"
        label = (f"Run {r['id']} · {r['started_at']:%Y-%m-%d %H:%M} · {state} · "
                 f"{', '.join(rep.get('steps', [])) or 'no steps'} · {summary}")
        undoable = not r["dry_run"] and not rep.get("undone") and any(c.get("group_id") for c in rep.get("changes", []))
        if undoable:
            st.button(f"Undo run {r['id']}", key=f"m_undo_{r['id']}", on_click=_undo, args=(r["id"],),
                      help="Restores every memory this run changed, as it was; refused if one changed since.")
        with st.expander(label):
            if rep.get("changes"):
                st.dataframe(_rows(rep["changes"]), hide_index=True, width="stretch", key=f"m_run_{r['id']}")
            st.json(r["plan"], expanded=False)
