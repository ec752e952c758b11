"""The LangChain retriever over a bank (memory_core.integrations.langchain_retriever): the bank's
recall as Documents, with the score and its components in the metadata, logged for feedback."""

from __future__ import annotations

import asyncio
from datetime import datetime, timedelta, timezone

import pytest
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever

from memory_core import MemoryBank, ScoringParams
from memory_core.integrations.langchain_retriever import MemoryBankRetriever

NOW = datetime(2026, 3, 1, 12, 0, tzinfo=timezone.utc)
ROWS = [  # text, importance, category, days before NOW
    ("Alice is vegetarian and never eats fish", 0.8, "preference", 40),
    ("Alice's daughter Maja plays the violin", 0.7, "fact", 20),
    ("Alice is training for the Oslo marathon in June", 0.9, "goal", 10),
    ("Alice prefers green tea over coffee in the morning", 0.6, "preference", 5),
]


@pytest.fixture
def bank(tmp_path, embedder):
    b = MemoryBank.open(tmp_path / "bank.duckdb", embedder=embedder)
    b.add_many([{"text": t, "namespace": "alice", "importance": i, "category": c,
                 "created_at": NOW - timedelta(days=d)} for t, i, c, d in ROWS])
    b.add("Bob drinks black coffee", namespace="bob", created_at=NOW)
    yield b
    b.close()


def test_documents_carry_the_recall_and_its_score_components(bank) -> None:
    retriever = MemoryBankRetriever(bank=bank, namespace="alice", now=lambda: NOW)
    assert isinstance(retriever, BaseRetriever)
    query = "What does Alice drink in the morning?"
    hits = bank.recall(query, namespace="alice", now=NOW, record=False)
    docs = retriever.invoke(query)
    assert docs and all(isinstance(d, Document) for d in docs)
    assert [d.page_content for d in docs] == [h.memory.text for h in hits]
    top, hit = docs[0].metadata, hits[0]
    assert docs[0].page_content == "Alice prefers green tea over coffee in the morning"
    assert top["score"] == pytest.approx(hit.score, abs=1e-4)  # the recorded recall counted no use yet
    assert set(top["components"]) >= {"similarity", "lexical", "recency", "importance", "frequency"}
    assert top["components"]["similarity"] == pytest.approx(hit.components["similarity"], abs=1e-6)
    assert top["score_similarity"] == top["components"]["similarity"]
    assert (top["id"], top["namespace"], top["category"], top["rank"]) == (hit.memory.id, "alice", "preference", 1)
    assert top["score"] >= bank.active_preset()[1].threshold


def test_an_off_topic_question_gets_no_documents(bank) -> None:
    retriever = MemoryBankRetriever(bank=bank, namespace="alice", now=lambda: NOW)
    assert retriever.invoke("What is the capital of Australia?") == []
    assert MemoryBankRetriever(bank=bank, namespace="carol", now=lambda: NOW).invoke("What does Carol like?") == []


def test_recalls_are_logged_and_take_feedback(bank) -> None:
    retriever = MemoryBankRetriever(bank=bank, namespace="alice", now=lambda: NOW)
    docs = retriever.invoke("Does Alice eat fish?")
    rid = docs[0].metadata["retrieval_id"]
    assert rid is not None and all(d.metadata["retrieval_id"] == rid for d in docs)
    bank.flush()
    [logged] = bank.retrievals("alice", limit=None)
    assert logged["id"] == rid and [h["memory_id"] for h in logged["hits"]] == [d.metadata["id"] for d in docs]
    feedback = bank.feedback(rid, used_ids=[docs[0].metadata["id"]], at=NOW)
    assert list(feedback.used_ids) == [docs[0].metadata["id"]]

    what_if = MemoryBankRetriever(bank=bank, namespace="alice", record=False, now=lambda: NOW)
    assert what_if.invoke("Does Alice eat fish?")[0].metadata["retrieval_id"] is None
    bank.flush()
    assert len(bank.retrievals("alice", limit=None)) == 1


def test_params_k_and_threshold_override_the_active_preset(bank) -> None:
    everything = MemoryBankRetriever(bank=bank, namespace="alice", k=10, threshold=0.0, now=lambda: NOW)
    assert len(everything.invoke("Alice")) == len(ROWS)
    one = MemoryBankRetriever(bank=bank, namespace="alice", k=1, threshold=0.0, now=lambda: NOW)
    assert len(one.invoke("Alice")) == 1
    # weighted-recall's threshold is 0 (and its k 5): every memory comes back, where the active
    # preset's threshold keeps the weak matches of a one-word query out.
    assert ScoringParams.preset("weighted-recall").threshold == 0
    preset = MemoryBankRetriever(bank=bank, namespace="alice", params="weighted-recall", now=lambda: NOW)
    assert len(preset.invoke("Alice")) == len(ROWS)
    assert len(MemoryBankRetriever(bank=bank, namespace="alice", now=lambda: NOW).invoke("Alice")) < len(ROWS)



def test_k_and_threshold_per_call_override_the_retrievers_own(bank) -> None:
    retriever = MemoryBankRetriever(bank=bank, namespace="alice", k=1, now=lambda: NOW)
    assert len(retriever.invoke("Alice", k=10, threshold=0.0)) == len(ROWS)
    assert len(asyncio.run(retriever.ainvoke("Alice", k=3, threshold=0.0))) == 3
    assert len(retriever.invoke("Alice", threshold=0.0)) == 1  # the retriever's own k
    # k caps the documents, it never fills them up with memories below the threshold.
    assert retriever.invoke("What is the capital of Australia?", k=10) == []
    with pytest.raises(TypeError):  # a misspelt argument is refused, not ignored
        retriever.invoke("Alice", top_k=3)

def test_async_and_batch(bank) -> None:
    retriever = MemoryBankRetriever(bank=bank, namespace="alice", now=lambda: NOW)
    docs = asyncio.run(retriever.ainvoke("What instrument does Maja play?"))
    assert docs[0].page_content == "Alice's daughter Maja plays the violin"
    many = retriever.batch(["Does Alice eat fish?", "What is the capital of Australia?"])
    assert many[0][0].page_content == "Alice is vegetarian and never eats fish" and many[1] == []


def test_bad_input_is_refused(bank) -> None:
    retriever = MemoryBankRetriever(bank=bank, namespace="alice", now=lambda: NOW)
    with pytest.raises(ValueError):
        retriever.invoke("")
    with pytest.raises(ValueError):
        MemoryBankRetriever(bank=bank, namespace="alice", k=0).invoke("tea")
    bank.flush()
    assert bank.retrievals("alice", limit=None) == []
