"""The benchmark entry point at its smallest sizes, so the benchmark code cannot rot.

No timing is asserted (speed goals live in bench/ as ratios); the results must have the fields
BENCHMARKS.md is built from, with sane values, and the over-fetch comparison must report how
many queries differ from exact recall.
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
# About a minute on an idle 2-core machine; a machine shared with other work needs the margin.
pytestmark = pytest.mark.timeout(1800)


@pytest.fixture(scope="module")
def smallest_run(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("bench")
    proc = subprocess.run(
        [sys.executable, "-m", "bench", "--smallest", "--out", str(out), "--markdown", str(out / "BENCHMARKS.md")],
        cwd=ROOT, capture_output=True, text=True, timeout=1700,
        env={**__import__("os").environ, "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"})
    assert proc.returncode == 0, proc.stderr[-3000:]
    return out


def load(out: Path, name: str) -> dict:
    data = json.loads((out / f"{name}.json").read_text())
    assert "error" not in data, data.get("error")
    assert data["benchmark"] == name and data["mode"] == "smallest" and data["machine"]
    return data


def test_every_discovered_benchmark_ran_and_wrote_json(smallest_run: Path):
    summary = json.loads((smallest_run / "run.json").read_text())
    assert {"import_speed", "add_speed", "recall_scale", "overfetch", "mem0_compare", "dashboard", "footprint",
            "pg_store"} <= set(
        summary["benchmarks"])
    assert all(b["status"] == "ok" for b in summary["benchmarks"].values()), summary


def test_import_reports_the_ratio_to_the_bare_model(smallest_run: Path):
    r = load(smallest_run, "import_speed")
    assert r["embedding"]["import_per_s"] > 0 and r["embedding"]["bare_encode_per_s"] > 0
    assert r["embedding"]["import_vs_bare_encode"] == pytest.approx(
        r["embedding"]["import_per_s"] / r["embedding"]["bare_encode_per_s"])
    assert r["with_vectors"]["import_per_s"] > 0


def test_add_speed_reports_before_and_after_side_by_side(smallest_run: Path):
    r = load(smallest_run, "add_speed")
    assert all(v > 0 for v in r["adds_per_s"].values()), r["adds_per_s"]
    assert r["speedup"] == pytest.approx(r["adds_per_s"]["after"] / r["adds_per_s"]["before"])
    assert r["file_opens_per_add"]["before"] >= 1 > r["file_opens_per_add"]["after"]
    # beside them, what an add costs without its model, and the disk's floor for a durable commit
    assert r["ms_p50"]["add_without_model"] > 0 and r["ms_p50"]["fsync"] > 0
    assert r["p50_over_model_ms"] == pytest.approx(r["ms_p50"]["after"] - r["ms_p50"]["model_alone"])


def test_recall_scale_checks_exactness_and_loads_only_recalled_namespaces(smallest_run: Path):
    r = load(smallest_run, "recall_scale")
    for size in r["scale"]:
        assert size["exact_checked"] > 0 and size["exact_equal_brute_force"] == size["exact_checked"]
        assert size["recall"]["p95_ms"] >= size["recall"]["p50_ms"] > 0 and size["bare_faiss_flat"]["p50_ms"] > 0
        assert size["retrievals_logged"] == r["queries_per_size"]  # recorded recalls all reached the log
    t = r["tenants"]
    assert 0 < t["namespaces_loaded"] <= t["namespaces_recalled"]  # a recall loads its own namespace only


def test_overfetch_counts_queries_that_differ_from_exact(smallest_run: Path):
    r = load(smallest_run, "overfetch")
    for ds in ("demo", "locomo"):
        if "unavailable" in r[ds]:
            continue
        for preset in ("generative-agents", "weighted-recall"):
            p = r[ds][preset]
            assert p["queries"] > 0
            for n in r["candidates"]:
                assert 0 <= p["differs"][str(n)] <= p["queries"]
                assert p["exact_hits_missed"][str(n)] >= 0
            # fetching fewer candidates can only lose more of the exact top k
            missed = [p["exact_hits_missed"][str(n)] for n in sorted(r["candidates"], reverse=True)]
            assert missed == sorted(missed)


def test_mem0_comparison_reports_positive_ratios(smallest_run: Path):
    r = load(smallest_run, "mem0_compare")
    if importlib.util.find_spec("mem0") is None:
        assert "not installed" in r["unavailable"]
        return
    assert r["datasets"]
    for d in r["datasets"].values():
        assert all(v > 0 for v in d["ratios"].values()), d["ratios"]
        assert d["search"]["memory_console"]["p50_ms"] > 0 and d["search"]["mem0"]["p95_ms"] > 0


def test_dashboard_and_footprint_figures(smallest_run: Path):
    d = load(smallest_run, "dashboard")
    assert d["slider_rerank"]["p50_ms"] > 0 and d["browse_filter_page"]["p95_ms"] >= d["browse_filter_page"]["p50_ms"]
    f = load(smallest_run, "footprint")
    assert f["peak_rss_mb"] >= f["recall"]["peak_rss_mb"] > 0 and f["bank_on_disk_mb"] > 0


def test_pg_store_reports_both_stores_at_both_sizes(smallest_run: Path):
    r = load(smallest_run, "pg_store")
    for store in ("duckdb", "postgres"):
        small, large = r[store]["small"], r[store]["large"]
        assert small["import_per_s"] > 0 and small["single_add_per_s"] > 0
        assert small["recall_p95_ms"] >= small["recall_p50_ms"] > 0
        assert large["memories"] == r["memories_large"] and large["cold_load_s"] > 0 and large["load_from_cache_s"] > 0
        assert large["cache_mb"] > 0  # the cold load saved the cache the next load read
    assert len(r["targets"]) == 4


def test_markdown_and_plots_are_regenerated(smallest_run: Path):
    text = (smallest_run / "BENCHMARKS.md").read_text()
    for heading in ("Bulk import", "Recall at scale", "over-fetch", "mem0", "Dashboard speed", "Memory footprint",
                    "PostgreSQL beside the DuckDB file"):
        assert heading.lower() in text.lower()
    assert any(smallest_run.glob("*.png")) or any(smallest_run.glob("*.html"))


def test_pg_servers_reports_staleness_and_adds_over_two_servers(smallest_run: Path):
    r = load(smallest_run, "pg_servers")
    assert r["staleness"]["adds"] > 0 and r["staleness"]["p99_ms"] >= r["staleness"]["p50_ms"] > 0
    assert r["read_your_writes"]["first_recall_had_it"] == r["read_your_writes"]["adds"]
    assert r["adds"]["servers"] == 2 and r["adds"]["lost"] == 0 and not r["adds"]["errors"]


def test_server_cpu_counts_every_add_and_the_server_threads(tmp_path: Path):
    """`python -m bench.server_cpu`, the per-thread measure behind BENCHMARKS.md's notes on the server."""
    from bench.server_cpu import measure

    r = measure(str(tmp_path / "served.duckdb"), clients=3, per_client=4)
    assert r["adds"] == 12 and r["errors"] == 0 and r["adds_per_s"] > 0
    busiest = list(r["busiest_threads_ms_per_add"].values())
    assert busiest == sorted(busiest, reverse=True) and busiest[0] > 0
    assert r["server_cpu_ms_per_add"] >= sum(busiest) - 0.01 and r["clients_cpu_ms_per_add"] > 0


def test_serve_reports_eight_clients_against_the_batch_rate_with_the_gatherer_on_and_off(smallest_run: Path):
    g = load(smallest_run, "serve")["gather"]
    for model, store in [(m, s) for m in ("multilingual-e5-small", "sentence-transformers/all-MiniLM-L6-v2")
                         for s in ("duckdb", "postgresql")]:
        s = g[model][store]
        assert s["batch_encode_per_s"] > 0 and len(s["loads"]) == len(s["blocks"]) >= 2
        for name in ("gather on", "gather off"):
            v = s[name]
            assert v["ratio_to_batch_rate"] == pytest.approx(v["eight_adds_per_s"] / s["batch_encode_per_s"])
            assert v["one_p50_ms"] <= v["one_p99_ms"] and v["one_adds"] > 0
            assert v["errors"] == v["lost"] == v["doubled"] == 0


def test_add_profile_counts_an_idle_pool_thread_as_waiting_and_its_encode_as_the_model():
    """py-spy shows a pool thread waiting for work (in C) with the pool's loop as its leaf frame: it
    is no CPU; the same thread running the model's session has the e5 encoder's frames below it."""
    from bench.add_profile import categorize

    head = ("thread (1): memctl-e5_0;Thread._bootstrap (threading.py:1002);Thread.run (threading.py:982);"
            "_worker (concurrent/futures/thread.py:")
    assert categorize(head + "81)") == "waiting"
    working = head + ("83);_WorkItem.run (concurrent/futures/thread.py:58);"
                      "E5Encoder._pooled.<locals>.<lambda> (memory_core/embedding/e5.py:395);"
                      "E5Encoder._run (memory_core/embedding/e5.py:408)")
    assert categorize(working) == "the model (ONNX Runtime / torch)"
    judging = ("thread (2): memctl-writes;WriteQueue.run (memory_core/server/writes.py:112);"
               "find (memory_core/curation/conflicts/candidates.py:268);same_subject (memory_core/curation/conflicts/subject.py:140)")
    assert categorize(judging) == "contradiction check", "the candidates' rules ran under the write queue's frame"
