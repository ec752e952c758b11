"""The write path: one row validator, bulk writes, and re-embedding.

Rows are checked before anything is written (a bad row changes nothing), embedded outside the
file lock and written in batches, each one transaction and one group of "add" events, while the
model embeds the next batch. Loaded indexes take the new rows without reading them back.
"""

from __future__ import annotations

import contextlib
import math
import shutil
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime
from typing import TYPE_CHECKING, Any, Callable, Iterable

import numpy as np
import pyarrow as pa

from . import rows as rowmod
from ..storage.clock import utcnow
from ..language.durability import check_durability, infer as infer_durability
from ..language.text import detect_language
from ..embedding.embedder import canonical_model_name, get_embedder
from ..index import HASH_DTYPE
from ..errors import ModelMismatchError, ValidationError
from ..models import (
    CATEGORIES, DEFAULT_IMPORTANCE, KINDS, STATUSES, ImportReport, check_choice, check_context, check_importance, check_namespace,
    check_text, check_unicode, parse_time,
)
from ..storage import IntegrityError, tables

if TYPE_CHECKING:
    from .core import Core

Progress = Callable[[int], None]

# Rows per write: a batch the model embeds takes seconds, and the file is let go between batches;
# rows that carry vectors go in bigger transactions (each commit and checkpoint has a fixed cost).
BATCH_EMBED = 2048
BATCH_VECTORS = 8192

EDITABLE = ("text", "namespace", "kind", "category", "importance", "created_at", "pinned", "source", "durability")
# Fields a row may carry on import (an export's fields, and the vector).
ROW_FIELDS = frozenset({"id", "text", "namespace", "importance", "kind", "category", "created_at", "updated_at",
                        "last_accessed_at", "access_count", "status", "pinned", "source", "embedding",
                        "embedding_model", "content_hash", "superseded_by", "merged_into", "context", "use_count",
                        "durability"})
# Fields curation, undo and forgetting set; already checked by the operation that sets them.
_INTERNAL = ("status", "superseded_by", "merged_into", "last_accessed_at", "access_count", "updated_at")


FRESH_CACHED = 256  # rows of one write kept as Memory objects (a server answers with them)


def check_field(key: str, value: Any) -> Any:
    """One editable field, checked and normalised: the rule a new row and an update share."""
    if key == "text":
        return check_text(value)
    if key == "namespace":
        return check_namespace(value)
    if key == "kind":
        return check_choice(value, KINDS, "kind")
    if key == "category":
        return check_choice(value, CATEGORIES, "category")
    if key == "importance":
        return check_importance(value)
    if key == "created_at":
        checked = parse_time(value, "created_at")
        if checked is None:
            raise ValidationError("created_at cannot be empty")
        return checked
    if key == "durability":
        return check_durability(value)
    if key == "pinned":
        if not isinstance(value, bool):
            raise ValidationError("pinned must be true or false")
        return value
    if key == "source":
        if value is not None and not isinstance(value, str):
            raise ValidationError("source must be a string or None")
        return value if value is None else check_unicode(value, "source")
    raise ValidationError(f"{key} is not an editable field; editable fields: {', '.join(EDITABLE)}")


def check_changes(changes: dict[str, Any]) -> dict[str, Any]:
    """Checked field changes of an existing memory (internal fields pass as they are)."""
    return {key: value if key in _INTERNAL else check_field(key, value) for key, value in changes.items()
            if key in _INTERNAL or key in EDITABLE}


def clash(mid: int) -> str:
    return f"id {mid} already exists in the bank with other content; drop the id to add the memory under a new one"


def _whole(row: dict[str, Any], key: str, low: int, high: int) -> int:
    value = row.get(key, 0)
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value < high:
        raise ValidationError(f"{key} must be a whole number >= 0, got {value!r}")
    return value


class Writer:
    """Adds memories to one bank: checks rows, embeds them and writes them in batches."""

    def __init__(self, core: "Core"):
        self.core = core

    def check_row(self, row: Any, now: datetime) -> dict[str, Any]:
        """A new memory's row, checked and completed with defaults (``now`` dates it)."""
        if not isinstance(row, dict):
            raise ValidationError(f"each memory must be a mapping (dict), got {type(row).__name__}")
        unknown = set(row) - ROW_FIELDS
        if unknown:
            raise ValidationError(f"unknown field(s) {', '.join(sorted(unknown))}; known: {', '.join(sorted(ROW_FIELDS))}")
        text = check_field("text", row.get("text"))
        created = parse_time(row.get("created_at"), "created_at") or now
        out = {
            "text": text,
            "namespace": check_field("namespace", row.get("namespace", "default")),
            "importance": check_field("importance", row.get("importance", DEFAULT_IMPORTANCE)),
            "kind": check_field("kind", row.get("kind", "explicit")),
            "category": check_field("category", row.get("category", "other")),
            "created_at": created,
            "updated_at": parse_time(row.get("updated_at"), "updated_at") or created,
            "last_accessed_at": parse_time(row.get("last_accessed_at"), "last_accessed_at"),
            "status": check_choice(row.get("status", "active"), STATUSES[:-1], "status"),
            "pinned": check_field("pinned", row.get("pinned", False)),
            "source": check_field("source", row.get("source")),
            "content_hash": tables.content_hash(text),
            "language": detect_language(text),
            "superseded_by": row.get("superseded_by"),
            "merged_into": row.get("merged_into"),
            "context": check_context(row.get("context")),
            "access_count": _whole(row, "access_count", 0, 2**63),
            # An export carries how often each memory was used; a merge passes its members' sum.
            "use_count": _whole(row, "use_count", 0, 2**31),
        }
        # Given, or read from the text, category and kind as they are written.
        given = row.get("durability")
        out["durability"] = (check_field("durability", given) if given is not None
                             else infer_durability(text, out["category"], out["kind"],
                                                  out["importance"]).durability)
        for key in ("id", "superseded_by", "merged_into"):
            v = row.get(key)
            if v is not None and (isinstance(v, bool) or not isinstance(v, int) or v < 1 or v >= 2**62):
                raise ValidationError(f"{key} must be a positive whole number, got {v!r}")
        out["id"] = row.get("id")
        model = self.core.model
        if row.get("embedding_model") is not None and canonical_model_name(row["embedding_model"]) != model:
            raise ModelMismatchError(
                f"this memory's embedding comes from {row['embedding_model']!r} but the bank uses "
                f"{model!r}; drop the embedding field to embed it again"
            )
        emb = row.get("embedding")
        if emb is not None:
            try:
                vec = np.asarray(emb, dtype=np.float32)
            except (TypeError, ValueError):
                raise ValidationError("embedding must be a list of numbers") from None
            # A bank without vectors yet takes the dimension its model gives, never the row's.
            dim = self.core.dim if self.core.dim is not None else self.core.embedder.dim
            if vec.ndim != 1 or vec.shape[0] != dim or not np.isfinite(vec).all():
                raise ValidationError(
                    f"embedding must be {dim} finite numbers from {model}; drop it to embed the text again"
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
        on_repeat: Callable[[dict[int, list[dict[str, Any]]]], None] | None = None,
    ) -> list[int]:
        """Store many memories; returns their ids in order.

        With ``on_repeat``, a row (without an id) whose text an active memory of its namespace
        already has, or an earlier row of the same call, is not stored again: its id is that
        memory's, and ``on_repeat({id: [rows that repeat it]})`` is called once the rest is written
        (the façade reinforces them: :meth:`Changes.reinforce_repeats`).

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
                checked.append(self.check_row(row, now))
            except (ValidationError, ModelMismatchError) as exc:
                raise type(exc)(f"row {i + 1}: {exc}") from None
        given = [r["id"] for r in checked if r["id"] is not None]
        if len(given) != len(set(given)):
            raise ValidationError("two rows carry the same id; ids must be unique")
        # Ids already in the bank are decided before anything is embedded or written: the same
        # memory again (skipped when skip_existing) or a clash (refused, nothing written).
        existing = self.existing(given)
        ids: list[int | None] = [None] * len(checked)
        stored, earlier = self.repeats(checked) if on_repeat is not None else ({}, {})
        todo = []
        for i, r in enumerate(checked):
            if i in stored:
                ids[i] = stored[i]
            elif i in earlier:
                continue
            elif r["id"] in existing:
                if not (skip_existing and existing[r["id"]] == r["content_hash"]):
                    raise ValidationError(f"row {i + 1}: {clash(r['id'])}")
                ids[i] = r["id"]
                if report is not None:
                    report.skipped_existing += 1
            else:
                todo.append(i)
        if progress is not None and len(todo) < len(checked):
            progress(len(checked) - len(todo))
        if batch_size is None:
            batch_size = BATCH_EMBED if any("embedding" not in checked[i] for i in todo) else BATCH_VECTORS
        elif isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
            raise ValidationError("batch_size must be a whole number >= 1")
        batches = ([checked[i] for i in todo[start:start + batch_size]] for start in range(0, len(todo), batch_size))
        for i, mid in zip(todo, self.write_stream(batches, progress)):
            ids[i] = mid
        repeated: dict[int, list[dict[str, Any]]] = {}
        for i in sorted({**stored, **earlier}):
            ids[i] = ids[i] if i in stored else ids[earlier[i]]
            repeated.setdefault(int(ids[i]), []).append(checked[i])  # type: ignore[arg-type]
        if repeated and on_repeat is not None:
            on_repeat(repeated)
        if report is not None:
            report.added += len(todo)
            report.ids.extend(int(i) for i in ids)
        return [int(i) for i in ids]

    def repeats(self, checked: list[dict[str, Any]], wanted: list[bool] | None = None, *, con: Any = None
                ) -> tuple[dict[int, int], dict[int, int]]:
        """Which checked rows repeat a memory (same text after normalising whitespace and Unicode:
        the content hash, in the same namespace): ``(position -> id of the active memory it
        repeats, position -> earlier position in the rows it repeats)``. Only rows without an id
        whose ``wanted`` is true (default all) count; an archived, merged or superseded memory is
        not repeated (its text is stored anew). Read on ``con`` (a hold the caller writes in), else
        in a read of its own."""
        def counts(i: int, r: dict[str, Any]) -> bool:  # an archived row is stored as it is, never a repeat
            return r["id"] is None and (wanted is None or wanted[i]) and r.get("status", "active") == "active"

        keys = {(r["namespace"], r["content_hash"]) for i, r in enumerate(checked) if counts(i, r)}
        if not keys:
            return {}, {}
        with contextlib.nullcontext(con) if con is not None else self.core.session(write=False, flush=False) as c:
            found = self._stored_hashes(c, keys)
        stored: dict[int, int] = {}
        earlier: dict[int, int] = {}
        first: dict[tuple[str, str], int] = {}
        for i, r in enumerate(checked):
            if not counts(i, r):
                continue
            key = (r["namespace"], r["content_hash"])
            if key in found:
                stored[i] = found[key]
            elif key in first:
                earlier[i] = first[key]
            else:
                first[key] = i
        return stored, earlier

    def _stored_hashes(self, con: Any, keys: set[tuple[str, str]]) -> dict[tuple[str, str], int]:
        """The lowest id of an active memory per (namespace, content hash) of ``keys``, on ``con``
        after its catch-up: from a namespace's loaded index (its live rows and their hashes, current
        once caught up: a scan of an array), else from the store (a scan of the namespace's rows)."""
        found: dict[tuple[str, str], int] = {}
        unloaded: set[str] = set()
        for ns in {k[0] for k in keys}:
            idx = self.core.indexes.get(ns)
            if idx is None:
                unloaded.add(ns)
                continue
            wanted = np.array(sorted(h for n, h in keys if n == ns), dtype=HASH_DTYPE)
            for r in np.flatnonzero(np.isin(idx.hashes[:len(idx)], wanted)):
                key, mid = (ns, idx.hash_at(int(r))), int(idx.ids[r])
                found[key] = min(mid, found.get(key, mid))
        if unloaded:
            for ns, content_hash, mid in con.execute(
                    "SELECT namespace, content_hash, min(id) FROM memories WHERE status = 'active' "
                    "AND namespace IN (SELECT unnest(?)) AND content_hash IN (SELECT unnest(?)) "
                    "GROUP BY namespace, content_hash",
                    [sorted(unloaded), sorted({h for n, h in keys if n in unloaded})]).fetchall():
                if (ns, content_hash) in keys:
                    found[(ns, content_hash)] = int(mid)
        return found

    def existing(self, ids: list[int]) -> dict[int, str]:
        """Content hashes of the memories that already have these ids."""
        if not ids:
            return {}
        with self.core.session(write=False) as con:
            where, params = tables.ids_in("id", ids)
            return dict(con.execute(f"SELECT id, content_hash FROM memories WHERE {where}", params).fetchall())

    def vectors_for(self, batch: list[dict[str, Any]]) -> np.ndarray:
        """Vectors for checked rows: their own ``embedding`` or the model's (run outside the lock)."""
        need = [i for i, r in enumerate(batch) if "embedding" not in r]
        dim = self.core.embedder.dim if need or self.core.dim is None else self.core.dim
        vectors = np.empty((len(batch), dim), dtype=np.float32)
        if need:
            vectors[need] = self.core.embedder.encode([batch[i]["text"] for i in need])
        for i, r in enumerate(batch):
            if "embedding" in r:
                vectors[i] = r["embedding"]
        return vectors

    def write_stream(self, batches: Iterable[list[dict[str, Any]]], progress: Progress | None = None) -> list[int]:
        """Embed and store batches of checked rows; returns their ids in order.

        The model embeds the next batch (torch releases the GIL) while a writer thread stores
        the last one, so an import runs at the model's pace; at most two batches are in flight,
        so memory stays bounded however many rows stream through. Each batch is one transaction
        and one group of events. Progress is reported from the calling thread (a Streamlit
        progress bar only works there).
        """
        out: list[int] = []
        writer = _BulkWriter(self.core, self)
        with ThreadPoolExecutor(max_workers=1, thread_name_prefix="memory-writer") as pool:
            pending = None
            try:
                for batch in batches:
                    if not batch:
                        continue
                    embeds = any("embedding" not in r for r in batch)
                    vectors = self.vectors_for(batch)
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

    def write(self, con: Any, batch: list[dict[str, Any]], vectors: np.ndarray) -> list[int]:
        """Store checked rows with their vectors in one transaction (one group of "add" events) on
        a held connection, then bring loaded indexes up to date; returns their ids in order."""
        fresh = [i for i, r in enumerate(batch) if r["id"] is None]
        synced = self.core.synced_seq
        wanted = {"next_group_id": 1, "change_seq": 1, "next_id": len(fresh), "next_event_id": len(batch)}
        # A few new rows on a bank file's lease: the counters, the rows and their events in one
        # statement, its own transaction (tables.run_as_one); else one transaction of several.
        one = len(fresh) == len(batch) <= tables.SMALL_INSERT and tables.knows_counters(con, wanted)
        pending: list[tables.Statement] | None = [] if one else None
        with contextlib.nullcontext() if one else con.transaction():
            first = tables.take_counters(con, wanted, pending)
            seq = first["change_seq"] + 1
            ids = self.insert_rows(con, batch, vectors, seq, first["next_group_id"], fresh, first.get("next_id", 0),
                                   first["next_event_id"], pending)
        self.after_insert(batch, vectors, ids, seq)
        if first["change_seq"] == synced:
            # The bank was current when it wrote, and has taken its own write: until its next
            # catch-up (the writes an add makes after this one in its hold advance it too), an
            # add on the same hold of the store need not read the change sequence.
            self.core.mark_current()
        return ids

    def insert_rows(self, con: Any, batch: list[dict[str, Any]], vectors: np.ndarray, seq: int, group: int,
                    fresh: list[int] | None = None, first: int = 0, first_event: int | None = None,
                    pending: list[tables.Statement] | None = None) -> list[int]:
        """Insert checked rows with their "add" events. With ``fresh`` (the positions of rows
        without an id) the caller reserved their ids from ``first`` on and the events' from
        ``first_event`` on; else they are taken here. ``pending``: the statements the caller holds
        back (its counters), run with the inserts as one (:func:`tables.run_as_one`)."""
        self.core.check_vectors(vectors, con)
        if fresh is None:
            fresh = [i for i, r in enumerate(batch) if r["id"] is None]
            first = tables.take_ids(con, "next_id", len(fresh)) if fresh else 0
        ids_out = [r["id"] for r in batch]
        for j, i in enumerate(fresh):
            ids_out[i] = first + j
        n = len(batch)
        if len(fresh) < n and max(ids_out) >= int(tables.meta(con)["next_id"]):  # rows that keep their ids
            tables.set_meta(con, "next_id", str(max(ids_out) + 1))
        cols: dict[str, list] = {}
        converted: dict[datetime, datetime] = {}  # an import's rows mostly share their times

        def naive(value: datetime | None) -> datetime | None:
            if value is None:
                return None
            out = converted.get(value)
            if out is None:
                out = converted[value] = rowmod.naive(value)
            return out

        for c in tables.MEMORY_COLUMNS:
            if c == "id":
                cols[c] = ids_out
            elif c == "seq":
                cols[c] = [seq] * n
            elif c == "embedding_model":
                cols[c] = [self.core.model] * n
            elif c in rowmod.TIME_COLUMNS:
                cols[c] = [naive(r[c]) for r in batch]
            else:
                cols[c] = [r[c] for r in batch]
        try:
            tables.insert_memories(con, cols, vectors, log=(self.core.actor, utcnow(), group), first_event=first_event,
                                   pending=pending)
            if pending is not None:
                tables.run_as_one(con, pending)
        except IntegrityError:
            # Another process took one of these ids since we checked.
            raise ValidationError("an id in this batch was just taken by another writer; import again") from None
        self.core.dim = vectors.shape[1]
        return [int(i) for i in ids_out]

    def reembed(self, model: str | None = None, progress: Progress | None = None, batch_size: int = 2048) -> int:
        """Embed every stored memory again with ``model`` (default: the bank's own) and make it the
        bank's model. Returns the number of memories embedded."""
        target = canonical_model_name(model) if model is not None else self.core.model
        embedder = get_embedder(target)
        with self.core.session(write=False) as con:
            ids_texts = con.execute("SELECT id, text FROM memories WHERE text IS NOT NULL ORDER BY id").fetchall()
        vectors = []
        for start in range(0, len(ids_texts), batch_size):
            chunk = ids_texts[start:start + batch_size]
            vectors.append(embedder.encode([t for _, t in chunk]))
            if progress:
                progress(len(chunk))
        with self.core.lock:  # the transaction and the caches taking it, as one step
            with self.core.session() as con:
                # Memories added or edited by others while the model ran are embedded here too.
                now_there = con.execute("SELECT id, text FROM memories WHERE text IS NOT NULL ORDER BY id").fetchall()
                if now_there != ids_texts:
                    done = {i: (t, v) for (i, t), v in zip(ids_texts, np.concatenate(vectors) if vectors else [])}
                    redo = [(i, t) for i, t in now_there if i not in done or done[i][0] != t]
                    fresh = dict(zip((i for i, _ in redo), embedder.encode([t for _, t in redo]))) if redo else {}
                    ids_texts = now_there
                    vectors = [np.array([fresh[i] if i in fresh else done[i][1] for i, _ in now_there],
                                        dtype=np.float32).reshape(len(now_there), embedder.dim)]
                seq = tables.next_seq(con)
                if ids_texts:
                    allv = np.concatenate(vectors)
                    flat = pa.array(allv.reshape(-1))
                    offsets = pa.array(np.arange(0, len(ids_texts) + 1, dtype=np.int32) * allv.shape[1])
                    vecs = pa.table({"id": [i for i, _ in ids_texts], "embedding": pa.ListArray.from_arrays(offsets, flat)})
                    with con.registered(_vecs=vecs):
                        con.execute("UPDATE memories SET embedding = _vecs.embedding, embedding_model = ?, seq = ? "
                                    "FROM _vecs WHERE memories.id = _vecs.id", [target, seq])
                old = self.core.model
                tables.set_meta(con, "embedding_model", target)
                tables.set_meta(con, "embedding_dim", str(embedder.dim))
                tables.log_event(con, self.core.actor, "reembed", None, {"model": old}, {"model": target,
                                "count": len(ids_texts)}, utcnow())
            self.core.use_model(target, embedder.dim, embedder)
            self.core.advance(seq)
        shutil.rmtree(self.core.index_folder, ignore_errors=True)
        return len(ids_texts)

    def after_insert(self, batch: list[dict[str, Any]], vectors: np.ndarray, ids: list[int], seq: int) -> None:
        """Bring loaded indexes up to date with rows this bank just inserted (no read back).
        New memories are in no conflict yet: the acknowledged pairs recall keeps stay as they are
        (the session's catch-up dropped them if another process changed the bank)."""
        self.core.advance(seq)
        self.core.forget_cached(ids)
        self.core.indexes.add_inserted(batch, vectors, ids, self.core.model, seq)
        if len(batch) <= FRESH_CACHED:  # a few adds: what they return is read from here, not the store
            for row, mid in zip(batch, ids):
                self.core.memories[mid] = rowmod.memory_from_row({**row, "id": mid, "embedding_model": self.core.model})


class _BulkWriter:
    """Writes batches of checked rows for :meth:`Writer.write_stream`, one transaction each.

    Closing a connection checkpoints the file, which costs more than writing a batch; so batches
    that arrive back to back (rows carrying their vectors) share one connection, held at most
    ``hold`` seconds before the file is let go for ``gap`` seconds for other processes, while a
    batch the model embedded lets go at once (the next one takes seconds to embed, the file must not wait on it).
    """

    def __init__(self, core: "Core", writer: Writer, hold: float = 1.0, gap: float = 0.03):
        self.core = core
        self.writer = writer
        self.hold = hold
        self.gap = gap
        self._stack: contextlib.ExitStack | None = None
        self._con: Any = None
        self._since = 0.0

    def write(self, batch: list[dict[str, Any]], vectors: np.ndarray, release: bool) -> list[int]:
        core = self.core
        if self._con is None:
            core.check_open()
            core.check_writable()
            stack = contextlib.ExitStack()
            stack.enter_context(core.lock)
            try:
                core.wait_for_flush()
                self._con = stack.enter_context(core.store.hold())
                core.catch_up(self._con)
            except BaseException:
                self._con = None
                stack.close()
                raise
            self._stack = stack
            self._since = time.monotonic()
        try:
            ids = self.writer.write(self._con, batch, vectors)
        except BaseException:
            self.release()
            raise
        if release:
            self.release()
        elif time.monotonic() - self._since > self.hold:
            self.release()
            # Another process waiting for the file blocks on <bank>.lock and is woken the moment
            # it is let go; leave it a moment to take it, or a long import could hold the file for
            # good by reopening at once. The gap's cost to an import: see BENCHMARKS.md, "Figures behind the code".
            time.sleep(self.gap)
        return ids

    def release(self) -> None:
        """Let go of the file (and the bank's lock), if held."""
        if self._stack is not None:
            stack, self._stack, self._con = self._stack, None, None
            stack.close()
            self.core.signature = self.core.store.signature_after(self.core.synced_seq)
