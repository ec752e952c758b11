"""Candidate pruning for exact recall over a large namespace, and the approximate mode.

Side structures that bound a row's score from above without reading its whole vector: the
per-row priors of a parameter setting (:class:`_Priors`), the projection on the vectors' top
principal directions (:class:`_Projection`), 8-bit codes (:class:`_Sq8`); and the inverted-file
index of the approximate mode (:class:`_Ivf`). Rows changed since a structure was built are
marked dirty and scored exactly.
"""

from __future__ import annotations

import contextlib
import itertools
import math
from typing import Any, Iterator

import faiss
import numpy as np

from .scoring import ScoringParams
from .formats import _CHUNK_ROWS


_SERIALS = itertools.count()  # tells side structures apart (ids of freed objects get reused)


class _Priors:
    """:func:`scoring.prior_bounds` of a namespace's rows for one parameter setting, computed at
    ``t0``: valid for recalls at ``t0`` or later, for rows below ``m`` not marked dirty since."""

    def __init__(self, params: ScoringParams, t0: float, rest: np.ndarray, dense_gain: np.ndarray,
                 lexical_gain: np.ndarray):
        self.params, self.t0, self.m = params, t0, len(rest)
        self.serial = next(_SERIALS)
        self.lexical_gain = lexical_gain
        # rest + dense_gain × (c − floor) / span = offset + slope × c for the similarity c
        # clipped to [floor, ceiling]; in float32, rounded up (c >= 0, so the bound only grows).
        p = params
        span = p.similarity_ceiling - p.similarity_floor
        self.slope = _up32_array(dense_gain / span)
        self.offset = _up32_array(rest - dense_gain * (p.similarity_floor / span))
        self.dirty: set[int] = set()

    def refresh(self, rows: np.ndarray, now: float, rest: np.ndarray, dense_gain: np.ndarray,
                lexical_gain: np.ndarray) -> None:
        """Recompute ``rows`` (changed or appended ones) as of ``now``; the rest stay valid."""
        p = self.params
        span = p.similarity_ceiling - p.similarity_floor
        m = max(self.m, int(rows.max()) + 1) if rows.size else self.m
        if m > self.m:  # appended rows: grow the arrays (rows between old m and m are all in ``rows``)
            grow = m - self.m
            self.slope = np.concatenate([self.slope, np.zeros(grow, dtype=np.float32)])
            self.offset = np.concatenate([self.offset, np.zeros(grow, dtype=np.float32)])
            self.lexical_gain = np.concatenate([self.lexical_gain, np.zeros(grow)])
            self.m = m
        self.slope[rows] = _up32_array(dense_gain / span)
        self.offset[rows] = _up32_array(rest - dense_gain * (p.similarity_floor / span))
        self.lexical_gain[rows] = lexical_gain
        self.t0 = now
        self.serial = next(_SERIALS)
        self.dirty = set()

    def changed(self, row: int) -> None:
        if row < self.m:
            self.dirty.add(row)


class _Projection:
    """Rows 0..m-1 (as of the build) on the vectors' top principal directions, in two blocks of
    coordinates (float32), with each row's distance from the span of the first block and of both.

    Sentence embeddings keep about half of their length in the top 64 of 384 directions and
    three quarters in the top 128, so these distances are short and the bounds they give tight.
    """

    DIMS = 64  # the first block: read for every row
    DIMS_B = 64  # the second block: read for the rows the first leaves in
    USEFUL_REST = 0.75  # the median distance from the first block's span above which it is not used

    def __init__(self, emb: np.ndarray, release: Any = None):
        self.m, d = emb.shape
        self.serial = next(_SERIALS)
        self.dirty: set[int] = set()
        rng = np.random.default_rng(0)
        picks = np.sort(rng.choice(self.m, min(self.m, 20_000), replace=False))
        sample = np.empty((len(picks), d), dtype=np.float32)
        step = 65536
        for s in range(0, self.m, step):  # a range at a time: the rows are spread over all the vectors
            lo, hi = np.searchsorted(picks, [s, s + step])
            sample[lo:hi] = emb[picks[lo:hi]]
            if release is not None:
                release(s, min(self.m, s + step))
        # The principal directions from the 384x384 Gram matrix, summed in float64 a block at a
        # time: an SVD of the sample would hold two more sample-sized matrices at the peak of a
        # namespace's load.
        step = 4096
        gram = np.zeros((d, d))
        with _one_blas_thread():
            for s in range(0, len(sample), step):
                block = sample[s:s + step].astype(np.float64)
                gram += block.T @ block
            eigenvalues, eigenvectors = np.linalg.eigh(gram)
        vt = eigenvectors[:, np.argsort(eigenvalues)[::-1]].T
        dims = min(self.DIMS + self.DIMS_B, d, len(sample))
        split = min(self.DIMS, dims)
        self.basis = np.ascontiguousarray(vt[:dims].T, dtype=np.float32)  # (d, dims), orthonormal columns
        self.split = split
        basis64 = self._basis64 = self.basis.astype(np.float64)
        # Vectors without low-dimensional structure (random ones) keep most of their length
        # outside, and the bound would rule out nothing: then the projection is not stored at all.
        first = basis64[:, :split]
        sample_rest = np.concatenate([
            np.linalg.norm(block - (block @ first) @ first.T, axis=1)
            for block in (sample[s:s + step].astype(np.float64) for s in range(0, len(sample), step))
        ]) if len(sample) else np.zeros(0)
        self.useful = bool(np.median(sample_rest) <= self.USEFUL_REST) if self.m else False
        rows = self.m if self.useful else 0
        self.coords_a = np.empty((rows, split), dtype=np.float32)
        self.coords_b = np.empty((rows, dims - split), dtype=np.float32)
        self.rest_a = np.empty(rows, dtype=np.float32)  # distance from the first block's span
        self.rest_b = np.empty(rows, dtype=np.float32)  # distance from both blocks' span
        err = 0.0
        chunk_rows = 4096  # bounds the float64 work arrays of a chunk (see BENCHMARKS.md, "Figures behind the code")
        for s in range(0, rows, chunk_rows):
            chunk = emb[s:s + chunk_rows].astype(np.float64)
            coords = chunk @ basis64
            outside = chunk - coords @ basis64.T
            rest_b = np.linalg.norm(outside, axis=1)
            rest_a = np.sqrt(rest_b ** 2 + (coords[:, split:] ** 2).sum(axis=1))
            self.coords_a[s:s + chunk_rows], self.coords_b[s:s + chunk_rows] = coords[:, :split], coords[:, split:]
            self.rest_a[s:s + chunk_rows], self.rest_b[s:s + chunk_rows] = rest_a, rest_b
            # the float32 copies' rounding, per row (every |q_i| <= 1)
            rounding = (np.abs(self.coords_a[s:s + chunk_rows] - coords[:, :split]).sum(axis=1)
                        + np.abs(self.coords_b[s:s + chunk_rows] - coords[:, split:]).sum(axis=1)
                        + np.abs(self.rest_a[s:s + chunk_rows] - rest_a) + np.abs(self.rest_b[s:s + chunk_rows] - rest_b))
            err = max(err, float(rounding.max(initial=0.0)))
            if release is not None:
                release(s, s + len(chunk))
        # What rounding can add: the float32 copies, the products and sums of the scan, and the
        # float32 similarity recall itself computes.
        self.slack = err + 1e-4

    def to_arrays(self, n: int) -> dict[str, np.ndarray]:
        """What :meth:`from_arrays` needs, for an index of ``n`` rows."""
        return {"m": np.array(self.m), "dirty": _dirty_rows(self.dirty), "basis": self.basis,
                "split": np.array(self.split), "useful": np.array(self.useful), "slack": np.array(self.slack),
                "coords_a": self.coords_a, "coords_b": self.coords_b, "rest_a": self.rest_a, "rest_b": self.rest_b}

    @classmethod
    def from_arrays(cls, arrays: dict[str, np.ndarray], prefix: str, n: int, dim: int) -> "_Projection":
        """A projection saved by :meth:`to_arrays` (ValueError when its arrays do not fit together)."""
        a = {k[len(prefix):]: v for k, v in arrays.items() if k.startswith(prefix)}
        pr = cls.__new__(cls)
        pr.m, pr.split, pr.useful, pr.slack = int(a["m"]), int(a["split"]), bool(a["useful"]), float(a["slack"])
        pr.basis = np.ascontiguousarray(a["basis"], dtype=np.float32)
        pr._basis64 = pr.basis.astype(np.float64)
        pr.coords_a, pr.coords_b = a["coords_a"], a["coords_b"]
        pr.rest_a, pr.rest_b = a["rest_a"], a["rest_b"]
        rows = pr.m if pr.useful else 0
        dims = pr.basis.shape[1] if pr.basis.ndim == 2 else -1
        if (pr.basis.shape != (dim, dims) or not 0 < pr.split <= dims or pr.m < 0
                or not np.isfinite(pr.slack) or pr.slack <= 0
                or pr.coords_a.shape != (rows, pr.split) or pr.coords_b.shape != (rows, dims - pr.split)
                or pr.rest_a.shape != (rows,) or pr.rest_b.shape != (rows,)
                or any(x.dtype != np.float32 for x in (pr.coords_a, pr.coords_b, pr.rest_a, pr.rest_b))):
            raise ValueError("a saved projection that does not fit its index")
        pr.dirty = _dirty_set(a["dirty"], pr.m)
        pr.serial = next(_SERIALS)
        return pr

    def query(self, q: np.ndarray) -> tuple[np.ndarray, np.ndarray, float, float]:
        """The query's coordinates in both blocks and its distances from their spans."""
        q64 = q.astype(np.float64)
        basis64 = self._basis64
        coords = q64 @ basis64
        a, b = coords[: self.split], coords[self.split:]
        rest_b = float(np.linalg.norm(q64 - coords @ basis64.T))
        rest_a = math.sqrt(rest_b ** 2 + float(b @ b))
        return a.astype(np.float32), b.astype(np.float32), rest_a, rest_b

    def changed(self, row: int) -> None:
        if row < self.m:
            self.dirty.add(row)


class _Sq8:
    """8-bit scalar-quantized copy of a namespace's vectors (rows 0..m-1 as of its build), with the
    largest quantization error of each dimension measured over those rows."""

    def __init__(self, emb: np.ndarray, release: Any = None):
        self.m, d = emb.shape
        self.dirty: set[int] = set()
        self.index = faiss.IndexScalarQuantizer(d, faiss.ScalarQuantizer.QT_8bit, faiss.METRIC_INNER_PRODUCT)
        # Trained on each dimension's min and max (every row is then in range): the same training
        # as on every row, without a contiguous copy of them all.
        lo = np.full(d, np.inf, dtype=np.float32)
        hi = np.full(d, -np.inf, dtype=np.float32)
        for s in range(0, self.m, _CHUNK_ROWS):
            chunk = emb[s:s + _CHUNK_ROWS]
            np.minimum(lo, chunk.min(axis=0), out=lo)
            np.maximum(hi, chunk.max(axis=0), out=hi)
            if release is not None:
                release(s, s + len(chunk))
        self.index.train(np.stack([lo, hi]) if self.m else np.zeros((2, d), dtype=np.float32))
        self.err = np.zeros(d, dtype=np.float64)
        for s in range(0, self.m, _CHUNK_ROWS):
            chunk = np.ascontiguousarray(emb[s:s + _CHUNK_ROWS])
            codes = self.index.sa_encode(chunk)
            self.err = np.maximum(self.err, np.abs(self.index.sa_decode(codes) - chunk).max(axis=0))
            self.index.add_sa_codes(codes)
            if release is not None:
                release(s, s + len(chunk))

    def changed(self, row: int) -> None:
        if row < self.m:
            self.dirty.add(row)

    def to_arrays(self, n: int) -> dict[str, np.ndarray]:
        """What :meth:`from_arrays` needs."""
        return {"m": np.array(self.m), "dirty": _dirty_rows(self.dirty), "err": self.err,
                "index": faiss.serialize_index(self.index)}

    @classmethod
    def from_arrays(cls, arrays: dict[str, np.ndarray], prefix: str, n: int, dim: int) -> "_Sq8":
        """Codes saved by :meth:`to_arrays` (ValueError when they do not fit the index)."""
        a = {k[len(prefix):]: v for k, v in arrays.items() if k.startswith(prefix)}
        sq = cls.__new__(cls)
        sq.m, sq.err = int(a["m"]), np.asarray(a["err"], dtype=np.float64)
        sq.index = faiss.deserialize_index(np.ascontiguousarray(a["index"], dtype=np.uint8))
        if (not isinstance(sq.index, faiss.IndexScalarQuantizer) or sq.index.d != dim or sq.index.ntotal != sq.m
                or sq.m < 0 or sq.err.shape != (dim,) or not np.all(np.isfinite(sq.err))
                or sq.index.metric_type != faiss.METRIC_INNER_PRODUCT):
            raise ValueError("saved 8-bit codes that do not fit their index")
        sq.dirty = _dirty_set(a["dirty"], sq.m)
        return sq


def _dirty_rows(dirty: set[int]) -> np.ndarray:
    return np.sort(np.fromiter(dirty, dtype=np.int64, count=len(dirty)))


def _dirty_set(rows: np.ndarray, m: int) -> set[int]:
    rows = np.asarray(rows)
    if rows.ndim != 1 or rows.dtype != np.int64 or (rows.size and (rows.min() < 0 or rows.max() >= m)):
        raise ValueError("dirty rows outside the side structure")
    return set(rows.tolist())


class _Ivf:
    """An inverted-file index (k-means cells, 8-bit codes) over rows 0..m-1: the approximate mode."""

    def __init__(self, emb: np.ndarray):
        self.m, d = emb.shape
        self.dirty: set[int] = set()
        nlist = int(min(1024, max(16, math.sqrt(self.m) / 2)))
        quantizer = faiss.IndexFlatIP(d)
        self.index = faiss.IndexIVFScalarQuantizer(quantizer, d, nlist, faiss.ScalarQuantizer.QT_8bit,
                                                   faiss.METRIC_INNER_PRODUCT)
        rng = np.random.default_rng(0)
        sample = emb[np.sort(rng.choice(self.m, size=min(self.m, 40 * nlist), replace=False))]
        self.index.train(np.ascontiguousarray(sample))
        for s in range(0, self.m, 65536):
            self.index.add(np.ascontiguousarray(emb[s:s + 65536]))
        self.index.nprobe = max(16, nlist // 16)
        self.quantizer = quantizer  # the IVF index does not own it: keep it alive

    def changed(self, row: int) -> None:
        if row < self.m:
            self.dirty.add(row)


def _take_rows(matrix: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """``matrix[rows]`` for a 2-D array: ``take`` copies whole rows where fancy indexing copies
    element by element, several times faster for scattered rows (see BENCHMARKS.md, "Figures behind the code")."""
    return np.take(matrix, rows, axis=0)


def _up32_array(x: np.ndarray) -> np.ndarray:
    """Each value as the smallest float32 at least it."""
    y = x.astype(np.float32)
    return np.where(y.astype(np.float64) >= x, y, np.nextafter(y, np.float32(np.inf)))


def _up32(x: float) -> np.float32:
    """The smallest float32 at least ``x``."""
    y = np.float32(x)
    return y if float(y) >= x else np.nextafter(y, np.float32(np.inf))


@contextlib.contextmanager
def _one_thread() -> Iterator[None]:
    """Search one query on one OpenMP thread: splitting a single query's scan across threads gains
    little on two cores and loses much when other processes keep them busy (OpenMP threads spin
    while they wait for each other). The setting is per calling thread, so this is thread-safe."""
    before = faiss.omp_get_max_threads()
    faiss.omp_set_num_threads(1)
    try:
        yield
    finally:
        faiss.omp_set_num_threads(before)


@contextlib.contextmanager
def _one_blas_thread() -> Iterator[None]:
    """numpy's BLAS and LAPACK on the calling thread for the block: the eigen-decomposition of the
    projection's 384x384 matrix took 1-3.5 s on OpenBLAS's threads when other processes kept the
    two cores busy (they spin while they wait for each other), 0.05 s on one. threadpoolctl comes
    with scikit-learn (a dependency of sentence-transformers); without it nothing is limited."""
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:  # pragma: no cover - installed with sentence-transformers
        yield
        return
    with threadpool_limits(1, user_api="blas"):
        yield
