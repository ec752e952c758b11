"""Figures on the demo set: import throughput, and recall latency with and without the query embedding.

    python -m bench.demo_figures [--json bench/results/demo_figures.json]

Import throughput is measured side by side with the bare model (``model.encode`` of the same
texts in the same process), so the ratio says what the store and indexes cost on top.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from memory_core import MemoryBank, demo  # noqa: E402
from memory_core.embedding.embedder import get_embedder  # noqa: E402


def percentiles(samples: list[float]) -> dict[str, float]:
    s = sorted(samples)
    return {"p50_ms": 1000 * statistics.median(s), "p95_ms": 1000 * s[int(0.95 * (len(s) - 1))]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", dest="json_out", default=None)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    load_before = os.getloadavg()[0]
    memories, queries = demo.memories(), demo.queries()
    embedder = get_embedder()
    embedder.encode([m["text"] for m in memories[:64]])  # warm up

    bare, ours = [], []
    for _ in range(args.repeats):
        t = time.perf_counter()
        embedder.encode([m["text"] for m in memories])
        bare.append(time.perf_counter() - t)
        with tempfile.TemporaryDirectory() as tmp:
            with MemoryBank.open(Path(tmp) / "demo.duckdb", embedder=embedder) as bank:
                t = time.perf_counter()
                bank.import_jsonl(demo.MEMORIES)
                ours.append(time.perf_counter() - t)
    n = len(memories)
    result = {
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}",
        "memories": n,
        "import_per_s": n / statistics.median(ours),
        "bare_encode_per_s": n / statistics.median(bare),
    }
    result["import_vs_bare_encode"] = result["import_per_s"] / result["bare_encode_per_s"]

    with tempfile.TemporaryDirectory() as tmp:
        with MemoryBank.open(Path(tmp) / "demo.duckdb", embedder=embedder) as bank:
            bank.import_jsonl(demo.MEMORIES)
            for q in queries:  # warm: every query vector cached, every namespace index loaded
                bank.recall(q["query"], namespace=q["namespace"], record=False)
            timings: dict[str, list[float]] = {"what_if_cached_vector": [], "what_if_with_embedding": [],
                                               "recorded_cached_vector": []}
            for q in queries:
                t = time.perf_counter()
                bank.recall(q["query"], namespace=q["namespace"], now=q["at"], record=False)
                timings["what_if_cached_vector"].append(time.perf_counter() - t)
            for q in queries:
                embedder._recent.clear()  # force the model to run, as for a new question
                t = time.perf_counter()
                bank.recall(q["query"], namespace=q["namespace"], now=q["at"], record=False)
                timings["what_if_with_embedding"].append(time.perf_counter() - t)
            for q in queries:
                embedder.encode_one(q["query"], kind="query")
                t = time.perf_counter()
                bank.recall(q["query"], namespace=q["namespace"], now=q["at"], record=True)
                timings["recorded_cached_vector"].append(time.perf_counter() - t)
    result["recall"] = {name: percentiles(v) for name, v in timings.items()}
    result["measured"] = datetime.now(timezone.utc).date().isoformat()
    result["load_average_1min"] = sorted(round(x, 1) for x in (load_before, os.getloadavg()[0]))
    print(json.dumps(result, indent=2))
    if args.json_out:
        Path(args.json_out).write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
