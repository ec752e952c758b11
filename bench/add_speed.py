"""Sequential ``bank.add`` by the bank's only user, before and after the lease (issue 15, item 6).

Side by side in one process, rounds alternating, each on its own new bank seeded with the same
memories, the same texts (the demo set's) added one per call with the real model:

- **before**: what one ``add`` did until the lease: ``add_many`` of the one row, then
  ``detect_conflicts`` of it, each step opening the file and checkpointing it on close
  (``store.lease_idle = 0``);
- **after**: ``bank.add`` (embedding outside the lock, then the write and the conflict check in one
  hold of a file the process keeps between its operations);
- **the model alone**: ``Embedder.encode`` of the same one text, the floor an add cannot beat.

Also the file opens per add. Torch runs on one thread here (and the table says so): on two cores
shared with other work, two OpenMP threads spin against each other and embedding one short text
takes 80-200 ms instead of 15.
"""

from __future__ import annotations

import os
import statistics
import tempfile
import time
from pathlib import Path

from bench._util import machine

os.environ.setdefault("HF_HUB_OFFLINE", "1")


def run(quick: bool, smallest: bool = False) -> dict:
    import torch

    from memory_core import MemoryBank, demo
    from memory_core.embedding.embedder import get_embedder

    texts = demo.memories()
    n, seed_n, block = (6, 20, 3) if smallest else (40, 100, 10) if quick else (150, 200, 10)
    seed = [{"text": m["text"], "namespace": m["namespace"]} for m in texts[n:n + seed_n]]
    adds = [(m["text"], m["namespace"]) for m in texts[:n]]
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        embedder = get_embedder()
        embedder.encode(["warm up"])
        with tempfile.TemporaryDirectory() as tmp:
            before = MemoryBank.open(Path(tmp) / "before.duckdb", embedder=embedder)
            after = MemoryBank.open(Path(tmp) / "after.duckdb", embedder=embedder)
            before._store.lease_idle = 0
            before._store.release()  # the lease its open took would outlive a short run
            for bank in (before, after):
                bank.add_many(seed)
            t_before, t_after, t_model = [], [], []
            opens = {"before": before._store.opens, "after": after._store.opens}
            for start in range(0, n, block):
                chunk = adds[start:start + block]
                for text, ns in chunk:
                    embedder._recent.clear()  # no cached vector: every add embeds its text
                    t = time.perf_counter()
                    mid = before.add_many([{"text": text, "namespace": ns}])[0]
                    before.detect_conflicts(ns, memory_ids=[mid])
                    t_before.append(time.perf_counter() - t)
                for text, ns in chunk:
                    embedder._recent.clear()
                    t = time.perf_counter()
                    after.add(text, namespace=ns)
                    t_after.append(time.perf_counter() - t)
                for text, _ in chunk:
                    embedder._recent.clear()
                    t = time.perf_counter()
                    embedder.encode([text])
                    t_model.append(time.perf_counter() - t)
            opens = {"before": before._store.opens - opens["before"], "after": after._store.opens - opens["after"]}
            conflicts = {"before": len(before.conflicts(status=None)), "after": len(after.conflicts(status=None))}
            before.close()
            after.close()
    finally:
        torch.set_num_threads(threads)
    per_s = {"before": n / sum(t_before), "after": n / sum(t_after), "model_alone": n / sum(t_model)}
    return {
        "machine": machine(), "adds": n, "seed_memories": len(seed), "torch_threads": 1,
        "adds_per_s": per_s,
        "ms_p50": {"before": 1000 * statistics.median(t_before), "after": 1000 * statistics.median(t_after),
                   "model_alone": 1000 * statistics.median(t_model)},
        "speedup": per_s["after"] / per_s["before"],
        "after_vs_model": per_s["after"] / per_s["model_alone"],
        "file_opens_per_add": {k: v / n for k, v in opens.items()},
        "conflicts_flagged": conflicts,
    }


def markdown(r: dict) -> str:
    a, m, o = r["adds_per_s"], r["ms_p50"], r["file_opens_per_add"]
    load = r.get("load_average_1min", ["?", "?"])
    return f"""## One memory per call (`python -m bench --only add_speed`)

An agent adding memories one at a time with `bank.add` on a bank it alone uses: {r['adds']:,} texts of
the demo set, each bank seeded with {r['seed_memories']:,}; before and after side by side in one run,
rounds of ten alternating; torch on one thread; 1-minute load average {load[0]}–{load[1]} (2 cores).
*Before* is what `add` did until the lease: `add_many` of the one row, then `detect_conflicts`, each
step opening the file and checkpointing it on close.

| | adds/s | p50 per add | file opens per add |
|---|---|---|---|
| before (a file open per step) | {a['before']:.1f} | {m['before']:.1f} ms | {o['before']:.1f} |
| after (`bank.add`: one hold, file kept between adds) | **{a['after']:.1f}** ({r['speedup']:.1f}×) | {m['after']:.1f} ms | {o['after']:.2f} |
| the model alone (`encode` of the one text) | {a['model_alone']:.1f} | {m['model_alone']:.1f} ms | |

Both flagged the same contradictions ({r['conflicts_flagged']['after']} vs {r['conflicts_flagged']['before']}). An add runs at
{r['after_vs_model']:.2f}× the pace of the model embedding its text: the rest is the insert, its events and the conflict check.
"""
