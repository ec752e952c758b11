"""The lexical side of a namespace index: the tokens a memory is indexed by and exact, incremental BM25."""

from __future__ import annotations

import itertools
import math
from collections import Counter
from typing import Iterable

import numpy as np

from .scoring import ScoringParams, lexical_relevance
from ..language.text import lexical_tokens


# -- tokens (memory_core.language.text makes them) ----------------------------------------------------------


def memory_tokens(text: str | None, context: str | None = None) -> list[str]:
    """What the lexical index holds for a memory: its text's tokens, then its context's."""
    return lexical_tokens(text) + lexical_tokens(context)


# -- BM25 ------------------------------------------------------------------------------------------


class LexicalIndex:
    """Exact BM25 (Lucene's variant, k1 = 1.5, b = 0.4: the scores bm25s computes) over rows 0..n-1.

    b = 0.4 (Lucene's default is 0.75) normalizes a memory's length less: a long turn that holds
    the answer with its context is not pushed under short ones sharing one word (LoCoMo 0-4, with
    neighbours: R@5 0.646 -> 0.650, R@10 0.759 -> 0.756; without context R@10 0.739 -> 0.744).

    Incremental: adding or removing a document costs its own terms only, and statistics (document
    frequencies, average length) are always current, so scores equal a fresh rebuild's.

    Terms are numbered (``vocab``). Rows as of the last compaction live in compressed arrays (the
    term ids and counts of each row, and each term's rows and counts); rows added, moved or removed
    since live in small dicts beside them, and the arrays' entries of such rows are "detached"
    (ignored). When the dicts grow past an eighth of the rows, everything is compacted into arrays
    again. The arrays take a tenth of what a dict per row and per term took (see BENCHMARKS.md, "Figures behind the
    code").
    """

    k1 = 1.5
    b = 0.4
    COMPACT_MIN = 4096  # changed rows kept in dicts before a compaction is considered
    # Term lookups answered from a loaded index's saved vocabulary text before the dict of every
    # term is built (building it takes far longer than a few lookups in the text, see BENCHMARKS.md, "Figures behind
    # the code"),
    # so a namespace's first recalls answer without waiting for the dict.
    TEXT_LOOKUPS = 64

    def __init__(self) -> None:
        # The terms by id and the id of each term; both built on first use from ``_text`` (the
        # saved vocabulary, "\n"-joined and with "\n" at both ends) for an index read from arrays.
        self._vocab: dict[str, int] | None = {}
        self._terms: list[str] | None = []
        self._text: str | None = None
        self._n_terms = 0
        self._text_lookups = 0
        self.n = 0
        self.lengths = np.zeros(16, dtype=np.float64)  # document lengths by row
        self.total_len = 0.0
        # Rows 0..base_n-1 as of the last compaction: each row's term ids and counts (CSR)...
        self._base_n = 0
        self._indptr = np.zeros(1, dtype=np.int64)
        self._tids = np.zeros(0, dtype=np.int32)
        self._tfs = np.zeros(0, dtype=np.int32)
        self._detached = np.zeros(0, dtype=bool)  # base rows whose array entries no longer hold
        self._n_detached = 0
        # ...and each term's rows and counts, built from them when first needed.
        self._post: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None
        # Rows set since: row -> {term id: count}, and term id -> {row: count}.
        self._rows: dict[int, dict[int, int]] = {}
        self._postings: dict[int, dict[int, int]] = {}
        # Posting lists as arrays, built on first use and dropped when the term's postings change.
        self._arrays: dict[int, tuple[np.ndarray, np.ndarray]] = {}

    def __len__(self) -> int:
        return self.n

    @property
    def terms(self) -> list[str]:
        """The terms by id."""
        if self._terms is None:
            self._terms = self._text[1:-1].split("\n") if self._n_terms else []
        return self._terms

    @property
    def vocab(self) -> dict[str, int]:
        """The id of each term."""
        if self._vocab is None:
            self._vocab = dict(zip(self.terms, range(len(self.terms))))
        return self._vocab

    def _editable(self) -> None:
        """Before the vocabulary changes: the list and the dict are what holds it from now on."""
        if self._text is not None:
            self.terms, self.vocab  # noqa: B018 - built here
            self._text = None

    def term_id(self, term: str) -> int | None:
        """The id of ``term``, or None when no row holds it."""
        if self._vocab is None and self._text is not None and self._text_lookups < self.TEXT_LOOKUPS:
            self._text_lookups += 1
            if "\n" in term:
                return None
            at = self._text.find("\n" + term + "\n")
            return None if at < 0 else self._text.count("\n", 0, at)
        return self.vocab.get(term)

    # -- reading ---------------------------------------------------------------------------------

    def _row_tids(self, row: int) -> dict[int, int]:
        d = self._rows.get(row)
        if d is not None:
            return d
        if row < self._base_n and not self._detached[row]:
            s, e = self._indptr[row], self._indptr[row + 1]
            return dict(zip(self._tids[s:e].tolist(), self._tfs[s:e].tolist()))
        return {}

    def terms_of(self, row: int) -> dict[str, int]:
        """The terms of ``row`` and how often each occurs."""
        return {self.terms[t]: tf for t, tf in self._row_tids(row).items()}

    def _base_postings(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The arrays' entries by term: offsets per term id, then rows and counts."""
        if self._post is None:
            rows = np.repeat(np.arange(self._base_n, dtype=np.int32), np.diff(self._indptr))
            order = np.argsort(self._tids, kind="stable")  # rows ascending within a term
            ptr = np.zeros(self._n_terms + 1, dtype=np.int64)
            np.cumsum(np.bincount(self._tids, minlength=self._n_terms), out=ptr[1:])
            self._post = (ptr, rows[order], self._tfs[order])
        return self._post

    def _posting_arrays(self, term: str) -> tuple[np.ndarray, np.ndarray] | None:
        tid = self.term_id(term)
        if tid is None:
            return None
        arrays = self._arrays.get(tid)
        if arrays is None:
            ptr, prow, ptf = self._base_postings()
            if tid + 1 < len(ptr):
                rows, tf = prow[ptr[tid]:ptr[tid + 1]], ptf[ptr[tid]:ptr[tid + 1]]
                if self._n_detached and rows.size:
                    keep = ~self._detached[rows]
                    rows, tf = rows[keep], tf[keep]
            else:
                rows = tf = np.zeros(0, dtype=np.int32)
            extra = self._postings.get(tid)
            if not extra and not self._n_detached:
                # Slices of the arrays as they are: nothing to cache (copies of every queried
                # term's postings would grow with the queries, without bound).
                return (rows, tf) if rows.size else None
            if extra:
                rows = np.concatenate([rows, np.fromiter(extra.keys(), dtype=np.int32, count=len(extra))])
                tf = np.concatenate([tf, np.fromiter(extra.values(), dtype=np.int32, count=len(extra))])
            arrays = (rows.astype(np.int64), tf.astype(np.float64))
            self._arrays[tid] = arrays
        return arrays if arrays[0].size else None

    def rows_holding(self, term: str, limit: int) -> np.ndarray:
        """The rows holding ``term`` when at most ``limit`` rows do; none otherwise (the few
        memories a rare word is found in, without reading a common word's postings)."""
        arrays = self._posting_arrays(term)
        if arrays is None or len(arrays[0]) > limit:
            return np.zeros(0, dtype=np.int64)
        return np.asarray(arrays[0], dtype=np.int64)

    def idf(self, term: str) -> float:
        arrays = self._posting_arrays(term)
        return self._idf(0 if arrays is None else len(arrays[0]))

    def _idf(self, df: int) -> float:
        return math.log(1.0 + (self.n - df + 0.5) / (df + 0.5))

    # -- changing --------------------------------------------------------------------------------

    def _tid(self, term: str) -> int:
        self._editable()
        tid = self._vocab.get(term)
        if tid is None:
            tid = self._vocab[term] = len(self._terms)
            self._terms.append(term)
            self._n_terms += 1
        return tid

    def _grow_lengths(self, need: int) -> None:
        if need > len(self.lengths):
            grown = np.zeros(max(need, 2 * len(self.lengths)), dtype=np.float64)
            grown[: len(self.lengths)] = self.lengths
            self.lengths = grown

    def _set_length(self, row: int, length: float) -> None:
        self._grow_lengths(row + 1)
        self.lengths[row] = length
        self.total_len += length

    def _detach(self, row: int) -> None:
        if row < self._base_n and not self._detached[row]:
            self._detached[row] = True
            self._n_detached += 1

    def _put(self, row: int, counts: dict[int, int]) -> None:
        self._detach(row)
        self._rows[row] = counts
        for tid, tf in counts.items():
            self._postings.setdefault(tid, {})[row] = tf
            self._arrays.pop(tid, None)

    def _drop(self, row: int) -> dict[int, int]:
        counts = self._row_tids(row)
        if self._rows.pop(row, None) is not None:
            for tid in counts:
                plist = self._postings[tid]
                del plist[row]
                if not plist:
                    del self._postings[tid]
        self._detach(row)
        for tid in counts:
            self._arrays.pop(tid, None)
        return counts

    def append(self, tokens: Iterable[str]) -> None:
        counts = Counter(self._tid(t) for t in tokens)
        row = self.n
        self._put(row, dict(counts))
        self._set_length(row, float(sum(counts.values())))
        self.n += 1
        self._maybe_compact()

    def extend(self, token_lists: Iterable[Iterable[str]]) -> None:
        """Append many documents. Into an index with no changed rows they go straight into the
        arrays (a namespace's load), without a dict per row."""
        if self._rows or self._n_detached or self._base_n != self.n:
            for tokens in token_lists:
                self.append(tokens)
            return
        # Every token of every document in one list, numbered in one pass, then counted per
        # document by one sort (a Counter per document took a fifth of a cold load). A row's
        # terms come out in term-id order, not first-seen order: BM25 does not depend on it.
        flat: list[str] = []
        ends = []
        for tokens in token_lists:
            flat.extend(tokens)
            ends.append(len(flat))
        m = len(ends)
        self._editable()
        vocab, known = self.vocab, len(self.vocab)
        number = vocab.setdefault
        tids = np.fromiter((number(t, len(vocab)) for t in flat), dtype=np.int64, count=len(flat))
        if len(vocab) > known:
            self.terms.extend(itertools.islice(vocab, known, None))
            self._n_terms = len(vocab)
        width = max(len(vocab), 1)
        docs = np.repeat(np.arange(m, dtype=np.int64), np.diff(np.asarray([0] + ends, dtype=np.int64)))
        keys, tfs = np.unique(docs * width + tids, return_counts=True)
        indptr = np.zeros(m + 1, dtype=np.int64)
        np.cumsum(np.bincount(keys // width, minlength=m), out=indptr[1:])
        self._append_base(indptr, (keys % width).astype(np.int32), tfs.astype(np.int32))

    def _append_base(self, indptr: np.ndarray, tids: np.ndarray, tfs: np.ndarray) -> None:
        m = len(indptr) - 1
        if m <= 0:
            return
        start = self.n
        if start == 0 and self._base_n == 0:  # a load: the arrays as they are, no copies
            self._indptr, self._tids, self._tfs = indptr - indptr[0], tids, tfs
            self._detached = np.zeros(m, dtype=bool)
        else:
            self._indptr = np.concatenate([self._indptr[:-1], indptr + self._indptr[-1]])
            self._tids = np.concatenate([self._tids, tids])
            self._tfs = np.concatenate([self._tfs, tfs])
            self._detached = np.concatenate([self._detached, np.zeros(m, dtype=bool)])
        self._base_n += m
        self.n += m
        ends = np.concatenate([np.zeros(1, dtype=np.int64), np.cumsum(tfs, dtype=np.int64)])
        lengths = (ends[indptr[1:] - indptr[0]] - ends[indptr[:-1] - indptr[0]]).astype(np.float64)
        self._grow_lengths(start + m)
        self.lengths[start:start + m] = lengths
        self.total_len += float(lengths.sum())
        self._post = None
        self._arrays.clear()

    def swap_remove(self, row: int) -> None:
        """Remove ``row`` by moving the last row into its place (as the parallel arrays do)."""
        last = self.n - 1
        self._drop(row)
        self.total_len -= self.lengths[row]
        if row != last:
            self._put(row, self._drop(last))
            self.lengths[row] = self.lengths[last]
        self.n -= 1
        self._maybe_compact()

    def _maybe_compact(self) -> None:
        if max(len(self._rows), self._n_detached) > max(self.COMPACT_MIN, self._base_n // 8):
            self.compact()

    def compact(self) -> None:
        """Move every row into the arrays (dropping detached entries and unused terms)."""
        n, nb = self.n, min(self._base_n, self.n)
        counts = np.zeros(n, dtype=np.int64)
        keep_row = np.zeros(self._base_n, dtype=bool)
        keep_row[:nb] = ~self._detached[:nb]
        counts[:nb][keep_row[:nb]] = np.diff(self._indptr)[:nb][keep_row[:nb]]
        for r, d in self._rows.items():
            counts[r] = len(d)
        indptr = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(counts, out=indptr[1:])
        tids = np.empty(indptr[-1], dtype=np.int32)
        tfs = np.empty(indptr[-1], dtype=np.int32)
        entry_row = np.repeat(np.arange(self._base_n), np.diff(self._indptr))
        keep = keep_row[entry_row]
        kept_row = entry_row[keep]
        dest = indptr[kept_row] + (np.flatnonzero(keep) - self._indptr[kept_row])
        tids[dest], tfs[dest] = self._tids[keep], self._tfs[keep]
        for r, d in self._rows.items():
            s = indptr[r]
            tids[s:s + len(d)] = list(d.keys())
            tfs[s:s + len(d)] = list(d.values())
        # Renumber the terms still used (removed memories' words would otherwise stay forever).
        self._editable()
        used = np.flatnonzero(np.bincount(tids, minlength=len(self.terms)))
        renumber = np.full(len(self.terms), -1, dtype=np.int32)
        renumber[used] = np.arange(len(used), dtype=np.int32)
        self._terms = [self.terms[t] for t in used.tolist()]
        self._vocab = {t: i for i, t in enumerate(self._terms)}
        self._n_terms = len(self._terms)
        self._indptr, self._tids, self._tfs = indptr, renumber[tids], tfs
        self._base_n = n
        self._detached = np.zeros(n, dtype=bool)
        self._n_detached = 0
        self._rows.clear()
        self._postings.clear()
        self._post = None
        self._arrays.clear()

    def to_arrays(self) -> dict[str, np.ndarray]:
        """The index as arrays (compacting it first): see :meth:`from_arrays`."""
        if self._rows or self._n_detached or self._base_n != self.n:
            self.compact()
        text = self._text[1:-1] if self._text is not None else "\n".join(self.terms)
        return {"indptr": self._indptr, "term_ids": self._tids, "tfs": self._tfs, "vocab": np.array(text)}

    @classmethod
    def from_arrays(cls, indptr: np.ndarray, term_ids: np.ndarray, tfs: np.ndarray, vocab: str) -> "LexicalIndex":
        """An index of the rows these arrays hold (from :meth:`to_arrays`)."""
        lex = cls()
        if vocab:  # the dict and the list are built when first needed (see term_id)
            lex._vocab = lex._terms = None
            lex._text = "\n" + vocab + "\n"
            lex._n_terms = vocab.count("\n") + 1
        indptr = np.asarray(indptr, dtype=np.int64)
        if (indptr.ndim != 1 or len(indptr) < 1 or indptr[0] != 0 or indptr[-1] != len(term_ids)
                or len(term_ids) != len(tfs) or np.any(np.diff(indptr) < 0)):
            raise ValueError("row offsets that do not fit the term arrays")
        if len(term_ids) and (term_ids.min() < 0 or term_ids.max() >= lex._n_terms):
            raise ValueError("term ids outside the vocabulary")
        lex._append_base(np.asarray(indptr, dtype=np.int64), np.asarray(term_ids, dtype=np.int32),
                         np.asarray(tfs, dtype=np.int32))
        return lex

    # -- scoring ---------------------------------------------------------------------------------

    def raw_scores(self, query_tokens: Iterable[str]) -> np.ndarray:
        """Unnormalized BM25 of every row for the unique ``query_tokens``."""
        return self.match(query_tokens)[0]

    def sparse_match(self, query_tokens: Iterable[str]) -> tuple[np.ndarray, np.ndarray, float, float]:
        """:meth:`match` over only the rows holding a query term: those rows (sorted), their raw
        BM25, the query terms' summed idf and the idf of a term one row holds. Every other row
        scores 0.

        Touches only the query terms' posting lists, so its cost does not grow with the namespace
        the way a dense array of n scores does.
        """
        n = self.n
        max_idf = math.log(1.0 + (n - 0.5) / 1.5) if n else 0.0
        postings = [self._posting_arrays(t) for t in dict.fromkeys(query_tokens)]
        idfs = [self._idf(0 if a is None else len(a[0])) for a in postings]
        idf_sum = sum(idfs)  # terms no row holds count too (see :meth:`match`)
        found = [(idf, a) for idf, a in zip(idfs, postings) if a is not None]
        if not found or n == 0:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float64), idf_sum, max_idf
        avgdl = self.total_len / n if self.total_len else 1.0
        parts_rows, parts_vals = [], []
        for idf, (rows, tf) in found:
            dl = self.lengths[rows]
            parts_rows.append(rows)
            parts_vals.append(idf * tf / (tf + self.k1 * (1.0 - self.b + self.b * dl / avgdl)))
        # Both paths add the terms in query order, so a row's float is the same whichever runs.
        if sum(len(r) for r in parts_rows) * 16 < n:
            uniq = _unique(np.concatenate(parts_rows))
            total = np.zeros(len(uniq), dtype=np.float64)
            for rows_t, vals_t in zip(parts_rows, parts_vals):
                total[np.searchsorted(uniq, rows_t)] += vals_t
        else:  # long posting lists: a dense accumulator beats sorting them
            dense = np.zeros(n, dtype=np.float64)
            for rows_t, vals_t in zip(parts_rows, parts_vals):
                dense[rows_t] += vals_t
            # Every matching row scores above 0 (idf > 0, tf > 0). A boolean mask's nonzero is
            # much faster than a float array's (see BENCHMARKS.md, "Figures behind the code").
            uniq = np.flatnonzero(dense != 0)
            total = dense[uniq]
        return uniq, total, idf_sum, max_idf

    def match(self, query_tokens: Iterable[str]) -> tuple[np.ndarray, float, float]:
        """What scoring needs to normalize a query's BM25: the raw scores of every row, the sum of
        the unique query terms' idf (terms absent from the index included), and the idf of a term
        only one row holds (the most a single word can weigh here)."""
        rows, raw, idf_sum, max_idf = self.sparse_match(query_tokens)
        dense = np.zeros(self.n, dtype=np.float64)
        dense[rows] = raw
        return dense, idf_sum, max_idf

    def relevance(self, params: ScoringParams, query_tokens: Iterable[str]) -> np.ndarray:
        """Every row's lexical match as recall blends it under ``params``
        (:func:`scoring.lexical_relevance` of :meth:`match`)."""
        raw, idf_sum, max_idf = self.match(query_tokens)
        return lexical_relevance(params, raw, idf_sum, max_idf, self.k1)

    def scores(self, query_tokens: Iterable[str]) -> np.ndarray:
        """BM25 normalized to [0, 1]: 1 when a row holds every query term as an average-length
        memory holding each once would. Query terms absent from the namespace count against
        the match, so a query sharing one rare word out of five scores low, not 1. (Recall also
        applies ``lexical_min_terms``: :func:`scoring.lexical_relevance`.)"""
        raw, idf_sum, _ = self.match(query_tokens)
        if idf_sum <= 0:
            return np.zeros_like(raw)
        return np.minimum(raw * (1.0 + self.k1) / idf_sum, 1.0)


def _unique(a: np.ndarray) -> np.ndarray:
    """``np.unique`` of integer rows by sorting: faster than numpy's hashing unique for a query's
    posting-list rows (see BENCHMARKS.md, "Figures behind the code")."""
    a = np.sort(a)
    if a.size > 1:
        a = a[np.concatenate(([True], a[1:] != a[:-1]))]
    return a
