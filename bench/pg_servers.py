"""Several `memctl serve` processes over one PostgreSQL database: staleness, read-your-writes, adds.

    python -m bench.pg_servers [--quick] [--json bench/results/pg_servers.json]

Two real ``memctl --bank postgresql://... serve`` processes (free loopback ports, a bearer token,
the bundled model) over a fresh ``memctl_test_<random>`` database (``MEMCTL_TEST_PG``, default
``postgresql://postgres@127.0.0.1:5432/postgres``; dropped afterwards):

- **staleness**: 4 clients add one memory per request on server A; after each acknowledged add
  the client recalls it on server B *without* ``min_seq``, again and again, until B returns it:
  p50 and p99 of the time from A's answer to B's first answer holding it (the resolution is one
  recall round trip, which is also reported);
- **read-your-writes**: the same, with the ``min_seq`` A's answer carried (``X-Memory-Seq``):
  B's first answer must hold the memory, every time;
- **adds**: 8 clients, 4 on each server, one add per request: aggregate adds/s, errors, and every
  acknowledged id read back from the database. Each add is a short statement an agent would write
  (``bench._util.memory_statements``, as in ``bench.serve``), checked for contradictions;
- **one client**: one add per request, sequentially, through one server, beside the same through a
  `memctl serve` of a DuckDB bank file in the same run;
- **workers**: 8 clients through one port, served by one process and by ``--workers 2``, in turns.

A module of ``python -m bench`` (``run(quick)``, ``markdown(result)``), so it can join its ORDER.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
STALENESS_CLIENTS = 4
ADD_CLIENTS = 8


def _sizes(quick: bool, smallest: bool) -> dict[str, int]:
    if smallest:
        return {"per_client": 5, "add_seconds": 2}
    if quick:
        return {"per_client": 25, "add_seconds": 5}
    return {"per_client": 100, "add_seconds": 15}


def _pct(samples: list[float], q: float) -> float:
    s = sorted(samples)
    return s[min(len(s) - 1, int(q * len(s)))] if s else float("nan")


def two_servers(url: str) -> tuple[Any, Any, str]:
    """Two ``memctl serve`` processes over the bank at ``url`` and an admin token's secret."""
    sys.path.insert(0, str(ROOT / "tests"))
    from memctl_server import Served

    from memory_core import MemoryBank

    with MemoryBank.open(url) as bank:
        _, token = bank.tokens.create("bench", [], admin=True)
    a = Served(url)
    try:
        b = Served(url)
    except BaseException:
        a.kill()
        raise
    for server in (a, b):  # the model loaded and the namespaces read: what is measured is the steady state
        warm(server.url, token)
    return a, b, token


def warm(url: str, token: str) -> None:
    """One add and one recall in each namespace the benchmark uses, so the server has its model
    and the namespaces' indexes loaded."""
    import httpx

    with httpx.Client(base_url=url, headers={"Authorization": f"Bearer {token}"}, timeout=120) as http:
        _warm_on(http)


def _warm_on(http: Any) -> None:
    """:func:`warm` through an open client (the server its connection reached)."""
    for ns in ("shared", "adds"):
        http.post("/v1/memories", json={"text": "warming up the server", "namespace": ns}).raise_for_status()
        http.post("/v1/recall", json={"query": "warming up", "namespace": ns, "record": False}).raise_for_status()


def warm_workers(url: str, token: str, workers: int) -> None:
    """:func:`warm` every worker of a ``memctl serve --workers``: new connections until each has
    been warmed (the kernel picks the worker of a connection)."""
    import httpx

    warmed: set[int] = set()
    deadline = time.monotonic() + 300
    while len(warmed) < workers:
        if time.monotonic() > deadline:
            raise RuntimeError(f"only workers {sorted(warmed)} of {workers} answered")
        with httpx.Client(base_url=url, headers={"Authorization": f"Bearer {token}"}, timeout=120) as http:
            worker = http.get("/v1/health").json()["worker"]
            if worker not in warmed:
                _warm_on(http)
                warmed.add(worker)


def eight_through_one(url: str, token: str, seconds: float, workers: int) -> dict[str, Any]:
    """8 clients adding through one ``memctl serve`` of ``workers`` processes (one port)."""
    from memctl_server import Served

    server = Served(url, "--workers", str(workers))
    try:
        warm_workers(server.url, token, workers)
        r = concurrent_adds([server.url], token, seconds)
    finally:
        server.stop()
    r["workers"] = workers
    return r


def staleness(a_url: str, b_url: str, token: str, per_client: int, min_seq: bool = False) -> dict[str, Any]:
    """4 clients add on A; each add is recalled on B until B returns it (with or without the
    ``min_seq`` A's answer carried). Lags from A's answer to B's answer holding it, in seconds."""
    import httpx

    headers = {"Authorization": f"Bearer {token}"}
    lags: list[float] = []
    tries: list[int] = []
    rounds: list[float] = []
    errors: list[str] = []
    lock = threading.Lock()
    tag = "rw" if min_seq else "st"

    def client(c: int) -> None:
        with httpx.Client(base_url=a_url, headers=headers, timeout=30) as on_a, \
                httpx.Client(base_url=b_url, headers=headers, timeout=30) as on_b:
            for i in range(per_client):
                word = f"{tag}{c}q{i}zz"
                r = on_a.post("/v1/memories", json={"text": f"client {c} noted the code word {word}",
                                                    "namespace": "shared"})
                if r.status_code != 201:
                    errors.append(f"add: {r.status_code} {r.text[:200]}")
                    continue
                acked, mid = time.perf_counter(), r.json()["id"]
                body: dict[str, Any] = {"query": f"code word {word}", "namespace": "shared", "threshold": 0,
                                        "k": 10, "record": False}
                if min_seq:
                    body["min_seq"] = int(r.headers["x-memory-seq"])
                n = 0
                while True:
                    n += 1
                    t = time.perf_counter()
                    got = on_b.post("/v1/recall", json=body)
                    done = time.perf_counter()
                    if got.status_code != 200:
                        errors.append(f"recall: {got.status_code} {got.text[:200]}")
                        break
                    with lock:
                        rounds.append(done - t)
                    if mid in [h["memory"]["id"] for h in got.json()["hits"]]:
                        with lock:
                            lags.append(done - acked)
                            tries.append(n)
                        break
                    if done - acked > 10:
                        errors.append(f"memory {mid} not returned by B 10 s after A acknowledged it")
                        break

    threads = [threading.Thread(target=client, args=(c,)) for c in range(STALENESS_CLIENTS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return {"clients": STALENESS_CLIENTS, "adds": len(lags), "errors": errors[:5], "error_count": len(errors),
            "p50_ms": 1000 * statistics.median(lags) if lags else None, "p99_ms": 1000 * _pct(lags, 0.99),
            "max_ms": 1000 * max(lags) if lags else None,
            "first_recall_had_it": sum(1 for n in tries if n == 1), "recall_round_trip_p50_ms":
                1000 * statistics.median(rounds) if rounds else None}


def concurrent_adds(urls: list[str], token: str, seconds: float, clients: int = ADD_CLIENTS) -> dict[str, Any]:
    """``clients`` clients spread over the servers, one add per request for ``seconds``."""
    import httpx

    from bench._util import memory_statements

    headers = {"Authorization": f"Bearer {token}"}
    acked: list[int] = []
    errors: list[str] = []
    lock = threading.Lock()
    stop = threading.Event()
    texts = iter(memory_statements(int(seconds * 1000) + 1000, seed=len(urls) * 100 + clients))

    def client(c: int) -> None:
        with httpx.Client(base_url=urls[c % len(urls)], headers=headers, timeout=60) as http:
            while not stop.is_set():
                with lock:
                    text = next(texts)
                r = http.post("/v1/memories", json={"text": text, "namespace": "adds"})
                if r.status_code == 201:
                    with lock:
                        acked.append(r.json()["id"])
                else:
                    errors.append(f"{r.status_code} {r.text[:200]}")

    threads = [threading.Thread(target=client, args=(c,)) for c in range(clients)]
    started = time.perf_counter()
    for t in threads:
        t.start()
    time.sleep(seconds)
    stop.set()
    for t in threads:
        t.join()
    elapsed = time.perf_counter() - started
    return {"clients": clients, "servers": len(urls), "adds": len(acked), "adds_per_s": len(acked) / elapsed,
            "errors": errors[:5], "error_count": len(errors), "acked": acked}


def _one_client_on_a_file(seconds: float) -> dict[str, Any]:
    """One client adding one memory per request through a ``memctl serve`` of a new DuckDB bank
    file: the side-by-side figure for the same client on PostgreSQL."""
    from memctl_server import Served

    from memory_core import MemoryBank

    with tempfile.TemporaryDirectory(prefix="memctl-bench-") as tmp:
        path = Path(tmp) / "bank.duckdb"
        with MemoryBank.open(path) as bank:
            _, token = bank.tokens.create("bench", [], admin=True)
        server = Served(path)
        try:
            warm(server.url, token)
            r = concurrent_adds([server.url], token, seconds, clients=1)
        finally:
            server.stop()
        with MemoryBank.open(path) as bank:
            stored = {m.id for m in bank.memories(namespace="adds", status=None, limit=None)}
        r["lost"] = len(set(r.pop("acked")) - stored)
    return r


def run(quick: bool, smallest: bool = False) -> dict[str, Any]:
    sys.path.insert(0, str(ROOT / "tests"))
    from bench._util import model_ceiling

    os.environ.setdefault("MEMCTL_CACHE_DIR", tempfile.mkdtemp(prefix="memctl-bench-"))
    # No OMP_NUM_THREADS here: the servers run with the threads `memctl serve` takes by default.
    import psycopg
    import stores

    sizes = _sizes(quick, smallest)
    url = stores.create_database()
    try:
        a, b, token = two_servers(url)
        try:
            stale = staleness(a.url, b.url, token, sizes["per_client"])
            ryw = staleness(a.url, b.url, token, sizes["per_client"], min_seq=True)
            adds = concurrent_adds([a.url, b.url], token, sizes["add_seconds"])
            one = concurrent_adds([a.url], token, sizes["add_seconds"], clients=1)
        finally:
            a.stop()
            b.stop()
        # One port, one process against two (--workers 2), in turns.
        through_one = [eight_through_one(url, token, sizes["add_seconds"], workers) for workers in (1, 2, 1, 2)]
        one_file = _one_client_on_a_file(sizes["add_seconds"])
        model = model_ceiling()
        with psycopg.connect(url) as con:
            stored = {r[0] for r in con.execute("SELECT id FROM memories WHERE namespace = 'adds'").fetchall()}
        for r in (adds, one, *through_one):
            r["lost"] = len(set(r.pop("acked")) - stored)
    finally:
        stores.drop_database(url)
    return {"sizes": sizes, "load_average_1min_end": round(os.getloadavg()[0], 1), "staleness": stale,
            "read_your_writes": ryw, "adds": adds, "one_client": one, "one_client_file": one_file, "model": model,
            "through_one_port": through_one,
            "targets": {"staleness p99 <= 1 s": stale["p99_ms"] is not None and stale["p99_ms"] <= 1000,
                        "read-your-writes: B's first answer holds the add": (
                            ryw["first_recall_had_it"] == ryw["adds"] > 0 and not ryw["error_count"]),
                        "one add per request through one server >= 100/s": (
                            one["adds_per_s"] >= 100 and not one["error_count"] and not one["lost"]),
                        "8 clients over 2 servers >= 300 adds/s, 0 errors, 0 lost": (
                            adds["adds_per_s"] >= 300 and not adds["error_count"] and not adds["lost"])}}


def markdown(r: dict[str, Any]) -> str:
    s, w, a, o, f = r["staleness"], r["read_your_writes"], r["adds"], r["one_client"], r["one_client_file"]
    m = r.get("model")
    ceiling = "" if not m else (
        f"\nThe model alone in the same run (`bench._util.model_ceiling`): {m['per_s_batch_1']:.0f} statements/s "
        f"one per call ({m['cpu_ms_per_text_batch_1']:.1f} ms of CPU each), {m['per_s_batch_8']:.0f}/s eight per call "
        f"({m['cpu_ms_per_text_batch_8']:.1f} ms each): the ceiling of one client's adds, and of all servers' adds "
        f"on {os.cpu_count()} cores at {1000 * (os.cpu_count() or 1) / m['cpu_ms_per_text_batch_8']:.0f}/s.\n")
    met = "\n".join(f"- {name}: {'met' if ok else '**not met**'}" for name, ok in r["targets"].items())
    return f"""## Several servers over one PostgreSQL database

`python -m bench.pg_servers` (`bench/pg_servers.py`): two real `memctl serve` processes over one
database, load average (1 min, start and end) {r.get('load_average_1min', r.get('load_average_1min_end'))}.

| | p50 | p99 | max |
|---|---|---|---|
| add acknowledged by A -> returned by a recall on B ({s['adds']} adds, {s['clients']} clients) | {s['p50_ms']:.0f} ms | {s['p99_ms']:.0f} ms | {s['max_ms']:.0f} ms |
| the same with `min_seq` (read-your-writes) | {w['p50_ms']:.0f} ms | {w['p99_ms']:.0f} ms | {w['max_ms']:.0f} ms |

Without `min_seq`, B's first recall held the add {s['first_recall_had_it']} times of {s['adds']} (one
recall round trip on B: p50 {s['recall_round_trip_p50_ms']:.0f} ms); with it, {w['first_recall_had_it']} of
{w['adds']}. {a['clients']} clients over {a['servers']} servers, one add per request:
{a['adds_per_s']:.0f} adds/s in all, {a['error_count']} errors, {a['lost']} lost.

{_workers_table(r.get("through_one_port"))}
| one client, one add per request, one server | adds/s | errors | lost |
|---|---|---|---|
| PostgreSQL | {o['adds_per_s']:.0f} | {o['error_count']} | {o['lost']} |
| DuckDB bank file (same run) | {f['adds_per_s']:.0f} | {f['error_count']} | {f['lost']} |
{ceiling}
{met}
"""


def _workers_table(runs: list[dict[str, Any]] | None) -> str:
    """8 clients through one port: one server process against ``--workers 2``, in turns."""
    if not runs:
        return ""
    rows = "\n".join(f"| {r['workers']} | {r['adds_per_s']:.0f} | {r['error_count']} | {r['lost']} |" for r in runs)
    return f"""
8 clients through one port, one `memctl serve` process against `memctl serve --workers 2` (two
processes, one core each), in turns:

| workers | adds/s | errors | lost |
|---|---|---|---|
{rows}
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    load = round(os.getloadavg()[0], 1)
    result = run(args.quick)
    result = {"load_average_1min": [load, result["load_average_1min_end"]], **result}  # as python -m bench has it
    print(markdown(result))
    if args.json:
        args.json.write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
