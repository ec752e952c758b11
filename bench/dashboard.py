"""Dashboard speed at scale (issue 6, item 8): a Tune slider move, Browse filters, cold start, and
in a real browser a warm page switch and Browse's filter and search.

    python -m bench --only dashboard          (or: python -m bench.dashboard --memories 100000)
    python -m bench.dashboard --demo          (the same browser rounds on the demo bank)

Memories carry ready-made unit vectors (random, 384-d) so building the bank measures the store,
not the model; queries are embedded once and cached, as they are while an operator moves a
slider. Slider and Browse figures are server-side times (what the Streamlit script waits for),
medians and p95 over repeats. Cold start is the time from launching
``python -m streamlit run app.py`` on that bank to the first page's content rendered in
Debian's chromium (driven by Playwright): the server start, the model and bank opening, and the
Overview page's queries. A page switch is a click on a sidebar link until the page's script has
finished (Streamlit's run state back to "not running"), measured in chromium on a dashboard already
open (warm: each page visited once before); Browse's filter is a facet picked, its search a word
typed in "Text contains" (applied after the typing pause, which the figure leaves out).
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


def _browser() -> tuple[str, dict | None]:
    """Debian's chromium (or $CHROMIUM) for Playwright, or why the browser rounds cannot run."""
    chromium = os.environ.get("CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return chromium, {"unavailable": "playwright is not installed"}
    if not Path(chromium).exists():
        return chromium, {"unavailable": f"no chromium at {chromium}"}
    return chromium, None


def cold_start(bank_path: Path, timeout: float = 120.0) -> dict:
    """Seconds from launching the dashboard to the Overview page's title rendered in a browser."""
    chromium, missing = _browser()
    if missing:
        return missing
    from playwright.sync_api import sync_playwright
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


_IDLE = """() => { const app = document.querySelector('[data-testid="stApp"]');
    return app && app.getAttribute('data-test-script-state') === 'notRunning'; }"""
# Counts the script runs the page starts (each leaves "notRunning"), so a run shorter than a poll is seen.
_COUNT_RUNS = """() => { if (window.__runs !== undefined) return; window.__runs = 0;
    const app = document.querySelector('[data-testid="stApp"]');
    new MutationObserver(records => { for (const r of records) if (r.oldValue === 'notRunning') window.__runs++; })
        .observe(app, {attributes: true, attributeFilter: ['data-test-script-state'], attributeOldValue: true}); }"""
LIVE_PAUSE_S = 0.4  # Browse's "Text contains" applies this long after the last key (dashboard/browse.py)


def _until_idle(page, action, timeout: float = 120.0) -> float:
    """Seconds from ``action()`` until the page's script has run and finished."""
    page.evaluate(_COUNT_RUNS)
    runs = page.evaluate("window.__runs")
    t = time.perf_counter()
    action()
    try:
        page.wait_for_function(f"window.__runs > {runs}", timeout=3000, polling=10)
    except Exception:  # the action started no run (nothing changed): the page is idle already
        pass
    page.wait_for_function(_IDLE, timeout=timeout * 1000, polling=10)
    return time.perf_counter() - t


def browser_rounds(bank_path: Path, namespace: str, facet: tuple[str, str], word: str, rounds: int = 3,
                   timeout: float = 180.0) -> dict:
    """Warm page switches over every page of the sidebar, then Browse's filter and search, in chromium."""
    chromium, missing = _browser()
    if missing:
        return missing
    from playwright.sync_api import sync_playwright
    sys.path.insert(0, str(ROOT))
    from dashboard.common import PAGES

    port = _free_port()
    env = dict(os.environ, HF_HUB_OFFLINE="1", TOKENIZERS_PARALLELISM="false")
    env.pop("MEMCTL_DASHBOARD_PASSWORD", None)
    proc = subprocess.Popen(
        [sys.executable, "-m", "streamlit", "run", "app.py", "--server.headless", "true", "--server.port", str(port),
         "--server.address", "127.0.0.1", "--browser.gatherUsageStats", "false", "--", "--bank", str(bank_path)],
        cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    switches: dict[str, list[float]] = {title: [] for _, title, _ in PAGES}
    try:
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=chromium, args=["--no-sandbox"])
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            deadline = time.perf_counter() + timeout
            while True:
                try:
                    page.goto(f"http://127.0.0.1:{port}/?ns={namespace}", timeout=5000)
                    break
                except Exception:  # the server is not listening yet
                    if time.perf_counter() > deadline:
                        return {"error": f"the dashboard did not answer within {timeout:g} s"}
                    time.sleep(0.2)
            page.get_by_role("heading", name="Memory Console").first.wait_for(timeout=timeout * 1000)
            page.wait_for_function(_IDLE, timeout=timeout * 1000)
            nav = page.locator('[data-testid="stSidebarNav"] a')
            for round_no in range(rounds + 1):  # the first round warms every page up; it is not counted
                for _, title, _ in [*PAGES[1:], PAGES[0]]:
                    spent = _until_idle(page, nav.filter(has_text=title).first.click, timeout)
                    if round_no:
                        switches[title].append(spent)
            nav.filter(has_text="Browse").first.click()
            page.wait_for_function(_IDLE, timeout=timeout * 1000)
            filtered, searched = [], []
            for i in range(rounds):
                value = facet[1] if i % 2 == 0 else "(any)"
                box = page.locator(f".st-key-{facet[0]} [data-testid='stSelectbox']")
                filtered.append(_until_idle(page, lambda: (box.click(), page.get_by_role(
                    "option", name=value if value == "(any)" else None).filter(has_text=value).first.click()), timeout))
                text = page.get_by_label("Text contains")
                searched.append(_until_idle(page, lambda: text.fill(word if i % 2 == 0 else ""), timeout) - LIVE_PAUSE_S)
            browser.close()
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
    every = [t for ts in switches.values() for t in ts]
    return {"page_switch": {"p50_s": statistics.median(every), "max_s": max(every), "n": len(every),
                            "slowest_page": max(switches, key=lambda k: statistics.median(switches[k]))},
            "per_page_p50_s": {k: statistics.median(v) for k, v in switches.items()},
            "browse_filter": {"p50_s": statistics.median(filtered), "max_s": max(filtered), "n": len(filtered)},
            "browse_search": {"p50_s": statistics.median(searched), "max_s": max(searched), "n": len(searched)}}


def demo_rounds(rounds: int = 5) -> dict:
    """The browser rounds on the demo bank (built into a temporary file with the default model)."""
    from memory_core import MemoryBank, demo
    from memory_core.embedding.embedder import get_embedder

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "demo.duckdb"
        with MemoryBank.open(path, embedder=get_embedder()) as bank:
            demo.build(bank)
            namespace = bank.namespaces()[0][0]
            count = bank.count()
        out = browser_rounds(path, namespace, ("category", "preference"), "tea", rounds)
    return {"machine": machine(), "memories": count, **out}


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
            result["browser"] = browser_rounds(path, "big", ("category", "other"), "marathon", 5)
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
    result = measure(10_000 if quick else 100_000, 10 if quick else 30)
    result["demo"] = demo_rounds(3 if quick else 5)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--memories", type=int, default=100_000)
    parser.add_argument("--repeats", type=int, default=30)
    parser.add_argument("--json", dest="json_out", default=None)
    parser.add_argument("--demo", action="store_true", help="only the browser rounds, on the demo bank")
    args = parser.parse_args()
    result = demo_rounds() if args.demo else measure(args.memories, args.repeats)
    print(json.dumps(result, indent=2))
    if args.json_out:
        Path(args.json_out).write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
