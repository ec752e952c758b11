"""How far 8 clients' adds can go on this machine: the CPU an add costs, model and not (issue 33).

    python -m bench.serve_budget [--quick] [--json FILE]

For each model, one `memctl serve` on a fresh DuckDB bank file, and in the same run:

* the model's own cost: CPU seconds per text and texts/s embedding the benchmark's statements in
  batches of 32 in this process (the bare batch rate that serve_gather's ratio divides by);
* the HTTP floor: 8 clients asking ``GET /v1/health`` (a token check, a route, a JSON answer, no
  store, no model): requests/s, and CPU per request of the server and of the clients' process;
* adds: 8 clients adding one memory per request: adds/s, CPU per add of the server and the clients.

The machine's cores bound every rate: at most ``cores / CPU per add`` adds a second, whatever
gathers or overlaps. So the **ceiling** of the ratio to the batch rate is
``cores / (model CPU per text + the rest of an add's CPU) / batch rate``, and the ceiling with a
free store is the same with only the HTTP floor beside the model: if that is below a goal, no cut
in the store or the Python around it reaches the goal on this machine.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any, Callable

from bench._util import ROOT, LightClient, bare_batch, memory_statements, process_cpu_seconds, standalone

MODELS = ("multilingual-e5-small", "sentence-transformers/all-MiniLM-L6-v2")
CLIENTS = 8
BATCH = 32


def clients(url: str, headers: dict, per_client: int, request: Callable[[Any, int, int], Any], pid: int) -> dict[str, float]:
    """:data:`CLIENTS` clients sending ``per_client`` requests each at once: requests/s, and CPU ms
    per request of the server (``pid``) and of this process (the clients)."""
    barrier = threading.Barrier(CLIENTS + 1)
    errors: list[str] = []

    def client(i: int) -> None:
        with LightClient(url, headers) as c:
            c.request("GET", "/v1/health")
            barrier.wait()
            for j in range(per_client):
                status, body = request(c, i, j)
                if status >= 300:
                    errors.append(f"{status} {str(body)[:200]}")

    threads = [threading.Thread(target=client, args=(i,)) for i in range(CLIENTS)]
    for th in threads:
        th.start()
    server0, own0 = process_cpu_seconds(pid), time.process_time()
    barrier.wait()
    t = time.perf_counter()
    for th in threads:
        th.join()
    wall = time.perf_counter() - t
    n = CLIENTS * per_client
    return {"per_s": n / wall, "server_cpu_ms": 1000 * (process_cpu_seconds(pid) - server0) / n,
            "client_cpu_ms": 1000 * (time.process_time() - own0) / n, "errors": len(errors)}


def measure(model: str, sizes: dict[str, int], folder: Path) -> dict[str, Any]:
    from memctl_server import Served
    from memory_core import MemoryBank
    from memory_core.embedding.embedder import get_embedder

    path = folder / f"{model.rsplit('/', 1)[-1]}.duckdb"
    with MemoryBank.open(path, model=model) as bank:
        _, secret = bank.tokens.create("bench", ["bench"])
    server = Served(str(path))
    headers = {"Authorization": f"Bearer {secret}"}
    try:
        embedder = get_embedder(model)
        texts = memory_statements(sizes["encode_texts"], seed=4242)
        embedder._encode(texts[:BATCH])
        pid = server.proc.pid
        warm = clients(server.url, headers, 3, lambda c, i, j: c.request("POST", "/v1/memories", {"text": f"warm {i} {j}"}), pid)
        out: dict[str, Any] = {"warm_errors": warm["errors"], "rounds": []}
        for r in range(sizes["rounds"]):
            out["rounds"].append({
                "load": round(os.getloadavg()[0], 2),
                "model": bare_batch(embedder, texts, BATCH),
                "health": clients(server.url, headers, sizes["per_client"], lambda c, i, j: c.request("GET", "/v1/health"), pid),
                "adds": clients(server.url, headers, sizes["per_client"], lambda c, i, j: c.request(
                    "POST", "/v1/memories", {"text": f"round {r} client {i}: {texts[(i * 97 + j) % len(texts)]}"}), pid),
            })
    finally:
        server.stop()
    return summarize(out)


def summarize(out: dict[str, Any]) -> dict[str, Any]:
    """Medians over rounds, and the ceilings of the ratio to the batch rate on this machine's cores."""
    def med(f: Callable[[dict], float]) -> float:
        values = sorted(f(r) for r in out["rounds"])
        return values[len(values) // 2]

    cores = os.cpu_count() or 1
    s = {"cores": cores, "loads": [r["load"] for r in out["rounds"]],
         "batch_per_s": med(lambda r: r["model"]["batch_per_s"]),
         "model_cpu_ms": med(lambda r: r["model"]["cpu_ms_per_text"]),
         "health_per_s": med(lambda r: r["health"]["per_s"]),
         "health_server_cpu_ms": med(lambda r: r["health"]["server_cpu_ms"]),
         "health_client_cpu_ms": med(lambda r: r["health"]["client_cpu_ms"]),
         "adds_per_s": med(lambda r: r["adds"]["per_s"]),
         "add_server_cpu_ms": med(lambda r: r["adds"]["server_cpu_ms"]),
         "add_client_cpu_ms": med(lambda r: r["adds"]["client_cpu_ms"]),
         "errors": sum(r["health"]["errors"] + r["adds"]["errors"] for r in out["rounds"]) + out["warm_errors"]}
    floor = s["model_cpu_ms"] + s["health_server_cpu_ms"] + s["health_client_cpu_ms"]
    whole = s["add_server_cpu_ms"] + s["add_client_cpu_ms"]
    s["ratio"] = s["adds_per_s"] / s["batch_per_s"]
    s["ceiling_ratio_free_store"] = 1000 * cores / floor / s["batch_per_s"]
    s["ceiling_ratio_as_is"] = 1000 * cores / whole / s["batch_per_s"]
    return s


def run(quick: bool, smallest: bool = False) -> dict[str, Any]:
    sys.path.insert(0, str(ROOT / "tests"))
    os.environ.setdefault("MEMCTL_CACHE_DIR", tempfile.mkdtemp(prefix="memctl-bench-"))
    sizes = ({"rounds": 1, "per_client": 3, "encode_texts": 64} if smallest else
             {"rounds": 2, "per_client": 20, "encode_texts": 256} if quick else
             {"rounds": 3, "per_client": 40, "encode_texts": 512})
    folder = Path(tempfile.mkdtemp(prefix="serve-budget-"))
    try:
        return {"sizes": sizes, **{m: measure(m, sizes, folder) for m in MODELS}}
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def markdown(r: dict[str, Any]) -> str:
    rows = []
    for m in MODELS:
        s = r[m]
        rows.append(f"| {m.rsplit('/', 1)[-1]} | {s['batch_per_s']:.0f} | {s['model_cpu_ms']:.1f} | "
                    f"{s['health_server_cpu_ms']:.1f} + {s['health_client_cpu_ms']:.1f} | "
                    f"{s['add_server_cpu_ms']:.1f} + {s['add_client_cpu_ms']:.1f} | {s['adds_per_s']:.0f} | "
                    f"{s['ratio']:.2f} | {s['ceiling_ratio_as_is']:.2f} | **{s['ceiling_ratio_free_store']:.2f}** | "
                    f"{', '.join(f'{x:.1f}' for x in s['loads'])} |")
    return ("| model | bare batch /s | model CPU ms per text | HTTP floor CPU ms per request (server + clients) | "
            "add CPU ms (server + clients) | 8 clients adds/s | ratio | ceiling as is | ceiling with a free store | load |\n"
            "|---|---|---|---|---|---|---|---|---|---|\n" + "\n".join(rows) + "\n")


def main() -> None:
    standalone(__doc__, run, markdown)


if __name__ == "__main__":
    main()
