"""The LangGraph store over a bank (memory_core.integrations.langgraph_store), on both stores.

No conformance suite for LangGraph stores is published (langgraph and langgraph-checkpoint install
no test module; langgraph-checkpoint-conformance covers checkpointers only; the BaseStore tests
of langchain-tests are for LangChain's key-value stores), so these are the behaviours its
InMemoryStore is tested for in langgraph's own repository (libs/checkpoint/tests/test_store.py:
put/get/update/delete, search with filter, limit and offset, list_namespaces with prefix, suffix, wildcards, max_depth and
paging, invalid namespaces, batches and their async forms), run against the adapter on a real
bank, plus what the bank adds: recall with its threshold, recalls logged, memories the
dashboard sees, and bad input that changes nothing. A served bank's tokens are checked at the end.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from langgraph.store.base import GetOp, InvalidNamespaceError, Item, ListNamespacesOp, PutOp, SearchItem, SearchOp

from memory_core import MAX_TEXT, MemoryBank, PermissionDeniedError
from memory_core.integrations.langgraph_store import MemoryBankStore, decode_namespace, encode_namespace
from memctl_server import serve_with_tokens

NOW = datetime(2026, 3, 1, 12, 0, tzinfo=timezone.utc)
ALICE = ("users", "alice", "memories")


@pytest.fixture
def store(bank):
    """The adapter over the test's bank (a DuckDB file or a PostgreSQL database), its clock fixed."""
    s = MemoryBankStore(bank, now=lambda: NOW)
    yield s
    s.close()


def state(bank: MemoryBank) -> tuple:
    """What any change would move: memories of every status, events, logged recalls, namespaces."""
    bank.flush()
    return (bank.count(status=None), [e.id for e in bank.events(limit=10_000)],
            len(bank.retrievals(limit=None)), bank.namespaces())


def served_state(bank) -> list:
    """What a served bank's admin sees: every memory of every namespace, with every field."""
    return [m.to_dict() for ns, _ in bank.namespaces() for m in bank.memories(ns, status=None, limit=None)]


# -- the namespace encoding -------------------------------------------------------------------


def test_a_namespace_tuple_is_one_bank_namespace_and_back() -> None:
    for ns in [("alice",), ("users", "alice"), ("a", "b", "c", "d"), ("ünï", "名前", "with space")]:
        assert decode_namespace(encode_namespace(ns)) == ns
    assert encode_namespace(("users", "alice")) == "users.alice"
    assert decode_namespace("alice") == ("alice",)  # a namespace written by another face
    assert decode_namespace("a..b") is None and decode_namespace(".x") is None  # no tuple names these
    with pytest.raises(InvalidNamespaceError):
        encode_namespace(("x" * 200, "y" * 60))  # joined, longer than the bank's 256 characters


# -- put, get, update, delete -------------------------------------------------------------------


def test_put_get_update_delete_keep_one_memory_per_key(store, bank) -> None:
    value = {"text": "Alice is vegetarian and never eats fish", "type": "preference", "tags": ["food", 1],
             "nested": {"since": 2019}}
    store.put(ALICE, "diet", value)
    item = store.get(ALICE, "diet")
    assert isinstance(item, Item)
    assert (item.namespace, item.key, item.value) == (ALICE, "diet", value)
    assert item.created_at == NOW and item.updated_at == NOW

    # The bank holds it as a memory the dashboard shows: its namespace, its text.
    [memory] = bank.memories("users.alice.memories")
    assert memory.text == "Alice is vegetarian and never eats fish"
    assert ("users.alice.memories", 1) in bank.namespaces()

    store.put(ALICE, "diet", {"text": "Alice is vegan", "type": "preference"})
    again = store.get(ALICE, "diet")
    assert again.value == {"text": "Alice is vegan", "type": "preference"}
    assert again.created_at == NOW and again.updated_at >= again.created_at
    assert [m.id for m in bank.memories("users.alice.memories")] == [memory.id]  # the same memory, updated
    assert bank.get(memory.id).text == "Alice is vegan"
    assert [e.action for e in bank.history(memory.id)][-1] == "update"  # history (and undo) as any change

    assert store.get(ALICE, "nothing") is None
    assert store.get(("users", "nobody"), "diet") is None

    store.delete(ALICE, "diet")
    assert store.get(ALICE, "diet") is None
    assert bank.get(memory.id).status == "archived"  # forgetting is soft: restorable from the dashboard
    store.delete(ALICE, "diet")  # deleting what is gone is fine, as in LangGraph

    store.put(ALICE, "diet", {"text": "Alice eats fish again"})  # a new item under the old key
    assert store.get(ALICE, "diet").value == {"text": "Alice eats fish again"}
    assert bank.count("users.alice.memories") == 1


def test_a_store_opened_by_location_keeps_its_items(bank_path, embedder) -> None:
    """Anything MemoryBank.open takes (here a file or a postgresql:// URL): the store opens and closes it."""
    with MemoryBankStore(bank_path, embedder=embedder, now=lambda: NOW) as store:
        store.put(ALICE, "diet", {"text": "Alice is vegetarian", "n": 1})
    with MemoryBankStore(bank_path, embedder=embedder) as again:
        item = again.get(ALICE, "diet")
        assert (item.value, item.created_at) == ({"text": "Alice is vegetarian", "n": 1}, NOW)
        assert again.bank.closed is False
    assert again.bank.closed


def test_hard_delete_erases_the_value_too(bank) -> None:
    store = MemoryBankStore(bank, hard_delete=True, now=lambda: NOW)
    store.put(ALICE, "secret", {"text": "Alice's door code is 4711", "code": 4711})
    [memory] = bank.memories("users.alice.memories")
    store.delete(ALICE, "secret")
    gone = bank.get(memory.id)
    assert gone.status == "deleted" and gone.text is None and gone.source is None


def test_the_text_comes_from_the_configured_fields(bank) -> None:
    default = MemoryBankStore(bank, now=lambda: NOW)
    default.put(("t",), "a", {"content": "Bob plays the cello", "n": 1})
    default.put(("t",), "b", {"n": 2, "memory": "Bob lives in Bergen"})
    default.put(("t",), "c", {"n": 3, "other": "no text field"})  # no text field: the value as JSON
    default.put(("t",), "d", {"text": "Bob is a nurse"}, index=["text"])
    default.put(("t",), "e", {"title": "Trip", "body": {"note": "Bob flies to Rome in May"}}, index=["body.note"])
    default.put(("t",), "f", {"text": "unindexed", "n": 6}, index=False)
    texts = {default.key_and_value(m)[0]: m.text for m in bank.memories("t", limit=None)}
    assert texts["a"] == "Bob plays the cello"
    assert texts["b"] == "Bob lives in Bergen"
    assert texts["c"] == '{"n": 3, "other": "no text field"}'
    assert texts["d"] == "Bob is a nurse"
    assert texts["e"] == "Bob flies to Rome in May"
    assert texts["f"] == '{"n": 6, "text": "unindexed"}'

    configured = MemoryBankStore(bank, index={"dims": 384, "fields": ["title", "body.note"]}, now=lambda: NOW)
    configured.put(("u",), "x", {"title": "Trip", "body": {"note": "Bob flies to Rome in May"}})
    assert [m.text for m in bank.memories("u")] == ["Trip\nBob flies to Rome in May"]
    assert configured.get(("u",), "x").value == {"title": "Trip", "body": {"note": "Bob flies to Rome in May"}}


def test_an_importance_field_sets_the_memorys_importance(store, bank) -> None:
    store.put(ALICE, "goal", {"text": "Alice runs the Oslo marathon in June", "importance": 0.9})
    store.put(ALICE, "tea", {"text": "Alice drinks green tea", "importance": "high"})  # not a number: default
    by_text = {m.text: m.importance for m in bank.memories("users.alice.memories")}
    assert by_text == {"Alice runs the Oslo marathon in June": 0.9, "Alice drinks green tea": 0.5}


def test_memories_written_elsewhere_are_items_too(store, bank) -> None:
    mid = bank.add("Alice's daughter Maja plays the violin", namespace="users.alice.memories", created_at=NOW)
    item = store.get(ALICE, f"memory:{mid}")
    assert item.value == {"text": "Alice's daughter Maja plays the violin"}
    assert [i.key for i in store.search(ALICE)] == [f"memory:{mid}"]
    store.put(ALICE, f"memory:{mid}", {"text": "Maja plays the viola now", "who": "Maja"})
    assert bank.get(mid).text == "Maja plays the viola now"
    assert store.get(ALICE, f"memory:{mid}").value == {"text": "Maja plays the viola now", "who": "Maja"}


# -- search ----------------------------------------------------------------------------------


FACTS = {  # key: (value, days before NOW)
    "diet": ({"text": "Alice is vegetarian and never eats fish", "type": "preference", "level": 3}, 40),
    "violin": ({"text": "Alice's daughter Maja plays the violin", "type": "fact", "level": 1}, 20),
    "marathon": ({"text": "Alice is training for the Oslo marathon in June", "type": "goal", "level": 5}, 10),
    "tea": ({"text": "Alice prefers green tea over coffee in the morning", "type": "preference", "level": 2}, 5),
}


def put_facts(store: MemoryBankStore, namespace=ALICE) -> None:
    for key, (value, days) in FACTS.items():
        store.now = lambda d=days: NOW - timedelta(days=d)
        store.put(namespace, key, value)
    store.now = lambda: NOW


def test_search_with_a_query_is_the_banks_recall_with_its_threshold(store, bank) -> None:
    put_facts(store)
    before = len(bank.retrievals(limit=None))
    # What the bank's recall gives (a what-if first: the recorded recall counts a use, which ranks).
    hits = bank.recall("What does Alice drink in the morning?", namespace="users.alice.memories", now=NOW,
                       record=False, k=10)
    found = store.search(("users", "alice"), query="What does Alice drink in the morning?")
    assert found and found[0].key == "tea"
    assert all(isinstance(i, SearchItem) for i in found)
    # The scores are the bank's own blended scores, in order, each above its threshold.
    assert [(i.key, round(i.score, 6)) for i in found] == \
        [(store.key_and_value(h.memory)[0], round(h.score, 6)) for h in hits]
    threshold = bank.active_preset()[1].threshold
    assert all(i.score >= threshold for i in found)
    assert found[0].value == FACTS["tea"][0]

    # An irrelevant memory is worse than none: an off-topic question gets nothing.
    assert store.search(ALICE, query="What is the capital of Australia?") == []

    # Both recalls were logged, as the dashboard's usage pages read them.
    bank.flush()
    logged = bank.retrievals("users.alice.memories", limit=None)
    assert len(logged) == before + 2
    assert logged[0]["query"] == "What is the capital of Australia?" and logged[0]["n_results"] == 0
    ids = {store.key_and_value(m)[0]: m.id for m in bank.memories("users.alice.memories")}
    assert [h["memory_id"] for h in logged[1]["hits"]] == [ids[i.key] for i in found]
    assert logged[1]["n_results"] == len(found)


def test_search_limit_offset_and_filter(store, bank) -> None:
    put_facts(store)
    everything = store.search(ALICE, limit=10)
    assert [i.key for i in everything] == ["tea", "marathon", "violin", "diet"]  # newest first
    assert all(i.score is None for i in everything)
    assert [i.key for i in store.search(ALICE, limit=2)] == ["tea", "marathon"]
    assert [i.key for i in store.search(ALICE, limit=2, offset=2)] == ["violin", "diet"]
    assert store.search(ALICE, limit=2, offset=4) == []

    assert {i.key for i in store.search(ALICE, filter={"type": "preference"})} == {"diet", "tea"}
    assert {i.key for i in store.search(ALICE, filter={"level": {"$gt": 2}})} == {"diet", "marathon"}
    assert {i.key for i in store.search(ALICE, filter={"level": {"$gte": 2, "$lt": 5}})} == {"diet", "tea"}
    assert {i.key for i in store.search(ALICE, filter={"type": {"$ne": "preference"}})} == {"violin", "marathon"}
    assert store.search(ALICE, filter={"type": "nonexistent"}) == []

    # A filter with a query: every memory that clears the threshold is a candidate, then the filter picks.
    q = "What food and drink does Alice like?"
    unfiltered = store.search(ALICE, query=q)
    filtered = store.search(ALICE, query=q, filter={"type": "preference"})
    assert filtered and {i.key for i in filtered} <= {"diet", "tea"}
    assert [i.key for i in filtered] == [i.key for i in unfiltered if i.value["type"] == "preference"]
    assert store.search(ALICE, query=q, filter={"type": "goal", "level": 1}) == []


def test_search_spans_the_namespaces_under_a_prefix(store, bank) -> None:
    put_facts(store)
    store.put(("users", "bob", "memories"), "tea", {"text": "Bob drinks black tea with milk every morning"})
    store.put(("users", "bob", "notes"), "n", {"text": "Bob's car is a red Volvo"})
    assert {(i.namespace, i.key) for i in store.search(("users", "bob"))} == \
        {(("users", "bob", "memories"), "tea"), (("users", "bob", "notes"), "n")}
    assert {i.namespace for i in store.search(("users",), limit=100)} == \
        {ALICE, ("users", "bob", "memories"), ("users", "bob", "notes")}
    assert {i.namespace for i in store.search((), limit=100)} == \
        {ALICE, ("users", "bob", "memories"), ("users", "bob", "notes")}
    found = store.search(("users",), query="What tea does Bob drink in the morning?", limit=3)
    assert found[0].namespace == ("users", "bob", "memories")
    assert [i.score for i in found] == sorted((i.score for i in found), reverse=True)
    assert store.search(("users", "carol")) == []


# -- list_namespaces ------------------------------------------------------------------------------


def test_list_namespaces_prefix_suffix_wildcards_depth_and_paging(store) -> None:
    namespaces = [("a", "b", "c"), ("a", "b", "d", "e"), ("a", "b", "d", "i"), ("a", "b", "f"), ("a", "c", "f"),
                  ("b", "a", "f"), ("users", "123"), ("users", "456", "settings"), ("admin", "users", "789")]
    assert store.list_namespaces() == []
    store.batch([PutOp(ns, f"id_{i}", {"data": f"value_{i:02d}"}) for i, ns in enumerate(namespaces)])

    assert store.list_namespaces() == sorted(namespaces)
    assert store.list_namespaces(prefix=("a", "b")) == \
        [("a", "b", "c"), ("a", "b", "d", "e"), ("a", "b", "d", "i"), ("a", "b", "f")]
    assert store.list_namespaces(suffix=("f",)) == [("a", "b", "f"), ("a", "c", "f"), ("b", "a", "f")]
    assert store.list_namespaces(prefix=("a",), suffix=("f",)) == [("a", "b", "f"), ("a", "c", "f")]
    assert store.list_namespaces(prefix=("a", "b"), max_depth=3) == [("a", "b", "c"), ("a", "b", "d"), ("a", "b", "f")]
    assert store.list_namespaces(max_depth=2) == [("a", "b"), ("a", "c"), ("admin", "users"), ("b", "a"),
                                                  ("users", "123"), ("users", "456")]
    assert store.list_namespaces(prefix=("a", "b"), limit=2) == [("a", "b", "c"), ("a", "b", "d", "e")]
    assert store.list_namespaces(prefix=("a", "b"), offset=2) == [("a", "b", "d", "i"), ("a", "b", "f")]
    assert store.list_namespaces(prefix=("a", "*", "f")) == [("a", "b", "f"), ("a", "c", "f")]
    assert store.list_namespaces(suffix=("*", "f")) == [("a", "b", "f"), ("a", "c", "f"), ("b", "a", "f")]
    assert store.list_namespaces(prefix=("*", "users"), suffix=("*", "settings")) == []
    assert store.list_namespaces(prefix=("nonexistent",)) == []
    assert store.list_namespaces(prefix=("users", "123")) == [("users", "123")]

    # A namespace whose items are all deleted is gone from the list (as in LangGraph's PostgresStore).
    store.delete(("users", "123"), "id_6")
    assert ("users", "123") not in store.list_namespaces()


def test_list_namespaces_pages_through_many(store) -> None:
    store.batch([PutOp(("namespace", f"sub_{i:02d}"), f"id_{i:02d}", {"data": f"value_{i:02d}"}) for i in range(12)])
    assert store.list_namespaces(prefix=("namespace",), limit=5) == [("namespace", f"sub_{i:02d}") for i in range(5)]
    assert store.list_namespaces(prefix=("namespace",), limit=5, offset=5) == \
        [("namespace", f"sub_{i:02d}") for i in range(5, 10)]
    assert store.list_namespaces(prefix=("namespace",), limit=5, offset=10) == \
        [("namespace", f"sub_{i:02d}") for i in range(10, 12)]


def test_bank_namespaces_no_tuple_names_are_not_listed(store, bank) -> None:
    bank.add("Written by another face", namespace="a..b", created_at=NOW)
    bank.add("Carol likes jazz", namespace="carol", created_at=NOW)
    assert store.list_namespaces() == [("carol",)]


# -- batches, sync and async ---------------------------------------------------------------------


def test_a_batch_reads_before_it_writes_and_keeps_the_last_put_of_a_key(store, bank) -> None:
    store.put(ALICE, "a", {"text": "Alice likes hiking in the mountains"})
    results = store.batch([
        GetOp(ALICE, "a"),
        PutOp(ALICE, "a", {"text": "Alice likes sailing"}),
        PutOp(ALICE, "b", {"text": "Alice has a cat named Pixel"}),
        PutOp(ALICE, "b", {"text": "Alice has two cats, Pixel and Mochi"}),
        SearchOp(ALICE, None, 10, 0, None),
        ListNamespacesOp(match_conditions=(), max_depth=None, limit=100, offset=0),
        PutOp(ALICE, "c", {"text": "temporary"}),
        PutOp(ALICE, "c", None),
    ])
    assert len(results) == 8
    assert results[0].value == {"text": "Alice likes hiking in the mountains"}
    assert [i.key for i in results[4]] == ["a"]  # the batch's own puts come after its reads
    assert results[5] == [ALICE]
    assert results[1] is None and results[2] is None and results[3] is None
    assert store.get(ALICE, "a").value == {"text": "Alice likes sailing"}
    assert store.get(ALICE, "b").value == {"text": "Alice has two cats, Pixel and Mochi"}
    assert store.get(ALICE, "c") is None
    assert bank.count("users.alice.memories") == 2


def test_the_async_methods(store, bank) -> None:
    async def scenario():
        await store.aput(ALICE, "tea", {"text": "Alice prefers green tea over coffee in the morning"})
        await asyncio.gather(store.aput(ALICE, "cat", {"text": "Alice has a cat named Pixel"}),
                             store.aput(("users", "bob"), "x", {"text": "Bob plays chess"}))
        got = await store.aget(ALICE, "tea")
        found = await store.asearch(ALICE, query="What does Alice drink in the morning?")
        listed = await store.alist_namespaces(prefix=("users",))
        both = await store.abatch([GetOp(ALICE, "cat"), GetOp(("users", "bob"), "x")])
        await store.adelete(ALICE, "tea")
        return got, found, listed, both, await store.aget(ALICE, "tea")

    got, found, listed, both, gone = asyncio.run(scenario())
    assert got.value == {"text": "Alice prefers green tea over coffee in the morning"}
    assert found[0].key == "tea"
    assert listed == [("users", "alice", "memories"), ("users", "bob")]
    assert [i.value["text"] for i in both] == ["Alice has a cat named Pixel", "Bob plays chess"]
    assert gone is None


# -- bad input: LangGraph's error, nothing changed --------------------------------------------------


@pytest.mark.parametrize("namespace", [(), ("the", "thing.about"), ("some", "fun", ""), ("users", 7), ("a", None),
                                       ("x" * 200, "y" * 60), (" ",), ["users", "alice"]])
def test_a_bad_namespace_gets_invalid_namespace_error_and_changes_nothing(store, bank, namespace) -> None:
    store.put(ALICE, "keep", {"text": "Alice keeps bees"})
    before = state(bank)
    with pytest.raises(InvalidNamespaceError):
        store.put(namespace, "k", {"text": "should not be stored"})
    with pytest.raises(InvalidNamespaceError):
        asyncio.run(store.aput(namespace, "k", {"text": "should not be stored"}))
    with pytest.raises(InvalidNamespaceError):  # and in a batch, a good put before it is not written either
        store.batch([PutOp(ALICE, "new", {"text": "should not be stored"}), PutOp(namespace, "k", {"text": "x"})])
    assert state(bank) == before
    # Reading or deleting where nothing can be stored finds nothing, as in LangGraph's own store.
    if isinstance(namespace, tuple) and all(isinstance(label, str) and label and "." not in label
                                            for label in namespace):
        assert store.get(namespace, "k") is None
        store.delete(namespace, "k")
        assert state(bank) == before


def test_the_langgraph_root_is_refused_through_put_only(store, bank) -> None:
    before = state(bank)
    with pytest.raises(InvalidNamespaceError):
        store.put(("langgraph", "foo"), "bar", {"foo": "bar"})
    with pytest.raises(InvalidNamespaceError):
        asyncio.run(store.aput(("langgraph", "foo"), "bar", {"foo": "bar"}))
    assert state(bank) == before
    store.batch([PutOp(("langgraph", "foo"), "bar", {"foo": "bar"})])  # LangGraph's own way in
    assert store.get(("langgraph", "foo"), "bar").value == {"foo": "bar"}
    store.put(("foo", "langgraph", "foo"), "bar", {"foo": "bar"})
    assert store.search(("foo", "langgraph", "foo"))[0].value == {"foo": "bar"}


@pytest.mark.parametrize("value", ["a string", ["a", "list"], 42, {"text": "a set", "tags": {1, 2}},
                                   {"text": "not a number", "x": float("nan")},
                                   {"text": "x" * (MAX_TEXT + 1)}, {"text": "a NUL \x00 inside"}],
                         ids=["str", "list", "int", "set", "nan", "too-long", "nul"])
def test_a_bad_value_gets_value_error_and_changes_nothing(store, bank, value) -> None:
    store.put(ALICE, "keep", {"text": "Alice keeps bees"})
    before = state(bank)
    with pytest.raises(ValueError):
        store.put(ALICE, "k", value)
    with pytest.raises(ValueError):
        store.batch([PutOp(ALICE, "k", value)])
    assert state(bank) == before
    assert store.get(ALICE, "keep").value == {"text": "Alice keeps bees"}


def test_bad_search_and_list_arguments_get_value_error(store, bank) -> None:
    before = state(bank)
    with pytest.raises(InvalidNamespaceError):
        store.search(("users", 3))
    with pytest.raises(InvalidNamespaceError):
        store.list_namespaces(prefix=("a.b",))
    with pytest.raises(ValueError):
        store.search(ALICE, filter={"level": {"$regex": "x"}})
    with pytest.raises(ValueError):
        store.search(ALICE, limit=-1)
    with pytest.raises(ValueError):
        store.list_namespaces(max_depth=0)
    with pytest.raises(NotImplementedError):
        store.put(ALICE, "k", {"text": "expires"}, ttl=5)
    assert state(bank) == before


def test_importing_memory_core_does_not_import_langgraph() -> None:
    code = ("import sys, memory_core; bad = [m for m in sys.modules if m.split('.')[0] in "
            "('langgraph', 'langchain_core', 'memory_core.integrations')]; assert not bad, bad")
    subprocess.run([sys.executable, "-c", code], check=True, cwd=Path(__file__).parent.parent)


# -- a served bank: the token's namespaces ----------------------------------------------------------


@pytest.fixture(scope="module")
def served_users(tmp_path_factory):
    """A server with a token for users.alice.memories only, a read-only one, and an admin token."""
    path = tmp_path_factory.mktemp("served") / "bank.duckdb"
    server = serve_with_tokens(path, [("alice", ["users.alice.memories"], False, False),
                                      ("alice-ro", ["users.alice.memories"], True, False),
                                      ("root", [], False, True)])
    yield server
    assert server.stop() == 0, server.output()


def test_a_served_bank_by_url_and_token(served_users) -> None:
    served = served_users
    admin = MemoryBank.open(served.url, token=served.tokens["root"])
    with MemoryBankStore(admin, now=lambda: NOW) as root:
        root.put(("users", "bob"), "car", {"text": "Bob drives a red Volvo"})
    with MemoryBankStore(served.url, token=served.tokens["alice"], now=lambda: NOW) as store:
        store.put(ALICE, "diet", {"text": "Alice is vegetarian and never eats fish", "type": "preference"})
        assert store.get(ALICE, "diet").value["type"] == "preference"
        assert store.search(ALICE, query="Does Alice eat fish?")[0].key == "diet"
        # What the token may not use is absent from search and list, and refused by name.
        assert store.list_namespaces() == [ALICE]
        assert {i.namespace for i in store.search(("users",))} == {ALICE}
        before = served_state(admin)
        with pytest.raises(InvalidNamespaceError):
            store.put(("users", "bob"), "car", {"text": "Bob drives a bicycle"})
        with pytest.raises(InvalidNamespaceError):  # nothing of the batch is written
            store.batch([PutOp(ALICE, "new", {"text": "should not be stored"}),
                         PutOp(("users", "bob"), "x", {"text": "x"})])
        with pytest.raises(InvalidNamespaceError):
            store.get(("users", "bob"), "car")
        with pytest.raises(InvalidNamespaceError):
            store.delete(("users", "bob"), "car")
        assert served_state(admin) == before
        assert [m.text for m in admin.memories("users.bob")] == ["Bob drives a red Volvo"]
    with MemoryBankStore(served.url, token=served.tokens["alice-ro"]) as read_only:
        assert read_only.get(ALICE, "diet").value["type"] == "preference"
        with pytest.raises(PermissionDeniedError):
            read_only.put(ALICE, "diet", {"text": "Alice eats fish"})
    assert served_state(admin) == before
    admin.close()
