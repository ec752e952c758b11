"""Recall at scale: pruning that provably misses nothing, the buffered retrieval log, the IVF mode.

* ``scoring.upper_bound`` bounds ``scoring.blend`` from above: the one property pruning relies on.
* Pruned recall (the 8-bit first pass, forced on small banks with a tiny first scan so the bound
  has to do the work) equals the independent brute force of test_recall_exact, including banks
  full of ties, thresholds, and priors that outweigh relevance.
* Recorded recalls are buffered: the log and access counts are complete for the same bank at
  once, for other processes after a flush or close, and after the recalling process is killed.
* The approximate mode is a stored, evented bank setting, and its hits say they are approximate.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from datetime import datetime, timedelta, timezone

import numpy as np
import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from memory_core import MemoryBank, ScoringParams, ValidationError
from memory_core.index import NamespaceIndex
from memory_core.index.scoring import blend, prior_bounds, upper_bound
from test_recall_exact import WORDS, assert_exact, params_strategy


@pytest.fixture(scope="session")
def embedder():
    """all-MiniLM-L6-v2 rather than the default model: the pruning bounds these tests check were measured on its vectors."""
    from memory_core.embedding.embedder import MINILM_MODEL, get_embedder

    return get_embedder(MINILM_MODEL)

T0 = datetime(2025, 9, 1, tzinfo=timezone.utc)
NOW = datetime(2026, 11, 1, tzinfo=timezone.utc)


@pytest.fixture(params=["projected", "projected-seeded", "quantized"])
def force_pruning(request, monkeypatch) -> str:
    """Prune from the first memory on, so that a bound (not a scan wide enough to see everything)
    decides what gets scored exactly: either the projected bound, always taken (as small
    namespaces take it: every row reaching the threshold scored; or seeded: a k-th best score
    set first from the best rows by bound, as large ones do), or the 8-bit first pass scanning
    only a handful of rows first. Returns which."""
    monkeypatch.setattr(NamespaceIndex, "PRUNE_MIN_ROWS", 1)
    monkeypatch.setattr(NamespaceIndex, "PRUNE_FIRST_SCAN", 2)
    if request.param.startswith("projected"):
        monkeypatch.setattr(NamespaceIndex, "PROJECTED_MAX_SHARE", 1.0)
        if request.param == "projected-seeded":
            monkeypatch.setattr(NamespaceIndex, "SEED_FIRST_ROWS", 0)
    else:
        monkeypatch.setattr(NamespaceIndex, "_projected_candidates", lambda self, ranking: None)
    return request.param


# -- the bound ---------------------------------------------------------------------------------------

unit = st.floats(0, 1)


@settings(max_examples=300, deadline=None)
@given(p=params_strategy, sim=st.floats(-1, 1), slack=st.floats(0, 0.5), lex=unit, lex_slack=unit,
       imp=unit, count=st.integers(0, 50), uses=st.integers(0, 50), created_days=st.floats(0, 900), accessed_days=st.one_of(
           st.none(), st.floats(0, 900)), now_days=st.floats(0, 900), match=st.one_of(st.none(), unit),
       match_slack=unit)
def test_upper_bound_is_never_below_the_blended_score(p, sim, slack, lex, lex_slack, imp, count, uses,
                                                      created_days, accessed_days, now_days, match, match_slack):
    """Whatever the parameters (frequency from retrievals or uses), age, tier, usage and match with
    the query's periods: the bound at a higher similarity, lexical match and date match than a
    memory's, and at least its importance, retrievals and uses, is at least its score."""
    day = 86400.0
    created = np.array([created_days * day])
    last = np.array([np.nan if accessed_days is None else accessed_days * day])
    score, _ = blend(p, similarity=np.array([sim]), lexical=np.array([lex]), created=created, last_access=last,
                     importance=np.array([imp]), access_count=np.array([float(count)]),
                     use_count=np.array([float(uses)]), now=now_days * day,
                     date_match=None if match is None else np.array([match]))
    bound = upper_bound(p, similarity=min(sim + slack, 1.0), lexical=min(lex + lex_slack, 1.0),
                        importance_max=imp, access_count_max=count, use_count_max=uses,
                        date=1.0 if match is None else min(match + match_slack, 1.0))
    assert bound >= score[0] - 1e-12


@settings(max_examples=300, deadline=None)
@given(p=params_strategy, sim=st.floats(-1, 1), lex=unit, imp=unit, count=st.integers(0, 50),
       uses=st.integers(0, 50), created_days=st.floats(0, 900), accessed_days=st.one_of(st.none(), st.floats(0, 900)),
       built_days=st.floats(0, 900), later_days=st.floats(0, 900))
def test_prior_bounds_hold_at_the_moment_they_were_built_and_after(p, sim, lex, imp, count, uses, created_days,
                                                                   accessed_days, built_days, later_days):
    """rest + dense_gain × dense + lexical_gain × lexical, computed at one moment, is at least the
    blended score at that moment and at any later one (recency only falls; the tier may change,
    to a multiplier the bound already allowed)."""
    day = 86400.0
    created = np.array([created_days * day])
    last = np.array([np.nan if accessed_days is None else accessed_days * day])
    built = built_days * day
    if np.isfinite(last[0]) and last[0] > built:
        return  # an access after the bound was built: the index scores that memory exactly
    counts = dict(access_count=np.array([float(count)]), use_count=np.array([float(uses)]))
    rest, dense_gain, lexical_gain = prior_bounds(p, created=created, last_access=last, importance=np.array([imp]),
                                                  now=built, **counts)
    dense = min(max((sim - p.similarity_floor) / (p.similarity_ceiling - p.similarity_floor), 0.0), 1.0)
    bound = rest[0] + dense_gain[0] * dense + lexical_gain[0] * lex
    for now in (built, built + later_days * day):
        score, _ = blend(p, similarity=np.array([sim]), lexical=np.array([lex]), created=created, last_access=last,
                         importance=np.array([imp]), now=now, **counts)
        assert bound >= score[0]


def test_upper_bound_grows_with_similarity():
    p = ScoringParams()
    sims = np.linspace(-1, 1, 101)
    bounds = upper_bound(p, similarity=sims, lexical=0.0)
    assert np.all(np.diff(bounds) >= 0) and bounds[-1] > bounds[0]


# -- pruned recall is exact ----------------------------------------------------------------------------


def _vector(rng: np.random.Generator, dim: int, base: np.ndarray | None, spread: float) -> list[float]:
    v = rng.normal(size=dim).astype(np.float32)
    if base is not None:
        v = base + spread * v
    return (v / np.linalg.norm(v)).tolist()


adversarial_memory = st.fixed_dictionaries({
    "words": st.lists(st.sampled_from(WORDS[:6]), min_size=1, max_size=4),  # few words: lexical ties
    "importance": st.sampled_from([0.0, 0.5, 1.0]),  # few values: prior ties
    "days": st.sampled_from([0, 30, 400]),
    "access_count": st.sampled_from([0, 3]),
    "use_count": st.sampled_from([0, 2]),
    "cluster": st.integers(0, 2),  # near-duplicate vectors
    "duplicate": st.booleans(),  # an exact copy of the cluster centre: similarity ties
})


@pytest.mark.slow
@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture],
          phases=[Phase.explicit, Phase.reuse, Phase.generate])
@given(memories=st.lists(adversarial_memory, min_size=1, max_size=40), p=params_strategy,
       query=st.lists(st.sampled_from(WORDS[:6]), min_size=1, max_size=3).map(" ".join),
       priors_dominate=st.booleans(), seed=st.integers(0, 2**16))
def test_pruned_recall_equals_brute_force(tmp_path_factory, embedder, force_pruning, memories, p, query,
                                          priors_dominate, seed):
    """Ties in similarity, lexical match and priors; thresholds; recency and importance weighing
    more than relevance: the pruned top k is brute force's."""
    if priors_dominate:
        p = p.replace(alpha=0.05, beta=0.6, gamma=0.8)
    rng = np.random.default_rng(seed)
    centres = [np.asarray(_vector(rng, embedder.dim, None, 0), dtype=np.float32) for _ in range(3)]
    rows = [{"text": " ".join(m["words"]), "namespace": "alice", "importance": m["importance"],
             "created_at": T0 + timedelta(days=m["days"]), "access_count": m["access_count"],
             "use_count": m["use_count"], "embedding": centres[m["cluster"]].tolist() if m["duplicate"]
             else _vector(rng, embedder.dim, centres[m["cluster"]], 0.05)} for m in memories]
    folder = tmp_path_factory.mktemp("pruned")
    with MemoryBank.open(folder / "b.duckdb", embedder=embedder) as bank:
        bank.add_many(rows)
        # The query's vector is a cluster centre: many memories tie with it or nearly so.
        embedder._recent[("query", query)] = np.asarray(centres[seed % 3], dtype=np.float32)
        assert_exact(bank, query, "alice", p, NOW, embedder)
        if force_pruning.startswith("projected"):  # unless similarity weighs nothing: then nothing to bound
            assert bank.last_search["projected"] is (p.alpha * (1 - p.lexical_weight) > 0)
        else:
            # The quantized pass ran (pruned, or gave up); with neighbours, every row is scored.
            assert bank.last_search["first_pass"] is (p.neighbour_weight == 0)
    del embedder._recent[("query", query)]


@pytest.mark.slow
@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture],
          phases=[Phase.explicit, Phase.reuse, Phase.generate])
@given(memories=st.lists(adversarial_memory, min_size=3, max_size=30), p=params_strategy,
       steps=st.lists(st.sampled_from(["record", "update", "forget", "add", "earlier", "later"]), min_size=2,
                      max_size=7),
       seed=st.integers(0, 2**16), seeding=st.sampled_from(["none", "first block", "second block"]))
def test_projected_bound_stays_exact_across_recalls_edits_and_moments(tmp_path_factory, embedder, monkeypatch, memories,
                                                                 p, steps, seed, seeding):
    """The projection and the prior bounds are built once (per setting) and kept while memories
    change, the changed rows' bounds recomputed as they gather: recorded recalls (access counts,
    last access), edits, forgets, adds and "as of" moments before and after the one they were
    built at. After each step the pruned top k is brute force's, whether a k-th best score is set
    from the best rows by bound before the second block, after it, or not at all."""
    monkeypatch.setattr(NamespaceIndex, "PRUNE_MIN_ROWS", 1)
    monkeypatch.setattr(NamespaceIndex, "PROJECTED_MAX_SHARE", 1.0)
    monkeypatch.setattr(NamespaceIndex, "PRIOR_REFRESH", 2)  # recompute changed rows' bounds often
    monkeypatch.setattr(NamespaceIndex, "SEED_FIRST_ROWS", 0 if seeding == "first block" else 10**9)
    monkeypatch.setattr(NamespaceIndex, "SEED_ROWS", 0 if seeding == "second block" else 10**9)
    rng = np.random.default_rng(seed)
    centres = [np.asarray(_vector(rng, embedder.dim, None, 0), dtype=np.float32) for _ in range(3)]
    rows = [{"text": " ".join(m["words"]), "namespace": "alice", "importance": m["importance"],
             "created_at": T0 + timedelta(days=m["days"]), "access_count": m["access_count"],
             "embedding": _vector(rng, embedder.dim, centres[m["cluster"]], 0.05)} for m in memories]
    query = " ".join(WORDS[:2])
    moment = NOW
    folder = tmp_path_factory.mktemp("projected")
    with MemoryBank.open(folder / "b.duckdb", embedder=embedder) as bank:
        ids = bank.add_many(rows)
        embedder._recent[("query", query)] = centres[seed % 3]
        try:
            assert_exact(bank, query, "alice", p, moment, embedder)
            for step in steps:
                live = [i for i in ids if bank.get(i).status == "active"]
                if step == "record":
                    bank.recall(query, namespace="alice", params=p, now=moment)
                elif step == "update" and live:
                    bank.update(int(rng.choice(live)), importance=float(rng.random()))
                elif step == "forget" and len(live) > 1:
                    bank.forget(int(rng.choice(live)))
                elif step == "add":
                    ids.append(bank.add(WORDS[int(rng.integers(0, 6))], namespace="alice",
                                        embedding=_vector(rng, embedder.dim, centres[seed % 3], 0.02),
                                        created_at=moment - timedelta(days=float(rng.integers(0, 300))),
                                        importance=float(rng.random())))
                elif step in ("earlier", "later"):
                    moment += timedelta(days=-120 if step == "earlier" else 120)
                assert_exact(bank, query, "alice", p, moment, embedder)
                assert bank.last_search["projected"] is (p.alpha * (1 - p.lexical_weight) > 0), step
        finally:
            del embedder._recent[("query", query)]


@pytest.mark.slow
def test_projected_bound_prunes_sentence_like_vectors_and_stays_exact_through_recorded_recalls(
        bank, embedder, monkeypatch):
    """Vectors with the bundled model's spectrum (bench/data/embedding_spectrum.npz): the projected
    bound scores only a few memories exactly, and stays exact while recorded recalls change access
    counts and recency (rows marked dirty, then the prior bounds rebuilt)."""
    from bench._util import unit_vectors

    monkeypatch.setattr(NamespaceIndex, "PRUNE_MIN_ROWS", 500)
    n = 1500
    vectors = unit_vectors(n, embedder.dim, seed=4)
    rng = np.random.default_rng(4)
    bank.add_many([{"text": " ".join(rng.choice(WORDS, 5)), "namespace": "big", "importance": float(rng.random()),
                    "created_at": T0 + timedelta(days=float(rng.random() * 400)), "embedding": vectors[i]}
                   for i in range(n)])
    # Ten questions, each asked seven times; a question's vector is a memory's own, so that
    # memory's bound is tight and its recency, raised by the recall, would outgrow a stale bound.
    distinct = [f"{WORDS[i]} {WORDS[i + 1]}" for i in range(10)]
    for i, q in enumerate(distinct):
        embedder._recent[("query", q)] = vectors[97 * i].copy()
    p = bank.preset("default").replace(recency_from="last_access", beta=0.4)  # recorded recalls raise recency
    try:
        scored = []
        for i in range(70):
            q, now = distinct[i % 10], NOW + timedelta(days=i)
            assert_exact(bank, q, "big", p, now, embedder)
            bank.recall(q, namespace="big", params=p, now=now)  # recorded: access count, last access
            assert bank.last_search["projected"] is True
            scored.append(bank.last_search["candidates"])
        assert np.median(scored) < n / 10
    finally:
        for q in distinct:
            embedder._recent.pop(("query", q), None)


def test_pruning_skips_most_memories_and_stays_exact(bank, embedder, monkeypatch):
    """A namespace large enough to prune: most memories are never scored exactly, and the result
    is still brute force's, before and after edits (changed rows are scored exactly until the
    8-bit copy is rebuilt)."""
    monkeypatch.setattr(NamespaceIndex, "PRUNE_MIN_ROWS", 500)
    monkeypatch.setattr(NamespaceIndex, "PRUNE_FIRST_SCAN", 64)
    rng = np.random.default_rng(3)
    centres = rng.normal(size=(20, embedder.dim)).astype(np.float32)
    n = 2000
    vectors = centres[rng.integers(0, 20, n)] + rng.normal(size=(n, embedder.dim)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    ids = bank.add_many([{"text": " ".join(rng.choice(WORDS, 5)), "namespace": "big", "importance": float(rng.random()),
                          "created_at": T0 + timedelta(days=float(rng.random() * 400)), "embedding": vectors[i]}
                         for i in range(n)])
    query = "marathon in berlin"
    embedder._recent[("query", query)] = (vectors[7] / np.linalg.norm(vectors[7])).astype(np.float32)
    try:
        p = bank.preset("default")  # the bank's model's default (the bounds are read against it)
        assert_exact(bank, query, "big", p, NOW, embedder)
        assert bank.last_search["pruned"] and bank.last_search["candidates"] < n / 2
        bank.update(ids[7], importance=0.0)
        bank.forget(ids[8])
        bank.add("Ran the Berlin marathon", namespace="big", embedding=vectors[7], created_at=NOW)
        assert_exact(bank, query, "big", p, NOW, embedder)
        assert_exact(bank, query, "big", p.replace(threshold=0.0, k=20), NOW, embedder)
        # A query naming a period is scored whole (the bounds do not describe the dates' lift).
        dated = query + " in March 2026"
        embedder._recent[("query", dated)] = embedder._recent[("query", query)]
        assert_exact(bank, dated, "big", p.replace(threshold=0.0, k=20), NOW, embedder)
        assert bank.last_search["dated"] and not bank.last_search["pruned"]
        assert bank.last_search["candidates"] == n
    finally:
        del embedder._recent[("query", query)]
        embedder._recent.pop(("query", query + " in March 2026"), None)


# -- the retrieval log is buffered, and complete ---------------------------------------------------


def _seed(bank: MemoryBank) -> list[int]:
    return bank.add_many([{"text": t, "namespace": "alice", "created_at": T0 + timedelta(days=i)}
                          for i, t in enumerate(["Prefers tea in the morning", "Lives in Paris",
                                                 "Runs marathons", "Has a dog called Pixel"])])


def test_recorded_recalls_are_complete_in_the_same_bank_at_once(bank):
    _seed(bank)
    hits = bank.recall("tea in the morning", namespace="alice", threshold=0.0, k=2)
    rid = bank.last_retrieval_id
    log = bank.retrievals("alice")
    assert [r["id"] for r in log] == [rid]
    assert [h["memory_id"] for h in log[0]["hits"]] == [h.memory.id for h in hits]
    assert bank.get(hits[0].memory.id).access_count == 1
    assert bank.stats()["retrievals"] == 1
    # The recall's own access count ranks the next recall already (frequency counts uses).
    again = bank.recall("tea in the morning", namespace="alice", threshold=0.0, k=2, record=False)
    assert again[0].memory.access_count == 1


def test_other_processes_see_recalls_after_flush_and_close(bank_path, embedder):
    agent = MemoryBank.open(bank_path, embedder=embedder, actor="agent")
    ids = _seed(agent)
    dashboard = MemoryBank.open(bank_path, embedder=embedder, actor="dashboard")
    for _ in range(3):
        agent.recall("my dog", namespace="alice", threshold=0.0, k=1)
    rids = set(range(agent.last_retrieval_id - 2, agent.last_retrieval_id + 1))
    agent.flush()
    assert {r["id"] for r in dashboard.retrievals("alice")} == rids
    assert dashboard.get(ids[3]).access_count == 3
    agent.recall("my dog", namespace="alice", threshold=0.0, k=1)
    agent.close()
    assert len(dashboard.retrievals("alice")) == 4
    assert dashboard.get(ids[3]).access_count == 4
    assert not list((bank_path.parent / (bank_path.name + ".journal")).glob("*.jsonl"))
    dashboard.close()


CRASHING_AGENT = textwrap.dedent("""
    import os, signal, sys, json
    from memory_core import MemoryBank
    bank = MemoryBank.open(sys.argv[1], actor="agent")
    rids = []
    for _ in range(5):
        bank.recall("my dog", namespace="alice", threshold=0.0, k=1)
        rids.append(bank.last_retrieval_id)
    print(json.dumps(rids), flush=True)
    os.kill(os.getpid(), signal.SIGKILL)  # no close, no atexit: the journal is all that is left
""")


@pytest.mark.slow
def test_recalls_of_a_killed_process_are_written_by_the_next_opener(bank_path, embedder):
    with MemoryBank.open(bank_path, embedder=embedder) as bank:
        ids = _seed(bank)
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONPATH": os.getcwd()}
    proc = subprocess.run([sys.executable, "-c", CRASHING_AGENT, str(bank_path)], capture_output=True, text=True,
                          env=env, timeout=300)
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    rids = json.loads(proc.stdout.strip().splitlines()[-1])
    with MemoryBank.open(bank_path, embedder=embedder) as bank:
        logged = bank.retrievals("alice", limit=None)
        assert sorted(r["id"] for r in logged) == sorted(rids)
        assert {r["actor"] for r in logged} == {"agent"}
        assert bank.get(ids[3]).access_count == 5
    # Written once: opening again replays nothing twice.
    with MemoryBank.open(bank_path, embedder=embedder) as bank:
        assert len(bank.retrievals("alice", limit=None)) == 5
        assert bank.get(ids[3]).access_count == 5


AGENT_PAUSED_AT_ITS_FIRST_JOURNAL_LOCK = textwrap.dedent("""
    import fcntl, json, os, signal, sys, time
    from pathlib import Path
    from memory_core import MemoryBank

    bank_path, paused, go = sys.argv[1], Path(sys.argv[2]), Path(sys.argv[3])
    real_flock = fcntl.flock

    def flock(fd, op):
        # The first blocking lock is the owner locking its new journal: stop just before it, so the
        # other process can look at the journal folder in exactly that moment.
        if op == fcntl.LOCK_EX and not paused.exists():
            paused.touch()
            while not go.exists():
                time.sleep(0.01)
        return real_flock(fd, op)

    fcntl.flock = flock
    bank = MemoryBank.open(bank_path, actor="agent")
    rids = []
    for _ in range(3):
        bank.recall("my dog", namespace="alice", threshold=0.0, k=1)
        rids.append(bank.last_retrieval_id)
    print(json.dumps(rids), flush=True)
    os.kill(os.getpid(), signal.SIGKILL)  # no close, no atexit: the journal is all that is left
""")


@pytest.mark.slow
def test_a_journal_is_never_taken_for_an_orphan_while_its_owner_creates_it(bank_path, embedder, tmp_path):
    """Another process that flushes while a recalling process is creating its journal must not
    mistake the new, not yet locked journal for an abandoned one: it used to lock it, find it
    empty, and delete it, so the owner journaled into a deleted file and a crash lost its recalls."""
    with MemoryBank.open(bank_path, embedder=embedder) as bank:
        ids = _seed(bank)
    paused, go = tmp_path / "paused", tmp_path / "go"
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONPATH": os.getcwd()}
    agent = subprocess.Popen([sys.executable, "-c", AGENT_PAUSED_AT_ITS_FIRST_JOURNAL_LOCK, str(bank_path),
                              str(paused), str(go)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             env=env)
    try:
        other = MemoryBank.open(bank_path, embedder=embedder, actor="dashboard")
        deadline = time.monotonic() + 240
        while not paused.exists():
            assert agent.poll() is None and time.monotonic() < deadline, agent.communicate()[1]
            time.sleep(0.02)
        other.flush()  # the moment between the journal's creation and its owner's lock
        other.close()
        go.touch()
        out, err = agent.communicate(timeout=240)
    finally:
        if agent.poll() is None:
            agent.kill()
            agent.wait()
    assert agent.returncode == -signal.SIGKILL, err
    rids = json.loads(out.strip().splitlines()[-1])
    with MemoryBank.open(bank_path, embedder=embedder) as bank:
        assert sorted(r["id"] for r in bank.retrievals("alice", limit=None)) == sorted(rids)
        assert bank.get(ids[3]).access_count == 3


def test_replaying_a_journal_already_written_counts_nothing_twice(bank_path, embedder):
    """A crash between committing a batch and emptying the journal leaves lines already in the
    store: writing them again is skipped by retrieval id, access counts included."""
    bank = MemoryBank.open(bank_path, embedder=embedder)
    ids = _seed(bank)
    bank.recall("my dog", namespace="alice", threshold=0.0, k=1)
    line = json.dumps(bank._journal.pending[0])
    bank.flush()
    bank.close()
    stale = bank_path.parent / (bank_path.name + ".journal") / "99999-dead.jsonl"
    stale.parent.mkdir(exist_ok=True)
    stale.write_text(line + "\n" + '{"id": 1, "cut sho')  # a torn last line too
    with MemoryBank.open(bank_path, embedder=embedder) as reopened:
        assert len(reopened.retrievals("alice")) == 1
        assert reopened.get(ids[3]).access_count == 1
    assert not stale.exists()


def test_read_only_bank_refuses_recorded_recall_and_allows_what_if(bank_path, embedder):
    with MemoryBank.open(bank_path, embedder=embedder) as bank:
        _seed(bank)
    with MemoryBank.open(bank_path, embedder=embedder, read_only=True) as ro:
        assert ro.recall("dog", namespace="alice", record=False, threshold=0.0)
        with pytest.raises(Exception) as caught:
            ro.recall("dog", namespace="alice")
        assert "read-only" in str(caught.value)


# -- the approximate mode ----------------------------------------------------------------------------


def test_index_mode_round_trip_and_approximate_hits(bank_path, embedder, monkeypatch):
    monkeypatch.setattr(NamespaceIndex, "APPROX_MIN_ROWS", 200)
    rng = np.random.default_rng(1)
    vectors = rng.normal(size=(400, embedder.dim)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    bank = MemoryBank.open(bank_path, embedder=embedder)
    assert bank.index_mode == "exact"
    bank.add_many([{"text": f"note {i} " + " ".join(rng.choice(WORDS, 3)), "namespace": "big",
                    "embedding": vectors[i], "created_at": T0} for i in range(400)])
    bank.add("Prefers tea", namespace="small")
    query = "garden holiday"
    embedder._recent[("query", query)] = vectors[5]
    try:
        exact = bank.recall(query, namespace="big", k=5, threshold=0.0, record=False)
        assert exact and not any(h.approximate for h in exact)
        with pytest.raises(ValidationError):
            bank.set_index_mode("hnsw-ish")
        assert bank.index_mode == "exact"
        other = MemoryBank.open(bank_path, embedder=embedder)
        bank.set_index_mode("ivf")
        assert bank.events(action="set_index_mode")[0].after == {"index_mode": "ivf"}
        approx = bank.recall(query, namespace="big", k=5, threshold=0.0, record=False)
        assert approx and all(h.approximate for h in approx) and bank.last_search["approximate"]
        assert approx[0].memory.id == exact[0].memory.id  # its own vector: found by any index
        # A namespace below the size where IVF pays stays exact.
        assert not any(h.approximate for h in bank.recall("tea", namespace="small", threshold=0.0))
        # Another process follows the bank's setting, and a reopened bank keeps it.
        assert all(h.approximate for h in other.recall(query, namespace="big", k=5, threshold=0.0, record=False))
        assert other.index_mode == "ivf"
        other.close()
        bank.close()
        bank = MemoryBank.open(bank_path, embedder=embedder)
        assert bank.index_mode == "ivf"
        bank.set_index_mode("exact")
        back = bank.recall(query, namespace="big", k=5, threshold=0.0, record=False)
        assert [h.memory.id for h in back] == [h.memory.id for h in exact]
        assert not any(h.approximate for h in back) and back[0].to_dict()["approximate"] is False
    finally:
        del embedder._recent[("query", query)]
        bank.close()


def test_cli_index_mode_shows_and_sets_the_bank_setting(bank_path, embedder):
    from click.testing import CliRunner

    from memory_core.cli import cli

    MemoryBank.open(bank_path, embedder=embedder).close()
    shown = CliRunner().invoke(cli, ["--bank", str(bank_path), "index-mode"])
    assert shown.exit_code == 0 and shown.output.strip() == "exact"
    changed = CliRunner().invoke(cli, ["--bank", str(bank_path), "index-mode", "ivf"])
    assert changed.exit_code == 0 and changed.output.strip() == "ivf"
    refused = CliRunner().invoke(cli, ["--bank", str(bank_path), "index-mode", "hnsw"])
    assert refused.exit_code != 0
    with MemoryBank.open(bank_path, embedder=embedder) as bank:
        assert bank.index_mode == "ivf"
