"""Recall is exact: its top k equals brute-force scoring of every live memory of the namespace.

The brute force here is written independently of memory_core's scoring and indexes: it reads the
rows straight from the DuckDB file, computes cosine similarity with numpy, lexical match with the
bm25s library over each memory's text and context, and the blended score with a plain per-memory
formula. Only the tokenizer (which words count) and the reading of the periods a query names
(``memory_core.language.periods.query_periods``: which dates it mentions) are shared with the product.
"""

from __future__ import annotations

import math
import shutil
from datetime import datetime, timedelta, timezone

import bm25s
import numpy as np
import pytest

import stores
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from memory_core import MemoryBank, ScoringParams
from memory_core.language.periods import query_periods
from memory_core.index.scoring import DATE_AFTER_DAYS, DATE_SCALE_DAYS, NEIGHBOUR_SECONDS, NEIGHBOURS
from memory_core.storage import tables
from memory_core.embedding.embedder import model_defaults
from memory_core.language.text import detect_language, lexical_tokens

WORDS = ("coffee tea morning running marathon paris berlin moved vegetarian pasta python database "
         "postgres exam maths swedish lesson dog cat garden holiday greece budget salary").split()
T0 = datetime(2025, 9, 1, tzinfo=timezone.utc)
# What a query may add about time (memories are created from T0 on, over 450 days).
PERIODS = ("", "", "in March 2026", "in 2025", "on 3 October, 2025", "last week", "in June or last month")


def brute_force(bank: MemoryBank, query: str, namespace: str, p: ScoringParams, now: datetime,
                qvec: np.ndarray) -> list[tuple[int, float]]:
    """Score every live memory of the namespace one by one; return [(id, score)] best first."""
    bank.flush()  # recorded recalls reach the file in batches; this reads the file directly
    with bank._store.connect(write=False) as con:
        table = tables.fetch_rows(con, "namespace = ? AND status = 'active'", [namespace], with_embedding=True)
    rows = table.to_pylist()
    if not rows:
        return []
    vecs = np.array([r["embedding"] for r in rows], dtype=np.float32)
    docs = [lexical_tokens(r["text"]) + lexical_tokens(r["context"]) for r in rows]
    qtok = list(dict.fromkeys(lexical_tokens(query)))
    n = len(docs)
    df = {t: sum(1 for d in docs if t in d) for t in qtok}
    # A query is weighed as carrying at least lexical_min_terms words that one memory alone holds.
    rarest = math.log(1 + (n - 1 + 0.5) / (1 + 0.5))
    norm = max(sum(math.log(1 + (n - df[t] + 0.5) / (df[t] + 0.5)) for t in qtok), p.lexical_min_terms * rarest)
    lex = np.zeros(n)
    known = [t for t in qtok if df[t] > 0]
    if known:
        retriever = bm25s.BM25(method="lucene", k1=1.5, b=0.4)
        retriever.index([d if d else [""] for d in docs], show_progress=False)
        # bm25s counts an empty document as one empty token; our index counts it as length 0.
        if all(docs):
            # In float64: a float32 score makes the whole formula float32, where a tiny threshold
            # rounds to 0 and a zero score would pass it.
            lex = np.minimum(retriever.get_scores(known).astype(np.float64) * (1 + 1.5) / norm, 1.0)
        else:
            pytest.skip("bm25s cannot index an empty document")
    out = []
    t_now = now.timestamp()
    periods = query_periods(query, now)
    # Each memory's own relevance (lifted date_weight × match of the way to 1 when the query names
    # periods: match 1 inside one or up to DATE_AFTER_DAYS after it, else exp(-days away /
    # DATE_SCALE_DAYS), the best over the periods), then the best of its neighbours' (the
    # NEIGHBOURS memories of the namespace created just before it and just after it, ties by id,
    # within NEIGHBOUR_SECONDS of it; one created after now lends 0). A memory whose relevance
    # before any lift is below min_relevance is lifted by nothing.
    # The threshold moves by the model's offset for the question's language (a threshold of 0 stays
    # 0; kept within what a score can reach).
    offset = model_defaults(bank.model).language_threshold.get(detect_language(query), 0.0)
    top = max(1.0, p.tier_hot, p.tier_warm, p.tier_cold)
    threshold = p.threshold if p.threshold == 0 else min(max(p.threshold + offset, 0.0), top)
    floor, ceiling = p.similarity_floor, p.similarity_ceiling
    own = []
    eligible = []
    sims = []
    for i, r in enumerate(rows):
        sim = float(vecs[i] @ qvec)
        sims.append(sim)
        dense = min(1.0, max(0.0, (sim - floor) / (ceiling - floor)))
        created = r["created_at"].replace(tzinfo=timezone.utc).timestamp()
        # Below the similarity floor a memory keeps lexical_below_floor of its lexical match.
        kept = 1.0 if sim >= floor else p.lexical_below_floor
        rel = (1 - p.lexical_weight) * dense + p.lexical_weight * lex[i] * kept
        eligible.append(rel >= p.min_relevance)
        match = 0.0
        for start, end in periods:
            away = max(start - created, created - end - DATE_AFTER_DAYS * 86400, 0.0) / 86400
            match = max(match, math.exp(-away / DATE_SCALE_DAYS))
        rel += p.date_weight * match * (1 - rel) * eligible[i]
        own.append(rel if created <= t_now else 0.0)
    order = sorted(range(n), key=lambda i: (rows[i]["created_at"], rows[i]["id"]))
    near_best = {}
    for pos, i in enumerate(order):
        near = order[max(0, pos - NEIGHBOURS):pos] + order[pos + 1:pos + 1 + NEIGHBOURS]
        near = [j for j in near if abs((rows[j]["created_at"] - rows[i]["created_at"]).total_seconds())
                <= NEIGHBOUR_SECONDS]
        near_best[i] = max((own[j] for j in near), default=0.0)
    for i, r in enumerate(rows):
        created = r["created_at"].replace(tzinfo=timezone.utc).timestamp()
        if created > t_now:
            continue
        last = r["last_accessed_at"]
        last = last.replace(tzinfo=timezone.utc).timestamp() if last is not None else None
        if last is not None and last > t_now:
            last = None
        rel = own[i] + p.neighbour_weight * max(0.0, near_best[i] - own[i]) * eligible[i]
        ref = (last or created) if p.recency_from == "last_access" else created
        age = max(t_now - ref, 0.0) / 86400
        if p.decay == "exponential":
            rec = 0.5 ** (age / p.half_life_days)
        else:
            rec = 1 - age / p.linear_horizon_days
        rec = max(rec, p.recency_floor)
        count = r["use_count"] if p.frequency_from == "uses" else r["access_count"]
        freq = min(1.0, p.frequency_base + p.frequency_step * count)
        touched = max(t_now - max(created, last or created), 0.0) / 86400
        tier = p.tier_hot if touched < 7 else p.tier_warm if touched <= 90 else p.tier_cold
        s = tier * (p.alpha * rel + p.beta * rec + p.gamma * r["importance"] + p.delta * freq) / (
            p.alpha + p.beta + p.gamma + p.delta)
        if s >= threshold and s > 0:
            out.append((r["id"], s, sims[i]))
    out.sort(key=lambda x: (-x[1], -x[2], x[0]))  # equal scores: the higher cosine, then the smaller id
    return [(mid, s) for mid, s, _ in out[: p.k]]


def assert_exact(bank: MemoryBank, query: str, namespace: str, p: ScoringParams, now: datetime, embedder) -> None:
    got = [(h.memory.id, h.score) for h in bank.recall(query, namespace=namespace, params=p, now=now, record=False)]
    want = brute_force(bank, query, namespace, p, now, embedder.encode_one(query, kind="query"))
    # bm25s scores in float32, so scores agree to ~1e-7 and only exact ties may order differently.
    tol = 1e-6
    assert len(got) == len(want), (got, want)
    for (gid, gs), (wid, ws) in zip(got, want):
        assert gs == pytest.approx(ws, abs=tol), (got, want)
        if gid != wid:
            tied = {i for i, s in want if abs(s - ws) <= tol}
            assert gid in tied, (got, want)


params_strategy = st.builds(
    ScoringParams,
    alpha=st.floats(0, 1), beta=st.floats(0, 1), gamma=st.floats(0, 1), delta=st.floats(0.01, 1),
    lexical_weight=st.floats(0, 1), lexical_below_floor=st.floats(0, 1), neighbour_weight=st.floats(0, 1),
    date_weight=st.floats(0, 1),
    lexical_min_terms=st.floats(0, 4), similarity_floor=st.floats(0, 0.4), similarity_ceiling=st.floats(0.5, 1),
    half_life_days=st.floats(0.5, 400), decay=st.sampled_from(["exponential", "linear"]),
    linear_horizon_days=st.floats(1, 400), recency_floor=st.floats(0, 0.5),
    recency_from=st.sampled_from(["created", "last_access"]),
    frequency_base=st.floats(0, 1), frequency_step=st.floats(0, 0.5),
    frequency_from=st.sampled_from(["retrievals", "uses"]),
    tier_hot=st.floats(0, 1.5), tier_warm=st.floats(0, 1.5), tier_cold=st.floats(0, 1.5),
    k=st.integers(1, 12), threshold=st.floats(0, 0.8),
)

memory_strategy = st.fixed_dictionaries({
    "words": st.lists(st.sampled_from(WORDS), min_size=1, max_size=6),
    "context": st.one_of(st.none(), st.lists(st.sampled_from(WORDS), min_size=1, max_size=8).map(" ".join)),
    "namespace": st.sampled_from(["alice", "bob"]),
    "importance": st.floats(0, 1),
    "days": st.integers(0, 450),
    "status": st.sampled_from(["active", "active", "active", "archived", "superseded"]),
    "access_count": st.integers(0, 5),
    "use_count": st.integers(0, 5),
    "accessed_days": st.one_of(st.none(), st.integers(0, 450)),
    "seed": st.integers(0, 2**31),
})


@pytest.mark.slow
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture],
          phases=[Phase.explicit, Phase.reuse, Phase.generate])
@given(memories=st.lists(memory_strategy, min_size=1, max_size=30), p=params_strategy,
       query=st.tuples(st.lists(st.sampled_from(WORDS), min_size=1, max_size=4).map(" ".join),
                       st.sampled_from(PERIODS)).map(" ".join),
       now_days=st.integers(0, 500))
def test_recall_equals_brute_force(tmp_path_factory, embedder, memories, p, query, now_days):
    """Random banks (with near-duplicate vectors, statuses, access histories), params and "now"."""
    folder = tmp_path_factory.mktemp("exact")
    rows = []
    for m in memories:
        rng = np.random.default_rng(m["seed"])
        vec = rng.normal(size=embedder.dim).astype(np.float32)
        created = T0 + timedelta(days=m["days"])
        accessed = None if m["accessed_days"] is None else created + timedelta(days=m["accessed_days"])
        rows.append({"text": " ".join(m["words"]), "context": m["context"], "namespace": m["namespace"],
                     "importance": m["importance"],
                     "created_at": created, "status": m["status"], "access_count": m["access_count"],
                     "use_count": m["use_count"], "last_accessed_at": accessed, "embedding": (vec / np.linalg.norm(vec)).tolist()})
    with MemoryBank.open(folder / "b.duckdb", embedder=embedder) as bank:
        bank.add_many(rows)
        now = T0 + timedelta(days=now_days)
        for ns in ("alice", "bob"):
            assert_exact(bank, query, ns, p, now, embedder)
    shutil.rmtree(folder)


TEXTS = [
    "Prefers tea in the morning", "Switched to coffee in the morning", "Lives in Paris", "Moved to Berlin",
    "Training for the Stockholm half marathon", "Decided to use PostgreSQL for the side project",
    "Finds maths hard", "Finds maths fun now", "Has a dog called Pixel", "Is learning Swedish on Tuesdays",
    "Vegetarian, but eats fish sometimes", "Budget for the holiday is tight this year",
]
CONTEXTS = ["we talked about breakfast and what to drink", "the running club meets in the park",
            "choosing a database for the project"]
QUERIES = ["what do I drink in the morning?", "where do I live now", "which database did we pick",
           "how is my running going", "maths", "recommend a dinner for me", "what did I decide in January 2026?",
           "what happened last month?"]


def _check_all(bank: MemoryBank, embedder, now: datetime) -> None:
    for p in (ScoringParams(threshold=0.0), ScoringParams.preset("generative-agents").replace(threshold=0),
              ScoringParams.preset("weighted-recall")):
        for q in QUERIES:
            assert_exact(bank, q, "alice", p, now, embedder)


@pytest.mark.slow
def test_exact_through_changes_reopen_and_other_processes(bank_path, embedder):
    """Edits, soft/hard deletes, restores, recorded recalls, another bank object writing the same
    file, a reopen from the index cache, and a rebuild after the cache is deleted: recall stays
    equal to brute force at every step."""
    now = datetime(2026, 11, 1, tzinfo=timezone.utc)
    bank = MemoryBank.open(bank_path, embedder=embedder)
    ids = bank.add_many([{"text": t, "namespace": "alice", "importance": (i % 5) / 5,
                          "context": CONTEXTS[i % len(CONTEXTS)] if i % 3 == 0 else None,
                          "created_at": T0 + timedelta(days=30 * i)} for i, t in enumerate(TEXTS)])
    _check_all(bank, embedder, now)
    bank.update(ids[0], text="Drinks green tea every morning", importance=0.9)
    bank.forget(ids[2])
    bank.forget(ids[3], hard=True)
    bank.recall("coffee", namespace="alice", now=now)  # bumps access counts and last access
    _check_all(bank, embedder, now)
    bank.restore(ids[2])
    _check_all(bank, embedder, now)

    other = MemoryBank.open(bank_path, embedder=embedder)  # e.g. the dashboard beside an agent
    new_id = other.add("Started drinking matcha instead of coffee", namespace="alice",
                       created_at=now - timedelta(days=1))
    other.update(ids[4], namespace="bob")
    other.close()
    _check_all(bank, embedder, now)
    assert new_id in [h.memory.id for h in bank.recall("matcha", namespace="alice", now=now, record=False)]
    bank.close()

    reopened = MemoryBank.open(bank_path, embedder=embedder)  # from the saved index cache
    _check_all(reopened, embedder, now)
    reopened.close()
    shutil.rmtree(stores.index_folder(bank_path))
    rebuilt = MemoryBank.open(bank_path, embedder=embedder)
    _check_all(rebuilt, embedder, now)
    rebuilt.close()


def test_damaged_index_cache_is_rebuilt(bank_path, embedder):
    """A truncated vectors file or a garbage BM25 file is not fatal: the index is rebuilt from the store."""
    now = datetime(2026, 11, 1, tzinfo=timezone.utc)
    with MemoryBank.open(bank_path, embedder=embedder) as bank:
        bank.add_many([{"text": t, "namespace": "alice", "created_at": T0} for t in TEXTS])
        bank.recall("tea", namespace="alice", record=False)
    folder = stores.index_folder(bank_path)
    vectors_file = next(folder.glob("*.vec.npy"))
    vectors_file.write_bytes(vectors_file.read_bytes()[:100])
    next(folder.glob("*.lex.npz")).write_bytes(b"not a zip file")
    with MemoryBank.open(bank_path, embedder=embedder) as bank:
        _check_all(bank, embedder, now)
        assert len(bank.recall("tea", namespace="alice", record=False, threshold=0, k=50)) == len(TEXTS)


# -- a saved index cache against the store it is loaded for ------------------------------------------


def _hits_as_stored(bank: MemoryBank, now: datetime) -> None:
    """Every memory recall hands out says what the store holds for it (text, fields, counts)."""
    bank.flush()
    with bank._store.connect(write=False) as con:
        stored = {r["id"]: r for r in tables.fetch_rows(con, "namespace = 'alice'", []).to_pylist()}
    for q in QUERIES:
        for h in bank.recall(q, namespace="alice", params=ScoringParams(threshold=0.0, k=50), now=now, record=False):
            row = stored[h.memory.id]
            assert row["status"] == "active"
            got = h.memory
            assert (got.text, got.context, got.kind, got.importance, got.access_count, got.use_count) == (
                row["text"], row["context"], row["kind"], row["importance"], row["access_count"], row["use_count"])
            assert got.last_accessed_at == (None if row["last_accessed_at"] is None
                                            else row["last_accessed_at"].replace(tzinfo=timezone.utc))


def _fill_bank(bank: MemoryBank, texts: list[str]) -> list[int]:
    ids = bank.add_many([{"text": t, "namespace": "alice", "importance": (i % 5) / 5,
                          "context": CONTEXTS[i % len(CONTEXTS)] if i % 3 == 0 else None,
                          "created_at": T0 + timedelta(days=30 * i)} for i, t in enumerate(texts)])
    bank.recall("coffee", namespace="alice", now=datetime(2026, 11, 1, tzinfo=timezone.utc))  # loads, counts
    return ids


def test_saved_index_takes_changes_made_while_it_was_on_disk(bank_path, embedder, monkeypatch, tmp_path):
    """A server saves its index and stops; other servers (on other machines, with their own
    caches) edit, erase, move, add and recall meanwhile: the next load from the saved index reads
    only the rows that changed, and recall is exact."""
    now = datetime(2026, 11, 1, tzinfo=timezone.utc)
    with MemoryBank.open(bank_path, embedder=embedder) as bank:
        ids = _fill_bank(bank, TEXTS)
    folder = stores.index_folder(bank_path)
    shutil.copytree(folder, tmp_path / "kept")
    with MemoryBank.open(bank_path, embedder=embedder) as other:
        other.update(ids[0], text="Drinks green tea every morning", importance=0.9)
        other.update(ids[1], importance=0.1)
        other.forget(ids[2])
        other.forget(ids[3], hard=True)
        other.update(ids[4], namespace="bob")
        other.add("Started drinking matcha instead of coffee", namespace="alice", created_at=now - timedelta(days=1))
        other.recall("marathon", namespace="bob", now=now)
        other.recall("coffee", namespace="alice", now=now)
    shutil.rmtree(folder)
    shutil.copytree(tmp_path / "kept", folder)
    streamed: list[int] = []
    real = tables.stream_rows

    def counting(*args, **kwargs):
        for rows in real(*args, **kwargs):
            streamed.append(rows.num_rows)
            yield rows

    monkeypatch.setattr(tables, "stream_rows", counting)
    with MemoryBank.open(bank_path, embedder=embedder) as bank:
        _check_all(bank, embedder, now)
        _hits_as_stored(bank, now)
        # ids[0] and ids[1], the new memory and those the recall counted: not every row
        assert 3 <= sum(streamed) < len(TEXTS), streamed


def test_saved_index_of_a_bank_restored_from_an_older_backup_is_not_trusted(bank_path, embedder, tmp_path):
    """A server's saved index outlives a restore of the bank from an older backup (made on
    another machine, say): what it holds is the bank as it was before the restore."""
    now = datetime(2026, 11, 1, tzinfo=timezone.utc)
    with MemoryBank.open(bank_path, embedder=embedder) as bank:
        ids = _fill_bank(bank, TEXTS)
        bank.backup(tmp_path / "old.duckdb")
        bank.update(ids[0], text="Drinks green tea every morning")
        bank.update(ids[5], importance=1.0)
        bank.forget(ids[6], hard=True)
        bank.add("Started drinking matcha instead of coffee", namespace="alice", created_at=now - timedelta(days=1))
        bank.recall("maths", namespace="alice", now=now)
    folder = stores.index_folder(bank_path)
    shutil.copytree(folder, tmp_path / "kept")
    MemoryBank.restore_backup(tmp_path / "old.duckdb", bank_path, force=True)
    shutil.rmtree(folder, ignore_errors=True)
    shutil.copytree(tmp_path / "kept", folder)
    with MemoryBank.open(bank_path, embedder=embedder) as bank:
        _check_all(bank, embedder, now)
        _hits_as_stored(bank, now)
        assert "Prefers tea in the morning" in {h.memory.text for h in bank.recall(
            "tea", namespace="alice", params=ScoringParams(threshold=0.0, k=50), now=now, record=False)}


def test_saved_index_of_another_bank_is_not_trusted(bank_path, embedder, tmp_path):
    """Two banks written the same way (same ids, same change sequences) with other texts: one's
    saved index put where the other's belongs is not taken for it."""
    now = datetime(2026, 11, 1, tzinfo=timezone.utc)
    twin = tmp_path / "twin.duckdb"
    with MemoryBank.open(twin, embedder=embedder) as bank:
        _fill_bank(bank, [t + " (twin)" for t in TEXTS])
    with MemoryBank.open(bank_path, embedder=embedder) as bank:
        _fill_bank(bank, TEXTS)
    folder = stores.index_folder(bank_path)
    shutil.rmtree(folder)
    shutil.copytree(stores.index_folder(twin), folder)
    with MemoryBank.open(bank_path, embedder=embedder) as bank:
        _check_all(bank, embedder, now)
        _hits_as_stored(bank, now)


# -- the saved side structures (projection, 8-bit codes) and the saved vectors, mapped -----------------

SIDE_PRESETS = [ScoringParams(threshold=0.0, k=8),  # neighbours: the projection's bound, or every row
                ScoringParams.preset("generative-agents").replace(threshold=0.0, k=8)]  # none: the codes too


@pytest.fixture
def side_thresholds(monkeypatch):
    """Prune, map vectors and compact at sizes a test can reach."""
    from memory_core.index import LexicalIndex, NamespaceIndex, RowInfos

    monkeypatch.setattr(NamespaceIndex, "PRUNE_MIN_ROWS", 100)
    monkeypatch.setattr(NamespaceIndex, "MAP_MIN_ROWS", 64)
    monkeypatch.setattr(NamespaceIndex, "PREAD_MAX_ROWS", 40)
    monkeypatch.setattr(LexicalIndex, "COMPACT_MIN", 16)
    monkeypatch.setattr(LexicalIndex, "TEXT_LOOKUPS", 8)  # both ways of finding a term
    monkeypatch.setattr(RowInfos, "COMPACT_MIN", 16)


def _side_rows(n: int, seed: int, dim: int, namespace: str) -> list[dict]:
    """Memories whose vectors lie near a 12-dimensional subspace ("low": the projection bounds
    them) or anywhere on the sphere ("rand": it cannot, and recall without neighbours takes the
    8-bit codes)."""
    rng = np.random.default_rng(seed)
    if namespace == "low":
        basis = np.random.default_rng(99).standard_normal((12, dim))
        v = rng.standard_normal((n, 12)) @ basis + 0.05 * rng.standard_normal((n, dim))
    else:
        v = rng.standard_normal((n, dim))
    v = (v / np.linalg.norm(v, axis=1, keepdims=True)).astype(np.float32)
    return [{"text": " ".join(rng.choice(WORDS, 4)) + f" s{seed}x{i}", "namespace": namespace,
             "importance": float(rng.random()), "created_at": T0 + timedelta(days=float(rng.random() * 300)),
             "embedding": v[i]} for i in range(n)]


def _check_side(bank: MemoryBank, embedder, now: datetime) -> None:
    for ns in ("low", "rand"):
        for p in SIDE_PRESETS:
            for q in QUERIES:
                assert_exact(bank, q, ns, p, now, embedder)


def _count_builds(monkeypatch) -> dict[str, int]:
    from memory_core import index

    built = {"projection": 0, "codes": 0}
    for name, cls in (("projection", index._Projection), ("codes", index._Sq8)):
        def counting(self, *args, _init=cls.__init__, _name=name, **kwargs):
            built[_name] += 1
            _init(self, *args, **kwargs)
        monkeypatch.setattr(cls, "__init__", counting)
    return built


def test_saved_side_structures_are_loaded_and_a_damaged_or_stale_one_is_rebuilt(
        bank_path, embedder, side_thresholds, monkeypatch, tmp_path):
    """Recall builds a large namespace's projection and 8-bit codes; the index cache keeps them
    (``.side.npz``, tied to the save of the vectors they describe), so the next load does not
    build them again. One with damaged bytes, or one left from another save of the index, is not
    trusted: it is built again. Recall is exact throughout, through changes made meanwhile."""
    now = datetime(2026, 11, 1, tzinfo=timezone.utc)
    with MemoryBank.open(bank_path, embedder=embedder) as bank:
        ids = {ns: bank.add_many(_side_rows(n, i, embedder.dim, ns)) for i, (ns, n) in enumerate((("low", 300),
                                                                                                   ("rand", 1000)))}
        _check_side(bank, embedder, now)
        assert bank._indexes["low"]._proj.useful and not bank._indexes["rand"]._proj.useful
        assert bank._indexes["rand"]._sq is not None
    folder = stores.index_folder(bank_path)
    side = {ns: next(folder.glob(f"{ns}-*.side.npz")) for ns in ("low", "rand")}
    shutil.copy(side["rand"], tmp_path / "rand.side.npz")

    built = _count_builds(monkeypatch)
    with MemoryBank.open(bank_path, embedder=embedder) as bank:  # from the cache: nothing built
        _check_side(bank, embedder, now)
        assert built == {"projection": 0, "codes": 0}
    with MemoryBank.open(bank_path, embedder=embedder) as other:  # changes while the cache is on disk
        for mid in ids["low"][:3] + ids["rand"][:3]:
            other.forget(mid)
        other.update(ids["low"][5], text="Moved to Berlin for the marathon")
        other.add_many(_side_rows(5, 7, embedder.dim, "low"))
    with MemoryBank.open(bank_path, embedder=embedder) as bank:  # caught up, the rest still as saved
        _check_side(bank, embedder, now)
        assert built == {"projection": 0, "codes": 0}
        bank.update(ids["rand"][10], importance=0.95)  # saved again on close: another save of "rand"

    data = bytearray(side["low"].read_bytes())  # damaged in the middle of the projection's arrays
    data[len(data) // 2:len(data) // 2 + 64] = bytes(64)
    side["low"].write_bytes(bytes(data))
    shutil.copy(tmp_path / "rand.side.npz", side["rand"])  # the codes of an earlier save
    with MemoryBank.open(bank_path, embedder=embedder) as bank:
        _check_side(bank, embedder, now)
        assert built == {"projection": 2, "codes": 1}  # "rand" kept its (useless) projection there too
    side["low"].write_bytes(b"not a zip file")
    with MemoryBank.open(bank_path, embedder=embedder) as bank:  # "rand" saved its rebuilt ones
        _check_side(bank, embedder, now)
        assert built == {"projection": 3, "codes": 1}


def test_saved_vectors_are_mapped_until_the_first_change(bank_path, embedder, side_thresholds):
    """A large namespace loaded from its index cache reads the saved vectors file itself (mapped
    read-only); the first change copies them to the index's own scratch file, and recall stays
    exact before and after."""
    now = datetime(2026, 11, 1, tzinfo=timezone.utc)
    with MemoryBank.open(bank_path, embedder=embedder) as bank:
        ids = bank.add_many(_side_rows(300, 1, embedder.dim, "low"))
        bank.add_many(_side_rows(1000, 2, embedder.dim, "rand"))
        _check_side(bank, embedder, now)
    with MemoryBank.open(bank_path, embedder=embedder) as bank:
        _check_side(bank, embedder, now)
        idx = bank._indexes["low"]
        assert isinstance(idx.emb, np.memmap) and not idx.emb.flags.writeable, "the saved file, mapped"
        bank.forget(ids[0])  # the last row moves into the first: copied first
        assert idx.emb.flags.writeable
        bank.update(ids[1], text="Prefers green tea in the morning")
        bank.add_many(_side_rows(20, 3, embedder.dim, "low"))
        _check_side(bank, embedder, now)
    with MemoryBank.open(bank_path, embedder=embedder) as bank:
        _check_side(bank, embedder, now)
        assert bank._indexes["low"].n == 319
