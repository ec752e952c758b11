"""index/: tokenizing three languages, exact incremental BM25, namespace indexes and their cache files."""

from __future__ import annotations

from collections import Counter
import random

import bm25s
import numpy as np
import pytest

from memory_core.index import LexicalIndex, NamespaceIndex, namespace_key
from memory_core.language.text import tokenize


def test_tokenize_english_stems_and_drops_stop_words():
    assert tokenize("I was Cooking the PASTA and cooked it") == ["cook", "pasta", "cook"]


def test_tokenize_swedish_and_unicode():
    tokens = tokenize("Jag gillar kaffe på morgonen, ÅÄÖ")
    assert tokenize("kaffe")[0] in tokens and "jag" not in tokens and "på" not in tokens and "åäö" in tokens
    assert tokenize("Kaffe!") == tokenize("kaffe")


def test_tokenize_chinese_characters_and_bigrams():
    tokens = tokenize("我喜欢喝咖啡")
    assert "咖啡" in tokens and "咖" in tokens and "喜欢" in tokens
    assert set(tokenize("咖啡")) <= set(tokens)


def test_tokenize_full_width_and_mixed():
    assert tokenize("ＰｙｔｈｏｎとSQL") == tokenize("PythonとSQL")


def random_corpus(rng: random.Random, n: int) -> list[list[str]]:
    words = "coffee tea morning running marathon paris berlin pasta python exam".split()
    return [[rng.choice(words) for _ in range(rng.randint(1, 8))] for _ in range(n)]


@pytest.mark.parametrize("seed", range(5))
def test_bm25_matches_bm25s(seed):
    rng = random.Random(seed)
    docs = random_corpus(rng, rng.randint(1, 40))
    lex = LexicalIndex()
    for d in docs:
        lex.append(d)
    ref = bm25s.BM25(method="lucene", k1=1.5, b=0.4)
    ref.index(docs, show_progress=False)
    query = ["coffee", "marathon", "berlin"]
    known = [t for t in query if any(t in d for d in docs)]
    want = ref.get_scores(known) if known else np.zeros(len(docs))
    assert np.allclose(lex.raw_scores(query), want, atol=1e-5)


def test_bm25_incremental_equals_rebuild():
    """Adding and removing documents leaves exactly the scores of a fresh index of what remains."""
    rng = random.Random(7)
    docs = random_corpus(rng, 60)
    lex = LexicalIndex()
    alive = []
    for d in docs:
        lex.append(d)
        alive.append(d)
    for _ in range(25):
        r = rng.randrange(len(alive))
        lex.swap_remove(r)
        alive[r] = alive[-1]
        alive.pop()
    fresh = LexicalIndex()
    for d in alive:
        fresh.append(d)
    q = ["tea", "python", "paris"]
    assert np.allclose(lex.raw_scores(q), fresh.raw_scores(q))
    assert np.allclose(lex.scores(q), fresh.scores(q))


def test_normalized_lexical_is_absolute():
    lex = LexicalIndex()
    for d in (["coffee", "morning"], ["tea", "evening"], ["coffee", "cake"], ["run", "fast"]):
        lex.append(d)
    s = lex.scores(["coffee", "morning"])
    assert s[0] == pytest.approx(1.0) and s[1] == 0.0 and 0 < s[2] < 1
    # A query word the namespace has never seen lowers the match instead of being ignored.
    assert lex.scores(["coffee", "morning", "unicorn"])[0] < s[0]
    assert lex.scores([]).tolist() == [0.0] * 4


def make_index(n: int, dim: int = 8, seed: int = 0) -> NamespaceIndex:
    rng = np.random.default_rng(seed)
    idx = NamespaceIndex("alice", dim)
    for i in range(n):
        v = rng.normal(size=dim).astype(np.float32)
        idx.upsert(100 + i, v / np.linalg.norm(v), [f"w{i % 3}", "shared"], f"h{i}", 1.0 * i, np.nan, 0.5, 0)
    return idx


def test_namespace_index_remove_keeps_arrays_aligned():
    idx = make_index(10)
    vec_of = {int(idx.ids[r]): idx.emb[r].copy() for r in range(idx.n)}
    for mid in (100, 105, 109):
        idx.remove(mid)
    assert idx.n == 7 and set(idx.row_of) == set(vec_of) - {100, 105, 109}
    for mid, r in idx.row_of.items():
        assert idx.ids[r] == mid and np.array_equal(idx.emb[r], vec_of[mid]) and idx.hash_at(r) == f"h{mid - 100}"
        assert idx.created[r] == mid - 100


def test_save_and_load_round_trip(tmp_path):
    idx = make_index(20)
    idx.remove(103)
    idx.seq = 42
    idx.save(tmp_path, "m")
    back = NamespaceIndex.load(tmp_path, "alice", "m", 8)
    assert back is not None and back.seq == 42 and back.n == 19
    for mid, r in idx.row_of.items():
        r2 = back.row_of[mid]
        assert np.array_equal(back.emb[r2], idx.emb[r]) and back.hash_at(r2) == idx.hash_at(r)
        assert back.lexical.terms_of(r2) == idx.lexical.terms_of(r)
    assert NamespaceIndex.load(tmp_path, "alice", "other-model", 8) is None
    assert NamespaceIndex.load(tmp_path, "alice", "m", 16) is None
    assert NamespaceIndex.load(tmp_path, "bob", "m", 8) is None


def test_namespace_keys_are_safe_and_distinct():
    keys = {namespace_key(ns) for ns in ("alice", "Alice", "a/b", "a_b", "../etc", "客户", "x" * 500)}
    assert len(keys) == 7
    assert all("/" not in k and len(k) < 60 for k in keys)


def test_lexical_tokens_drop_question_and_filler_words():
    """Recall's lexical match ignores how a question is asked: "When did you go to the support
    group?" matches on "support group", not on "when", "did" and "you" that every chatty memory
    holds; the shared tokenizer (conflicts, merges) keeps them."""
    from memory_core.index import memory_tokens
    from memory_core.language.text import lexical_tokens, tokenize

    assert lexical_tokens("When did you go to the LGBTQ support group?") == ["lgbtq", "support", "group"]
    assert "did" in tokenize("When did you go?")
    assert lexical_tokens("") == [] and lexical_tokens(None) == []
    # A memory's context adds its words after the text's.
    assert memory_tokens("Caroline: I went yesterday", "Melanie: How was the support group?") == [
        "carolin", "yesterday", "melani", "support", "group"]


@pytest.mark.parametrize("seed", range(4))
def test_bm25_compaction_and_saved_arrays_keep_scores(monkeypatch, seed):
    """Rows changed since the last compaction live beside the arrays; with compactions every few
    changes, bulk appends, removals and a save-and-load of the arrays, scores stay a fresh
    index's of what remains."""
    monkeypatch.setattr(LexicalIndex, "COMPACT_MIN", 3)
    rng = random.Random(seed)
    lex, alive = LexicalIndex(), []
    batch = random_corpus(rng, 20)
    lex.extend(batch)  # straight into the arrays
    alive += batch
    for _ in range(60):
        action = rng.random()
        if action < 0.4 and alive:
            r = rng.randrange(len(alive))
            lex.swap_remove(r)
            alive[r] = alive[-1]
            alive.pop()
        elif action < 0.8:
            doc = random_corpus(rng, 1)[0]
            lex.append(doc)
            alive.append(doc)
        else:
            docs = random_corpus(rng, rng.randint(1, 6))
            lex.extend(docs)
            alive += docs
        fresh = LexicalIndex()
        for d in alive:
            fresh.append(d)
        for q in (["tea", "python", "paris"], ["coffee"], ["unicorn", "exam"]):
            assert np.allclose(lex.raw_scores(q), fresh.raw_scores(q))
            assert lex.idf(q[0]) == pytest.approx(fresh.idf(q[0]))
        assert [lex.terms_of(r) for r in range(len(alive))] == [dict(Counter(d)) for d in alive]
    back = LexicalIndex.from_arrays(**{k: (str(v) if k == "vocab" else v) for k, v in lex.to_arrays().items()})
    assert len(back) == len(alive)
    assert np.allclose(back.raw_scores(["tea", "marathon"]), lex.raw_scores(["tea", "marathon"]))


def test_row_infos_survive_compaction(monkeypatch):
    """Descriptive fields loaded as an Arrow table and then changed row by row (more than the
    compaction threshold) read back as set, through removals that move rows."""
    import pyarrow as pa

    from memory_core.index import RowInfos

    monkeypatch.setattr(RowInfos, "COMPACT_MIN", 4)
    idx = make_index(30)
    table = pa.table({"text": [f"t{i}" for i in range(30)], "n": list(range(30))})
    idx.set_infos(table)
    want = {100 + i: (f"t{i}", i) for i in range(30)}
    for i in range(0, 30, 2):
        idx.set_info(100 + i, (f"new{i}", -i))
        want[100 + i] = (f"new{i}", -i)
    for mid in (101, 110, 129):
        idx.remove(mid)
        del want[mid]
    idx.upsert(200, np.ones(8, dtype=np.float32) / np.sqrt(8), ["x"], "h200", 0.0, np.nan, 0.5, 0, info=("added", 99))
    want[200] = ("added", 99)
    assert {int(idx.ids[r]): idx.info[r] for r in range(idx.n)} == want
