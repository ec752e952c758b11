"""The default model against the fast English one, side by side in one run (issue 31, item 4).

multilingual-e5-small (the default) and all-MiniLM-L6-v2, rounds alternating so that both see the
same machine: one text embedded alone (what an add or a recall waits for), a batch of the demo
set's texts (what an import embeds), ``bank.add`` one memory per call, and ``bank.add_many`` (an
import with embedding). The goals are ratios: a lone text at most 2x MiniLM's time, a batch at
least 0.5x its rate.

    python -m bench --only models
"""

from __future__ import annotations

import os
import statistics
import tempfile
import time
from pathlib import Path

from bench._util import machine

os.environ.setdefault("HF_HUB_OFFLINE", "1")

MODELS = ("multilingual-e5-small", "sentence-transformers/all-MiniLM-L6-v2")


def run(quick: bool, smallest: bool = False) -> dict:
    from memory_core import MemoryBank, demo
    from memory_core.embedding.embedder import get_embedder

    texts = [m["text"] for m in demo.memories()]
    rounds, singles, batch_n, adds, imports = (1, 5, 32, 4, 32) if smallest else (3, 30, 256, 20, 256) if quick \
        else (5, 60, 512, 40, 512)
    embedders = {m: get_embedder(m) for m in MODELS}
    for e in embedders.values():
        e.encode(texts[:8])
    single: dict[str, list[float]] = {m: [] for m in MODELS}
    batch: dict[str, list[float]] = {m: [] for m in MODELS}
    add: dict[str, list[float]] = {m: [] for m in MODELS}
    imp: dict[str, list[float]] = {m: [] for m in MODELS}
    with tempfile.TemporaryDirectory() as tmp:
        banks = {m: MemoryBank.open(Path(tmp) / f"{i}.duckdb", model=m) for i, m in enumerate(MODELS)}
        for r in range(rounds):
            for m, e in embedders.items():
                for i in range(singles):
                    e._recent.clear()
                    t = time.perf_counter()
                    e.encode_one(texts[(r * singles + i) % len(texts)], kind="query")
                    single[m].append(time.perf_counter() - t)
                chunk = [texts[(r * batch_n + i) % len(texts)] + f" ({r})" for i in range(batch_n)]
                t = time.perf_counter()
                e.encode(chunk)
                batch[m].append(batch_n / (time.perf_counter() - t))
                bank = banks[m]
                for i in range(adds):
                    e._recent.clear()
                    text = texts[(r * adds + i) % len(texts)] + f" (round {r})"
                    t = time.perf_counter()
                    bank.add(text, namespace="adds")
                    add[m].append(time.perf_counter() - t)
                rows = [{"text": texts[(r * imports + i) % len(texts)] + f" [{r}]", "namespace": f"import{r}"}
                        for i in range(imports)]
                t = time.perf_counter()
                bank.add_many(rows)
                imp[m].append(imports / (time.perf_counter() - t))
        for bank in banks.values():
            bank.close()
    e5, minilm = MODELS
    out = {
        "machine": machine(),
        "runtime": {m: embedders[m].runtime for m in MODELS},
        "single_ms_p50": {m: 1000 * statistics.median(v) for m, v in single.items()},
        "batch_texts_per_s": {m: statistics.median(v) for m, v in batch.items()},
        "add_ms_p50": {m: 1000 * statistics.median(v) for m, v in add.items()},
        "adds_per_s": {m: len(v) / sum(v) for m, v in add.items()},
        "import_per_s": {m: statistics.median(v) for m, v in imp.items()},
        "rounds": rounds,
    }
    out["single_ratio"] = out["single_ms_p50"][e5] / out["single_ms_p50"][minilm]
    out["batch_ratio"] = out["batch_texts_per_s"][e5] / out["batch_texts_per_s"][minilm]
    return out


def markdown(r: dict) -> str:
    e5, minilm = MODELS
    load = r.get("load_average_1min", ["?", "?"])
    s, b, a, ap, i = (r["single_ms_p50"], r["batch_texts_per_s"], r["add_ms_p50"], r["adds_per_s"],
                      r["import_per_s"])
    return f"""## The default model against MiniLM (`python -m bench --only models`)

multilingual-e5-small ({r['runtime'][e5]}) and all-MiniLM-L6-v2 ({r['runtime'][minilm]}) in one process,
{r['rounds']} rounds alternating; 1-minute load average {load[0]}–{load[1]} (2 cores).

| | multilingual-e5-small | all-MiniLM-L6-v2 | ratio | goal |
|---|---|---|---|---|
| one text alone, p50 | {s[e5]:.1f} ms | {s[minilm]:.1f} ms | {r['single_ratio']:.2f}× the time | ≤ 2× |
| a batch of the demo's texts | {b[e5]:.0f} texts/s | {b[minilm]:.0f} texts/s | {r['batch_ratio']:.2f}× the rate | ≥ 0.5× |
| `bank.add`, one memory per call | {ap[e5]:.1f} adds/s (p50 {a[e5]:.1f} ms) | {ap[minilm]:.1f} adds/s (p50 {a[minilm]:.1f} ms) | {ap[e5] / ap[minilm]:.2f}× | |
| `bank.add_many` (import with embedding) | {i[e5]:.0f} memories/s | {i[minilm]:.0f} memories/s | {i[e5] / i[minilm]:.2f}× | |
"""
