"""Recall: rank a namespace's live memories for a query, exactly, and log what was returned.

The ranking itself is the index's (:meth:`NamespaceIndex.rank`, scoring from
:mod:`memory_core.index.scoring`); this module decides when the store must be read first, pairs
memories an operator chose to keep both of, builds the hits, and hands real recalls to the
recall log. :meth:`Recall.candidates` captures what ranking needs once, for what-if tuning. Both
rank a question without the words naming the namespace's subject (:mod:`memory_core.index.subject`):
the text embedded and matched is :meth:`Recall.ranked_text`'s; and both hold it to its language's
threshold (the bank's model's ``language_threshold`` from :mod:`memory_core.embedding`,
:func:`memory_core.index.scoring.for_language`).
"""

from __future__ import annotations

import time
from datetime import datetime
from typing import TYPE_CHECKING, Any, Callable

import numpy as np

from ..index import gate as gate_mod
from . import rows as rowmod
from ..storage.clock import utcnow
from .curation import Curation
from ..errors import ValidationError
from ..index import NamespaceIndex
from ..models import Hit, check_namespace, check_text, parse_time
from ..language.periods import query_periods
from .recall_writer import RecallWriter
from ..embedding.embedder import model_defaults
from ..index.scoring import Candidates, ScoringParams, add_kept_pairs, date_match, for_language
from ..index.subject import ranking_query
from ..language.text import detect_language, lexical_tokens
from .settings import Settings

if TYPE_CHECKING:
    from .core import Core


class Recall:
    """Ranks memories of one bank for queries; real recalls go to the recall log."""

    def __init__(self, core: "Core", settings: Settings, curation: Curation, log: RecallWriter):
        self.core = core
        self.settings = settings
        self.curation = curation
        self.log = log
        self.gate = gate_mod.Gate()
        self.last_search: dict[str, Any] = {}  # how the latest recall searched (approximate, pruned, ...)

    def recall(
        self,
        query: str,
        namespace: str = "default",
        params: ScoringParams | str | None = None,
        now: Any = None,
        record: bool = True,
        gate: bool = False,
        k: int | None = None,
        threshold: float | None = None,
    ) -> list[Hit]:
        """The memories of ``namespace`` most worth putting in the prompt for ``query``.

        Scores every live memory (exact), keeps the top k that reach the threshold: possibly none.
        ``params`` is a ScoringParams, a preset name, or None for the bank's active preset.
        ``now`` (default: the current time) makes an "as of" recall: memories created later are
        not seen. ``record=False`` changes nothing (what-if); ``record=True`` counts the access and
        logs the retrieval. ``gate=True`` first asks the gate (:meth:`MemoryBank.should_recall`) and returns nothing
        (logging the decision) when it says no.
        """
        started = time.perf_counter()
        check_text(query, "query")
        check_namespace(namespace)
        if not isinstance(record, bool) or not isinstance(gate, bool):
            raise ValidationError("record and gate must be true or false")
        if record:
            self.core.check_writable("recall with record=False reads without writing")
        preset_name, p = self.settings.resolve(params)
        if k is not None or threshold is not None:
            p = p.replace(**{n: v for n, v in (("k", k), ("threshold", threshold)) if v is not None})
        now_dt = parse_time(now, "now") or utcnow()
        decision = self.gate.decide(query) if gate else None
        vector = None
        text = query
        if (decision is None or decision.recall) and self.core.dim is not None:
            # Outside the lock, the loaded index (if any) tells what ranking will read; rank
            # checks it under the lock and embeds again in the rare case it changed meanwhile.
            text = self.guess_ranked_text(namespace, query)
            vector = self.core.embedder.encode_one(text, kind="query")
        with self.core.lock:
            self.core.check_open()
            # Reserved before ranking: taking a new block may catch up with other processes.
            rid = self.log.next_id() if record else None
            idx = self.core.indexes.get(namespace)
            if ((vector is None or (idx is not None and self.core.acknowledged is not None))
                    and (self.core.flush_current or self.core.store.signature() == self.core.signature)):
                # Nobody wrote since this bank last looked (or only this bank's flush, which has
                # caught up with the others and holds the file): no file access at all.
                hits = [] if vector is None else self.rank(None, idx, query, p, now_dt, vector, text)
            else:
                # No flush here: the index already counts this bank's buffered recalls, and a
                # write transaction per recall would hold the file longer for other processes.
                with self.core.session(write=False, flush=False) as con:
                    hits = []
                    if vector is not None:
                        self.curation.acknowledged_pairs(con)
                        idx = self.core.ns_index(con, namespace)
                        if idx is not None:
                            hits = self.rank(con, idx, query, p, now_dt, vector, text)
            if record:
                self.log.record(rid, query, namespace, p, preset_name, decision, hits, now_dt,
                             (time.perf_counter() - started) * 1000.0)
        return hits

    def text_of(self, con: Any | None, idx: NamespaceIndex) -> Callable[[int], str]:
        """A row's text: from the index, else the store (``con``; None: a session if needed)."""
        def text(row: int) -> str:
            info = idx.info[row]
            if info is not None:
                return info[0] or ""
            mid = int(idx.ids[row])
            return self.core.get_many(con, [mid])[mid].text
        return text

    def ranked_text(self, con: Any | None, idx: NamespaceIndex | None, query: str) -> str:
        """What ranking embeds and matches for ``query``: it without the words naming the
        namespace's subject (:func:`memory_core.index.subject.ranking_query`)."""
        if idx is None:
            return query
        return ranking_query(query, idx.lexical, self.text_of(con, idx))

    def guess_ranked_text(self, namespace: str, query: str) -> str:
        """:meth:`ranked_text` from the loaded index without the lock or the store: a guess
        (another thread may be changing the index), which :meth:`rank` checks under the lock."""
        idx = self.core.indexes.get(namespace)
        if idx is None:
            return query
        try:
            return ranking_query(query, idx.lexical, lambda row: (idx.info[row] or ("",))[0] or "")
        except Exception:  # an index changing under the guess: rank decides
            return query

    def language_offset(self, query: str) -> float:
        """How far the threshold moves for the language ``query`` is written in, on the bank's
        model (``ModelDefaults.language_threshold``; :func:`memory_core.index.scoring.for_language`)."""
        return model_defaults(self.core.model).language_threshold.get(detect_language(query), 0.0)

    def calibrated(self, params: ScoringParams, query: str) -> ScoringParams:
        """``params`` as recall holds ``query`` to them: the threshold moved for its language."""
        return for_language(params, self.language_offset(query))

    def rank(self, con: Any | None, idx: NamespaceIndex, query: str, p: ScoringParams, now_dt: datetime,
              vector: np.ndarray, text: str | None = None) -> list[Hit]:
        """Rank ``idx`` for ``query``; ``vector`` is the embedding of ``text`` (default: the query).
        ``p`` is calibrated for the query's language here, so the log keeps the preset as chosen."""
        if idx.n == 0:
            return []
        p = self.calibrated(p, query)
        idx.mode = self.core.index_mode
        ranked = self.ranked_text(con, idx, query)
        if ranked != (query if text is None else text):
            vector = self.core.embedder.encode_one(ranked, kind="query")
        ranking = idx.rank(p, lexical_tokens(ranked), vector, now_dt.timestamp(), query_periods(query, now_dt))
        self.last_search = {"approximate": ranking.approximate, **ranking.stats}
        rows = [int(r) for r in ranking.rows]
        score = {r: float(s) for r, s in zip(rows, ranking.scores)}
        comps = {r: {name: float(v[j]) for name, v in ranking.components.items()} for j, r in enumerate(rows)}
        pairs = self.core.acknowledged or {}
        # A pruned ranking scored only some rows: score the kept pairs' partners before pairing.
        for r in list(rows):
            for partner in pairs.get(int(idx.ids[r]), ()):
                pr = idx.row_of.get(partner)
                if pr is not None and pr not in score:
                    s, c = ranking.score_rows(np.array([pr]))
                    score[pr] = float(s[0])
                    comps[pr] = {name: float(v[0]) for name, v in c.items()}
        rows, partner_of = add_kept_pairs(rows, idx.ids, idx.row_of, score, pairs)
        ids = [int(idx.ids[r]) for r in rows]
        memories = {mid: m for mid, r in zip(ids, rows) if (m := rowmod.memory_from_index(idx, r)) is not None}
        if len(memories) < len(ids):
            memories.update(self.core.get_many(con, [mid for mid in ids if mid not in memories]))
        return [
            Hit(memory=memories[mid], score=score[r], rank=rank + 1, components=comps[r],
                conflict_with=partner_of.get(mid), approximate=ranking.approximate)
            for rank, (mid, r) in enumerate(zip(ids, rows))
        ]

    def candidates(self, queries: list[str], namespace: str, now: Any = None,
                   vectors: np.ndarray | None = None) -> Candidates:
        """What ranking ``queries`` in ``namespace`` needs, captured once; changes nothing.

        Each query is embedded once (in one batch, unless ``vectors`` are given) and matched
        lexically once; ``Candidates.select(params)`` then returns, for any parameters, exactly
        the ids :meth:`recall` with ``record=False`` would. ``now`` is one moment or one per
        query (None: the current time), as in recall's "as of".
        """
        check_namespace(namespace)
        if not isinstance(queries, (list, tuple)):
            raise ValidationError("queries must be a list of strings")
        for q in queries:
            check_text(q, "query")
        moments = list(now) if isinstance(now, (list, tuple)) else [now] * len(queries)
        if len(moments) != len(queries):
            raise ValidationError("now must be one moment, or one per query")
        current = utcnow()
        at = np.array([(parse_time(m, "now") or current).timestamp() for m in moments], dtype=np.float64)
        if vectors is None and queries and self.core.dim is not None:
            # Outside the lock: the model is the slow part, and other callers need not wait for it.
            unique = list(dict.fromkeys(queries))
            encoded = self.core.embedder.encode(unique, kind="query")
            pos = {q: i for i, q in enumerate(unique)}
            vectors = encoded[[pos[q] for q in queries]]
        elif vectors is not None and len(vectors) != len(queries):
            raise ValidationError("vectors must hold one embedding per query")
        with self.core.lock:
            with self.core.session(write=False) as con:
                pairs = self.curation.acknowledged_pairs(con)
                idx = self.core.ns_index(con, namespace)
            n = 0 if idx is None else idx.n
            sim = np.zeros((len(queries), n))
            lex = np.zeros((len(queries), n))
            idf_sum = np.zeros(len(queries))
            max_idf = 0.0
            if n and queries:
                if vectors is None:  # another process gave the bank its first vectors meanwhile
                    vectors = self.core.embedder.encode(list(queries), kind="query")
                # One product per query, as recall computes it, so rounding cannot reorder near-ties.
                # Ranked as recall ranks them: a question naming the namespace's subject without its name.
                ranked = {q: self.ranked_text(None, idx, q) for q in dict.fromkeys(queries)}
                changed = [i for i, q in enumerate(queries) if ranked[q] != q]
                if changed:
                    vectors = np.array(vectors, copy=True)
                    vectors[changed] = self.core.embedder.encode([ranked[queries[i]] for i in changed], kind="query")
                sim = np.array([idx.similarities(np.asarray(v, dtype=np.float32)) for v in vectors], dtype=np.float64)
                matched = {q: idx.lexical.match(lexical_tokens(ranked[q])) for q in dict.fromkeys(queries)}
                lex = np.array([matched[q][0] for q in queries], dtype=np.float64).reshape(len(queries), n)
                idf_sum = np.array([matched[q][1] for q in queries], dtype=np.float64)
                max_idf = matched[queries[0]][2]
            copy = (lambda a: np.array(a[:n], copy=True)) if n else (lambda a: np.zeros(0))
            return Candidates(
                ids=copy(idx.ids) if n else np.zeros(0, dtype=np.int64), created=copy(idx.created),
                last_access=copy(idx.last_access), importance=copy(idx.importance),
                access_count=copy(idx.access_count), use_count=copy(idx.use_count), similarity=sim, lexical_raw=lex, idf_sum=idf_sum,
                max_idf=max_idf, k1=idx.lexical.k1 if n else 1.5, now=at,
                pairs={k: set(v) for k, v in (pairs or {}).items()}, row_of=dict(idx.row_of) if n else {},
                neighbours=idx.neighbour_rows().copy() if n else None,
                dates=_dates(idx, queries, moments, current, n),
                offsets=np.array([self.language_offset(q) for q in queries], dtype=np.float64),
            )


def _dates(idx: NamespaceIndex | None, queries: list[str], moments: list[Any], current: datetime,
           n: int) -> np.ndarray | None:
    """(q, n) each memory's match with the periods each query names (0 for a query naming none), or
    None when no query names a period."""
    periods = [query_periods(q, parse_time(m, "now") or current) for q, m in zip(queries, moments)]
    if not n or not any(periods):
        return None
    created = idx.created[:n]
    return np.array([np.zeros(n) if not ps else date_match(created, ps) for ps in periods], dtype=np.float64)
