"""Dashboard speed at scale (issue 6, item 8): a Tune slider move, Browse filters, cold start.

    python -m bench --only dashboard          (or: python -m bench.dashboard --memories 100000)

Memories carry ready-made unit vectors (random, 384-d) so building the bank measures the store,
not the model; queries are embedded once and cached, as they are while an operator moves a
slider. Slider and Browse figures are server-side times (what the Streamlit script waits for),
medians and p95 over repeats. Cold start is the time from launching
``python -m streamlit run app.py`` on that bank to the first page's content rendered in
Debian's chromium (driven by Playwright): the server start, the model and bank opening, and the
Overview page's queries.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import timedelta
from pathlib import Path

import numpy as np

from bench._util import NOW, ROOT, machine, synthetic_rows, timed, unit_vectors

os.environ.setdefault("HF_HUB_OFFLINE", "1")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def cold_start(bank_path: Path, timeout: float = 120.0) -> dict:
    """Seconds from launching the dashboard to the Overview page's title rendered in a browser."""
    chromium = os.environ.get("CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        return {"unavailable": "playwright is not installed"}
    if not Path(chromium).exists():
        return {"unavailable": f"no chromium at {chromium}"}
    port = _free_port()
    env = dict(os.environ, HF_HUB_OFFLINE="1", TOKENIZERS_PARALLELISM="false")
    env.pop("MEMCTL_PASSWORD", None)
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=chromium, args=["--no-sandbox"])
        page = browser.new_page()
        t0 = time.perf_counter()
        proc = subprocess.Popen(
            [sys.executable, "-m", "streamlit", "run", "app.py", "--server.headless", "true",
             "--server.port", str(port), "--server.address", "127.0.0.1", "--browser.gatherUsageStats", "false",
             "--", "--bank", str(bank_path)],
            cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            served = None
            while time.perf_counter() - t0 < timeout:
                try:
                    page.goto(f"http://127.0.0.1:{port}/", timeout=5000)
                    served = time.perf_counter() - t0
                    break
                except Exception:  # the server is not listening yet
                    time.sleep(0.1)
            if served is None:
                return {"error": f"the dashboard did not answer within {timeout:g} s"}
            page.get_by_role("heading", name="Memory Console").first.wait_for(timeout=timeout * 1000)
            rendered = time.perf_counter() - t0
        finally:
            proc.terminate()
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
            browser.close()
    return {"first_html_s": served, "first_page_rendered_s": rendered}


def measure(memories: int, repeats: int, with_cold_start: bool = True) -> dict:
    from memory_core import MemoryBank, ScoringParams
    from memory_core.embedding.embedder import get_embedder

    embedder = get_embedder()
    result: dict = {"machine": machine(), "memories": memories, "repeats": repeats}
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "scale.duckdb"
        bank = MemoryBank.open(path, embedder=embedder)
        vectors = unit_vectors(memories, embedder.dim, seed=7)
        t = time.perf_counter()
        bank.add_many(synthetic_rows(memories, seed=7, vectors=vectors))
        result["import_with_vectors_s"] = time.perf_counter() - t
        query = "what did I decide about the database project?"
        embedder.encode_one(query, kind="query")
        bank.recall(query, namespace="big", record=False)  # loads the namespace index once
        params = [ScoringParams().replace(alpha=a, threshold=0.0, k=15) for a in np.linspace(0.2, 0.9, repeats)]
        it = iter(params * 2)
        result["slider_rerank"] = timed(lambda: bank.recall(query, namespace="big", params=next(it), now=NOW,
                                                              record=False), repeats)
        filters = [dict(category=None, min_importance=0.5), dict(created_after=NOW - timedelta(days=90)),
                   dict(contains="marathon", order="importance")]
        fit = iter(filters * repeats)

        def browse() -> None:
            f = next(fit)
            bank.memories(namespace="big", limit=50, **f)
            bank.count(namespace="big", **{k: v for k, v in f.items() if k != "order"})

        result["browse_filter_page"] = timed(browse, repeats)
        bank.close()
        if with_cold_start:
            runs = [cold_start(path) for _ in range(3 if memories >= 50_000 else 1)]
            ok = [r for r in runs if "first_page_rendered_s" in r]
            result["cold_start"] = ({"first_html_s": statistics.median(r["first_html_s"] for r in ok),
                                     "first_page_rendered_s": statistics.median(r["first_page_rendered_s"] for r in ok),
                                     "runs": len(ok)} if ok else runs[0])
    result["targets"] = {"slider_rerank_ms": 150, "browse_filter_page_ms": 300, "cold_start_s": 10}
    return result


def run(quick: bool, smallest: bool = False) -> dict:
    """The entry point's hook: 100k memories (full), 10k (quick), 1k without cold start (smallest)."""
    if smallest:
        return measure(1_000, 5, with_cold_start=False)
    return measure(10_000 if quick else 100_000, 10 if quick else 30)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--memories", type=int, default=100_000)
    parser.add_argument("--repeats", type=int, default=30)
    parser.add_argument("--json", dest="json_out", default=None)
    args = parser.parse_args()
    result = measure(args.memories, args.repeats)
    print(json.dumps(result, indent=2))
    if args.json_out:
        Path(args.json_out).write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
