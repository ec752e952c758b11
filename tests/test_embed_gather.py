"""Concurrent callers share model calls (embed_gather): each gets exactly its own vectors or its
call's error, a lone caller runs at once, and threads adding to one bank share the model."""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

from memory_core.embedding.gather import EmbedGatherer

from bench._util import memory_statements


class Held:
    """A model function around the real embedder whose first call waits until let go, so that
    callers arriving meanwhile queue up behind it (deterministic gathering, no sleeps)."""

    def __init__(self, embedder, fail_when: str | None = None):
        self.embedder = embedder
        self.fail_when = fail_when
        self.started = threading.Event()
        self.release = threading.Event()
        self.calls: list[tuple[list[str], object, str]] = []
        self.lock = threading.Lock()

    def __call__(self, texts: list[str], kind: object) -> np.ndarray:
        with self.lock:
            first = not self.calls
            self.calls.append((list(texts), kind, threading.current_thread().name))
        if first:
            self.started.set()
            self.release.wait(30)
        if self.fail_when is not None and self.fail_when in texts:
            raise ValueError(f"cannot embed {self.fail_when!r}")
        return self.embedder._encode(texts)


def _queued(gatherer: EmbedGatherer, n: int) -> None:
    """Wait until ``n`` callers are queued behind the running call (bounded: 30 s)."""
    for _ in range(3000):
        with gatherer._lock:
            if len(gatherer._queue) >= n:
                return
        time.sleep(0.01)
    raise AssertionError(f"{n} callers never queued")


def test_many_threads_each_get_exactly_their_own_vectors(embedder):
    texts = memory_statements(240, seed=3)
    alone = np.vstack([embedder._encode([t]) for t in texts])
    gatherer = EmbedGatherer(lambda batch, _kind: embedder._encode(batch), max_batch=32)
    # Callers ask for 1 to 3 texts each, 16 threads at once.
    asks = []
    i = 0
    while i < len(texts):
        k = 1 + i % 3
        asks.append(list(range(i, min(i + k, len(texts)))))
        i += k
    with ThreadPoolExecutor(16) as pool:
        got = list(pool.map(lambda idx: gatherer.encode([texts[j] for j in idx]), asks))
    for idx, vecs in zip(asks, got):
        assert vecs.shape == (len(idx), embedder.dim)
        np.testing.assert_allclose(vecs, alone[idx], atol=2e-5)
    assert gatherer.texts == len(texts)
    assert gatherer.calls < len(asks)  # concurrent callers shared calls


def test_callers_that_queue_share_the_next_call_and_kinds_stay_apart(embedder):
    held = Held(embedder)
    gatherer = EmbedGatherer(held, max_batch=64)
    texts = memory_statements(9, seed=5)
    with ThreadPoolExecutor(9) as pool:
        lead = pool.submit(gatherer.encode, [texts[0]], "passage")
        assert held.started.wait(30)
        followers = [pool.submit(gatherer.encode, [t], "passage") for t in texts[1:6]]
        queries = [pool.submit(gatherer.encode, [t], "query") for t in texts[6:]]
        _queued(gatherer, 8)
        held.release.set()
        results = [f.result(30) for f in [lead, *followers, *queries]]
    assert [(c[0], c[1]) for c in held.calls] == [([texts[0]], "passage"), (texts[1:6], "passage"),
                                                  (texts[6:], "query")]
    for text, vec in zip(texts, results):
        np.testing.assert_allclose(vec, embedder._encode([text]), atol=2e-5)


def test_a_gathered_call_is_bounded(embedder):
    held = Held(embedder)
    gatherer = EmbedGatherer(held, max_batch=4)
    texts = memory_statements(11, seed=6)
    with ThreadPoolExecutor(11) as pool:
        lead = pool.submit(gatherer.encode, [texts[0]])
        assert held.started.wait(30)
        rest = []
        for t in texts[1:]:  # one at a time, so the queue's order is known
            rest.append(pool.submit(gatherer.encode, [t]))
            _queued(gatherer, len(rest))
        held.release.set()
        for f in [lead, *rest]:
            f.result(30)
    assert [c[0] for c in held.calls] == [[texts[0]], texts[1:5], texts[5:9], texts[9:11]]


def test_an_error_reaches_every_caller_of_its_call_and_no_other(embedder):
    texts = memory_statements(6, seed=7)
    held = Held(embedder, fail_when=texts[2])
    gatherer = EmbedGatherer(held)
    with ThreadPoolExecutor(6) as pool:
        lead = pool.submit(gatherer.encode, [texts[0]])
        assert held.started.wait(30)
        doomed = [pool.submit(gatherer.encode, [t]) for t in texts[1:4]]  # one call, texts[2] fails it
        _queued(gatherer, 3)
        held.release.set()
        assert lead.result(30).shape == (1, embedder.dim)
        for f in doomed:
            with pytest.raises(ValueError, match="cannot embed"):
                f.result(30)
    # The model is free again: later callers are answered (nothing stays marked busy).
    vec = gatherer.encode([texts[5]])
    np.testing.assert_allclose(vec, embedder._encode([texts[5]]), atol=2e-5)
    assert not gatherer._busy and not gatherer._queue


def test_a_lone_caller_runs_at_once_on_its_own_thread(embedder):
    held = Held(embedder)
    held.release.set()
    gatherer = EmbedGatherer(held)
    text = memory_statements(1, seed=8)[0]
    gatherer.encode([text])
    assert held.calls == [([text], None, threading.current_thread().name)]
    # What the gatherer adds around a call: far below a millisecond a call.
    cheap = EmbedGatherer(lambda batch, _kind: np.zeros((len(batch), 4), dtype=np.float32))
    start = time.perf_counter()
    for _ in range(2000):
        cheap.encode(["x"])
    assert (time.perf_counter() - start) / 2000 < 0.001
    assert cheap.calls == 2000


def test_embedder_routes_small_encodes_through_its_gatherer(embedder):
    texts = memory_statements(3, seed=9)
    before = embedder._gatherer.texts
    vecs = embedder.encode(texts)
    assert embedder._gatherer.texts == before + 3
    np.testing.assert_allclose(vecs, embedder._encode(texts), atol=2e-5)
    assert np.allclose(np.linalg.norm(vecs, axis=1), 1, atol=1e-5)
    # A question and a memory are embedded with their own prefix, never in one another's call.
    with ThreadPoolExecutor(6) as pool:
        asked = [pool.submit(embedder.encode, [t], kind=kind) for t in texts for kind in ("query", "memory")]
        got = [f.result() for f in asked]
    for (text, kind), vec in zip([(t, k) for t in texts for k in ("query", "memory")], got):
        np.testing.assert_allclose(vec, embedder._encode([text], kind=kind), atol=2e-5)
    with pytest.raises(ValueError):
        embedder.encode(texts, kind="question")


def test_threads_adding_to_one_bank_share_model_calls(bank, embedder):
    texts = memory_statements(160, seed=11)
    calls, done = embedder._gatherer.calls, embedder._gatherer.texts

    def add(i: int) -> list[int]:
        return [bank.add(texts[j], namespace=f"agent{i}") for j in range(i, len(texts), 8)]

    with ThreadPoolExecutor(8) as pool:
        ids = [mid for part in pool.map(add, range(8)) for mid in part]
    made, embedded = embedder._gatherer.calls - calls, embedder._gatherer.texts - done
    assert len(set(ids)) == 160
    assert embedded >= 160
    assert made < embedded  # several threads' texts went into one model call
    stored = [m.text for m in bank.memories(status=None, limit=None)]
    assert sorted(stored) == sorted(texts)  # each once
