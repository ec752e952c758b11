"""Evaluate: does memory make answers better? Run an ablation, compare past runs, read case by case.

Thin page: memory_core parses the cases and runs the ablation (``ablate``, reads only), the bank
stores the run (``record_ablation``), rates come from memory_core.evaluation.metrics. Questions, answers and
memory texts are shown with st.text (never markdown).
"""

from __future__ import annotations

from typing import Any

import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from memory_core import MemoryCoreError, ablate, get_client, parse_cases
from memory_core.evaluation import metrics as mx
from dashboard.common import get_bank, readable_errors

VERDICT_LABELS = {"with": "better with memory", "without": "worse with memory", "tie": "tie", "error": "error"}


def _pct(x: float | None) -> str:
    return "—" if x is None else f"{x:.0%}"


def _ci(ci: tuple[float, float] | None, signed: bool = False) -> str:
    if ci is None:
        return ""
    return f"{ci[0]:+.2f} to {ci[1]:+.2f}" if signed else f"{ci[0]:.0%}–{ci[1]:.0%}"


def _run_ablation(bank, text: str, source: str, default_ns: str | None, judge_model: str | None, seed: int) -> None:
    cases = parse_cases(text.splitlines(), namespace=default_ns)
    bar: Any = None

    def progress(done: int, total: int) -> None:
        nonlocal bar
        if bar is None:  # first called once the models are configured: a missing LLM shows only its error
            bar = st.progress(0.0, text=f"0 of {total} cases")
        bar.progress(done / total, text=f"{done} of {total} cases")

    result = ablate(bank, cases, judge_model=judge_model or None, seed=seed, progress=progress, source=source,
                    namespace=default_ns)
    result.run_id = bank.record_ablation(result.run, result.cases)
    r = result.rates
    st.session_state["evaluate_run"] = result.run_id
    st.success(f"Run {result.run_id}: {r['n']} judged cases, {result.errors} error(s). Usefulness "
               f"{_pct(r['usefulness'])}, disturbance {_pct(r['disturbance'])}, net benefit "
               + ("—" if r["net_benefit"] is None else f"{r['net_benefit']:+.2f}"))


bank = get_bank()
st.title("Evaluate")
st.caption("Ablation: each question is answered once with the memories recall returns and once without; "
           "a judge model compares the two answers, shown in random order. Usefulness = better with memory, "
           "disturbance = worse with memory, net benefit = (better − worse) / n. A net benefit near zero "
           "means memory changes nothing, however good retrieval looks.")

with readable_errors():
    try:
        llm_ready, llm_problem = get_client() is not None, None
    except MemoryCoreError as exc:  # configured, but not usably
        llm_ready, llm_problem = False, str(exc)
    if not llm_ready:
        st.warning("No LLM is configured, so an ablation cannot run here yet"
                   + (f" ({llm_problem})" if llm_problem else "") + ". Set `MEMCTL_LLM_BASE_URL` (any "
                   "OpenAI-compatible endpoint), `MEMCTL_LLM_MODEL` and, if the endpoint needs one, "
                   "`MEMCTL_LLM_API_KEY` in the dashboard's environment, then restart it. A separate judge is "
                   "optional: `MEMCTL_JUDGE_*`. Past runs stay readable below.", icon="🔌")
    with st.expander("Run an ablation", expanded=llm_ready and not bank.ablation_runs(limit=1)):
        st.caption('Cases: JSON lines `{"question": ..., "namespace": ..., "expected": ...}` (namespace and '
                   "expected answer optional). The answering model is the configured LLM (`MEMCTL_LLM_*`); the "
                   "judge is `MEMCTL_JUDGE_*` when set, else the same endpoint.")
        uploaded = st.file_uploader("Cases file (JSONL)", type=["jsonl", "json", "txt"], key="evaluate_file")
        pasted = st.text_area("…or paste cases", key="evaluate_cases", height=120)
        names = [ns for ns, _ in bank.namespaces()]
        a, b, c = st.columns(3)
        default_ns = a.selectbox("Namespace for cases without one", names or ["default"], key="evaluate_namespace")
        judge_model = b.text_input("Judge model (optional)", key="evaluate_judge_model",
                                   help="Default: `MEMCTL_JUDGE_MODEL`, else the answering model.")
        seed = int(c.number_input("Seed (answer order)", min_value=0, value=0, step=1, key="evaluate_seed"))
        if st.button("Run ablation", type="primary", key="evaluate_run_button"):
            if uploaded is not None:
                text, source = uploaded.getvalue().decode("utf-8", "replace"), uploaded.name
            else:
                text, source = pasted, "pasted"
            if not text.strip():
                st.warning("Upload a cases file or paste cases first.")
            else:
                _run_ablation(bank, text, source, default_ns, judge_model.strip(), seed)

    runs = bank.ablation_runs(limit=None)
    if not runs:
        st.info(mx.ABLATION_NOTE)
        st.stop()

    st.subheader("Runs")
    table = []
    for run in runs:
        r = mx.ablation_rates(run["better"], run["worse"], run["ties"])
        table.append({
            "run": run["id"], "started": run["started_at"], "cases": run["n_cases"], "errors": run["errors"],
            "usefulness": r["usefulness"], "usefulness 95% CI": _ci(r["usefulness_ci"]),
            "disturbance": r["disturbance"], "disturbance 95% CI": _ci(r["disturbance_ci"]),
            "ties": r["tie_rate"], "net benefit": r["net_benefit"],
            "net benefit 95% CI": _ci(r["net_benefit_ci"], signed=True),
            "source": run["source"], "answer model": run["answer_model"], "judge": run["judge_model"],
        })
    frame = pd.DataFrame(table)
    st.dataframe(frame, hide_index=True, column_config={
        "started": st.column_config.DatetimeColumn(format="YYYY-MM-DD HH:mm"),
        **{k: st.column_config.NumberColumn(format="percent") for k in ("usefulness", "disturbance", "ties")},
        "net benefit": st.column_config.NumberColumn(format="%+.2f")})

    chartable = [(row, mx.ablation_rates(run["better"], run["worse"], run["ties"]))
                 for row, run in zip(table, runs) if row["net benefit"] is not None]
    if chartable:
        fig = go.Figure(go.Scatter(
            x=[f"run {row['run']}" for row, _ in chartable], y=[r["net_benefit"] for _, r in chartable],
            mode="markers", marker=dict(size=10),
            error_y=dict(type="data", symmetric=False,
                         array=[r["net_benefit_ci"][1] - r["net_benefit"] for _, r in chartable],
                         arrayminus=[r["net_benefit"] - r["net_benefit_ci"][0] for _, r in chartable])))
        fig.add_hline(y=0, line_dash="dash", line_color="gray")
        fig.update_layout(height=260, margin=dict(l=10, r=10, t=30, b=10), yaxis_range=[-1, 1],
                          title="Net benefit per run, with 95% interval")
        st.plotly_chart(fig, width="stretch", key="evaluate_net_benefit")

    st.subheader("Case by case")
    ids = [run["id"] for run in runs]
    chosen = st.session_state.get("evaluate_run")
    run_id = st.selectbox("Run", ids, index=ids.index(chosen) if chosen in ids else 0, key="evaluate_pick_run")
    cases = bank.ablation_cases(run_id)
    overview = pd.DataFrame([{"case": c["case_no"], "verdict": VERDICT_LABELS[c["verdict"]],
                              "namespace": c["namespace"], "question": c["question"],
                              "memories": len(c["memory_ids"])} for c in cases])
    st.dataframe(overview, hide_index=True)
    if cases:
        no = st.selectbox("Case", [c["case_no"] for c in cases], key="evaluate_pick_case")
        case = next(c for c in cases if c["case_no"] == no)
        st.markdown(f"**Verdict: {VERDICT_LABELS[case['verdict']]}**")
        if case["judge_choice"]:
            st.caption(f"The judge saw the answer {case['first_shown']} memory as A and chose "
                       f"{case['judge_choice']}.")
        st.markdown("**Question**")
        st.text(case["question"])
        if case["expected"]:
            st.markdown("**Expected answer**")
            st.text(case["expected"])
        left, right = st.columns(2)
        with left:
            st.markdown("**Answer with memory**")
            st.text(case["answer_with"] or "—")
        with right:
            st.markdown("**Answer without memory**")
            st.text(case["answer_without"] or "—")
        if case["reason"]:
            st.markdown("**Judge's reason**")
            st.text(case["reason"])
        if case["error"]:
            st.error("This case failed; it is left out of the rates.")
            st.text(case["error"])
        st.markdown(f"**Memories in the prompt** ({len(case['memory_ids'])})")
        found = bank.get_many(case["memory_ids"])
        for mid in case["memory_ids"]:
            m = found.get(mid)
            st.text(f"[m:{mid}] " + ("(deleted)" if m is None or m.text is None else m.text))
