"""One namespace's index: its vectors, BM25 and scoring fields in parallel arrays, and the exact ranking.

:class:`NamespaceIndex` holds what recall scores for every live memory of a namespace; :class:`Ranking`
is one recall over it (exact scores of the rows it looked at, with the pruning in ``pruning.py``
deciding which rows those are). Saving and loading use the file helpers of ``formats.py``.
"""

from __future__ import annotations

import json
import mmap
import os
import secrets
import tempfile
from pathlib import Path
from typing import Any, Iterable

import numpy as np

from .scoring import (NEIGHBOUR_SECONDS, NEIGHBOURS, ScoringParams, blend, date_match, lexical_relevance,
                       neighbour_best, neighbour_lift, own_relevance, prior_bounds, relevance_of, top_k, upper_bound)
from ..embedding.vectors import dot
from .formats import (FORMAT_VERSION, HASH_DTYPE, _CHUNK_ROWS, _atomic, _copy_rows, _load_arrow, _map_saved, _release,
                      _save_arrow, _save_npy, _savez, _sequential, namespace_key)
from .infos import RowInfos
from .lexical import LexicalIndex, _unique
from .pruning import _Ivf, _Priors, _Projection, _Sq8, _one_thread, _take_rows, _up32, _up32_array


# -- one namespace ---------------------------------------------------------------------------------


class NamespaceIndex:
    """Vectors, tokens and scoring fields of one namespace's live memories, in parallel arrays."""

    def __init__(self, namespace: str, dim: int):
        self.namespace = namespace
        self.dim = dim
        self.n = 0
        cap = 16
        self.ids = np.zeros(cap, dtype=np.int64)
        self.emb = np.zeros((cap, dim), dtype=np.float32)
        self.created = np.zeros(cap, dtype=np.float64)
        self.last_access = np.zeros(cap, dtype=np.float64)
        self.importance = np.zeros(cap, dtype=np.float64)
        self.access_count = np.zeros(cap, dtype=np.float64)
        self.use_count = np.zeros(cap, dtype=np.float64)
        self.hashes = np.zeros(cap, dtype=HASH_DTYPE)  # content hashes (ASCII hex): see hash_at
        # Each row's change sequence as the store had it when the index took the row: a saved index
        # is checked against the store by it (see index_cache.IndexCache.load).
        self.seqs = np.zeros(cap, dtype=np.int64)
        # Per row, what a Memory needs beyond the arrays (text, kind, dates...; see MemoryBank), so
        # recall can hand out hits without opening the database; None until the bank fills it.
        self.info = RowInfos()
        self.row_of: dict[int, int] = {}
        self.lexical = LexicalIndex()
        self.seq = 0  # change sequence this index reflects
        self.changes_since_save = 0
        # Upper bounds of the priors over the namespace, for pruning: they only ever grow while the
        # index lives (a removal leaves them as they were, still a valid bound).
        self.importance_max = 0.0
        self.access_count_max = 0.0
        self.use_count_max = 0.0
        self.mode = "exact"  # or "ivf": the bank's opt-in approximate dense search
        self.fields_saved = False  # loaded from a saved copy that kept every row's fields (see load)
        # Where large namespaces keep their vectors: a memory-mapped scratch file (see _vector_rows).
        self.spill_dir: Path | None = None
        self._sq: _Sq8 | None = None
        self._ivf: _Ivf | None = None
        self._proj: _Projection | None = None
        self._prior: _Priors | None = None
        self._pending: tuple[tuple, np.ndarray] = ((), np.zeros(0, dtype=np.int64))  # see _projected_candidates
        # Which save of the index the side structures describe: the header's "save" (a random
        # token per save), and whether a side structure was built since it was last saved.
        self.save_id: str | None = None
        self.side_unsaved = False
        # The neighbour table (neighbour_rows): rows by creation time, and each row's neighbours, for
        # rows 0.._nb_n-1; rebuilt whole once a row in it is removed or re-dated (_nb_stale).
        self._nb_order = np.zeros(0, dtype=np.int64)
        self._nb_table = np.zeros((0, 2 * NEIGHBOURS), dtype=np.int64, order="F")
        self._nb_n = 0
        self._nb_stale = True

    _ARRAYS = ("ids", "emb", "created", "last_access", "importance", "access_count", "use_count", "hashes", "seqs")
    _FIELDS = ("seqs", "created", "last_access", "importance", "access_count", "use_count")  # saved beside ids

    def __len__(self) -> int:
        return self.n

    # Vectors of a namespace from this many rows on live in a memory-mapped scratch file. Below it
    # they stay in memory: reading a recall's scattered rows from the file costs a tenth of a small
    # recall, a price worth paying for a million memories' vectors, not for a hundred thousand's
    # (see BENCHMARKS.md, "Figures behind the code").
    MAP_MIN_ROWS = 262_144
    # Up to this many scattered rows are read from the scratch file with pread, not through the
    # mapping: a read through the mapping maps the pages around the row, and those pages then stay
    # (a long-lived process ends up holding the whole file), or must be let go and mapped again
    # (slower per recall); pread costs little for the rows a recall scores (see BENCHMARKS.md, "Figures behind the
    # code").
    PREAD_MAX_ROWS = 20_000

    def _grow(self, need: int) -> None:
        """Make room for ``need`` rows; and vectors that are still the saved file's, mapped read-only
        (see :meth:`load`), become the index's own first (every change calls this first)."""
        cap = len(self.ids)
        if need <= cap:
            if not self.emb.flags.writeable:
                new = self._vector_rows(cap)
                _copy_rows(new, self.emb, self.n)
                self.emb = new
            return
        new_cap = max(need, cap * 2)
        for name in self._ARRAYS:
            old = getattr(self, name)
            if name == "emb":
                new = self._vector_rows(new_cap)
                _copy_rows(new, old, self.n)
            else:
                new = np.zeros((new_cap,) + old.shape[1:], dtype=old.dtype)
                new[: self.n] = old[: self.n]
            setattr(self, name, new)

    def _vector_rows(self, rows: int) -> np.ndarray:
        """A zeroed (rows, dim) float32 array for the vectors.

        From MAP_MIN_ROWS rows on (and with a ``spill_dir``), it maps a scratch file there instead
        of taking anonymous memory: the kernel keeps the vectors in its page cache, the process
        holds only the pages it touched since :func:`_release` let them go, and the kernel can take
        those back under memory pressure. Loading, saving and full scans release as they go, so a
        million memories' vectors are never resident at once while the index is built;
        pruned recall reads its rows with pread (:meth:`vectors`), mapping nothing. The file is
        unlinked at once (nothing is left behind, not even after a crash).
        """
        if self.spill_dir is None or rows < self.MAP_MIN_ROWS:
            return np.zeros((rows, self.dim), dtype=np.float32)
        try:
            self.spill_dir.mkdir(parents=True, exist_ok=True)
            fh = tempfile.TemporaryFile(dir=self.spill_dir)
            try:
                fh.truncate(rows * self.dim * 4)
                mapped = np.memmap(fh, dtype=np.float32, mode="r+", shape=(rows, self.dim))
            except BaseException:
                fh.close()
                raise
            mapped._file = fh  # kept open for vectors(); closed (and gone) with the array
            # Recall reads scattered rows: without this, each read maps a whole large folio of the
            # page cache, and a few hundred rows make most of the file resident.
            mapped._mmap.madvise(mmap.MADV_RANDOM)
            return mapped
        except OSError:  # an unwritable or full folder: memory it is
            return np.zeros((rows, self.dim), dtype=np.float32)

    def _release_rows(self, start: int, stop: int) -> None:
        _release(self.emb, start, stop)

    def vectors(self, rows: np.ndarray) -> np.ndarray:
        """The vectors of these rows, as a new array. Mapped vectors are read with pread (see
        PREAD_MAX_ROWS), so reading them leaves nothing resident."""
        file = getattr(self.emb, "_file", None)
        if file is None:
            return _take_rows(self.emb, rows)
        if len(rows) > self.PREAD_MAX_ROWS:
            # Through the mapping, in row order, letting each block's pages go before the next:
            # a few thousand rows map a bounded share of the file at a time.
            rows = np.asarray(rows)
            order = np.argsort(rows, kind="stable")
            out = np.empty((len(rows), self.dim), dtype=np.float32)
            for s in range(0, len(rows), 2048):
                block = rows[order[s:s + 2048]]
                out[order[s:s + 2048]] = self.emb[block]
                _release(self.emb, int(block[0]), int(block[-1]) + 1)
            return out
        out = np.empty((len(rows), self.dim), dtype=np.float32)
        fd, stride, preadv = file.fileno(), self.dim * 4, os.preadv
        start = getattr(self.emb, "_start", 0)  # the saved file's header comes first
        for i, r in enumerate(np.asarray(rows).tolist()):
            if preadv(fd, [out[i]], start + r * stride) != stride:
                raise OSError(f"short read of row {r} from the vectors' scratch file")
        return out

    def set_fields(self, mid: int, created: float, last_access: float, importance: float, access_count: float,
                   use_count: float | None = None, seq: int | None = None) -> None:
        """Update the scoring fields of a memory already in the index (``use_count`` None: keep it;
        ``seq``: the store's change sequence of the row now, None while the store has not the
        change yet, as for a recall not yet written)."""
        r = self.row_of[mid]
        if seq is not None:
            self.seqs[r] = seq
        if r < self._nb_n and self.created[r] != created:
            self._nb_stale = True
        self.created[r], self.last_access[r] = created, last_access
        self.importance[r], self.access_count[r] = importance, access_count
        if self._prior is not None:
            self._prior.changed(r)
        if use_count is not None:
            self.use_count[r] = use_count
            self.use_count_max = max(self.use_count_max, float(use_count))
        self.importance_max = max(self.importance_max, float(importance))
        self.access_count_max = max(self.access_count_max, float(access_count))

    def set_fields_many(self, rows: np.ndarray, created: np.ndarray, last_access: np.ndarray,
                        importance: np.ndarray, access_count: np.ndarray, use_count: np.ndarray,
                        seqs: np.ndarray) -> None:
        """:meth:`set_fields` of many rows at once."""
        rows = np.asarray(rows, dtype=np.int64)
        if rows.size == 0:
            return
        self.seqs[rows] = seqs
        if np.any((rows < self._nb_n) & (self.created[rows] != created)):
            self._nb_stale = True
        self.created[rows], self.last_access[rows] = created, last_access
        self.importance[rows], self.access_count[rows], self.use_count[rows] = importance, access_count, use_count
        if self._prior is not None:
            for r in rows.tolist():
                self._prior.changed(r)
        self.importance_max = max(self.importance_max, float(np.max(importance)))
        self.access_count_max = max(self.access_count_max, float(np.max(access_count)))
        self.use_count_max = max(self.use_count_max, float(np.max(use_count)))

    def rows_of(self, ids: np.ndarray) -> np.ndarray:
        """The rows of these memory ids (-1 for one not indexed)."""
        get = self.row_of.get
        return np.fromiter((get(m, -1) for m in np.asarray(ids).tolist()), dtype=np.int64, count=len(ids))

    def set_info(self, mid: int, info: tuple | None) -> None:
        """Replace the descriptive fields of an indexed memory (see :attr:`info`)."""
        self.info[self.row_of[mid]] = info

    def set_infos(self, table: Any) -> None:
        """Replace every row's descriptive fields by an Arrow table's rows, in row order."""
        if table.num_rows != self.n:
            raise ValueError(f"{table.num_rows} rows of fields for {self.n} memories")
        self.info = RowInfos()
        self.info.extend_table(table)
        self.info.finish_loading()

    def hash_at(self, row: int) -> str:
        """The content hash of the memory in ``row``."""
        return self.hashes[row].decode("ascii")

    def upsert(self, mid: int, vector: np.ndarray, tokens: list[str], content_hash: str,
               created: float, last_access: float, importance: float, access_count: float,
               info: tuple | None = None, use_count: float = 0.0, seq: int = 0) -> None:
        """Add a memory, or replace it whole when its id is already indexed (``seq``: the row's
        change sequence in the store)."""
        if mid in self.row_of:
            self.remove(mid)
        r = self.n
        self._grow(r + 1)
        self.ids[r] = mid
        self.emb[r] = vector
        self.hashes[r] = content_hash
        self.info.append(info)
        self.lexical.append(tokens)
        self.row_of[mid] = r
        self.n += 1
        self.set_fields(mid, created, last_access, importance, access_count, use_count, seq)
        self.changes_since_save += 1

    def add_many(self, ids: np.ndarray, vectors: np.ndarray, token_lists: Iterable[list[str]],
                 hashes: "list[str] | np.ndarray", created: np.ndarray, last_access: np.ndarray,
                 importance: np.ndarray, access_count: np.ndarray, infos: "list[tuple | None] | Any" = None,
                 use_count: np.ndarray | None = None, seqs: "np.ndarray | int" = 0) -> None:
        """Append memories that are not yet indexed, in bulk (``use_count`` None: all 0; ``infos``
        a list of tuples, an Arrow table of the info fields, or None: not filled yet; ``seqs``
        the rows' change sequences in the store)."""
        m = len(ids)
        if m == 0:
            return
        for mid in ids:
            if int(mid) in self.row_of:
                self.remove(int(mid))
        start = self.n
        self._grow(start + m)
        sl = slice(start, start + m)
        self.ids[sl], self.emb[sl] = ids, vectors
        self._release_rows(start, start + m)
        self.created[sl], self.last_access[sl] = created, last_access
        self.importance[sl], self.access_count[sl] = importance, access_count
        self.importance_max = max(self.importance_max, float(np.max(importance)))
        self.access_count_max = max(self.access_count_max, float(np.max(access_count)))
        self.use_count[sl] = 0.0 if use_count is None else use_count
        if use_count is not None:
            self.use_count_max = max(self.use_count_max, float(np.max(use_count)))
        self.hashes[sl] = hashes
        self.seqs[sl] = seqs
        if infos is None:
            self.info.extend_unfilled(m)
        elif isinstance(infos, list):
            self.info.extend(infos)
        else:
            self.info.extend_table(infos)
        self.lexical.extend(token_lists)
        self.row_of.update(zip(np.asarray(ids).tolist(), range(start, start + m)))
        self.n += m
        self.changes_since_save += m

    def remove(self, mid: int) -> None:
        """Drop a memory (no-op when absent): the last row moves into its place."""
        r = self.row_of.pop(mid, None)
        if r is None:
            return
        last = self.n - 1
        if r != last:
            self._grow(self.n)  # saved vectors still mapped: copied before the last row moves into r
        for side in (self._sq, self._ivf, self._proj):
            if side is not None:
                side.changed(r)  # the last row's vector moves into r
                side.changed(last)  # and the next memory appended takes the last row's place
        if self._prior is not None:
            self._prior.changed(r)
            self._prior.changed(last)
        if r != last:
            for name in self._ARRAYS:
                arr = getattr(self, name)
                arr[r] = arr[last]
            self.info[r] = self.info[last]
            self.row_of[int(self.ids[r])] = r
        self.info.pop()
        self.lexical.swap_remove(r)
        self.n -= 1
        self._nb_stale = True
        self.changes_since_save += 1

    def neighbour_rows(self) -> np.ndarray:
        """Each row's neighbours, (n, 2 × NEIGHBOURS): the rows created just before it (nearest
        first, in even columns) and just after it (odd columns), ties broken by id; -1 where there
        are fewer, or where one was created more than NEIGHBOUR_SECONDS away.

        Memories added after the newest one (an agent storing what it is told) extend the table
        where it ends; a memory removed, re-dated or added among older ones makes it sort the
        namespace again (a quarter of a second at 1M)."""
        n, old = self.n, self._nb_n
        if not self._nb_stale and n == old:
            return self._nb_table[:n]
        order = None
        if not self._nb_stale and n > old:
            new = np.arange(old, n, dtype=np.int64)
            new = new[np.lexsort((self.ids[new], self.created[new]))]
            last = self._nb_order[-1] if old else None
            if last is None or (self.created[new[0]], self.ids[new[0]]) >= (self.created[last], self.ids[last]):
                order = np.concatenate([self._nb_order, new])
                start = max(0, old - NEIGHBOURS)  # positions whose neighbours change
        if order is None:
            order = np.lexsort((self.ids[:n], self.created[:n]))
            start = 0
        if len(self._nb_table) < n:
            grown = np.full((max(n, 2 * len(self._nb_table)), 2 * NEIGHBOURS), -1, dtype=np.int64, order="F")
            grown[:old] = self._nb_table[:old]
            self._nb_table = grown  # columns contiguous: neighbour_best gathers by column
        pos = np.arange(start, n)
        rows, when = order[pos], self.created[order[pos]]
        for d in range(1, NEIGHBOURS + 1):
            for col, near in ((2 * d - 2, pos - d), (2 * d - 1, pos + d)):
                inside = (near >= 0) & (near < n)
                other = order[np.clip(near, 0, max(n - 1, 0))]
                close = inside & (np.abs(self.created[other] - when) <= NEIGHBOUR_SECONDS)
                self._nb_table[rows, col] = np.where(close, other, -1)
        self._nb_order, self._nb_n, self._nb_stale = order, n, False
        return self._nb_table[:n]

    def similarities(self, query: np.ndarray) -> np.ndarray:
        """Cosine similarity of every row to a unit query vector."""
        if not hasattr(self.emb, "_mmap"):
            return dot(self.emb[: self.n], query)
        out = np.empty(self.n, dtype=np.float32)
        with _sequential(self.emb):
            for s in range(0, self.n, _CHUNK_ROWS):  # a full scan of mapped vectors keeps none resident
                e = min(self.n, s + _CHUNK_ROWS)
                out[s:e] = dot(self.emb[s:e], query)
                _release(self.emb, s, e)
        return out

    # -- ranking ---------------------------------------------------------------------------------

    # Namespaces below this size are scored whole: a flat scan of them costs less than pruning.
    PRUNE_MIN_ROWS = 20_000
    # Rows the first quantized pass returns at least (widened 8× while the bound cannot rule out
    # the rest; past half the namespace a plain full scan is cheaper).
    PRUNE_FIRST_SCAN = 4096
    # Approximate (IVF) search is used only from this size on; smaller namespaces stay exact.
    APPROX_MIN_ROWS = 50_000
    # The projected bound gives way to the quantized first pass when more than this share of the
    # rows could reach the k-th best score by it.
    PROJECTED_MAX_SHARE = 1 / 4
    # Changed rows (recorded recalls change access counts) are scored exactly until this many
    # have gathered; then their prior bounds are recomputed.
    PRIOR_REFRESH = 64
    # What float32 rounding of a projected bound can take off it (scores are at most a few units).
    MARGIN = 1e-5
    # Rows reaching the threshold by the first block's bound above which a k-th best score is set
    # before the second block reads them (below it the second block costs less than the scoring,
    # see BENCHMARKS.md, "Figures behind the code"); and rows left after the second
    # block above which one is set before all of them are scored.
    SEED_FIRST_ROWS = 16_384
    SEED_ROWS = 1024
    # Rows whose own relevance is computed exactly to bound what they lend their neighbours (the
    # most relevant by bound; see _neighbour_bounds).
    NEIGHBOUR_EXACT_ROWS = 1024

    def rank(self, params: ScoringParams, query_tokens: list[str], vector: np.ndarray, now: float,
             periods: tuple[tuple[float, float], ...] = ()) -> "Ranking":
        """The top ``params.k`` rows reaching ``params.threshold`` by the blended score, best first.

        ``periods`` are the periods of time the query names (``memory_core.language.periods``): with
        ``params.date_weight`` they lift memories created in them (:func:`scoring.date_match`),
        and the namespace is scored whole (exact by construction: the pruning bounds below do not
        describe the lift, and only queries that name a period pay for it).

        Exact unless the index is in ``ivf`` mode and large enough (then ``Ranking.approximate``).
        Large namespaces are pruned: a first pass over 8-bit quantized vectors bounds every
        row's similarity from above (the quantization error of each dimension is measured, so
        ``|q·x − q·x̂| ≤ Σ|q_i|·err_i`` holds for every stored row); :func:`scoring.upper_bound`
        turns that into a bound of the blended score, and only rows whose bound reaches the k-th
        best exact score (or the threshold) are scored exactly. Rows are never dropped on a guess.
        """
        q = np.ascontiguousarray(vector, dtype=np.float32)
        if params.lexical_weight > 0:
            lex_rows, raw, idf_sum, max_idf = self.lexical.sparse_match(query_tokens)
            lex_vals = lexical_relevance(params, raw, idf_sum, max_idf, self.lexical.k1)
        else:
            lex_rows, lex_vals = np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float64)
        ranking = Ranking(self, params, q, now, lex_rows, lex_vals)
        n = self.n
        if n == 0:
            return ranking
        if periods and params.date_weight > 0:
            ranking.dates = date_match(self.created[:n], periods)
            ranking.stats.update(dated=True, pruned=False)
            return ranking.finish(None)
        if self.mode == "ivf" and n >= self.APPROX_MIN_ROWS:
            ranking.approximate = True
            return ranking.finish(self._ivf_candidates(q, lex_rows, lex_vals, params))
        if n >= self.PRUNE_MIN_ROWS:
            rows = self._projected_candidates(ranking)
            # A query the projected bound could not narrow (a quarter of the rows or more still
            # in) is scored whole: the 8-bit first pass reads as many bytes' worth of work as a
            # flat scan and its codes would take as much memory again (see BENCHMARKS.md, "Figures behind the code").
            if rows is None and not ranking.stats.get("projected"):
                rows = self._pruned_candidates(ranking)
            if rows is not None:
                ranking.stats["pruned"] = True
                return ranking.finish(rows)
        ranking.stats["pruned"] = False
        return ranking.finish(None)

    def _pending_rows(self, side: "_Sq8 | _Ivf") -> np.ndarray:
        """Rows the side index does not describe faithfully: changed since its build, or added after."""
        changed = np.fromiter((r for r in side.dirty if r < self.n), dtype=np.int64)
        return np.concatenate([changed, np.arange(side.m, self.n, dtype=np.int64)]) if self.n > side.m else changed

    def _side_stale(self, side: "_Sq8 | _Ivf | None") -> bool:
        return side is None or len(side.dirty) + max(0, self.n - side.m) > max(2000, self.n // 20)

    def _priors(self, params: ScoringParams, now: float) -> "_Priors":
        pri, n = self._prior, self.n
        if pri is None or pri.params != params or now < pri.t0:
            pri = self._prior = _Priors(params, now, *self._prior_bounds(params, np.arange(n), now))
            # A recall logged after ``now`` would raise the recency a later query sees: score exactly.
            pri.dirty.update(np.flatnonzero(self.last_access[:n] > now).tolist())
        elif len(pri.dirty) + max(0, n - pri.m) > self.PRIOR_REFRESH:
            # Bounds computed at t0 still hold now (time only lowers them), so only the changed and
            # the new rows need computing, as of now; the whole keeps holding from now on.
            rows = np.union1d(np.fromiter((r for r in pri.dirty if r < n), dtype=np.int64),
                              np.arange(min(pri.m, n), n, dtype=np.int64))
            pri.refresh(rows, now, *self._prior_bounds(params, rows, now))
            pri.dirty.update(np.flatnonzero(self.last_access[:n] > now).tolist())
        return pri

    def _prior_bounds(self, params: ScoringParams, rows: np.ndarray, now: float):
        return prior_bounds(params, created=self.created[rows], last_access=self.last_access[rows],
                            importance=self.importance[rows], access_count=self.access_count[rows],
                            use_count=self.use_count[rows], now=now)

    def _projected_candidates(self, ranking: "Ranking") -> np.ndarray | None:
        """Rows that can still be in the top k, bounded without reading whole vectors; or None
        when the bound cannot rule out enough rows (then the 8-bit first pass runs).

        A row's similarity is at most its coordinates on the namespace's top principal directions
        times the query's, plus the product of the two distances from their span (exact: the rest
        is orthogonal, and Cauchy-Schwarz bounds it). With :func:`scoring.prior_bounds` that
        bounds the whole blended score. The first 64 directions are read for every row (a sixth
        of a full scan); the next 64 only for the rows the first bound leaves in. A row must
        reach the threshold; when many rows do, the best of them by bound are scored exactly
        first, setting a k-th best score they must reach too (:meth:`_raise_level`). Every row
        whose bound reaches the level is then scored exactly. A row left out has a bound strictly
        below it, so it can neither enter the top k nor tie with it. Rows changed since a side
        structure was built are always scored exactly.
        """
        if self._side_stale(self._proj):
            with _sequential(self.emb):
                self._proj = _Projection(self.emb[: self.n], self._release_rows)
            self.side_unsaved = True
        pr, p, n, q = self._proj, ranking.params, self.n, ranking.query
        if not pr.useful or p.alpha * (1.0 - p.lexical_weight) <= 0:
            ranking.stats["projected"] = False
            return None  # no low-dimensional structure to bound with, or similarity weighs nothing
        pri = self._priors(p, ranking.now)
        m = min(pr.m, pri.m, n)
        # Dirty sets only grow until their structure is rebuilt: their sizes identify them.
        key = (pr.serial, pri.serial, len(pr.dirty), len(pri.dirty), n)
        if self._pending[0] != key:
            dirty = np.fromiter(pr.dirty | pri.dirty, dtype=np.int64)
            dirty = np.sort(dirty[dirty < m])
            self._pending = (key, np.concatenate([dirty, np.arange(m, n, dtype=np.int64)]))
        pending = self._pending[1]
        # Every row's similarity bound from the first block, clipped to where it moves the score
        # (float32 band edges rounded up, so the clip never lowers a bound).
        qa, qb, q_rest_a, q_rest_b = pr.query(q)
        lo, hi = _up32(p.similarity_floor), _up32(p.similarity_ceiling)
        dot_a = dot(pr.coords_a[:m], qa)
        ub = pr.rest_a[:m] * np.float32(q_rest_a)
        ub += dot_a
        ub += np.float32(pr.slack)
        np.clip(ub, lo, hi, out=ub)
        lifted = p.neighbour_weight > 0
        if lifted:
            nb_ub, lift_gain, lex_full = self._neighbour_bounds(ranking, pri, ub, pending, m)
            lift = _up32_array(lift_gain * neighbour_lift(p, relevance_of(p, ub, lex_full[:m]), nb_ub))
        # ... and the blended score's bound: scoring.prior_bounds, linear in that similarity.
        ub *= pri.slope[:m]
        ub += pri.offset[:m]
        lex = ranking.lex_rows < m
        lex_rows, lex_vals = ranking.lex_rows[lex], ranking.lex_vals[lex]
        # What each row's lexical match can add, kept dense: the second block looks it up for
        # tens of thousands of rows at 1M, and a lookup beats a search of the sorted match rows.
        lex_add = np.zeros(m, dtype=np.float32)
        lex_add[lex_rows] = pri.lexical_gain[lex_rows] * lex_vals
        ub += lex_add
        if lifted:  # what the neighbours can lift each row by, given both bounds
            ub += lift
        # A row must reach the threshold. When many do, the best of them by bound, scored exactly,
        # may set a higher level (the k-th best score so far) that rules most of them out before
        # the second block reads them. MARGIN covers float32 rounding of the bounds.
        level = p.threshold - self.MARGIN
        rows = np.flatnonzero(ub >= level)
        bound = ub[rows]
        raised = rows.size > self.SEED_FIRST_ROWS
        if raised:
            level = self._raise_level(ranking, rows, bound, pending)
            keep = bound >= level
            rows, bound = rows[keep], bound[keep]
        ranking.stats.update(projected=True, reach_first=int(rows.size))
        if rows.size > m * self.PROJECTED_MAX_SHARE:
            return None
        # The second block tightens the bound of the rows still in: read for them only.
        if pr.coords_b.shape[1] and rows.size:
            cos2 = dot(_take_rows(pr.coords_b, rows), qb)
            cos2 += dot_a.take(rows)
            cos2 += pr.rest_b.take(rows) * np.float32(q_rest_b)
            cos2 += np.float32(pr.slack)
            np.clip(cos2, lo, hi, out=cos2)
            if lifted:
                lift2 = _up32_array(lift_gain[rows] * neighbour_lift(
                    p, relevance_of(p, cos2, lex_full[rows]), nb_ub[rows]))
            cos2 *= pri.slope.take(rows)
            cos2 += pri.offset.take(rows)
            cos2 += lex_add.take(rows)
            if lifted:
                cos2 += lift2
            keep = cos2 >= level
            rows, bound = rows[keep], cos2[keep]
        if rows.size > self.SEED_ROWS and not raised:
            # Still many: a k-th best score from the best of them by the tighter bound.
            level = self._raise_level(ranking, rows, bound, pending)
            rows = rows[bound >= level]
        cand = _unique(np.concatenate([rows, pending])) if pending.size else rows
        ranking.stats.update(reach=int(rows.size), candidates=int(cand.size))
        return cand

    def _neighbour_bounds(self, ranking: "Ranking", pri: "_Priors", sim_ub: np.ndarray, pending: np.ndarray,
                          m: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """For rows below ``m``: the most relevant any neighbour of each can be, what a unit of
        lift adds to its score bound, and every row's lexical match (dense).

        ``sim_ub`` bounds each row's similarity (clipped to the band). A neighbour's relevance is
        bounded by its own bound, except for the rows most relevant by that bound and the rows no
        side structure describes (``pending``, or from ``m`` on): their relevance is computed
        exactly (NEIGHBOUR_EXACT_ROWS of them), so one loose bound near the top does not lift
        every row around it. The lift gain is ``dense_gain + lexical_gain``
        (:func:`scoring.prior_bounds`), rounded up."""
        p, n = ranking.params, self.n
        lex_full = np.zeros(n, dtype=np.float64)
        lex_full[ranking.lex_rows] = ranking.lex_vals
        rel_ub = np.empty(n, dtype=np.float64)
        rel_ub[:m] = relevance_of(p, sim_ub, lex_full[:m])
        top = np.arange(m) if m <= self.NEIGHBOUR_EXACT_ROWS else np.argpartition(
            rel_ub[:m], m - self.NEIGHBOUR_EXACT_ROWS)[m - self.NEIGHBOUR_EXACT_ROWS:]
        exact = _unique(np.concatenate([top, pending]).astype(np.int64))
        rel_ub[exact] = ranking._own_relevance(exact)
        nb_ub = neighbour_best(rel_ub, self.neighbour_rows()[:m])
        span = p.similarity_ceiling - p.similarity_floor
        gain = (pri.slope[:m].astype(np.float64) * span + pri.lexical_gain[:m]) * (1 + 1e-6)
        return nb_ub, gain, lex_full

    def _raise_level(self, ranking: "Ranking", rows: np.ndarray, bound: np.ndarray, pending: np.ndarray) -> float:
        """Score exactly the best of ``rows`` by ``bound`` (and the ``pending`` rows, which no bound
        describes): the level every hit must reach is then at least their k-th best score."""
        p = ranking.params
        best = max(8 * p.k, 64)
        if rows.size > best:
            rows = rows[np.argpartition(bound, rows.size - best)[rows.size - best:]]
        ranking.exact(_unique(np.concatenate([pending, rows])))
        return max(ranking.kth_best(), p.threshold) - self.MARGIN

    def _pruned_candidates(self, ranking: "Ranking") -> np.ndarray | None:
        """Rows that can still be in the top k, or None when pruning would not pay (score all)."""
        if ranking.params.neighbour_weight > 0:
            # Without every row's similarity bound, a row's neighbours may be anything: the bound
            # could rule out almost nothing. Score every row instead (exact all the same).
            ranking.stats["first_pass"] = False
            return None
        if self._side_stale(self._sq):
            with _sequential(self.emb):
                self._sq = _Sq8(self.emb[: self.n], self._release_rows)
            self.side_unsaved = True
        sq, p, q = self._sq, ranking.params, ranking.query
        slack = float(np.abs(q).astype(np.float64) @ sq.err) + 1e-4  # + float rounding of the scan
        pending = self._pending_rows(sq)
        lex_rows, lex_vals = ranking.lex_rows, ranking.lex_vals
        k = max(self.PRUNE_FIRST_SCAN, self.n // 50)
        # date 0: a query naming a period never gets here (rank scores it whole), so nothing is lifted.
        bound = dict(importance_max=self.importance_max, access_count_max=self.access_count_max,
                     use_count_max=self.use_count_max, date=0.0)
        while True:
            k = min(k, sq.m)
            with _one_thread():
                dist, found = sq.index.search(q[None, :], k)
            dist, found = dist[0], found[0]
            ok = (found >= 0) & (found < self.n)
            if sq.dirty:
                ok &= ~np.isin(found, np.fromiter(sq.dirty, dtype=np.int64))
            rows = found[ok]
            # The best few by quantized similarity, scored exactly, set a k-th best score to beat.
            seed = np.union1d(rows[: max(8 * p.k, 64)], pending)
            ranking.exact(seed)
            level = max(ranking.kth_best(), p.threshold)
            # Each scanned row's own bound (quantized similarity + the error, its lexical match):
            # only rows that could reach the level are scored exactly.
            ub = upper_bound(p, similarity=dist[ok].astype(np.float64) + slack, lexical=ranking._lexical(rows),
                             **bound)
            cand = np.union1d(rows[ub >= level], seed)
            ranking.exact(cand)
            level = max(ranking.kth_best(), p.threshold)
            # Every clean row the scan did not return has q·x̂ ≤ the last value it returned.
            rest_sim = float(dist[-1]) + slack if k < sq.m and len(dist) else -np.inf
            outside = ~np.isin(lex_rows, rows) & ~np.isin(lex_rows, pending)
            if outside.any():
                lub = upper_bound(p, similarity=rest_sim, lexical=lex_vals[outside], **bound)
                more = lex_rows[outside][lub >= level]
                if more.size:
                    cand = np.union1d(cand, more)
                    ranking.exact(more)
            ranking.stats.update(scan_k=k, candidates=int(cand.size), first_pass=True)
            if rest_sim == -np.inf or upper_bound(p, similarity=rest_sim, lexical=0.0, **bound) < level:
                return cand
            if k >= sq.m or k * 8 > sq.m // 2:
                return None  # the bound cannot exclude enough rows: a full exact scan is cheaper
            k *= 8

    def _ivf_candidates(self, q: np.ndarray, lex_rows: np.ndarray, lex_vals: np.ndarray,
                        p: ScoringParams) -> np.ndarray:
        if self._side_stale(self._ivf):
            self._ivf = _Ivf(self.emb[: self.n])
        ivf = self._ivf
        # Candidates are rescored exactly, and the priors reorder them: a wide net costs little and
        # is what keeps recall@k high (200 candidates gave 0.52 at 1M; see bench/recall_scale.py).
        k = min(ivf.m, max(2000, 100 * p.k))
        with _one_thread():
            _, found = ivf.index.search(q[None, :], k)
        found = found[0]
        found = found[(found >= 0) & (found < self.n)]
        if ivf.dirty:
            found = found[~np.isin(found, np.fromiter(ivf.dirty, dtype=np.int64))]
        lexical_best = lex_rows[np.argsort(-lex_vals, kind="stable")[:k]]
        return np.union1d(np.union1d(found, self._pending_rows(ivf)), lexical_best)

    def build_approximate(self) -> None:
        """Build the IVF side index now (it is otherwise built on the first approximate recall)."""
        if self.n >= self.APPROX_MIN_ROWS and self._side_stale(self._ivf):
            self._ivf = _Ivf(self.emb[: self.n])

    # -- persistence -----------------------------------------------------------------------------

    def reserve(self, rows: int) -> None:
        """Make room for ``rows`` memories at once (a load knows its size: no doubling copies)."""
        self._grow(rows)

    def save(self, folder: Path, model: str) -> None:
        """Write the vectors, the BM25 arrays and a header; atomic per file, header last.

        The vectors are written straight from the index's array (no copy: at a million memories a
        copy would be as large as the vectors).
        """
        folder.mkdir(parents=True, exist_ok=True)
        stem = folder / namespace_key(self.namespace)
        n = self.n
        _atomic(stem.with_suffix(".vec.npy"), lambda p: _save_npy(p, self.emb[:n], self._release_rows))
        _atomic(stem.with_suffix(".lex.npz"), lambda p: _savez(
            p, ids=self.ids[:n], hashes=self.hashes[:n], **{f: getattr(self, f)[:n] for f in self._FIELDS},
            **self.lexical.to_arrays()))
        infos = self.info.whole()
        if infos is not None:
            _atomic(stem.with_suffix(".info.arrow"), lambda p: _save_arrow(p, infos))
        else:
            stem.with_suffix(".info.arrow").unlink(missing_ok=True)
        # fields: the rows' sequences, scoring and descriptive fields are saved too (else they are
        # read from the store when the index is loaded again)
        self.save_id = secrets.token_hex(8)
        self._save_side(stem)
        header = {"format": FORMAT_VERSION, "namespace": self.namespace, "model": model,
                  "dim": self.dim, "count": n, "seq": self.seq, "fields": infos is not None, "save": self.save_id}
        _atomic(stem.with_suffix(".json"), lambda p: p.write_text(json.dumps(header)))
        self.changes_since_save = 0

    def save_side(self, folder: Path) -> None:
        """Write the side structures built since the last save (the projection, the 8-bit codes),
        when the index holds the rows it saved then: the next load need not build them again."""
        if self.side_unsaved and self.save_id is not None and not self.changes_since_save:
            self._save_side(folder / namespace_key(self.namespace))

    def _save_side(self, stem: Path) -> None:
        """The side structures, as they describe rows 0..n-1 (their rows changed since they were
        built are saved as such): ``<stem>.side.npz``, tied to the save ``save_id`` (a side file
        of any other save, or none, is not used: see :meth:`_load_side`). None built: no file."""
        path = stem.with_suffix(".side.npz")
        arrays: dict[str, np.ndarray] = {}
        for prefix, side in (("proj", self._proj), ("sq", self._sq)):
            if side is not None and not self._side_stale(side):
                arrays.update({f"{prefix}_{k}": v for k, v in side.to_arrays(self.n).items()})
        if arrays:
            _atomic(path, lambda p: _savez(p, save=np.array(self.save_id), **arrays))
        else:
            path.unlink(missing_ok=True)
        self.side_unsaved = False

    def _load_side(self, stem: Path) -> None:
        """Take the saved side structures when they were saved with this very save of the index
        (``save_id``) and read back whole (an ``.npz`` checks each array's CRC-32); else leave
        them to be built on first use."""
        try:
            with np.load(stem.with_suffix(".side.npz"), allow_pickle=False) as z:
                if self.save_id is None or str(z["save"]) != self.save_id:
                    return
                arrays = {k: z[k] for k in z.files}
            proj = _Projection.from_arrays(arrays, "proj_", self.n, self.dim) if "proj_m" in arrays else None
            sq = _Sq8.from_arrays(arrays, "sq_", self.n, self.dim) if "sq_m" in arrays else None
        except Exception:  # missing, damaged, truncated, another format: built again when needed
            return
        self._proj, self._sq = proj, sq

    @classmethod
    def load(cls, folder: Path, namespace: str, model: str, dim: int,
             spill_dir: Path | None = None) -> "NamespaceIndex | None":
        """The saved index of ``namespace``, or None when missing, damaged or built otherwise.

        The rows' change sequences, scoring and descriptive fields are as saved when
        :attr:`fields_saved` (else zero and unfilled): the caller reconciles them with the store.
        """
        stem = folder / namespace_key(namespace)
        try:
            header = json.loads(stem.with_suffix(".json").read_text())
            if (header.get("format"), header.get("namespace"), header.get("model"), header.get("dim")) != (
                FORMAT_VERSION, namespace, model, dim):
                return None
            n = int(header["count"])
            vectors = np.load(stem.with_suffix(".vec.npy"), allow_pickle=False, mmap_mode="r")
            with np.load(stem.with_suffix(".lex.npz"), allow_pickle=False) as z:
                lex = {k: z[k] for k in z.files}
            ids, hashes = lex["ids"].astype(np.int64, copy=False), lex["hashes"].astype(HASH_DTYPE, copy=False)
            if vectors.shape != (n, dim) or vectors.dtype != np.float32 or len(ids) != n or len(hashes) != n:
                return None
            lexical = LexicalIndex.from_arrays(lex["indptr"], lex["term_ids"], lex["tfs"], str(lex["vocab"]))
            if len(lexical) != n:
                return None
            infos = None
            if header.get("fields"):
                infos = _load_arrow(stem.with_suffix(".info.arrow"))
                if infos.num_rows != n or any(len(lex[f]) != n for f in cls._FIELDS):
                    infos = None
        except Exception:  # any unreadable, truncated or foreign file means: rebuild
            return None
        idx = cls(namespace, dim)
        idx.spill_dir = spill_dir
        # Arrays of exactly n rows: the next memory added grows them.
        for name in idx._ARRAYS:
            setattr(idx, name, np.zeros(n, dtype=getattr(idx, name).dtype))
        idx.ids, idx.hashes = ids, hashes
        mapped = None
        if spill_dir is not None and n >= cls.MAP_MIN_ROWS:
            mapped = _map_saved(stem.with_suffix(".vec.npy"), n, dim)
        if mapped is not None:
            # The saved file itself, mapped read-only, where a copy would go to a scratch file
            # anyway: no copy (4 s at a million memories) until the first change (see _grow).
            # Saves replace the file by a new one (_atomic): the mapped one stays as it was.
            idx.emb = mapped
        else:
            idx.emb = idx._vector_rows(n)
            try:
                _copy_rows(idx.emb, vectors, n)  # the saved file stays as it is: a copy
            except (OSError, ValueError):  # read past a file truncated after the header was checked
                return None
        idx.lexical = lexical
        if infos is not None:
            for f in cls._FIELDS:
                setattr(idx, f, lex[f].astype(getattr(idx, f).dtype, copy=False))
            idx.info.extend_table(infos)
            idx.info.finish_loading()
            idx.fields_saved = True
            if n:
                idx.importance_max = float(idx.importance.max())
                idx.access_count_max = float(idx.access_count.max())
                idx.use_count_max = float(idx.use_count.max())
        else:
            idx.info.extend_unfilled(n)
        idx.row_of = dict(zip(ids.tolist(), range(n)))
        idx.n = n
        idx.seq = int(header["seq"])
        idx.changes_since_save = 0
        save_id = header.get("save")
        idx.save_id = save_id if isinstance(save_id, str) else None
        idx._load_side(stem)
        return idx


# -- ranking helpers -------------------------------------------------------------------------------


class Ranking:
    """One recall's scoring over a namespace index: exact scores of the rows it looked at, the
    chosen rows (best first) with their scores and components, and what the search did."""

    def __init__(self, idx: NamespaceIndex, params: ScoringParams, query: np.ndarray, now: float,
                 lex_rows: np.ndarray, lex_vals: np.ndarray):
        self.idx, self.params, self.query, self.now = idx, params, query, now
        self.lex_rows, self.lex_vals = lex_rows, lex_vals
        self.approximate = False
        self.stats: dict[str, Any] = {}
        # Every row's match with the periods the query names (None: it names none, or they weigh nothing).
        self.dates: np.ndarray | None = None
        self.rows = np.zeros(0, dtype=np.int64)
        self.scores = np.zeros(0, dtype=np.float64)
        self.components: dict[str, np.ndarray] = {}
        self._seen_rows = np.zeros(0, dtype=np.int64)  # sorted
        self._seen_scores = np.zeros(0, dtype=np.float64)

    def _lexical(self, rows: np.ndarray) -> np.ndarray:
        out = np.zeros(len(rows), dtype=np.float64)
        if self.lex_rows.size and len(rows):
            pos = np.minimum(np.searchsorted(self.lex_rows, rows), self.lex_rows.size - 1)
            hit = self.lex_rows[pos] == rows
            out[hit] = self.lex_vals[pos[hit]]
        return out

    def _own_relevance(self, rows: np.ndarray, sim: np.ndarray | None = None) -> np.ndarray:
        """The relevance of these rows without neighbours; 0 for a memory created after ``now``
        (an "as of" recall lends nothing from memories it cannot see)."""
        i = self.idx
        if sim is None:
            sim = dot(i.vectors(rows), self.query)
        own = own_relevance(self.params, sim, self._lexical(rows), None if self.dates is None else self.dates[rows])
        return np.where(i.created[rows] <= self.now, own, 0.0)

    def _neighbour_best(self, rows: np.ndarray) -> np.ndarray | None:
        """Each row's best neighbour relevance (None when neighbours weigh nothing)."""
        if self.params.neighbour_weight == 0:
            return None
        table = self.idx.neighbour_rows()[rows]
        near = _unique(table[table >= 0])
        if near.size == 0:
            return np.zeros(len(rows))
        rel = self._own_relevance(near)
        local = np.where(table >= 0, np.searchsorted(near, np.maximum(table, 0)), -1)
        return neighbour_best(rel, local)

    def score_rows(self, rows: np.ndarray) -> tuple[np.ndarray, dict[str, np.ndarray]]:
        """Exact blended scores of these rows (−inf for a memory created after ``now``)."""
        i = self.idx
        rows = np.asarray(rows, dtype=np.int64)
        sim = dot(i.vectors(rows), self.query)
        score, comps = blend(self.params, similarity=sim, lexical=self._lexical(rows), created=i.created[rows],
                             last_access=i.last_access[rows], importance=i.importance[rows],
                             access_count=i.access_count[rows], use_count=i.use_count[rows], now=self.now,
                             neighbour_relevance=self._neighbour_best(rows),
                             date_match=None if self.dates is None else self.dates[rows])
        # An "as of" recall must not see memories written after that moment.
        return np.where(i.created[rows] <= self.now, score, -np.inf), comps

    def exact(self, rows: np.ndarray) -> np.ndarray:
        """Score rows not scored yet and remember their scores (they tighten the k-th best)."""
        rows = np.asarray(rows, dtype=np.int64)
        if self._seen_rows.size:
            pos = np.minimum(np.searchsorted(self._seen_rows, rows), self._seen_rows.size - 1)
            new = rows[self._seen_rows[pos] != rows]
        else:
            new = rows
        if new.size > 1 and np.any(new[1:] <= new[:-1]):
            new = _unique(new)  # callers mostly pass sorted unique rows; the others need it
        if new.size:
            score, _ = self.score_rows(new)
            allrows = np.concatenate([self._seen_rows, new])
            order = np.argsort(allrows, kind="stable")
            self._seen_rows = allrows[order]
            self._seen_scores = np.concatenate([self._seen_scores, score])[order]
        return self._seen_scores[np.searchsorted(self._seen_rows, rows)]

    def kth_best(self, _scores: np.ndarray | None = None) -> float:
        """The k-th best exact score seen so far: a lower bound of the true k-th best (−inf when
        fewer than k memories were scored)."""
        k = self.params.k
        finite = self._seen_scores[np.isfinite(self._seen_scores)]
        if finite.size < k:
            return -np.inf
        return float(np.partition(-finite, k - 1)[k - 1] * -1.0)

    def finish(self, candidates: np.ndarray | None) -> "Ranking":
        """Pick the top k among ``candidates`` (None: every row, scored whole)."""
        p, i = self.params, self.idx
        if candidates is None:
            n = i.n
            lexical = np.zeros(n, dtype=np.float64)
            lexical[self.lex_rows] = self.lex_vals
            sim = i.similarities(self.query)
            nb = None
            if p.neighbour_weight > 0:
                own = np.where(i.created[:n] <= self.now, own_relevance(p, sim, lexical, self.dates), 0.0)
                nb = neighbour_best(own, i.neighbour_rows())
            score, comps = blend(p, similarity=sim, lexical=lexical, created=i.created[:n],
                                 last_access=i.last_access[:n], importance=i.importance[:n],
                                 access_count=i.access_count[:n], use_count=i.use_count[:n], now=self.now,
                                 neighbour_relevance=nb, date_match=self.dates)
            score = np.where(i.created[:n] <= self.now, score, -np.inf)
            chosen = top_k(score, i.ids[:n], p.k, p.threshold, sim)
            self.rows, self.scores = chosen.astype(np.int64), score[chosen]
            self.components = {name: np.asarray(v)[chosen] for name, v in comps.items()}
            self.stats["candidates"] = n
            return self
        candidates = np.asarray(candidates, dtype=np.int64)
        score = self.exact(candidates)
        chosen = candidates[top_k(score, i.ids[candidates], p.k, p.threshold,
                                   lambda pos: dot(i.vectors(candidates[pos]), self.query))]
        self.rows = chosen
        self.scores, self.components = self.score_rows(chosen)
        self.stats.setdefault("candidates", int(candidates.size))
        return self
