"""memory_core: long-term memory for LLM agents, ranked by relevance, recency, importance and use.

    from memory_core import MemoryBank

    with MemoryBank.open("data/memory.duckdb") as bank:
        bank.add("Prefers vegetarian food", namespace="alice", importance=0.8, category="preference")
        for hit in bank.recall("what should I cook tonight?", namespace="alice"):
            print(hit.score, hit.memory.text)

The public surface is what this package exports (``__all__`` below) and the submodules named in
:data:`PUBLIC_MODULES`; the dashboard (``app.py``, ``dashboard/``) and ``memctl`` use nothing else
(tests/test_public_api.py checks it):

- ``memory_core.index.scoring``: ScoringParams and the presets, the parts of a score, the tier rule
  (``tier_of``, ``tier_bounds``, ``HOT_DAYS``, ``COLD_DAYS``).
- ``memory_core.evaluation.metrics``: retrieval, usage, feedback and ablation figures as tables; reads only.
- ``memory_core.evaluation.tuning``: labeled query sets, cross-validated tuning of the weights, replay of
  logged recalls under other settings.
- ``memory_core.curation.merge``: merge clusters and previews, and their thresholds.
- ``memory_core.curation.maintenance``: the maintenance plan, its steps and schedule.
- ``memory_core.language.durability``: the durability rule's reading of a text (``infer``: durable or
  transient, and why), what a memory's page shows beside the stored durability.
- ``memory_core.demo``: the demo set bundled with the package, and ``build(bank)``.
- ``memory_core.server``: the REST API and MCP endpoint of ``memctl serve`` (``create_app``, ``serve``),
  and MCP over stdio (``serve_stdio``, ``memctl mcp``).
- ``memory_core.client``: ``RemoteBank``, the bank's API over HTTP for a bank ``memctl serve`` serves
  (what ``MemoryBank.open("http://...", token=...)`` returns).

The modules sit in packages by domain (``storage``, ``language``, ``embedding``, ``index``,
``curation``, ``evaluation``, ``services``; ARCHITECTURE.md draws the map). A module that moved into
one stays importable from its old path (``memory_core.scoring``) for a release, with a
DeprecationWarning that names the new one.

Every other module (bank internals, storage, index, text, words, conflicts, extract, evaluate,
redact, llm, embed, ...) is internal and may change without notice; what faces need of them is
exported here. Names with a leading underscore are never public.
"""

from typing import TYPE_CHECKING as _TYPE_CHECKING, Any as _Any

from .errors import (
    AuthenticationError, BankLockedError, BankReadOnlyError, CorruptBankError, ImportFormatError, LLMError,
    LLMNotConfiguredError, MemoryCoreError, ModelMismatchError, NotFoundError, PayloadTooLargeError,
    PermissionDeniedError, ServerUnavailableError, StateError, ValidationError,
)
from .models import (
    MAX_TEXT, CATEGORIES, CONFLICT_STATUSES, DURABILITIES, INDEX_MODES, KINDS, MAINTENANCE_STEPS, PII_MODES, RESOLUTIONS,
    STATUSES, Conflict, Event, Feedback, Hit, ImportReport, LabeledQuery, Memory, MergeRecord, Profile, check_unicode,
    format_for_prompt, humanize_age, parse_time,
)
from .storage.cache_dir import cache_root
from ._moved import install as _install_moved

_install_moved()

# The exports that pull in the bank, the model's code, NumPy or the index: imported on first use
# (PEP 562), so that a command which needs none of them (memctl over its warm helper, --help)
# does not pay for them. ``from memory_core import MemoryBank`` works as before.
_LAZY: dict[str, tuple[str, str]] = {
    "MemoryBank": (".bank", "MemoryBank"), "LOAD_PROGRESS_MIN": (".bank", "LOAD_PROGRESS_MIN"),
    "RemoteBank": (".client", "RemoteBank"),
    "AblationCase": (".evaluation.evaluate", "AblationCase"), "AblationResult": (".evaluation.evaluate", "AblationResult"),
    "ablate": (".evaluation.evaluate", "ablate"), "load_cases": (".evaluation.evaluate", "load_cases"),
    "parse_cases": (".evaluation.evaluate", "parse_cases"),
    "Gate": (".index.gate", "Gate"), "GateDecision": (".index.gate", "GateDecision"),
    "should_recall": (".index.gate", "should_recall"),
    "get_client": (".language.llm", "get_client"),
    "PRESETS": (".index.scoring", "PRESETS"), "TIERS": (".index.scoring", "TIERS"),
    "LANGUAGES": (".language.text", "LANGUAGE_NAMES"),
    "ScoringParams": (".index.scoring", "ScoringParams"),
    "Token": (".services.tokens", "Token"), "TokenActivity": (".services.tokens", "TokenActivity"),
}


if _TYPE_CHECKING:  # what _LAZY names, for type checkers and the import graph (scripts/import_graph.py)
    from .bank import LOAD_PROGRESS_MIN, MemoryBank
    from .client import RemoteBank
    from .evaluation.evaluate import AblationCase, AblationResult, ablate, load_cases, parse_cases
    from .index.gate import Gate, GateDecision, should_recall
    from .index.scoring import PRESETS, TIERS, ScoringParams
    from .language.llm import get_client
    from .services.tokens import Token, TokenActivity


def __getattr__(name: str) -> _Any:
    if name == "ORDERS":  # the sort orders MemoryBank.memories(order=...) takes
        from .services.queries import ORDERS as order_sql

        value: _Any = tuple(order_sql)
    elif name in _LAZY:
        import importlib

        module, attr = _LAZY[name]
        value = getattr(importlib.import_module(module, __name__), attr)
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY) | {"ORDERS"})


PUBLIC_MODULES = ("index.scoring", "evaluation.metrics", "evaluation.tuning", "curation.merge", "curation.maintenance",
                  "language.durability", "demo", "server", "client")

__all__ = [
    # the façade and its records
    "MemoryBank", "RemoteBank", "ScoringParams", "PRESETS", "Memory", "Hit", "Event", "ImportReport", "Conflict",
    "MergeRecord", "Profile", "Feedback", "LabeledQuery", "format_for_prompt", "Token", "TokenActivity",
    # the recall gate
    "Gate", "GateDecision", "should_recall",
    # vocabularies (what a choice may name)
    "KINDS", "CATEGORIES", "DURABILITIES", "LANGUAGES", "STATUSES", "TIERS", "ORDERS", "CONFLICT_STATUSES", "RESOLUTIONS", "PII_MODES", "MAINTENANCE_STEPS",
    "INDEX_MODES",
    "LOAD_PROGRESS_MIN",
    "MAX_TEXT",  # the longest text (characters) a memory may have
    # time
    "parse_time", "humanize_age",
    # text a face was given: the check every field of a memory, a query and a note goes through
    "check_unicode",
    # the configured LLM (MEMCTL_LLM_*), for bank.use_llm and curation
    "get_client",
    # ablation (an LLM answers with and without memory, a judge compares)
    "AblationCase", "AblationResult", "parse_cases", "load_cases", "ablate",
    # errors
    "MemoryCoreError", "ValidationError", "NotFoundError", "ImportFormatError", "ModelMismatchError",
    "BankLockedError", "BankReadOnlyError", "CorruptBankError", "StateError", "LLMError",
    "LLMNotConfiguredError", "AuthenticationError", "PermissionDeniedError", "PayloadTooLargeError",
    "ServerUnavailableError",
    "PUBLIC_MODULES",
    # the machine's cache folder (derived files: index caches, built models, memctl's warm helpers)
    "cache_root",
]
__version__ = "0.1.0"
