"""Inner products of unit vectors, on the calling thread.

numpy hands a matrix product to OpenBLAS, whose worker threads spin for about a tenth of a
second after each call, waiting for the next. Called every few milliseconds, as a server's adds
and recalls do, that keeps a second core busy doing nothing: on two cores it took as much CPU as
everything else a server does (BENCHMARKS.md, "The server"). FAISS's SIMD kernel does the same
float32 sums on the thread that asks. Bulk work (many rows against many) still goes to BLAS,
whose threads pay off there.
"""

from __future__ import annotations

import faiss
import numpy as np

FEW = 64  # rows of queries below which products run row by row on the calling thread


def dot(matrix: np.ndarray, query: np.ndarray) -> np.ndarray:
    """``matrix @ query`` in float32: one product per row of ``matrix``."""
    n = len(matrix)
    out = np.empty(n, dtype=np.float32)
    if n:
        m = np.ascontiguousarray(matrix, dtype=np.float32)
        q = np.ascontiguousarray(query, dtype=np.float32)
        faiss.fvec_inner_products_ny(faiss.swig_ptr(out), faiss.swig_ptr(q), faiss.swig_ptr(m), q.shape[0], n)
    return out


def products(queries: np.ndarray, matrix: np.ndarray) -> np.ndarray:
    """``queries @ matrix.T`` in float32: a row of products per query. A few queries (a group of
    new memories) run on the calling thread; more are bulk work, for BLAS."""
    if len(queries) >= FEW:
        return np.asarray(queries, dtype=np.float32) @ np.asarray(matrix, dtype=np.float32).T
    m = np.ascontiguousarray(matrix, dtype=np.float32)
    out = np.empty((len(queries), len(m)), dtype=np.float32)
    for i, q in enumerate(queries):
        out[i] = dot(m, q)
    return out
