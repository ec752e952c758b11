"""Near-duplicate clustering and merge text (memory_core.curation.merge): pure logic, no bank.

Clustering runs on the real bundled model (the session ``embedder`` fixture); the LLM path runs
against the real stand-in HTTP server (``llm_server`` fixture, tests/llm_server.py).
"""

from __future__ import annotations

import hashlib
import itertools
import json
import random
import re
import time
import unicodedata
from datetime import datetime, timedelta, timezone

import numpy as np
import pytest

from memory_core import demo as demo_set
from memory_core.errors import LLMError, ValidationError
from memory_core.language.text import tokenize
from memory_core.language.llm import LLMClient, LLMConfig
from memory_core.curation import merge, merge_pairs
from memory_core.embedding.embedder import MINILM_MODEL, model_defaults
from memory_core.curation.merge import (
    MAX_MERGED_CHARS,
    Candidate,
    Cluster,
    MergePreview,
    extractive_merge,
    llm_groups,
    llm_merge_text,
    merged_fields,
    preview,
)

# These tests read MiniLM's cosines: its clusters, at its defaults.
DEFAULT_THRESHOLD = model_defaults(MINILM_MODEL).merge_threshold
DEFAULT_RELATED_THRESHOLD = model_defaults(MINILM_MODEL).related_threshold


def find_clusters(*args, **kwargs):
    return merge.find_clusters(*args, **{"model": MINILM_MODEL, **kwargs})


@pytest.fixture(scope="session")
def embedder():
    """all-MiniLM-L6-v2 rather than the default model: the cosines and merge thresholds these tests name were measured with it."""
    from memory_core.embedding.embedder import MINILM_MODEL, get_embedder

    return get_embedder(MINILM_MODEL)

T0 = datetime(2026, 3, 1, 9, 0, tzinfo=timezone.utc)

TEA = ["Prefers tea in the morning", "Likes a cup of tea every morning", "Drinks tea each morning"]
UNRELATED = [
    "Lives in Berlin",
    "Works as a nurse",
    "Has a dog named Rex",
    "Is allergic to peanuts",
    "Prefers short answers",
    "Wants to learn Spanish",
    "Runs four times a week",
    "Birthday is on 12 May",
]


def chash(text: str) -> str:
    """The store's content hash recipe (NFC, collapsed whitespace, SHA-256)."""
    norm = " ".join(unicodedata.normalize("NFC", text).split())
    return hashlib.sha256(norm.encode("utf-8")).hexdigest()


def make(texts, embedder, *, start_id: int = 1, **fields) -> list[Candidate]:
    """Candidates for ``texts`` with real embeddings; ids from ``start_id``."""
    vecs = embedder.encode(list(texts))
    out = []
    for k, (text, vec) in enumerate(zip(texts, vecs)):
        out.append(Candidate(
            id=start_id + k, text=text, content_hash=chash(text), vector=vec,
            importance=fields.get("importance", 0.5), created_at=T0 + timedelta(days=k),
            access_count=fields.get("access_count", 0), kind=fields.get("kind", "explicit"),
            category=fields.get("category", "preference"),
        ))
    return out


def cand(id: int, text: str = "x", *, vector=None, importance=0.5, created_at=T0, access_count=0,
         kind="explicit", category="preference", content_hash=None, use_count=0) -> Candidate:
    if vector is None:
        vector = np.zeros(8, dtype=np.float32)
        vector[id % 8] = 1.0
    return Candidate(id, text, content_hash if content_hash is not None else chash(text),
                     np.asarray(vector, dtype=np.float32), importance, created_at, access_count, kind, category,
                     use_count)


def cos(a: Candidate, b: Candidate) -> float:
    return float(np.dot(a.vector, b.vector))


def assert_well_formed(clusters: list[Cluster], by_id: dict[int, Candidate], threshold: float,
                       related: float | None = None, max_size: int = 6) -> None:
    """Invariants every result must satisfy: disjoint, sorted ids, size cap, all pairs above the bar."""
    seen: set[int] = set()
    for cl in clusters:
        assert list(cl.ids) == sorted(cl.ids)
        assert 2 <= len(cl.ids) <= max_size
        assert not seen & set(cl.ids), "a memory is in two clusters"
        seen |= set(cl.ids)
        pair_sims = [cos(by_id[a], by_id[b]) for a, b in itertools.combinations(cl.ids, 2)]
        if cl.reason == "exact duplicate":
            assert cl.min_similarity == 1.0
            assert len({by_id[i].content_hash for i in cl.ids}) == 1
        else:
            bar = threshold if cl.reason == "near duplicate" else related
            assert bar is not None
            assert min(pair_sims) >= bar - 1e-6
            assert cl.min_similarity == pytest.approx(min(pair_sims), abs=1e-5)


# --------------------------------------------------------------------------- clustering, real model


def test_paraphrase_cluster_found_and_unrelated_left_alone(embedder):
    cands = make(TEA + UNRELATED, embedder)
    by_id = {c.id: c for c in cands}
    # The three paraphrases sit at 0.84-0.86 with all-MiniLM-L6-v2: a cluster at 0.82.
    clusters = find_clusters(cands, threshold=0.82)
    assert [cl.ids for cl in clusters] == [(1, 2, 3)]
    assert clusters[0].reason == "near duplicate"
    assert 0.82 <= clusters[0].min_similarity < 1.0
    assert_well_formed(clusters, by_id, 0.82)


def test_unrelated_memories_are_never_clustered(embedder):
    cands = make(UNRELATED, embedder)
    assert find_clusters(cands) == []
    assert find_clusters(cands, threshold=0.8, related_threshold=0.6) == []


def test_default_threshold_clusters_rewordings(embedder):
    texts = ["Prefers tea in the morning", "Prefers to drink tea in the morning", "Prefers tea in the mornings",
             *UNRELATED]
    cands = make(texts, embedder)
    clusters = find_clusters(cands)
    assert [(cl.ids, cl.reason) for cl in clusters] == [((1, 2, 3), "near duplicate")]
    assert clusters[0].min_similarity >= DEFAULT_THRESHOLD


def test_chain_is_not_merged_into_one_cluster(embedder):
    a, b, c = make(["Drinks tea each morning", "Prefers to drink tea in the morning",
                    "Prefers coffee in the morning"], embedder)
    threshold = 0.76
    # The premise: A~B and B~C clear the threshold, A~C does not (single linkage would chain them).
    assert cos(a, b) >= threshold and cos(b, c) >= threshold and cos(a, c) < threshold
    clusters = find_clusters([c, a, b], threshold=threshold)
    assert [cl.ids for cl in clusters] == [(1, 2)]  # the strongest pair wins, C stays alone
    assert_well_formed(clusters, {x.id: x for x in (a, b, c)}, threshold)


def test_chain_with_constructed_vectors():
    # Unit vectors on a circle: consecutive ones at 0.9, two apart at cos(2θ) < 0.85.
    theta = np.arccos(0.9)
    vecs = [np.array([np.cos(k * theta), np.sin(k * theta)], dtype=np.float32) for k in range(5)]
    cands = [cand(k + 1, "same words here", vector=v, content_hash=f"h{k}") for k, v in enumerate(vecs)]
    clusters = find_clusters(cands, threshold=0.85)
    for cl in clusters:
        assert len(cl.ids) == 2, "a chain of five must split into pairs"
    assert_well_formed(clusters, {c.id: c for c in cands}, 0.85)
    # Deterministic tie-break: equal similarities go by id.
    assert [cl.ids for cl in clusters] == [(1, 2), (3, 4)]


def test_exact_duplicates_by_hash(embedder):
    texts = ["Prefers tea in the morning", "Prefers  tea in the morning ", "Prefers tea in the morning",
             "Lives in Berlin"]
    cands = make(texts, embedder)
    assert cands[0].content_hash == cands[1].content_hash == cands[2].content_hash
    clusters = find_clusters(cands)
    assert [(cl.ids, cl.reason, cl.min_similarity) for cl in clusters] == [((1, 2, 3), "exact duplicate", 1.0)]


def test_exact_duplicates_need_equal_hash_not_equal_vectors():
    # The hash decides: the vectors here are orthogonal, yet the texts are the same.
    a = cand(1, "Uses Neovim", vector=[1, 0, 0, 0], content_hash="same")
    b = cand(2, "Uses Neovim", vector=[0, 1, 0, 0], content_hash="same")
    c = cand(3, "Uses Neovim", vector=[0, 0, 1, 0], content_hash="")  # no hash: never an exact duplicate
    d = cand(4, "Uses Neovim", vector=[0, 0, 0, 1], content_hash="")
    clusters = find_clusters([a, b, c, d], threshold=0.99)
    assert [(cl.ids, cl.reason) for cl in clusters] == [((1, 2), "exact duplicate")]


def test_exact_duplicate_members_are_not_reused_in_near_clusters(embedder):
    texts = ["Prefers tea in the morning", "Prefers tea in the morning", "Prefers tea in the mornings"]
    clusters = find_clusters(make(texts, embedder))
    assert [(cl.ids, cl.reason) for cl in clusters] == [((1, 2), "exact duplicate")]


def test_max_size_splits_exact_duplicates_evenly():
    cands = [cand(i, "Uses Neovim", content_hash="same") for i in range(1, 8)]
    clusters = find_clusters(cands, max_size=3)
    assert [cl.ids for cl in clusters] == [(1, 2, 3), (4, 5), (6, 7)]
    assert all(cl.reason == "exact duplicate" for cl in clusters)


def test_max_size_caps_near_duplicate_clusters(embedder):
    texts = ["Prefers tea in the morning", "Prefers to drink tea in the morning", "Prefers tea in the mornings",
             "Prefers drinking tea in the morning", "Prefers a tea in the morning", "Likes tea in the morning best",
             "Prefers tea in the early morning"]
    cands = make(texts, embedder)
    by_id = {c.id: c for c in cands}
    uncapped = find_clusters(cands, threshold=0.85)
    capped = find_clusters(cands, threshold=0.85, max_size=3)
    assert max(len(cl.ids) for cl in uncapped) > 3  # the cap matters here
    assert capped and all(len(cl.ids) <= 3 for cl in capped)
    assert_well_formed(capped, by_id, 0.85, max_size=3)
    assert capped == find_clusters(list(reversed(cands)), threshold=0.85, max_size=3)


def test_clusters_are_deterministic_and_order_independent(embedder):
    texts = TEA + UNRELATED + ["Prefers to drink tea in the morning", "Has a peanut allergy",
                               "Works as a nurse at a hospital", "Is a nurse", "Lives in Berlin"]
    cands = make(texts, embedder)
    first = find_clusters(cands, threshold=0.8, related_threshold=0.7)
    assert first, "the fixture should produce some clusters"
    for seed in range(5):
        shuffled = cands[:]
        random.Random(seed).shuffle(shuffled)
        assert find_clusters(shuffled, threshold=0.8, related_threshold=0.7) == first
    # Ordered by reason, then similarity (best first), then ids.
    keys = [({"exact duplicate": 0, "near duplicate": 1, "same subject": 2}[cl.reason], -cl.min_similarity)
            for cl in first]
    assert keys == sorted(keys)
    assert_well_formed(first, {c.id: c for c in cands}, 0.8, related=0.7)


def test_related_threshold_adds_same_subject_clusters(embedder):
    texts = ["Is allergic to peanuts", "Has a peanut allergy", "Lives in Berlin", "Works as a nurse"]
    cands = make(texts, embedder)
    assert 0.7 <= cos(cands[0], cands[1]) < DEFAULT_THRESHOLD
    assert find_clusters(cands) == []  # only asked-for suggestions reach that low
    clusters = find_clusters(cands, related_threshold=DEFAULT_RELATED_THRESHOLD)
    assert [(cl.ids, cl.reason) for cl in clusters] == [((1, 2), "same subject")]
    assert DEFAULT_RELATED_THRESHOLD <= clusters[0].min_similarity < DEFAULT_THRESHOLD


def test_related_pass_uses_only_leftovers(embedder):
    texts = ["Prefers tea in the morning", "Prefers to drink tea in the morning",
             "Is allergic to peanuts", "Has a peanut allergy"]
    clusters = find_clusters(make(texts, embedder), related_threshold=0.7)
    assert [(cl.ids, cl.reason) for cl in clusters] == [((1, 2), "near duplicate"), ((3, 4), "same subject")]


def test_different_numbers_are_not_duplicates(embedder):
    a, b = make(["Starter plan allows 3 users", "Starter plan allows 5 users"], embedder)
    assert cos(a, b) > 0.9  # the model barely sees the difference
    assert find_clusters([a, b], threshold=0.7, related_threshold=0.5) == []
    # One side adding a detail is fine: its numbers contain the other's.
    c, d = make(["Plans to move to Berlin in 2026", "Plans to move to Berlin in March 2026"], embedder)
    assert [cl.ids for cl in find_clusters([c, d])] == [(c.id, d.id)]


def test_one_sided_negation_is_not_a_duplicate(embedder):
    a, b = make(["Likes spicy food", "Doesn't like spicy food"], embedder)
    assert cos(a, b) > 0.8
    assert find_clusters([a, b], threshold=0.8, related_threshold=0.5) == []


def test_crowd_of_near_identical_memories_stays_within_the_rules():
    # 100 copies of one templated note with jitter: every row has far more than the 32 neighbours
    # the graph keeps, which must not break the guarantees.
    rng = np.random.default_rng(3)
    base = rng.standard_normal(64).astype(np.float32)
    vecs = base + 0.02 * rng.standard_normal((100, 64)).astype(np.float32)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    cands = [cand(i + 1, "Checked the invoice queue", vector=v, content_hash=f"h{i}") for i, v in enumerate(vecs)]
    clusters = find_clusters(cands, max_size=6)
    assert sum(len(cl.ids) for cl in clusters) >= 90  # nearly everyone lands in some cluster
    assert_well_formed(clusters, {c.id: c for c in cands}, DEFAULT_THRESHOLD, max_size=6)
    assert clusters == find_clusters(cands[::-1], max_size=6)


def test_find_clusters_validates_input():
    a, b = cand(1), cand(2)
    with pytest.raises(ValidationError):
        find_clusters([a, b], threshold=0)
    with pytest.raises(ValidationError):
        find_clusters([a, b], threshold=1.5)
    with pytest.raises(ValidationError):
        find_clusters([a, b], threshold=float("nan"))
    with pytest.raises(ValidationError):
        find_clusters([a, b], threshold=0.8, related_threshold=0.9)
    with pytest.raises(ValidationError):
        find_clusters([a, b], max_size=1)
    with pytest.raises(ValidationError):
        find_clusters([a, cand(1)])
    with pytest.raises(ValidationError):
        find_clusters([a, cand(3, vector=np.zeros(4))])  # another dimension
    with pytest.raises(ValidationError):
        find_clusters([a, cand(3, vector=[np.nan] * 8)])
    with pytest.raises(ValidationError):
        find_clusters([a, "not a candidate"])
    assert find_clusters([]) == [] and find_clusters([a]) == []


@pytest.mark.slow
def test_twenty_thousand_memories_find_every_planted_pair():
    rng = np.random.default_rng(7)
    n, dim = 20_000, 384
    vecs = rng.standard_normal((n, dim)).astype(np.float32)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    planted = []
    for k in range(40):  # 40 near-duplicate pairs scattered over the bank
        i, j = int(rng.integers(n)), int(rng.integers(n))
        if i == j or {i, j} & {x for p in planted for x in p}:
            continue
        noisy = vecs[i] + 0.1 * rng.standard_normal(dim).astype(np.float32) / np.sqrt(dim)
        vecs[j] = noisy / np.linalg.norm(noisy)
        planted.append(tuple(sorted((i, j))))
    texts = [f"note about topic {i}" for i in range(n)]
    for i, j in planted:
        texts[j] = texts[i]  # same words, so the lexical checks agree
    cands = [Candidate(i, texts[i], f"h{i}", vecs[i], 0.5, T0, 0, "explicit", "fact") for i in range(n)]
    started = time.perf_counter()
    clusters = find_clusters(cands)
    elapsed = time.perf_counter() - started
    assert sorted(cl.ids for cl in clusters) == sorted(planted)
    print(f"\nfind_clusters on {n} memories: {elapsed:.1f} s")


def test_cluster_to_dict_is_json_ready():
    cl = Cluster((1, 2), "near duplicate", 0.912345678)
    assert json.loads(json.dumps(cl.to_dict())) == {
        "ids": [1, 2], "size": 2, "reason": "near duplicate", "min_similarity": 0.9123, "confidence": None,
        "detail": "",
    }
    sure = Cluster((1, 2), "near duplicate", 0.7, confidence=0.876543)
    assert json.loads(json.dumps(sure.to_dict()))["confidence"] == 0.8765


# --------------------------------------------------------------------------- extractive merge


def content(text: str) -> set[str]:
    return set(tokenize(text))


def assert_keeps_every_fact(texts: list[str], merged: str) -> None:
    """Every member is >= 80 % covered by the merge, and every number survives."""
    kept = content(merged)
    for t in texts:
        toks = content(t)
        if toks:
            assert len(toks & kept) / len(toks) >= 0.8, f"{t!r} is lost in {merged!r}"
        for number in ("".join(ch for ch in w if ch.isdigit()) for w in t.split()):
            if number:
                assert number in merged


def test_extractive_merge_keeps_distinct_facts():
    texts = ["Allergic to peanuts", "Has a mild peanut allergy; carries an EpiPen", "Allergic to peanuts since childhood"]
    merged = extractive_merge(texts)
    assert_keeps_every_fact(texts, merged)
    assert merged.startswith("Has a mild peanut allergy; carries an EpiPen")  # most informative first
    assert "since childhood" in merged
    assert merged.count("Allergic to peanuts") <= 1


def test_extractive_merge_drops_what_is_covered():
    texts = ["Prefers tea in the morning", "Prefers tea in the morning", "prefers TEA in the morning",
             "Prefers green tea in the morning with honey"]
    assert extractive_merge(texts) == "Prefers green tea in the morning with honey"


def test_extractive_merge_of_paraphrases_loses_nothing():
    merged = extractive_merge(TEA)
    assert_keeps_every_fact(TEA, merged)
    assert merged.count(";") == 2  # three different wordings: nothing to drop without an LLM


def test_extractive_merge_keeps_a_new_number_even_if_words_are_covered():
    texts = ["Goal: run 10 km under 55 minutes at Midnattsloppet in August 2026",
             "Goal: run 10 km under 50 minutes at Midnattsloppet"]
    merged = extractive_merge(texts)
    assert "55" in merged and "50" in merged


def test_extractive_merge_joins_sentences_as_sentences():
    merged = extractive_merge(["Drinks green tea with honey.", "Prefers tea in the morning."])
    assert merged == "Drinks green tea with honey. Prefers tea in the morning."
    merged = extractive_merge(["Drinks green tea with honey.", "Works as a nurse"])
    assert merged == "Drinks green tea with honey; Works as a nurse"


def test_extractive_merge_chinese():
    texts = ["每周三晚上打羽毛球", "周三晚上固定和室友打羽毛球", "喜欢打羽毛球，每周三晚上打"]
    merged = extractive_merge(texts)
    assert " " not in merged
    assert_keeps_every_fact(texts, merged)
    merged = extractive_merge(["喜欢喝茶", "早上喜欢喝绿茶", "住在杭州"])
    assert merged == "早上喜欢喝绿茶；住在杭州"  # 喜欢喝茶 is covered by 喜欢喝绿茶
    assert extractive_merge(["早上喜欢喝绿茶。", "住在杭州。"]) == "早上喜欢喝绿茶。住在杭州。"


def test_extractive_merge_swedish():
    texts = ["Dricker te på morgonen", "Föredrar te på morgonen", "Dricker te varje morgon med honung"]
    merged = extractive_merge(texts)
    assert_keeps_every_fact(texts, merged)
    assert "; " in merged and "å" in merged and "ö" in merged


def test_extractive_merge_validates():
    with pytest.raises(ValidationError):
        extractive_merge([])
    with pytest.raises(ValidationError):
        extractive_merge(["  ", ""])
    with pytest.raises(ValidationError):
        extractive_merge("Prefers tea")  # a string is not a list of texts
    with pytest.raises(ValidationError):
        extractive_merge(["Prefers tea", 3])
    assert extractive_merge(["  Prefers   tea ", ""]) == "Prefers tea"


# --------------------------------------------------------------------------- merged fields


def test_merged_fields_rules():
    members = [
        cand(1, importance=0.4, created_at=T0, access_count=2, kind="inferred", category="preference", use_count=1),
        cand(2, importance=0.9, created_at=T0 + timedelta(days=30), access_count=5, kind="explicit", category="fact",
             use_count=3),
        cand(3, importance=0.6, created_at=T0 + timedelta(days=3), access_count=0, kind="inferred", category="preference"),
    ]
    fields = merged_fields(members)
    assert fields == {
        "importance": 0.9,
        "created_at": T0 + timedelta(days=30),
        "access_count": 7,
        "use_count": 4,  # uses add up like retrievals: each was a use of the merged fact
        "kind": "explicit",
        "category": "preference",  # most common beats the most important member's
    }


def test_merged_fields_category_tie_goes_to_most_important_and_kind_stays_inferred():
    members = [
        cand(1, importance=0.3, kind="inferred", category="preference"),
        cand(2, importance=0.8, kind="inferred", category="goal"),
    ]
    fields = merged_fields(members)
    assert fields["category"] == "goal"
    assert fields["kind"] == "inferred"


def test_preview_without_llm_is_extractive(embedder):
    members = make(TEA, embedder, importance=0.5, access_count=1)
    result = preview(members)
    assert isinstance(result, MergePreview)
    assert result.path == "fallback" and "no LLM configured" in result.detail
    assert result.text == extractive_merge(TEA)
    assert result.ids == (1, 2, 3)
    assert result.access_count == 3 and result.created_at == T0 + timedelta(days=2)
    data = json.loads(json.dumps(result.to_dict()))
    assert data["ids"] == [1, 2, 3] and data["created_at"] == (T0 + timedelta(days=2)).isoformat()


def test_preview_validates():
    with pytest.raises(ValidationError):
        preview([cand(1)])
    with pytest.raises(ValidationError):
        preview([cand(1), cand(1)])
    with pytest.raises(ValidationError):
        preview([cand(1), "x"])


# --------------------------------------------------------------------------- LLM path


def client_for(server, **overrides) -> LLMClient:
    config = LLMConfig(base_url=server.base_url, model=server.model, timeout=overrides.pop("timeout", 5),
                       max_retries=overrides.pop("max_retries", 0))
    return LLMClient(config, backoff_base=0)


def test_llm_merge_good_reply(llm_server, embedder):
    llm_server.script({"text": "Drinks tea every morning"})
    members = make(TEA, embedder)
    result = preview(members, client_for(llm_server))
    assert result.path == "llm"
    assert result.text == "Drinks tea every morning"
    assert llm_server.model in result.detail
    sent = llm_server.chat_requests[0].messages
    prompt = "\n".join(m["content"] for m in sent)
    assert all(t in prompt for t in TEA)
    assert '"text"' in prompt  # the JSON shape was asked for


def test_llm_merge_broken_json_is_repaired(llm_server):
    llm_server.broken_json_once({"text": "Drinks tea every morning"})
    members = [cand(1, TEA[0]), cand(2, TEA[1])]
    result = preview(members, client_for(llm_server))
    assert result.path == "llm" and result.text == "Drinks tea every morning"
    assert len(llm_server.chat_requests) == 2


def test_llm_merge_empty_text_falls_back(llm_server):
    llm_server.script({"text": "   "})
    members = [cand(1, TEA[0]), cand(2, TEA[1])]
    result = preview(members, client_for(llm_server))
    assert result.path == "fallback"
    assert "empty" in result.detail
    assert result.text == extractive_merge([TEA[0], TEA[1]])


@pytest.mark.parametrize("reply, why", [
    ({"summary": "Drinks tea"}, "not"),
    (["Drinks tea"], "not"),
    ({"text": 42}, "not"),
    ({"text": "x" * (MAX_MERGED_CHARS + 1)}, "characters"),
    ({"text": "Runs a 10 km race"}, "55"),
])
def test_llm_merge_unusable_replies_raise(llm_server, reply, why):
    llm_server.script(reply)
    with pytest.raises(LLMError, match=why):
        llm_merge_text(["Runs 10 km under 55 minutes", "Goal: sub-55 10K"], client_for(llm_server))


def test_llm_merge_always_broken_json_falls_back(llm_server):
    llm_server.always_broken_json()
    result = preview([cand(1, TEA[0]), cand(2, TEA[2])], client_for(llm_server))
    assert result.path == "fallback" and "valid JSON" in result.detail


def test_llm_merge_server_down_falls_back():
    from llm_server import closed_port_url

    client = LLMClient(LLMConfig(base_url=closed_port_url(), model="m", timeout=2, max_retries=0))
    result = preview([cand(1, TEA[0]), cand(2, TEA[1])], client)
    assert result.path == "fallback"
    assert "LLM failed" in result.detail and "connect" in result.detail
    assert result.text == extractive_merge([TEA[0], TEA[1]])


# --------------------------------------------------------------------------- LLM grouping

MORNING = ["Not a morning person; struggles with 8 a.m. classes", "不喜欢早上八点的课", "Lives in Berlin",
           "Prefers tea in the morning", "早上起不来，最怕早八的课", "Works as a nurse"]


def listed(messages) -> dict[int, str]:
    """The memories a grouping request showed, as the model sees them: id -> text."""
    text = "\n".join(m["content"] for m in messages if m["role"] == "user")
    return {int(i): json.loads(t) for i, t in re.findall(r"^\[(\d+)\] (.*)$", text, flags=re.M)}


def group_by_marker(*markers):
    """A stand-in model that groups the memories whose text contains any word of one marker set."""
    def respond(messages):
        shown = listed(messages)
        groups = [[i for i, t in shown.items() if any(w in t for w in words)] for words in markers]
        return {"groups": [g for g in groups if len(g) > 1]}
    return respond


def test_llm_groups_finds_paraphrases_across_languages(llm_server, embedder):
    cands = make(MORNING, embedder)
    # The bundled English model cannot see these three as one fact; the judge can.
    assert max(cos(cands[0], cands[1]), cos(cands[0], cands[4])) < 0.3
    llm_server.respond_with(group_by_marker(("8 a.m.", "八")))
    groups = llm_groups(cands, client_for(llm_server))
    assert groups == [(1, 2, 5)]
    assert set(listed(llm_server.chat_requests[0].messages).values()) == set(MORNING)


def test_llm_groups_chunks_and_vetoes_different_numbers(llm_server, embedder):
    cands = make(["Ran 10 km on Sunday", "Ran 12 km on Sunday", "Prefers tea", "Likes tea", "Drinks tea"], embedder)
    llm_server.respond_with(group_by_marker(("km",), ("tea",)))
    groups = llm_groups(cands, client_for(llm_server), chunk_size=2)
    # chunks [1,2] [3,4] [5]: the runs are two events (numbers differ), the lone 5th is never sent
    assert groups == [(3, 4)]
    assert len(llm_server.chat_requests) == 2


@pytest.mark.parametrize("reply, why", [
    ({"groups": [[1, 99]]}, "not one of the memories"),
    ({"groups": [[1, 2], [2, 3]]}, "two groups"),
    ({"groups": "1,2"}, "not"),
    ({"clusters": [[1, 2]]}, "not"),
    ({"groups": [["tea", 2]]}, "not one of the memories"),
])
def test_llm_groups_refuses_invented_or_malformed_ids(llm_server, embedder, reply, why):
    llm_server.script(reply)
    with pytest.raises(LLMError, match=why):
        llm_groups(make(TEA, embedder), client_for(llm_server))


def test_llm_groups_accepts_ids_written_as_shown(llm_server, embedder):
    llm_server.script({"groups": [["[1]", "3"]]})
    assert llm_groups(make(TEA, embedder), client_for(llm_server)) == [(1, 3)]


# --------------------------------------------------------------------------- the demo set's planted truth


def _pairs(groups) -> set[tuple[int, int]]:
    return {tuple(sorted(p)) for g in groups for p in itertools.combinations(g, 2)}


@pytest.fixture(scope="module")
def demo(embedder):
    truth, rows = demo_set.truth(), demo_set.memories()
    vecs = embedder.encode([r["text"] for r in rows])
    by_ns: dict[str, list[Candidate]] = {}
    for line, (row, vec) in enumerate(zip(rows, vecs), start=1):  # id = 1-based line, as on import
        by_ns.setdefault(row["namespace"], []).append(Candidate(
            line, row["text"], chash(row["text"]), vec, row["importance"],
            datetime.fromisoformat(row["created_at"].replace("Z", "+00:00")), 0, row["kind"], row["category"],
        ))
    gold = _pairs(c["lines"] for c in truth["duplicate_clusters"])
    contradictions = {tuple(sorted((c["old_line"], c["new_line"]))) for c in truth["contradictions"]}
    return by_ns, gold, contradictions


def _measure(demo, **kwargs) -> dict:
    by_ns, gold, contradictions = demo
    clusters = [cl for cands in by_ns.values() for cl in find_clusters(cands, **kwargs)]
    predicted = _pairs(cl.ids for cl in clusters)
    hits = len(predicted & gold)
    return {
        "clusters": len(clusters),
        "pairs": len(predicted),
        "precision": hits / len(predicted) if predicted else 1.0,
        "recall": hits / len(gold),
        "found": hits,
        "gold": len(gold),
        "contradictions": sorted(predicted & contradictions),
    }


@pytest.mark.slow
def test_demo_set_precision_recall_at_default(demo):
    m = _measure(demo)
    print(f"\ndemo set, threshold {DEFAULT_THRESHOLD}: {m['clusters']} clusters, {m['pairs']} pairs, "
          f"precision {m['precision']:.2f}, recall {m['recall']:.3f} ({m['found']}/{m['gold']} planted pairs), "
          f"contradiction pairs merged: {len(m['contradictions'])}")
    # Measured with all-MiniLM-L6-v2: precision 0.40, recall 0.022 (2 of 93). The model rates the
    # planted paraphrases far apart (median pair ~0.6): the default is for near-verbatim repeats.
    assert m["precision"] >= 0.3
    assert m["found"] >= 2
    assert m["contradictions"] == [], "a planted contradiction would be merged silently"


@pytest.mark.slow
def test_demo_set_related_pass(demo):
    m = _measure(demo, related_threshold=DEFAULT_RELATED_THRESHOLD)
    print(f"\ndemo set, threshold {DEFAULT_THRESHOLD} + related {DEFAULT_RELATED_THRESHOLD}: {m['clusters']} clusters, {m['pairs']} pairs, "
          f"precision {m['precision']:.2f}, recall {m['recall']:.3f} ({m['found']}/{m['gold']}), "
          f"contradiction pairs inside suggestions: {len(m['contradictions'])}")
    # Measured at 0.60 with mutual nearest neighbours: precision 0.24, recall 0.23 (21/93), 8 of
    # 45 contradictions inside a "same subject" suggestion (0.70 without the mutual rule: 0.19 /
    # 0.13 / 4). Here conflict detection has not run; plan_merges keeps memories in open conflicts
    # out, and test_detection_quality checks that no planted contradiction is then planned.
    assert m["recall"] >= 0.18
    assert m["precision"] >= 0.18
    assert len(m["contradictions"]) <= 10


@pytest.mark.slow
def test_demo_set_thresholds_trade_precision_for_recall(demo):
    lower, default = _measure(demo, threshold=0.75), _measure(demo)
    assert lower["recall"] > default["recall"]
    assert lower["contradictions"], "below the default, contradictions start to be merged"


@pytest.mark.parametrize("a, b", [
    ("Is considering a trip to Peru", "Booked flights to Peru"),
    ("Funderar på att köpa en segelbåt", "Köpte en segelbåt"),
    ("打算养一只猫", "养了一只猫"),
    ("Runs every morning", "Quit running every morning"),
    ("Wants to learn the cello", "Takes cello lessons on Mondays"),   # a wish, then its step
    ("Is painting the hallway", "Painted the hallway"),               # in progress, then done
    ("Håller på att renovera badrummet", "Renoverade badrummet"),
    ("Vill lära sig åka skidor", "Lärde sig åka skidor i vintras"),
    ("想学滑雪", "上周学会了滑雪"),
    ("正在装修卧室", "卧室装修好了"),
    ("目标是减重五公斤", "减重五公斤了"),
    ("Is expecting a child, due in March", "Had a son in March"),     # an expectation, then its outcome
    ("Has applied for a mortgage", "Got the mortgage"),
    ("Väntar på besked om lägenheten", "Fick lägenheten"),
    ("Är gravid, beräknad i mars", "Fick en son i mars"),
    ("怀孕了，预产期在三月", "三月生了一个儿子"),
    ("Drinks tea", "Drinks coffee instead of tea"),                   # "instead of" what the other names
])
def test_a_subject_that_moved_on_is_not_merged(a: str, b: str) -> None:
    # Identical vectors: only the wording can tell a step forward from a paraphrase.
    vector = np.ones(8, dtype=np.float32) / np.sqrt(8)
    pair = [cand(1, a, vector=vector), cand(2, b, vector=vector)]
    assert find_clusters(pair, threshold=0.9) == []
    same = [cand(1, a, vector=vector), cand(2, a + ".", vector=vector)]
    assert [sorted(c.ids) for c in find_clusters(same, threshold=0.9)] == [[1, 2]]


@pytest.mark.parametrize("a, b", [
    ("Takes the tram to work", "Goes to work by tram instead of by car"),   # a standing choice, not a switch
    ("Reser med tåg", "Tar tåget istället för flyget"),
    ("Prefers films with subtitles", "Wants films shown with subtitles"),     # a want beside a preference
    ("Föredrar mejl framför telefon", "Vill bli kontaktad via mejl"),
    ("喜欢安静的餐厅", "希望去安静的餐厅"),
])
def test_a_preference_told_two_ways_is_not_vetoed(a: str, b: str) -> None:
    from memory_core.curation.conflicts.subject import moved_on

    assert not moved_on(a, b) and not moved_on(b, a)


# --------------------------------------------------------------------------- the default: the pair classifier

# One namespace per language as an agent fills it: unrelated facts, one fact stored twice in other
# words, a plan and its next step, two events of one kind. Not from the curation set or the demo set.
NAMESPACES = {
    "en": (["Lives in Lisbon", "Works as a nurse", "Has two cats", "Plays the cello", "Speaks Portuguese and English",
            "Drives an old Volvo", "Reads crime novels before bed", "Takes the train to work",
            "Grows tomatoes on the balcony", "Supports Benfica", "Born in Porto", "Studies Japanese on Duolingo"],
           ("Prefers tea to coffee", "Prefers tea over coffee"),
           ("Is thinking about adopting a dog", "Adopted a dog from the shelter"),
           ("Went to a jazz concert in March", "Went to a jazz concert in October")),
    "sv": (["Bor i Lissabon", "Jobbar som sjuksköterska", "Har två katter", "Spelar cello",
            "Talar portugisiska och engelska", "Kör en gammal Volvo", "Läser deckare innan hon somnar",
            "Tar tåget till jobbet", "Odlar tomater på balkongen", "Håller på Benfica", "Född i Porto",
            "Pluggar japanska på Duolingo"],
           ("Föredrar te framför kaffe", "Föredrar te före kaffe"),
           ("Funderar på att skaffa en hund", "Har adopterat en hund från ett härbärge"),
           ("Var på en jazzkonsert i mars", "Var på en jazzkonsert i oktober")),
    "zh": (["住在里斯本", "是一名护士", "养了两只猫", "会拉大提琴", "会说葡萄牙语和英语", "开一辆旧沃尔沃", "睡前看推理小说",
            "坐火车上班", "在阳台上种番茄", "支持本菲卡队", "出生在波尔图", "在多邻国上学日语"],
           ("喜欢喝茶", "比较喜欢喝茶"),
           ("在考虑养一只狗", "从收容所领养了一只狗"),
           ("三月份去听了一场爵士音乐会", "十月份又去听了一场爵士音乐会")),
}


@pytest.fixture(scope="module")
def e5():
    from memory_core.embedding.embedder import get_embedder

    return get_embedder()  # the default model, the one the classifier was fitted on


@pytest.mark.parametrize("lang", sorted(NAMESPACES))
def test_default_plan_offers_a_paraphrase_not_a_progression_or_two_events(e5, lang: str) -> None:
    others, paraphrase, progression, events = NAMESPACES[lang]
    cands = make([*others, *paraphrase, *progression, *events], e5)
    by_text = {c.text: c.id for c in cands}
    clusters = merge.find_clusters(cands)  # the default model, no threshold: the classifier
    assert [cl.ids for cl in clusters] == [tuple(by_text[t] for t in paraphrase)]
    (cluster,) = clusters
    assert cluster.reason == "near duplicate"
    assert cluster.confidence is not None and cluster.confidence >= merge_pairs.scorer(None).bar
    # The same memories planned one namespace per pair: still only the paraphrase.
    for pair, offered in ((paraphrase, True), (progression, False), (events, False)):
        alone = make([*others, *pair], e5)
        assert bool(merge.find_clusters(alone)) is offered, pair


def test_a_translation_is_a_candidate_though_its_language_crowds_the_nearest() -> None:
    # Row 0 (Swedish) is closest to row 1 (Swedish, another fact); its English twin, row 2, comes
    # second overall but first among the English rows, and row 0 is row 2's nearest Swedish row.
    mat = np.array([[1.0, 0.0, 0.0], [0.95, 0.31, 0.0], [0.9, 0.0, 0.44], [0.0, 0.0, 1.0]], dtype=np.float32)
    mat /= np.linalg.norm(mat, axis=1, keepdims=True)
    alone, _ = merge_pairs.neighbour_pairs(mat, 1)
    by_language, best = merge_pairs.neighbour_pairs(mat, 1, ["sv", "sv", "en", "en"])
    assert (0, 2) not in alone and alone[(0, 1)] == 0
    assert by_language[(0, 2)] == 0 and by_language[(0, 1)] == 0
    assert best.shape == (4, 2)  # each row's nearest cosine per language, for the margin


def test_a_plan_works_without_the_paraphrase_model(e5, monkeypatch) -> None:
    monkeypatch.setenv(merge_pairs.PARAPHRASE_ENV, "0")
    assert merge_pairs.paraphrase_encoder() is None
    others, paraphrase, _progression, _events = NAMESPACES["en"]
    cands = make([*others, *paraphrase], e5)
    clusters = merge.find_clusters(cands)
    assert all(cl.confidence is not None for cl in clusters)


def test_the_classifier_is_fitted_for_the_default_model_only() -> None:
    from memory_core.embedding.embedder import DEFAULT_MODEL, MINILM_MODEL

    fitted = merge_pairs.scorer(DEFAULT_MODEL)
    assert fitted is not None and 0.5 <= fitted.bar < 1.0
    assert fitted.bar <= fitted.auto_bar < 1.0  # a run merges unattended only what the page would offer
    assert merge_pairs.scorer(MINILM_MODEL) is None  # other models' banks keep the cosine bar


@pytest.mark.parametrize("a, b", [
    ("一月份去看了牙医", "八月份去看了牙医"),
    ("每周一打网球", "每周四打网球"),
    ("Visited grandma at Christmas", "Visited grandma at Easter"),
    ("Hälsade på mormor i julas", "Hälsade på mormor i påskas"),
])
def test_different_months_weekdays_or_holidays_are_two_events(a: str, b: str) -> None:
    vector = np.ones(8, dtype=np.float32) / np.sqrt(8)
    pair = [cand(1, a, vector=vector), cand(2, b, vector=vector)]
    assert find_clusters(pair, threshold=0.9) == []
    same = [cand(1, a, vector=vector), cand(2, a + "!", vector=vector)]
    assert [cl.ids for cl in find_clusters(same, threshold=0.9)] == [(1, 2)]


@pytest.mark.parametrize("a, b", [
    ("Spelar fotboll varje lördag", "Plays football every Saturday"),
    ("Dansar tango på fredagar", "Goes tango dancing on Fridays"),
    ("Flyttar i maj", "Moves in May"),
    ("Flyttar i oktober", "每年十月搬家"),
])
def test_one_weekday_or_month_in_two_languages_is_one_value(a: str, b: str) -> None:
    # A translation must not look like two events: a Swedish day or month name reads as its English twin.
    assert merge._numbers(a) == merge._numbers(b) != set()
    assert merge._numbers("Äter majs") == set()  # maize is no month



def test_a_maintenance_run_merges_unattended_only_above_the_automatic_bar(tmp_path) -> None:
    from memory_core import MemoryBank
    from memory_core.curation import maintenance

    fitted = merge_pairs.scorer(None)
    texts = [t for lang in NAMESPACES.values() for t in [*lang[0], *lang[1]]]
    texts += ["Prefers tea to coffee in the morning", "Likes tea more than coffee", "Has a cat named Mochi",
              "Owns a cat called Mochi", "Cycles to work every day", "Bikes to the office daily"]
    long_ago = datetime(2025, 1, 1, tzinfo=timezone.utc)
    with MemoryBank.open(tmp_path / "b.duckdb") as bank:  # the default model
        bank.add_many([{"text": t, "namespace": "u", "created_at": long_ago} for t in texts])
        offered = [cl for cl, _preview in bank.plan_merges("u")]
        assert offered and any(cl.confidence is not None for cl in offered)
        work = maintenance.plan_run(bank, now=long_ago + timedelta(days=400), steps=["merge"])
        planned = {tuple(m.ids) for m in work.merges}
    unattended = {cl.ids for cl in offered if cl.confidence is None or cl.confidence >= fitted.auto_bar}
    assert planned == unattended
    assert unattended and len(unattended) < len(offered)  # some merged unattended, some left to an operator
    for confidence, merged in ((None, True), (fitted.auto_bar, True), (fitted.auto_bar - 0.01, False)):
        cluster = Cluster((1, 2), "near duplicate", 0.9, confidence=confidence)
        assert maintenance._merges_unattended(cluster, None, None) is merged
