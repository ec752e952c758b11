"""The on-disk formats of a saved namespace index: the format version, file names, and writing
and reading its files (Arrow, ``.npz``, ``.npy`` mapped read-only), each written whole and renamed
into place.

What a saved index keeps, per namespace (``<bank>.index/<namespace key>.*``, or the cache folder of
a database bank): the vectors (``.vec.npy``), the BM25 arrays with each row's id, content hash,
change sequence and scoring fields (``.lex.npz``), the fields a hit shows (``.info.arrow``), the
side structures pruned recall built (``.side.npz``: the projection's basis, coordinates and
distances, the 8-bit codes and their per-dimension error, and the rows of each changed since it
was built), and last the header (``.json``: format, namespace, model, dimension, count, change
sequence, and a random token per save). Loading checks the header against the bank's model and
dimension and each file's shape against the header (any mismatch or unreadable file: rebuilt from
the store); the side file is used only when it carries the header's token (written by that same
save) and reads back whole (the ``.npz`` checks each array's CRC-32), else recall builds it again.
A large namespace (from ``MAP_MIN_ROWS``) maps the saved vectors file read-only instead of copying
it, until its first change copies the vectors into a scratch file of its own; saves never write
into a saved file (they replace it), so a mapped file never changes under the index.
"""

from __future__ import annotations

import contextlib
import hashlib
import mmap
import os
import re
from pathlib import Path
from typing import Any, Iterator

import numpy as np


FORMAT_VERSION = 6  # 2: lexical_tokens (a longer stop list) and memories' context; 3: vectors as .npy; 4: tokens by


# language; 5: each row's change sequence, scoring fields and descriptive fields (see index_cache); 6: durability
HASH_DTYPE = "S64"  # a SHA-256 in hex


def namespace_key(namespace: str) -> str:
    """A file-name-safe, collision-resistant stem for a namespace of any text."""
    safe = re.sub(r"[^A-Za-z0-9_-]", "_", namespace)[:40]
    return f"{safe}-{hashlib.sha1(namespace.encode('utf-8')).hexdigest()[:12]}"


def _save_arrow(path: Path, table: Any) -> None:
    import pyarrow as pa

    with pa.OSFile(str(path), "wb") as sink, pa.ipc.new_file(sink, table.schema) as writer:
        writer.write_table(table)


def _load_arrow(path: Path) -> Any:
    """An Arrow IPC file read whole (the file may be replaced or removed while the index lives)."""
    import pyarrow as pa

    with pa.OSFile(str(path), "rb") as source:
        return pa.ipc.open_file(source).read_all()


def _savez(path: Path, **arrays: np.ndarray) -> None:
    with open(path, "wb") as fh:  # a file object keeps numpy from appending ".npz" to the name
        np.savez(fh, **arrays)


_CHUNK_ROWS = 16_384  # rows copied at a time between vector arrays: a bounded buffer


def _mmap_of(array: np.ndarray) -> mmap.mmap | None:
    mm = getattr(array, "_mmap", None)
    base = getattr(array, "base", None)
    while mm is None and base is not None:  # a view of a memmap
        mm, base = getattr(base, "_mmap", None), getattr(base, "base", None)
    return mm


@contextlib.contextmanager
def _sequential(array: np.ndarray) -> Iterator[None]:
    """Read a memory-mapped array's rows in order inside the block: the mapping is read ahead as
    an ordinary file would be, then back to MADV_RANDOM (recall reads scattered rows). Without it,
    rows the page cache let go are read a page per fault, several times slower (see BENCHMARKS.md, "Figures behind
    the code")."""
    mm = _mmap_of(array)
    if mm is None:
        yield
        return
    mm.madvise(mmap.MADV_SEQUENTIAL)
    try:
        yield
    finally:
        mm.madvise(mmap.MADV_RANDOM)


def _release(array: np.ndarray, start: int, stop: int) -> None:
    """Let the process stop holding rows start..stop-1 of a memory-mapped array (no-op for an
    ordinary one). Safe only for shared mappings: the page cache and the file keep the data, and
    the next read maps it back."""
    _advise(array, start, stop, mmap.MADV_DONTNEED)


def _advise(array: np.ndarray, start: int, stop: int, advice: int) -> None:
    """``madvise`` of the whole pages inside rows start..stop-1 of a memory-mapped 2-d array (no-op
    for an ordinary one)."""
    stop = min(stop, len(array))
    mm = _mmap_of(array)
    if mm is None or stop <= start or array.ndim != 2:
        return
    row = array.strides[0]
    offset = array.ctypes.data - _mmap_address(mm)
    first = offset + start * row
    last = offset + stop * row
    first = -(-first // mmap.PAGESIZE) * mmap.PAGESIZE  # whole pages inside the rows only
    last = last // mmap.PAGESIZE * mmap.PAGESIZE
    if last > first:
        mm.madvise(advice, first, last - first)


def _map_saved(path: Path, rows: int, dim: int) -> np.ndarray | None:
    """A saved vectors file (``_save_npy``) mapped read-only, with the open file for pread
    (``_file``, ``_start``: where row 0 begins); None when it is not (n, dim) float32 rows, whole."""
    try:
        fh = open(path, "rb")
    except OSError:
        return None
    try:
        major, _ = np.lib.format.read_magic(fh)
        if major != 1:
            raise ValueError("not a version 1 .npy header")
        shape, fortran, dtype = np.lib.format.read_array_header_1_0(fh)
        start = fh.tell()
        if shape != (rows, dim) or fortran or dtype != np.float32 or os.fstat(fh.fileno()).st_size != start + rows * dim * 4:
            raise ValueError("not the vectors the header says")
        mapped = np.memmap(fh, dtype=np.float32, mode="r", offset=start, shape=(rows, dim))
        mapped._mmap.madvise(mmap.MADV_RANDOM)  # recall reads scattered rows (see _vector_rows)
    except (OSError, ValueError):
        fh.close()
        return None
    mapped._file, mapped._start = fh, start
    return mapped


def _copy_rows(dest: np.ndarray, src: np.ndarray, rows: int) -> None:
    """Copy the first ``rows`` rows, a chunk at a time, releasing both sides' pages as it goes
    (either may be memory-mapped: a whole copy would make both resident)."""
    with _sequential(src):
        for s in range(0, rows, _CHUNK_ROWS):
            e = min(rows, s + _CHUNK_ROWS)
            dest[s:e] = src[s:e]
            _release(dest, s, e)
            _release(src, s, e)


def _mmap_address(mm: mmap.mmap) -> int:
    return np.frombuffer(mm, dtype=np.uint8, count=1).ctypes.data  # works for read-only maps too


def _save_npy(path: Path, array: np.ndarray, release: Any = None) -> None:
    """``np.save`` of a 2-d float32 array, written a chunk at a time (and released after each,
    so saving a memory-mapped array does not make it resident)."""
    with open(path, "wb") as fh:  # a file object keeps numpy from appending ".npy" to the name
        np.lib.format.write_array_header_1_0(fh, {"descr": np.lib.format.dtype_to_descr(array.dtype),
                                                  "fortran_order": False, "shape": array.shape})
        with _sequential(array):
            for s in range(0, len(array), _CHUNK_ROWS):
                e = min(len(array), s + _CHUNK_ROWS)
                fh.write(np.ascontiguousarray(array[s:e]).tobytes())
                if release is not None:
                    release(s, e)


def _atomic(path: Path, write) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    write(tmp)
    os.replace(tmp, path)
