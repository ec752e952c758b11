"""The PostgreSQL store beside the DuckDB file, in one run: bulk import carrying vectors, one add
per call, warm recall, cold load and load from the index cache.

    python -m bench.pg_store [--n 10000] [--json bench/results/pg_store.json]

Needs a PostgreSQL server where this user may create databases (``MEMCTL_TEST_PG``, default
``postgresql://postgres@127.0.0.1:5432/postgres``); makes a ``memctl_test_<random>`` database and
drops it. Vectors are random unit vectors and queries are embedded by a hashing stand-in, so the
figures are the store's and the indexes', not the model's. Not part of ``python -m bench`` yet.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent


def run(n: int) -> dict:
    sys.path.insert(0, str(ROOT / "tests"))
    os.environ.setdefault("MEMCTL_CACHE_DIR", tempfile.mkdtemp(prefix="memctl-bench-"))
    import stores
    from test_pg_store import HashEmbedder

    from memory_core import MemoryBank

    rng = np.random.default_rng(0)
    vecs = rng.standard_normal((n, 384)).astype(np.float32)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    rows = [{"text": f"memory number {i} about topic {i % 97}", "namespace": "ns", "embedding": vecs[i].tolist(),
             "embedding_model": HashEmbedder.name} for i in range(n)]
    url = stores.create_database()
    tmp = tempfile.mkdtemp(prefix="memctl-bench-")
    out: dict = {"memories": n}
    try:
        for name, loc in (("duckdb", os.path.join(tmp, "bank.duckdb")), ("postgres", url)):
            r: dict = {}
            bank = MemoryBank.open(loc, embedder=HashEmbedder())
            t = time.perf_counter()
            bank.add_many(rows)
            r["import_per_s"] = round(n / (time.perf_counter() - t))
            t, k = time.perf_counter(), 200
            for i in range(k):
                bank.add(f"single add {i} about things", namespace="one", detect_conflicts=False)
            r["single_add_per_s"] = round(k / (time.perf_counter() - t))
            bank.recall("topic 5 memory", namespace="ns", record=False)
            lat = []
            for i in range(300):
                t = time.perf_counter()
                bank.recall(f"topic {i} memory", namespace="ns", record=True)
                lat.append(time.perf_counter() - t)
            r["recall_p50_ms"] = round(1000 * statistics.median(lat), 2)
            r["recall_p95_ms"] = round(1000 * float(np.percentile(lat, 95)), 2)
            bank.close()
            t = time.perf_counter()
            with MemoryBank.open(loc, embedder=HashEmbedder()) as bank:
                bank.recall("x", namespace="ns", record=False)
            r["load_from_cache_s"] = round(time.perf_counter() - t, 2)
            shutil.rmtree(stores.index_folder(loc), ignore_errors=True)
            t = time.perf_counter()
            with MemoryBank.open(loc, embedder=HashEmbedder()) as bank:
                bank.recall("x", namespace="ns", record=False)
            r["cold_load_s"] = round(time.perf_counter() - t, 2)
            out[name] = r
            print(name, r, flush=True)
    finally:
        stores.drop_database(url)
        shutil.rmtree(tmp, ignore_errors=True)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=10_000)
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    result = run(args.n)
    if args.json:
        args.json.write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
