"""Checks the reliability scripts (bench.crash, bench.soak) and their short versions in tests/ share.

* :func:`store_invariants`: what must hold in a bank file after any crash: merges are whole,
  every memory has its "add" event, counters are ahead of the rows, live rows have text and
  vectors, erased rows have neither.
* :func:`recall_matches_brute_force`: the bank's recall (through its indexes, cached on disk and
  reconciled on open) equals scoring every live row read straight from the DuckDB file, with
  similarity, BM25, neighbours and the match with the periods a query names computed here,
  independently of memory_core's indexes (which periods a query names is
  ``memory_core.language.periods.query_periods``'s reading, shared like the tokenizer).
"""

from __future__ import annotations

import json
import math
from collections import Counter
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import duckdb
import numpy as np

from memory_core import MemoryBank, ScoringParams
from memory_core.storage.duckdb import release_file
from memory_core.language.periods import query_periods
from memory_core.index.scoring import (DATE_AFTER_DAYS, DATE_SCALE_DAYS, NEIGHBOUR_SECONDS, NEIGHBOURS, blend,
                                 lexical_relevance)
from memory_core.language.text import lexical_tokens


def store_invariants(path: Path | str) -> list[str]:
    """Problems found in the bank file (empty when it is consistent). Opens it read-only."""
    problems: list[str] = []
    release_file(path)  # a bank of this process may keep the file between its operations
    con = duckdb.connect(str(path), read_only=True)
    try:
        q = lambda sql, *p: con.execute(sql, list(p)).fetchall()  # noqa: E731
        for (mid, into) in q("SELECT id, merged_into FROM memories WHERE status = 'merged'"):
            rec = q("SELECT id FROM merges WHERE merged_id = ? AND list_contains(member_ids, ?) "
                    "AND undone_at IS NULL", into, mid)
            if into is None or not rec:
                problems.append(f"memory {mid} is merged into {into} but no merge record says so")
        for (merge_id, merged_id, members) in q("SELECT id, merged_id, member_ids FROM merges WHERE undone_at IS NULL"):
            if not q("SELECT 1 FROM memories WHERE id = ?", merged_id):
                problems.append(f"merge {merge_id}: the merged memory {merged_id} is missing (half a merge)")
            for m in members:
                row = q("SELECT status, merged_into FROM memories WHERE id = ?", m)
                if not row or row[0][0] != "merged" or row[0][1] != merged_id:
                    problems.append(f"merge {merge_id}: member {m} is {row[0] if row else 'missing'}, "
                                    f"not merged into {merged_id} (half a merge)")
        for (mid,) in q("SELECT id FROM memories WHERE source = 'merge' AND id NOT IN "
                        "(SELECT merged_id FROM merges)"):
            problems.append(f"memory {mid} came from a merge that has no record (half a merge)")
        for (mid,) in q("SELECT id FROM memories WHERE id NOT IN "
                        "(SELECT memory_id FROM events WHERE action = 'add' AND memory_id IS NOT NULL)"):
            problems.append(f"memory {mid} has no add event")
        meta = dict(q("SELECT key, value FROM meta"))
        max_id = q("SELECT coalesce(max(id), 0) FROM memories")[0][0]
        if int(meta["next_id"]) <= max_id:
            problems.append(f"next_id {meta['next_id']} is not past the largest id {max_id}")
        max_seq = q("SELECT coalesce(max(seq), 0) FROM memories")[0][0]
        if int(meta["change_seq"]) < max_seq:
            problems.append(f"change_seq {meta['change_seq']} is behind a row's seq {max_seq}")
        max_event = q("SELECT coalesce(max(id), 0) FROM events")[0][0]
        if int(meta["next_event_id"]) <= max_event:
            problems.append(f"next_event_id {meta['next_event_id']} is not past the largest event {max_event}")
        bad_live = q("SELECT count(*) FROM memories WHERE status != 'deleted' AND (text IS NULL OR embedding IS NULL)")[0][0]
        if bad_live:
            problems.append(f"{bad_live} kept memories lack text or vector")
        bad_gone = q("SELECT count(*) FROM memories WHERE status = 'deleted' AND (text IS NOT NULL OR embedding IS NOT NULL)")[0][0]
        if bad_gone:
            problems.append(f"{bad_gone} erased memories still hold text or vector")
    finally:
        con.close()
    return problems


def _bm25(docs: list[list[str]], query: str, p: ScoringParams) -> np.ndarray:
    """Lucene BM25 (k1 1.5, b 0.4) of each document, computed here from the tokens, then
    normalized by scoring.lexical_relevance as recall does."""
    k1, b = 1.5, 0.4
    n = len(docs)
    terms = list(dict.fromkeys(lexical_tokens(query)))
    out = np.zeros(n)
    if not n or not terms:
        return out
    counts = [Counter(d) for d in docs]
    lengths = np.array([len(d) for d in docs], dtype=np.float64)
    avgdl = lengths.sum() / n if lengths.sum() else 1.0
    idf = {t: math.log(1 + (n - (df := sum(1 for c in counts if t in c)) + 0.5) / (df + 0.5)) for t in terms}
    for i, c in enumerate(counts):
        for t in terms:
            tf = c.get(t, 0)
            if tf:
                out[i] += idf[t] * tf / (tf + k1 * (1 - b + b * lengths[i] / avgdl))
    return lexical_relevance(p, out, sum(idf.values()), math.log(1 + (n - 0.5) / 1.5), k1)


def brute_force(path: Path | str, namespace: str, query: str, qvec: np.ndarray, p: ScoringParams,
                now: datetime) -> list[tuple[int, float]]:
    """[(id, score)] of every live memory of ``namespace`` that clears the threshold, best first,
    read straight from the file."""
    release_file(path)  # a bank of this process may keep the file between its operations
    con = duckdb.connect(str(path), read_only=True)
    try:
        rows = con.execute(
            "SELECT id, text, embedding, created_at, last_accessed_at, importance, access_count, context, use_count "
            "FROM memories "
            "WHERE namespace = ? AND status = 'active' ORDER BY id", [namespace]).fetchall()
    finally:
        con.close()
    if not rows:
        return []
    ts = lambda t: math.nan if t is None else t.replace(tzinfo=timezone.utc).timestamp()  # noqa: E731
    ids = np.array([r[0] for r in rows])
    emb = np.array([r[2] for r in rows], dtype=np.float32)
    created = np.array([ts(r[3]) for r in rows])
    sim = emb @ qvec.astype(np.float32)
    lexical = _bm25([lexical_tokens(r[1]) + lexical_tokens(r[7]) for r in rows], query, p)
    match = _date_match(query_periods(query, now), created)
    score, _ = blend(p, similarity=sim, lexical=lexical,
                     created=created, last_access=np.array([ts(r[4]) for r in rows]),
                     importance=np.array([r[5] for r in rows], dtype=np.float64),
                     access_count=np.array([r[6] for r in rows], dtype=np.float64),
                     use_count=np.array([r[8] for r in rows], dtype=np.float64), now=now.timestamp(),
                     neighbour_relevance=_neighbour_relevance(p, sim, lexical, created, ids, now.timestamp(), match),
                     date_match=np.array(match) if match is not None else None)
    keep = [(int(i), float(s), float(x)) for i, s, c, x in zip(ids, score, created, sim)
            if c <= now.timestamp() and s >= p.threshold]
    keep.sort(key=lambda x: (-x[1], -x[2], x[0]))  # equal scores: the higher cosine, then the smaller id
    return [(i, s) for i, s, _ in keep[: p.k]]


def _date_match(periods: tuple[tuple[float, float], ...], created: np.ndarray) -> list[float] | None:
    """Per memory, its match with the periods: 1 inside one or up to DATE_AFTER_DAYS after its end,
    else exp(-days away / DATE_SCALE_DAYS), the best over the periods; None without periods."""
    if not periods:
        return None
    return [max(math.exp(-max(start - c, c - end - DATE_AFTER_DAYS * 86400, 0.0) / 86400 / DATE_SCALE_DAYS)
                for start, end in periods) for c in created.tolist()]


def _neighbour_relevance(p: ScoringParams, sim: np.ndarray, lexical: np.ndarray, created: np.ndarray, ids: np.ndarray,
                         now: float, match: list[float] | None = None) -> list[float]:
    """Per memory, the best own relevance (lifted by its date match) among the NEIGHBOURS memories
    created just before and just after it (ties by id) and within NEIGHBOUR_SECONDS of it, counting
    those created after ``now`` as 0: one memory at a time."""
    own = []
    for i, (s, x, c) in enumerate(zip(sim, lexical, created)):
        kept = 1.0 if float(s) >= p.similarity_floor else p.lexical_below_floor  # below the floor: a share
        rel = (1 - p.lexical_weight) * min(1.0, max(0.0, (float(s) - p.similarity_floor) / (
            p.similarity_ceiling - p.similarity_floor))) + p.lexical_weight * float(x) * kept
        if match is not None:
            rel += p.date_weight * match[i] * (1 - rel)
        own.append(0.0 if c > now else rel)
    order = sorted(range(len(own)), key=lambda i: (created[i], ids[i]))
    best = [0.0] * len(own)
    for pos, i in enumerate(order):
        near = order[max(0, pos - NEIGHBOURS):pos] + order[pos + 1:pos + 1 + NEIGHBOURS]
        best[i] = max((own[j] for j in near if abs(created[j] - created[i]) <= NEIGHBOUR_SECONDS), default=0.0)
    return best


def recall_matches_brute_force(bank: MemoryBank, queries: list[str], *, now: datetime | None = None,
                               k: int = 1000, params: ScoringParams | None = None) -> list[str]:
    """Compare recall (what-if, so nothing changes) with brute force for every namespace and
    query, over the whole ranking (``k`` up to 1000, threshold 0) under ``params`` (default:
    ``ScoringParams()``). Returns the mismatches."""
    now = now or datetime.now(timezone.utc)
    p = (params or ScoringParams()).replace(k=k, threshold=0.0)
    problems = []
    for ns, n in bank.namespaces():
        if not n:
            continue
        for query in queries:
            hits = bank.recall(query, namespace=ns, params=p, now=now, record=False)
            got = [(h.memory.id, h.score) for h in hits]
            want = brute_force(bank.path, ns, query, bank.embedder.encode_one(query, kind="query"), p, now)
            if len(got) != len(want):
                problems.append(f"{ns!r} {query!r}: recall returned {len(got)}, brute force {len(want)}")
                continue
            for (gi, gs), (wi, ws) in zip(got, want):
                if abs(gs - ws) > 1e-5:
                    problems.append(f"{ns!r} {query!r}: recall {gi} ({gs:.6f}) vs brute force {wi} ({ws:.6f})")
                    break
            # Equal scores may come in either order; the sets of ids must agree.
            if {i for i, _ in got} != {i for i, _ in want}:
                problems.append(f"{ns!r} {query!r}: recall and brute force return different memories")
    return problems


def write_result(name: str, data: dict[str, Any], path: str | Path | None = None) -> Path:
    """Write a figure file to bench/results/NAME.json, or ``path`` (atomically); returns where."""
    out = Path(path) if path else Path(__file__).resolve().parent / "results" / f"{name}.json"
    out.parent.mkdir(exist_ok=True)
    tmp = out.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(data, indent=2, default=str) + "\n")
    tmp.replace(out)
    return out
