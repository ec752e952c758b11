"""bench/longmemeval.py: the shipped LongMemEval-S file reads back whole, in halves, with its
evidence turns; and one small haystack in its format goes through the public API (a smoke test:
no figures)."""

from __future__ import annotations

import gzip
import json
from datetime import datetime, timezone

import numpy as np
import pytest

from bench import longmemeval


def test_the_shipped_file_holds_100_questions_in_two_halves_with_evidence_turns():
    questions = longmemeval.load()
    assert len(questions) == 100 and len({q["id"] for q in questions}) == 100
    dev, test = longmemeval.load(split="dev"), longmemeval.load(split="test")
    assert len(dev) == len(test) == 50 and not {q["id"] for q in dev} & {q["id"] for q in test}
    answerable = [q for q in questions if not q["id"].endswith("_abs")]
    assert all(any(t["evidence"] for t in q["turns"]) for q in answerable)
    for q in questions:
        assert q["turns"] and all(t["text"].startswith(("User: ", "Assistant: ")) for t in q["turns"])
        assert q["now"] >= max(t["created_at"] for t in q["turns"])


def test_dates_read_as_utc():
    assert longmemeval.parse_date("2023/05/30 (Tue) 23:40") == datetime(2023, 5, 30, 23, 40, tzinfo=timezone.utc)


def test_a_bad_split_is_refused():
    with pytest.raises(ValueError, match="split"):
        longmemeval.load(split="train")


SMALL = [{
    "question_id": "q1", "question_type": "single-session-user", "question": "Which city did I move to?",
    "question_date": "2023/06/01 (Thu) 10:00", "answer": "Lisbon", "answer_session_ids": ["s2"],
    "haystack_session_ids": ["s1", "s2"], "haystack_dates": ["2023/05/01 (Mon) 09:00", "2023/05/20 (Sat) 18:30"],
    "haystack_sessions": [
        [{"role": "user", "content": "Can you give me a recipe for banana bread?"},
         {"role": "assistant", "content": "Sure: mash three ripe bananas, mix with flour, sugar and eggs, bake an hour."}],
        [{"role": "user", "content": "I just moved to Lisbon for my new job and I love the trams.", "has_answer": True},
         {"role": "assistant", "content": "Congratulations on the move! Lisbon's trams are famous."}],
    ],
}]


def test_a_compacted_haystack_is_recalled_through_the_api(tmp_path, embedder):
    source = tmp_path / "small.json.gz"
    with gzip.open(source, "wt", encoding="utf-8") as fh:
        json.dump(SMALL, fh)
    data = longmemeval.compact(source, tmp_path / "small.json.xz")
    (q,) = longmemeval.load(data)
    assert [t["evidence"] for t in q["turns"]] == [False, False, True, False]
    assert q["turns"][2]["text"] == "User: I just moved to Lisbon for my new job and I love the trams."
    records = longmemeval.run(data, log=lambda *_: None)
    assert records[0]["turns"] == 4 and set(records[0]["ranks"]) == {"dense", "hybrid", "no_lifts"}
    summary = longmemeval.summarize(records)
    assert summary["all"]["questions"] == 1 and summary["all"]["hybrid"][20] == 1.0
    assert "| all | hybrid | 1 |" in longmemeval.report(summary)


def test_turn_vectors_are_embedded_once_and_a_damaged_or_stale_cache_file_is_rebuilt(tmp_path, embedder):
    from bench import vectors

    calls: list[list[str]] = []

    def encode(texts):
        calls.append(list(texts))
        return embedder.encode(texts, kind="memory")

    texts = ["User: I moved to Lisbon.", "Assistant: Congratulations!", "User: I moved to Lisbon."]
    first = vectors.vectors(texts, encode, "multilingual-e5-small", embedder.dim, tmp_path)
    assert sorted(calls[0]) == sorted(set(texts)) and len(first) == 2
    assert np.allclose(first["Assistant: Congratulations!"],
                       embedder.encode(["Assistant: Congratulations!"], kind="memory")[0], atol=1e-5)
    again = vectors.vectors(texts, encode, "multilingual-e5-small", embedder.dim, tmp_path)
    assert len(calls) == 1 and all(np.array_equal(first[t], again[t]) for t in first)  # read, not embedded

    (shard,) = (tmp_path / "multilingual-e5-small").glob("*.npz")
    shard.write_bytes(shard.read_bytes()[:100])  # damaged: cut short
    rebuilt = vectors.vectors(texts, encode, "multilingual-e5-small", embedder.dim, tmp_path)
    assert len(calls) == 2 and all(np.allclose(first[t], rebuilt[t], atol=1e-5) for t in first)

    (shard,) = (tmp_path / "multilingual-e5-small").glob("*.npz")
    with np.load(shard) as z:
        parts = dict(z)
    np.savez(shard, **{**parts, "vectors": parts["vectors"] * 3})  # stale or wrong: not unit vectors
    vectors.vectors(texts, encode, "multilingual-e5-small", embedder.dim, tmp_path)
    assert len(calls) == 3
    # Another model's vectors under this model's name are not trusted either.
    (shard,) = (tmp_path / "multilingual-e5-small").glob("*.npz")
    with np.load(shard) as z:
        parts = dict(z)
    np.savez(shard, **{**parts, "model": np.array("all-MiniLM-L6-v2")})
    vectors.vectors(texts, encode, "multilingual-e5-small", embedder.dim, tmp_path)
    assert len(calls) == 4 and len(list((tmp_path / "multilingual-e5-small").glob("*.npz"))) == 1
