"""The bundled model on ONNX Runtime: the vectors torch gives, exported once per machine."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from memory_core.storage.cache_dir import cache_root
from memory_core.embedding.embedder import MINILM_MODEL, _model_location

TEXTS = [
    "I prefer tea over coffee in the morning.",
    "我的女儿下个月要去北京上大学。",
    "Min syster flyttade till Umeå förra året.",
    "ok",
    "Meeting notes: " + "the budget review moved to Thursday and the venue changed again. " * 30,  # truncated
]

PROBE = """
import json, os
from memory_core.embedding.embedder import get_embedder

e = get_embedder("all-MiniLM-L6-v2")
print(json.dumps({"runtime": e.runtime, "first": float(e.encode(["a short check"])[0][0])}))
"""


@pytest.fixture(scope="session")
def embedder():
    """all-MiniLM-L6-v2 rather than the default model: the model these tests export to ONNX (the e5 runtime is test_e5.py's)."""
    from memory_core.embedding.embedder import MINILM_MODEL, get_embedder

    return get_embedder(MINILM_MODEL)

def _probe(cache: Path, **env: str) -> dict:
    """What a fresh process with this cache folder embeds with."""
    out = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, timeout=300,
                         env={**os.environ, "MEMCTL_CACHE_DIR": str(cache), "HF_HUB_OFFLINE": "1", **env},
                         cwd=Path(__file__).resolve().parents[1])
    assert out.returncode == 0, out.stderr[-2000:]
    import json

    return json.loads(out.stdout.strip().splitlines()[-1])


def test_the_bundled_model_runs_on_onnx_with_torchs_vectors(embedder):
    from sentence_transformers import SentenceTransformer

    assert embedder.runtime == "onnx"
    torch_model = SentenceTransformer(_model_location(MINILM_MODEL), device="cpu")
    expected = torch_model.encode(TEXTS, normalize_embeddings=True, convert_to_numpy=True)
    together = embedder.encode(TEXTS)
    one_by_one = np.vstack([embedder.encode([t]) for t in TEXTS])
    assert np.abs(together - expected).max() < 1e-5
    assert np.abs(one_by_one - expected).max() < 1e-5
    assert np.allclose(np.linalg.norm(together, axis=1), 1.0, atol=1e-6)


def test_the_export_is_kept_and_reused_by_the_next_process(embedder):
    from memory_core.embedding.onnx import _fingerprint

    exported = [cache_root() / "models" / f"{_fingerprint(_model_location(MINILM_MODEL))}.onnx"]
    assert exported[0].exists(), "the bundled model's export in the cache folder"
    before = exported[0].stat().st_mtime_ns
    assert _probe(cache_root())["runtime"] == "onnx"
    assert exported[0].stat().st_mtime_ns == before, "the next process loaded it, not exported again"


def test_a_damaged_export_is_replaced_not_used(tmp_path):
    first = _probe(tmp_path)
    (exported,) = (tmp_path / "models").glob("*.onnx")
    exported.write_bytes(exported.read_bytes()[:4096])  # a disk that filled up mid-write, say
    second = _probe(tmp_path)
    assert second["runtime"] == "onnx"
    assert second["first"] == pytest.approx(first["first"], abs=1e-6)
    assert exported.stat().st_size > 1_000_000


def test_torch_can_be_asked_for(tmp_path):
    assert _probe(tmp_path, MEMCTL_EMBED_RUNTIME="torch")["runtime"] == "torch"
    assert not (tmp_path / "models").exists()
