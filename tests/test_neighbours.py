"""Neighbours: a memory's relevance is lifted part of the way to its most relevant neighbour's (the
memories created just before and after it in its namespace), so a reply stored without context
("My sister Eva, she lives two streets from us.") is found by the words of the turn it answers.
Recall stays exact and the Tune page can show what the neighbours added."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import numpy as np
import pytest

from memory_core import ScoringParams
from memory_core.index.scoring import parts


@pytest.fixture(scope="session")
def embedder():
    """all-MiniLM-L6-v2 rather than the default model: the lifts these tests show were measured on its cosines."""
    from memory_core.embedding.embedder import MINILM_MODEL, get_embedder

    return get_embedder(MINILM_MODEL)

T = datetime(2026, 1, 1, 18, tzinfo=timezone.utc)
NOW = T + timedelta(days=20)
TURNS = [
    "Anna: We finally booked the flights to Lisbon for March.",
    "Ben: Nice! Who is looking after the dog while you are away?",
    "Anna: My sister Eva, she lives two streets from us.",
    "Ben: Perfect, then you can relax.",
]
# Later days: other talk, some of it about dogs and Lisbon.
OTHER = ["Ben: The dog park was packed this morning.", "Anna: I started a pottery class on Tuesdays.",
         "Ben: Our neighbour's dog keeps barking at night.", "Anna: Eva and I watched a film about Lisbon.",
         "Ben: I need a new winter coat.", "Anna: Work has been busy with the quarterly report.",
         "Ben: Who wants to come hiking on Saturday?", "Anna: The dog walker cancelled again.",
         "Ben: Lisbon has great seafood, I heard."]
QUESTION = "Who looks after the dog while Anna is in Lisbon?"


def _conversation(bank) -> list[int]:
    ids = bank.add_many([{"text": t, "namespace": "chat", "created_at": T + timedelta(seconds=i)}
                         for i, t in enumerate(TURNS)])
    bank.add_many([{"text": t, "namespace": "chat", "created_at": T + timedelta(days=3 + i)}
                   for i, t in enumerate(OTHER)])
    return ids


def test_a_reply_without_context_is_found_through_the_turn_it_answers(bank):
    """The answer shares no word with the question; the turn before it does. With the bank's
    settings and the relevance floor off it is in the top 5, lifted by that neighbour (shown as its
    own component and part of the score); without neighbours it is not. (With the floor, a memory
    with less relevance of its own than min_relevance is lifted by nothing: test_scoring.)"""
    ids = _conversation(bank)
    answer = ids[2]
    lifted = bank.preset("default").replace(min_relevance=0.0)
    hits = bank.recall(QUESTION, namespace="chat", params=lifted, now=NOW, record=False)
    by_id = {h.memory.id: h for h in hits}
    assert answer in by_id
    hit = by_id[answer]
    assert hit.components["neighbours"] > 0.05
    shares = parts(lifted, hit.components)
    assert shares["neighbours"] > 0 and sum(shares.values()) == pytest.approx(hit.score)
    alone = bank.recall(QUESTION, namespace="chat", params=lifted.replace(neighbour_weight=0.0), now=NOW,
                        record=False)
    assert answer not in [h.memory.id for h in alone]


def test_neighbours_follow_creation_time_and_an_as_of_recall_sees_only_earlier_ones(bank):
    """Neighbours are the memories created next to it, not the ones stored next to it; and a
    recall "as of" a moment before a neighbour existed gets no lift from it."""
    lone = bank.add("Anna: My sister Eva, she lives two streets from us.", namespace="chat",
                    created_at=T + timedelta(seconds=2), detect_conflicts=False)
    bank.add_many([{"text": t, "namespace": "chat", "created_at": T + timedelta(days=3 + i)}
                   for i, t in enumerate(OTHER)])
    p = ScoringParams(k=20, threshold=0.0)

    def lift() -> float:
        hits = bank.recall(QUESTION, namespace="chat", params=p, now=NOW, record=False)
        return next(h.components["neighbours"] for h in hits if h.memory.id == lone)

    before = lift()
    # The question the reply answers is stored last, but dated just before it: now its neighbour.
    asked = bank.add(TURNS[1], namespace="chat", created_at=T + timedelta(seconds=1), detect_conflicts=False)
    assert lift() > before + 0.05
    # As of a moment between the reply and a question dated after it, the question lends nothing.
    bank.update(asked, created_at=T + timedelta(seconds=3))
    early = bank.recall(QUESTION, namespace="chat", params=p, now=T + timedelta(seconds=2, milliseconds=500),
                        record=False)
    assert [h.components["neighbours"] for h in early if h.memory.id == lone] == [0.0]


def test_the_tuner_ranks_with_neighbours_as_recall_does(bank):
    """Candidates.select (what the Tune page and the tuner re-rank with) returns what recall
    returns, with and without neighbours."""
    _conversation(bank)
    queries = [QUESTION, "Where are the flights to?", "dog barking at night"]
    cand = bank.candidates(queries, namespace="chat", now=NOW)
    for nw in (0.0, 0.5, 1.0):
        p = ScoringParams(neighbour_weight=nw, k=6, threshold=0.0)
        want = [[h.memory.id for h in bank.recall(q, namespace="chat", params=p, now=NOW, record=False)]
                for q in queries]
        assert cand.select(p) == want
    assert np.all(cand.neighbours >= -1)


def test_the_neighbour_table_kept_up_to_date_equals_a_fresh_sort():
    """Memories appended after the newest extend the table in place; older ones, removals and
    re-dated memories make it sort again. After any sequence of these it equals a fresh sort."""
    from memory_core.index import NamespaceIndex
    from memory_core.index.scoring import NEIGHBOUR_SECONDS, NEIGHBOURS

    rng = np.random.default_rng(5)
    idx = NamespaceIndex("ns", 4)
    next_id, clock = 1, 1000.0

    def add(k: int, when: np.ndarray) -> None:
        nonlocal next_id
        ids = np.arange(next_id, next_id + k, dtype=np.int64)
        next_id += k
        idx.add_many(ids, rng.normal(size=(k, 4)).astype(np.float32), [["w"]] * k, [""] * k, when,
                     np.full(k, np.nan), np.full(k, 0.5), np.zeros(k))

    def fresh() -> np.ndarray:
        n = idx.n
        order = np.lexsort((idx.ids[:n], idx.created[:n]))
        want = np.full((n, 2 * NEIGHBOURS), -1)
        close = lambda a, b: abs(idx.created[a] - idx.created[b]) <= NEIGHBOUR_SECONDS  # noqa: E731
        for p, r in enumerate(order):
            for d in range(1, NEIGHBOURS + 1):
                want[r, 2 * d - 2] = order[p - d] if p - d >= 0 and close(r, order[p - d]) else -1
                want[r, 2 * d - 1] = order[p + d] if p + d < n and close(r, order[p + d]) else -1
        return want

    for step in range(60):
        kind = rng.choice(["later", "later", "same moment", "older", "remove", "redate", "upsert"])
        if kind == "later" or idx.n < 3:
            k = int(rng.integers(1, 4))
            add(k, clock + 1.0 + np.sort(rng.integers(0, 3, size=k)).astype(float) * 1800.0)  # ties, and gaps over an hour
            clock += 6000.0
        elif kind == "same moment":  # ties with the newest: ids decide
            add(2, np.full(2, clock))
        elif kind == "older":
            add(1, np.array([clock - float(rng.integers(1, 50)) * 900.0]))
        elif kind == "remove":
            idx.remove(int(idx.ids[int(rng.integers(0, idx.n))]))
        elif kind == "redate":
            mid = int(idx.ids[int(rng.integers(0, idx.n))])
            idx.set_fields(mid, clock - float(rng.integers(0, 30)) * 900.0, np.nan, 0.5, 0.0)
        else:
            mid = int(idx.ids[int(rng.integers(0, idx.n))])
            clock += 1.0
            idx.upsert(mid, np.ones(4, dtype=np.float32), ["w"], "", clock, np.nan, 0.5, 0.0)
        if rng.random() < 0.7:  # sometimes several changes gather before the table is read
            assert np.array_equal(idx.neighbour_rows(), fresh()), (step, kind)
    assert np.array_equal(idx.neighbour_rows(), fresh())
