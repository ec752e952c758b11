"""Dense (FAISS) and lexical (BM25) indexes of one namespace's live memories, derived from the store.

A :class:`NamespaceIndex` keeps, for every active memory of a namespace, its vector, its
tokens and the fields scoring needs, in parallel arrays, so recall scores *every* live memory
with a few vectorized operations: the result is exact by construction.

Indexes are caches. They are saved next to the bank (``<bank>.index/``: a FAISS file, a BM25
file and a small JSON header per namespace) and reconciled with the store whenever they are
loaded: rows changed since the saved change sequence are fetched again, rows no longer live
are dropped, and anything that does not add up (a missing or truncated file, another model,
another dimension) triggers a rebuild from the store. Nothing is lost when they are deleted.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
import unicodedata
from collections import Counter
from pathlib import Path
from typing import Iterable

import faiss
import numpy as np

from bm25s.stopwords import STOPWORDS_CHINESE, STOPWORDS_EN, STOPWORDS_SWEDISH

FORMAT_VERSION = 2  # 2: lexical_tokens (a longer stop list) and memories' context

# -- tokenizing ------------------------------------------------------------------------------------

_WORD = re.compile(r"[^\W_]+")
_CJK = re.compile(r"([\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af]+)")
_STOP = frozenset(STOPWORDS_EN) | frozenset(STOPWORDS_SWEDISH)
_STOP_CJK = frozenset(w for w in STOPWORDS_CHINESE if len(w) == 1)

try:  # Snowball stemming makes "cooking" match "cook"; without it matching is exact words only.
    import Stemmer

    _stem = Stemmer.Stemmer("english").stemWord
except ImportError:  # pragma: no cover - PyStemmer is a declared dependency
    def _stem(word: str) -> str:
        return word


def tokenize(text: str) -> list[str]:
    """Lexical tokens of ``text``: casefolded, stemmed words without stop words.

    Runs of Chinese/Japanese/Korean characters, which have no spaces between words, become
    their characters and character bigrams, so "喜欢咖啡" matches "咖啡".
    """
    text = unicodedata.normalize("NFKC", text).casefold()
    tokens: list[str] = []
    for word in _WORD.findall(text):
        for i, part in enumerate(_CJK.split(word)):
            if not part:
                continue
            if i % 2:  # odd parts of a split on a capturing group are the CJK runs
                tokens.extend(c for c in part if c not in _STOP_CJK)
                tokens.extend(part[j:j + 2] for j in range(len(part) - 1))
            elif part not in _STOP and (len(part) > 1 or part.isdigit()):
                tokens.append(_stem(part))
    return tokens


# Words that say how a question is asked or who speaks to whom, not what it is about. Matching
# them ranks long chatty memories first ("what did you do when..." against every turn holding
# "you", "did" and "when"), so the lexical index leaves them out; conflicts and merges keep
# using :func:`tokenize`, whose short stop list keeps negations and pronouns they compare.
_QUESTION_STOP = frozenset("""
i me my myself mine we us our ours ourselves you your yours yourself yourselves he him his himself she
her hers herself it its itself they them their theirs themselves what which who whom whose when where
why how this that these those am is are was were be been being have has had having do does did doing
done a an the and but if or because as until while of at by for with about against between into
through during before after above below to from up down in out on off over under again further then
once here there all any both each few more most other some such no nor not only own same so than too
very can could will would shall should may might must just don doesn didn isn wasn aren weren
wouldn also ever still yet like get got go going gone went really oh yeah yes hey hi thanks thank well
lot lots
""".split())


_QUESTION_STOP_STEMS = frozenset(_stem(w) for w in _QUESTION_STOP) | _QUESTION_STOP


def lexical_tokens(text: str | None) -> list[str]:
    """Tokens for lexical match (recall's BM25), of memories and queries alike: :func:`tokenize`
    without the question, pronoun and filler words of :data:`_QUESTION_STOP`."""
    if not text:
        return []
    return [t for t in tokenize(text) if t not in _QUESTION_STOP_STEMS]


def memory_tokens(text: str | None, context: str | None = None) -> list[str]:
    """What the lexical index holds for a memory: its text's tokens, then its context's."""
    return lexical_tokens(text) + lexical_tokens(context)


# -- BM25 ------------------------------------------------------------------------------------------


class LexicalIndex:
    """Exact BM25 (Lucene's variant, k1 = 1.5, b = 0.75: the scores bm25s computes) over rows 0..n-1.

    Incremental: adding or removing a document costs its own terms only, and statistics (document
    frequencies, average length) are always current, so scores equal a fresh rebuild's.
    """

    k1 = 1.5
    b = 0.75

    def __init__(self) -> None:
        self.postings: dict[str, dict[int, int]] = {}
        self.doc_terms: list[Counter] = []
        self.lengths = np.zeros(16, dtype=np.float64)  # document lengths by row
        self.total_len = 0

    def __len__(self) -> int:
        return len(self.doc_terms)

    def append(self, tokens: Iterable[str]) -> None:
        row = len(self.doc_terms)
        counts = Counter(tokens)
        self.doc_terms.append(counts)
        if row >= len(self.lengths):
            self.lengths = np.concatenate([self.lengths, np.zeros(len(self.lengths))])
        self.lengths[row] = sum(counts.values())
        self.total_len += self.lengths[row]
        for term, tf in counts.items():
            self.postings.setdefault(term, {})[row] = tf

    def swap_remove(self, row: int) -> None:
        """Remove ``row`` by moving the last row into its place (as the parallel arrays do)."""
        last = len(self.doc_terms) - 1
        gone = self.doc_terms[row]
        self.total_len -= sum(gone.values())
        for term in gone:
            plist = self.postings[term]
            del plist[row]
            if not plist:
                del self.postings[term]
        if row != last:
            moved = self.doc_terms[last]
            for term in moved:
                plist = self.postings[term]
                plist[row] = plist.pop(last)
            self.doc_terms[row] = moved
            self.lengths[row] = self.lengths[last]
        self.doc_terms.pop()

    def idf(self, term: str) -> float:
        n = len(self.doc_terms)
        df = len(self.postings.get(term, ()))
        return math.log(1.0 + (n - df + 0.5) / (df + 0.5))

    def raw_scores(self, query_tokens: Iterable[str]) -> np.ndarray:
        """Unnormalized BM25 of every row for the unique ``query_tokens``."""
        n = len(self.doc_terms)
        out = np.zeros(n, dtype=np.float64)
        if n == 0:
            return out
        avgdl = self.total_len / n if self.total_len else 1.0
        for term in dict.fromkeys(query_tokens):
            plist = self.postings.get(term)
            if not plist:
                continue
            rows = np.fromiter(plist.keys(), dtype=np.int64, count=len(plist))
            tf = np.fromiter(plist.values(), dtype=np.float64, count=len(plist))
            dl = self.lengths[rows]
            denom = tf + self.k1 * (1.0 - self.b + self.b * dl / avgdl)
            out[rows] += self.idf(term) * tf / denom
        return out

    def match(self, query_tokens: Iterable[str]) -> tuple[np.ndarray, float, float]:
        """What scoring needs to normalize a query's BM25: the raw scores of every row, the sum of
        the unique query terms' idf (terms absent from the index included), and the idf of a term
        only one row holds (the most a single word can weigh here)."""
        terms = list(dict.fromkeys(query_tokens))
        n = len(self.doc_terms)
        max_idf = math.log(1.0 + (n - 0.5) / 1.5) if n else 0.0
        return self.raw_scores(terms), sum(self.idf(t) for t in terms), max_idf

    def scores(self, query_tokens: Iterable[str]) -> np.ndarray:
        """BM25 normalized to [0, 1]: 1 when a row holds every query term as an average-length
        memory holding each once would. Query terms absent from the namespace count against
        the match, so a query sharing one rare word out of five scores low, not 1."""
        terms = list(dict.fromkeys(query_tokens))
        if not terms:
            return np.zeros(len(self.doc_terms), dtype=np.float64)
        # An average-length row holding a term once scores idf / (1 + k1) for it.
        norm = sum(self.idf(t) for t in terms) / (1.0 + self.k1)
        return np.minimum(self.raw_scores(terms) / norm, 1.0)


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
        self.hashes: list[str] = []
        self.row_of: dict[int, int] = {}
        self.lexical = LexicalIndex()
        self.seq = 0  # change sequence this index reflects
        self.changes_since_save = 0

    _ARRAYS = ("ids", "emb", "created", "last_access", "importance", "access_count")

    def __len__(self) -> int:
        return self.n

    def _grow(self, need: int) -> None:
        cap = len(self.ids)
        if need <= cap:
            return
        new_cap = max(need, cap * 2)
        for name in self._ARRAYS:
            old = getattr(self, name)
            new = np.zeros((new_cap,) + old.shape[1:], dtype=old.dtype)
            new[: self.n] = old[: self.n]
            setattr(self, name, new)

    def set_fields(self, mid: int, created: float, last_access: float, importance: float, access_count: float) -> None:
        """Update the scoring fields of a memory already in the index."""
        r = self.row_of[mid]
        self.created[r], self.last_access[r] = created, last_access
        self.importance[r], self.access_count[r] = importance, access_count

    def upsert(self, mid: int, vector: np.ndarray, tokens: list[str], content_hash: str,
               created: float, last_access: float, importance: float, access_count: float) -> None:
        """Add a memory, or replace it whole when its id is already indexed."""
        if mid in self.row_of:
            self.remove(mid)
        r = self.n
        self._grow(r + 1)
        self.ids[r] = mid
        self.emb[r] = vector
        self.hashes.append(content_hash)
        self.lexical.append(tokens)
        self.row_of[mid] = r
        self.n += 1
        self.set_fields(mid, created, last_access, importance, access_count)
        self.changes_since_save += 1

    def add_many(self, ids: np.ndarray, vectors: np.ndarray, token_lists: list[list[str]], hashes: list[str],
                 created: np.ndarray, last_access: np.ndarray, importance: np.ndarray,
                 access_count: np.ndarray) -> None:
        """Append memories that are not yet indexed, in bulk."""
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
        self.created[sl], self.last_access[sl] = created, last_access
        self.importance[sl], self.access_count[sl] = importance, access_count
        self.hashes.extend(hashes)
        for i, tokens in enumerate(token_lists):
            self.lexical.append(tokens)
            self.row_of[int(ids[i])] = start + i
        self.n += m
        self.changes_since_save += m

    def remove(self, mid: int) -> None:
        """Drop a memory (no-op when absent): the last row moves into its place."""
        r = self.row_of.pop(mid, None)
        if r is None:
            return
        last = self.n - 1
        if r != last:
            for name in self._ARRAYS:
                arr = getattr(self, name)
                arr[r] = arr[last]
            self.hashes[r] = self.hashes[last]
            self.row_of[int(self.ids[r])] = r
        self.hashes.pop()
        self.lexical.swap_remove(r)
        self.n -= 1
        self.changes_since_save += 1

    def similarities(self, query: np.ndarray) -> np.ndarray:
        """Cosine similarity of every row to a unit query vector."""
        return self.emb[: self.n] @ query.astype(np.float32)

    # -- persistence -----------------------------------------------------------------------------

    def save(self, folder: Path, model: str) -> None:
        """Write the FAISS index, the BM25 tokens and a header; atomic per file, header last."""
        folder.mkdir(parents=True, exist_ok=True)
        stem = folder / namespace_key(self.namespace)
        n = self.n
        dense = faiss.IndexIDMap2(faiss.IndexFlatIP(self.dim))
        if n:
            dense.add_with_ids(np.ascontiguousarray(self.emb[:n]), self.ids[:n])
        vocab: dict[str, int] = {}
        indptr = np.zeros(n + 1, dtype=np.int64)
        term_ids: list[int] = []
        tfs: list[int] = []
        for r, counts in enumerate(self.lexical.doc_terms):
            for term, tf in counts.items():
                term_ids.append(vocab.setdefault(term, len(vocab)))
                tfs.append(tf)
            indptr[r + 1] = len(term_ids)
        _atomic(stem.with_suffix(".faiss"), lambda p: faiss.write_index(dense, str(p)))
        _atomic(stem.with_suffix(".lex.npz"), lambda p: _savez(
            p, ids=self.ids[:n], indptr=indptr, term_ids=np.array(term_ids, dtype=np.int64),
            tfs=np.array(tfs, dtype=np.int64), vocab=np.array("\n".join(vocab)),
            hashes=np.array("\n".join(self.hashes)),
        ))
        header = {"format": FORMAT_VERSION, "namespace": self.namespace, "model": model,
                  "dim": self.dim, "count": n, "seq": self.seq}
        _atomic(stem.with_suffix(".json"), lambda p: p.write_text(json.dumps(header)))
        self.changes_since_save = 0

    @classmethod
    def load(cls, folder: Path, namespace: str, model: str, dim: int) -> "NamespaceIndex | None":
        """The saved index of ``namespace``, or None when missing, damaged or built otherwise.

        The scoring fields are left at zero: the caller reconciles them with the store.
        """
        stem = folder / namespace_key(namespace)
        try:
            header = json.loads(stem.with_suffix(".json").read_text())
            if (header.get("format"), header.get("namespace"), header.get("model"), header.get("dim")) != (
                FORMAT_VERSION, namespace, model, dim):
                return None
            dense = faiss.read_index(str(stem.with_suffix(".faiss")))
            with np.load(stem.with_suffix(".lex.npz"), allow_pickle=False) as z:
                lex = {k: z[k] for k in z.files}
        except Exception:  # any unreadable, truncated or foreign file means: rebuild
            return None
        n = int(dense.ntotal)
        ids = faiss.vector_to_array(dense.id_map).astype(np.int64) if n else np.zeros(0, dtype=np.int64)
        if n != header["count"] or dense.d != dim or not np.array_equal(ids, lex["ids"]):
            return None
        idx = cls(namespace, dim)
        if n:
            flat = faiss.downcast_index(dense.index)
            vectors = faiss.rev_swig_ptr(flat.get_xb(), n * dim).reshape(n, dim)
            vocab = str(lex["vocab"]).split("\n")
            indptr, term_ids, tfs = lex["indptr"], lex["term_ids"], lex["tfs"]
            token_lists = [
                [t for t, c in zip((vocab[j] for j in term_ids[indptr[r]:indptr[r + 1]]), tfs[indptr[r]:indptr[r + 1]])
                 for _ in range(int(c))]
                for r in range(n)
            ]
            hashes = str(lex["hashes"]).split("\n")
            zeros = np.zeros(n)
            idx.add_many(ids, vectors.copy(), token_lists, hashes, zeros, zeros, zeros, zeros)
        idx.seq = int(header["seq"])
        idx.changes_since_save = 0
        return idx


def namespace_key(namespace: str) -> str:
    """A file-name-safe, collision-resistant stem for a namespace of any text."""
    safe = re.sub(r"[^A-Za-z0-9_-]", "_", namespace)[:40]
    return f"{safe}-{hashlib.sha1(namespace.encode('utf-8')).hexdigest()[:12]}"


def _savez(path: Path, **arrays: np.ndarray) -> None:
    with open(path, "wb") as fh:  # a file object keeps numpy from appending ".npz" to the name
        np.savez(fh, **arrays)


def _atomic(path: Path, write) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    write(tmp)
    os.replace(tmp, path)
