"""The bank's unit of work: the store, one lock, the caches, and ``session()``.

Every operation of a bank runs in a session: it takes the bank's lock, holds the store for the
length of one transaction, first catches up with what other processes changed (by change
sequence) and writes the recalls this bank still buffers, so that whatever the operation reads
sees them. The services (writer, recall, changes, queries, curation, ...) all work through one
:class:`Core`; none of them holds state of its own that another process could make stale.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import threading
import time
from datetime import datetime
from pathlib import Path
from typing import Any, Callable, Iterator

import numpy as np

from . import rows as rowmod
from ..embedding.embedder import DEFAULT_MODEL, Embedder, canonical_model_name, check_model, get_embedder
from ..errors import BankReadOnlyError, ModelMismatchError, NotFoundError, StateError, ValidationError
from ..index import NamespaceIndex
from .index_cache import IndexCache, Progress
from ..language.durability import infer as infer_durability
from ..language.text import detect_language
from ..models import Memory
from .recall_log import RecallJournal
from ..index.scoring import ScoringParams
from ..storage import Connection, Store, open_store, tables, transaction_parts

MEMORY_CACHE_MAX = 20_000  # memories kept by id between operations (recall hits of unloaded rows)


class Core:
    """What every service of one open bank shares: store, model, lock, caches, change sequence."""

    def __init__(self, store: Store, model: str, dim: int | None, actor: str, embedder: Embedder | None):
        self.store = store
        self.model = model
        self.dim = dim
        self.default_actor = actor
        self.acting = threading.local()  # who this thread acts for, when not the bank's actor
        self._embedder = embedder
        self.lock = threading.RLock()
        self.closed = False
        self.indexes = IndexCache(store.index_folder, store.read_only)
        self.memories: dict[int, Memory] = {}  # by id, for hits whose index row keeps no info
        self.synced_seq = 0  # the store's change sequence this bank has caught up with
        self.signature = None  # the file's signature after this bank's last operation
        # The store's holder (Store.holder) when a write left this bank current (mark_current):
        # while the same holder lives, the next catch-up has nothing to read.
        self.current_under: object | None = None
        self.index_mode = "exact"
        # Caches of settings read from the store, dropped when another process changes the bank.
        self.active_params: tuple[str, ScoringParams] | None = None
        self.acknowledged: dict[int, set[int]] | None = None  # kept-both conflict pairs, by memory id
        self.tokens: list | None = None  # the server's access tokens with their hashes (see tokens.py)
        self.tokens_holder: object | None = None  # the store's holder when they were last confirmed
        self.tokens_signature: object | None = None  # a shared store's signature when they were read
        self.tokens_version: object | None = None  # and its tokens' version (Store.known_tokens_version)
        self.journal = RecallJournal(store.journal_folder)
        # A flush writes recalls to the file without holding the lock (see RecallWriter.flush):
        # while it does, other operations wait on this condition before touching the file, and
        # recall, once the flush has caught up with other processes (flush_current), ranks
        # without looking at it.
        self.flushing = False
        self.flush_current = False
        self.flush_done = threading.Condition(self.lock)

    @classmethod
    def open(cls, path: str | os.PathLike, *, model: str | None, actor: str, lock_timeout: float,
             read_only: bool, embedder: Embedder | None) -> "Core":
        """Open (creating if missing) the bank at ``path``: check the arguments, migrate the
        schema, and refuse a model other than the bank's own."""
        if not isinstance(actor, str) or not actor:
            raise ValidationError("actor must be a non-empty string")
        if isinstance(lock_timeout, bool) or not isinstance(lock_timeout, (int, float)) or not lock_timeout >= 0:
            raise ValidationError("lock_timeout must be a number of seconds >= 0")
        wanted = canonical_model_name(model) if model is not None else None
        unavailable: ValidationError | None = None
        if wanted is not None:
            try:
                check_model(wanted)
            except ValidationError as exc:  # said once we know whether the bank is another model's
                unavailable = exc
        if unavailable is not None and not _exists(path):
            raise unavailable  # before a file is made for a bank that could not be used
        store = open_store(path, lock_timeout=lock_timeout, read_only=read_only)
        if embedder is not None:
            wanted = wanted or embedder.name
            if embedder.name != wanted:
                raise ValidationError(f"embedder {embedder.name!r} does not match model {wanted!r}")
        with store.connect() as con:
            if unavailable is not None:
                try:
                    tables.meta(con)  # a bank already there: another model's bank says so below
                except Exception:
                    store.close()
                    raise unavailable from None
            if not read_only:
                store.initialize(con, wanted or DEFAULT_MODEL)
                _read_durabilities(con)
                _read_languages(con)
            meta = tables.meta(con)
        bank_model = meta["embedding_model"]
        if wanted is not None and wanted != bank_model:
            if unavailable is not None:
                raise ModelMismatchError(
                    f"the bank {store.location} holds vectors of {bank_model!r}; open it without a model to use them, "
                    f"or convert it to a model this machine has with: memctl --bank {store.location} reembed --model "
                    f"MODEL ({unavailable})")
            raise ModelMismatchError(
                f"the bank {store.location} holds vectors of {bank_model!r}, not {wanted!r}. Open it without a "
                f"model to use {bank_model!r}, or convert it with: memctl --bank {store.location} reembed "
                f"--model {wanted}"
            )
        if unavailable is not None:
            raise unavailable
        core = cls(store, bank_model, int(meta["embedding_dim"]) if meta.get("embedding_dim") else None, actor,
                   embedder)
        core.synced_seq = int(meta["change_seq"])
        core.index_mode = meta.get("index_mode", "exact")
        core.signature = store.signature_after(core.synced_seq)
        return core

    def backup(self, dest: str | os.PathLike, overwrite: bool) -> int:
        """Write a consistent copy of the store to ``dest`` (waiting for a flush, as sessions do)."""
        self.check_open()
        with self.lock:
            self.wait_for_flush()
            return self.store.backup(dest, overwrite=overwrite)

    def close(self) -> None:
        """Mark the bank closed and save the index caches that changed (the caller flushed)."""
        self.closed = True
        self.journal.close()
        if not self.store.read_only:
            for idx in self.indexes.values():
                if idx.changes_since_save:
                    self.save_index(idx)
                elif idx.side_unsaved:  # built by a recall: the next load need not build it again
                    self.indexes.save_side(idx)
        self.store.release()

    @property
    def actor(self) -> str:
        """Who this thread's changes are recorded as made by (see :meth:`acting_as`)."""
        return getattr(self.acting, "actor", None) or self.default_actor

    @contextlib.contextmanager
    def acting_as(self, actor: str) -> Iterator[None]:
        """Record what this thread changes in the block as made by ``actor`` (a server: the token)."""
        if not isinstance(actor, str) or not actor:
            raise ValidationError("actor must be a non-empty string")
        before = getattr(self.acting, "actor", None)
        self.acting.actor = actor
        try:
            yield
        finally:
            self.acting.actor = before

    @property
    def path(self) -> Path | str:
        """The bank's file, or its location (a URL) for a store that is not a file."""
        return self.store.path if self.store.path is not None else self.store.location

    @property
    def index_folder(self) -> Path:
        return self.indexes.folder

    @property
    def embedder(self) -> Embedder:
        """The bank's embedding model, loaded on first use (a few seconds, once per process)."""
        if self._embedder is None:
            self._embedder = get_embedder(self.model)
        return self._embedder

    def use_model(self, model: str, dim: int | None, embedder: Embedder | None = None) -> None:
        """The bank's vectors are now of ``model``: every cached vector is of the wrong one."""
        self.model, self.dim, self._embedder = model, dim, embedder
        self.indexes.clear()
        self.memories.clear()
        self.active_params = None  # the built-in "default" preset is the model's

    # -- checks ----------------------------------------------------------------------------------

    def check_open(self) -> None:
        if self.closed:
            raise StateError("this bank is closed; open it again with MemoryBank.open")

    def check_writable(self, hint: str = "open it without read_only=True to change it") -> None:
        if self.store.read_only:
            raise BankReadOnlyError(f"the bank {self.store.location} was opened read-only; {hint}")

    def check_vectors(self, vectors: np.ndarray, con: Connection) -> None:
        """Record the dimension of a bank's first vectors; refuse others later."""
        dim = vectors.shape[1]
        if self.dim is None:
            tables.set_meta(con, "embedding_dim", str(dim))
        elif dim != self.dim:
            raise ModelMismatchError(f"vectors of dimension {dim} cannot join a bank of dimension {self.dim}")

    # -- sessions: hold the file for one operation ---------------------------------------------

    @contextlib.contextmanager
    def session(self, write: bool = True, flush: bool = True) -> Iterator[Connection]:
        """Hold the store for one operation: catch up, write buffered recalls (unless
        ``flush=False``), yield the connection; one transaction."""
        self.check_open()
        if write:
            self.check_writable("open it without read_only=True to change it (recall with record=False "
                                "reads without writing)")
        with self.lock:
            self.wait_for_flush()
            # Buffered recalls are written in this operation's transaction, first: whatever it reads
            # (the log, access counts) or changes sees every recall.
            batches = self.journal.seal() if flush and not self.store.read_only else []
            entries = [e for b in batches for e in b.entries]
            orphans = list(self.journal.orphans()) if flush and not self.store.read_only else []
            written = None
            try:
                if (entries or orphans) and self.store.splits_namespaces:
                    # Each namespace's recalls in a transaction of its own, then the operation's,
                    # in one hold of the store (nobody writes in between).
                    with self.store.hold() as con:
                        self.catch_up(con)
                        written = self.write_recalls_apart(con, entries, orphans)
                        with con.transaction():
                            yield con
                else:
                    with self.store.connect(write or bool(entries or orphans)) as con:
                        self.catch_up(con)
                        if entries or orphans:
                            written = self.write_recalls(con, entries, orphans)
                        yield con
            except BaseException:
                if written is not None and self.store.splits_namespaces:  # committed before the failure
                    self.recalls_written(written, batches, orphans)
                else:
                    for _, _, fh in orphans:
                        fh.close()
                raise
            if written is not None:
                self.recalls_written(written, batches, orphans)
            self.signature = self.store.signature_after(self.synced_seq)

    @contextlib.contextmanager
    def held(self) -> Iterator[Connection]:
        """Hold the store for one operation of several transactions, each begun by the caller
        (``con.transaction()``), having caught up first. Buffered recalls are left to the flush
        thread, as recall leaves them: nothing a write and its checks read depends on them."""
        self.check_open()
        self.check_writable()
        with self.lock:
            self.wait_for_flush()
            with self.store.hold() as con:
                self.catch_up(con)
                yield con
            self.signature = self.store.signature_after(self.synced_seq)

    def wait_for_flush(self) -> None:
        """With the lock held: wait (letting the lock go meanwhile) until no flush is writing.
        Every path that opens the file for this bank calls it first."""
        while self.flushing:
            self.flush_done.wait()

    def catch_up(self, con: Connection) -> None:
        """Apply what other processes changed since this bank last looked (by change sequence).

        Nothing to read when the last write left this bank current (:meth:`mark_current`) and the
        store is still held as then: while the same holder lives no other process or bank can have
        written, so an add after an add asks the store nothing here."""
        under, self.current_under = self.current_under, None
        if under is not None and under is self.store.holder():
            return
        seq = tables.change_seq(con)
        if seq == self.synced_seq:
            return
        meta = tables.meta(con)
        if meta["embedding_model"] != self.model:
            # Someone re-embedded the bank: every cached vector is of the wrong model.
            self.use_model(meta["embedding_model"], int(meta["embedding_dim"]) if meta["embedding_dim"] else None)
        elif self.dim is None and meta.get("embedding_dim"):
            self.dim = int(meta["embedding_dim"])
        self.active_params = None
        self.acknowledged = None
        if not self.store.shared:  # a shared store's tokens are checked against its own numbers (tokens.py)
            self.tokens = None
        self.index_mode = meta.get("index_mode", "exact")
        for (mid,) in con.execute("SELECT id FROM removed_memories WHERE seq > ?", [self.synced_seq]).fetchall():
            self.memories.pop(mid, None)
            self.indexes.remove(mid)
        if len(self.indexes):
            rows = tables.fetch_rows(con, "seq > ?", [self.synced_seq], with_embedding=True)
            self.apply_rows(rows)
            changed = zip(rows.column("namespace").to_pylist(), rows.column("status").to_pylist())
        else:
            changed = []
            for mid, ns, status in con.execute("SELECT id, namespace, status FROM memories WHERE seq > ?",
                                               [self.synced_seq]).fetchall():
                self.memories.pop(mid, None)
                changed.append((ns, status))
        self.advance(seq)
        # Another process erased memories: this machine's saved indexes of their namespaces hold
        # their text (and words) until rewritten without them, or dropped.
        for ns in {ns for ns, status in changed if status == "deleted"}:
            idx = self.indexes.get(ns)
            if idx is not None:
                self.save_index(idx)
            else:
                self.indexes.drop_files(ns)

    def catch_up_to(self, seq: int, timeout: float) -> bool:
        """Catch up with the store until this bank has seen change ``seq`` (a number a client got
        from some server of this bank): at once when it has; else catch up (one read
        transaction), and while the store does not hold ``seq`` yet, wait for its notification
        (or look again) until ``timeout`` seconds have passed. False then."""
        self.check_open()
        deadline = time.monotonic() + timeout
        while True:
            if self.synced_seq >= seq:
                return True
            with self.lock:
                if self.synced_seq < seq:
                    with self.session(write=False, flush=False):
                        pass  # the session's catch-up is the point
            if self.synced_seq >= seq:
                return True
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            self.store.wait_for_change(seq, min(left, 1.0))

    def mark_current(self) -> None:
        """With the lock held, after a write that found this bank current and that it took
        (:meth:`advance`; so must every later write of the hold): while the store's holder is the
        same, the next :meth:`catch_up` need not look. Any catch-up clears the mark."""
        self.current_under = self.store.holder()

    def advance(self, seq: int) -> None:
        """This bank (its loaded indexes too) has caught up with the store up to change ``seq``."""
        self.synced_seq = seq
        self.indexes.advance(seq)

    def apply_rows(self, rows: Any) -> None:
        """Take these store rows (an Arrow table) into the caches and the loaded indexes."""
        for mid in rows.column("id").to_pylist():
            self.memories.pop(mid, None)
        self.indexes.apply_rows(rows, self.dim)

    def forget_cached(self, ids: Any) -> None:
        """Drop memories from the by-id cache (they changed or are gone)."""
        for mid in ids:
            self.memories.pop(mid, None)

    # -- namespace indexes ---------------------------------------------------------------------

    def ns_index(self, con: Connection, namespace: str, progress: Progress | None = None) -> NamespaceIndex | None:
        """The loaded index of ``namespace`` (loading it on first use), or None without vectors."""
        return self.indexes.load(con, namespace, self.model, self.dim, progress)

    def save_index(self, idx: NamespaceIndex) -> None:
        self.indexes.save(idx, self.model)

    def load_namespace(self, namespace: str, progress: Progress | None = None) -> int:
        """Load ``namespace``'s index now (if it is not); returns how many memories it holds."""
        with self.lock:
            if namespace in self.indexes:
                return self.indexes[namespace].n
            with self.session(write=False) as con:
                idx = self.ns_index(con, namespace, progress)
            return 0 if idx is None else idx.n

    def rebuild_indexes(self, namespaces: list[str], progress: Progress | None = None) -> int:
        """Throw away the cached indexes and rebuild these namespaces' from the store."""
        with self.lock:
            shutil.rmtree(self.index_folder, ignore_errors=True)
            self.indexes.clear()
            with self.session(write=False) as con:
                for ns in namespaces:
                    self.ns_index(con, ns)
                    if progress:
                        progress(1)
            return len(namespaces)

    # -- memories by id ----------------------------------------------------------------------------

    def get(self, con: Connection, mid: int) -> Memory:
        """One memory, fresh from the store (NotFoundError when there is none)."""
        return self.get_rows(con, [mid])[mid]

    def get_rows(self, con: Connection, ids: list[int], *, missing_ok: bool = False) -> dict[int, Memory]:
        """Memories by id, fresh from the store; NotFoundError names the first missing id (with
        ``missing_ok``, a missing one is left out)."""
        if not ids:
            return {}
        found = {int(r["id"]): rowmod.memory_from_row(r)
                 for r in tables.fetch_rows(con, *tables.ids_in("id", ids)).to_pylist()}
        for mid in ids:
            if mid not in found and not missing_ok:
                raise NotFoundError(f"no memory with id {mid} in {self.store.location}")
        return found

    def get_many(self, con: Connection | None, ids: list[int]) -> dict[int, Memory]:
        """Memories by id through the cache (``con=None``: open a session only if one is missing)."""
        missing = [i for i in ids if i not in self.memories]
        if missing:
            if con is None:
                with self.session(write=False) as con2:
                    return self.get_many(con2, ids)
            if len(self.memories) > MEMORY_CACHE_MAX:
                self.memories.clear()
            for row in tables.fetch_rows(con, *tables.ids_in("id", missing)).to_pylist():
                self.memories[int(row["id"])] = rowmod.memory_from_row(row)
        for mid in ids:
            if mid not in self.memories:
                raise NotFoundError(f"no memory with id {mid} in {self.store.location}")
        return {i: self.memories[i] for i in ids}

    # -- buffered recalls -----------------------------------------------------------------------

    def write_recalls(self, con: Connection, entries: list[dict], orphans: list) -> tuple[int | None, list[dict]]:
        """Write journaled recalls (this bank's, and a crashed process's orphans) in ``con``'s
        transaction."""
        seq, touched = tables.write_recalls(con, entries + [e for _, found, _ in orphans for e in found])
        return seq, tables.access_rows(con, touched)

    def write_recalls_apart(self, con: Connection, entries: list[dict],
                            orphans: list) -> tuple[int | None, list[dict]]:
        """:meth:`write_recalls` on a held connection, in transactions of its own: one per
        namespace on a store that splits them (see ``Store.splits_namespaces``), else one."""
        found = entries + [e for _, more, _ in orphans for e in more]
        seq, touched = None, []
        for part in transaction_parts(self.store, [e["namespace"] for e in found]):
            with con.transaction():
                got, ids = tables.write_recalls(con, [found[i] for i in part])
            if got is not None:
                seq = got  # above the transaction's before it: nobody else writes in the hold
            touched += ids
        return seq, tables.access_rows(con, touched)

    def recalls_written(self, written: tuple[int | None, list[dict]], batches: list, orphans: list) -> None:
        """The session that wrote buffered recalls committed: forget them, take the store's counts."""
        self.journal.written(batches)
        for path, _, fh in orphans:
            path.unlink(missing_ok=True)
            fh.close()
        seq, rows = written
        if seq is None:
            return
        if seq > self.synced_seq:
            self.advance(seq)
        # Recalls recorded while a flush wrote (journaled after it sealed its batch) are counted in
        # the indexes but not yet in these rows: add them back, as the store will.
        later: dict[int, list] = {}
        for e in self.journal.current:
            at = datetime.fromisoformat(e["recalled_at"])
            for h in e["hits"]:
                use = later.setdefault(int(h[1]), [0, at])
                use[0] += 1
                use[1] = max(use[1], at)
        for row in rows:  # the store's counts now include every flushed recall: take them
            mid = int(row["id"])
            self.memories.pop(mid, None)
            idx = self.indexes.get(row["namespace"])
            if idx is not None and mid in idx.row_of and row["status"] == "active":
                count, last_at = float(row["access_count"]), row["last_accessed_at"]
                if mid in later:
                    count += later[mid][0]
                    if last_at is None or last_at < later[mid][1]:
                        last_at = later[mid][1]
                # The row's sequence is its flush transaction's: a recall journaled since is counted
                # here but not in the store, so a saved index's fingerprint tells it apart.
                idx.set_fields(mid, rowmod.ts(row["created_at"]), rowmod.ts(last_at),
                               float(row["importance"]), count, float(row["use_count"]), int(row["seq"]))
                row_info = idx.info[idx.row_of[mid]]
                if row_info is not None:
                    idx.set_info(mid, row_info[:5] + (last_at,) + row_info[6:])


def _exists(path: str | os.PathLike) -> bool:
    """Whether ``path`` names a bank file already there (a database URL is taken as there)."""
    return "://" in str(path) or os.path.exists(path)


def _read_unread(con: Connection, column: str, fields: str, read: Callable[..., str | None]) -> None:
    """Fill ``column`` for every memory that has none (a bank migrated to the schema that added it)
    with ``read(*fields)`` (None leaves it empty), the rule a new memory is read by, in the opening
    transaction; the migration's meta key ``{column}_unread`` asks for it once. ``column`` and
    ``fields`` are our own column names."""
    key = f"{column}_unread"
    if con.execute("SELECT count(*) FROM meta WHERE key = ?", [key]).fetchone()[0] == 0:
        return
    by: dict[str, list[int]] = {}
    for mid, *values in con.execute(f"SELECT id, {fields} FROM memories WHERE {column} IS NULL").fetchall():
        if (value := read(*values)) is not None:
            by.setdefault(value, []).append(int(mid))
    for value, ids in by.items():
        for start in range(0, len(ids), 10_000):
            con.execute(f"UPDATE memories SET {column} = ? WHERE id IN (SELECT unnest(?))",
                        [value, ids[start:start + 10_000]])
    con.execute("DELETE FROM meta WHERE key = ?", [key])


def _read_durabilities(con: Connection) -> None:
    """Read the durability of every memory that has none (a bank migrated to schema 11)."""
    _read_unread(con, "durability", "text, category, kind, importance",
                 lambda *fields: infer_durability(*fields).durability)


def _read_languages(con: Connection) -> None:
    """Read the language of every memory that has none (a bank migrated to schema 12); a hard-deleted
    memory has no text to read and keeps none."""
    _read_unread(con, "language", "text", lambda text: None if text is None else detect_language(text))
