"""Bulk import at the model's pace (issue 6, item 2).

Side by side in one process: the bare model (``Embedder.encode`` of the same texts in the same
2048-text batches the import uses) against ``MemoryBank.add_many`` of the same texts, alternating
runs; and the import of rows that already carry their vectors (no model at all). Full mode embeds
5k texts twice per repeat: on a 2-core machine shared with other work a 100k pass takes tens of
minutes, and the writer's cost per batch does not grow with the import, so the ratio carries
over; the embedding-free import runs at 100k.

    python -m bench --only import_speed
"""

from __future__ import annotations

import statistics
import tempfile
import time
from pathlib import Path

from bench._util import machine, synthetic_rows, unit_vectors

EMBED_BATCH = 2048  # what add_many embeds per batch (memory_core.services.writer.BATCH_EMBED)


def run(quick: bool, smallest: bool = False) -> dict:
    from memory_core import MemoryBank
    from memory_core.embedding.embedder import get_embedder

    embedder = get_embedder()
    n_embed = 50 if smallest else 1_000 if quick else 5_000
    n_vec = 1_000 if smallest else 20_000 if quick else 100_000
    repeats = 1 if smallest else 2
    vec_repeats = 1 if smallest else 3
    rows = synthetic_rows(n_embed, seed=1)
    texts = [r["text"] for r in rows]
    embedder.encode(texts[:128])  # warm up
    bare, ours = [], []
    for _ in range(repeats):
        t = time.perf_counter()
        for s in range(0, len(texts), EMBED_BATCH):
            embedder.encode(texts[s:s + EMBED_BATCH])
        bare.append(time.perf_counter() - t)
        with tempfile.TemporaryDirectory() as tmp, MemoryBank.open(Path(tmp) / "b.duckdb", embedder=embedder) as bank:
            t = time.perf_counter()
            bank.add_many(rows)
            ours.append(time.perf_counter() - t)
    vectors = unit_vectors(n_vec, embedder.dim, seed=2)
    vec_rows = synthetic_rows(n_vec, seed=3, vectors=vectors)
    with_vec = []
    for _ in range(vec_repeats):
        with tempfile.TemporaryDirectory() as tmp, MemoryBank.open(Path(tmp) / "b.duckdb", embedder=embedder) as bank:
            t = time.perf_counter()
            bank.add_many(vec_rows)
            with_vec.append(time.perf_counter() - t)
    out = {
        "machine": machine(),
        "embedding": {
            "memories": n_embed, "repeats": repeats,
            "import_per_s": n_embed / statistics.median(ours),
            "bare_encode_per_s": n_embed / statistics.median(bare),
        },
        "with_vectors": {"memories": n_vec, "repeats": vec_repeats,
                         "import_per_s": n_vec / statistics.median(with_vec)},
        "targets": {"import_vs_bare_encode": 0.85, "with_vectors_per_s": 20_000},
    }
    out["embedding"]["import_vs_bare_encode"] = out["embedding"]["import_per_s"] / out["embedding"]["bare_encode_per_s"]
    return out
