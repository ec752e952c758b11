"""LangChain's own standard tests for retrievers (the ``langchain-tests`` package,
``RetrieversIntegrationTests``) run against MemoryBankRetriever on a real bank, on both stores.

The suite asks that the example query return documents, exactly 3 with ``k=3`` and 1 with ``k=1``
(in the constructor and per call, sync and async). Recall returns the top k that clear the
threshold, so the bank is seeded with five memories that answer the example query and four that do
not (the suite's k=3 then picks among five, not all there are); the tests below the suite's check
that the example query gets the five and none of the others, whatever k: k caps, never fills up.
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from typing import Any

import pytest
from langchain_tests.integration_tests import RetrieversIntegrationTests

from memory_core.integrations.langchain_retriever import MemoryBankRetriever

NOW = datetime(2026, 3, 1, 12, 0, tzinfo=timezone.utc)
QUERY = "What vegetarian dishes does Alice cook?"
ANSWERS = [  # what the example query asks about
    "Alice cooks a lentil curry with coconut milk most Sundays",
    "Alice bakes sourdough bread every weekend",
    "Alice's favourite dish to cook is mushroom risotto",
    "Alice makes her pasta sauce from the basil and tomatoes she grows",
    "Alice cooks vegetarian stir-fries with cashews, since she is allergic to peanuts",
]
OFF_TOPIC = [  # in the same namespace, about other things: below the threshold for the query
    "Maja, Alice's daughter, plays the violin",
    "The Oslo marathon is in June; the training plan peaks in May",
    "The structural engineering firm moved its office to Bergen",
    "The blue electric hatchback is due for its tyre change in April",
]


# The suite's async test carries no marker (LangChain's own packages run pytest-asyncio in auto
# mode, which would claim every async test of the project): anyio's pytest plugin (installed with
# httpx) runs the class's async tests on asyncio, and leaves its sync ones alone.
@pytest.mark.anyio
class TestMemoryBankRetrieverStandard(RetrieversIntegrationTests):
    @pytest.fixture(autouse=True)
    def _seeded_bank(self, bank) -> None:
        """The test's bank (a DuckDB file or a PostgreSQL database) with the memories above, a day
        apart, and one of another namespace that answers the query too (never returned)."""
        bank.add_many([{"text": text, "namespace": "alice", "created_at": NOW - timedelta(days=i)}
                       for i, text in enumerate(ANSWERS + OFF_TOPIC)])
        bank.add("Bob cooks vegetarian chilli with black beans", namespace="bob", created_at=NOW)
        self.bank = bank

    @property
    def retriever_constructor(self) -> type[MemoryBankRetriever]:
        return MemoryBankRetriever

    @property
    def retriever_constructor_params(self) -> dict[str, Any]:
        return {"bank": self.bank, "namespace": "alice", "now": lambda: NOW}

    @property
    def retriever_query_example(self) -> str:
        return QUERY

    # -- what the suite leaves unchecked: which documents come back ---------------------------

    def test_the_example_query_recalls_what_answers_it_and_nothing_else(self, retriever) -> None:
        assert self.bank.active_preset()[1].k == 5  # the default k: the five answers, by score
        docs = retriever.invoke(QUERY)
        assert sorted(d.page_content for d in docs) == sorted(ANSWERS)
        assert all(d.metadata["namespace"] == "alice" for d in docs)
        threshold = self.bank.active_preset()[1].threshold
        assert all(d.metadata["score"] >= threshold for d in docs)
        assert [d.metadata["rank"] for d in docs] == [1, 2, 3, 4, 5]

    def test_k_caps_the_documents_and_never_fills_them_up(self, retriever) -> None:
        top3 = retriever.invoke(QUERY, k=3)
        assert [d.page_content for d in top3] == [d.page_content for d in retriever.invoke(QUERY)][:3]
        # More room than answers: the off-topic memories stay below the threshold.
        assert sorted(d.page_content for d in retriever.invoke(QUERY, k=20)) == sorted(ANSWERS)
        # Without the threshold, k is filled from the whole namespace (and no other).
        everything = retriever.invoke(QUERY, k=20, threshold=0.0)
        assert sorted(d.page_content for d in everything) == sorted(ANSWERS + OFF_TOPIC)
