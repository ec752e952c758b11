"""The same text added again to a namespace reinforces the memory already there instead of storing it twice.

"Running the quick start twice" must leave one "Prefers vegetarian food", whose history says it was
said again; a caller who wants a second copy says so (``dedupe=False``). Equality is the content
hash the bank already keeps (Unicode NFC, whitespace collapsed). An archived memory is not
repeated: the text is stored anew (restore the old one to bring it back instead). On both stores,
through the library (add, add_many, add_each: the server's write path) and REST.
"""

from __future__ import annotations

from datetime import datetime, timezone

import pytest

from memory_core import MemoryBank
from memctl_server import serve_with_tokens

T0 = datetime(2026, 3, 1, 9, 0, tzinfo=timezone.utc)
T1 = datetime(2026, 3, 8, 9, 0, tzinfo=timezone.utc)


def active(bank: MemoryBank, namespace: str) -> list[str]:
    return sorted(m.text for m in bank.memories(namespace, "active", limit=100))


def test_adding_the_same_text_again_reinforces_the_one_memory(bank):
    first = bank.add("Prefers vegetarian food", namespace="alice", importance=0.4, created_at=T0)
    again = bank.add("  Prefers   vegetarian\tfood ", namespace="alice", importance=0.8, created_at=T1)
    assert again == first
    assert active(bank, "alice") == ["Prefers vegetarian food"]
    m = bank.get(first)
    assert m.text == "Prefers vegetarian food" and m.created_at == T0  # the first wording and date stay
    assert m.importance == 0.8 and m.access_count == 1 and m.last_accessed_at == T1
    history = bank.history(first)
    assert [e.action for e in history] == ["add", "reinforce"]
    assert "added again" in history[1].note
    assert history[1].before["access_count"] == 0 and history[1].after["access_count"] == 1
    # A lower importance the second time keeps the higher one; a third time counts again.
    assert bank.add("Prefers vegetarian food", namespace="alice", importance=0.1) == first
    assert bank.get(first).importance == 0.8 and bank.get(first).access_count == 2
    # Undo takes the reinforcement back, as any change.
    bank.undo(bank.history(first)[-1].id)
    assert bank.get(first).access_count == 1


def test_the_caller_can_store_a_second_copy_and_other_namespaces_are_apart(bank):
    first = bank.add("Prefers vegetarian food", namespace="alice")
    copy = bank.add("Prefers vegetarian food", namespace="alice", dedupe=False)
    bobs = bank.add("Prefers vegetarian food", namespace="bob")
    assert len({first, copy, bobs}) == 3
    assert bank.count("alice") == 2 and bank.count("bob") == 1
    assert [e.action for e in bank.history(first)] == ["add"]
    # A different text (not just whitespace) is a new memory.
    assert bank.add("Prefers vegetarian food!", namespace="alice") not in (first, copy)


def test_a_forgotten_memory_is_not_repeated_its_text_is_stored_anew(bank):
    old = bank.add("Lives in Paris", namespace="alice")
    bank.forget(old)
    new = bank.add("Lives in Paris", namespace="alice")
    assert new != old
    assert bank.get(old).status == "archived" and bank.get(new).status == "active"
    assert [e.action for e in bank.history(old)] == ["add", "forget"]
    # With an active copy again, the next add reinforces that one.
    assert bank.add("Lives in Paris", namespace="alice") == new


def test_add_many_reinforces_stored_memories_and_repeats_within_the_batch(bank):
    tea = bank.add("Drinks tea every morning", namespace="alice", importance=0.3)
    ids = bank.add_many([
        {"text": "Has a dog called Rex", "namespace": "alice"},
        {"text": "Drinks tea every morning", "namespace": "alice", "importance": 0.9},
        {"text": "Has a dog  called Rex", "namespace": "alice"},
        {"text": "Has a dog called Rex", "namespace": "bob"},
        {"text": "Has a dog called Rex", "namespace": "alice"},
    ])
    rex = ids[0]
    assert ids == [rex, tea, rex, ids[3], rex] and ids[3] != rex
    assert active(bank, "alice") == ["Drinks tea every morning", "Has a dog called Rex"]
    assert bank.count("bob") == 1
    assert bank.get(tea).importance == 0.9 and bank.get(tea).access_count == 1
    assert bank.get(rex).access_count == 2
    assert [e.action for e in bank.history(rex)] == ["add", "reinforce"]
    assert [e.action for e in bank.history(tea)] == ["add", "reinforce"]
    # dedupe=False stores every row, repeats included.
    more = bank.add_many([{"text": "Has a dog called Rex", "namespace": "alice"}] * 2, dedupe=False)
    assert len(set(more) | {rex}) == 3 and bank.count("alice") == 4


def test_add_each_the_servers_write_path_dedupes_too(bank):
    tea = bank.add("Drinks tea every morning", namespace="alice")
    results = bank.add_each([{"text": "Drinks tea every morning", "namespace": "alice"},
                             {"text": "Walks to work", "namespace": "alice"},
                             {"text": "Walks to work", "namespace": "alice"},
                             {"text": "", "namespace": "alice"}])
    assert results[0] == tea and results[1] == results[2] and isinstance(results[3], Exception)
    assert bank.count("alice") == 2
    assert bank.get(results[1]).access_count == 1
    only_repeats = bank.add_each([{"text": "Walks to work", "namespace": "alice"}], dedupe=False)
    assert only_repeats[0] not in results and bank.count("alice") == 3


def test_rest_add_and_batch_reinforce_unless_asked_not_to(tmp_path):
    server = serve_with_tokens(tmp_path / "bank.duckdb", [("alice", ["alice"], False, False)])
    try:
        with server.client(server.tokens["alice"]) as c:
            r1 = c.post("/v1/memories", json={"text": "Prefers vegetarian food", "importance": 0.5})
            r2 = c.post("/v1/memories", json={"text": "Prefers vegetarian food ", "importance": 0.7})
            assert r1.status_code == r2.status_code == 201, (r1.text, r2.text)
            mid = r1.json()["id"]
            assert r2.json()["id"] == mid
            history = c.get(f"/v1/memories/{mid}/history").json()["events"]
            assert [e["action"] for e in history] == ["add", "reinforce"]
            assert c.get(f"/v1/memories/{mid}").json()["importance"] == 0.7
            r3 = c.post("/v1/memories", json={"text": "Prefers vegetarian food", "dedupe": False})
            assert r3.status_code == 201 and r3.json()["id"] != mid
            batch = c.post("/v1/memories/batch", json={"rows": [{"text": "Walks to work"}, {"text": "Walks to work"}]})
            assert batch.status_code == 201, batch.text
            ids = batch.json()["ids"]
            assert ids[0] == ids[1]
            apart = c.post("/v1/memories/batch", json={"rows": [{"text": "Walks to work"}], "dedupe": False})
            assert apart.json()["ids"][0] != ids[0]
            assert c.get("/v1/memories").json()["total"] == 4
    finally:
        assert server.stop() == 0, server.output()
