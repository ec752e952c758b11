"""BENCHMARKS.md and its plots, regenerated from the JSON results of ``python -m bench``."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent


def _load(out: Path, name: str) -> dict | None:
    p = out / f"{name}.json"
    if not p.exists():
        return None
    data = json.loads(p.read_text())
    return None if "error" in data else data


def _f(x: Any, digits: int = 1) -> str:
    if isinstance(x, (int, float)):
        if isinstance(x, float) and abs(x) >= 1000:
            return f"{x:,.0f}"
        return f"{x:,.{digits}f}" if isinstance(x, float) else f"{x:,}"
    return str(x)


def _img(out: Path, name: str) -> str:
    p = out / f"{name}.png"
    if not p.exists():
        return ""
    try:
        rel = p.relative_to(ROOT)
    except ValueError:
        rel = p
    return f"\n![{name}]({rel.as_posix()})\n"


# -- plots ---------------------------------------------------------------------------------------


def plots(out: Path) -> list[str]:
    """Write a PNG per benchmark that has something to draw; returns their paths (or HTML when
    no PNG exporter works offline)."""
    try:
        import plotly.graph_objects as go
    except ImportError:
        return []
    if not os.environ.get("BROWSER_PATH"):
        chromium = shutil.which("chromium") or "/usr/bin/chromium"
        if Path(chromium).exists():
            os.environ["BROWSER_PATH"] = chromium  # kaleido drives a local chromium, never downloads one
    figs = {}
    imp = _load(out, "import_speed")
    if imp:
        e, v = imp["embedding"], imp["with_vectors"]
        fig = go.Figure(go.Bar(
            x=["bare model.encode", "import (embedding)", "import (vectors given)"],
            y=[e["bare_encode_per_s"], e["import_per_s"], v["import_per_s"]],
            text=[f"{e['bare_encode_per_s']:,.0f}/s", f"{e['import_per_s']:,.0f}/s ({e['import_vs_bare_encode']:.2f}×)",
                  f"{v['import_per_s']:,.0f}/s"], textposition="outside"))
        fig.update_layout(title=f"Import throughput ({e['memories']:,} / {v['memories']:,} memories)",
                          yaxis_title="memories per second", yaxis_type="log")
        figs["import_speed"] = fig
    of = _load(out, "overfetch")
    if of:
        fig = go.Figure()
        for ds in ("demo", "locomo"):
            for preset, r in of.get(ds, {}).items():
                if isinstance(r, dict) and "differs_share" in r:
                    xs = [int(n) for n in r["differs_share"]]
                    fig.add_trace(go.Scatter(x=xs, y=[100 * r["differs_share"][str(n)] for n in xs],
                                             mode="lines+markers", name=f"{ds}, {preset} (k={r['k']})"))
        fig.update_layout(title="Over-fetch N by similarity, then re-rank: queries whose top k differs from exact",
                          xaxis_title="candidates fetched (N)", xaxis_type="log", yaxis_title="% of queries")
        figs["overfetch"] = fig
    m0 = _load(out, "mem0_compare")
    if m0 and m0.get("datasets"):
        fig = go.Figure()
        for ds, r in m0["datasets"].items():
            names = list(r["ratios"])
            fig.add_trace(go.Bar(x=[n.replace("_", " ") for n in names], y=[r["ratios"][n] for n in names], name=ds))
        fig.add_hline(y=1, line_dash="dash")
        fig.update_layout(title="Memory Console vs mem0, same run (ratio > 1: Memory Console better)",
                          yaxis_type="log", barmode="group")
        figs["mem0_compare"] = fig
    sv = _load(out, "serve")
    if sv:
        names = ["mem0 in process", "library bank.add", "HTTP, 1 client", f"HTTP, {sv['concurrent']['clients']} clients"]
        values = [sv.get("mem0_adds_per_s") or 0, sv["library_adds_per_s"], sv["sequential_adds_per_s"],
                  sv["concurrent"]["adds_per_s"]]
        fig = go.Figure(go.Bar(x=names, y=values, text=[f"{v:.0f}/s" for v in values], textposition="outside"))
        fig.add_hline(y=60, line_dash="dash", annotation_text="goal, one at a time: 60/s")
        fig.add_hline(y=300, line_dash="dot", annotation_text="goal, 8 clients: 300/s")
        fig.update_layout(title="Single adds per second, same run", yaxis_title="adds per second")
        figs["serve"] = fig
    pg = _load(out, "pg_store")
    if pg:
        from plotly.subplots import make_subplots

        dk, ps = pg["duckdb"], pg["postgres"]
        big = pg["memories_large"]
        panels = [(f"bulk import<br>({big:,}), per s", "large", "import_per_s", 10_000),
                  ("one add<br>per call, per s", "small", "single_add_per_s", None),
                  (f"recall p50, warm<br>({pg['memories']:,}), ms", "small", "recall_p50_ms", None),
                  (f"cold load<br>({big:,}), s", "large", "cold_load_s", 60),
                  (f"load from cache<br>({big:,}), s", "large", "load_from_cache_s", 10)]
        fig = make_subplots(rows=1, cols=len(panels), subplot_titles=[p[0] for p in panels])
        for col, (_, part, key, goal) in enumerate(panels, start=1):
            ys = [dk[part][key], ps[part][key]]
            fig.add_trace(go.Bar(x=["DuckDB", "PostgreSQL"], y=ys, marker_color=["#4c78a8", "#f58518"],
                                 text=[_f(y) for y in ys], textposition="outside", showlegend=False), row=1, col=col)
            if goal is not None:
                fig.add_hline(y=goal, line_dash="dash", row=1, col=col)
        fig.update_layout(title="DuckDB file vs PostgreSQL, same run (dashed: the goal)")
        fig.update_annotations(font_size=11)
        figs["pg_store"] = fig
    written = []
    for name, fig in figs.items():
        fig.update_layout(width=900, height=500, template="plotly_white")
        try:
            fig.write_image(str(out / f"{name}.png"))
            written.append(str(out / f"{name}.png"))
        except Exception:  # no exporter offline: keep an interactive HTML file instead
            fig.write_html(str(out / f"{name}.html"), include_plotlyjs="cdn")
            written.append(str(out / f"{name}.html"))
    return written


# -- markdown ------------------------------------------------------------------------------------


def _import_md(r: dict, out: Path) -> str:
    e, v, t = r["embedding"], r["with_vectors"], r["targets"]
    return f"""## Bulk import at the model's pace (`python -m bench --only import_speed`)

Side by side in one process: the bare model (`Embedder.encode` of the same texts, in the same
2048-text batches) and `MemoryBank.add_many` of those texts (median of {e['repeats']} alternating
run(s)); then rows that carry their vectors (median of {v['repeats']}).

| what | figure | target |
|---|---|---|
| bare `model.encode`, {e['memories']:,} texts | {_f(e['bare_encode_per_s'])} texts/s | |
| import with embedding, same texts | {_f(e['import_per_s'])} memories/s (**{e['import_vs_bare_encode']:.2f}×** the bare model) | ≥ {t['import_vs_bare_encode']}× |
| import of {v['memories']:,} memories carrying vectors | **{_f(v['import_per_s'])} memories/s** | ≥ {t['with_vectors_per_s']:,}/s |
{_img(out, 'import_speed')}"""


def _overfetch_md(r: dict, out: Path) -> str:
    lines = [f"""## The common shortcut: over-fetch by similarity, then re-rank (`python -m bench --only overfetch`)

For each query, the exact top k (`recall`, every live memory scored) against the top k of the
N most similar memories re-ranked by the same blended score. "differs" counts queries whose
top-k set is not the exact one; "missed" counts exact hits the shortcut lost.
""", "| data | memories (largest namespace) | preset (k) | queries | " +
             " | ".join(f"N={n}: differs / missed" for n in r["candidates"]) + " |",
             "|---|---|---|---|" + "---|" * len(r["candidates"])]
    for ds in ("demo", "locomo"):
        d = r.get(ds) or {}
        if "unavailable" in d:
            lines.append(f"| {ds} | {d['unavailable']} |")
            continue
        size = f"{d.get('memories', 0):,} ({d.get('largest_namespace', d.get('memories', 0)):,})"
        for preset, p in d.items():
            if isinstance(p, dict) and "differs" in p:
                cells = " | ".join(f"{p['differs'][str(n)]} ({100 * p['differs_share'][str(n)]:.0f}%) / "
                                   f"{p['exact_hits_missed'][str(n)]}" for n in r["candidates"])
                lines.append(f"| {ds} | {size} | {preset} ({p['k']}) | {p['queries']} | {cells} |")
    lines.append("")
    lines.append("LoCoMo puts every conversation's turns in one namespace. Where a namespace is smaller than N the "
                 "shortcut sees every memory and is exact by accident; it stops being exact once the namespace "
                 "outgrows N, which is why recall scores every live memory.")
    lines.append(_img(out, "overfetch"))
    return "\n".join(lines)


def _threads_note(threads: int | None) -> str:
    """How many threads torch ran on (both sides embed with it; on shared cores it sets the pace)."""
    if threads is None:
        return ""
    return " Torch on one thread." if threads == 1 else f" Torch on {threads} threads."


def _mem0_md(r: dict, out: Path) -> str:
    if "unavailable" in r:
        return f"## Side by side with mem0\n\n{r['unavailable']}\n"
    lines = ["""## Side by side with mem0 (`python -m bench --only mem0_compare`)

Same run, same memories and queries, each on its default model. mem0 2.x open source, fully local:
FAISS (cosine), the bundled all-MiniLM-L6-v2 through its huggingface embedder (torch), `infer=False`,
telemetry off; search with no threshold. Memory Console with its defaults (multilingual-e5-small on ONNX Runtime). Adds are one memory per call for both (our bulk `add_many` beside it); search latency includes embedding the query for both. 1-minute load average {load}.{threads}
""".format(threads=_threads_note(r.get("torch_threads")),
          load="–".join(str(x) for x in r.get("load_average_1min", ["not recorded"]))),
             "| data | memories / queries | add/s ours · mem0 (ratio) | bulk add_many/s (ratio) | search p50 ours · mem0 (mem0/ours) | search p95 ours · mem0 (mem0/ours) | LoCoMo recall@10 ours · mem0 |",
             "|---|---|---|---|---|---|---|"]
    for ds, d in r["datasets"].items():
        a, s, q = d["add_per_s"], d["search"], d["ratios"]
        rec = d.get("recall_at_10")
        rec_cell = f"{rec['memory_console']:.3f} · {rec['mem0']:.3f} ({rec['questions']} questions)" if rec else "–"
        lines.append(
            f"| {ds} | {d['memories']:,} / {d['queries']:,} | {a['memory_console']:.1f} · {a['mem0']:.1f} "
            f"({q['add_throughput_ours_over_mem0']:.2f}×) | {a['memory_console_add_many']:.0f} "
            f"({q['bulk_add_throughput_ours_over_mem0']:.0f}×) | {s['memory_console']['p50_ms']:.1f} · "
            f"{s['mem0']['p50_ms']:.1f} ms ({q['search_p50_mem0_over_ours']:.2f}×) | "
            f"{s['memory_console']['p95_ms']:.1f} · {s['mem0']['p95_ms']:.1f} ms ({q['search_p95_mem0_over_ours']:.2f}×) | "
            f"{rec_cell} |")
    lines.append(_img(out, "mem0_compare"))
    lines.append("One `add` per call does more than mem0's: it writes the memory to the bank file durably (a "
                 "commit to DuckDB's WAL, so another process sees it on its next operation) and checks it "
                 "against its namespace for contradictions; mem0 with `infer=False` appends to its FAISS index "
                 "and a history row. Goal: sequential adds at least 2× mem0's rate in the same run: "
                 + ("**met**" if all(d["ratios"]["add_throughput_ours_over_mem0"] >= 2 for d in r["datasets"].values())
                    else "**not met**") + ".\n")
    return "\n".join(lines)


def _dashboard_md(r: dict, out: Path) -> str:
    cs = r.get("cold_start", {})
    cold = (f"| cold start: `streamlit run app.py` to the first page rendered in chromium | "
            f"{cs['first_page_rendered_s']:.1f} s (HTML served at {cs['first_html_s']:.1f} s; median of {cs['runs']}) | "
            f"< {r['targets']['cold_start_s']} s |") if "first_page_rendered_s" in cs else \
        f"| cold start | {cs.get('unavailable') or cs.get('error') or 'not measured'} | < 10 s |"
    return f"""## Dashboard speed at {r['memories']:,} memories (`python -m bench --only dashboard`)

One namespace of {r['memories']:,} memories carrying ready-made vectors. Slider and Browse are server-side times (what the page waits for), over {r['repeats']} repeats.

| interaction | p50 | p95 | target |
|---|---|---|---|
| Tune slider move (what-if re-rank, k=15, exact) | {r['slider_rerank']['p50_ms']:.1f} ms | {r['slider_rerank']['p95_ms']:.1f} ms | < {r['targets']['slider_rerank_ms']} ms |
| Browse filter: a page of 50 plus the count | {r['browse_filter_page']['p50_ms']:.1f} ms | {r['browse_filter_page']['p95_ms']:.1f} ms | < {r['targets']['browse_filter_page_ms']} ms |

| | figure | target |
|---|---|---|
{cold}
| building the bank (vectors given) | {r['import_with_vectors_s']:.1f} s | |
{_dashboard_browser_md(r)}"""


def _dashboard_browser_md(r: dict) -> str:
    """Rows for the figures in chromium (Playwright, each page visited once before): a warm page
    switch and Browse's filter and search, on the demo bank and on this bank; the search is timed
    from the typing pause to the table redrawn."""
    runs = [(f"demo ({r['demo']['memories']:,})", r["demo"]) if "page_switch" in r.get("demo", {}) else None,
            (f"{r['memories']:,}", r["browser"]) if "page_switch" in r.get("browser", {}) else None]
    runs = [x for x in runs if x]
    if not runs:
        return ""
    names = " / ".join(name for name, _ in runs)
    when = runs[0][1]
    load = "–".join(f"{x:g}" for x in when.get("load_average_1min", [])) or "not recorded"
    figures = " / ".join(f"{b['page_switch']['p50_s']:.2f} · {b['browse_filter']['p50_s']:.2f} · "
                         f"{b['browse_search']['p50_s']:.2f} s" for _, b in runs)
    return (f"| in chromium ({when.get('measured', 'same run')}, load {load}), p50: a warm page switch (over "
            f"{when['page_switch']['n']}) · Browse, a facet picked · a word searched: {names} | {figures} | ≤ 1 s |\n")


def _footprint_md(r: dict, out: Path) -> str:
    i, c = r["import"], r["recall"]
    again = r.get("reopened")

    def held(x: dict) -> str:
        h = x.get("held_after_recalls")
        return "" if not h else f"{h['rss_mb']:,.0f} MB ({h['anon_mb']:,.0f} anonymous, {h['file_mb']:,.0f} file-backed)"
    reopened = "" if not again else (
        f"| reopened: first recall (loads the saved index) | {again['first_recall_s']:.1f} s | "
        f"{again['peak_rss_mb']:,.0f} MB | {held(again)} |\n")
    if again and again.get("held_after_long_run"):
        h = again["held_after_long_run"]
        reopened += (f"| reopened, after {again['long_run_recalls']:,} more recorded recalls | "
                     f"{1000 * again['long_run_s'] / again['long_run_recalls']:.0f} ms each (embedding included) | | "
                     f"{h['rss_mb']:,.0f} MB ({h['anon_mb']:,.0f} anonymous, {h['file_mb']:,.0f} file-backed) |\n")
    return f"""## Memory footprint at {r['memories']:,} memories (`python -m bench --only footprint`)

Synthetic vectors (the model's spectrum) streamed into one namespace, each phase in its own process
(`bench/footprint.py`); peak RSS from `VmHWM`; "held after" is what a recall process (model loaded, as an
agent's) holds after its recalls, anonymous and file-backed (from 262,144 memories a namespace's vectors live in a
memory-mapped file whose pages the kernel may drop); the long run is 1,000 more recorded recalls.

| phase | time | peak RSS | held after |
|---|---|---|---|
| import of {r['memories']:,} memories | {i['seconds']:.0f} s | {i['peak_rss_mb']:,.0f} MB | |
| recall: first recall (builds the namespace index from the store) | {c['first_recall_s']:.1f} s | {c['peak_rss_mb']:,.0f} MB | {held(c)} |
| recall: next recall | {1000 * c['next_recall_s']:.0f} ms | | |
{reopened}| **peak** (target ≤ {r['target_peak_rss_mb']:,} MB) | | **{r['peak_rss_mb']:,.0f} MB** | |

The bank file and its index cache take {r['bank_on_disk_mb']:,.0f} MB on disk.
"""


def _generic_md(name: str, r: dict) -> str:
    def flat(d: Any, prefix: str = "") -> list[tuple[str, Any]]:
        if isinstance(d, dict):
            return [kv for k, v in d.items() for kv in flat(v, f"{prefix}{k}." if prefix or k else k)]
        if isinstance(d, list) and len(d) > 8:
            return [(prefix.rstrip("."), f"{len(d)} values")]
        return [(prefix.rstrip("."), d)]
    rows = "\n".join(f"| {k} | {_f(v, 3)} |" for k, v in flat(r) if k not in ("benchmark", "mode", "machine"))
    return f"## {name} (`python -m bench --only {name}`)\n\n| figure | value |\n|---|---|\n{rows}\n"


def _demo_md(r: dict) -> str:
    rc = r["recall"]
    return f"""## Demo set (`python -m bench.demo_figures --json bench/results/demo_figures.json`)

{r['memories']} memories, 4 namespaces; {r['machine']}, {r.get('measured', 'date not recorded')}, load \
{'–'.join(f'{x:g}' for x in r.get('load_average_1min', [])) or 'not recorded'}.

| what | figure |
|---|---|
| import (embedding included) | {r['import_per_s']:.0f} memories/s |
| bare `model.encode` of the same texts, same run | {r['bare_encode_per_s']:.0f} texts/s (import runs at {r['import_vs_bare_encode']:.2f}× the model's pace) |
| what-if recall, query vector cached | p50 {rc['what_if_cached_vector']['p50_ms']:.2f} ms, p95 {rc['what_if_cached_vector']['p95_ms']:.1f} ms |
| what-if recall, embedding the query | p50 {rc['what_if_with_embedding']['p50_ms']:.1f} ms, p95 {rc['what_if_with_embedding']['p95_ms']:.1f} ms |
| recorded recall (access counts + log), vector cached | p50 {rc['recorded_cached_vector']['p50_ms']:.1f} ms, p95 {rc['recorded_cached_vector']['p95_ms']:.1f} ms |
"""


RENDER = {"import_speed": _import_md, "overfetch": _overfetch_md, "mem0_compare": _mem0_md,
          "dashboard": _dashboard_md, "footprint": _footprint_md}


START = "<!-- generated by python -m bench: edit bench/_report.py, not this part -->"
END = "<!-- end of the generated part; what follows comes from the other bench scripts named in each section -->"


def write(path: Path, generated: str) -> None:
    """Put ``generated`` in ``path`` between the START and END markers, keeping everything else:
    the sections written from other scripts (LoCoMo, tuning, reliability) live outside them."""
    block = f"{START}\n{generated.rstrip()}\n{END}\n"
    text = path.read_text(encoding="utf-8") if path.exists() else ""
    if START in text and END in text:
        head, rest = text.split(START, 1)
        tail = rest.split(END, 1)[1].lstrip("\n")
        text = f"{head}{block}\n{tail}" if tail else f"{head}{block}"
    else:
        text = f"{block}\n{text}" if text else block
    path.write_text(text, encoding="utf-8")


def markdown(out: Path, modules: dict[str, Any]) -> str:
    """BENCHMARKS.md from the result files in ``out`` (modules may render their own section)."""
    run = json.loads((out / "run.json").read_text()) if (out / "run.json").exists() else {}
    # Tables are re-run one by one, so they may come from different machines: name each.
    machines = list(dict.fromkeys(d["machine"] for name in modules if (d := _load(out, name)) and "machine" in d))
    machine = (machines[0] if len(machines) == 1 else
               "; ".join(machines) + " (each table's JSON names the one it ran on)" if machines else "unknown")
    loads = [x for name in modules if (d := _load(out, name)) for x in d.get("load_average_1min", [])]
    load_note = (f" The machine's 1-minute load average during the run was {min(loads):.0f}–{max(loads):.0f} "
                 "(2 cores): absolute times are that much slower than on an idle machine, ratios much less so."
                 if loads else "")
    if os.environ.get("BENCH_NOTE"):
        load_note += " " + os.environ["BENCH_NOTE"]
    # The page's title, its summary table and how to run the benchmarks stand above START, by hand.
    parts = [f"""## How the tables were made

Regenerated by `python -m bench` from the JSON files in `bench/results/` ({run.get('mode', '?')} mode, runs started
{run.get('started_at', '?')} to {run.get('last_started_at', run.get('started_at', '?'))}); each figure is a median over repeated runs, and
comparisons are ratios measured side by side in one run. Machine{'s' if len(machines) > 1 else ''}: {machine}, no GPU.{load_note}
"""]
    for name, module in modules.items():
        r = _load(out, name)
        if r is None:
            err = out / f"{name}.json"
            if err.exists():
                parts.append(f"## {name}\n\nThe last run failed: {json.loads(err.read_text())['error']}\n")
            continue
        if callable(getattr(module, "markdown", None)):
            parts.append(module.markdown(r))
        elif name in RENDER:
            parts.append(RENDER[name](r, out))
        else:
            parts.append(_generic_md(name, r))
    demo = _load(out, "demo_figures")
    if demo:
        parts.append(_demo_md(demo))
    return "\n".join(parts)
