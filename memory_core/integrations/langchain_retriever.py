"""A LangChain ``BaseRetriever`` over a memory bank: a chain fetches context with the bank's
blended recall (top k that clear the threshold, possibly none) as ``Document``s.

    from memory_core import MemoryBank
    from memory_core.integrations.langchain_retriever import MemoryBankRetriever

    retriever = MemoryBankRetriever(bank=MemoryBank.open("data/memory.duckdb"), namespace="alice")
    docs = retriever.invoke("what should I cook tonight?")
    docs[0].metadata["score"], docs[0].metadata["components"]   # {"similarity": ..., "recency": ...}

Each document's ``page_content`` is the memory's text; its metadata holds the memory's id,
namespace, kind, category, importance and dates, the blended ``score``, its ``components`` (also
flattened as ``score_<component>``), the ``rank``, the id of a memory it contradicts
(``conflict_with``), and the ``retrieval_id`` of the logged recall, which ``bank.feedback`` takes
to say which memories the answer used. Recalls are recorded by default (``record=False`` makes
them what-ifs), so the dashboard's usage pages see them.

``k`` and ``threshold`` may also be given per call, ``retriever.invoke(query, k=3)`` (LangChain's
standard retriever tests ask for that): ``k`` caps the documents, it never adds one below the
threshold, so a question few memories answer gets fewer than ``k``.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any

from langchain_core.callbacks import AsyncCallbackManagerForRetrieverRun, CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from langchain_core.runnables.config import run_in_executor
from pydantic import ConfigDict

from memory_core import Hit, ScoringParams

__all__ = ["MemoryBankRetriever", "document"]


def document(hit: Hit, retrieval_id: int | None = None) -> Document:
    """The LangChain document of one recalled memory, with its score and the score's parts."""
    m = hit.memory
    metadata: dict[str, Any] = {
        "id": m.id, "namespace": m.namespace, "kind": m.kind, "category": m.category, "importance": m.importance,
        "created_at": m.created_at.isoformat(), "updated_at": m.updated_at.isoformat(), "source": m.source,
        "score": hit.score, "components": dict(hit.components), "rank": hit.rank,
        "conflict_with": hit.conflict_with, "approximate": hit.approximate, "retrieval_id": retrieval_id,
    }
    metadata.update({f"score_{name}": value for name, value in hit.components.items()})
    return Document(page_content=m.text or "", metadata=metadata, id=str(m.id))


class MemoryBankRetriever(BaseRetriever):
    """Recall from one namespace of a bank (a :class:`~memory_core.MemoryBank` or a served bank's
    :class:`~memory_core.RemoteBank`). ``params`` (a ScoringParams or a preset name), ``k`` and
    ``threshold`` override the bank's active preset; ``now`` is the clock recall ranks recency by."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    bank: Any
    namespace: str = "default"
    params: ScoringParams | str | None = None
    k: int | None = None
    threshold: float | None = None
    record: bool = True
    now: Callable[[], datetime] | None = None

    def _get_relevant_documents(self, query: str, *, run_manager: CallbackManagerForRetrieverRun,
                                k: int | None = None, threshold: float | None = None) -> list[Document]:
        return _recall(self, query, k, threshold)

    async def _aget_relevant_documents(self, query: str, *, run_manager: AsyncCallbackManagerForRetrieverRun,
                                       k: int | None = None, threshold: float | None = None) -> list[Document]:
        # BaseRetriever's own runs the sync recall in a thread too, but drops the call's k and threshold.
        return await run_in_executor(None, _recall, self, query, k, threshold)


def _recall(retriever: MemoryBankRetriever, query: str, k: int | None, threshold: float | None) -> list[Document]:
    """The documents of one recall: the call's k and threshold, else the retriever's."""
    hits = retriever.bank.recall(query, namespace=retriever.namespace, params=retriever.params,
                                 now=retriever.now() if retriever.now is not None else None, record=retriever.record,
                                 k=retriever.k if k is None else k,
                                 threshold=retriever.threshold if threshold is None else threshold)
    retrieval_id = retriever.bank.last_retrieval_id if retriever.record else None
    return [document(h, retrieval_id) for h in hits]
