"""MemoryBank: the one façade every caller (agent, CLI, dashboard) uses.

A bank is a DuckDB file (the truth) plus derived indexes kept in memory and cached on disk next
to it. The file is held only for the length of one operation, so several processes can share a
bank; each operation first catches up with what others changed (by change sequence).
"""

from __future__ import annotations

import contextlib
import io
import json
import math
import os
import shutil
import threading
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import IO, Any, Callable, Iterable, Iterator

import duckdb
import numpy as np

from . import gate as gate_mod
from .embed import DEFAULT_MODEL, Embedder, canonical_model_name, get_embedder
from .errors import BankReadOnlyError, ModelMismatchError, NotFoundError, StateError, ValidationError, ImportFormatError
from .index import NamespaceIndex, namespace_key, tokenize
from .models import (
    CATEGORIES, KINDS, STATUSES, Event, Hit, ImportReport, Memory, check_choice, check_importance,
    check_namespace, check_text, parse_time,
)
from .scoring import PRESETS, ScoringParams, blend, tier_of, top_k
from .store import MEMORY_COLUMNS, Store, content_hash, to_aware, to_naive_utc, utcnow

Progress = Callable[[int], None]

_EDITABLE = ("text", "namespace", "kind", "category", "importance", "created_at", "pinned", "source")
_MEMORY_CACHE_MAX = 20_000
_SAVE_EVERY = 1000  # index changes before a long-lived bank saves its index cache unasked


def _ts(value: datetime | None) -> float:
    return math.nan if value is None else value.replace(tzinfo=timezone.utc).timestamp()


def _memory_from_row(row: dict[str, Any]) -> Memory:
    return Memory(
        id=int(row["id"]), text=row["text"], namespace=row["namespace"], kind=row["kind"],
        category=row["category"], importance=float(row["importance"]),
        created_at=to_aware(row["created_at"]), updated_at=to_aware(row["updated_at"]),
        last_accessed_at=to_aware(row["last_accessed_at"]), access_count=int(row["access_count"]),
        status=row["status"], pinned=bool(row["pinned"]), source=row["source"],
        content_hash=row["content_hash"], embedding_model=row["embedding_model"],
        superseded_by=row["superseded_by"], merged_into=row["merged_into"],
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
        self.gate = gate_mod.Gate()
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
        bank._signature = store.signature()
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
        """Save changed index caches and let go. Safe to call twice."""
        with self._lock:
            if self.closed:
                return
            self.closed = True
            if self._store.read_only:
                return
            for idx in self._indexes.values():
                if idx.changes_since_save:
                    self._save_index(idx)

    def __enter__(self) -> "MemoryBank":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"MemoryBank({str(self.path)!r}, model={self.model!r})"

    # -- sessions: hold the file for one operation ---------------------------------------------

    @contextlib.contextmanager
    def _session(self, write: bool = True) -> Iterator[Any]:
        if self.closed:
            raise StateError("this bank is closed; open it again with MemoryBank.open")
        if write and self._store.read_only:
            raise BankReadOnlyError(
                f"the bank {self.path} was opened read-only; open it without read_only=True to change "
                "it (recall with record=False reads without writing)")
        with self._lock:
            with self._store.connect(write) as con:
                self._catch_up(con)
                yield con
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
        cols = rows.to_pydict()
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
            r = idx.row_of.get(mid)
            if r is not None and idx.hashes[r] == cols["content_hash"][i]:
                idx.set_fields(mid, *fields)
            else:
                if vectors is None:
                    vectors = Store.embeddings_of(rows, self.dim)
                idx.upsert(mid, vectors[i], tokenize(cols["text"][i]), cols["content_hash"][i], *fields)

    # -- namespace indexes ---------------------------------------------------------------------

    def _ns_index(self, con: Any, namespace: str) -> NamespaceIndex | None:
        """The loaded index of ``namespace`` (loading, reconciling or building it), or None when
        the bank has no vectors yet."""
        idx = self._indexes.get(namespace)
        if idx is not None:
            return idx
        if self.dim is None:
            return None
        cached = NamespaceIndex.load(self.index_folder, namespace, self.model, self.dim)
        live = con.sql(
            "SELECT id, seq, created_at, last_accessed_at, importance, access_count, content_hash "
            "FROM memories WHERE namespace = ? AND status = 'active'", params=[namespace],
        ).to_arrow_table().to_pydict()
        seq_now = Store.change_seq(con)
        rebuild = cached is None
        if cached is not None:
            live_ids = set(live["id"])
            for mid in [int(m) for m in cached.ids[: cached.n]]:
                if mid not in live_ids:
                    cached.remove(mid)
            stale = [mid for mid, s, h in zip(live["id"], live["seq"], live["content_hash"])
                     if s > cached.seq or mid not in cached.row_of or cached.hashes[cached.row_of[mid]] != h]
            if len(stale) > max(1000, cached.n // 2):
                rebuild = True
            elif stale:
                rows = Store.fetch_rows(con, "namespace = ? AND status = 'active' AND id IN (SELECT unnest(?))",
                                        [namespace, stale], with_embedding=True)
                self._fill(cached, rows)
            idx = cached
        if rebuild:
            rows = Store.fetch_rows(con, "namespace = ? AND status = 'active'", [namespace], with_embedding=True)
            idx = NamespaceIndex(namespace, self.dim)
            self._fill(idx, rows)
        for i, mid in enumerate(live["id"]):
            idx.set_fields(mid, _ts(live["created_at"][i]), _ts(live["last_accessed_at"][i]),
                           float(live["importance"][i]), float(live["access_count"][i]))
        idx.seq = seq_now
        self._indexes[namespace] = idx
        if rebuild or idx.changes_since_save:
            self._save_index(idx)
        return idx

    def _fill(self, idx: NamespaceIndex, rows: Any) -> None:
        if rows.num_rows == 0:
            return
        cols = rows.to_pydict()
        vectors = Store.embeddings_of(rows, self.dim)
        idx.add_many(
            np.asarray(cols["id"], dtype=np.int64), vectors, [tokenize(t) for t in cols["text"]],
            list(cols["content_hash"]), np.array([_ts(t) for t in cols["created_at"]]),
            np.array([_ts(t) for t in cols["last_accessed_at"]]), np.asarray(cols["importance"], dtype=np.float64),
            np.asarray(cols["access_count"], dtype=np.float64),
        )

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
    ) -> int:
        """Store one memory and return its id.

        ``text`` should be a short distilled statement ("Prefers vegetarian food"). ``importance``
        is in [0, 1]; ``kind`` is explicit (the user said it) or inferred (the agent concluded it);
        ``created_at`` (default now) keeps an imported memory's own date.
        """
        row = {"text": text, "namespace": namespace, "importance": importance, "kind": kind,
               "category": category, "created_at": created_at, "source": source, "pinned": pinned}
        if embedding is not None:
            row["embedding"] = embedding
        try:
            return self.add_many([row])[0]
        except (ValidationError, ModelMismatchError) as exc:
            raise type(exc)(str(exc).removeprefix("row 1: ")) from None

    def _normalize_row(self, row: Any, now: datetime) -> dict[str, Any]:
        if not isinstance(row, dict):
            raise ValidationError(f"each memory must be a mapping (dict), got {type(row).__name__}")
        known = {"id", "text", "namespace", "importance", "kind", "category", "created_at", "updated_at",
                 "last_accessed_at", "access_count", "status", "pinned", "source", "embedding",
                 "embedding_model", "content_hash", "superseded_by", "merged_into"}
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
        }
        if not isinstance(out["pinned"], bool):
            raise ValidationError("pinned must be true or false")
        if out["source"] is not None and not isinstance(out["source"], str):
            raise ValidationError("source must be a string")
        count = row.get("access_count", 0)
        if isinstance(count, bool) or not isinstance(count, int) or count < 0:
            raise ValidationError(f"access_count must be a whole number >= 0, got {count!r}")
        out["access_count"] = count
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
            if vec.ndim != 1 or vec.shape[0] != dim or not np.all(np.isfinite(vec)):
                raise ValidationError(
                    f"embedding must be {dim} finite numbers from {self.model}; drop it to embed the text again"
                )
            norm = float(np.linalg.norm(vec))
            if norm == 0:
                raise ValidationError("embedding must not be all zeros")
            out["embedding"] = vec / norm
        return out

    def add_many(
        self,
        rows: Iterable[dict[str, Any]],
        *,
        progress: Progress | None = None,
        batch_size: int = 2048,
        skip_existing: bool = False,
        report: ImportReport | None = None,
    ) -> list[int]:
        """Store many memories; returns their ids in order.

        Every row is checked before anything is written (a bad row raises ValidationError naming
        its position and changes nothing). A row may carry ``embedding`` (a vector of the bank's
        model) to skip embedding it again, and an ``id`` to keep (export and import round-trip).
        Rows are embedded outside the file lock and written in batches of ``batch_size``, each in
        one transaction. With ``skip_existing``, a row whose id already exists with the same text
        is counted as already present instead of refused, so an interrupted import can be re-run.
        """
        if isinstance(rows, (str, bytes, dict)):
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
        for start in range(0, len(todo), batch_size):
            chunk = todo[start:start + batch_size]
            for i, mid in zip(chunk, self._write_batch([checked[i] for i in chunk])):
                ids[i] = mid
            if progress is not None:
                progress(len(chunk))
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

    def _write_batch(self, batch: list[dict[str, Any]]) -> list[int]:
        """Embed (outside the file lock) and insert rows already checked, in one transaction."""
        need = [i for i, r in enumerate(batch) if "embedding" not in r]
        dim = self.embedder.dim if need or self.dim is None else self.dim
        vectors = np.empty((len(batch), dim), dtype=np.float32)
        if need:
            vectors[need] = self.embedder.encode([batch[i]["text"] for i in need])
        for i, r in enumerate(batch):
            if "embedding" in r:
                vectors[i] = r["embedding"]
        with self._session() as con:
            self._check_vectors(vectors, con)
            seq = Store.next_seq(con)
            fresh = [i for i, r in enumerate(batch) if r["id"] is None]
            first = Store.take_ids(con, "next_id", len(fresh)) if fresh else 0
            ids_out = [r["id"] for r in batch]
            for j, i in enumerate(fresh):
                ids_out[i] = first + j
            if max(ids_out) >= int(Store.meta(con)["next_id"]):
                Store.set_meta(con, "next_id", str(max(ids_out) + 1))
            cols: dict[str, list] = {c: [] for c in MEMORY_COLUMNS}
            for mid, r in zip(ids_out, batch):
                for c in MEMORY_COLUMNS:
                    if c == "id":
                        cols[c].append(mid)
                    elif c == "seq":
                        cols[c].append(seq)
                    elif c == "embedding_model":
                        cols[c].append(self.model)
                    elif c in ("created_at", "updated_at", "last_accessed_at"):
                        cols[c].append(None if r[c] is None else to_naive_utc(r[c]))
                    else:
                        cols[c].append(r[c])
            try:
                Store.insert_memories(con, cols, vectors)
            except duckdb.ConstraintException:
                # Another process took one of these ids since we checked.
                raise ValidationError("an id in this batch was just taken by another writer; import again") from None
            Store.log_events(con, self.actor, "add", ids_out, [None] * len(batch),
                             [self._public(r, mid) for mid, r in zip(ids_out, batch)], utcnow())
        self._synced_seq = seq
        self.dim = dim
        for mid, r, vec in zip(ids_out, batch, vectors):
            idx = self._indexes.get(r["namespace"])
            if idx is not None and r["status"] == "active":
                idx.upsert(mid, vec, tokenize(r["text"]), r["content_hash"], _ts(r["created_at"]),
                           _ts(r["last_accessed_at"]), r["importance"], r["access_count"])
        for idx in self._indexes.values():
            idx.seq = seq
            if idx.changes_since_save >= _SAVE_EVERY:
                self._save_index(idx)
        return [int(i) for i in ids_out]

    @staticmethod
    def _public(r: dict[str, Any], mid: int) -> dict[str, Any]:
        out = {k: v for k, v in r.items() if k != "embedding"}
        out["id"] = mid
        for k in ("created_at", "updated_at", "last_accessed_at"):
            if out.get(k) is not None:
                out[k] = out[k].isoformat()
        return out

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
            rows = con.execute(
                "SELECT id, happened_at, actor, action, memory_id, before, after, note FROM events "
                "WHERE memory_id = ? ORDER BY id", [mid]).fetchall()
        return [_event(r) for r in rows]

    def events(self, limit: int = 100, action: str | None = None) -> list[Event]:
        """The latest events of the whole bank, newest first."""
        where, params = ("WHERE action = ?", [action]) if action else ("", [])
        with self._session(write=False) as con:
            rows = con.execute(
                f"SELECT id, happened_at, actor, action, memory_id, before, after, note FROM events {where} "
                "ORDER BY id DESC LIMIT ?", params + [int(limit)]).fetchall()
        return [_event(r) for r in rows]

    def memories(
        self,
        namespace: str | None = None,
        status: str | None = "active",
        *,
        kind: str | None = None,
        category: str | None = None,
        contains: str | None = None,
        limit: int | None = 100,
        offset: int = 0,
    ) -> list[Memory]:
        """Memories matching the filters, newest first. ``status=None`` means every status."""
        where, params = self._filters(namespace, status, kind, category, contains)
        with self._session(write=False) as con:
            rows = Store.fetch_rows(con, where, params, order="created_at DESC, id DESC",
                                    limit=limit, offset=offset).to_pylist()
        return [_memory_from_row(r) for r in rows]

    def count(self, namespace: str | None = None, status: str | None = "active", **filters: Any) -> int:
        """How many memories match the filters of :meth:`memories`."""
        where, params = self._filters(namespace, status, filters.get("kind"), filters.get("category"),
                                      filters.get("contains"))
        with self._session(write=False) as con:
            return int(con.execute(f"SELECT count(*) FROM memories WHERE {where}", params).fetchone()[0])

    @staticmethod
    def _filters(namespace, status, kind, category, contains) -> tuple[str, list[Any]]:
        clauses, params = ["TRUE"], []
        if namespace is not None:
            clauses.append("namespace = ?")
            params.append(check_namespace(namespace))
        if status is not None:
            clauses.append("status = ?")
            params.append(check_choice(status, STATUSES, "status"))
        if kind is not None:
            clauses.append("kind = ?")
            params.append(check_choice(kind, KINDS, "kind"))
        if category is not None:
            clauses.append("category = ?")
            params.append(check_choice(category, CATEGORIES, "category"))
        if contains:
            clauses.append("contains(lower(text), lower(?))")
            params.append(str(contains))
        return " AND ".join(clauses), params

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
                f"WHERE {where} AND status = 'active'", params).fetchall()
            retrievals = con.execute(
                f"SELECT count(*), count(*) FILTER (WHERE n_results = 0) FROM retrievals WHERE {where}",
                params).fetchone()
            meta = Store.meta(con)
            name, _ = self._active(con)
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
            elif key in ("status", "superseded_by", "merged_into", "last_accessed_at", "access_count"):
                clean[key] = value  # internal: set by forget/restore/undo and curation, already checked
        return clean

    def _apply(self, mid: int, fields: dict[str, Any], action: str, *, vector: np.ndarray | None = None,
               require_status: tuple[str, ...] | None = None, note: str | None = None) -> Memory:
        """Set fields of one memory in one transaction, log the event, update the indexes."""
        with self._session() as con:
            before = self._get(con, mid)
            if before.status == "deleted":
                raise StateError(f"memory {mid} was hard-deleted; its text is gone and it cannot change")
            if require_status and before.status not in require_status:
                raise StateError(f"memory {mid} is {before.status}; {action} needs it to be {' or '.join(require_status)}")
            if "text" in fields and vector is None:
                vector = self.embedder.encode_one(fields["text"])
            seq = Store.next_seq(con)
            sets, params = ["seq = ?", "updated_at = ?"], [seq, to_naive_utc(utcnow())]
            for key, value in fields.items():
                sets.append(f"{key} = ?")
                params.append(to_naive_utc(value) if isinstance(value, datetime) else value)
            if "text" in fields:
                sets += ["content_hash = ?", "embedding = ?"]
                params += [content_hash(fields["text"]), vector.astype(np.float32).tolist()]
            con.execute(f"UPDATE memories SET {', '.join(sets)} WHERE id = ?", params + [mid])
            after = self._get(con, mid)
            keys = [k for k in fields if k in Memory.__dataclass_fields__]
            Store.log_event(con, self.actor, action, mid, _snapshot(before, keys), _snapshot(after, keys),
                            utcnow(), note)
        self._synced_seq = seq
        self._memories.pop(mid, None)
        for idx in self._indexes.values():
            idx.seq = seq
            if idx.namespace != after.namespace or after.status != "active":
                idx.remove(mid)
        idx = self._indexes.get(after.namespace)
        if idx is not None and after.status == "active":
            fields_ts = (_ts(after.created_at), _ts(after.last_accessed_at), after.importance, after.access_count)
            if mid in idx.row_of and vector is None:
                idx.set_fields(mid, *fields_ts)
            else:
                if vector is None:
                    with self._session(write=False) as con:
                        rows = Store.fetch_rows(con, "id = ?", [mid], with_embedding=True)
                    vector = Store.embeddings_of(rows, self.dim)[0]
                idx.upsert(mid, vector, tokenize(after.text), after.content_hash, *fields_ts)
        return after

    def forget(self, memory_id: int, hard: bool = False, reason: str | None = None) -> None:
        """Soft-delete (archive: kept, never recalled, restorable) or, with ``hard=True``, delete for
        real: the text and vector are erased from the file and the history keeps only the id and
        a content hash."""
        mid = self._check_id(memory_id)
        if not hard:
            self._apply(mid, {"status": "archived"}, "forget", require_status=("active",), note=reason)
            return
        with self._session() as con:
            before = self._get(con, mid)
            if before.status == "deleted":
                raise StateError(f"memory {mid} is already hard-deleted")
            seq = Store.next_seq(con)
            con.execute(
                "UPDATE memories SET text = NULL, embedding = NULL, source = NULL, status = 'deleted', "
                "seq = ?, updated_at = ? WHERE id = ?", [seq, to_naive_utc(utcnow()), mid])
            # The history must not keep what was forgotten: scrub texts from earlier events.
            for eid, b, a in con.execute("SELECT id, before, after FROM events WHERE memory_id = ?", [mid]).fetchall():
                con.execute("UPDATE events SET before = ?, after = ? WHERE id = ?",
                            [_scrub(b), _scrub(a), eid])
            Store.log_event(con, self.actor, "hard_delete", mid,
                            {"id": mid, "content_hash": before.content_hash, "status": before.status},
                            {"id": mid, "status": "deleted"}, utcnow(), None)
        with self._lock:
            self._store.compact()
            self._signature = self._store.signature()
        self._synced_seq = seq
        self._memories.pop(mid, None)
        for idx in self._indexes.values():
            idx.seq = seq
            idx.remove(mid)
        # The cached BM25 file holds the memory's words: rewrite it now, or drop it for a rebuild.
        idx = self._indexes.get(before.namespace)
        if idx is not None:
            self._save_index(idx)
        else:
            for f in self.index_folder.glob(namespace_key(before.namespace) + ".*"):
                f.unlink(missing_ok=True)

    def restore(self, memory_id: int) -> Memory:
        """Bring an archived (soft-deleted) memory back into recall."""
        mid = self._check_id(memory_id)
        return self._apply(mid, {"status": "active"}, "restore", require_status=("archived",))

    def undo(self, event_id: int) -> Memory:
        """Undo one event of a memory's history by setting the fields it changed back.

        Every change but a hard delete can be undone; undoing an ``add`` archives the memory.
        """
        eid = self._check_id(event_id)
        with self._session(write=False) as con:
            row = con.execute("SELECT id, happened_at, actor, action, memory_id, before, after, note FROM events "
                              "WHERE id = ?", [eid]).fetchone()
        if row is None:
            raise NotFoundError(f"no event with id {eid}")
        event = _event(row)
        if event.memory_id is None:
            raise StateError(f"event {eid} ({event.action}) is not about one memory and cannot be undone here")
        if event.action == "hard_delete":
            raise StateError("a hard delete cannot be undone: the text is gone")
        if event.action == "add":
            return self._apply(event.memory_id, {"status": "archived"}, "undo", note=f"undo event {eid}")
        fields = {k: v for k, v in (event.before or {}).items() if k in _EDITABLE or k in ("status", "superseded_by", "merged_into")}
        if "created_at" in fields:
            fields["created_at"] = parse_time(fields["created_at"])
        return self._apply(event.memory_id, self._check_changes(fields), "undo", note=f"undo event {eid}")

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
        preset_name, p = self._resolve_params(params)
        if k is not None or threshold is not None:
            p = p.replace(**{n: v for n, v in (("k", k), ("threshold", threshold)) if v is not None})
        now_dt = parse_time(now, "now") or utcnow()
        decision = self.should_recall(query) if gate else None
        vector = None
        if (decision is None or decision.recall) and self.dim is not None:
            vector = self.embedder.encode_one(query)
        with self._lock:
            idx = self._indexes.get(namespace)
            if not record and idx is not None and self._store.signature() == self._signature:
                # Nobody wrote since this bank last looked: a what-if needs no file access.
                return self._rank(None, idx, query, p, now_dt, vector)
            with self._session(write=record) as con:
                hits: list[Hit] = []
                if vector is not None:
                    idx = self._ns_index(con, namespace)
                    if idx is not None:
                        hits = self._rank(con, idx, query, p, now_dt, vector)
                if record:
                    self._record(con, query, namespace, p, preset_name, decision, hits, now_dt,
                                 (time.perf_counter() - started) * 1000.0)
            if record:
                self._after_record(hits)
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
        n = idx.n
        if n == 0:
            return []
        now = now_dt.timestamp()
        lexical = idx.lexical.scores(tokenize(query)) if p.lexical_weight > 0 else np.zeros(n)
        score, comps = blend(
            p, similarity=idx.similarities(vector), lexical=lexical, created=idx.created[:n],
            last_access=idx.last_access[:n], importance=idx.importance[:n], access_count=idx.access_count[:n],
            now=now,
        )
        # An "as of" recall must not see memories written after that moment.
        score = np.where(idx.created[:n] <= now, score, -np.inf)
        rows = top_k(score, idx.ids[:n], p.k, p.threshold)
        ids = [int(i) for i in idx.ids[rows]]
        memories = self._get_many(con, ids)
        return [
            Hit(memory=memories[mid], score=float(score[r]), rank=rank + 1,
                components={name: float(comps[name][r]) for name in comps})
            for rank, (mid, r) in enumerate(zip(ids, rows))
        ]

    def _record(self, con: Any, query: str, namespace: str, p: ScoringParams, preset: str | None,
                decision: gate_mod.GateDecision | None, hits: list[Hit], now_dt: datetime,
                latency_ms: float) -> None:
        """Log a real recall and count the access of every memory it returned."""
        rid = Store.take_ids(con, "next_retrieval_id", 1)
        con.execute(
            "INSERT INTO retrievals VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [rid, to_naive_utc(now_dt), self.actor, namespace, query, p.to_json(), preset,
             None if decision is None else json.dumps(decision.to_dict(), ensure_ascii=False),
             decision is None or decision.recall, latency_ms, len(hits)])
        self.last_retrieval_id = rid
        if not hits:
            return
        con.executemany(
            "INSERT INTO retrieval_hits VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [[rid, h.rank, h.memory.id, h.score, *(h.components[c] for c in
              ("similarity", "lexical", "recency", "importance", "frequency"))] for h in hits])
        seq = Store.next_seq(con)
        ids = [h.memory.id for h in hits]
        con.execute(
            "UPDATE memories SET access_count = access_count + 1, seq = ?, "
            "last_accessed_at = greatest(coalesce(last_accessed_at, ?), ?) "
            "WHERE id IN (SELECT unnest(?)) AND status = 'active'",
            [seq, to_naive_utc(now_dt), to_naive_utc(now_dt), ids])
        self._pending_access = (seq, Store.fetch_rows(con, "id IN (SELECT unnest(?))", [ids]).to_pylist())

    def _after_record(self, hits: list[Hit]) -> None:
        """Once the recall's transaction committed, reflect the new access counts in memory."""
        pending, self._pending_access = self._pending_access, None
        if not hits or pending is None:
            return
        seq, rows = pending
        self._synced_seq = seq
        for idx in self._indexes.values():
            idx.seq = seq
        for row in rows:
            mid = int(row["id"])
            self._memories[mid] = _memory_from_row(row)
            idx = self._indexes.get(row["namespace"])
            if idx is not None and mid in idx.row_of:
                idx.set_fields(mid, _ts(row["created_at"]), _ts(row["last_accessed_at"]),
                               float(row["importance"]), float(row["access_count"]))

    _pending_access: tuple[int, list[dict]] | None = None
    last_retrieval_id: int | None = None

    def retrievals(self, namespace: str | None = None, limit: int = 50) -> list[dict[str, Any]]:
        """The latest logged recalls, newest first, each with its hits and their score components."""
        where, params = ("WHERE namespace = ?", [check_namespace(namespace)]) if namespace else ("", [])
        with self._session(write=False) as con:
            heads = con.sql(f"SELECT * FROM retrievals {where} ORDER BY id DESC LIMIT {int(limit)}",
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
        """
        check_choice(on_error, ("refuse", "skip"), "on_error")
        own = isinstance(source, (str, os.PathLike))
        if own and not Path(source).exists():
            raise ValidationError(f"no such file: {source}")
        fh = open(source, encoding="utf-8") if own else source
        report = ImportReport()
        now = utcnow()
        rows_ok: list[dict[str, Any]] = []
        line_numbers: list[int] = []
        try:
            for lineno, line in enumerate(fh, start=1):
                if not line.strip():
                    continue
                try:
                    row = json.loads(line)
                    if not isinstance(row, dict):
                        raise ValidationError("each line must be a JSON object")
                    if namespace is not None:
                        row["namespace"] = namespace
                    for drop in ("content_hash", "embedding_model") if "embedding" not in row else ("content_hash",):
                        row.pop(drop, None)
                    self._normalize_row(row, now)
                    rows_ok.append(row)
                    line_numbers.append(lineno)
                except (json.JSONDecodeError, ValidationError, ModelMismatchError, UnicodeDecodeError) as exc:
                    report.errors.append((lineno, str(exc)))
        except UnicodeDecodeError as exc:
            raise ImportFormatError(f"the file is not UTF-8 text ({exc})") from None
        finally:
            if own:
                fh.close()
        existing = self._existing([r["id"] for r in rows_ok if isinstance(r.get("id"), int)])
        first_line: dict[int, int] = {}
        for lineno, row in zip(line_numbers, rows_ok):
            mid = row.get("id")
            if mid is None:
                continue
            if mid in first_line:
                report.errors.append((lineno, f"id {mid} appears again (first on line {first_line[mid]})"))
            elif mid in existing and existing[mid] != content_hash(row["text"]):
                report.errors.append((lineno, self._clash(mid)))
            first_line.setdefault(mid, lineno)
        report.errors.sort()
        bad_lines = {n for n, _ in report.errors}
        good = [r for n, r in zip(line_numbers, rows_ok) if n not in bad_lines]
        if report.errors and on_error == "refuse":
            shown = "; ".join(f"line {n}: {m}" for n, m in report.errors[:5])
            more = f" (and {len(report.errors) - 5} more)" if len(report.errors) > 5 else ""
            raise ImportFormatError(
                f"{len(report.errors)} malformed line(s), nothing imported: {shown}{more}. Fix them, "
                "or import with on_error='skip' (memctl import --skip-errors) to import the rest",
                report.errors)
        self.add_many(good, progress=progress, skip_existing=True, report=report)
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
                con.register("_vecs", pa.table({"id": [i for i, _ in ids_texts],
                                                "embedding": pa.ListArray.from_arrays(offsets, flat)}))
                con.execute("UPDATE memories SET embedding = _vecs.embedding, embedding_model = ?, seq = ? "
                            "FROM _vecs WHERE memories.id = _vecs.id", [target, seq])
                con.unregister("_vecs")
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


def _event(row: tuple) -> Event:
    eid, at, actor, action, mid, before, after, note = row
    return Event(id=int(eid), at=to_aware(at), actor=actor, action=action, memory_id=mid,
                 before=json.loads(before) if before else None, after=json.loads(after) if after else None,
                 note=note)


def _scrub(payload: str | None) -> str | None:
    """An event's JSON without the memory's text (or anything else that quotes it)."""
    if not payload:
        return payload
    data = json.loads(payload)
    for key in ("text", "source"):
        if key in data:
            data[key] = None
    return json.dumps(data, ensure_ascii=False)
