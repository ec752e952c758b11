"""Sentence-transformers models run by ONNX Runtime: the vectors torch gives, for a third of the CPU.

A model of the usual shape (a BERT-like transformer, mean pooling, optional normalization; the
bundled MiniLM is one) is exported to ONNX once per machine and model, into the cache folder
(:func:`cache_dir.cache_root`), checked against torch on probe texts in several languages, and
run by ``onnxruntime`` from then on. Any other shape, a missing package, a failed export or a
check that differs falls back to torch: the vectors never change, only the speed does.
``MEMCTL_EMBED_RUNTIME=torch`` turns it off.
"""

from __future__ import annotations

import hashlib
import logging
import os
import tempfile
import threading
import warnings
from pathlib import Path
from typing import Any, Callable

import numpy as np

from ..storage.cache_dir import cache_root

log = logging.getLogger(__name__)

TOLERANCE = 1e-5  # largest difference from torch's vector allowed in any coordinate (measured: 2e-7)
PROBES = (
    "I moved to Lisbon last spring and work as a nurse.",
    "我对花生过敏，不要在菜里放花生。",
    "Jag föredrar te framför kaffe på morgonen.",
    "ok",
    "The quarterly planning meeting moved to Thursday at 10, room B, bring the budget sheets. " * 12,
)


def supported(model: Any) -> bool:
    """Whether ``model`` (a SentenceTransformer) is a transformer with mean pooling, and nothing else."""
    modules = list(model)
    if not 2 <= len(modules) <= 3:
        return False
    names = [type(m).__name__ for m in modules]
    pooling = getattr(modules[1], "pooling_mode", None)
    if pooling is None and hasattr(modules[1], "get_pooling_mode_str"):
        pooling = modules[1].get_pooling_mode_str()
    return (names[0] == "Transformer" and names[1] == "Pooling" and pooling == "mean"
            and (len(names) == 2 or names[2] == "Normalize") and hasattr(modules[0], "auto_model"))


def _fingerprint(location: str) -> str:
    """A key that changes when the model's files or the exporting libraries change (their versions
    from the installed metadata: importing torch only to read its version costs seconds)."""
    from importlib.metadata import version

    h = hashlib.sha256(f"{os.path.abspath(location)}|{version('torch')}|{version('onnxruntime')}".encode())
    folder = Path(location)
    if folder.is_dir():
        for f in sorted(folder.rglob("*")):
            if f.is_file():
                st = f.stat()
                h.update(f"{f.relative_to(folder)}|{st.st_size}|{st.st_mtime_ns}".encode())
    return h.hexdigest()[:16]


def _export(model: Any, path: Path, input_names: list[str]) -> None:
    """Write the transformer with mean pooling and normalization as one ONNX graph, atomically."""
    import torch

    transformer = model[0].auto_model.eval()

    class Pooled(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.transformer = transformer

        def forward(self, *inputs: torch.Tensor) -> torch.Tensor:
            named = dict(zip(input_names, inputs))
            tokens = self.transformer(**named)[0]
            mask = named["attention_mask"].unsqueeze(-1).to(tokens.dtype)
            pooled = (tokens * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
            return torch.nn.functional.normalize(pooled, dim=1)

    sample = model.tokenizer(["an example sentence"], return_tensors="pt")
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".onnx.tmp")
    os.close(fd)
    try:
        with torch.no_grad(), warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the tracer's notes on control flow the shapes make static
            torch.onnx.export(Pooled().eval(), tuple(sample[n] for n in input_names), tmp,
                              input_names=input_names, output_names=["embedding"],
                              dynamic_axes={**{n: {0: "batch", 1: "tokens"} for n in input_names},
                                            "embedding": {0: "batch"}},
                              opset_version=17, dynamo=False)
        os.replace(tmp, path)  # two processes exporting at once both end with a whole file
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


# Set to "1" by a process that embeds a text or two and exits (memctl's add or recall run in
# process): its sessions trade speed for memory.
ONE_SHOT_ENV = "MEMORY_CORE_ONE_SHOT"


class Sessions:
    """ONNX Runtime sessions of one model file, one per thread count (two for a lone add or query,
    one for a small group, all for bulk work), made on first use and kept."""

    def __init__(self, path: Path):
        self.path = path
        self._sessions: dict[int, Any] = {}
        self._lock = threading.Lock()

    def get(self, threads: int) -> Any:
        with self._lock:
            if threads not in self._sessions:
                import onnxruntime as ort

                options = ort.SessionOptions()
                options.intra_op_num_threads = threads
                options.inter_op_num_threads = 1
                # Its threads spin while a run lasts (fast hand-offs between layers) and stop when
                # it returns: left spinning, they took a core from DuckDB's next statements.
                options.add_session_config_entry("session.force_spinning_stop", "1")
                if os.environ.get(ONE_SHOT_ENV) == "1":
                    # No pre-packed copy of the int8 weights: a third of the session's memory, for
                    # slower runs (BENCHMARKS.md, "memctl at the model's pace").
                    options.add_session_config_entry("session.disable_prepacking", "1")
                options.log_severity_level = 3
                self._sessions[threads] = ort.InferenceSession(str(self.path), options,
                                                               providers=["CPUExecutionProvider"])
            return self._sessions[threads]


class OnnxEncoder:
    """Runs one exported model: ``encode(texts, threads)`` → (n, dim) float32 unit vectors."""

    def __init__(self, path: Path, tokenizer: Any, max_length: int, input_names: list[str]):
        self.path = path
        self._tokenizer = tokenizer
        self._max_length = max_length
        self._input_names = input_names
        self._session = Sessions(path).get

    def encode(self, texts: list[str], threads: int = 1) -> np.ndarray:
        batch = self._tokenizer(texts, padding=True, truncation="longest_first", max_length=self._max_length,
                                return_tensors="np")
        feed = {n: np.asarray(batch[n], dtype=np.int64) for n in self._input_names}
        return self._session(threads).run(None, feed)[0]


def onnx_encoder(model: Any, location: str, torch_encode: Callable[[list[str]], np.ndarray]) -> OnnxEncoder | None:
    """An :class:`OnnxEncoder` giving ``torch_encode``'s vectors for ``model``, or None (use torch)."""
    if os.environ.get("MEMCTL_EMBED_RUNTIME", "").lower() == "torch" or not supported(model):
        return None
    try:
        import onnxruntime  # noqa: F401
    except ImportError:
        return None
    input_names = [n for n in ("input_ids", "attention_mask", "token_type_ids")
                   if n in model.tokenizer(["x"]).keys()]
    path = cache_root() / "models" / f"{_fingerprint(location)}.onnx"
    expected = torch_encode(list(PROBES))
    for attempt in ("cached", "exported"):  # a cached file that fails is exported once more
        encoder = OnnxEncoder(path, model.tokenizer, int(model.max_seq_length), input_names)
        try:
            if attempt == "exported" or not path.exists():
                _export(model, path, input_names)
            got = encoder.encode(list(PROBES))
            if got.shape == expected.shape and float(np.abs(got - expected).max()) <= TOLERANCE:
                return encoder
            log.warning("ONNX export of %s differs from torch; exporting again", location)
        except Exception as exc:  # a broken cache file, an exporter that cannot handle the model
            log.warning("ONNX runtime unavailable for %s (%s); trying again or using torch", location, exc)
    return None
