"""MemoryBank: the one façade every caller (agent, CLI, dashboard, server) uses.

A bank is a store (a DuckDB file: the truth) plus derived indexes kept in memory and cached on
disk next to it. The façade is thin: each method checks nothing itself and delegates to the
service that owns the concern, or combines a few steps (write, then detect conflicts).
ARCHITECTURE.md maps the services and what each may import.
"""

from __future__ import annotations

import os
from datetime import datetime
from pathlib import Path
from typing import IO, Any, Callable, ContextManager, Iterable

import numpy as np

from .index import gate as gate_mod
from .services.changes import Changes
from .client import RemoteBank, is_url
from .services.core import Core
from .services.curation import Curation, StoredHook
from .embedding.embedder import Embedder, ModelDefaults, model_defaults
from .errors import MemoryCoreError, ValidationError
from .services.feedback import FeedbackLog
from .services.labels import AblationRecords, Labels
from .models import (
    Conflict, Event, Feedback, Hit, ImportReport, LabeledQuery, Memory, MergeRecord, Profile, check_namespace,
)
from .services.queries import Queries
from .services.recall import Recall
from .services.recall_writer import RecallWriter
from .index.scoring import Candidates, ScoringParams
from .services.settings import INDEX_MODES, Settings
from .storage.interface import LockWaits
from . import storage
from .services.tokens import Tokens
from .services.transfer import Transfer
from .services.writer import Writer

Progress = Callable[[int], None]

# Memories in a namespace from which loading its index (a recall's first) is worth a progress bar:
# 20,000 take about a second to build from the store; a million, about half a minute.
LOAD_PROGRESS_MIN = 20_000
__all__ = ["MemoryBank", "LOAD_PROGRESS_MIN", "INDEX_MODES"]

class MemoryBank:
    """A long-term memory store for agents. Open with :meth:`open`; use as a context manager."""

    def __init__(self, core: Core):
        """Wire the services of an open :class:`Core` (use :meth:`open`)."""
        self._core = core
        self._settings = Settings(core)
        self._log = RecallWriter(core)
        self._writer = Writer(core)
        self._changes = Changes(core, self._writer)
        self._queries = Queries(core, self._settings)
        self._curation = Curation(core, self._writer, self._changes, self._queries)
        self._recall = Recall(core, self._settings, self._curation, self._log)
        self._feedback = FeedbackLog(core)
        self._labels = Labels(core)
        self._ablations = AblationRecords(core)
        self._transfer = Transfer(core, self._writer)
        self.tokens = Tokens(core)  # the server's access tokens: create, list, revoke, check
        self.llm: Any = None  # an LLM client, when configured with use_llm()

    # -- opening and closing -------------------------------------------------------------------

    @classmethod
    def open(cls, path: str | os.PathLike = "data/memory.duckdb", *, model: str | None = None, actor: str = "api",
             lock_timeout: float = 10.0, read_only: bool = False, embedder: Embedder | None = None,
             token: str | None = None) -> "MemoryBank":
        """Open the bank at ``path``, creating it if missing. A new bank records ``model`` (default:
        multilingual-e5-small), an existing one refuses another; ``actor`` names who changes; ``lock_timeout``
        bounds each wait for another process. An ``http(s)://`` address opens the bank served there
        with ``token``: a :class:`~memory_core.client.RemoteBank`, with this API for its routes."""
        if is_url(path):
            return RemoteBank(path, token=token, model=model)  # type: ignore[return-value]
        bank = cls(Core.open(path, model=model, actor=actor, lock_timeout=lock_timeout, read_only=read_only,
                             embedder=embedder))
        if not read_only:
            bank._log.start()
        return bank

    def close(self) -> None:
        """Write buffered recalls, save changed index caches and let go. Safe to call twice."""
        self._log.close()

    def flush(self) -> int:
        """Write recorded recalls still buffered to the store now; returns how many."""
        return self._log.flush()

    def __enter__(self) -> "MemoryBank":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"MemoryBank({str(self.path)!r}, model={self.model!r})"

    # -- what the bank is ----------------------------------------------------------------------

    @property
    def path(self) -> Path | str:
        """The bank's file (a Path); for a PostgreSQL bank, its URL without password."""
        return self._core.path

    @property
    def location(self) -> str:
        """What names the bank: its file path, or its URL without password."""
        return self._core.store.location

    @property
    def index_folder(self) -> Path:
        return self._core.index_folder

    @property
    def model(self) -> str:
        """The embedding model of the bank's vectors."""
        return self._core.model

    @property
    def model_defaults(self) -> ModelDefaults:
        """The defaults on the bank's model's cosine scale (merge thresholds, cross-language pairs)."""
        return model_defaults(self._core.model)

    @property
    def dim(self) -> int | None:
        """The dimension of the bank's vectors (None until it holds any)."""
        return self._core.dim

    @property
    def actor(self) -> str:
        """Who this bank's events name as having made the change (in this thread)."""
        return self._core.actor

    def acting_as(self, actor: str) -> ContextManager[None]:
        """Record what this thread changes in the ``with`` block as made by ``actor``."""
        return self._core.acting_as(actor)

    def keep_store(self) -> ContextManager[None]:
        """Keep the store between the operations of the ``with`` block (the dashboard wraps each
        page in it): on a bank file that a server also writes, the page's reads share one
        hand-over of the file instead of one each; the server gets the file back when the block
        ends (at the latest after the operation running a second in). No effect on PostgreSQL."""
        return self._core.store.keep()

    def serve_store(self) -> None:
        """This process serves the bank (``memctl serve``): on a bank file, keep the file under
        load for a few seconds instead of one (a process that waits for it still gets it at once).
        No effect on PostgreSQL."""
        self._core.store.serve()

    @property
    def closed(self) -> bool:
        return self._core.closed

    @property
    def embedder(self) -> Embedder:
        """The bank's embedding model, loaded on first use (a few seconds, once per process)."""
        return self._core.embedder

    @property
    def lock_waits(self) -> LockWaits:
        """Seconds this bank waited for the store's write lock, per operation that had to wait (the
        latest 10,000; ``.count`` and ``.seconds`` are the totals)."""
        return self._core.store.lock_waits

    @property
    def last_retrieval_id(self) -> int | None:
        """The log entry of this thread's latest real recall through the bank (what :meth:`feedback` takes)."""
        return self._log.last_retrieval_id

    @property
    def last_search(self) -> dict[str, Any]:
        """How the latest recall searched (approximate, pruned, rows scored...)."""
        return self._recall.last_search

    @property
    def seen_seq(self) -> int:
        """The change number this bank has caught up with (no I/O): every change up to it is in
        what the bank returns now. A server sends it with every answer (``X-Memory-Seq``)."""
        return self._core.synced_seq

    def wait_for_change(self, seq: int, timeout: float = 5.0) -> bool:
        """Catch up until this bank has seen change ``seq`` (read-your-writes across servers: a
        client passes the number another server of the bank gave it); at once when it has.
        False if the store does not hold ``seq`` within ``timeout`` seconds."""
        if isinstance(seq, bool) or not isinstance(seq, int) or seq < 0:
            raise ValidationError(f"a change number is a whole number >= 0, got {seq!r}")
        if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not timeout >= 0:
            raise ValidationError(f"timeout is a number of seconds >= 0, got {timeout!r}")
        return self._core.catch_up_to(seq, float(timeout))

    def watch_changes(self) -> bool:
        """Learn of other processes' writes by notification instead of asking the store before
        each recall (what ``memctl serve`` does on a PostgreSQL bank): recall then costs no
        round trip to the database, and sees another process's write once its notification
        arrives, milliseconds after the commit, where it would otherwise see it at once
        (:meth:`wait_for_change` gives read-your-writes). False for a store without
        notifications (a bank file): nothing changes."""
        return self._core.store.watch()

    @property
    def gate(self) -> gate_mod.Gate:
        """The recall gate: trigger rules, and the LLM judge once :meth:`use_llm` set one."""
        return self._recall.gate

    # For tests and benchmarks that look inside: the store and the loaded indexes.
    @property
    def _store(self) -> storage.Store:
        return self._core.store

    @property
    def _indexes(self) -> Any:
        return self._core.indexes

    @property
    def _journal(self) -> Any:
        return self._core.journal

    # -- namespace indexes ---------------------------------------------------------------------

    def load_namespace(self, namespace: str, progress: Progress | None = None) -> int:
        """Load ``namespace``'s index now (recall does on first use), reporting memories read to
        ``progress`` (worth a progress bar from LOAD_PROGRESS_MIN); returns how many it holds."""
        return self._core.load_namespace(check_namespace(namespace), progress)

    def namespace_loaded(self, namespace: str) -> bool:
        """Whether ``namespace``'s index is in memory (its next recall reads no index files)."""
        return namespace in self._core.indexes

    def rebuild_indexes(self, progress: Progress | None = None) -> int:
        """Throw away the cached indexes and rebuild every namespace's from the store."""
        return self._core.rebuild_indexes([ns for ns, _ in self.namespaces()], progress)

    # -- writing -------------------------------------------------------------------------------

    def add(self, text: str, namespace: str = "default", importance: float = 0.5, kind: str = "explicit",
            category: str = "other", created_at: Any = None, source: str | None = None, embedding: Any = None,
            pinned: bool = False, detect_conflicts: bool = True, context: str | None = None,
            dedupe: bool = True, durability: str | None = None) -> int:
        """Store one memory (a short distilled statement) and return its id. ``importance`` is in
        [0, 1]; ``kind`` explicit (the user said it) or inferred; ``created_at`` default now. A
        contradiction of a stored memory is flagged at once (see :meth:`conflicts`) unless
        ``detect_conflicts=False``. ``context`` situates the memory (the turns around it): recall
        matches its words, it is never shown, and it is set once. ``durability`` (durable or
        transient) is read from the text, category and kind when not given (:mod:`memory_core.language.durability`).

        The same text again (whitespace and Unicode normalised) in a namespace where it is an
        active memory is not stored twice: that memory is reinforced (one more access, the later
        access time, the higher importance, a "reinforce" event in its history) and its id
        returned. ``dedupe=False`` stores it as a new memory all the same. A text equal to an
        archived memory is stored anew (restore the archived one to bring it back instead)."""
        row = {"text": text, "namespace": namespace, "importance": importance, "kind": kind,
               "category": category, "created_at": created_at, "source": source, "pinned": pinned,
               "context": context}
        if durability is not None:
            row["durability"] = durability
        if embedding is not None:
            row["embedding"] = embedding
        return self._curation.add(row, detect=detect_conflicts, client=self.llm, dedupe=dedupe)

    def add_many(self, rows: Iterable[dict[str, Any]], *, progress: Progress | None = None,
                 batch_size: int | None = None, skip_existing: bool = False,
                 report: ImportReport | None = None, dedupe: bool = True) -> list[int]:
        """Store many memories, all or nothing; returns their ids in order. See :meth:`Writer.add_many`.
        A row repeating an active memory of its namespace, or an earlier row, reinforces that
        memory and gets its id, as :meth:`add` does, unless ``dedupe=False`` (rows with an ``id``
        are never deduplicated)."""
        return self._writer.add_many(rows, progress=progress, batch_size=batch_size,
                                     skip_existing=skip_existing, report=report,
                                     on_repeat=self._changes.reinforce_repeats if dedupe else None)

    def add_each(self, rows: Iterable[dict[str, Any]], *,
                 detect_conflicts: bool | list[bool] = True,
                 on_stored: StoredHook | None = None,
                 dedupe: bool | list[bool] = True) -> list[int | MemoryCoreError]:
        """Store each row as :meth:`add` would, together (one embedding batch, one transaction): a
        bad row gets its error in its place, the others their ids. ``on_stored(results, memories)``
        hears of the commit before the contradiction check runs. See :meth:`Curation.add_each`."""
        rows = list(rows)
        detect = [detect_conflicts] * len(rows) if isinstance(detect_conflicts, bool) else list(detect_conflicts)
        again = [dedupe] * len(rows) if isinstance(dedupe, bool) else list(dedupe)
        return self._curation.add_each(rows, detect=detect, client=self.llm, on_stored=on_stored, dedupe=again)

    def import_jsonl(self, source: str | os.PathLike | IO[str], *, on_error: str = "refuse",
                     progress: Progress | None = None, namespace: str | None = None) -> ImportReport:
        """Import memories from JSON lines (what :meth:`export_jsonl` writes)."""
        return self._transfer.import_jsonl(source, on_error=on_error, progress=progress, namespace=namespace)

    def export_jsonl(self, dest: str | os.PathLike | IO[str], namespace: str | None = None,
                     include_embeddings: bool = False) -> int:
        """Write every memory but hard-deleted ones as JSON lines; returns the count."""
        return self._transfer.export_jsonl(dest, namespace, include_embeddings)

    def reembed(self, model: str | None = None, progress: Progress | None = None, batch_size: int = 2048) -> int:
        """Embed every stored memory again with ``model`` and make it the bank's model."""
        return self._writer.reembed(model, progress, batch_size)

    # -- reading -------------------------------------------------------------------------------

    def get(self, memory_id: int) -> Memory:
        """The memory with this id (a hard-deleted one comes back with ``text=None``)."""
        return self._queries.get(memory_id)

    def get_many(self, ids: Iterable[int]) -> dict[int, Memory]:
        """Several memories by id, in one read; NotFoundError names the first missing id."""
        return self._queries.get_many(ids)

    def memories(self, namespace: str | None = None, status: str | None = "active", *, limit: int | None = 100,
                 offset: int = 0, order: str = "newest", **filters: Any) -> list[Memory]:
        """Memories matching the filters, newest first by default (see :func:`queries.memory_filter`)."""
        return self._queries.memories(namespace, status, limit=limit, offset=offset, order=order, **filters)

    def count(self, namespace: str | None = None, status: str | None = "active", **filters: Any) -> int:
        """How many memories match the filters of :meth:`memories`."""
        return self._queries.count(namespace, status, **filters)

    def namespaces(self) -> list[tuple[str, int]]:
        """Every namespace with its number of active memories, largest first."""
        return self._queries.namespaces()

    def stats(self, namespace: str | None = None, now: Any = None) -> dict[str, Any]:
        """Counts by status, kind, category and tier, plus the bank's model and activity."""
        return self._queries.stats(namespace, now)

    def tiers_over_time(self, namespace: str | None, moments: Iterable[Any]) -> list[dict[str, int]]:
        """Live memories by tier (hot, warm, cold) as of each moment, for a trend: one read for all."""
        return self._queries.tiers_over_time(namespace, moments)

    def languages(self, sample: int = 2000) -> dict[str, float]:
        """The share of the newest ``sample`` active memories in each language."""
        return self._queries.languages(sample)

    def language_notice(self) -> str | None:
        """A warning, with the command that fixes it, when the bank's model reads English only but a
        noticeable share of its memories is in another language; else None."""
        return self._queries.language_notice()

    def profile(self, namespace: str, *, limit: int = 12, min_importance: float = 0.6) -> Profile:
        """The most important live memories on identity, work, goals and standing preferences."""
        return self._queries.profile(namespace, limit=limit, min_importance=min_importance)

    def live_vectors(self, namespace: str) -> tuple[np.ndarray, np.ndarray]:
        """Ids and unit vectors of a namespace's live memories (read-only views)."""
        return self._queries.live_vectors(namespace)

    def expiry_candidates(self, *, now: Any = None, older_than_days: float, below_importance: float | None,
                          unused_days: float, namespace: str | None = None,
                          durability: str | None = None) -> list[Memory]:
        """Live, unpinned, old memories not recalled lately, under an importance and of a durability when
        given: what maintenance weighs for expiry or review."""
        return self._queries.expiry_candidates(now=now, older_than_days=older_than_days,
                                               below_importance=below_importance, unused_days=unused_days,
                                               namespace=namespace, durability=durability)

    def usage_summary(self, namespace: str | None = None) -> dict[str, Any]:
        """Live memories, average access count, never recalled: totals a maintenance report carries."""
        return self._queries.usage_summary(namespace)

    def retrievals(self, namespace: str | None = None, limit: int | None = 50, *, since: Any = None,
                   until: Any = None, memory_id: int | None = None) -> list[dict[str, Any]]:
        """Logged recalls, newest first, each with its hits and their score components."""
        return self._queries.retrievals(namespace, limit, since=since, until=until, memory_id=memory_id)

    def history(self, memory_id: int) -> list[Event]:
        """Every event of one memory, oldest first."""
        return self._changes.history(memory_id)

    def events(self, limit: int = 100, action: str | None = None) -> list[Event]:
        """The latest events of the whole bank, newest first."""
        return self._changes.events(limit, action)

    # -- changing ------------------------------------------------------------------------------

    def update(self, memory_id: int, **changes: Any) -> Memory:
        """Change fields of a memory (a new text is embedded again, and read again for its durability
        unless that was set by hand); returns the updated memory."""
        return self._changes.update(memory_id, **changes)

    def reinforce(self, memory_id: int, *, importance: float | None = None, at: Any = None) -> Memory:
        """Count a restatement of a stored memory as a use (one more access, the higher importance)."""
        return self._changes.reinforce(memory_id, importance=importance, at=at)

    def forget(self, memory_id: int, hard: bool = False, reason: str | None = None) -> None:
        """Soft-delete (archive: kept, never recalled, restorable) or, with ``hard=True``, erase the
        text and vector for real (the history keeps only the id and a content hash)."""
        self._changes.forget(memory_id, hard, reason)

    def forget_many(self, ids: Iterable[int], *, hard: bool = False, reason: str | None = None) -> int | None:
        """Forget several memories as one operation; returns its group id (None for no ids)."""
        return self._changes.forget_many(ids, hard=hard, reason=reason)

    def restore_many(self, ids: Iterable[int]) -> int | None:
        """Restore several archived memories as one operation; returns its group id (None for no ids)."""
        return self._changes.restore_many(ids)

    def update_many(self, ids: Iterable[int], **changes: Any) -> int | None:
        """Set the same fields (importance, category, kind, pinned...) on several memories as one
        operation; returns its group id (None for no ids)."""
        return self._changes.update_many(ids, **changes)

    def restore(self, memory_id: int) -> Memory:
        """Bring an archived (soft-deleted) memory back into recall."""
        return self._changes.restore(memory_id)

    def undo(self, event_id: int) -> Memory:
        """Undo one event of a memory's history (every change but a hard delete can be undone)."""
        return self._changes.undo(event_id)

    def undo_group(self, group_id: int) -> int:
        """Undo a whole operation (a merge, a resolution, a maintenance step); returns the undo's group."""
        return self._changes.undo_group(group_id)

    # -- recall --------------------------------------------------------------------------------

    def should_recall(self, query: str) -> gate_mod.GateDecision:
        """Should this turn recall memory at all? Trigger rules, then the optional judge."""
        return self.gate.decide(query)

    def recall(self, query: str, namespace: str = "default", params: ScoringParams | str | None = None,
               now: Any = None, record: bool = True, gate: bool = False, k: int | None = None,
               threshold: float | None = None) -> list[Hit]:
        """The top k memories of ``namespace`` for ``query`` that clear the threshold, possibly none."""
        return self._recall.recall(query, namespace, params, now, record, gate, k, threshold)

    def calibrated(self, params: ScoringParams, query: str) -> ScoringParams:
        """``params`` as recall holds ``query`` to them: the threshold moved for the question's
        language on this bank's model (``scoring.for_language``); what the Tune page draws."""
        return self._recall.calibrated(params, query)

    def candidates(self, queries: list[str], namespace: str, now: Any = None,
                   vectors: np.ndarray | None = None) -> Candidates:
        """What ranking ``queries`` needs, captured once, for what-if tuning; changes nothing."""
        return self._recall.candidates(queries, namespace, now, vectors)

    def feedback(self, retrieval_id: int, answer: str | None = None, used_ids: Iterable[int] | None = None,
                 helpful: bool | None = None, *, at: Any = None, namespaces: Iterable[str] | None = None) -> Feedback:
        """Record what happened after a recall: the answer, the memories it used, whether it helped
        (with ``namespaces``: only for a recall of one of them)."""
        return self._feedback.feedback(retrieval_id, answer, used_ids, helpful, at=at, namespaces=namespaces)

    def feedback_log(self, namespace: str | None = None, *, since: Any = None,
                     until: Any = None) -> list[Feedback]:
        """Recorded feedback, oldest recall first."""
        return self._feedback.feedback_log(namespace, since=since, until=until)

    def usage_counts(self, namespace: str | None = None) -> dict[int, int]:
        """How many times answers used each memory, by memory id."""
        return self._feedback.usage_counts(namespace)

    # -- settings: presets and index mode ------------------------------------------------------

    def presets(self) -> dict[str, ScoringParams]:
        """Built-in and saved presets by name."""
        return self._settings.presets()

    def preset(self, name: str) -> ScoringParams:
        """One preset by name (built-in or saved)."""
        return self._settings.preset(name)

    def save_preset(self, name: str, params: ScoringParams, description: str | None = None) -> None:
        """Save (or overwrite) an operator preset. Built-in names are reserved."""
        self._settings.save_preset(name, params, description)

    def presets_from_other_models(self) -> dict[str, str]:
        """Saved presets set on another model than the bank's now (name -> that model): flagged,
        since their threshold reads that model's cosines."""
        return self._settings.saved_on_other_models()

    def active_preset(self) -> tuple[str, ScoringParams]:
        """The name and parameters agents get when they pass no params."""
        return self._settings.active_preset()

    def set_active_preset(self, name: str) -> None:
        """Make a preset the bank's default for recall; recorded as an event."""
        self._settings.set_active_preset(name)

    @property
    def index_mode(self) -> str:
        """``exact`` (default: every live memory scored) or ``ivf`` (approximate, for 50,000+)."""
        return self._core.index_mode

    def set_index_mode(self, mode: str) -> None:
        """Choose how this bank's recall searches large namespaces: ``exact`` or ``ivf``."""
        self._settings.set_index_mode(mode)

    # -- curation ------------------------------------------------------------------------------

    def use_llm(self, client: Any) -> None:
        """Use an LLM client for the gate's judge and curation by default; ``None``: rules only."""
        self.llm = client
        self._recall.gate = gate_mod.Gate(judge=gate_mod.LLMJudge(client) if client is not None else None)

    def ingest(self, conversation: Any, namespace: str, *, pii: str = "redact", client: Any = None) -> Any:
        """Distil a conversation ({"role", "content", "at"} turns) into memories of ``namespace``:
        store what is new, reinforce what is known, flag contradictions. See :meth:`Curation.ingest`."""
        return self._curation.ingest(conversation, namespace, pii=pii, client=client or self.llm)

    def detect_conflicts(self, namespace: str, *, memory_ids: Iterable[int] | None = None,
                         client: Any = None) -> list[Conflict]:
        """Find and record contradictions in ``namespace`` (of ``memory_ids`` when given); returns new ones."""
        return self._curation.detect_conflicts(namespace, memory_ids=memory_ids, client=client or self.llm)

    def maintain(self, *, dry_run: bool = False, now: Any = None, steps: list[str] | None = None,
                 namespace: str | None = None, plan: Any = None, progress: Any = None, client: Any = None) -> Any:
        """Run (or preview) maintenance: :func:`maintenance.plan_run`, then :meth:`apply_maintenance`.

        ``client`` is the LLM that judges conflicts and writes merges for this run (a face picks it
        per run, ``memctl maintain --llm``); else the bank's own (:meth:`use_llm`), else the rules.
        """
        from .curation import maintenance

        work = maintenance.plan_run(self, now=now, plan=plan, steps=steps, namespace=namespace,
                                    client=client or self.llm, progress=progress)
        return self.apply_maintenance(work, dry_run=dry_run)

    def apply_maintenance(self, work: Any, *, dry_run: bool = False) -> Any:
        """Make a planned maintenance run's changes (unless ``dry_run``), record it; returns its report."""
        return self._curation.apply_maintenance(work, dry_run=dry_run)

    def undo_maintenance_run(self, run_id: int) -> list[int]:
        """Undo everything a maintenance run changed, all or nothing; returns the undo groups."""
        return self._curation.undo_maintenance_run(run_id)

    def merge_candidates(self, namespace: str) -> list[Any]:
        """Live memories of ``namespace`` that could be merged (not pinned, not in an open conflict)."""
        return self._curation.merge_candidates(namespace)

    def plan_merges(self, namespace: str, *, threshold: float | None = None, related_threshold: float | None = None,
                    client: Any = None, max_size: int = 6) -> list[tuple[Any, Any]]:
        """Every merge worth making in ``namespace`` as (Cluster, MergePreview); changes nothing."""
        return self._curation.plan_merges(namespace, threshold=threshold, related_threshold=related_threshold,
                                          client=client or self.llm, max_size=max_size)

    def conflicts(self, namespace: str | None = None, status: str | None = "open",
                  memory_id: int | None = None) -> list[Conflict]:
        """Recorded contradictions, newest first; ``status=None`` for every status."""
        return self._curation.conflicts(namespace, status, memory_id)

    def conflict(self, conflict_id: int) -> Conflict:
        """One recorded conflict by id."""
        return self._curation.conflict(conflict_id)

    def record_conflict(self, a_id: int, b_id: int, *, kind: str, evidence: str, confidence: float,
                        suggestion: str, path: str) -> Conflict | None:
        """Record that two live memories of one namespace contradict each other (None: known pair)."""
        return self._curation.record_conflict(a_id, b_id, kind=kind, evidence=evidence, confidence=confidence,
                                              suggestion=suggestion, path=path)

    def record_conflicts(self, found: list[dict[str, Any]]) -> list[Conflict | None]:
        """Record several conflicts in one operation; a bad one refuses them all."""
        return self._curation.record_conflicts(found)

    def resolve_conflict(self, conflict_id: int, rule: str, *, memory_id: int | None = None,
                         text: str | None = None) -> Conflict:
        """Resolve a conflict by a rule (see RESOLUTIONS); one undoable operation."""
        return self._curation.resolve_conflict(conflict_id, rule, memory_id=memory_id, text=text)

    def dismiss_conflicts(self, conflict_ids: Iterable[int]) -> int | None:
        """Dismiss several open conflicts as one undoable operation; returns its group (None for no ids)."""
        return self._curation.dismiss_conflicts(conflict_ids)

    def merge(self, ids: Iterable[int], text: str | None = None, *, path: str = "manual",
              detail: str | None = None) -> MergeRecord:
        """Merge live memories of one namespace into a new one; one undoable operation."""
        return self._curation.merge(ids, text, path=path, detail=detail)

    def merges(self, namespace: str | None = None, *, merge_id: int | None = None,
               include_undone: bool = True) -> list[MergeRecord]:
        """Past merges, newest first."""
        return self._curation.merges(namespace, merge_id=merge_id, include_undone=include_undone)

    def undo_merge(self, merge_id: int) -> None:
        """Undo a merge: the members come back as they were and the merged memory is removed."""
        self._curation.undo_merge(merge_id)

    def record_maintenance_run(self, *, started_at: datetime, dry_run: bool, plan: dict[str, Any],
                               report: dict[str, Any]) -> int:
        """Log a maintenance run (dry or real) with its plan and report; returns its id."""
        return self._curation.record_maintenance_run(started_at=started_at, dry_run=dry_run, plan=plan,
                                                     report=report)

    def maintenance_runs(self, limit: int = 20, include_dry_runs: bool = True) -> list[dict[str, Any]]:
        """Past maintenance runs, newest first, with their plans and reports."""
        return self._curation.maintenance_runs(limit, include_dry_runs)

    # -- evaluation records: labels and ablation runs --------------------------------------------

    def label(self, namespace: str, query: str, memory_id: int, relevant: bool = True, *,
              as_of: Any = None, set_name: str = "default") -> None:
        """Mark memory ``memory_id`` as relevant (or not) to ``query`` in ``namespace``."""
        self._labels.label(namespace, query, memory_id, relevant, as_of=as_of, set_name=set_name)

    def unlabel(self, namespace: str, query: str, memory_id: int, *, as_of: Any = None,
                set_name: str = "default") -> bool:
        """Remove one label; returns whether there was one."""
        return self._labels.unlabel(namespace, query, memory_id, as_of=as_of, set_name=set_name)

    def labels(self, namespace: str | None = None, set_name: str | None = None) -> list[LabeledQuery]:
        """The labeled queries (of one namespace and/or set), in the order they were first labeled."""
        return self._labels.labels(namespace, set_name)

    def label_sets(self) -> dict[str, int]:
        """Label set name → number of labeled queries in it."""
        return self._labels.label_sets()

    def import_labels(self, source: str | os.PathLike | IO[str] | Iterable[dict[str, Any]], *,
                      set_name: str | None = None) -> int:
        """Import labeled queries from JSON lines; returns how many queries were imported."""
        return self._labels.import_labels(source, set_name=set_name)

    def export_labels(self, dest: str | os.PathLike | IO[str], namespace: str | None = None,
                      set_name: str | None = None) -> int:
        """Write the labeled queries as JSON lines (the format :meth:`import_labels` reads)."""
        return self._labels.export_labels(dest, namespace, set_name)

    def record_ablation(self, run: dict[str, Any], cases: list[dict[str, Any]]) -> int:
        """Store one ablation run and its cases; returns the run id."""
        return self._ablations.record_ablation(run, cases)

    def ablation_runs(self, limit: int | None = 50) -> list[dict[str, Any]]:
        """Past ablation runs, newest first."""
        return self._ablations.ablation_runs(limit)

    def ablation_cases(self, run_id: int) -> list[dict[str, Any]]:
        """The cases of one ablation run, in order."""
        return self._ablations.ablation_cases(run_id)

    # -- backup and restore --------------------------------------------------------------------

    def backup(self, dest: str | os.PathLike, *, overwrite: bool = False) -> int:
        """Write a consistent copy of the bank to the file ``dest`` (complete or absent; no index
        caches, no hard-deleted text); returns the memories it holds. Safe while others use it.
        Recalls this bank still buffers are written first: the copy holds every recall made before."""
        self.flush()
        return self._core.backup(dest, overwrite)

    @staticmethod
    def restore_backup(backup: str | os.PathLike, path: str | os.PathLike, *, force: bool = False,
                       lock_timeout: float = 10.0) -> int:
        """Put a :meth:`backup` in place of the bank at ``path`` (an existing one only with ``force``);
        returns its memories. (:meth:`restore` brings back one soft-deleted memory.)"""
        return storage.restore_backup(backup, path, force=force, lock_timeout=lock_timeout)

    @staticmethod
    def copy_bank(source: str | os.PathLike, dest: str | os.PathLike, *, force: bool = False,
                  lock_timeout: float = 10.0) -> int:
        """Copy the bank at ``source`` to ``dest`` exactly (ids, dates, statuses, vectors, history,
        the recall log, labels, presets, tokens), between a bank file and a ``postgresql://`` URL in
        either direction; returns the memories copied. ``dest`` must hold no memories unless
        ``force``. Agents may keep using ``source`` meanwhile: the copy is one snapshot of it."""
        from .storage.copy import copy_bank

        src = storage.open_store(source, lock_timeout=lock_timeout)
        dst = storage.open_store(dest, lock_timeout=lock_timeout)
        try:
            return copy_bank(src, dst, force=force)
        finally:
            src.release()
            dst.release()
