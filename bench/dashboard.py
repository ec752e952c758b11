"""Dashboard interaction speed at scale: a Tune slider move (a what-if re-rank) and Browse filters.

    python -m bench.dashboard [--memories 100000] [--json bench/results/dashboard.json]

Memories carry ready-made unit vectors (random, 384-d) so building the bank measures the store,
not the model; queries are embedded once and cached, as they are while an operator moves a slider.
Server-side times only (what the Streamlit script waits for), medians and p95 over repeats.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import tempfile
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

import numpy as np

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from memory_core import MemoryBank, ScoringParams  # noqa: E402
from memory_core.embed import get_embedder  # noqa: E402

WORDS = ("coffee tea morning run marathon city moved job project database exam swedish lesson dog garden "
         "holiday budget family friend recipe book music film train bike doctor").split()


def timed(fn, repeats: int) -> dict[str, float]:
    samples = []
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - t)
    samples.sort()
    return {"p50_ms": 1000 * statistics.median(samples), "p95_ms": 1000 * samples[int(0.95 * (len(samples) - 1))]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--memories", type=int, default=100_000)
    parser.add_argument("--repeats", type=int, default=30)
    parser.add_argument("--json", dest="json_out", default=None)
    args = parser.parse_args()
    rng = np.random.default_rng(7)
    embedder = get_embedder()
    now = datetime(2026, 11, 30, tzinfo=timezone.utc)
    result = {"machine": f"{platform.machine()}, {os.cpu_count()} cores", "memories": args.memories}
    with tempfile.TemporaryDirectory() as tmp:
        bank = MemoryBank.open(Path(tmp) / "scale.duckdb", embedder=embedder)
        vectors = rng.normal(size=(args.memories, embedder.dim)).astype(np.float32)
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
        rows = [{"text": " ".join(rng.choice(WORDS, size=6)) + f" #{i}", "namespace": "big",
                 "importance": float(rng.random()), "created_at": now - timedelta(days=float(rng.random() * 400)),
                 "embedding": vectors[i]} for i in range(args.memories)]
        t = time.perf_counter()
        bank.add_many(rows, batch_size=10_000)
        result["import_s"] = time.perf_counter() - t
        query = "what did I decide about the database project?"
        embedder.encode_one(query)
        bank.recall(query, namespace="big", record=False)  # loads the namespace index once
        params = [ScoringParams().replace(alpha=a, threshold=0.0, k=15) for a in np.linspace(0.2, 0.9, args.repeats)]
        it = iter(params * 2)
        result["slider_rerank"] = timed(lambda: bank.recall(query, namespace="big", params=next(it), now=now,
                                                              record=False), args.repeats)
        filters = [dict(category=None, min_importance=0.5),
                   dict(created_after=now - timedelta(days=90)),
                   dict(contains="marathon", order="importance")]
        fit = iter(filters * args.repeats)

        def browse() -> None:
            f = next(fit)
            bank.memories(namespace="big", limit=50, **f)
            bank.count(namespace="big", **{k: v for k, v in f.items() if k != "order"})

        result["browse_filter_page"] = timed(browse, args.repeats)
        bank.close()
    result["targets"] = {"slider_rerank_ms": 150, "browse_filter_page_ms": 300}
    print(json.dumps(result, indent=2))
    if args.json_out:
        Path(args.json_out).write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
