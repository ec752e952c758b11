"""Where a served add's CPU goes: N clients adding through a real `memctl serve`, the CPU of every
server thread per add, and the clients' own.

    python -m bench.server_cpu [--clients 8] [--per-client 60] [--bank postgresql://...]

A fresh bank file (or the PostgreSQL database given, which must hold no bank yet), the benchmark's
statements (`bench._util.memory_statements`), the server's threads read from
``/proc/<pid>/task/*/stat`` before and after the load (by thread id: CPython does not name its
threads for the kernel; `py-spy dump --pid` does). No goal is checked: this is the measure behind
BENCHMARKS.md's "Concurrent adds and the model's batch rate", made repeatable so that an
optimization can be compared in turns against the commit before it.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

from bench.serve import _concurrent_adds, _start


def thread_cpu(pid: int) -> dict[int, float]:
    """CPU seconds (user + system) of each thread of process ``pid``, by thread id."""
    tick = os.sysconf("SC_CLK_TCK")
    out = {}
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/stat", encoding="ascii") as fh:
                fields = fh.read().rsplit(")", 1)[1].split()
        except FileNotFoundError:  # the thread ended meanwhile
            continue
        out[int(tid)] = (int(fields[11]) + int(fields[12])) / tick
    return out


def measure(bank: str, clients: int, per_client: int) -> dict:
    """Serve ``bank``, warm it up, let ``clients`` clients add ``per_client`` memories each; adds/s,
    the server's CPU per add (all threads, and the busiest ones by id), the clients' CPU per add."""
    import httpx

    from memory_core import MemoryBank

    with MemoryBank.open(bank) as b:
        _, token = b.tokens.create("bench", ["bench"])
    proc, url = _start(bank)
    headers = {"Authorization": f"Bearer {token}"}
    try:
        with httpx.Client(base_url=url, headers=headers, timeout=60) as c:  # the model, the file, the namespace
            c.post("/v1/memories", json={"text": "warm up the model and the file"}).raise_for_status()
        before, own = thread_cpu(proc.pid), os.times()
        out = _concurrent_adds(url, headers, lambda: None, per_client, clients)
        after, own_after = thread_cpu(proc.pid), os.times()
    finally:
        proc.terminate()
        proc.wait(60)
    n = out["adds"]
    per_thread = sorted(((after[t] - before.get(t, 0.0)) * 1000 / n, t) for t in after)[::-1]
    return {"clients": clients, "adds": n, "adds_per_s": out["adds_per_s"], "errors": out["errors"],
            "server_cpu_ms_per_add": sum(ms for ms, _ in per_thread),
            "busiest_threads_ms_per_add": {t: round(ms, 2) for ms, t in per_thread[:4]},
            "clients_cpu_ms_per_add": 1000 * ((own_after.user - own.user) + (own_after.system - own.system)) / n,
            "load_average": os.getloadavg()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--per-client", type=int, default=60)
    parser.add_argument("--bank", help="a PostgreSQL URL of an empty database (default: a new bank file)")
    args = parser.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    with tempfile.TemporaryDirectory() as tmp:
        r = measure(args.bank or str(Path(tmp) / "served.duckdb"), args.clients, args.per_client)
    print(f"{r['adds']} adds by {r['clients']} clients: {r['adds_per_s']:.1f}/s, {r['errors']} errors "
          f"(load average {', '.join(f'{x:.2f}' for x in r['load_average'])}, {time.strftime('%H:%M')})")
    print(f"server CPU per add {r['server_cpu_ms_per_add']:.2f} ms; busiest threads (id: ms per add) "
          f"{r['busiest_threads_ms_per_add']}; the clients' CPU per add {r['clients_cpu_ms_per_add']:.2f} ms")


if __name__ == "__main__":
    main()
