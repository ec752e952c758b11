"""The common shortcut, measured (issue 6, item 6).

Most memory libraries fetch the N most similar memories from a vector index and re-rank only
those by their blended score. Under a blended score that is not exact: a memory of modest
similarity but high importance or recency can belong in the top k and never be fetched. For
each query we compare recall's exact top k (``MemoryBank.recall``, which scores every live
memory) with the shortcut's (top N by cosine, re-ranked with the same ``scoring.blend``), at
the two presets, on the demo bank and on LoCoMo (every conversation's turns in one namespace,
so the namespace is bigger than N).

    python -m bench --only overfetch
"""

from __future__ import annotations

import tempfile
from datetime import datetime
from pathlib import Path

import numpy as np

from bench._util import LOCOMO, machine

CANDIDATES = (2000, 200, 50, 20)
PRESETS = ("generative-agents", "weighted-recall")


def _shortcut(bank, namespace: str, query: str, params, now: datetime, n: int) -> list[int]:
    """Top k of the N most similar memories, re-ranked by the blended score (the shortcut)."""
    from memory_core.language.text import lexical_tokens
    from memory_core.index.scoring import blend

    idx = bank._indexes[namespace]
    m = idx.n
    vector = bank.embedder.encode_one(query, kind="query")
    sim = idx.similarities(vector)
    ts = now.timestamp()
    sim = np.where(idx.created[:m] <= ts, sim, -np.inf)  # an "as of" query sees no later memory
    cand = np.argsort(-sim, kind="stable")[:n]
    cand = cand[np.isfinite(sim[cand])]
    lexical = idx.lexical.relevance(params, lexical_tokens(query))[cand] if params.lexical_weight > 0 else np.zeros(len(cand))
    score, _ = blend(params, similarity=sim[cand], lexical=lexical, created=idx.created[cand],
                     last_access=idx.last_access[cand], importance=idx.importance[cand],
                     access_count=idx.access_count[cand], now=ts)
    order = np.lexsort((idx.ids[cand], -score))[: params.k]
    return [int(idx.ids[cand[j]]) for j in order]


def _compare(bank, queries: list[tuple[str, str, datetime]]) -> dict:
    from memory_core import ScoringParams

    out = {}
    for preset in PRESETS:
        params = ScoringParams.preset(preset).replace(threshold=0.0)
        diff = {n: 0 for n in CANDIDATES}
        missed = {n: 0 for n in CANDIDATES}
        for query, ns, now in queries:
            exact = [h.memory.id for h in bank.recall(query, namespace=ns, params=params, now=now, record=False)]
            for n in CANDIDATES:
                got = _shortcut(bank, ns, query, params, now, n)
                if set(got) != set(exact):
                    diff[n] += 1
                    missed[n] += len(set(exact) - set(got))
        out[preset] = {"k": params.k, "queries": len(queries),
                       "differs": {str(n): diff[n] for n in CANDIDATES},
                       "differs_share": {str(n): diff[n] / max(1, len(queries)) for n in CANDIDATES},
                       "exact_hits_missed": {str(n): missed[n] for n in CANDIDATES}}
    return out


def run(quick: bool, smallest: bool = False) -> dict:
    from memory_core import MemoryBank, demo
    from memory_core.embedding.embedder import get_embedder

    from bench.locomo import load

    embedder = get_embedder()
    result: dict = {"machine": machine(), "candidates": list(CANDIDATES)}
    queries_file = demo.queries()
    if smallest:
        queries_file = queries_file[:5]
    elif quick:
        queries_file = queries_file[:60]
    with tempfile.TemporaryDirectory() as tmp, MemoryBank.open(Path(tmp) / "demo.duckdb", embedder=embedder) as bank:
        if smallest:  # the first 150 memories, and queries of their namespaces only
            mems = demo.memories()[:60]
            bank.add_many([{k: v for k, v in m.items() if k != "id"} for m in mems])
            names = {m["namespace"] for m in mems}
            queries_file = [q for q in queries_file if q["namespace"] in names]
        else:
            bank.import_jsonl(demo.MEMORIES)
        queries = [(q["query"], q["namespace"], datetime.fromisoformat(q["at"])) for q in queries_file]
        for ns in {q[1] for q in queries}:
            bank.recall("warm up", namespace=ns, record=False)
        result["demo"] = {"memories": bank.count(), "largest_namespace": max(n for _, n in bank.namespaces()),
                          **_compare(bank, queries)}
    if LOCOMO.exists():
        convs = load(str(LOCOMO), 1 if smallest or quick else None)
        with tempfile.TemporaryDirectory() as tmp, MemoryBank.open(Path(tmp) / "locomo.duckdb",
                                                                   embedder=embedder) as bank:
            now = max(c["now"] for c in convs)
            rows = [{"text": t["text"], "namespace": "locomo", "created_at": t["created_at"]}
                    for c in convs for t in c["turns"]][: 60 if smallest else None]
            bank.add_many(rows)
            questions = [q["question"] for c in convs for q in c["questions"]]
            if smallest:
                questions = questions[:5]
            elif quick:
                questions = questions[:60]
            bank.recall("warm up", namespace="locomo", record=False)
            result["locomo"] = {"memories": len(rows), "conversations": len(convs),
                                **_compare(bank, [(q, "locomo", now) for q in questions])}
    else:
        result["locomo"] = {"unavailable": f"no LoCoMo file at {LOCOMO} (set LOCOMO_PATH)"}
    return result
