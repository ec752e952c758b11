"""memory_core: long-term memory for LLM agents, ranked by relevance, recency, importance and use.

    from memory_core import MemoryBank

    with MemoryBank.open("data/memory.duckdb") as bank:
        bank.add("Prefers vegetarian food", namespace="alice", importance=0.8, category="preference")
        for hit in bank.recall("what should I cook tonight?", namespace="alice"):
            print(hit.score, hit.memory.text)
"""

from .bank import MemoryBank
from .errors import (
    BankLockedError, BankReadOnlyError, CorruptBankError, ImportFormatError, LLMError,
    LLMNotConfiguredError, MemoryCoreError, ModelMismatchError, NotFoundError, StateError,
    ValidationError,
)
from .gate import Gate, GateDecision, should_recall
from .models import (
    CATEGORIES, KINDS, STATUSES, Conflict, Event, Feedback, Hit, ImportReport, LabeledQuery, Memory, MergeRecord,
    Profile,
    format_for_prompt,
)
from .scoring import PRESETS, ScoringParams

__all__ = [
    "MemoryBank", "ScoringParams", "PRESETS", "Memory", "Hit", "Event", "ImportReport", "Conflict",
    "MergeRecord", "Profile", "Feedback", "LabeledQuery",
    "format_for_prompt", "Gate", "GateDecision", "should_recall", "KINDS", "CATEGORIES", "STATUSES",
    "MemoryCoreError", "ValidationError", "NotFoundError", "ImportFormatError", "ModelMismatchError",
    "BankLockedError", "BankReadOnlyError", "CorruptBankError", "StateError", "LLMError",
    "LLMNotConfiguredError",
]
__version__ = "0.1.0"
