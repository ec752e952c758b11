"""MemoryBank: the one façade every caller (agent, CLI, dashboard) uses.

A bank is a DuckDB file (the truth) plus derived indexes kept in memory and cached on disk next
to it. The file is held only for the length of one operation, so several processes can share a
bank; each operation first catches up with what others changed (by change sequence).
"""

from __future__ import annotations

import atexit
import contextlib
import json
import math
import os
import shutil
import threading
import time
import weakref
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import IO, Any, Callable, Iterable, Iterator

import duckdb
import numpy as np
import pyarrow as pa

from . import gate as gate_mod
from . import usage as usage_mod
from .embed import DEFAULT_MODEL, Embedder, canonical_model_name, get_embedder
from .errors import (
    BankReadOnlyError, ImportFormatError, ModelMismatchError, NotFoundError, StateError, ValidationError,
)
from .index import HASH_DTYPE, NamespaceIndex, lexical_tokens, memory_tokens, namespace_key
from .recall_log import FLUSH_AT, FLUSH_INTERVAL, RecallJournal
from .models import (
    CATEGORIES, CONFLICT_STATUSES, KINDS, RESOLUTIONS, STATUSES, Conflict, Event, Feedback, Hit, ImportReport,
    LabeledQuery, Memory, MergeRecord, Profile, check_choice, check_context, check_importance, check_namespace,
    check_text, parse_time,
)
from .scoring import COLD_DAYS, HOT_DAYS, PRESETS, Candidates, ScoringParams, add_kept_pairs, tier_of
from .store import MEMORY_COLUMNS, Store, content_hash, registered, to_aware, to_naive_utc, utcnow

Progress = Callable[[int], None]

_EDITABLE = ("text", "namespace", "kind", "category", "importance", "created_at", "pinned", "source")
_MEMORY_CACHE_MAX = 20_000
# Rows per write: a batch the model embeds takes seconds, and the file is let go between batches;
# rows that carry vectors go in bigger transactions (each commit and checkpoint has a fixed cost).
_BATCH_EMBED = 2048
_BATCH_VECTORS = 8192
_SAVE_EVERY = 1000  # index changes before a long-lived bank saves its index cache unasked
_RETRIEVAL_ID_BLOCK = 4096  # retrieval ids a bank reserves at a time (recall knows its id at once)
# Memories in a namespace from which loading its index (a recall's first) is worth a progress bar:
# 20,000 take about a second to build from the store; a million, about half a minute.
LOAD_PROGRESS_MIN = 20_000
INDEX_MODES = ("exact", "ivf")
# What a Memory needs beyond the index's arrays, kept per row so recall never opens the file for it.
_INFO_COLUMNS = ("text", "kind", "category", "created_at", "updated_at", "last_accessed_at", "pinned", "source",
                 "embedding_model", "superseded_by", "merged_into", "context")
_INFO_SQL = ", ".join(_INFO_COLUMNS)  # fixed column names, never input
_OPEN_BANKS: "weakref.WeakSet[MemoryBank]" = weakref.WeakSet()


@atexit.register
def _flush_open_banks() -> None:
    """Write what open banks still buffer when the interpreter exits without closing them."""
    for bank in list(_OPEN_BANKS):
        try:
            bank.flush()
        except Exception:  # the journal keeps it; the next opener writes it
            pass


def _columns(rows: Any) -> dict[str, list]:
    """An Arrow table's columns as Python lists, all but the embedding."""
    if "embedding" in rows.column_names:
        rows = rows.drop_columns(["embedding"])
    return rows.to_pydict()


def _info(cols: dict[str, list], i: int) -> tuple:
    return tuple(cols[c][i] for c in _INFO_COLUMNS)


def _memory_from_index(idx: NamespaceIndex, r: int) -> Memory | None:
    info = idx.info[r]
    if info is None:
        return None
    text, kind, category, created, updated, last, pinned, source, model, superseded_by, merged_into, context = info
    return Memory(
        id=int(idx.ids[r]), text=text, namespace=idx.namespace, kind=kind, category=category,
        importance=float(idx.importance[r]), created_at=to_aware(created), updated_at=to_aware(updated),
        last_accessed_at=to_aware(last), access_count=int(idx.access_count[r]), status="active",
        pinned=bool(pinned), source=source, content_hash=idx.hash_at(r), embedding_model=model,
        superseded_by=superseded_by, merged_into=merged_into, context=context, use_count=int(idx.use_count[r]),
    )


_TIME_COLUMNS = ("created_at", "updated_at", "last_accessed_at")  # stored as naive UTC (None stays None)


def _naive(value: datetime | None) -> datetime | None:
    return None if value is None else to_naive_utc(value)


def _ts(value: datetime | None) -> float:
    return math.nan if value is None else value.replace(tzinfo=timezone.utc).timestamp()


def _timestamps(column: Any) -> np.ndarray:
    """An Arrow timestamp column as :func:`_ts` gives each value (seconds; NaN for null), without
    a datetime per row: microseconds / 1e6 is the same float ``datetime.timestamp`` computes."""
    micros = column.cast(pa.timestamp("us")).cast(pa.int64()).to_numpy(zero_copy_only=False)
    return np.asarray(micros, dtype=np.float64) / 1e6


def _floats(column: Any) -> np.ndarray:
    return np.asarray(column.to_numpy(zero_copy_only=False), dtype=np.float64)


def _memory_from_row(row: dict[str, Any]) -> Memory:
    return Memory(
        id=int(row["id"]), text=row["text"], namespace=row["namespace"], kind=row["kind"],
        category=row["category"], importance=float(row["importance"]),
        created_at=to_aware(row["created_at"]), updated_at=to_aware(row["updated_at"]),
        last_accessed_at=to_aware(row["last_accessed_at"]), access_count=int(row["access_count"]),
        status=row["status"], pinned=bool(row["pinned"]), source=row["source"],
        content_hash=row["content_hash"], embedding_model=row["embedding_model"],
        superseded_by=row["superseded_by"], merged_into=row["merged_into"], context=row.get("context"),
        use_count=int(row.get("use_count") or 0),
    )


def _snapshot(m: Memory, fields: Iterable[str] | None = None) -> dict[str, Any]:
    d = m.to_dict()
    return d if fields is None else {k: d[k] for k in fields}


class MemoryBank:
    """A long-term memory store for agents. Open with :meth:`open`; use as a context manager."""

    def __init__(self, store: Store, model: str, dim: int | None, actor: str, embedder: Embedder | None):
        self._store = store
        self.model = model
        self.dim = dim
        self.actor = actor
        self._embedder = embedder
        self._lock = threading.RLock()
        self._indexes: dict[str, NamespaceIndex] = {}
        self._synced_seq = 0
        self._signature = None
        self._memories: dict[int, Memory] = {}
        self._active_params: tuple[str, ScoringParams] | None = None
        # Pairs an operator chose to keep both of, by memory id (None: to be read from the store).
        self._acknowledged: dict[int, set[int]] | None = None
        self.gate = gate_mod.Gate()
        self.llm: Any = None  # an LLM client, when configured with use_llm()
        self.last_retrieval_id: int | None = None  # the log entry of this bank's latest real recall
        self.last_search: dict[str, Any] = {}  # how the latest recall searched (approximate, pruned, ...)
        self._index_mode = "exact"
        self._journal = RecallJournal(store.path)
        self._retrieval_ids = (0, 0)  # the reserved block: next id, end (exclusive)
        # The first id of a block the recall writer reserved ahead (in its own transaction), so
        # that recall does not open the file when its block runs out.
        self._spare_ids: int | None = None
        self._flusher: threading.Thread | None = None
        self._wake = threading.Event()
        self._last_replayed = 0
        # A flush writes recalls to the file without holding self._lock (see flush): while it does,
        # other operations wait on this condition before touching the file, and recall, once the
        # flush has caught up with other processes (_flush_current), ranks without looking at it.
        self._flushing = False
        self._flush_current = False
        self._flush_done = threading.Condition(self._lock)
        self.closed = False

    # -- opening and closing -------------------------------------------------------------------

    @classmethod
    def open(
        cls,
        path: str | os.PathLike = "data/memory.duckdb",
        *,
        model: str | None = None,
        actor: str = "api",
        lock_timeout: float = 10.0,
        read_only: bool = False,
        embedder: Embedder | None = None,
    ) -> "MemoryBank":
        """Open the bank at ``path``, creating it (and its folder) if missing.

        ``model`` names the sentence-transformers model; a new bank records it (default: the
        bundled all-MiniLM-L6-v2) and an existing bank refuses another one. ``actor`` is written
        into every event. ``lock_timeout`` bounds how long an operation waits for another process.
        """
        if not isinstance(actor, str) or not actor:
            raise ValidationError("actor must be a non-empty string")
        if isinstance(lock_timeout, bool) or not isinstance(lock_timeout, (int, float)) or not lock_timeout >= 0:
            raise ValidationError("lock_timeout must be a number of seconds >= 0")
        path = Path(path)
        if path.is_dir():
            raise ValidationError(f"{path} is a folder; give the path of a bank file (e.g. {path}/memory.duckdb)")
        if not read_only:
            path.parent.mkdir(parents=True, exist_ok=True)
        store = Store(path, lock_timeout=lock_timeout, read_only=read_only)
        wanted = canonical_model_name(model) if model is not None else None
        if embedder is not None:
            wanted = wanted or embedder.name
            if embedder.name != wanted:
                raise ValidationError(f"embedder {embedder.name!r} does not match model {wanted!r}")
        with store.connect() as con:
            if not read_only:
                store.initialize(con, wanted or DEFAULT_MODEL)
            meta = Store.meta(con)
        bank_model = meta["embedding_model"]
        if wanted is not None and wanted != bank_model:
            raise ModelMismatchError(
                f"the bank {path} holds vectors of {bank_model!r}, not {wanted!r}. Open it without a "
                f"model to use {bank_model!r}, or convert it with: memctl --bank {path} reembed --model {wanted}"
            )
        dim = int(meta["embedding_dim"]) if meta.get("embedding_dim") else None
        bank = cls(store, bank_model, dim, actor, embedder)
        bank._synced_seq = int(meta["change_seq"])
        bank._index_mode = meta.get("index_mode", "exact")
        bank._signature = store.signature()
        if not read_only:
            _OPEN_BANKS.add(bank)
            if bank._journal.folder.is_dir():  # recalls a crashed process journaled but never wrote
                bank.flush()
        return bank

    @property
    def path(self) -> Path:
        return self._store.path

    @property
    def index_folder(self) -> Path:
        return Path(str(self._store.path) + ".index")

    @property
    def embedder(self) -> Embedder:
        """The bank's embedding model, loaded on first use (a few seconds, once per process)."""
        if self._embedder is None:
            self._embedder = get_embedder(self.model)
        return self._embedder

    @property
    def lock_waits(self) -> list[float]:
        """Seconds this bank waited for the file, per operation that had to wait."""
        return self._store.lock_waits

    def close(self) -> None:
        """Write buffered recalls, save changed index caches and let go. Safe to call twice."""
        with self._lock:
            if self.closed:
                return
            if not self._store.read_only:
                try:
                    self.flush()
                except Exception:
                    # The file stayed busy past lock_timeout: the recalls stay in the journal, which
                    # the next process to open or flush the bank writes.
                    pass
            self.closed = True
            self._wake.set()
            _OPEN_BANKS.discard(self)
            self._journal.close()
            if self._store.read_only:
                return
            for idx in self._indexes.values():
                if idx.changes_since_save:
                    self._save_index(idx)
        if self._flusher is not None and self._flusher is not threading.current_thread():
            self._flusher.join(timeout=5)

    def flush(self) -> int:
        """Write recorded recalls still buffered (this process's, and any a crashed process left in
        its journal) to the store now; returns how many. Recall buffers them (see
        :mod:`memory_core.recall_log`); every other operation of this bank writes them first, in
        its own transaction.

        The file work (opening it, the update, committing, the checkpoint of closing it: 150 ms at
        a million memories) runs without the bank's lock, so recalls from other threads go on
        meanwhile; other operations wait for the flush to finish before they open the file.
        """
        with self._lock:
            self._wait_for_flush()
            if self.closed or self._store.read_only:
                return 0
            batches = self._journal.seal()
            orphans = list(self._journal.orphans())
            if not batches and not orphans:
                return 0
            entries = [e for b in batches for e in b.entries]
            nxt, end = self._retrieval_ids
            reserve = self._spare_ids is None and end - nxt < _RETRIEVAL_ID_BLOCK // 2
            self._flushing = True
        try:
            # The file's lock is held past the connection's close until the indexes take the
            # written counts, so no other process writes before this bank has caught up with
            # its own write (recall trusts the indexes meanwhile, see _flush_current).
            with self._store.locked():
                with self._store.connect() as con:
                    # One DuckDB thread: the scan, the update and the checkpoint then leave the
                    # other core to recall (two threads cost more CPU in all, 100 ms against 70).
                    con.execute("SET threads = 1")
                    with self._lock:
                        self._catch_up(con)
                        self._flush_current = True
                    written = self._write_recalls(con, entries, orphans)
                    spare = Store.take_ids(con, "next_retrieval_id", _RETRIEVAL_ID_BLOCK) if reserve else None
                with self._lock:
                    if spare is not None:
                        self._spare_ids = spare
                    self._recalls_written(written, batches, orphans)
                    self._signature = self._store.signature()
                    self._flush_current = False
        except BaseException:
            with self._lock:
                for _, _, fh in orphans:
                    fh.close()  # still on disk: the next flush takes them again
            raise
        finally:
            with self._lock:
                self._flushing = self._flush_current = False
                self._flush_done.notify_all()
        return len(entries) + sum(len(found) for _, found, _ in orphans)

    def _wait_for_flush(self) -> None:
        """With self._lock held: wait (letting the lock go meanwhile) until no flush is writing.
        Every path that opens the file for this bank calls it first."""
        while self._flushing:
            self._flush_done.wait()

    def _write_recalls(self, con: Any, entries: list[dict], orphans: list) -> tuple[int | None, list[dict]]:
        seq, touched = Store.write_recalls(con, entries + [e for _, found, _ in orphans for e in found])
        return seq, Store.access_rows(con, touched)

    def _recalls_written(self, written: tuple[int | None, list[dict]], batches: list, orphans: list) -> None:
        """The session that wrote buffered recalls committed: forget them, take the store's counts."""
        self._journal.written(batches)
        self._last_replayed = sum(len(found) for _, found, _ in orphans)
        for path, _, fh in orphans:
            path.unlink(missing_ok=True)
            fh.close()
        seq, rows = written
        if seq is None:
            return
        if seq > self._synced_seq:
            self._synced_seq = seq
            for idx in self._indexes.values():
                idx.seq = seq
        # Recalls recorded while a flush wrote (journaled after it sealed its batch) are counted in
        # the indexes but not yet in these rows: add them back, as the store will.
        later: dict[int, list] = {}
        for e in self._journal.current:
            at = datetime.fromisoformat(e["recalled_at"])
            for h in e["hits"]:
                use = later.setdefault(int(h[1]), [0, at])
                use[0] += 1
                use[1] = max(use[1], at)
        for row in rows:  # the store's counts now include every flushed recall: take them
            mid = int(row["id"])
            self._memories.pop(mid, None)
            idx = self._indexes.get(row["namespace"])
            if idx is not None and mid in idx.row_of and row["status"] == "active":
                count, last_at = float(row["access_count"]), row["last_accessed_at"]
                if mid in later:
                    count += later[mid][0]
                    if last_at is None or last_at < later[mid][1]:
                        last_at = later[mid][1]
                idx.set_fields(mid, _ts(row["created_at"]), _ts(last_at),
                               float(row["importance"]), count, float(row["use_count"]))
                info = idx.info[idx.row_of[mid]]
                if info is not None:
                    idx.set_info(mid, info[:5] + (last_at,) + info[6:])

    def _flush_loop(self) -> None:
        """The background writer: pending recalls reach the store every FLUSH_INTERVAL seconds."""
        while not self.closed:
            self._wake.wait(FLUSH_INTERVAL)
            self._wake.clear()
            try:
                self.flush()
            except Exception:
                pass  # the file is busy or gone: the journal keeps the recalls for the next try

    def __enter__(self) -> "MemoryBank":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"MemoryBank({str(self.path)!r}, model={self.model!r})"

    # -- sessions: hold the file for one operation ---------------------------------------------

    @contextlib.contextmanager
    def _session(self, write: bool = True, flush: bool = True) -> Iterator[Any]:
        if self.closed:
            raise StateError("this bank is closed; open it again with MemoryBank.open")
        if write and self._store.read_only:
            raise BankReadOnlyError(
                f"the bank {self.path} was opened read-only; open it without read_only=True to change "
                "it (recall with record=False reads without writing)")
        with self._lock:
            self._wait_for_flush()
            # Buffered recalls are written in this operation's transaction, first: whatever it reads
            # (the log, access counts) or changes sees every recall.
            batches = self._journal.seal() if flush and not self._store.read_only else []
            entries = [e for b in batches for e in b.entries]
            orphans = list(self._journal.orphans()) if flush and not self._store.read_only else []
            written = None
            try:
                with self._store.connect(write or bool(entries or orphans)) as con:
                    self._catch_up(con)
                    if entries or orphans:
                        written = self._write_recalls(con, entries, orphans)
                    yield con
            except BaseException:
                for _, _, fh in orphans:
                    fh.close()
                raise
            if written is not None:
                self._recalls_written(written, batches, orphans)
            self._signature = self._store.signature()

    def _catch_up(self, con: Any) -> None:
        """Apply what other processes changed since this bank last looked (by change sequence)."""
        seq = Store.change_seq(con)
        if seq == self._synced_seq:
            return
        meta = Store.meta(con)
        if meta["embedding_model"] != self.model:
            # Someone re-embedded the bank: every cached vector is of the wrong model.
            self.model = meta["embedding_model"]
            self.dim = int(meta["embedding_dim"]) if meta["embedding_dim"] else None
            self._embedder = None
            self._indexes.clear()
        elif self.dim is None and meta.get("embedding_dim"):
            self.dim = int(meta["embedding_dim"])
        self._active_params = None
        self._acknowledged = None
        self._index_mode = meta.get("index_mode", "exact")
        for (mid,) in con.execute("SELECT id FROM removed_memories WHERE seq > ?", [self._synced_seq]).fetchall():
            self._memories.pop(mid, None)
            for idx in self._indexes.values():
                idx.remove(mid)
        if self._indexes:
            rows = Store.fetch_rows(con, "seq > ?", [self._synced_seq], with_embedding=True)
            self._apply_rows(rows)
        else:
            changed = con.execute("SELECT id FROM memories WHERE seq > ?", [self._synced_seq]).fetchall()
            for (mid,) in changed:
                self._memories.pop(mid, None)
        for idx in self._indexes.values():
            idx.seq = seq
        self._synced_seq = seq

    def _apply_rows(self, rows: Any) -> None:
        """Bring loaded namespace indexes in line with these store rows (an Arrow table)."""
        if rows.num_rows == 0:
            return
        # Vectors stay in Arrow (read by embeddings_of): as Python lists, 1M memories' vectors take
        # over 10 GB.
        cols = _columns(rows)
        vectors = None
        for i, mid in enumerate(cols["id"]):
            self._memories.pop(mid, None)
            ns = cols["namespace"][i]
            live = cols["status"][i] == "active"
            for other_ns, idx in self._indexes.items():
                if other_ns != ns:
                    idx.remove(mid)  # a memory moved to another namespace
            idx = self._indexes.get(ns)
            if idx is None:
                continue
            if not live:
                idx.remove(mid)
                continue
            fields = (_ts(cols["created_at"][i]), _ts(cols["last_accessed_at"][i]),
                      float(cols["importance"][i]), float(cols["access_count"][i]))
            uses = float(cols["use_count"][i])
            r = idx.row_of.get(mid)
            if r is not None and idx.hash_at(r) == cols["content_hash"][i]:
                idx.set_fields(mid, *fields, uses)
                idx.set_info(mid, _info(cols, i))
            else:
                if vectors is None:
                    vectors = Store.embeddings_of(rows, self.dim)
                idx.upsert(mid, vectors[i], memory_tokens(cols["text"][i], cols["context"][i]),
                           cols["content_hash"][i], *fields, info=_info(cols, i), use_count=uses)

    # -- namespace indexes ---------------------------------------------------------------------

    def load_namespace(self, namespace: str, progress: Progress | None = None) -> int:
        """Load ``namespace``'s index now (recall does on first use), reporting memories read to
        ``progress``; returns how many it holds. Building a million memories' index from the store
        takes about a minute, loading a saved one about ten seconds: worth a progress bar."""
        check_namespace(namespace)
        with self._lock:
            if namespace in self._indexes:
                return self._indexes[namespace].n
            with self._session(write=False) as con:
                idx = self._ns_index(con, namespace, progress)
            return 0 if idx is None else idx.n

    def namespace_loaded(self, namespace: str) -> bool:
        """Whether ``namespace``'s index is in memory (its next recall reads no index files)."""
        return namespace in self._indexes

    def _ns_index(self, con: Any, namespace: str, progress: Progress | None = None) -> NamespaceIndex | None:
        """The loaded index of ``namespace`` (loading, reconciling or building it), or None when
        the bank has no vectors yet."""
        idx = self._indexes.get(namespace)
        if idx is not None:
            return idx
        if self.dim is None:
            return None
        spill = None if self._store.read_only else self.index_folder
        cached = NamespaceIndex.load(self.index_folder, namespace, self.model, self.dim, spill_dir=spill)
        live = None
        if cached is not None:
            with Store.scanning(con):
                live = con.sql(f"SELECT id, seq, importance, access_count, use_count, content_hash, {_INFO_SQL} "
                               "FROM memories WHERE namespace = ? AND status = 'active'", params=[namespace],
                               ).to_arrow_table()
        seq_now = Store.change_seq(con)
        rebuild = cached is None
        if cached is not None:
            live_ids = live.column("id").to_numpy()
            cached_ids = cached.ids[: cached.n]
            for mid in cached_ids[~np.isin(cached_ids, live_ids)].tolist():
                cached.remove(mid)
            rows = cached.rows_of(live_ids)
            stale = (rows < 0) | (live.column("seq").to_numpy() > cached.seq)
            known = np.flatnonzero(~stale)
            hashes = live.column("content_hash").to_numpy(zero_copy_only=False)
            stale[known] = cached.hashes[rows[known]] != hashes[known].astype(HASH_DTYPE)
            stale_ids = live_ids[stale].tolist()
            if len(stale_ids) > max(1000, cached.n // 2):
                rebuild = True
            elif stale_ids:
                self._fill(con, cached, "namespace = ? AND status = 'active' AND id IN (SELECT unnest(?))",
                           [namespace, stale_ids])
            idx = cached
            if progress and not rebuild:
                progress(idx.n)
        if rebuild:
            idx = NamespaceIndex(namespace, self.dim)
            idx.spill_dir = spill
            self._fill(con, idx, "namespace = ? AND status = 'active'", [namespace], progress)
        else:  # a rebuild read these fields in this same transaction already
            rows = idx.rows_of(live.column("id").to_numpy())
            idx.set_fields_many(rows, _timestamps(live.column("created_at")),
                                _timestamps(live.column("last_accessed_at")), _floats(live.column("importance")),
                                _floats(live.column("access_count")), _floats(live.column("use_count")))
            idx.set_infos(live.select(list(_INFO_COLUMNS)).take(np.argsort(rows)))
        idx.seq = seq_now
        self._indexes[namespace] = idx
        if rebuild or idx.changes_since_save:
            self._save_index(idx)
        return idx

    def _fill(self, con: Any, idx: NamespaceIndex, where: str, params: list[Any],
              progress: Progress | None = None) -> None:
        """Add the store's rows matching ``where`` (live memories of the index's namespace) to the
        index, streamed in batches: a million memories never sit in memory twice."""
        total = con.execute(f"SELECT count(*) FROM memories WHERE {where}", params).fetchone()[0]
        idx.reserve(idx.n + total)
        for rows in Store.stream_rows(con, where, params, with_embedding=True):
            texts, contexts = rows.column("text").to_pylist(), rows.column("context").to_pylist()
            idx.add_many(
                rows.column("id").to_numpy(), Store.embeddings_of(rows, self.dim),
                (memory_tokens(t, c) for t, c in zip(texts, contexts)),
                rows.column("content_hash").to_numpy(zero_copy_only=False).astype(HASH_DTYPE),
                _timestamps(rows.column("created_at")), _timestamps(rows.column("last_accessed_at")),
                _floats(rows.column("importance")), _floats(rows.column("access_count")),
                # A copy (take): the batch's buffers come from DuckDB as one allocation, and a
                # column kept from it keeps the whole batch alive, vectors and all.
                rows.select(list(_INFO_COLUMNS)).take(np.arange(rows.num_rows)),
                use_count=_floats(rows.column("use_count")),
            )
            if progress:
                progress(rows.num_rows)
        idx.info.finish_loading()

    def _save_index(self, idx: NamespaceIndex) -> None:
        try:
            idx.save(self.index_folder, self.model)
        except OSError:
            # The cache is optional: an unwritable folder costs a rebuild next time, nothing more.
            pass

    def rebuild_indexes(self, progress: Progress | None = None) -> int:
        """Throw away the cached indexes and rebuild every namespace's from the store."""
        with self._lock:
            shutil.rmtree(self.index_folder, ignore_errors=True)
            self._indexes.clear()
            names = [ns for ns, _ in self.namespaces()]
            with self._session(write=False) as con:
                for ns in names:
                    self._ns_index(con, ns)
                    if progress:
                        progress(1)
            return len(names)

    # -- writing -------------------------------------------------------------------------------

    def _check_vectors(self, vectors: np.ndarray, con: Any) -> None:
        """Record the dimension of a bank's first vectors; refuse others later."""
        dim = vectors.shape[1]
        if self.dim is None:
            Store.set_meta(con, "embedding_dim", str(dim))
        elif dim != self.dim:
            raise ModelMismatchError(f"vectors of dimension {dim} cannot join a bank of dimension {self.dim}")

    def add(
        self,
        text: str,
        namespace: str = "default",
        importance: float = 0.5,
        kind: str = "explicit",
        category: str = "other",
        created_at: Any = None,
        source: str | None = None,
        embedding: Any = None,
        pinned: bool = False,
        detect_conflicts: bool = True,
        context: str | None = None,
    ) -> int:
        """Store one memory and return its id.

        ``text`` should be a short distilled statement ("Prefers vegetarian food"). ``importance``
        is in [0, 1]; ``kind`` is explicit (the user said it) or inferred (the agent concluded it);
        ``created_at`` (default now) keeps an imported memory's own date. A new memory that
        contradicts a stored one is flagged at once (see :meth:`conflicts`) unless
        ``detect_conflicts=False``. ``context`` (optional) is text that situates the memory, such
        as the conversation turns around it: recall matches its words too, but it is never shown
        as the memory, and it is set once (an edit of the text keeps it).
        """
        row = {"text": text, "namespace": namespace, "importance": importance, "kind": kind,
               "category": category, "created_at": created_at, "source": source, "pinned": pinned,
               "context": context}
        if embedding is not None:
            row["embedding"] = embedding
        try:
            mid = self.add_many([row])[0]
        except (ValidationError, ModelMismatchError) as exc:
            raise type(exc)(str(exc).removeprefix("row 1: ")) from None
        if detect_conflicts:
            self.detect_conflicts(namespace, memory_ids=[mid])
        return mid

    def _normalize_row(self, row: Any, now: datetime) -> dict[str, Any]:
        if not isinstance(row, dict):
            raise ValidationError(f"each memory must be a mapping (dict), got {type(row).__name__}")
        known = {"id", "text", "namespace", "importance", "kind", "category", "created_at", "updated_at",
                 "last_accessed_at", "access_count", "status", "pinned", "source", "embedding",
                 "embedding_model", "content_hash", "superseded_by", "merged_into", "context", "use_count"}
        unknown = set(row) - known
        if unknown:
            raise ValidationError(f"unknown field(s) {', '.join(sorted(unknown))}; known: {', '.join(sorted(known))}")
        text = check_text(row.get("text"))
        created = parse_time(row.get("created_at"), "created_at") or now
        out = {
            "text": text,
            "namespace": check_namespace(row.get("namespace", "default")),
            "importance": check_importance(row.get("importance", 0.5)),
            "kind": check_choice(row.get("kind", "explicit"), KINDS, "kind"),
            "category": check_choice(row.get("category", "other"), CATEGORIES, "category"),
            "created_at": created,
            "updated_at": parse_time(row.get("updated_at"), "updated_at") or created,
            "last_accessed_at": parse_time(row.get("last_accessed_at"), "last_accessed_at"),
            "status": check_choice(row.get("status", "active"), STATUSES[:-1], "status"),
            "pinned": row.get("pinned", False),
            "source": row.get("source"),
            "content_hash": content_hash(text),
            "superseded_by": row.get("superseded_by"),
            "merged_into": row.get("merged_into"),
            "context": check_context(row.get("context")),
        }
        if not isinstance(out["pinned"], bool):
            raise ValidationError("pinned must be true or false")
        if out["source"] is not None and not isinstance(out["source"], str):
            raise ValidationError("source must be a string")
        count = row.get("access_count", 0)
        if isinstance(count, bool) or not isinstance(count, int) or count < 0:
            raise ValidationError(f"access_count must be a whole number >= 0, got {count!r}")
        out["access_count"] = count
        # An export carries how often each memory was used; a merge passes its members' sum.
        uses = row.get("use_count", 0)
        if isinstance(uses, bool) or not isinstance(uses, int) or not 0 <= uses < 2**31:
            raise ValidationError(f"use_count must be a whole number >= 0, got {uses!r}")
        out["use_count"] = uses
        for key in ("id", "superseded_by", "merged_into"):
            v = row.get(key)
            if v is not None and (isinstance(v, bool) or not isinstance(v, int) or v < 1 or v >= 2**62):
                raise ValidationError(f"{key} must be a positive whole number, got {v!r}")
        out["id"] = row.get("id")
        if row.get("embedding_model") is not None and canonical_model_name(row["embedding_model"]) != self.model:
            raise ModelMismatchError(
                f"this memory's embedding comes from {row['embedding_model']!r} but the bank uses "
                f"{self.model!r}; drop the embedding field to embed it again"
            )
        emb = row.get("embedding")
        if emb is not None:
            try:
                vec = np.asarray(emb, dtype=np.float32)
            except (TypeError, ValueError):
                raise ValidationError("embedding must be a list of numbers") from None
            # A bank without vectors yet takes the dimension its model gives, never the row's.
            dim = self.dim if self.dim is not None else self.embedder.dim
            if vec.ndim != 1 or vec.shape[0] != dim or not np.isfinite(vec).all():
                raise ValidationError(
                    f"embedding must be {dim} finite numbers from {self.model}; drop it to embed the text again"
                )
            norm = math.sqrt(float(vec @ vec))
            if norm == 0:
                raise ValidationError("embedding must not be all zeros")
            out["embedding"] = vec / norm
        return out

    def add_many(
        self,
        rows: Iterable[dict[str, Any]],
        *,
        progress: Progress | None = None,
        batch_size: int | None = None,
        skip_existing: bool = False,
        report: ImportReport | None = None,
    ) -> list[int]:
        """Store many memories; returns their ids in order.

        Every row is checked before anything is written (a bad row raises ValidationError naming
        its position and changes nothing). A row may carry ``embedding`` (a vector of the bank's
        model) to skip embedding it again, and an ``id`` to keep (export and import round-trip).
        Rows are embedded outside the file lock and written in batches of ``batch_size`` (default:
        2048 rows to embed, 8192 rows that carry their vectors), each in one transaction, while
        the model embeds the next batch. With ``skip_existing``, a row whose id already exists with the same text
        is counted as already present instead of refused, so an interrupted import can be re-run.
        """
        if isinstance(rows, (str, bytes, dict)) or not isinstance(rows, Iterable):
            raise ValidationError("add_many takes a list of mappings (one per memory)")
        now = utcnow()
        checked = []
        for i, row in enumerate(rows):
            try:
                checked.append(self._normalize_row(row, now))
            except (ValidationError, ModelMismatchError) as exc:
                raise type(exc)(f"row {i + 1}: {exc}") from None
        given = [r["id"] for r in checked if r["id"] is not None]
        if len(given) != len(set(given)):
            raise ValidationError("two rows carry the same id; ids must be unique")
        # Ids already in the bank are decided before anything is embedded or written: the same
        # memory again (skipped when skip_existing) or a clash (refused, nothing written).
        existing = self._existing(given)
        ids: list[int | None] = [None] * len(checked)
        todo = []
        for i, r in enumerate(checked):
            if r["id"] in existing:
                if not (skip_existing and existing[r["id"]] == r["content_hash"]):
                    raise ValidationError(f"row {i + 1}: {self._clash(r['id'])}")
                ids[i] = r["id"]
                if report is not None:
                    report.skipped_existing += 1
            else:
                todo.append(i)
        if progress is not None and len(todo) < len(checked):
            progress(len(checked) - len(todo))
        if batch_size is None:
            batch_size = _BATCH_EMBED if any("embedding" not in checked[i] for i in todo) else _BATCH_VECTORS
        elif isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
            raise ValidationError("batch_size must be a whole number >= 1")
        batches = ([checked[i] for i in todo[start:start + batch_size]] for start in range(0, len(todo), batch_size))
        for i, mid in zip(todo, self._write_stream(batches, progress)):
            ids[i] = mid
        if report is not None:
            report.added += len(todo)
            report.ids.extend(int(i) for i in ids)
        return [int(i) for i in ids]

    @staticmethod
    def _clash(mid: int) -> str:
        return f"id {mid} already exists in the bank with other content; drop the id to add the memory under a new one"

    def _existing(self, ids: list[int]) -> dict[int, str]:
        """Content hashes of the memories that already have these ids."""
        if not ids:
            return {}
        with self._session(write=False) as con:
            return dict(con.execute("SELECT id, content_hash FROM memories WHERE id IN (SELECT unnest(?))",
                                    [ids]).fetchall())

    def _vectors_for(self, batch: list[dict[str, Any]]) -> np.ndarray:
        """Vectors for checked rows: their own ``embedding`` or the model's (run outside the lock)."""
        need = [i for i, r in enumerate(batch) if "embedding" not in r]
        dim = self.embedder.dim if need or self.dim is None else self.dim
        vectors = np.empty((len(batch), dim), dtype=np.float32)
        if need:
            vectors[need] = self.embedder.encode([batch[i]["text"] for i in need])
        for i, r in enumerate(batch):
            if "embedding" in r:
                vectors[i] = r["embedding"]
        return vectors

    def _write_stream(self, batches: Iterable[list[dict[str, Any]]], progress: Progress | None = None) -> list[int]:
        """Embed and store batches of checked rows; returns their ids in order.

        The model embeds the next batch (torch releases the GIL) while a writer thread stores
        the last one, so an import runs at the model's pace; at most two batches are in flight,
        so memory stays bounded however many rows stream through. Each batch is one transaction
        and one group of events. Progress is reported from the calling thread (a Streamlit
        progress bar only works there).
        """
        out: list[int] = []
        writer = _BulkWriter(self)
        with ThreadPoolExecutor(max_workers=1, thread_name_prefix="memory-writer") as pool:
            pending = None
            try:
                for batch in batches:
                    if not batch:
                        continue
                    embeds = any("embedding" not in r for r in batch)
                    vectors = self._vectors_for(batch)
                    if pending is not None:
                        done = pending.result()
                        out.extend(done)
                        if progress is not None:
                            progress(len(done))
                    # Let go of the file after a batch the model embedded: the next one takes seconds.
                    pending = pool.submit(writer.write, batch, vectors, embeds)
                if pending is not None:
                    done, pending = pending.result(), None
                    out.extend(done)
                    if progress is not None:
                        progress(len(done))
            finally:
                if pending is not None:
                    with contextlib.suppress(BaseException):
                        pending.result()
                pool.submit(writer.release).result()  # the lock is the writer thread's to release
        return out

    def _after_insert(self, batch: list[dict[str, Any]], vectors: np.ndarray, ids: list[int], seq: int) -> None:
        """Bring loaded indexes up to date with rows this bank just inserted (no read back).
        New memories are in no conflict yet: the acknowledged pairs recall keeps stay as they are
        (the session's catch-up dropped them if another process changed the bank)."""
        self._synced_seq = seq
        for idx in self._indexes.values():
            idx.seq = seq
        by_ns: dict[str, list[int]] = {}
        for j, (r, mid) in enumerate(zip(batch, ids)):
            self._memories.pop(mid, None)
            if r["status"] == "active" and r["namespace"] in self._indexes:
                by_ns.setdefault(r["namespace"], []).append(j)
        for ns, js in by_ns.items():
            idx = self._indexes[ns]
            rows = [batch[j] for j in js]
            idx.add_many(
                np.asarray([ids[j] for j in js], dtype=np.int64), vectors[js], [memory_tokens(r["text"], r.get("context")) for r in rows],
                [r["content_hash"] for r in rows], np.array([_ts(r["created_at"]) for r in rows]),
                np.array([_ts(r["last_accessed_at"]) for r in rows]),
                np.array([r["importance"] for r in rows], dtype=np.float64),
                np.array([r["access_count"] for r in rows], dtype=np.float64),
                # A hit's Memory is built from these: without them, each new memory's first recall
                # read it back from the file (~20 ms: an open of the file for 10 memories).
                infos=[self._inserted_info(r) for r in rows],
                use_count=np.array([r["use_count"] for r in rows], dtype=np.float64),
            )
            if idx.changes_since_save >= _SAVE_EVERY:
                self._save_index(idx)

    def _inserted_info(self, row: dict[str, Any]) -> tuple:
        """The index's info fields (_INFO_COLUMNS) of a row as :meth:`_insert_rows` stored it."""
        stored = {**row, "embedding_model": self.model, **{c: _naive(row[c]) for c in _TIME_COLUMNS}}
        return tuple(stored[c] for c in _INFO_COLUMNS)

    def _insert_rows(self, con: Any, batch: list[dict[str, Any]], vectors: np.ndarray, seq: int,
                     group: int) -> list[int]:
        self._check_vectors(vectors, con)
        fresh = [i for i, r in enumerate(batch) if r["id"] is None]
        first = Store.take_ids(con, "next_id", len(fresh)) if fresh else 0
        ids_out = [r["id"] for r in batch]
        for j, i in enumerate(fresh):
            ids_out[i] = first + j
        if max(ids_out) >= int(Store.meta(con)["next_id"]):
            Store.set_meta(con, "next_id", str(max(ids_out) + 1))
        n = len(batch)
        cols: dict[str, list] = {}
        for c in MEMORY_COLUMNS:
            if c == "id":
                cols[c] = ids_out
            elif c == "seq":
                cols[c] = [seq] * n
            elif c == "embedding_model":
                cols[c] = [self.model] * n
            elif c in _TIME_COLUMNS:
                cols[c] = [_naive(r[c]) for r in batch]
            else:
                cols[c] = [r[c] for r in batch]
        try:
            Store.insert_memories(con, cols, vectors, log=(self.actor, utcnow(), group))
        except duckdb.ConstraintException:
            # Another process took one of these ids since we checked.
            raise ValidationError("an id in this batch was just taken by another writer; import again") from None
        self.dim = vectors.shape[1]
        return [int(i) for i in ids_out]

    # -- reading -------------------------------------------------------------------------------

    def get(self, memory_id: int) -> Memory:
        """The memory with this id (a hard-deleted one comes back with ``text=None``)."""
        mid = self._check_id(memory_id)
        with self._session(write=False) as con:
            return self._get(con, mid)

    def _get(self, con: Any, mid: int) -> Memory:
        rows = Store.fetch_rows(con, "id = ?", [mid]).to_pylist()
        if not rows:
            raise NotFoundError(f"no memory with id {mid} in {self.path}")
        return _memory_from_row(rows[0])

    def _get_many(self, con: Any | None, ids: list[int]) -> dict[int, Memory]:
        missing = [i for i in ids if i not in self._memories]
        if missing:
            if con is None:
                with self._session(write=False) as con2:
                    return self._get_many(con2, ids)
            if len(self._memories) > _MEMORY_CACHE_MAX:
                self._memories.clear()
            for row in Store.fetch_rows(con, "id IN (SELECT unnest(?))", [missing]).to_pylist():
                self._memories[int(row["id"])] = _memory_from_row(row)
        return {i: self._memories[i] for i in ids}

    @staticmethod
    def _check_id(memory_id: Any) -> int:
        if isinstance(memory_id, bool) or not isinstance(memory_id, (int, np.integer)):
            raise ValidationError(f"a memory id is a whole number, got {memory_id!r}")
        return int(memory_id)

    def history(self, memory_id: int) -> list[Event]:
        """Every event of one memory, oldest first."""
        mid = self._check_id(memory_id)
        with self._session(write=False) as con:
            self._get(con, mid)
            return self._events_where(con, "memory_id = ?", [mid])

    def events(self, limit: int = 100, action: str | None = None) -> list[Event]:
        """The latest events of the whole bank, newest first."""
        where, params = ("WHERE action = ?", [action]) if action else ("", [])
        with self._session(write=False) as con:
            rows = con.execute(
                f"SELECT {_EVENT_COLUMNS} FROM events {where} "
                "ORDER BY id DESC LIMIT ?", params + [int(limit)]).fetchall()
        return [_event(r) for r in rows]

    _ORDERS = {  # the sort orders Browse offers; never user text in ORDER BY
        "newest": "created_at DESC, id DESC", "oldest": "created_at, id",
        "importance": "importance DESC, created_at DESC, id DESC",
        "most used": "access_count DESC, created_at DESC, id DESC",
        "recently used": "last_accessed_at DESC NULLS LAST, id DESC",
    }

    def memories(
        self,
        namespace: str | None = None,
        status: str | None = "active",
        *,
        limit: int | None = 100,
        offset: int = 0,
        order: str = "newest",
        **filters: Any,
    ) -> list[Memory]:
        """Memories matching the filters, newest first by default. ``status=None`` means every status.

        Filters: ``kind``, ``category``, ``contains`` (plain text), ``pinned``, ``min_importance``,
        ``max_importance``, ``created_after``, ``created_before``, ``used_after``, ``used_before``,
        ``tier`` (hot, warm or cold as of ``now``).
        ``order`` is one of newest, oldest, importance, most used, recently used.
        """
        self._check_filter_names(filters)
        for name, value in (("limit", limit), ("offset", offset)):
            if value is None and name == "limit":
                continue
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 0:
                raise ValidationError(f"{name} must be a whole number >= 0{' or None' if name == 'limit' else ''}, "
                                      f"got {value!r}")
        where, params = self._filters(namespace, status, **filters)
        order_sql = self._ORDERS.get(check_choice(order, self._ORDERS, "order"))
        with self._session(write=False) as con:
            rows = Store.fetch_rows(con, where, params, order=order_sql, limit=limit, offset=offset).to_pylist()
        return [_memory_from_row(r) for r in rows]

    def count(self, namespace: str | None = None, status: str | None = "active", **filters: Any) -> int:
        """How many memories match the filters of :meth:`memories`."""
        self._check_filter_names(filters)
        where, params = self._filters(namespace, status, **filters)
        with self._session(write=False) as con:
            return int(con.execute(f"SELECT count(*) FROM memories WHERE {where}", params).fetchone()[0])

    _FILTER_NAMES = ("kind", "category", "contains", "pinned", "min_importance", "max_importance", "created_after",
                     "created_before", "used_after", "used_before", "tier", "now")

    @classmethod
    def _check_filter_names(cls, filters: dict[str, Any]) -> None:
        unknown = sorted(set(filters) - set(cls._FILTER_NAMES))
        if unknown:
            raise ValidationError(f"unknown filter(s) {', '.join(unknown)}; filters: {', '.join(cls._FILTER_NAMES)}")

    @staticmethod
    def _where(**equal: Any) -> tuple[str, list[Any]]:
        """``col = ?`` for every value that is not None, joined by AND (columns are our own names)."""
        items = [(col, value) for col, value in equal.items() if value is not None]
        return " AND ".join(["TRUE"] + [f"{col} = ?" for col, _ in items]), [value for _, value in items]

    @classmethod
    def _filters(cls, namespace: str | None, status: str | None, *, kind: str | None = None,
                 category: str | None = None, contains: str | None = None, pinned: bool | None = None,
                 min_importance: float | None = None, max_importance: float | None = None,
                 created_after: Any = None, created_before: Any = None, used_after: Any = None,
                 used_before: Any = None, tier: str | None = None, now: Any = None) -> tuple[str, list[Any]]:
        if pinned is not None and not isinstance(pinned, bool):
            raise ValidationError("pinned must be true, false or None")
        where, params = cls._where(
            namespace=None if namespace is None else check_namespace(namespace),
            status=None if status is None else check_choice(status, STATUSES, "status"),
            kind=None if kind is None else check_choice(kind, KINDS, "kind"),
            category=None if category is None else check_choice(category, CATEGORIES, "category"),
            pinned=pinned)
        if contains:
            where += " AND contains(lower(text), lower(?))"
            params.append(str(contains))
        for sql, value, check in (
            ("importance >= ?", min_importance, check_importance), ("importance <= ?", max_importance, check_importance),
            ("created_at >= ?", created_after, parse_time), ("created_at <= ?", created_before, parse_time),
            ("last_accessed_at >= ?", used_after, parse_time), ("last_accessed_at <= ?", used_before, parse_time),
        ):
            if value is not None:
                checked = check(value)
                where += f" AND {sql}"
                params.append(to_naive_utc(checked) if isinstance(checked, datetime) else checked)
        if tier is not None:
            # The tier of scoring.tier_of, by the time since the memory was last touched, as of now.
            check_choice(tier, ("hot", "warm", "cold"), "tier")
            now_dt = to_naive_utc(parse_time(now, "now") or utcnow())
            touched = "greatest(created_at, coalesce(last_accessed_at, created_at))"
            hot, cold = now_dt - timedelta(days=HOT_DAYS), now_dt - timedelta(days=COLD_DAYS)
            where += {"hot": f" AND {touched} > ?", "warm": f" AND {touched} <= ? AND {touched} >= ?",
                      "cold": f" AND {touched} < ?"}[tier]
            params += {"hot": [hot], "warm": [hot, cold], "cold": [cold]}[tier]
        return where, params

    def namespaces(self) -> list[tuple[str, int]]:
        """Every namespace with its number of active memories, largest first."""
        with self._session(write=False) as con:
            return [(ns, int(n)) for ns, n in con.execute(
                "SELECT namespace, count(*) FILTER (WHERE status = 'active') AS n FROM memories "
                "GROUP BY namespace ORDER BY n DESC, namespace").fetchall()]

    def stats(self, namespace: str | None = None, now: Any = None) -> dict[str, Any]:
        """Counts by status, kind, category and tier, plus the bank's model and activity."""
        now_dt = parse_time(now, "now") or utcnow()
        where, params = ("namespace = ?", [check_namespace(namespace)]) if namespace else ("TRUE", [])
        with self._session(write=False) as con:
            def group(col: str, extra: str = "") -> dict[str, int]:
                return {str(k): int(v) for k, v in con.execute(
                    f"SELECT {col}, count(*) FROM memories WHERE {where} {extra} GROUP BY 1 ORDER BY 2 DESC",
                    params).fetchall()}
            by_status = group("status")
            by_kind = group("kind", "AND status = 'active'")
            by_category = group("category", "AND status = 'active'")
            touched = con.execute(
                f"SELECT greatest(created_at, coalesce(last_accessed_at, created_at)) FROM memories "
                f"WHERE {where} AND status = 'active' AND created_at <= ?", params + [to_naive_utc(now_dt)]).fetchall()
            retrievals = con.execute(
                f"SELECT count(*), count(*) FILTER (WHERE n_results = 0) FROM retrievals WHERE {where}",
                params).fetchone()
            meta = Store.meta(con)
            name, _ = self._active(con)
            open_conflicts = con.execute(f"SELECT count(*) FROM conflicts WHERE {where} AND status = 'open'",
                                         params).fetchone()[0]
            by_month = {str(k): int(v) for k, v in con.execute(
                f"SELECT strftime(created_at, '%Y-%m'), count(*) FROM memories WHERE {where} GROUP BY 1 ORDER BY 1",
                params).fetchall()}
        tiers = {"hot": 0, "warm": 0, "cold": 0}
        for (t,) in touched:
            tiers[tier_of((now_dt - to_aware(t)).total_seconds() / 86400.0)] += 1
        return {
            "path": str(self.path), "model": self.model, "dim": self.dim,
            "total": sum(by_status.values()), "active": by_status.get("active", 0),
            "by_status": by_status, "by_kind": by_kind, "by_category": by_category, "by_tier": tiers,
            "namespaces": len(self.namespaces()) if namespace is None else 1,
            "retrievals": int(retrievals[0]), "empty_retrievals": int(retrievals[1]),
            "active_preset": name, "change_seq": int(meta["change_seq"]),
            "open_conflicts": int(open_conflicts), "by_month": by_month,
            "file_bytes": self.path.stat().st_size if self.path.exists() else 0,
        }

    # -- changing ------------------------------------------------------------------------------

    def update(self, memory_id: int, **changes: Any) -> Memory:
        """Change fields of a memory (text, namespace, kind, category, importance, created_at,
        pinned, source). A new text is embedded again. Returns the updated memory."""
        mid = self._check_id(memory_id)
        unknown = set(changes) - set(_EDITABLE)
        if unknown:
            raise ValidationError(
                f"cannot update {', '.join(sorted(unknown))}; editable fields: {', '.join(_EDITABLE)} "
                "(use forget/restore for the status)")
        if not changes:
            raise ValidationError("nothing to update: pass at least one field")
        clean = self._check_changes(changes)
        vector = self.embedder.encode_one(clean["text"]) if "text" in clean else None
        return self._apply(mid, clean, "update", vector=vector)

    @staticmethod
    def _check_changes(changes: dict[str, Any]) -> dict[str, Any]:
        clean: dict[str, Any] = {}
        for key, value in changes.items():
            if key == "text":
                clean[key] = check_text(value)
            elif key == "namespace":
                clean[key] = check_namespace(value)
            elif key == "kind":
                clean[key] = check_choice(value, KINDS, "kind")
            elif key == "category":
                clean[key] = check_choice(value, CATEGORIES, "category")
            elif key == "importance":
                clean[key] = check_importance(value)
            elif key == "created_at":
                clean[key] = parse_time(value, "created_at")
                if clean[key] is None:
                    raise ValidationError("created_at cannot be empty")
            elif key == "pinned":
                if not isinstance(value, bool):
                    raise ValidationError("pinned must be true or false")
                clean[key] = value
            elif key == "source":
                if value is not None and not isinstance(value, str):
                    raise ValidationError("source must be a string or None")
                clean[key] = value
            elif key in ("status", "superseded_by", "merged_into", "last_accessed_at", "access_count", "updated_at"):
                clean[key] = value  # internal: set by forget/restore/undo and curation, already checked
        return clean

    def _apply(self, mid: int, fields: dict[str, Any], action: str, *, vector: np.ndarray | None = None,
               require_status: tuple[str, ...] | None = None, note: str | None = None) -> Memory:
        """Set fields of one memory as one operation; returns the memory after."""
        _, after, _ = self._change({mid: fields}, action, vectors={mid: vector} if vector is not None else None,
                                   require_status=require_status, note=note)
        return after[mid]

    def _change(
        self,
        changes: dict[int, dict[str, Any]],
        action: str,
        *,
        vectors: dict[int, np.ndarray] | None = None,
        require_status: tuple[str, ...] | None = None,
        note: str | None = None,
        new_rows: list[dict[str, Any]] | None = None,
        new_vectors: np.ndarray | None = None,
        removals: list[int] | None = None,
        extra: Callable[[Any, int, list[int]], None] | None = None,
    ) -> tuple[int, dict[int, Memory], list[int]]:
        """One operation on the bank: one transaction, one group of events, indexes updated after.

        ``changes`` sets fields of existing memories (a new text is embedded again), ``new_rows``
        (checked rows with ``new_vectors``) are inserted, ``removals`` are deleted outright (only
        undo uses that, for memories an operation created), and ``extra(con, group, new_ids)``
        writes whatever else belongs to the operation (a conflict's status, a merge record).
        Returns ``(group, memories after by id, new ids)``. Curation modules build on this.
        """
        vectors = dict(vectors or {})
        for mid, fields in changes.items():
            if "text" in fields and mid not in vectors:
                vectors[mid] = self.embedder.encode_one(fields["text"])
        removals = list(removals or [])
        with self._session() as con:
            ids = list(changes) + removals
            befores = self._get_rows(con, ids)
            for mid in changes:
                before = befores[mid]
                if before.status == "deleted":
                    raise StateError(f"memory {mid} was hard-deleted; its text is gone and it cannot change")
                if require_status and before.status not in require_status:
                    raise StateError(
                        f"memory {mid} is {before.status}; {action} needs it to be {' or '.join(require_status)}")
            group = Store.take_ids(con, "next_group_id", 1)
            seq = Store.next_seq(con)
            new_ids = self._insert_rows(con, new_rows, new_vectors, seq, group) if new_rows else []
            now = to_naive_utc(utcnow())
            for mid, fields in changes.items():
                sets, params = ["seq = ?"], [seq]
                if "updated_at" not in fields:  # an undo puts the old one back
                    sets.append("updated_at = ?")
                    params.append(now)
                for key, value in fields.items():
                    sets.append(f"{key} = ?")
                    params.append(to_naive_utc(value) if isinstance(value, datetime) else value)
                if "text" in fields:
                    sets += ["content_hash = ?", "embedding = ?"]
                    params += [content_hash(fields["text"]), vectors[mid].astype(np.float32).tolist()]
                con.execute(f"UPDATE memories SET {', '.join(sets)} WHERE id = ?", params + [mid])
            if removals:
                con.execute("INSERT INTO removed_memories SELECT id, namespace, ? FROM memories "
                            "WHERE id IN (SELECT unnest(?))", [seq, removals])
                con.execute("DELETE FROM memories WHERE id IN (SELECT unnest(?))", [removals])
            afters = self._get_rows(con, list(changes) + new_ids)
            for mid, fields in changes.items():
                keys = [k for k in fields if k in Memory.__dataclass_fields__ and k != "updated_at"] + ["updated_at"]
                Store.log_event(con, self.actor, action, mid, _snapshot(befores[mid], keys),
                                _snapshot(afters[mid], keys), utcnow(), note, group)
            for mid in removals:
                Store.log_event(con, self.actor, "remove", mid, {"id": mid, "status": befores[mid].status},
                                None, utcnow(), note, group)
            if extra is not None:
                extra(con, group, new_ids)
            rows = Store.fetch_rows(con, "id IN (SELECT unnest(?))", [list(changes) + new_ids], with_embedding=True)
        self._synced_seq = seq
        self._acknowledged = None
        for idx in self._indexes.values():
            idx.seq = seq
            for mid in removals:
                idx.remove(mid)
        for mid in removals:
            self._memories.pop(mid, None)
        self._apply_rows(rows)
        for idx in self._indexes.values():
            if idx.changes_since_save >= _SAVE_EVERY:
                self._save_index(idx)
        return group, afters, new_ids

    def _get_rows(self, con: Any, ids: list[int]) -> dict[int, Memory]:
        """Memories by id, fresh from the store; NotFoundError names the first missing id."""
        if not ids:
            return {}
        found = {int(r["id"]): _memory_from_row(r)
                 for r in Store.fetch_rows(con, "id IN (SELECT unnest(?))", [list(ids)]).to_pylist()}
        for mid in ids:
            if mid not in found:
                raise NotFoundError(f"no memory with id {mid} in {self.path}")
        return found

    def reinforce(self, memory_id: int, *, importance: float | None = None, at: Any = None) -> Memory:
        """Count a restatement of a stored memory as a use: one more access, the later access time,
        and the higher importance. What ingest does instead of storing a near-duplicate twice."""
        mid = self._check_id(memory_id)
        at_dt = parse_time(at, "at") or utcnow()
        with self._session(write=False) as con:
            m = self._get(con, mid)
        fields: dict[str, Any] = {"access_count": m.access_count + 1,
                                  "last_accessed_at": max(filter(None, (m.last_accessed_at, at_dt)))}
        if importance is not None and check_importance(importance) > m.importance:
            fields["importance"] = importance
        return self._apply(mid, fields, "reinforce", require_status=("active",))

    def forget(self, memory_id: int, hard: bool = False, reason: str | None = None) -> None:
        """Soft-delete (archive: kept, never recalled, restorable) or, with ``hard=True``, delete for
        real: the text and vector are erased from the file and the history keeps only the id and
        a content hash."""
        mid = self._check_id(memory_id)
        if not hard:
            self._apply(mid, {"status": "archived"}, "forget", require_status=("active",), note=reason)
            return
        self.forget_many([mid], hard=True, reason=reason)

    def restore(self, memory_id: int) -> Memory:
        """Bring an archived (soft-deleted) memory back into recall."""
        mid = self._check_id(memory_id)
        return self._apply(mid, {"status": "active"}, "restore", require_status=("archived",))

    def _events_where(self, con: Any, where: str, params: list[Any]) -> list[Event]:
        return [_event(r) for r in con.execute(
            f"SELECT {_EVENT_COLUMNS} FROM events WHERE {where} ORDER BY id", params).fetchall()]

    def undo(self, event_id: int) -> Memory:
        """Undo one event of a memory's history by setting the fields it changed back.

        Every change but a hard delete can be undone; undoing an ``add`` archives the memory. An
        undo is itself not undone (make the change again instead), and nothing is undone twice.
        """
        eid = self._check_id(event_id)
        with self._session(write=False) as con:
            events = self._events_where(con, "id = ?", [eid])
        if not events:
            raise NotFoundError(f"no event with id {eid}")
        event = events[0]
        self._check_undoable([event])
        if event.memory_id is None:
            raise StateError(f"event {eid} ({event.action}) is not about one memory; undo its operation "
                             f"with undo_group({event.group_id})")
        if event.action == "add":
            fields = {"status": "archived"}
        else:
            fields = self._check_changes(self._restorable(event.before))
        mark = lambda con, group, _: con.execute(  # noqa: E731
            "UPDATE events SET undone_by = ? WHERE id = ?", [group, eid])
        _, after, _ = self._change({event.memory_id: fields}, "undo", note=f"undo event {eid}", extra=mark)
        return after[event.memory_id]

    @staticmethod
    def _check_undoable(events: list[Event]) -> None:
        for e in events:
            if e.action == "undo" or (e.note or "").startswith("undo "):
                raise StateError(f"event {e.id} is an undo; an undo cannot be undone (make the change again)")
            if e.undone_by is not None:
                raise StateError(f"event {e.id} ({e.action}) was already undone (by operation {e.undone_by})")
            if e.action == "hard_delete":
                raise StateError("a hard delete cannot be undone: the text is gone")

    @staticmethod
    def _restorable(before: dict | None) -> dict[str, Any]:
        fields = {k: v for k, v in (before or {}).items()
                  if k in _EDITABLE or k in ("status", "superseded_by", "merged_into", "last_accessed_at",
                                             "access_count", "updated_at")}
        for key in ("created_at", "last_accessed_at", "updated_at"):
            if fields.get(key) is not None:
                fields[key] = parse_time(fields[key])
        return fields

    def undo_group(self, group_id: int) -> int:
        """Undo a whole operation (a merge, a conflict resolution, a maintenance step): every memory
        it changed gets its fields back, memories it created are removed, and the conflicts and
        merges it recorded return to their former state. Returns the group of the undo.

        Refused when a memory the operation touched has changed since (undo that first).
        """
        gid = self._check_id(group_id)
        with self._session(write=False) as con:
            events = self._events_where(con, "group_id = ?", [gid])
            if not events:
                raise NotFoundError(f"no operation with group id {gid}")
            self._check_undoable(events)
            touched = sorted({e.memory_id for e in events if e.memory_id is not None})
            later = self._events_where(
                con, "memory_id IN (SELECT unnest(?)) AND id > ? AND undone_by IS NULL AND group_id != ?",
                [touched, max(e.id for e in events), gid]) if touched else []
            if later:
                e = later[0]
                raise StateError(f"memory {e.memory_id} changed after this operation (event {e.id}, {e.action}); "
                                 "undo that change first")
        changes: dict[int, dict[str, Any]] = {}
        removals: list[int] = []
        conflict_rows: dict[int, dict[str, Any]] = {}
        merge_ids: list[int] = []
        for e in reversed(events):  # the earliest "before" of each memory wins
            if e.memory_id is not None and e.action == "add":
                removals.append(e.memory_id)
            elif e.memory_id is not None:
                changes.setdefault(e.memory_id, {}).update(self._check_changes(self._restorable(e.before)))
            elif e.before and "conflict_id" in e.before:
                conflict_rows[e.before["conflict_id"]] = e.before
            elif e.after and "merge_id" in e.after:
                merge_ids.append(e.after["merge_id"])
        for mid in removals:
            changes.pop(mid, None)

        def revert(con: Any, group: int, _: list[int]) -> None:
            for cid, before in conflict_rows.items():
                con.execute("UPDATE conflicts SET status = ?, resolution = ?, resolved_at = ?, resolved_by = ?, "
                            "group_id = ? WHERE id = ?",
                            [before["status"], before.get("resolution"), parse_time(before.get("resolved_at")),
                             before.get("resolved_by"), before.get("group_id"), cid])
            if merge_ids:
                con.execute("UPDATE merges SET undone_at = ? WHERE id IN (SELECT unnest(?))",
                            [to_naive_utc(utcnow()), merge_ids])
            con.execute("UPDATE events SET undone_by = ? WHERE group_id = ?", [group, gid])
            # The undo is in the history even when it changed no memory (a dismissal reopened).
            Store.log_event(con, self.actor, "undo", None, {"group_id": gid}, None, utcnow(),
                            f"undo group {gid}", group)

        group, _, _ = self._change(changes, "undo", removals=removals, extra=revert, note=f"undo group {gid}")
        return group

    def live_vectors(self, namespace: str) -> tuple[np.ndarray, np.ndarray]:
        """Ids and unit vectors of a namespace's live memories, for clustering and for finding
        conflict candidates without scanning other namespaces. Read-only views, not copies: a
        large namespace is not copied on every added memory."""
        check_namespace(namespace)
        with self._session(write=False) as con:
            idx = self._ns_index(con, namespace)
        if idx is None:
            return np.zeros(0, dtype=np.int64), np.zeros((0, self.dim or 0), dtype=np.float32)
        ids, emb = idx.ids[: idx.n], idx.emb[: idx.n]
        ids.flags.writeable = False
        emb.flags.writeable = False
        return ids, emb

    def get_many(self, ids: Iterable[int]) -> dict[int, Memory]:
        """Several memories by id, in one read; NotFoundError names the first missing id."""
        wanted = [self._check_id(i) for i in ids]
        with self._session(write=False) as con:
            return self._get_rows(con, wanted)

    def forget_many(self, ids: Iterable[int], *, hard: bool = False, reason: str | None = None) -> int | None:
        """Forget several memories as one operation (soft: archived, undoable with ``undo_group``;
        hard: erased, with one rewrite of the file for all of them). Returns the operation's group
        id (None when ``ids`` is empty)."""
        if isinstance(ids, (str, bytes)):
            raise ValidationError("ids must be a list of memory ids")
        member_ids = sorted({self._check_id(i) for i in ids})
        if not member_ids:
            return None
        if not hard:
            group, _, _ = self._change({mid: {"status": "archived"} for mid in member_ids}, "forget",
                                       require_status=("active",), note=reason)
            return group
        with self._session() as con:
            befores = self._get_rows(con, member_ids)
            gone = [m for m in befores.values() if m.status == "deleted"]
            if gone:
                raise StateError(f"memory {gone[0].id} is already hard-deleted")
            group = Store.take_ids(con, "next_group_id", 1)
            seq = Store.next_seq(con)
            con.execute(
                "UPDATE memories SET text = NULL, embedding = NULL, source = NULL, context = NULL, status = 'deleted', "
                "seq = ?, updated_at = ? WHERE id IN (SELECT unnest(?))", [seq, to_naive_utc(utcnow()), member_ids])
            # The history must not keep what was forgotten: scrub texts from earlier events.
            for eid, b, a in con.execute("SELECT id, before, after FROM events WHERE memory_id IN (SELECT unnest(?))",
                                         [member_ids]).fetchall():
                con.execute("UPDATE events SET before = ?, after = ? WHERE id = ?", [_scrub(b), _scrub(a), eid])
            # Answers written with the memory in the prompt may quote it: feedback answers of recalls
            # that returned it, and ablation answers (and the judge's reasons) of cases that saw it.
            con.execute("UPDATE feedback SET answer = NULL WHERE retrieval_id IN (SELECT retrieval_id FROM "
                        "retrieval_hits WHERE memory_id IN (SELECT unnest(?)))", [member_ids])
            con.execute("UPDATE ablation_cases SET answer_with = NULL, reason = NULL "
                        "WHERE list_has_any(memory_ids, ?::BIGINT[])", [member_ids])
            Store.scrub_texts(con, [m.text for m in befores.values()])  # evidence, reports, notes quoting them
            Store.log_events(con, self.actor, "hard_delete", member_ids,
                             [{"id": m.id, "content_hash": m.content_hash, "status": m.status}
                              for m in (befores[i] for i in member_ids)],
                             [{"id": i, "status": "deleted"} for i in member_ids], utcnow(), group)
        with self._lock:
            self._wait_for_flush()
            self._store.compact()
            self._signature = self._store.signature()
        self._synced_seq = seq
        for mid in member_ids:
            self._memories.pop(mid, None)
            for idx in self._indexes.values():
                idx.remove(mid)
        # The cached BM25 files hold the memories' words: rewrite them now, or drop them for a rebuild.
        for ns in {m.namespace for m in befores.values()}:
            idx = self._indexes.get(ns)
            if idx is not None:
                idx.seq = seq
                self._save_index(idx)
            else:
                for f in self.index_folder.glob(namespace_key(ns) + ".*"):
                    f.unlink(missing_ok=True)
        return group

    def expiry_candidates(self, *, now: Any = None, older_than_days: float, below_importance: float,
                          unused_days: float, namespace: str | None = None) -> list[Memory]:
        """Live, unpinned memories created more than ``older_than_days`` before ``now``, with importance
        under ``below_importance``, not recalled for ``unused_days`` (or never): what expiry removes."""
        now_dt = parse_time(now, "now") or utcnow()
        for name, value in (("older_than_days", older_than_days), ("unused_days", unused_days)):
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not value >= 0:
                raise ValidationError(f"{name} must be a number of days >= 0")
        check_importance(below_importance)
        created_before = to_naive_utc(now_dt) - timedelta(days=older_than_days)
        used_before = to_naive_utc(now_dt) - timedelta(days=unused_days)
        where = ("status = 'active' AND NOT pinned AND created_at < ? AND importance < ? "
                 "AND (last_accessed_at IS NULL OR last_accessed_at < ?)")
        params: list[Any] = [created_before, float(below_importance), used_before]
        if namespace is not None:
            where += " AND namespace = ?"
            params.append(check_namespace(namespace))
        with self._session(write=False) as con:
            return [_memory_from_row(r) for r in Store.fetch_rows(con, where, params, order="created_at, id").to_pylist()]

    def usage_summary(self, namespace: str | None = None) -> dict[str, Any]:
        """Totals a maintenance report carries: live memories, average access count, never recalled."""
        where, params = ("status = 'active'" + (" AND namespace = ?" if namespace else ""),
                         [check_namespace(namespace)] if namespace else [])
        with self._session(write=False) as con:
            total, avg, never = con.execute(
                f"SELECT count(*), coalesce(avg(access_count), 0), count(*) FILTER (WHERE access_count = 0) "
                f"FROM memories WHERE {where}", params).fetchone()
        return {"active": int(total), "average_access_count": round(float(avg), 3), "never_accessed": int(never)}

    def record_maintenance_run(self, *, started_at: datetime, dry_run: bool, plan: dict[str, Any],
                               report: dict[str, Any]) -> int:
        """Log a maintenance run (dry or real) with its plan and report; returns its id."""
        with self._session() as con:
            rid = Store.take_ids(con, "next_run_id", 1)
            con.execute("INSERT INTO maintenance_runs VALUES (?, ?, ?, ?, ?, ?, ?)",
                        [rid, to_naive_utc(started_at), to_naive_utc(utcnow()), self.actor, dry_run,
                         json.dumps(plan, default=str), json.dumps(report, default=str, ensure_ascii=False)])
        return rid

    def maintenance_runs(self, limit: int = 20, include_dry_runs: bool = True) -> list[dict[str, Any]]:
        """Past maintenance runs, newest first, with their plans and reports."""
        where = "" if include_dry_runs else "WHERE NOT dry_run"
        with self._session(write=False) as con:
            rows = con.sql(f"SELECT * FROM maintenance_runs {where} ORDER BY id DESC LIMIT {int(limit)}"
                           ).to_arrow_table().to_pylist()
        for r in rows:
            r["started_at"], r["finished_at"] = to_aware(r["started_at"]), to_aware(r["finished_at"])
            r["plan"], r["report"] = json.loads(r["plan"] or "{}"), json.loads(r["report"] or "{}")
        return rows

    def use_llm(self, client: Any) -> None:
        """Use an LLM client (memory_core.llm) for the recall gate's judge and as the default for
        curation that can use one; ``None`` goes back to rules only."""
        self.llm = client
        self.gate = gate_mod.Gate(judge=gate_mod.LLMJudge(client) if client is not None else None)

    def profile(self, namespace: str, *, limit: int = 12, min_importance: float = 0.6) -> Profile:
        """The core of what the bank knows about a namespace: its most important live memories on
        identity, work, skills, goals and standing preferences. Superseded, merged and expired
        memories are not live, so the profile follows curation and maintenance by itself."""
        check_namespace(namespace)
        check_importance(min_importance)
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
            raise ValidationError("limit must be a whole number >= 1")
        with self._session(write=False) as con:
            rows = Store.fetch_rows(
                con, "namespace = ? AND status = 'active' AND category IN ('profile', 'goal', 'preference') "
                "AND importance >= ?", [namespace, float(min_importance)],
                order="importance DESC, created_at DESC, id", limit=limit).to_pylist()
        return Profile(namespace, [_memory_from_row(r) for r in rows])

    # -- curation entry points (the logic lives in extract, conflicts, merge and forget) ----------

    def ingest(self, conversation: Any, namespace: str, *, pii: str = "redact", client: Any = None) -> Any:
        """Distil a conversation (a list of {"role", "content", "at"} turns) into memories of
        ``namespace``; see :func:`memory_core.extract.ingest`. Uses the bank's LLM when set."""
        from . import extract

        return extract.ingest(self, conversation, namespace, client=client or self.llm, pii=pii)

    def detect_conflicts(self, namespace: str, *, memory_ids: Iterable[int] | None = None,
                         client: Any = None) -> list[Conflict]:
        """Find and record contradictions in ``namespace`` (only involving ``memory_ids`` when given);
        returns the newly recorded ones. See :func:`memory_core.conflicts.detect`."""
        from . import conflicts

        return conflicts.detect(self, namespace, memory_ids=memory_ids, client=client or self.llm)

    def maintain(self, *, dry_run: bool = False, now: Any = None, steps: list[str] | None = None,
                 namespace: str | None = None, plan: Any = None, progress: Any = None) -> Any:
        """Run (or preview) the maintenance plan; see :func:`memory_core.forget.run`."""
        from . import forget

        return forget.run(self, now=now, plan=plan, steps=steps, namespace=namespace, dry_run=dry_run,
                          client=self.llm, progress=progress)

    # -- conflicts ---------------------------------------------------------------------------

    def conflicts(self, namespace: str | None = None, status: str | None = "open",
                  memory_id: int | None = None) -> list[Conflict]:
        """Recorded contradictions, newest first; ``status=None`` for every status."""
        where, params = self._where(
            namespace=None if namespace is None else check_namespace(namespace),
            status=None if status is None else check_choice(status, CONFLICT_STATUSES, "status"))
        if memory_id is not None:
            where += " AND (a_id = ? OR b_id = ?)"
            params += [self._check_id(memory_id)] * 2
        with self._session(write=False) as con:
            rows = con.sql(f"SELECT * FROM conflicts WHERE {where} ORDER BY id DESC",
                           params=params).to_arrow_table().to_pylist()
            memories = self._get_rows(con, sorted({r["a_id"] for r in rows} | {r["b_id"] for r in rows}))
        return [_conflict(r, memories) for r in rows]

    def conflict(self, conflict_id: int) -> Conflict:
        """One recorded conflict by id."""
        cid = self._check_id(conflict_id)
        with self._session(write=False) as con:
            return self._conflict(con, cid)

    def _conflict(self, con: Any, cid: int) -> Conflict:
        rows = con.sql("SELECT * FROM conflicts WHERE id = ?", params=[cid]).to_arrow_table().to_pylist()
        if not rows:
            raise NotFoundError(f"no conflict with id {cid}")
        return _conflict(rows[0], self._get_rows(con, [rows[0]["a_id"], rows[0]["b_id"]]))

    def record_conflict(self, a_id: int, b_id: int, *, kind: str, evidence: str, confidence: float,
                        suggestion: str, path: str) -> Conflict | None:
        """Record that two live memories of one namespace contradict each other.

        Returns None when the pair was recorded before, whatever became of it: a dismissed pair is
        never flagged again, and an open one is not flagged twice.
        """
        return self.record_conflicts([dict(a_id=a_id, b_id=b_id, kind=kind, evidence=evidence,
                                           confidence=confidence, suggestion=suggestion, path=path)])[0]

    def record_conflicts(self, found: list[dict[str, Any]]) -> list[Conflict | None]:
        """Record several conflicts (dicts of :meth:`record_conflict`'s arguments) in one operation;
        a bad one refuses them all. Returns each recorded Conflict, or None for a known pair."""
        checked = []
        for f in found:
            a_id, b_id = self._check_id(f["a_id"]), self._check_id(f["b_id"])
            if a_id == b_id:
                raise ValidationError("a memory cannot contradict itself")
            confidence = f["confidence"]
            if isinstance(confidence, bool) or not isinstance(confidence, (int, float)) or not 0 <= confidence <= 1:
                raise ValidationError(f"confidence must be between 0 and 1, got {confidence!r}")
            checked.append((a_id, b_id, f))
        out: list[Conflict | None] = []
        with self._session() as con:
            pairs = self._get_rows(con, sorted({i for a, b, _ in checked for i in (a, b)}))
            new_ids = []
            for a_id, b_id, f in checked:
                a, b = sorted((pairs[a_id], pairs[b_id]), key=lambda m: (m.created_at, m.id))
                if a.namespace != b.namespace:
                    raise ValidationError("a conflict is between memories of one namespace; these are in "
                                          f"{a.namespace!r} and {b.namespace!r}")
                if a.status != "active" or b.status != "active":
                    raise StateError(f"only live memories conflict; memory {a.id} is {a.status}, {b.id} is {b.status}")
                seen = con.execute("SELECT count(*) FROM conflicts WHERE a_id = ? AND b_id = ?",
                                   [a.id, b.id]).fetchone()[0]
                if seen:
                    new_ids.append(None)
                    continue
                cid = Store.take_ids(con, "next_conflict_id", 1)
                con.execute(
                    "INSERT INTO conflicts (id, namespace, a_id, b_id, kind, evidence, confidence, suggestion, "
                    "path, status, detected_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, 'open', ?)",
                    [cid, a.namespace, a.id, b.id, f["kind"], f["evidence"], float(f["confidence"]),
                     f["suggestion"], f["path"], to_naive_utc(utcnow())])
                Store.log_event(con, self.actor, "conflict_detected", None, None,
                                {"conflict_id": cid, "a_id": a.id, "b_id": b.id, "kind": f["kind"]}, utcnow())
                new_ids.append(cid)
            if any(new_ids):
                Store.next_seq(con)  # other processes' caches of conflicts must notice
            for cid in new_ids:
                out.append(None if cid is None else self._conflict(con, cid))
        return out

    def resolve_conflict(self, conflict_id: int, rule: str, *, memory_id: int | None = None,
                         text: str | None = None) -> Conflict:
        """Resolve a conflict by a rule; one undoable operation (``undo_group(conflict.group_id)``).

        * ``newer_wins``: the older memory becomes superseded, linked to the newer.
        * ``explicit_wins``: the inferred memory becomes superseded by the explicit one.
        * ``keep_both``: both stay; recall returns them together and the prompt states the contradiction.
        * ``edit``: ``memory_id`` (one of the two) gets ``text``; the conflict is resolved.
        * ``dismiss``: not a conflict; the pair is never flagged again.
        """
        cid = self._check_id(conflict_id)
        check_choice(rule, RESOLUTIONS, "rule")
        conflict = self.conflict(cid)
        if conflict.status not in ("open", "acknowledged"):
            raise StateError(f"conflict {cid} is already {conflict.status} ({conflict.resolution}); undo that first")
        a, b = conflict.a, conflict.b
        changes: dict[int, dict[str, Any]] = {}
        if rule != "dismiss":
            for m in (a, b):
                if m.status != "active" and rule != "keep_both":
                    raise StateError(f"memory {m.id} is {m.status} since the conflict was found; the conflict "
                                     "is moot: dismiss it")
        if rule == "newer_wins":
            changes[a.id] = {"status": "superseded", "superseded_by": b.id}
        elif rule == "explicit_wins":
            if a.kind == b.kind:
                raise StateError(f"both memories are {a.kind}; use newer_wins, keep_both or edit")
            loser, winner = (a, b) if a.kind == "inferred" else (b, a)
            changes[loser.id] = {"status": "superseded", "superseded_by": winner.id}
        elif rule == "edit":
            if memory_id not in (a.id, b.id):
                raise ValidationError(f"edit needs memory_id {a.id} or {b.id} (one of the two)")
            changes[memory_id] = {"text": check_text(text)}
        elif memory_id is not None or text is not None:
            raise ValidationError(f"{rule} takes no memory_id or text")
        status = {"keep_both": "acknowledged", "dismiss": "dismissed"}.get(rule, "resolved")
        before = {"conflict_id": cid, "status": conflict.status, "resolution": conflict.resolution,
                  "resolved_at": conflict.resolved_at.isoformat() if conflict.resolved_at else None,
                  "resolved_by": None, "group_id": conflict.group_id}

        def mark(con: Any, group: int, _: list[int]) -> None:
            con.execute("UPDATE conflicts SET status = ?, resolution = ?, resolved_at = ?, resolved_by = ?, "
                        "group_id = ? WHERE id = ?", [status, rule, to_naive_utc(utcnow()), self.actor, group, cid])
            Store.log_event(con, self.actor, "resolve_conflict", None, before,
                            {"conflict_id": cid, "status": status, "resolution": rule}, utcnow(), None, group)

        self._change(changes, "resolve_conflict", extra=mark, note=f"conflict {cid}: {rule}")
        return self.conflict(cid)

    def _acknowledged_pairs(self, con: Any) -> dict[int, set[int]]:
        if self._acknowledged is None:
            pairs: dict[int, set[int]] = {}
            for a, b in con.execute("SELECT a_id, b_id FROM conflicts WHERE status = 'acknowledged'").fetchall():
                pairs.setdefault(a, set()).add(b)
                pairs.setdefault(b, set()).add(a)
            self._acknowledged = pairs
        return self._acknowledged

    # -- merges --------------------------------------------------------------------------------

    def merge(self, ids: Iterable[int], text: str | None = None, *, path: str = "manual",
              detail: str | None = None) -> MergeRecord:
        """Merge live memories of one namespace into a new one; one undoable operation.

        The new memory takes ``text`` (default: an extractive merge keeping every distinct fact), the
        highest importance, the newest date, the summed access counts, "explicit" if any member is,
        the most common category; the members become ``merged`` with ``merged_into`` set.
        """
        from . import merge as merge_mod

        if isinstance(ids, (str, bytes)):
            raise ValidationError("ids must be a list of memory ids")
        member_ids = sorted({self._check_id(i) for i in ids})
        if len(member_ids) < 2:
            raise ValidationError("a merge needs at least two different memories")
        with self._session(write=False) as con:
            members = self._get_rows(con, member_ids)
        namespaces = {m.namespace for m in members.values()}
        if len(namespaces) > 1:
            raise ValidationError(f"a merge stays within one namespace; these span {', '.join(sorted(namespaces))}")
        for m in members.values():
            if m.status != "active":
                raise StateError(f"memory {m.id} is {m.status}; only live memories can be merged")
        ms = [members[i] for i in member_ids]
        text = check_text(text) if text is not None else merge_mod.extractive_merge([m.text for m in ms])
        last = [m.last_accessed_at for m in ms if m.last_accessed_at is not None]
        row = self._normalize_row({
            "text": text, "namespace": ms[0].namespace, **merge_mod.merged_fields(ms),
            "last_accessed_at": max(last) if last else None, "source": "merge",
            "pinned": any(m.pinned for m in ms)}, utcnow())
        with self._session() as con:
            new_id = Store.take_ids(con, "next_id", 1)  # reserved, so the members can point at it
        row["id"] = new_id
        changes = {m.id: {"status": "merged", "merged_into": new_id} for m in ms}
        record: dict[str, int] = {}

        def log(con: Any, group: int, _: list[int]) -> None:
            mid = Store.take_ids(con, "next_merge_id", 1)
            con.execute("INSERT INTO merges VALUES (?, ?, ?, ?, ?, ?, ?, ?, NULL)",
                        [mid, ms[0].namespace, new_id, member_ids, path, detail, group, to_naive_utc(utcnow())])
            Store.log_event(con, self.actor, "merge", None, None,
                            {"merge_id": mid, "merged_id": new_id, "member_ids": member_ids}, utcnow(), None, group)
            record["id"] = mid

        self._change(changes, "merge", require_status=("active",), new_rows=[row],
                     new_vectors=self._vectors_for([row]), extra=log, note=f"merged into {new_id}")
        return self.merges(merge_id=record["id"])[0]

    def merges(self, namespace: str | None = None, *, merge_id: int | None = None,
               include_undone: bool = True) -> list[MergeRecord]:
        """Past merges, newest first."""
        where, params = self._where(namespace=None if namespace is None else check_namespace(namespace),
                                    id=None if merge_id is None else self._check_id(merge_id))
        if not include_undone:
            where += " AND undone_at IS NULL"
        with self._session(write=False) as con:
            rows = con.sql(f"SELECT * FROM merges WHERE {where} ORDER BY id DESC",
                           params=params).to_arrow_table().to_pylist()
        if merge_id is not None and not rows:
            raise NotFoundError(f"no merge with id {merge_id}")
        return [MergeRecord(id=r["id"], namespace=r["namespace"], merged_id=r["merged_id"],
                            member_ids=tuple(r["member_ids"]), path=r["path"], detail=r["detail"],
                            group_id=r["group_id"], created_at=to_aware(r["created_at"]),
                            undone_at=to_aware(r["undone_at"])) for r in rows]

    def undo_merge(self, merge_id: int) -> None:
        """Undo a merge: the members come back as they were and the merged memory is removed."""
        record = self.merges(merge_id=merge_id)[0]
        if record.undone_at is not None:
            raise StateError(f"merge {record.id} was already undone")
        self.undo_group(record.group_id)

    # -- recall --------------------------------------------------------------------------------

    def should_recall(self, query: str) -> gate_mod.GateDecision:
        """Should this turn recall memory at all? Trigger rules, then the optional judge."""
        return self.gate.decide(query)

    def recall(
        self,
        query: str,
        namespace: str = "default",
        params: ScoringParams | str | None = None,
        now: Any = None,
        record: bool = True,
        gate: bool = False,
        k: int | None = None,
        threshold: float | None = None,
    ) -> list[Hit]:
        """The memories of ``namespace`` most worth putting in the prompt for ``query``.

        Scores every live memory (exact), keeps the top k that reach the threshold: possibly none.
        ``params`` is a ScoringParams, a preset name, or None for the bank's active preset.
        ``now`` (default: the current time) makes an "as of" recall: memories created later are
        not seen. ``record=False`` changes nothing (what-if); ``record=True`` counts the access and
        logs the retrieval. ``gate=True`` first asks :meth:`should_recall` and returns nothing
        (logging the decision) when it says no.
        """
        started = time.perf_counter()
        check_text(query, "query")
        check_namespace(namespace)
        if not isinstance(record, bool) or not isinstance(gate, bool):
            raise ValidationError("record and gate must be true or false")
        if record and self._store.read_only:
            raise BankReadOnlyError(
                f"the bank {self.path} was opened read-only; recall with record=False reads without writing")
        preset_name, p = self._resolve_params(params)
        if k is not None or threshold is not None:
            p = p.replace(**{n: v for n, v in (("k", k), ("threshold", threshold)) if v is not None})
        now_dt = parse_time(now, "now") or utcnow()
        decision = self.should_recall(query) if gate else None
        vector = None
        if (decision is None or decision.recall) and self.dim is not None:
            vector = self.embedder.encode_one(query)
        with self._lock:
            if self.closed:
                raise StateError("this bank is closed; open it again with MemoryBank.open")
            # Reserved before ranking: taking a new block may catch up with other processes.
            rid = self._next_retrieval_id() if record else None
            idx = self._indexes.get(namespace)
            if ((vector is None or (idx is not None and self._acknowledged is not None))
                    and (self._flush_current or self._store.signature() == self._signature)):
                # Nobody wrote since this bank last looked (or only this bank's flush, which has
                # caught up with the others and holds the file): no file access at all.
                hits = [] if vector is None else self._rank(None, idx, query, p, now_dt, vector)
            else:
                # No flush here: the index already counts this bank's buffered recalls, and a
                # write transaction per recall would hold the file longer for other processes.
                with self._session(write=False, flush=False) as con:
                    hits = []
                    if vector is not None:
                        self._acknowledged_pairs(con)
                        idx = self._ns_index(con, namespace)
                        if idx is not None:
                            hits = self._rank(con, idx, query, p, now_dt, vector)
            if record:
                self._record(rid, query, namespace, p, preset_name, decision, hits, now_dt,
                             (time.perf_counter() - started) * 1000.0)
        return hits

    def _resolve_params(self, params: ScoringParams | str | None) -> tuple[str | None, ScoringParams]:
        if isinstance(params, ScoringParams):
            return None, params
        if params is None:
            return self.active_preset()
        if isinstance(params, str):
            return params, self.preset(params)
        raise ValidationError("params must be a ScoringParams, a preset name or None")

    def _rank(self, con: Any | None, idx: NamespaceIndex, query: str, p: ScoringParams, now_dt: datetime,
              vector: np.ndarray) -> list[Hit]:
        if idx.n == 0:
            return []
        idx.mode = self._index_mode
        ranking = idx.rank(p, lexical_tokens(query), vector, now_dt.timestamp())
        self.last_search = {"approximate": ranking.approximate, **ranking.stats}
        rows = [int(r) for r in ranking.rows]
        score = {r: float(s) for r, s in zip(rows, ranking.scores)}
        comps = {r: {name: float(v[j]) for name, v in ranking.components.items()} for j, r in enumerate(rows)}
        pairs = self._acknowledged or {}
        # A pruned ranking scored only some rows: score the kept pairs' partners before pairing.
        for r in list(rows):
            for partner in pairs.get(int(idx.ids[r]), ()):
                pr = idx.row_of.get(partner)
                if pr is not None and pr not in score:
                    s, c = ranking.score_rows(np.array([pr]))
                    score[pr] = float(s[0])
                    comps[pr] = {name: float(v[0]) for name, v in c.items()}
        rows, partner_of = add_kept_pairs(rows, idx.ids, idx.row_of, score, pairs)
        ids = [int(idx.ids[r]) for r in rows]
        memories = {mid: m for mid, r in zip(ids, rows) if (m := _memory_from_index(idx, r)) is not None}
        if len(memories) < len(ids):
            memories.update(self._get_many(con, [mid for mid in ids if mid not in memories]))
        return [
            Hit(memory=memories[mid], score=score[r], rank=rank + 1, components=comps[r],
                conflict_with=partner_of.get(mid), approximate=ranking.approximate)
            for rank, (mid, r) in enumerate(zip(ids, rows))
        ]

    def _next_retrieval_id(self) -> int:
        """A retrieval id for a recall, from a block reserved in the store (ids a closed bank did
        not use are skipped, never reused)."""
        nxt, end = self._retrieval_ids
        if nxt >= end and self._spare_ids is not None:
            nxt, self._spare_ids = self._spare_ids, None
            end = nxt + _RETRIEVAL_ID_BLOCK
        elif nxt >= end:
            with self._session() as con:
                nxt = Store.take_ids(con, "next_retrieval_id", _RETRIEVAL_ID_BLOCK)
            end = nxt + _RETRIEVAL_ID_BLOCK
        self._retrieval_ids = (nxt + 1, end)
        return nxt

    def candidates(self, queries: list[str], namespace: str, now: Any = None,
                   vectors: np.ndarray | None = None) -> Candidates:
        """What ranking ``queries`` in ``namespace`` needs, captured once; changes nothing.

        Each query is embedded once (in one batch, unless ``vectors`` are given) and matched
        lexically once; ``Candidates.select(params)`` then returns, for any parameters, exactly
        the ids :meth:`recall` with ``record=False`` would. ``now`` is one moment or one per
        query (None: the current time), as in recall's "as of".
        """
        check_namespace(namespace)
        if not isinstance(queries, (list, tuple)):
            raise ValidationError("queries must be a list of strings")
        for q in queries:
            check_text(q, "query")
        moments = list(now) if isinstance(now, (list, tuple)) else [now] * len(queries)
        if len(moments) != len(queries):
            raise ValidationError("now must be one moment, or one per query")
        current = utcnow()
        at = np.array([(parse_time(m, "now") or current).timestamp() for m in moments], dtype=np.float64)
        if vectors is None and queries and self.dim is not None:
            # Outside the lock: the model is the slow part, and other callers need not wait for it.
            unique = list(dict.fromkeys(queries))
            encoded = self.embedder.encode(unique)
            pos = {q: i for i, q in enumerate(unique)}
            vectors = encoded[[pos[q] for q in queries]]
        elif vectors is not None and len(vectors) != len(queries):
            raise ValidationError("vectors must hold one embedding per query")
        with self._lock:
            with self._session(write=False) as con:
                pairs = self._acknowledged_pairs(con)
                idx = self._ns_index(con, namespace)
            n = 0 if idx is None else idx.n
            sim = np.zeros((len(queries), n))
            lex = np.zeros((len(queries), n))
            idf_sum = np.zeros(len(queries))
            max_idf = 0.0
            if n and queries:
                if vectors is None:  # another process gave the bank its first vectors meanwhile
                    vectors = self.embedder.encode(list(queries))
                # One product per query, as recall computes it, so rounding cannot reorder near-ties.
                sim = np.array([idx.similarities(np.asarray(v, dtype=np.float32)) for v in vectors], dtype=np.float64)
                matched = {q: idx.lexical.match(lexical_tokens(q)) for q in dict.fromkeys(queries)}
                lex = np.array([matched[q][0] for q in queries], dtype=np.float64).reshape(len(queries), n)
                idf_sum = np.array([matched[q][1] for q in queries], dtype=np.float64)
                max_idf = matched[queries[0]][2]
            copy = (lambda a: np.array(a[:n], copy=True)) if n else (lambda a: np.zeros(0))
            return Candidates(
                ids=copy(idx.ids) if n else np.zeros(0, dtype=np.int64), created=copy(idx.created),
                last_access=copy(idx.last_access), importance=copy(idx.importance),
                access_count=copy(idx.access_count), use_count=copy(idx.use_count), similarity=sim, lexical_raw=lex, idf_sum=idf_sum,
                max_idf=max_idf, k1=idx.lexical.k1 if n else 1.5, now=at,
                pairs={k: set(v) for k, v in (pairs or {}).items()}, row_of=dict(idx.row_of) if n else {},
            )

    def _record(self, rid: int, query: str, namespace: str, p: ScoringParams, preset: str | None,
                decision: gate_mod.GateDecision | None, hits: list[Hit], now_dt: datetime,
                latency_ms: float) -> None:
        """Log a real recall and count the access of every memory it returned.

        Journaled and buffered (see :mod:`memory_core.recall_log`); this bank's indexes count the
        access at once, so its next recall ranks with the new counts, as the store will.
        """
        at = to_naive_utc(now_dt)
        self._journal.append({
            "id": rid, "recalled_at": at.isoformat(), "actor": self.actor, "namespace": namespace,
            "query": query, "params": p.to_json(), "preset": preset,
            "gate": None if decision is None else json.dumps(decision.to_dict(), ensure_ascii=False),
            "recalled": decision is None or decision.recall, "latency_ms": latency_ms, "n_results": len(hits),
            "hits": [[h.rank, h.memory.id, h.score, *(h.components[c] for c in
                      ("similarity", "lexical", "recency", "importance", "frequency"))] for h in hits],
        })
        self.last_retrieval_id = rid
        idx = self._indexes.get(namespace)
        for h in hits:
            mid = h.memory.id
            self._memories.pop(mid, None)
            r = None if idx is None else idx.row_of.get(mid)
            if r is None:
                continue
            last = idx.last_access[r]
            info = idx.info[r]
            if math.isnan(last) or last < now_dt.timestamp():
                last = now_dt.timestamp()
                if info is not None:
                    info = info[:5] + (at,) + info[6:]
            idx.set_fields(mid, idx.created[r], last, idx.importance[r], idx.access_count[r] + 1)
            idx.set_info(mid, info)
        if self._flusher is None:
            self._flusher = threading.Thread(target=self._flush_loop, name="memory-bank-flush", daemon=True)
            self._flusher.start()
        if len(self._journal.current) >= FLUSH_AT:
            self._wake.set()

    # -- index mode ----------------------------------------------------------------------------

    @property
    def index_mode(self) -> str:
        """``exact`` (default: recall scores every live memory, pruned only with a proof) or ``ivf``
        (opt-in: namespaces of 50,000+ memories search an inverted-file index; hits say
        ``approximate=True``)."""
        return self._index_mode

    def set_index_mode(self, mode: str) -> None:
        """Choose how this bank's recall searches large namespaces: ``exact`` or ``ivf``.

        The setting is stored in the bank (every process that opens it follows) and recorded as an
        event. ``ivf`` trades exactness for speed in namespaces of 50,000 memories or more: the
        dense part of the score is searched in an inverted-file index (k-means cells, 8-bit
        codes), the candidates and the lexical matches are then scored exactly, and every hit is
        marked ``approximate``. bench/recall_scale.py measures its recall@k against exact.
        """
        check_choice(mode, INDEX_MODES, "index mode")
        with self._session() as con:
            old = Store.meta(con).get("index_mode", "exact")
            con.execute("INSERT OR REPLACE INTO meta VALUES ('index_mode', ?)", [mode])
            Store.next_seq(con)  # other processes re-read the bank's settings
            Store.log_event(con, self.actor, "set_index_mode", None, {"index_mode": old}, {"index_mode": mode},
                            utcnow())
        self._index_mode = mode

    def retrievals(self, namespace: str | None = None, limit: int | None = 50, *, since: Any = None,
                   until: Any = None, memory_id: int | None = None) -> list[dict[str, Any]]:
        """Logged recalls, newest first, each with its hits and their score components.

        ``since``/``until`` bound the recall time; ``memory_id`` keeps the recalls that returned
        that memory (its recall log); ``limit=None`` returns them all.
        """
        where, params = self._where(namespace=None if namespace is None else check_namespace(namespace))
        if since is not None:
            where += " AND recalled_at >= ?"
            params.append(to_naive_utc(parse_time(since, "since")))
        if until is not None:
            where += " AND recalled_at <= ?"
            params.append(to_naive_utc(parse_time(until, "until")))
        if memory_id is not None:
            where += " AND id IN (SELECT retrieval_id FROM retrieval_hits WHERE memory_id = ?)"
            params.append(self._check_id(memory_id))
        page = "" if limit is None else f" LIMIT {int(limit)}"
        with self._session(write=False) as con:
            heads = con.sql(f"SELECT * FROM retrievals WHERE {where} ORDER BY id DESC{page}",
                            params=params).to_arrow_table().to_pylist()
            ids = [h["id"] for h in heads]
            hits = con.sql("SELECT * FROM retrieval_hits WHERE retrieval_id IN (SELECT unnest(?)) "
                           "ORDER BY retrieval_id, rank", params=[ids]).to_arrow_table().to_pylist() if ids else []
        by_id: dict[int, list] = {}
        for h in hits:
            by_id.setdefault(h["retrieval_id"], []).append(h)
        for head in heads:
            head["recalled_at"] = to_aware(head["recalled_at"])
            head["params"] = json.loads(head["params"]) if head["params"] else None
            head["gate"] = json.loads(head["gate"]) if head["gate"] else None
            head["hits"] = by_id.get(head["id"], [])
        return heads

    # -- feedback: did the answer use what recall returned? -----------------------------------

    def feedback(self, retrieval_id: int, answer: str | None = None, used_ids: Iterable[int] | None = None,
                 helpful: bool | None = None, *, at: Any = None) -> Feedback:
        """Record what happened after a recall: the answer, which memories it used, whether it helped.

        ``retrieval_id`` is the logged recall (``bank.last_retrieval_id`` after ``recall``, or an
        id from :meth:`retrievals`). Usage of each returned memory is decided by the first path
        that applies (see :mod:`memory_core.usage`): ``used_ids`` given by the agent; else
        citation markers ``[m:ID]`` in ``answer``; else the similarity of the answer's sentences
        with each memory against the calibrated bar ``usage.USED_BAR``. ``helpful`` is the
        agent's own judgement of the answer (optional).

        Feedback is an event (logged with action ``feedback``). Giving feedback again for the same
        retrieval **replaces** the earlier feedback (``replaced`` is then true): one answer per
        recall. A hard delete of a returned memory erases the stored answer (it may quote the
        memory) and keeps the decisions. Each memory's ``use_count`` follows in the same
        transaction (a replaced feedback's uses come off first), and other processes rank with
        it after their next catch-up. Raises ``NotFoundError`` for an unknown retrieval and ``ValidationError`` when a
        used id is not among the retrieval's hits, when nothing is given, or for wrong types;
        nothing changes then.
        """
        if isinstance(retrieval_id, bool) or not isinstance(retrieval_id, (int, np.integer)):
            raise ValidationError(f"retrieval_id is a whole number (bank.last_retrieval_id), got {retrieval_id!r}")
        rid = int(retrieval_id)
        if answer is not None:
            if not isinstance(answer, str):
                raise ValidationError(f"answer must be a string, got {type(answer).__name__}")
            if not answer.strip():
                raise ValidationError("answer must not be empty: pass the answer text, or leave it out")
            if "\x00" in answer:
                raise ValidationError("answer contains a NUL character; remove it")
        if helpful is not None and not isinstance(helpful, bool):
            raise ValidationError(f"helpful must be true, false or None, got {helpful!r}")
        given: list[int] | None = None
        if used_ids is not None:
            if isinstance(used_ids, (str, bytes)) or not isinstance(used_ids, Iterable):
                raise ValidationError("used_ids must be a list of memory ids")
            given = [self._check_id(i) for i in used_ids]
        if answer is None and given is None and helpful is None:
            raise ValidationError("give at least one of answer, used_ids or helpful")
        given_at = parse_time(at, "at") or utcnow()

        with self._session(write=False) as con:
            head = con.execute("SELECT namespace FROM retrievals WHERE id = ?", [rid]).fetchone()
            if head is None:
                raise NotFoundError(f"no retrieval with id {rid}; use the id recall logged "
                                    "(bank.last_retrieval_id) or one from bank.retrievals()")
            hit_ids = [int(r[0]) for r in con.execute(
                "SELECT memory_id FROM retrieval_hits WHERE retrieval_id = ? ORDER BY rank", [rid]).fetchall()]
            vectors: dict[int, Any] = {}
            if given is None and answer is not None and hit_ids and not usage_mod.citations(answer):
                for mid, emb in con.execute("SELECT id, embedding FROM memories WHERE id IN (SELECT unnest(?))",
                                            [hit_ids]).fetchall():
                    vectors[int(mid)] = None if emb is None else np.asarray(emb, dtype=np.float32)
        namespace = head[0]
        if given is not None:
            stray = sorted(set(given) - set(hit_ids))
            if stray:
                raise ValidationError(
                    f"memory id(s) {', '.join(map(str, stray))} were not returned by retrieval {rid} "
                    f"(it returned {', '.join(map(str, hit_ids)) or 'nothing'}); used_ids must be among its hits")
            decisions = [usage_mod.HitUsage(mid, mid in set(given), "given") for mid in hit_ids]
        elif answer is not None and hit_ids:
            cited = set(usage_mod.citations(answer))
            if cited:
                decisions = [usage_mod.HitUsage(mid, mid in cited, "citation") for mid in hit_ids]
            else:
                parts = usage_mod.sentences(answer)
                svec = self.embedder.encode(parts) if parts else np.zeros((0, self.dim or 1), dtype=np.float32)
                sims = usage_mod.best_similarities(svec, [vectors.get(mid) for mid in hit_ids])
                decisions = usage_mod.decide_by_similarity(hit_ids, sims)
        else:
            decisions = []

        with self._lock:  # the write and taking its counts into the indexes, as one step
            rows = None
            with self._session() as con:
                replaced = con.execute("SELECT count(*) FROM feedback WHERE retrieval_id = ?", [rid]).fetchone()[0] > 0
                # use_count: the replaced feedback's uses come off, the new ones go on, in this transaction.
                delta: dict[int, int] = {}
                for (mid,) in con.execute("SELECT DISTINCT memory_id FROM feedback_hits WHERE retrieval_id = ? AND used",
                                          [rid]).fetchall():
                    delta[int(mid)] = delta.get(int(mid), 0) - 1
                for mid in {d.memory_id for d in decisions if d.used}:
                    delta[mid] = delta.get(mid, 0) + 1
                delta = {mid: n for mid, n in delta.items() if n}
                con.execute("DELETE FROM feedback_hits WHERE retrieval_id = ?", [rid])
                con.execute("DELETE FROM feedback WHERE retrieval_id = ?", [rid])
                con.execute("INSERT INTO feedback VALUES (?, ?, ?, ?, ?, ?)",
                            [rid, namespace, to_naive_utc(given_at), self.actor, answer, helpful])
                if decisions:
                    con.executemany("INSERT INTO feedback_hits VALUES (?, ?, ?, ?, ?)",
                                    [[rid, d.memory_id, d.used, d.decided_by, d.similarity] for d in decisions])
                Store.log_event(con, self.actor, "feedback", None, None,
                                {"retrieval_id": rid, "used_ids": [d.memory_id for d in decisions if d.used],
                                 "decided_by": decisions[0].decided_by if decisions else None, "helpful": helpful},
                                given_at, note="replaced earlier feedback" if replaced else None)
                if delta:
                    seq = Store.next_seq(con)  # other processes' indexes take the new counts by sequence
                    table = pa.table({"id": pa.array(list(delta), pa.int64()),
                                      "n": pa.array(list(delta.values()), pa.int64())})
                    with registered(con, _uses=table):
                        # Never below 0: an imported or merged memory's count need not match the feedback rows.
                        con.execute("UPDATE memories SET use_count = greatest(memories.use_count + _uses.n, 0), seq = ? "
                                    "FROM _uses WHERE memories.id = _uses.id", [seq])
                    rows = Store.fetch_rows(con, "id IN (SELECT unnest(?))", [list(delta)], with_embedding=True)
            if rows is not None:
                self._synced_seq = seq
                for idx in self._indexes.values():
                    idx.seq = seq
                self._apply_rows(rows)
        return Feedback(retrieval_id=rid, namespace=namespace, given_at=given_at, answer=answer, helpful=helpful,
                        hits=tuple(decisions), replaced=bool(replaced))

    def feedback_log(self, namespace: str | None = None, *, since: Any = None,
                     until: Any = None) -> list[Feedback]:
        """Recorded feedback, oldest recall first; ``since``/``until`` bound the time of the recall
        the feedback is about (so a date range matches the retrieval log's)."""
        where, params = "TRUE", []
        if namespace is not None:
            where += " AND f.namespace = ?"
            params.append(check_namespace(namespace))
        for op, value, what in ((">=", since, "since"), ("<=", until, "until")):
            if value is not None:
                where += f" AND r.recalled_at {op} ?"
                params.append(to_naive_utc(parse_time(value, what)))
        with self._session(write=False) as con:
            heads = con.execute(
                "SELECT f.retrieval_id, f.namespace, f.given_at, f.answer, f.helpful FROM feedback f "
                f"JOIN retrievals r ON r.id = f.retrieval_id WHERE {where} ORDER BY r.recalled_at, r.id",
                params).fetchall()
            ids = [h[0] for h in heads]
            rows = con.execute(
                "SELECT fh.retrieval_id, fh.memory_id, fh.used, fh.decided_by, fh.similarity FROM feedback_hits fh "
                "JOIN retrieval_hits rh ON rh.retrieval_id = fh.retrieval_id AND rh.memory_id = fh.memory_id "
                "WHERE fh.retrieval_id IN (SELECT unnest(?)) ORDER BY fh.retrieval_id, rh.rank",
                [ids]).fetchall() if ids else []
        by_id: dict[int, list] = {}
        for r in rows:
            by_id.setdefault(int(r[0]), []).append(usage_mod.HitUsage(int(r[1]), bool(r[2]), r[3], r[4]))
        return [Feedback(retrieval_id=int(h[0]), namespace=h[1], given_at=to_aware(h[2]), answer=h[3], helpful=h[4],
                         hits=tuple(by_id.get(int(h[0]), ()))) for h in heads]

    def usage_counts(self, namespace: str | None = None) -> dict[int, int]:
        """How many times the answer used each memory, by memory id (from feedback; memories
        never used are absent). Each memory also carries this as ``Memory.use_count``, which
        ranking reads with ``ScoringParams(frequency_from="uses")``."""
        where, params = ("WHERE f.namespace = ?", [check_namespace(namespace)]) if namespace is not None else ("", [])
        with self._session(write=False) as con:
            rows = con.execute(
                "SELECT fh.memory_id, count(*) FROM feedback_hits fh JOIN feedback f USING (retrieval_id) "
                f"{where} {'AND' if where else 'WHERE'} fh.used GROUP BY fh.memory_id", params).fetchall()
        return {int(m): int(n) for m, n in rows}

    # -- ablation runs (memory_core.evaluate runs them; the bank keeps them) -------------------

    def record_ablation(self, run: dict[str, Any], cases: list[dict[str, Any]]) -> int:
        """Store one ablation run and its cases; returns the run id.

        ``run`` carries started_at, finished_at, namespace, answer_model, judge_model, seed, source
        and settings (a dict); ``cases`` one dict per case with namespace, question, expected,
        memory_ids, answer_with, answer_without, first_shown, judge_choice, verdict (with /
        without / tie / error), reason and error. Memory texts are never stored here.
        """
        verdicts = [c["verdict"] for c in cases]
        bad = sorted(set(verdicts) - {"with", "without", "tie", "error"})
        if bad:
            raise ValidationError(f"unknown ablation verdict(s) {bad}; use with, without, tie or error")
        with self._session() as con:
            run_id = Store.take_ids(con, "next_ablation_run_id", 1)
            con.execute(
                "INSERT INTO ablation_runs VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [run_id, to_naive_utc(parse_time(run.get("started_at")) or utcnow()),
                 to_naive_utc(parse_time(run.get("finished_at")) or utcnow()), self.actor, run.get("namespace"),
                 run.get("answer_model"), run.get("judge_model"), run.get("seed"), run.get("source"), len(cases),
                 verdicts.count("with"), verdicts.count("without"), verdicts.count("tie"), verdicts.count("error"),
                 json.dumps(run.get("settings") or {}, default=str)])
            if cases:
                con.executemany(
                    "INSERT INTO ablation_cases VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    [[run_id, i + 1, c["namespace"], c["question"], c.get("expected"),
                      [int(m) for m in c.get("memory_ids") or []], c.get("answer_with"), c.get("answer_without"),
                      c.get("first_shown"), c.get("judge_choice"), c["verdict"], c.get("reason"), c.get("error")]
                     for i, c in enumerate(cases)])
            Store.log_event(con, self.actor, "ablation", None, None,
                            {"run_id": run_id, "cases": len(cases), "better": verdicts.count("with"),
                             "worse": verdicts.count("without")}, utcnow())
        return run_id

    def ablation_runs(self, limit: int | None = 50) -> list[dict[str, Any]]:
        """Past ablation runs, newest first: counts of better (with memory), worse, ties, errors."""
        page = "" if limit is None else f" LIMIT {int(limit)}"
        with self._session(write=False) as con:
            rows = con.sql(f"SELECT * FROM ablation_runs ORDER BY id DESC{page}").to_arrow_table().to_pylist()
        for r in rows:
            r["started_at"], r["finished_at"] = to_aware(r["started_at"]), to_aware(r["finished_at"])
            r["settings"] = json.loads(r["settings"] or "{}")
        return rows

    def ablation_cases(self, run_id: int) -> list[dict[str, Any]]:
        """The cases of one ablation run, in order (``NotFoundError`` for an unknown run)."""
        rid = self._check_id(run_id)
        with self._session(write=False) as con:
            if con.execute("SELECT count(*) FROM ablation_runs WHERE id = ?", [rid]).fetchone()[0] == 0:
                raise NotFoundError(f"no ablation run with id {rid}")
            rows = con.sql("SELECT * FROM ablation_cases WHERE run_id = ? ORDER BY case_no",
                           params=[rid]).to_arrow_table().to_pylist()
        for r in rows:
            r["memory_ids"] = [int(m) for m in r["memory_ids"] or []]
        return rows

    # -- presets -------------------------------------------------------------------------------

    def presets(self) -> dict[str, ScoringParams]:
        """Built-in and saved presets by name."""
        with self._session(write=False) as con:
            saved = con.execute("SELECT name, params FROM presets ORDER BY name").fetchall()
        out = dict(PRESETS)
        out.update({name: ScoringParams.from_dict(json.loads(params)) for name, params in saved})
        return out

    def preset(self, name: str) -> ScoringParams:
        """One preset by name (built-in or saved)."""
        presets = self.presets()
        if name not in presets:
            raise NotFoundError(f"no preset named {name!r}; known: {', '.join(presets)}")
        return presets[name]

    def save_preset(self, name: str, params: ScoringParams, description: str | None = None) -> None:
        """Save (or overwrite) an operator preset. Built-in names are reserved."""
        if not isinstance(name, str) or not name.strip() or len(name) > 100:
            raise ValidationError("a preset name is a non-empty string of at most 100 characters")
        if name in PRESETS:
            raise ValidationError(f"{name!r} is a built-in preset; save under another name")
        if not isinstance(params, ScoringParams):
            raise ValidationError("params must be a ScoringParams")
        now = to_naive_utc(utcnow())
        with self._session() as con:
            before = con.execute("SELECT params FROM presets WHERE name = ?", [name]).fetchone()
            con.execute("INSERT OR REPLACE INTO presets VALUES (?, ?, ?, ?, ?)",
                        [name, params.to_json(), description, now, now])
            Store.log_event(con, self.actor, "save_preset", None,
                            {"name": name, "params": json.loads(before[0])} if before else None,
                            {"name": name, "params": params.to_dict()}, utcnow())
        self._active_params = None

    def active_preset(self) -> tuple[str, ScoringParams]:
        """The name and parameters agents get when they pass no params."""
        if self._active_params is None:
            with self._session(write=False) as con:
                self._active(con)
        return self._active_params

    def _active(self, con: Any) -> tuple[str, ScoringParams]:
        if self._active_params is None:
            name = Store.meta(con).get("active_preset", "default")
            row = con.execute("SELECT params FROM presets WHERE name = ?", [name]).fetchone()
            params = ScoringParams.from_dict(json.loads(row[0])) if row else PRESETS.get(name, ScoringParams())
            self._active_params = (name, params)
        return self._active_params

    def set_active_preset(self, name: str) -> None:
        """Make a preset the bank's default for recall; recorded as an event."""
        self.preset(name)
        with self._session() as con:
            old = Store.meta(con).get("active_preset")
            Store.set_meta(con, "active_preset", name)
            Store.next_seq(con)  # other processes must drop their cached active preset
            Store.log_event(con, self.actor, "set_active_preset", None, {"name": old}, {"name": name}, utcnow())
        self._active_params = None

    # -- labeled query sets --------------------------------------------------------------------

    @staticmethod
    def _check_set_name(set_name: Any) -> str:
        if not isinstance(set_name, str) or not set_name.strip() or len(set_name) > 100:
            raise ValidationError("a label set name is a non-empty string of at most 100 characters")
        return set_name

    def _memory_namespaces(self, con: Any, ids: list[int]) -> dict[int, str]:
        if not ids:
            return {}
        return dict(con.execute("SELECT id, namespace FROM memories WHERE id IN (SELECT unnest(?))",
                                [ids]).fetchall())

    def label(self, namespace: str, query: str, memory_id: int, relevant: bool = True, *,
              as_of: Any = None, set_name: str = "default") -> None:
        """Mark memory ``memory_id`` as relevant (or not) to ``query`` in ``namespace``.

        Labels make a labeled query set (``set_name``) that precision@k, recall@k and the tuner
        (:mod:`memory_core.tuning`) score against. Labeling the same memory again replaces its
        label. ``as_of`` pins the moment the query is asked (None: whenever it is evaluated).
        The memory must exist and belong to ``namespace``.
        """
        check_namespace(namespace)
        check_text(query, "query")
        mid = self._check_id(memory_id)
        if not isinstance(relevant, (bool, np.bool_)):
            raise ValidationError(f"relevant must be true or false, got {relevant!r}")
        self._check_set_name(set_name)
        at = parse_time(as_of, "as_of")
        now = utcnow()
        with self._session() as con:
            ns = self._memory_namespaces(con, [mid]).get(mid)
            if ns is None:
                raise NotFoundError(f"no memory with id {mid}")
            if ns != namespace:
                raise ValidationError(f"memory {mid} belongs to namespace {ns!r}, not {namespace!r}")
            key = [set_name, namespace, query, None if at is None else to_naive_utc(at)]
            same = "set_name = ? AND namespace = ? AND query = ? AND as_of IS NOT DISTINCT FROM ?"
            before = con.execute(f"SELECT relevant FROM labels WHERE {same} AND memory_id = ?", [*key, mid]).fetchone()
            # A query's "labeled, nothing marked" row is no longer needed once it has a label.
            con.execute(f"DELETE FROM labels WHERE {same} AND (memory_id = ? OR memory_id IS NULL)", [*key, mid])
            lid = Store.take_ids(con, "next_label_id", 1)
            con.execute("INSERT INTO labels VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                        [lid, *key, mid, bool(relevant), self.actor, to_naive_utc(now)])
            # Not logged against the memory: a label says nothing about the memory itself, and
            # undoing a memory event must not touch it.
            Store.log_event(con, self.actor, "label", None,
                            None if before is None else {"memory_id": mid, "relevant": bool(before[0])},
                            {"set": set_name, "namespace": namespace, "query": query, "memory_id": mid,
                             "relevant": bool(relevant)}, now)

    def unlabel(self, namespace: str, query: str, memory_id: int, *, as_of: Any = None,
                set_name: str = "default") -> bool:
        """Remove one label; returns whether there was one."""
        check_namespace(namespace)
        check_text(query, "query")
        mid = self._check_id(memory_id)
        self._check_set_name(set_name)
        at = parse_time(as_of, "as_of")
        key = [set_name, namespace, query, None if at is None else to_naive_utc(at), mid]
        with self._session() as con:
            where = "set_name = ? AND namespace = ? AND query = ? AND as_of IS NOT DISTINCT FROM ? AND memory_id = ?"
            found = con.execute(f"SELECT relevant FROM labels WHERE {where}", key).fetchone()
            if found is None:
                return False
            con.execute(f"DELETE FROM labels WHERE {where}", key)
            Store.log_event(con, self.actor, "unlabel", None, {"set": set_name, "namespace": namespace, "query": query,
                            "memory_id": mid, "relevant": bool(found[0])}, None, utcnow())
        return True

    def labels(self, namespace: str | None = None, set_name: str | None = None) -> list[LabeledQuery]:
        """The labeled queries (of one namespace and/or set), in the order they were first labeled."""
        where, params = "TRUE", []
        if namespace is not None:
            where += " AND namespace = ?"
            params.append(check_namespace(namespace))
        if set_name is not None:
            where += " AND set_name = ?"
            params.append(self._check_set_name(set_name))
        with self._session(write=False) as con:
            rows = con.execute(f"SELECT set_name, namespace, query, as_of, memory_id, relevant FROM labels "
                               f"WHERE {where} ORDER BY id", params).fetchall()
        grouped: dict[tuple, tuple[list[int], list[int]]] = {}
        for set_, ns, query, as_of, mid, relevant in rows:
            rel, irr = grouped.setdefault((set_, ns, query, as_of), ([], []))
            if mid is not None:
                (rel if relevant else irr).append(int(mid))
        return [LabeledQuery(namespace=ns, query=q, relevant=tuple(sorted(rel)), irrelevant=tuple(sorted(irr)),
                             as_of=to_aware(as_of), set_name=set_)
                for (set_, ns, q, as_of), (rel, irr) in grouped.items()]

    def label_sets(self) -> dict[str, int]:
        """Label set name → number of labeled queries in it."""
        with self._session(write=False) as con:
            rows = con.execute("SELECT set_name, count(DISTINCT (namespace, query, as_of)) FROM labels "
                               "GROUP BY set_name ORDER BY set_name").fetchall()
        return {name: int(n) for name, n in rows}

    def import_labels(self, source: str | os.PathLike | IO[str] | Iterable[dict[str, Any]], *,
                      set_name: str | None = None) -> int:
        """Import labeled queries from JSON lines; returns how many queries were imported.

        One line per query: ``{"namespace", "query", "relevant": [ids], "irrelevant": [ids]}``,
        optionally ``"as_of"`` (ISO time) and ``"set"`` (``set_name`` overrides it; default
        "default"). A query with no relevant id means "nothing should come back". A query already
        labeled in that set gets these labels instead of its old ones. Every line is checked
        first: a malformed line, an unknown memory id or one of another namespace raises
        ImportFormatError listing them by line number, and nothing is imported.
        """
        if set_name is not None:
            self._check_set_name(set_name)
        own = isinstance(source, (str, os.PathLike))
        if own and not Path(source).exists():
            raise ValidationError(f"no such file: {source}")
        problems: list[tuple[int, str]] = []
        parsed: list[tuple[int, dict[str, Any]]] = []
        fh = open(source, encoding="utf-8") if own else source
        try:
            for lineno, line in enumerate(fh, start=1):
                if isinstance(line, str) and not line.strip():
                    continue
                try:
                    row = json.loads(line) if isinstance(line, str) else line
                    parsed.append((lineno, self._check_label_row(row, set_name)))
                except (json.JSONDecodeError, ValidationError) as exc:
                    problems.append((lineno, str(exc)))
        except UnicodeDecodeError as exc:
            raise ImportFormatError(f"the file is not UTF-8 text ({exc})") from None
        finally:
            if own:
                fh.close()
        now = utcnow()
        with self._session() as con:
            known = self._memory_namespaces(con, sorted({m for _, r in parsed for m in r["relevant"] + r["irrelevant"]}))
            seen: dict[tuple, int] = {}
            for lineno, r in parsed:
                for mid in r["relevant"] + r["irrelevant"]:
                    if mid not in known:
                        problems.append((lineno, f"no memory with id {mid}"))
                    elif known[mid] != r["namespace"]:
                        problems.append((lineno, f"memory {mid} belongs to namespace {known[mid]!r}, "
                                                 f"not {r['namespace']!r}"))
                key = (r["set"], r["namespace"], r["query"], r["as_of"])
                if key in seen:
                    problems.append((lineno, f"the same query appears again (first on line {seen[key]})"))
                seen.setdefault(key, lineno)
            if problems:
                problems.sort()
                shown = "; ".join(f"line {n}: {m}" for n, m in problems[:5])
                more = f" (and {len(problems) - 5} more)" if len(problems) > 5 else ""
                raise ImportFormatError(f"{len(problems)} problem(s), no label imported: {shown}{more}", problems)
            if not parsed:
                return 0
            keys = pa.table({
                "set_name": [r["set"] for _, r in parsed], "namespace": [r["namespace"] for _, r in parsed],
                "query": [r["query"] for _, r in parsed],
                "as_of": pa.array([r["as_of"] for _, r in parsed], pa.timestamp("us")),
            })
            with registered(con, _label_keys=keys):
                con.execute("DELETE FROM labels l USING _label_keys k WHERE l.set_name = k.set_name AND "
                            "l.namespace = k.namespace AND l.query = k.query AND l.as_of IS NOT DISTINCT FROM k.as_of")
            out: dict[str, list] = {c: [] for c in ("set_name", "namespace", "query", "as_of", "memory_id", "relevant")}
            for _, r in parsed:
                marks = [(m, True) for m in r["relevant"]] + [(m, False) for m in r["irrelevant"]] or [(None, None)]
                for mid, rel in marks:
                    for c, v in zip(out, (r["set"], r["namespace"], r["query"], r["as_of"], mid, rel)):
                        out[c].append(v)
            n = len(out["query"])
            first = Store.take_ids(con, "next_label_id", n)
            table = pa.table({
                "id": pa.array(range(first, first + n), pa.int64()),
                "set_name": out["set_name"], "namespace": out["namespace"], "query": out["query"],
                "as_of": pa.array(out["as_of"], pa.timestamp("us")),
                "memory_id": pa.array(out["memory_id"], pa.int64()), "relevant": pa.array(out["relevant"], pa.bool_()),
                "labeled_by": [self.actor] * n, "labeled_at": pa.array([to_naive_utc(now)] * n, pa.timestamp("us")),
            })
            with registered(con, _labels=table):
                con.execute("INSERT INTO labels SELECT * FROM _labels")
            Store.log_event(con, self.actor, "import_labels", None, None,
                            {"queries": len(parsed), "labels": n,
                             "sets": sorted({r["set"] for _, r in parsed})}, now)
        return len(parsed)

    def _check_label_row(self, row: Any, set_name: str | None) -> dict[str, Any]:
        if not isinstance(row, dict):
            raise ValidationError("each line must be a JSON object")
        unknown = set(row) - {"namespace", "query", "relevant", "irrelevant", "as_of", "set"}
        if unknown:
            raise ValidationError(f"unknown field(s) {', '.join(sorted(unknown))}")
        ns = check_namespace(row.get("namespace"))
        query = check_text(row.get("query"), "query")
        lists = {}
        for name in ("relevant", "irrelevant"):
            ids = row.get(name, [])
            if not isinstance(ids, list) or any(isinstance(i, bool) or not isinstance(i, int) or i < 1 for i in ids):
                raise ValidationError(f"{name} must be a list of memory ids (whole numbers from 1)")
            lists[name] = sorted(set(ids))
        both = set(lists["relevant"]) & set(lists["irrelevant"])
        if both:
            raise ValidationError(f"memory {min(both)} is both relevant and irrelevant")
        at = parse_time(row.get("as_of"), "as_of")
        set_ = set_name if set_name is not None else self._check_set_name(row.get("set", "default"))
        return {"namespace": ns, "query": query, **lists, "as_of": None if at is None else to_naive_utc(at),
                "set": set_}

    def export_labels(self, dest: str | os.PathLike | IO[str], namespace: str | None = None,
                      set_name: str | None = None) -> int:
        """Write the labeled queries as JSON lines (the format :meth:`import_labels` reads)."""
        queries = self.labels(namespace=namespace, set_name=set_name)
        own = isinstance(dest, (str, os.PathLike))
        fh = open(dest, "w", encoding="utf-8") if own else dest
        try:
            for q in queries:
                fh.write(json.dumps(q.to_dict(), ensure_ascii=False) + "\n")
        finally:
            if own:
                fh.close()
        return len(queries)
    # -- backup and restore --------------------------------------------------------------------

    def backup(self, dest: str | os.PathLike, *, overwrite: bool = False) -> int:
        """Write a consistent copy of the bank to the file ``dest``; returns the memories it holds.

        Safe while other processes use the bank: the copy is taken while this process holds the
        file (they wait for it, as for any operation), and appears under ``dest`` only once
        complete. Index caches are not copied; they are rebuilt from the copy when it is opened.
        Hard-deleted text is not in the copy (it is a logical copy, not the file's blocks).
        """
        if self.closed:
            raise StateError("this bank is closed; open it again with MemoryBank.open")
        with self._lock:
            self._wait_for_flush()
            return self._store.backup(dest, overwrite=overwrite)

    @staticmethod
    def restore_backup(backup: str | os.PathLike, path: str | os.PathLike, *, force: bool = False,
                       lock_timeout: float = 10.0) -> int:
        """Put a backup made by :meth:`backup` in place of the bank at ``path``; returns its number
        of memories. An existing bank is replaced only with ``force=True``; processes that have it
        open see the restored bank on their next operation. (Not :meth:`restore`, which brings back
        one soft-deleted memory.)"""
        return Store.restore(backup, path, force=force, lock_timeout=lock_timeout)

    # -- import, export, re-embedding ----------------------------------------------------------

    def export_jsonl(self, dest: str | os.PathLike | IO[str], namespace: str | None = None,
                     include_embeddings: bool = False) -> int:
        """Write every memory (all statuses but hard-deleted) as JSON lines; returns the count.

        The output imports back into an empty bank exactly: ids, dates, statuses, counts.
        """
        where, params = ("status != 'deleted'" + (" AND namespace = ?" if namespace else ""),
                         [check_namespace(namespace)] if namespace else [])
        with self._session(write=False) as con:
            table = Store.fetch_rows(con, where, params, with_embedding=include_embeddings)
        vectors = Store.embeddings_of(table, self.dim) if include_embeddings and table.num_rows else None
        own = isinstance(dest, (str, os.PathLike))
        fh = open(dest, "w", encoding="utf-8") if own else dest
        try:
            for i, row in enumerate(table.drop_columns(["embedding"]) .to_pylist() if include_embeddings
                                    else table.to_pylist()):
                out = _memory_from_row(row).to_dict()
                out.pop("content_hash")
                if vectors is not None:
                    out["embedding"] = [round(float(x), 7) for x in vectors[i]]
                fh.write(json.dumps(out, ensure_ascii=False) + "\n")
        finally:
            if own:
                fh.close()
        return table.num_rows

    def import_jsonl(self, source: str | os.PathLike | IO[str], *, on_error: str = "refuse",
                     progress: Progress | None = None, namespace: str | None = None) -> ImportReport:
        """Import memories from JSON lines (the format :meth:`export_jsonl` writes).

        Every line is checked first. ``on_error="refuse"`` (default) writes nothing when any line
        is malformed and raises ImportFormatError listing them by line number; ``"skip"`` imports
        the good lines and reports the bad ones. Lines whose id already exists with the same text
        count as already present, so an interrupted import can be re-run.

        A file (or any seekable stream) is read twice: the check keeps only each good line's
        number, id and content hash, and the import streams the lines again in batches, so memory
        stays bounded however large the file. A stream that cannot seek is held in memory.
        """
        check_choice(on_error, ("refuse", "skip"), "on_error")
        own = isinstance(source, (str, os.PathLike))
        if own and not Path(source).exists():
            raise ValidationError(f"no such file: {source}")
        fh = open(source, encoding="utf-8") if own else source
        report = ImportReport()
        now = utcnow()
        try:
            seekable = own or bool(getattr(fh, "seekable", lambda: False)())
            start = fh.tell() if seekable else 0
        except (OSError, ValueError):
            seekable, start = False, 0
        held: list[dict[str, Any]] | None = None if seekable else []
        line_numbers: list[int] = []
        line_ids: list[Any] = []
        line_hashes: list[str] = []
        embeds = False

        def parse(line: str) -> dict[str, Any]:
            row = json.loads(line)
            if not isinstance(row, dict):
                raise ValidationError("each line must be a JSON object")
            if namespace is not None:
                row["namespace"] = namespace
            for drop in ("content_hash", "embedding_model") if "embedding" not in row else ("content_hash",):
                row.pop(drop, None)
            return row

        try:
            try:
                for lineno, line in enumerate(fh, start=1):
                    if not line.strip():
                        continue
                    try:
                        row = parse(line)
                        checked = self._normalize_row(row, now)
                    except (json.JSONDecodeError, ValidationError, ModelMismatchError, UnicodeDecodeError) as exc:
                        report.errors.append((lineno, str(exc)))
                        continue
                    line_numbers.append(lineno)
                    line_ids.append(row.get("id"))
                    line_hashes.append(checked["content_hash"])
                    embeds = embeds or "embedding" not in checked
                    if held is not None:
                        held.append(checked)
            except UnicodeDecodeError as exc:
                raise ImportFormatError(f"the file is not UTF-8 text ({exc})") from None
            existing = self._existing([i for i in line_ids if isinstance(i, int)])
            first_line: dict[int, int] = {}
            present: set[int] = set()  # line numbers of memories the bank already holds
            for lineno, mid, h in zip(line_numbers, line_ids, line_hashes):
                if mid is None:
                    continue
                if mid in first_line:
                    report.errors.append((lineno, f"id {mid} appears again (first on line {first_line[mid]})"))
                elif mid in existing:
                    if existing[mid] != h:
                        report.errors.append((lineno, self._clash(mid)))
                    else:
                        present.add(lineno)
                first_line.setdefault(mid, lineno)
            report.errors.sort()
            bad_lines = {n for n, _ in report.errors}
            if report.errors and on_error == "refuse":
                shown = "; ".join(f"line {n}: {m}" for n, m in report.errors[:5])
                more = f" (and {len(report.errors) - 5} more)" if len(report.errors) > 5 else ""
                raise ImportFormatError(
                    f"{len(report.errors)} malformed line(s), nothing imported: {shown}{more}. Fix them, "
                    "or import with on_error='skip' (memctl import --skip-errors) to import the rest",
                    report.errors)
            good = [n for n in line_numbers if n not in bad_lines]
            todo = {n for n in good if n not in present}
            report.skipped_existing += len(good) - len(todo)
            if progress is not None and len(todo) < len(good):
                progress(len(good) - len(todo))

            def rows_again() -> Iterator[tuple[int, dict[str, Any]]]:
                if held is not None:
                    yield from ((n, r) for n, r in zip(line_numbers, held) if n in todo)
                    return
                fh.seek(start)
                for lineno, line in enumerate(fh, start=1):
                    if lineno in todo:
                        yield lineno, self._normalize_row(parse(line), now)

            size = _BATCH_EMBED if embeds else _BATCH_VECTORS

            def batches() -> Iterator[list[dict[str, Any]]]:
                batch: list[dict[str, Any]] = []
                for _, r in rows_again():
                    batch.append(r)
                    if len(batch) == size:
                        yield batch
                        batch = []
                if batch:
                    yield batch

            new_ids = iter(self._write_stream(batches(), progress))
        finally:
            if own:
                fh.close()
        ids_by_line = {}
        for lineno, mid in zip(line_numbers, line_ids):
            if lineno in todo:
                ids_by_line[lineno] = next(new_ids)
            elif lineno in present:
                ids_by_line[lineno] = mid
        report.added += len(todo)
        report.ids.extend(int(ids_by_line[n]) for n in good)
        return report

    def reembed(self, model: str | None = None, progress: Progress | None = None, batch_size: int = 2048) -> int:
        """Embed every stored memory again with ``model`` (default: the bank's own) and make it the
        bank's model. Returns the number of memories embedded."""
        target = canonical_model_name(model) if model is not None else self.model
        embedder = get_embedder(target)
        with self._session(write=False) as con:
            ids_texts = con.execute("SELECT id, text FROM memories WHERE text IS NOT NULL ORDER BY id").fetchall()
        vectors = []
        for start in range(0, len(ids_texts), batch_size):
            chunk = ids_texts[start:start + batch_size]
            vectors.append(embedder.encode([t for _, t in chunk]))
            if progress:
                progress(len(chunk))
        import pyarrow as pa
        with self._session() as con:
            seq = Store.next_seq(con)
            if ids_texts:
                allv = np.concatenate(vectors)
                flat = pa.array(allv.reshape(-1))
                offsets = pa.array(np.arange(0, len(ids_texts) + 1, dtype=np.int32) * allv.shape[1])
                vecs = pa.table({"id": [i for i, _ in ids_texts], "embedding": pa.ListArray.from_arrays(offsets, flat)})
                with registered(con, _vecs=vecs):
                    con.execute("UPDATE memories SET embedding = _vecs.embedding, embedding_model = ?, seq = ? "
                                "FROM _vecs WHERE memories.id = _vecs.id", [target, seq])
            old = self.model
            Store.set_meta(con, "embedding_model", target)
            Store.set_meta(con, "embedding_dim", str(embedder.dim))
            Store.log_event(con, self.actor, "reembed", None, {"model": old}, {"model": target,
                            "count": len(ids_texts)}, utcnow())
        self.model, self.dim, self._embedder = target, embedder.dim, embedder
        self._indexes.clear()
        self._memories.clear()
        self._synced_seq = seq
        shutil.rmtree(self.index_folder, ignore_errors=True)
        return len(ids_texts)


class _BulkWriter:
    """Writes batches of checked rows for :meth:`MemoryBank._write_stream`, one transaction each.

    Closing a connection checkpoints the file, which costs more than writing a batch; so batches
    that arrive back to back (rows carrying their vectors) share one connection, held at most
    ``hold`` seconds before the file is let go for ``gap`` seconds for other processes, while a
    batch the model embedded lets go at once (the next one takes seconds to embed, the file must not wait on it).
    """

    def __init__(self, bank: MemoryBank, hold: float = 1.0, gap: float = 0.03):
        self.bank = bank
        self.hold = hold
        self.gap = gap
        self._stack: contextlib.ExitStack | None = None
        self._con: Any = None
        self._since = 0.0

    def write(self, batch: list[dict[str, Any]], vectors: np.ndarray, release: bool) -> list[int]:
        bank = self.bank
        if self._con is None:
            if bank.closed:
                raise StateError("this bank is closed; open it again with MemoryBank.open")
            if bank._store.read_only:
                raise BankReadOnlyError(f"the bank {bank.path} was opened read-only; open it without "
                                        "read_only=True to change it")
            stack = contextlib.ExitStack()
            stack.enter_context(bank._lock)
            try:
                bank._wait_for_flush()
                self._con = stack.enter_context(bank._store.hold())
                bank._catch_up(self._con)
            except BaseException:
                self._con = None
                stack.close()
                raise
            self._stack = stack
            self._since = time.monotonic()
        con = self._con
        try:
            con.execute("BEGIN TRANSACTION")
            try:
                group = Store.take_ids(con, "next_group_id", 1)
                seq = Store.next_seq(con)
                ids = bank._insert_rows(con, batch, vectors, seq, group)
            except BaseException:
                con.execute("ROLLBACK")
                raise
            con.execute("COMMIT")
        except BaseException:
            self.release()
            raise
        bank._after_insert(batch, vectors, ids, seq)
        if release:
            self.release()
        elif time.monotonic() - self._since > self.hold:
            self.release()
            # Another process waiting for the file blocks on <bank>.lock and is woken the moment
            # it is let go; leave it a moment to take it, or a long import could hold the file for
            # good by reopening at once. (0.15 s cost an import carrying vectors 12% of its time.)
            time.sleep(self.gap)
        return ids

    def release(self) -> None:
        """Let go of the file (and the bank's lock), if held."""
        if self._stack is not None:
            stack, self._stack, self._con = self._stack, None, None
            stack.close()
            self.bank._signature = self.bank._store.signature()


_EVENT_COLUMNS = "id, happened_at, actor, action, memory_id, before, after, note, group_id, undone_by"


def _event(row: tuple) -> Event:
    eid, at, actor, action, mid, before, after, note, group, undone_by = row
    return Event(id=int(eid), at=to_aware(at), actor=actor, action=action, memory_id=mid,
                 before=json.loads(before) if before else None, after=json.loads(after) if after else None,
                 note=note, group_id=group, undone_by=undone_by)


def _conflict(row: dict[str, Any], memories: dict[int, Memory]) -> Conflict:
    return Conflict(
        id=row["id"], namespace=row["namespace"], a=memories[row["a_id"]], b=memories[row["b_id"]],
        kind=row["kind"], evidence=row["evidence"], confidence=row["confidence"], suggestion=row["suggestion"],
        path=row["path"], status=row["status"], resolution=row["resolution"],
        detected_at=to_aware(row["detected_at"]), resolved_at=to_aware(row["resolved_at"]),
        group_id=row["group_id"])


def _scrub(payload: str | None) -> str | None:
    """An event's JSON without the memory's text (or anything else that quotes it)."""
    if not payload:
        return payload
    data = json.loads(payload)
    for key in ("text", "source", "context"):
        if key in data:
            data[key] = None
    return json.dumps(data, ensure_ascii=False)
