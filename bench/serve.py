"""`memctl serve` side by side with the library and mem0 (issue 15, item 6), in one run.

On a fresh bank served by a real `memctl serve` process (loopback HTTP, a bearer token):

- one client adding one memory per request, sequentially;
- 8 clients (threads, each with its own keep-alive connection) adding one memory per request at
  once: aggregate adds/s, errors, and every acknowledged id checked in the bank afterwards;
- recall over HTTP (query embedding included) against recall in process on a copy of the bank,
  the same queries in rounds that take turns, each asked once per process (no cached query
  vector on either side);

- the dashboard's pages (app.py under Streamlit's AppTest, opened on the same bank file) loaded in
  turn while the 8 clients write: page load p50/p95;

and in this process, for comparison: sequential ``MemoryBank.add`` by the bank's only user,
mem0's ``Memory.add(infer=False)`` (when mem0ai is installed: ``pip install -e '.[bench]'``), and
the model alone (the ceiling of every adds/s figure).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from bench._util import ROOT, WORDS, machine, memory_statements, model_ceiling, percentiles
from dashboard.common import PAGES as DASHBOARD_PAGES, page_file

CLIENTS = 8
PAGES = tuple(page_file(module) for module, _, _ in DASHBOARD_PAGES)


def _sizes(quick: bool, smallest: bool) -> dict[str, int]:
    if smallest:
        return {"sequential": 10, "per_client": 3, "queries": 5, "library": 10, "page_rounds": 1}
    if quick:
        return {"sequential": 200, "per_client": 50, "queries": 100, "library": 100, "page_rounds": 2}
    return {"sequential": 1000, "per_client": 250, "queries": 300, "library": 300, "page_rounds": 5}


def _queries(n: int, seed: int) -> list[str]:
    import numpy as np

    rng = np.random.default_rng(seed)
    return [f"what about the {' '.join(WORDS[j] for j in rng.integers(0, len(WORDS), 3))}? ({seed}-{i})"
            for i in range(n)]


def _start(bank_path: Path) -> tuple[subprocess.Popen, str]:
    import socket

    import httpx

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = dict(os.environ, HF_HUB_OFFLINE="1")
    proc = subprocess.Popen([sys.executable, "-m", "memory_core.cli", "--bank", str(bank_path), "serve", "--port",
                             str(port), "--log-level", "warning"], env=env, cwd=ROOT,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"memctl serve exited: {proc.stderr.read()}")
        try:
            if httpx.get(url + "/v1/health", timeout=1).status_code == 200:
                return proc, url
        except httpx.HTTPError:
            time.sleep(0.1)
    proc.kill()
    raise RuntimeError("memctl serve did not start")


def _concurrent_adds(url: str, headers: dict, meanwhile, per_client: int | None, clients: int = CLIENTS) -> dict:
    """``clients`` clients add one memory per request, each ``per_client`` times (or until
    ``meanwhile`` returns); ``meanwhile()`` runs in this thread as they write and its result is kept."""
    import httpx

    acked: list[int] = []
    errors: list[str] = []
    lock = threading.Lock()
    stop = threading.Event()

    def client(i: int) -> None:
        with httpx.Client(base_url=url, headers=headers, timeout=60) as c:
            n = 0
            while not stop.is_set() and (per_client is None or n < per_client):
                n += 1
                try:
                    r = c.post("/v1/memories", json={"text": f"client {i} says: {memory_statements(1, seed=1000 * i + n)[0]}"})
                    if r.status_code == 201:
                        with lock:
                            acked.append(r.json()["id"])
                    else:
                        errors.append(f"{r.status_code} {r.text[:200]}")
                except httpx.HTTPError as exc:
                    errors.append(repr(exc))

    threads = [threading.Thread(target=client, args=(i,)) for i in range(clients)]
    t = time.perf_counter()
    for th in threads:
        th.start()
    try:
        extra = meanwhile()
    finally:  # the clients stop even when what ran meanwhile failed
        if per_client is None:
            stop.set()
        for th in threads:
            th.join()
    elapsed = time.perf_counter() - t
    out = {"clients": clients, "adds": len(acked), "adds_per_s": len(acked) / elapsed, "errors": len(errors),
           "first_errors": errors[:3], "acked": acked}
    if extra is not None:
        out["pages"] = extra
    return out


def _page_loads(bank_path: Path, rounds: int) -> dict:
    """Every dashboard page, ``rounds`` times, opened on the bank file (as `make run` does).

    AppTest's ``switch_page`` runs a page's script alone, without app.py, which in the dashboard
    runs every page inside ``bank.keep_store()`` (one hand-over of the file per page, not one per
    read); each page is run inside it here as well."""
    from streamlit import config
    from streamlit.testing.v1 import AppTest

    from memory_core import MemoryBank

    config.set_option("server.address", "127.0.0.1")
    os.environ["MEMCTL_BANK"] = str(bank_path)
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120).run()
    samples, problems = [], []
    by_page: dict[str, list[float]] = {page: [] for page in PAGES}
    with MemoryBank.open(bank_path) as dashboard:
        for _ in range(rounds):
            for page in PAGES:
                t = time.perf_counter()
                with dashboard.keep_store():
                    at.switch_page(page).run()
                samples.append(time.perf_counter() - t)
                by_page[page].append(samples[-1])
                if at.exception:
                    problems.append(f"{page}: {at.exception[0].message[:200]}")
    slowest = {page: round(max(s) * 1000) for page, s in by_page.items()}
    return {**percentiles(samples), "problems": problems, "max_ms_by_page": slowest}


def _server_phase(bank_path: Path, token: str, sizes: dict[str, int]) -> dict:
    import httpx

    proc, url = _start(bank_path)
    headers = {"Authorization": f"Bearer {token}"}
    out: dict = {}
    try:
        with httpx.Client(base_url=url, headers=headers, timeout=60) as c:
            c.post("/v1/memories", json={"text": "warm up the model and the file"}).raise_for_status()
            texts = memory_statements(sizes["sequential"], seed=1)
            t = time.perf_counter()
            for text in texts:
                c.post("/v1/memories", json={"text": text}).raise_for_status()
            out["sequential_adds_per_s"] = len(texts) / (time.perf_counter() - t)

        out["concurrent"] = _concurrent_adds(url, headers, lambda: None, sizes["per_client"])
        out["dashboard_under_load"] = _concurrent_adds(url, headers, lambda: _page_loads(bank_path, sizes["page_rounds"]),
                                                       None)
        acked = out["concurrent"].pop("acked") + out["dashboard_under_load"].pop("acked")

        with httpx.Client(base_url=url, headers=headers, timeout=60) as c:
            lost = [mid for mid in acked if c.get(f"/v1/memories/{mid}").status_code != 200]
            out["concurrent"]["lost"] = len(lost)
    finally:
        proc.terminate()
        proc.wait(60)
    return out


RECALL_ROUNDS = 6


def _recall_side_by_side(bank_path: Path, token: str, sizes: dict[str, int]) -> tuple[dict, dict]:
    """Recall over HTTP and in process, the same queries in rounds that take turns (which goes
    first alternates), so the machine's drift falls on both alike. The library opens a copy of the
    served bank (the same memories, and no file handed between the two processes); each process
    embeds every query once, as neither has seen it."""
    import httpx

    from memory_core import MemoryBank

    copy = bank_path.with_name("in_process.duckdb")
    shutil.copy(bank_path, copy)
    queries = _queries(sizes["queries"], seed=2)
    per_round = max(1, len(queries) // RECALL_ROUNDS)
    http_samples: list[float] = []
    lib_samples: list[float] = []
    proc, url = _start(bank_path)
    try:
        with httpx.Client(base_url=url, headers={"Authorization": f"Bearer {token}"}, timeout=60) as c, \
                MemoryBank.open(copy) as bank:
            c.post("/v1/recall", json={"query": "warm up"}).raise_for_status()
            bank.recall("warm up", namespace="bench")

            def over_http(q: str) -> None:
                c.post("/v1/recall", json={"query": q}).raise_for_status()

            def in_process(q: str) -> None:
                bank.recall(q, namespace="bench")

            for r, start in enumerate(range(0, len(queries), per_round)):
                sides = [(over_http, http_samples), (in_process, lib_samples)]
                for ask, samples in sides if r % 2 == 0 else sides[::-1]:
                    for q in queries[start:start + per_round]:
                        t = time.perf_counter()
                        ask(q)
                        samples.append(time.perf_counter() - t)
    finally:
        proc.terminate()
        proc.wait(60)
    return percentiles(http_samples), percentiles(lib_samples)


def _library_adds(folder: Path, n: int) -> float:
    from memory_core import MemoryBank

    with MemoryBank.open(folder / "library.duckdb") as bank:
        bank.add("warm up the model and the file", namespace="bench")
        texts = memory_statements(n, seed=4)
        t = time.perf_counter()
        for text in texts:
            bank.add(text, namespace="bench")
        return n / (time.perf_counter() - t)


def _mem0_adds(folder: Path, n: int) -> float | None:
    try:
        from bench.mem0_compare import _mem0
    except ImportError:
        return None
    try:
        m = _mem0(folder)
    except ImportError:
        return None
    m.add("warm up", user_id="bench", infer=False)
    texts = memory_statements(n, seed=4)
    t = time.perf_counter()
    for text in texts:
        m.add(text, user_id="bench", infer=False)
    return n / (time.perf_counter() - t)


def run(quick: bool, smallest: bool = False) -> dict:
    from memory_core import MemoryBank

    sizes = _sizes(quick, smallest)
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        bank_path = folder / "served.duckdb"
        with MemoryBank.open(bank_path) as bank:
            _, token = bank.tokens.create("bench", ["bench"])
        served = _server_phase(bank_path, token, sizes)
        served["recall_http"], in_process = _recall_side_by_side(bank_path, token, sizes)
        library = _library_adds(folder, sizes["library"])
        mem0 = _mem0_adds(folder, sizes["library"])
    from bench import serve_gather

    result = {"machine": machine(), "sizes": sizes, **served, "recall_in_process": in_process,
              "library_adds_per_s": library, "mem0_adds_per_s": mem0, "model": model_ceiling(),
              "gather": serve_gather.run(quick, smallest)}
    result["recall_http_overhead_ms"] = served["recall_http"]["p50_ms"] - in_process["p50_ms"]
    result["targets"] = {
        "sequential_adds_per_s >= 60": served["sequential_adds_per_s"] >= 60,
        "8 clients >= 300 adds/s, 0 errors, 0 lost": (served["concurrent"]["adds_per_s"] >= 300
                                                       and not served["concurrent"]["errors"]
                                                       and not served["concurrent"]["lost"]),
        "recall over HTTP p50 <= in process + 3 ms": result["recall_http_overhead_ms"] <= 3,
        "dashboard pages p95 <= 2 s under the 8 clients": (served["dashboard_under_load"]["pages"]["p95_ms"] <= 2000
                                                            and not served["dashboard_under_load"]["pages"]["problems"]),
        "library sequential add >= 60/s": library >= 60,
        "8 clients >= 0.6 x the bare batch-encode rate (both models, DuckDB and PostgreSQL, same run)": all(
            result["gather"][model][store]["gather on"]["ratio_to_batch_rate"] >= 0.6
            for model in serve_gather.MODELS for store in serve_gather.STORES),
    }
    return result


def markdown(r: dict) -> str:
    c = r["concurrent"]
    mem0 = f"{r['mem0_adds_per_s']:.0f}" if r.get("mem0_adds_per_s") else "not installed"
    rows = [
        ("one client, one add per request (HTTP)", f"{r['sequential_adds_per_s']:.0f}", "≥ 60"),
        (f"{c['clients']} clients at once (HTTP), aggregate", f"{c['adds_per_s']:.0f}", "≥ 300"),
        ("the library, sequential `bank.add`", f"{r['library_adds_per_s']:.0f}", "≥ 60"),
        ("mem0 in process, `add(infer=False)`", mem0, ""),
    ]
    m = r.get("model")
    if m:
        rows += [("*the model alone, one statement per call*", f"*{m['per_s_batch_1']:.0f}*", ""),
                 ("*the model alone, eight per call*", f"*{m['per_s_batch_8']:.0f}*", "")]
    ceiling = "" if not m else (
        f"\nThe model alone (`bench._util.model_ceiling`, same run) embeds a statement one at a time in "
        f"{1000 / m['per_s_batch_1']:.1f} ms ({m['cpu_ms_per_text_batch_1']:.1f} ms of CPU) and takes "
        f"{m['cpu_ms_per_text_batch_8']:.1f} ms of CPU per statement in groups of eight: no add can be "
        f"faster than the first figure, and on {os.cpu_count()} cores no server can add more than "
        f"{1000 * (os.cpu_count() or 1) / m['cpu_ms_per_text_batch_8']:.0f}/s before anything but the model is counted.\n")
    table = "\n".join(f"| {a} | {b} | {t} |" for a, b, t in rows)
    met = "\n".join(f"- {name}: {'met' if ok else '**not met**'}" for name, ok in r["targets"].items())
    by_page = r["dashboard_under_load"]["pages"].get("max_ms_by_page")
    slowest = ("\nSlowest load of each page: " + ", ".join(f"{p.split('/')[-1][:-3]} {ms / 1000:.1f} s"
                                                        for p, ms in by_page.items()) + ".") if by_page else ""
    plot = "\n![serve](bench/results/serve.png)\n" if (Path(__file__).parent / "results" / "serve.png").exists() else ""
    return f"""## The server (`memctl serve`)

`python -m bench --only serve` (`bench/serve.py`): a real `memctl serve` on loopback with a bearer
token, a fresh bank, and the library and mem0 in the benchmark's process, in one run (load
average {r.get('load_average_1min')}). Every add is a short statement an agent would write
(`bench._util.memory_statements`: fifty people, fourteen kinds of fact), checked for contradictions
as agents' adds are (mem0's `infer=False` checks nothing); the bundled model embeds on ONNX Runtime.

| single adds | adds/s | goal |
|---|---|---|
{table}
{ceiling}
{c['clients']} clients: {c['adds']} adds acknowledged, {c['errors']} errors, {c['lost']} lost (every
acknowledged id read back).

The dashboard's pages (every page, {r['sizes']['page_rounds']} rounds, opened on the bank file) while
the {c['clients']} clients wrote: p50 {r['dashboard_under_load']['pages']['p50_ms'] / 1000:.2f} s, p95
{r['dashboard_under_load']['pages']['p95_ms'] / 1000:.2f} s; the clients added
{r['dashboard_under_load']['adds_per_s']:.0f}/s meanwhile, with {r['dashboard_under_load']['errors']} errors.{slowest}

Recall, query embedding included, the same {r['recall_in_process']['n']} queries over HTTP and in process (on a copy
of the bank) in rounds that take turns: over HTTP p50 {r['recall_http']['p50_ms']:.1f} ms
(p95 {r['recall_http']['p95_ms']:.1f}), in process p50 {r['recall_in_process']['p50_ms']:.1f} ms
(p95 {r['recall_in_process']['p95_ms']:.1f}): HTTP adds {r['recall_http_overhead_ms']:.1f} ms at p50.

{_gather_section(r)}
{met}
{plot}"""


def _gather_section(r: dict) -> str:
    """Issue 33's figures: 8 clients against the model's batch rate, the gatherer on and off."""
    if not r.get("gather"):
        return ""
    from bench import serve_gather

    return ("\nConcurrent adds against the model's own batch rate (`bench/serve_gather.py`, same run: two servers, the "
            "embedding gatherer on and off, in blocks that take turns):\n\n" + serve_gather.markdown(r["gather"]))
