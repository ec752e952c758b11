"""The bank's curation operations: conflicts recorded and resolved, merges, undo of whole operations.

Every operation is undoable, and an undo leaves the bank equal in content to before: the same
memories with the same fields and statuses, and the same recall results.
"""

from __future__ import annotations

import io
from datetime import datetime, timedelta, timezone

import duckdb
import pytest

from memory_core import MemoryBank, NotFoundError, StateError, ValidationError, format_for_prompt
from memory_core.storage.schema import MIGRATIONS, SCHEMA_VERSION


@pytest.fixture(scope="session")
def embedder():
    """all-MiniLM-L6-v2 rather than the default model: the merge and conflict bars these tests exercise were measured with it."""
    from memory_core.embedding.embedder import MINILM_MODEL, get_embedder

    return get_embedder(MINILM_MODEL)

NOW = datetime(2026, 11, 30, tzinfo=timezone.utc)
QUERIES = ["what do I drink in the morning", "where do I live", "tea", "coffee", "Berlin"]


@pytest.fixture
def pairs(bank: MemoryBank) -> dict[str, int]:
    rows = [
        ("tea", "Prefers tea in the morning", "explicit", 300),
        ("coffee", "Switched to coffee in the morning", "explicit", 20),
        ("paris", "Lives in Paris", "explicit", 400),
        ("berlin", "Seems to live in Berlin now", "inferred", 30),
        ("tea2", "Likes a cup of tea every morning", "explicit", 200),
        ("bob", "Lives in Oslo", "explicit", 10),
    ]
    ids = bank.add_many([{"text": t, "namespace": "bob" if key == "bob" else "alice", "kind": kind,
                          "importance": 0.6, "created_at": NOW - timedelta(days=d)} for key, t, kind, d in rows])
    return dict(zip([r[0] for r in rows], ids))


def content(bank: MemoryBank) -> tuple[str, list]:
    """Everything a user can see: every memory's fields, and what recall returns."""
    out = io.StringIO()
    bank.export_jsonl(out)
    lines = sorted(out.getvalue().splitlines())
    # Scores to 6 places: float32 dot products differ in the last bits with a row's position in memory.
    results = [[(h.memory.id, round(h.score, 6)) for h in bank.recall(q, namespace="alice", now=NOW, k=10,
                                                                        threshold=0, record=False)]
               for q in QUERIES]
    return "\n".join(lines), results


def record(bank, a, b, **kw):
    args = dict(kind="switch", evidence="tea vs coffee", confidence=0.9, suggestion="newer_wins", path="rules")
    args.update(kw)
    return bank.record_conflict(a, b, **args)


def test_record_conflict_orders_by_age_and_never_twice(bank, pairs):
    c = record(bank, pairs["coffee"], pairs["tea"])
    assert (c.a.id, c.b.id, c.status, c.namespace) == (pairs["tea"], pairs["coffee"], "open", "alice")
    assert record(bank, pairs["tea"], pairs["coffee"]) is None
    assert [x.id for x in bank.conflicts(namespace="alice")] == [c.id]
    assert bank.conflicts(namespace="bob") == []


def test_newer_wins_supersedes_and_undo_restores_everything(bank, pairs):
    c = record(bank, pairs["tea"], pairs["coffee"])
    before = content(bank)
    resolved = bank.resolve_conflict(c.id, "newer_wins")
    assert resolved.status == "resolved" and resolved.resolution == "newer_wins"
    tea = bank.get(pairs["tea"])
    assert tea.status == "superseded" and tea.superseded_by == pairs["coffee"]
    assert pairs["tea"] not in [h.memory.id for h in bank.recall("tea", namespace="alice", threshold=0, k=10,
                                                                  now=NOW, record=False)]
    assert bank.conflicts(status="open") == []
    bank.undo_group(resolved.group_id)
    assert content(bank) == before
    assert bank.conflict(c.id).status == "open"


def test_explicit_beats_inferred(bank, pairs):
    c = record(bank, pairs["paris"], pairs["berlin"], suggestion="explicit_wins")
    bank.resolve_conflict(c.id, "explicit_wins")
    assert bank.get(pairs["berlin"]).status == "superseded"
    assert bank.get(pairs["berlin"]).superseded_by == pairs["paris"]
    both_explicit = record(bank, pairs["tea"], pairs["coffee"])
    with pytest.raises(StateError, match="both memories are explicit"):
        bank.resolve_conflict(both_explicit.id, "explicit_wins")


def test_keep_both_returns_the_pair_together_and_states_the_contradiction(bank, pairs):
    c = record(bank, pairs["tea"], pairs["coffee"])
    assert bank.resolve_conflict(c.id, "keep_both").status == "acknowledged"
    hits = bank.recall("coffee in the morning", namespace="alice", now=NOW, k=1, record=False)
    assert {h.memory.id for h in hits} == {pairs["tea"], pairs["coffee"]}
    assert {h.conflict_with for h in hits} == {pairs["tea"], pairs["coffee"]}
    text = format_for_prompt(hits, now=NOW)
    tea_day = (NOW - timedelta(days=300)).strftime("%-d %b %Y")
    coffee_day = (NOW - timedelta(days=20)).strftime("%-d %b %Y")
    assert f'on {tea_day} you said "Prefers tea in the morning"; on {coffee_day}, "Switched to coffee' in text
    # A later decision is still possible on an acknowledged pair.
    assert bank.resolve_conflict(c.id, "newer_wins").status == "resolved"


def test_edit_and_dismiss(bank, pairs):
    c = record(bank, pairs["tea"], pairs["coffee"])
    bank.resolve_conflict(c.id, "edit", memory_id=pairs["tea"], text="Preferred tea in the morning until 2026")
    assert bank.get(pairs["tea"]).text == "Preferred tea in the morning until 2026"
    d = record(bank, pairs["paris"], pairs["berlin"])
    assert bank.resolve_conflict(d.id, "dismiss").status == "dismissed"
    assert record(bank, pairs["paris"], pairs["berlin"]) is None  # never flagged again


def test_dismiss_many_is_one_undoable_operation(bank, pairs):
    c = record(bank, pairs["tea"], pairs["coffee"])
    d = record(bank, pairs["paris"], pairs["berlin"])
    group = bank.dismiss_conflicts([c.id, d.id])
    assert [bank.conflict(x.id).status for x in (c, d)] == ["dismissed", "dismissed"]
    assert {bank.conflict(x.id).group_id for x in (c, d)} == {group}
    bank.undo_group(group)
    assert [bank.conflict(x.id).status for x in (c, d)] == ["open", "open"]
    assert bank.dismiss_conflicts([]) is None
    bank.resolve_conflict(c.id, "newer_wins")
    with pytest.raises(StateError, match="nothing was dismissed"):
        bank.dismiss_conflicts([d.id, c.id])  # one already resolved: none dismissed
    assert bank.conflict(d.id).status == "open"
    with pytest.raises(NotFoundError):
        bank.dismiss_conflicts([d.id, 999])
    assert bank.conflict(d.id).status == "open"


def test_conflict_bad_input_changes_nothing(bank, pairs):
    with pytest.raises(ValidationError, match="one namespace"):
        record(bank, pairs["tea"], pairs["bob"])
    with pytest.raises(ValidationError):
        record(bank, pairs["tea"], pairs["tea"])
    c = record(bank, pairs["tea"], pairs["coffee"])
    with pytest.raises(ValidationError):
        bank.resolve_conflict(c.id, "coin_flip")
    with pytest.raises(ValidationError, match="edit needs"):
        bank.resolve_conflict(c.id, "edit", memory_id=pairs["paris"], text="x")
    with pytest.raises(NotFoundError):
        bank.resolve_conflict(999, "dismiss")
    bank.forget(pairs["tea"], hard=True)
    before = content(bank)
    with pytest.raises(StateError, match="moot"):
        bank.resolve_conflict(c.id, "newer_wins")
    assert content(bank) == before and bank.conflict(c.id).status == "open"
    assert bank.resolve_conflict(c.id, "dismiss").status == "dismissed"


def test_merge_and_undo_round_trip(bank, pairs):
    bank.recall("tea", namespace="alice", now=NOW)  # give the members access counts
    before = content(bank)
    rec = bank.merge([pairs["tea"], pairs["tea2"]], text="Prefers tea in the morning, a cup every morning",
                     path="llm", detail="test")
    merged = bank.get(rec.merged_id)
    tea, tea2 = bank.get(pairs["tea"]), bank.get(pairs["tea2"])
    assert merged.source == "merge" and merged.importance == 0.6
    assert merged.created_at == max(tea.created_at, tea2.created_at)
    assert merged.access_count == tea.access_count + tea2.access_count
    assert (tea.status, tea.merged_into, tea2.status, tea2.merged_into) == ("merged", merged.id, "merged", merged.id)
    assert rec.member_ids == tuple(sorted((pairs["tea"], pairs["tea2"]))) and rec.path == "llm"
    top = bank.recall("tea every morning", namespace="alice", now=NOW, k=10, threshold=0, record=False)
    assert merged.id in [h.memory.id for h in top] and pairs["tea"] not in [h.memory.id for h in top]
    bank.undo_merge(rec.id)
    assert content(bank) == before
    with pytest.raises(NotFoundError):
        bank.get(rec.merged_id)
    assert bank.merges()[0].undone_at is not None
    with pytest.raises(StateError, match="already undone"):
        bank.undo_merge(rec.id)


def test_merge_bad_input(bank, pairs):
    with pytest.raises(ValidationError, match="one namespace"):
        bank.merge([pairs["tea"], pairs["bob"]], text="x")
    with pytest.raises(ValidationError, match="at least two"):
        bank.merge([pairs["tea"], pairs["tea"]], text="x")
    bank.forget(pairs["tea2"])
    with pytest.raises(StateError, match="archived"):
        bank.merge([pairs["tea"], pairs["tea2"]], text="x")
    assert bank.merges() == []


def test_undo_of_an_undo_and_of_a_changed_memory_are_refused(bank, pairs):
    bank.update(pairs["tea"], importance=0.9)
    event = bank.history(pairs["tea"])[-1]
    bank.undo(event.id)
    undo_event = bank.history(pairs["tea"])[-1]
    assert undo_event.action == "undo"
    with pytest.raises(StateError, match="cannot be undone"):
        bank.undo(undo_event.id)
    with pytest.raises(StateError, match="already undone"):
        bank.undo(event.id)
    c = record(bank, pairs["tea"], pairs["coffee"])
    resolved = bank.resolve_conflict(c.id, "newer_wins")
    bank.update(pairs["tea"], importance=0.1)  # the superseded one changed since
    with pytest.raises(StateError, match="changed after this operation"):
        bank.undo_group(resolved.group_id)


def test_other_process_sees_removed_merged_memory(bank_path, embedder, bank, pairs):
    other = MemoryBank.open(bank_path, embedder=embedder)
    rec = bank.merge([pairs["tea"], pairs["tea2"]], text="Drinks tea every morning")
    assert rec.merged_id in [h.memory.id for h in other.recall("tea every morning", namespace="alice", now=NOW,
                                                               record=False)]
    bank.undo_merge(rec.id)
    ids = [h.memory.id for h in other.recall("tea every morning", namespace="alice", now=NOW, k=10,
                                            threshold=0, record=False)]
    assert rec.merged_id not in ids and pairs["tea"] in ids
    other.close()


def test_a_version_1_bank_is_migrated(tmp_path, embedder):
    path = tmp_path / "old.duckdb"
    con = duckdb.connect(str(path))
    for stmt in MIGRATIONS[1]:
        con.execute(stmt)
    con.execute("INSERT INTO schema_migrations VALUES (1, now())")
    for key, value in {"embedding_model": "sentence-transformers/all-MiniLM-L6-v2", "embedding_dim": "",
                       "change_seq": "0", "next_id": "1", "next_event_id": "1", "next_retrieval_id": "1",
                       "active_preset": "default", "created_at": "2026-01-01"}.items():
        con.execute("INSERT INTO meta VALUES (?, ?)", [key, value])
    con.close()
    with MemoryBank.open(path, embedder=embedder) as bank:
        a = bank.add("Prefers tea", namespace="n", detect_conflicts=False)
        b = bank.add("Switched to coffee", namespace="n", detect_conflicts=False)
        assert record(bank, a, b).status == "open"
    con = duckdb.connect(str(path))
    assert con.execute("SELECT max(version) FROM schema_migrations").fetchone()[0] == SCHEMA_VERSION
    con.close()


def test_llm_groups_same_fact_across_languages_and_falls_back_to_the_embedding(bank, llm_server):
    from memory_core.curation import merge as merge_mod
    from memory_core.language.llm import LLMClient, LLMConfig

    ids = [bank.add(t, namespace="chen") for t in ["Not a morning person; struggles with 8 a.m. classes",
                                                    "不喜欢早上八点的课", "Prefers dark mode everywhere",
                                                    "Always asks for dark themes", "Lives in Chengdu"]]
    client = LLMClient(LLMConfig(base_url=llm_server.base_url, model=llm_server.model, max_retries=0), backoff_base=0)
    llm_server.respond_with(lambda messages: (
        {"groups": [[ids[0], ids[1]]]} if "Find the groups" in messages[0]["content"] else {"text": "Dislikes 8 a.m. classes"}))
    before = bank.count(namespace="chen")
    plans = bank.plan_merges("chen", related_threshold=0.6, client=client)
    assert [(cl.ids, cl.reason) for cl, _ in plans] == [(tuple(ids[:2]), merge_mod.REASON_LLM)]
    cluster, preview = plans[0]
    assert llm_server.model in cluster.detail and preview.path == "llm"
    assert bank.count(namespace="chen") == before  # planning changes nothing
    merged = bank.merge(cluster.ids, preview.text, path=preview.path, detail=preview.detail)
    assert bank.get(ids[1]).status == "merged" and bank.get(merged.merged_id).text == "Dislikes 8 a.m. classes"

    # An invented id: the grouping falls back to the embedding and says why.
    llm_server.respond_with(lambda messages: {"groups": [[ids[2], 10**6]]})
    plans = bank.plan_merges("chen", related_threshold=0.5, client=client)
    assert plans and all(cl.reason != merge_mod.REASON_LLM for cl, _ in plans)
    assert all("grouped by the embedding: LLM failed" in cl.detail for cl, _ in plans if cl.reason == "same subject")
