"""Memory vectors cached on disk for the benchmarks: each distinct text embedded once per model.

A benchmark that builds banks from the same texts again (LongMemEval and LoCoMo, run again for every
setting tried, default and ``no_lifts``, ``bench/lifts.py``) reads their vectors from here and gives
them to ``add_many`` as each row's ``embedding``, so each text costs one embedding, once. The cache lives
under the machine's cache folder (:func:`cache_dir.cache_root`), never in the repository.

Vectors are kept in shards (one ``.npz`` per batch embedded: model name, dimension, the texts'
SHA-256 digests and the unit vectors), written whole through a temporary file. A shard that does not
read back, names another model or dimension, or holds vectors that are not finite unit vectors is
deleted and its texts embedded again: a damaged or stale file is rebuilt, not trusted.
"""

from __future__ import annotations

import hashlib
import logging
import os
import re
import tempfile
from pathlib import Path
from typing import Callable, Iterable

import numpy as np

from memory_core.storage.cache_dir import cache_root

log = logging.getLogger(__name__)
SHARD = 1024  # texts per shard: a crash loses at most one shard's work


def default_dir() -> Path:
    """Where the benchmarks' vectors are kept unless told otherwise."""
    return cache_root() / "bench-vectors"


def digest(text: str) -> bytes:
    """The key of a text's vector (with the model name, which names the folder)."""
    return hashlib.sha256(text.encode("utf-8")).digest()


def _model_dir(root: Path, model: str) -> Path:
    return Path(root) / re.sub(r"[^A-Za-z0-9_.-]+", "_", model)


def _read_shard(path: Path, model: str, dim: int) -> dict[bytes, np.ndarray] | None:
    """A shard's vectors by digest, or None if it is damaged or of another model or dimension."""
    try:
        with np.load(path, allow_pickle=False) as z:
            name, width = str(z["model"]), int(z["dim"])
            keys, vecs = z["keys"], z["vectors"]
    except Exception:  # noqa: BLE001 - any unreadable shard is rebuilt
        return None
    if name != model or width != dim or keys.ndim != 2 or keys.shape[1] != 32 or vecs.shape != (len(keys), dim):
        return None
    norms = np.linalg.norm(vecs, axis=1)
    if not np.all(np.isfinite(vecs)) or not np.allclose(norms, 1.0, atol=1e-3):
        return None
    return {bytes(k): v for k, v in zip(keys, vecs.astype(np.float32))}


def load_cached(root: Path, model: str, dim: int) -> dict[bytes, np.ndarray]:
    """Every trusted vector of ``model`` under ``root``; bad shards are removed."""
    found: dict[bytes, np.ndarray] = {}
    folder = _model_dir(root, model)
    for path in sorted(folder.glob("*.npz")) if folder.is_dir() else []:
        got = _read_shard(path, model, dim)
        if got is None:
            log.warning("vector cache shard %s is damaged or stale; its texts will be embedded again", path)
            path.unlink(missing_ok=True)
            continue
        found.update(got)
    return found


def _write_shard(folder: Path, model: str, keys: list[bytes], vecs: np.ndarray) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    name = hashlib.sha256(b"".join(keys)).hexdigest()[:24] + ".npz"
    fd, tmp = tempfile.mkstemp(dir=folder, suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            np.savez(fh, model=np.array(model), dim=np.array(vecs.shape[1]),
                     keys=np.frombuffer(b"".join(keys), dtype=np.uint8).reshape(len(keys), 32),
                     vectors=vecs.astype(np.float32))
        os.replace(tmp, folder / name)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def vectors(texts: Iterable[str], encode: Callable[[list[str]], np.ndarray], model: str, dim: int,
            root: Path | None = None, progress: Callable[[int, int], None] | None = None) -> dict[str, np.ndarray]:
    """Each distinct text's memory vector, by text: cached ones read, the rest embedded by ``encode``
    (texts -> unit vectors, as the bank would embed them) in shards of the given order, and cached.
    ``progress(done, total)`` hears of each shard embedded."""
    root = default_dir() if root is None else Path(root)
    distinct = list(dict.fromkeys(texts))
    keys = {t: digest(t) for t in distinct}
    cached = load_cached(root, model, dim)
    todo = [t for t in distinct if keys[t] not in cached]
    for start in range(0, len(todo), SHARD):
        # In the order given, so a long pass stopped early leaves whole questions cached; each
        # shard sorted by length, so batches pad little.
        part = sorted(todo[start:start + SHARD], key=len)
        vecs = np.asarray(encode(part), dtype=np.float32)
        _write_shard(_model_dir(root, model), model, [keys[t] for t in part], vecs)
        cached.update(zip((keys[t] for t in part), vecs))
        if progress is not None:
            progress(start + len(part), len(todo))
    return {t: cached[keys[t]] for t in distinct}
