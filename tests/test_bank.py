"""MemoryBank: writing, reading, changing, recall semantics, presets, history and bad input."""

from __future__ import annotations

import math
from datetime import datetime, timedelta, timezone

import duckdb
import numpy as np
import pytest

import stores

from memory_core import (
    BankReadOnlyError, CorruptBankError, MemoryBank, ModelMismatchError, NotFoundError, ScoringParams,
    StateError, ValidationError, format_for_prompt,
)

NOW = datetime(2026, 11, 30, 12, 0, tzinfo=timezone.utc)


@pytest.fixture
def alice(bank: MemoryBank) -> dict[str, int]:
    """A small realistic namespace with old and new facts."""
    rows = [
        ("Prefers vegetarian food", "preference", 0.8, 200),
        ("Lives in Paris", "profile", 0.6, 400),
        ("Moved to Berlin in August", "profile", 0.7, 110),
        ("Training for the Stockholm half marathon in May", "goal", 0.7, 60),
        ("Decided to use PostgreSQL for the side project", "decision", 0.6, 20),
        ("Has a cold this week", "other", 0.1, 300),
        ("Finds maths hard", "difficulty", 0.4, 3),
    ]
    ids = bank.add_many([{"text": t, "namespace": "alice", "category": c, "importance": i,
                          "created_at": NOW - timedelta(days=d)} for t, c, i, d in rows])
    bank.add("Works night shifts at the hospital", namespace="bob", created_at=NOW - timedelta(days=5))
    return dict(zip([r[0] for r in rows], ids))


def test_three_line_quick_start(bank_path, embedder):
    """The library's quick start (docs/library.md): open, add, recall."""
    with MemoryBank.open(bank_path) as bank:
        bank.add("Prefers vegetarian food", namespace="alice", importance=0.8, category="preference")
        hits = bank.recall("does she eat meat? vegetarian food", namespace="alice")
    assert [h.memory.text for h in hits] == ["Prefers vegetarian food"]
    assert set(hits[0].components) >= {"similarity", "lexical", "recency", "importance", "frequency"}


def test_add_get_fields_and_event(bank: MemoryBank):
    created = datetime(2025, 3, 12, 8, 30, tzinfo=timezone.utc)
    mid = bank.add("Prefers tea in the morning", namespace="alice", importance=0.7, kind="inferred",
                   category="preference", created_at=created, source="chat")
    m = bank.get(mid)
    assert (m.text, m.namespace, m.kind, m.category, m.importance, m.status, m.source) == (
        "Prefers tea in the morning", "alice", "inferred", "preference", 0.7, "active", "chat")
    assert m.created_at == created and m.access_count == 0 and m.last_accessed_at is None
    assert m.embedding_model == bank.model and len(m.content_hash) == 64
    (event,) = bank.history(mid)
    assert event.action == "add" and event.actor == "api" and event.after["text"] == m.text


def test_recall_ranks_relevant_first_and_respects_namespace(bank, alice):
    hits = bank.recall("where does she live now? Berlin", namespace="alice", now=NOW, record=False)
    assert hits and hits[0].memory.text == "Moved to Berlin in August"
    assert all(h.memory.namespace == "alice" for h in hits)
    assert bank.recall("night shifts at the hospital", namespace="alice", now=NOW, record=False) == [] or all(
        "hospital" not in h.memory.text for h in bank.recall("night shifts at the hospital", namespace="alice",
                                                              now=NOW, record=False))


def test_irrelevant_query_returns_nothing(bank, alice):
    """An irrelevant memory is worse than none: the threshold leaves the result empty."""
    assert bank.recall("what is the boiling point of tungsten?", namespace="alice", now=NOW, record=False) == []
    assert bank.recall("anything", namespace="nobody-here", now=NOW) == []


def test_k_and_threshold_bound_the_result(bank, alice):
    # Threshold 0 and no relevance floor: every memory, however unrelated (the default's floor would
    # keep those with no relevance of their own out).
    everything = bank.recall("food city sport", namespace="alice", now=NOW, params=ScoringParams(min_relevance=0),
                             k=100, threshold=0.0, record=False)
    assert len(everything) == 7
    assert [h.score for h in everything] == sorted((h.score for h in everything), reverse=True)
    assert [h.rank for h in everything] == list(range(1, 8))
    top2 = bank.recall("food city sport", namespace="alice", now=NOW, params=ScoringParams(min_relevance=0), k=2,
                       threshold=0.0, record=False)
    assert [h.memory.id for h in top2] == [h.memory.id for h in everything[:2]]
    cut = everything[3].score
    above = bank.recall("food city sport", namespace="alice", now=NOW, params=ScoringParams(min_relevance=0), k=100,
                        threshold=cut, record=False)
    assert all(h.score >= cut for h in above) and len(above) == 4


def test_record_true_counts_access_and_logs(bank, alice):
    hits = bank.recall("vegetarian food", namespace="alice", now=NOW)
    assert hits
    m = bank.get(hits[0].memory.id)
    assert m.access_count == 1 and m.last_accessed_at == NOW
    (log,) = bank.retrievals(namespace="alice")
    assert log["query"] == "vegetarian food" and log["n_results"] == len(hits) and log["recalled"]
    assert log["params"]["alpha"] == ScoringParams().alpha and log["latency_ms"] > 0
    first = log["hits"][0]
    assert first["memory_id"] == hits[0].memory.id and first["rank"] == 1
    assert first["score"] == pytest.approx(hits[0].score)
    assert first["similarity"] == pytest.approx(hits[0].components["similarity"])


def test_record_false_changes_nothing(bank, alice):
    before = {m.id: (m.access_count, m.last_accessed_at) for m in bank.memories(status=None, limit=None)}
    seq = bank.stats()["change_seq"]
    bank.recall("vegetarian food", namespace="alice", now=NOW, record=False)
    after = {m.id: (m.access_count, m.last_accessed_at) for m in bank.memories(status=None, limit=None)}
    assert before == after and bank.retrievals() == [] and bank.stats()["change_seq"] == seq


def test_as_of_recall_does_not_see_the_future(bank, alice):
    then = NOW - timedelta(days=150)  # before the move to Berlin
    texts = [h.memory.text for h in bank.recall("where do I live", namespace="alice", now=then,
                                                  threshold=0, k=10, record=False)]
    assert "Lives in Paris" in texts and "Moved to Berlin in August" not in texts


def test_recency_and_importance_move_the_ranking(bank):
    old = bank.add("Likes jazz music", namespace="n", importance=0.5, created_at=NOW - timedelta(days=300))
    new = bank.add("Likes jazz music a lot", namespace="n", importance=0.5, created_at=NOW - timedelta(days=1))
    recency_only = ScoringParams(alpha=0.01, beta=1, gamma=0, delta=0, threshold=0)
    assert bank.recall("jazz", namespace="n", params=recency_only, now=NOW, record=False)[0].memory.id == new
    bank.update(old, importance=1.0)
    bank.update(new, importance=0.0)
    importance_only = ScoringParams(alpha=0.01, beta=0, gamma=1, delta=0, threshold=0)
    assert bank.recall("jazz", namespace="n", params=importance_only, now=NOW, record=False)[0].memory.id == old


def test_forgotten_merged_superseded_are_never_recalled(bank, alice):
    mid = alice["Prefers vegetarian food"]
    bank.forget(mid)
    assert mid not in [h.memory.id for h in bank.recall("vegetarian food", namespace="alice", now=NOW,
                                                         threshold=0, k=100, record=False)]
    assert bank.get(mid).status == "archived"
    bank.restore(mid)
    assert mid in [h.memory.id for h in bank.recall("vegetarian food", namespace="alice", now=NOW, record=False)]
    for status in ("merged", "superseded"):
        other = bank.add_many([{"text": f"Eats only {status} vegetables", "namespace": "alice", "status": status}])[0]
        assert other not in [h.memory.id for h in bank.recall("vegetables", namespace="alice", threshold=0,
                                                               k=100, record=False)]


def test_update_reembeds_and_undo_restores(bank, alice):
    mid = alice["Prefers vegetarian food"]
    bank.update(mid, text="Eats everything, loves steak", importance=0.9)
    hits = bank.recall("steak", namespace="alice", now=NOW, record=False)
    assert hits[0].memory.id == mid and hits[0].memory.text == "Eats everything, loves steak"
    update = bank.history(mid)[-1]
    assert update.action == "update"
    assert {k: update.before[k] for k in ("text", "importance")} == {"text": "Prefers vegetarian food", "importance": 0.8}
    bank.undo(update.id)
    m = bank.get(mid)
    assert (m.text, m.importance) == ("Prefers vegetarian food", 0.8)
    assert bank.recall("vegetarian food", namespace="alice", now=NOW, record=False)[0].memory.id == mid


def test_hard_delete_erases_text_from_file_and_history(bank, bank_path):
    secret = "Secret hobby: collects vintage typewriters zq7x"
    mid = bank.add(secret, namespace="alice")
    bank.update(mid, importance=0.9)
    bank.forget(mid, hard=True)
    m = bank.get(mid)
    assert m.text is None and m.status == "deleted" and len(m.content_hash) == 64
    assert all("typewriters" not in str(e.before) + str(e.after) for e in bank.history(mid))
    assert bank.recall("vintage typewriters", namespace="alice", threshold=0, record=False) == []
    with pytest.raises(StateError):
        bank.undo(bank.history(mid)[-1].id)
    with pytest.raises(StateError):
        bank.restore(mid)
    bank.close()
    held = stores.relations_holding(bank_path, [b"zq7x"])  # the file and its WAL, or the table files
    assert held == [], f"erased text is still in a file: {held}\n{stores.pg_horizons(bank_path)}"


def test_format_for_prompt(bank, alice):
    hits = bank.recall("Berlin", namespace="alice", now=NOW, record=False)
    text = format_for_prompt(hits, now=NOW)
    assert text.startswith("Relevant memories:")
    assert "3 months ago" in text and "Moved to Berlin in August" in text
    assert f"relevance {hits[0].score:.2f}" in text
    assert format_for_prompt([], now=NOW) == ""


def test_gate_skips_recall_and_logs_the_decision(bank, alice):
    assert bank.recall("What is the capital of France?", namespace="alice", gate=True, now=NOW) == []
    hits = bank.recall("what did I say last time about vegetarian food?", namespace="alice", gate=True, now=NOW)
    assert hits
    logs = bank.retrievals(namespace="alice")
    assert logs[1]["recalled"] is False and logs[1]["gate"]["recall"] is False and logs[1]["gate"]["reason"]
    assert logs[0]["recalled"] is True and logs[0]["gate"]["rule"]
    assert bank.should_recall("remember last time?").recall


def test_presets_save_activate_and_event(bank, alice):
    assert set(bank.presets()) >= {"default", "generative-agents", "weighted-recall"}
    assert bank.active_preset() == ("default", ScoringParams())
    strict = ScoringParams().replace(threshold=0.99)
    bank.save_preset("strict", strict, description="only sure things")
    bank.set_active_preset("strict")
    assert bank.active_preset() == ("strict", strict)
    assert bank.recall("vegetarian food", namespace="alice", now=NOW) == []
    assert bank.recall("vegetarian food", namespace="alice", params="weighted-recall", now=NOW)
    assert [e.action for e in bank.events(limit=2)] == ["set_active_preset", "save_preset"]
    with pytest.raises(ValidationError):
        bank.save_preset("default", strict)
    with pytest.raises(NotFoundError):
        bank.set_active_preset("nope")


def test_preset_values_match_design():
    ga = ScoringParams.preset("generative-agents")
    assert (ga.alpha, ga.beta, ga.gamma, ga.delta, ga.half_life_days, ga.k, ga.threshold) == (0.6, 0.2, 0.2, 0, 30, 3, 0.45)
    wr = ScoringParams.preset("weighted-recall")
    assert (wr.alpha, wr.beta, wr.gamma, wr.delta, wr.k, wr.threshold, wr.decay) == (0.5, 0.2, 0.2, 0.1, 5, 0, "linear")


def test_every_builtin_preset_is_on_the_banks_models_scale(bank, alice):
    """The presets' thresholds were set on MiniLM's cosines; a bank of another model gets its own
    (embed's MODEL_DEFAULTS), and a recall naming the preset uses them."""
    from memory_core.embedding.embedder import model_defaults

    defaults = model_defaults(bank.model)
    presets = bank.presets()
    for name in ("generative-agents", "weighted-recall"):
        assert presets[name] == ScoringParams.preset(name).replace(**defaults.presets.get(name, {}))
    assert presets["generative-agents"].threshold == 0.43 < ScoringParams.preset("generative-agents").threshold
    hits = bank.recall("vegetarian food", namespace="alice", params="generative-agents", now=NOW, record=False)
    low = bank.recall("vegetarian food", namespace="alice", params=presets["generative-agents"], now=NOW, record=False)
    assert [h.memory.id for h in hits] == [h.memory.id for h in low]


def test_a_saved_preset_is_flagged_once_the_banks_model_changes(bank_path, embedder):
    from memory_core.embedding.embedder import MINILM_MODEL

    with MemoryBank.open(bank_path, embedder=embedder) as bank:
        bank.add("Prefers window seats on trains", namespace="alice")
        bank.save_preset("mine", ScoringParams().replace(threshold=0.3))
        assert bank.presets_from_other_models() == {}
        model = bank.model
        bank.reembed(MINILM_MODEL)
        assert bank.presets_from_other_models() == {"mine": model}
        bank.save_preset("mine", ScoringParams().replace(threshold=0.4))  # set again on the new model
        assert bank.presets_from_other_models() == {}


def test_a_parameter_added_since_a_preset_was_saved_takes_the_models_default(bank, alice):
    """A preset saved before a parameter existed reads it at the bank's model's calibrated value,
    as the default preset does, not at the reference scale's."""
    import json

    bank.save_preset("older", ScoringParams().replace(threshold=0.3))
    older = ScoringParams().replace(threshold=0.3).to_dict()
    del older["lexical_below_floor"]  # as saved before the parameter existed
    with bank._core.session() as con:
        con.execute("UPDATE presets SET params = ? WHERE name = 'older'", [json.dumps(older)])
    bank.set_active_preset("older")
    model_value = bank.presets()["default"].lexical_below_floor
    assert bank.presets()["older"].lexical_below_floor == model_value
    assert bank.active_preset()[1].lexical_below_floor == model_value
    assert bank.presets()["older"].threshold == 0.3


def test_reopen_keeps_everything(bank_path, embedder):
    with MemoryBank.open(bank_path, embedder=embedder) as bank:
        mid = bank.add("Has a dog called Pixel", namespace="alice")
        bank.recall("dog", namespace="alice")
    with MemoryBank.open(bank_path, embedder=embedder) as bank:
        assert bank.get(mid).access_count == 1
        assert bank.recall("my dog Pixel", namespace="alice", record=False)[0].memory.id == mid


# -- bad input: a clear typed error, nothing changed ------------------------------------------------

BAD_ADDS = [
    ({"text": ""}, "empty"),
    ({"text": "   "}, "empty"),
    ({"text": 42}, "string"),
    ({"text": "x", "importance": 1.5}, "between 0 and 1"),
    ({"text": "x", "importance": -0.1}, "between 0 and 1"),
    ({"text": "x", "importance": math.nan}, "between 0 and 1"),
    ({"text": "x", "importance": "high"}, "number"),
    ({"text": "x", "kind": "guess"}, "kind"),
    ({"text": "x", "category": "misc"}, "category"),
    ({"text": "x", "namespace": ""}, "namespace"),
    ({"text": "x", "created_at": "last tuesday"}, "ISO 8601"),
    ({"text": "x", "embedding": [0.1, 0.2]}, "embedding"),
    ({"text": "x", "embedding": [math.nan] * 384}, "embedding"),
    ({"text": "x", "colour": "red"}, "unknown field"),
]


@pytest.mark.parametrize("row,message", BAD_ADDS)
def test_bad_add_is_refused_and_changes_nothing(bank, alice, row, message):
    count, seq = bank.count(status=None), bank.stats()["change_seq"]
    with pytest.raises(ValidationError, match=message):
        bank.add_many([{"text": "A good row first"}, row])
    assert bank.count(status=None) == count and bank.stats()["change_seq"] == seq


@pytest.mark.parametrize("changes", [
    {"importance": 2}, {"text": ""}, {"status": "active"}, {"category": "x"}, {},
])
def test_bad_update_is_refused(bank, alice, changes):
    mid = alice["Lives in Paris"]
    with pytest.raises(ValidationError):
        bank.update(mid, **changes)
    assert bank.get(mid).text == "Lives in Paris" and len(bank.history(mid)) == 1


@pytest.mark.parametrize("field,value", [
    ("alpha", -1), ("beta", math.nan), ("gamma", math.inf), ("k", 0), ("k", 2.5), ("threshold", -0.1),
    ("decay", "cubic"), ("recency_from", "birth"), ("lexical_weight", 1.5), ("half_life_days", 0),
    ("similarity_floor", 0.9),
])
def test_bad_params_are_refused(field, value):
    with pytest.raises(ValidationError, match=field if field != "similarity_floor" else "similarity"):
        ScoringParams().replace(**{field: value})


def test_all_zero_weights_are_refused():
    with pytest.raises(ValidationError, match="at least one"):
        ScoringParams(alpha=0, beta=0, gamma=0, delta=0)


def test_unknown_ids_and_states(bank, alice):
    with pytest.raises(NotFoundError, match="12345"):
        bank.get(12345)
    with pytest.raises(NotFoundError):
        bank.forget(12345)
    with pytest.raises(ValidationError):
        bank.get("1")
    with pytest.raises(StateError, match="needs it to be archived"):
        bank.restore(alice["Lives in Paris"])
    with pytest.raises(ValidationError):
        bank.recall("", namespace="alice")
    with pytest.raises(ValidationError):
        bank.recall("ok", namespace="alice", now="yesterday-ish")


def test_bank_built_with_another_model_is_refused(bank_path, embedder):
    with MemoryBank.open(bank_path, embedder=embedder) as bank:
        bank.add("Prefers tea")
    with pytest.raises(ModelMismatchError, match="memctl .*reembed"):
        MemoryBank.open(bank_path, model="some-org/another-model")
    with MemoryBank.open(bank_path, embedder=embedder) as bank:
        with pytest.raises(ModelMismatchError):
            bank.add_many([{"text": "x", "embedding": [0.1] * 384, "embedding_model": "other/model"}])


def test_corrupt_and_foreign_files_give_clear_errors(tmp_path):
    garbage = tmp_path / "garbage.duckdb"
    garbage.write_bytes(b"this is not a database" * 1000)
    with pytest.raises(CorruptBankError, match="garbage.duckdb.*backup"):
        MemoryBank.open(garbage)
    foreign = tmp_path / "foreign.duckdb"
    con = duckdb.connect(str(foreign))
    con.execute("CREATE TABLE invoices (id INT)")
    con.close()
    with pytest.raises(CorruptBankError, match="not a Memory Console bank"):
        MemoryBank.open(foreign)
    with pytest.raises(ValidationError, match="folder"):
        MemoryBank.open(tmp_path)


def test_read_only_open_reads_but_does_not_write(bank_path, embedder):
    with MemoryBank.open(bank_path, embedder=embedder) as bank:
        mid = bank.add("Has a dog called Pixel", namespace="alice")
    with MemoryBank.open(bank_path, read_only=True, embedder=embedder) as ro:
        assert ro.get(mid).text == "Has a dog called Pixel"
        assert ro.recall("dog", namespace="alice", record=False)[0].memory.id == mid
        with pytest.raises(BankReadOnlyError):
            ro.add("y")


def test_supplied_embedding_skips_the_model(bank, embedder):
    vec = embedder.encode_one("Plays the cello")
    mid = bank.add("Plays the cello", namespace="m", embedding=vec.tolist())
    hit = bank.recall("Plays the cello", namespace="m", record=False, threshold=0)[0]
    as_question = embedder.encode_one("Plays the cello", kind="query")  # the recall's own vector
    assert hit.memory.id == mid and hit.components["similarity"] == pytest.approx(float(vec @ as_question), abs=1e-5)
    assert np.isclose(np.linalg.norm(vec), 1.0)


def test_tier_filter_matches_the_tier_counts(bank):
    rows = [("hot one", 2, None), ("warm one", 30, None), ("cold one", 200, None), ("cold but used", 200, 1)]
    bank.add_many([{"text": t, "namespace": "t", "created_at": NOW - timedelta(days=d),
                    "last_accessed_at": None if u is None else NOW - timedelta(days=u)} for t, d, u in rows])
    got = {tier: sorted(m.text for m in bank.memories(namespace="t", tier=tier, now=NOW)) for tier in ("hot", "warm", "cold")}
    assert got == {"hot": ["cold but used", "hot one"], "warm": ["warm one"], "cold": ["cold one"]}
    assert {t: len(v) for t, v in got.items()} == bank.stats(namespace="t", now=NOW)["by_tier"]
    with pytest.raises(ValidationError):
        bank.memories(tier="lukewarm")


def test_memories_added_after_a_namespace_loaded_are_recalled_whole_without_reading_the_file(bank, monkeypatch):
    """Memories this bank adds once a namespace's index is loaded come back from recall with
    every field as the file holds them, and building those hits reads nothing from the file
    (it used to cost a file open per new memory's first recall: 20 ms of a 10 ms recall)."""
    bank.add("Seed memory about tea", namespace="alice")
    bank.recall("tea", namespace="alice", record=False)  # loads the namespace's index
    created = datetime(2025, 3, 1, 12, 30, 15, 123456, tzinfo=timezone.utc)
    ids = bank.add_many([
        {"text": "Drinks green tea every morning", "namespace": "alice", "kind": "inferred",
         "category": "preference", "importance": 0.8, "created_at": created, "source": "chat 12",
         "pinned": True, "context": "we talked about breakfast"},
        {"text": "Dislikes coffee with milk", "namespace": "alice"}])
    ids.append(bank.add("Drinks black tea after lunch", namespace="alice", category="goal"))
    opened = []
    connect = bank._store.connect
    monkeypatch.setattr(bank._store, "connect", lambda *a, **k: opened.append(a) or connect(*a, **k))
    hits = bank.recall("tea coffee morning lunch", namespace="alice", record=False, threshold=0, k=10)
    assert opened == [], "recall opened the bank file"
    monkeypatch.undo()
    got = {h.memory.id: h.memory for h in hits}
    assert set(ids) <= set(got)
    for mid in ids:
        assert got[mid] == bank.get(mid)
