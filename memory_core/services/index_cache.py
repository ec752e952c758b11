"""The bank's namespace indexes in memory: loaded on first use, kept up to date, saved to disk.

Each namespace's :class:`~memory_core.index.NamespaceIndex` is derived from the store: built from
it, or loaded from the cache folder next to the bank and reconciled with it (by change sequence
and content hash). The cache folder is optional: a stale or unwritable one costs a rebuild.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Iterator

import numpy as np

from . import rows as rowmod
from ..index import HASH_DTYPE, NamespaceIndex, memory_tokens, namespace_key
from ..storage import tables

Progress = Callable[[int], None]
SAVE_EVERY = 1000  # index changes before a long-lived bank saves its index cache unasked


class IndexCache:
    """Loaded namespace indexes by namespace, and the folder their saved copies live in."""

    def __init__(self, folder: Path, read_only: bool):
        self.folder = folder
        self.read_only = read_only
        self._indexes: dict[str, NamespaceIndex] = {}

    def get(self, namespace: str) -> NamespaceIndex | None:
        return self._indexes.get(namespace)

    def __contains__(self, namespace: str) -> bool:
        return namespace in self._indexes

    def __getitem__(self, namespace: str) -> NamespaceIndex:
        return self._indexes[namespace]

    def __len__(self) -> int:
        return len(self._indexes)

    def __iter__(self) -> Iterator[str]:
        return iter(self._indexes)

    def items(self) -> Any:
        return self._indexes.items()

    def values(self) -> Any:
        return self._indexes.values()

    def clear(self) -> None:
        self._indexes.clear()

    def advance(self, seq: int) -> None:
        """Every loaded index is current up to change ``seq``."""
        for idx in self._indexes.values():
            idx.seq = seq

    def remove(self, mid: int) -> None:
        """Drop a memory from whichever index holds it."""
        for idx in self._indexes.values():
            idx.remove(mid)

    def load(self, con: Any, namespace: str, model: str, dim: int | None,
             progress: Progress | None = None) -> NamespaceIndex | None:
        """The loaded index of ``namespace`` (loading, reconciling or building it), or None when
        the bank has no vectors yet."""
        idx = self._indexes.get(namespace)
        if idx is not None:
            return idx
        if dim is None:
            return None
        spill = None if self.read_only else self.folder
        cached = NamespaceIndex.load(self.folder, namespace, model, dim, spill_dir=spill)
        seq_now = tables.change_seq(con)
        if cached is not None and cached.fields_saved and self._catch_up(con, cached, dim, seq_now):
            if progress:
                progress(cached.n)
            return self._loaded(cached, seq_now, model)
        live = None
        if cached is not None:
            with con.scanning():
                live = con.arrow(f"SELECT id, seq, importance, access_count, use_count, content_hash, {rowmod.INFO_SQL} "
                                 "FROM memories WHERE namespace = ? AND status = 'active'", [namespace])
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
                self._fill(con, cached, dim, "namespace = ? AND status = 'active' AND id IN (SELECT unnest(?))",
                           [namespace, stale_ids])
            idx = cached
            if progress and not rebuild:
                progress(idx.n)
        if rebuild:
            idx = NamespaceIndex(namespace, dim)
            idx.spill_dir = spill
            self._fill(con, idx, dim, "namespace = ? AND status = 'active'", [namespace], progress)
        else:  # a rebuild read these fields in this same transaction already
            rows = idx.rows_of(live.column("id").to_numpy())
            idx.set_fields_many(rows, rowmod.timestamps(live.column("created_at")),
                                rowmod.timestamps(live.column("last_accessed_at")),
                                rowmod.floats(live.column("importance")), rowmod.floats(live.column("access_count")),
                                rowmod.floats(live.column("use_count")), live.column("seq").to_numpy())
            idx.set_infos(live.select(list(rowmod.INFO_COLUMNS)).take(np.argsort(rows)))
            idx.changes_since_save += 1  # save the fields it lacked, so the next load need not read them all
        return self._loaded(idx, seq_now, model, save=rebuild)

    def _loaded(self, idx: NamespaceIndex, seq: int, model: str, save: bool = False) -> NamespaceIndex:
        """Keep ``idx`` as its namespace's loaded index, current up to change ``seq``."""
        idx.seq = seq
        self._indexes[idx.namespace] = idx
        if save or idx.changes_since_save:
            self.save(idx, model)
        return idx

    def _catch_up(self, con: Any, idx: NamespaceIndex, dim: int, seq_now: int) -> bool:
        """Bring a saved index that kept its rows' fields up to date without reading every row:
        when the store's rows unchanged since the index was saved (change sequence up to
        ``idx.seq``) add up to the same :func:`fingerprint` as the index's rows for them, take
        the rows changed since (as a loaded index catches up) and say True. False (nothing
        changed) when they do not: another bank, a restored older copy, a row changed in a way
        the sequence does not show; the caller then checks every row."""
        saved = idx.seq
        if seq_now < saved:  # the store is behind the index: not the bank the index was saved from
            return False
        theirs, changed = store_fingerprint(con, idx.namespace, saved)
        changed += [r[0] for r in con.execute("SELECT id FROM removed_memories WHERE seq > ?", [saved]).fetchall()]
        ids = idx.ids[: idx.n]
        same = ~np.isin(ids, np.asarray(changed, dtype=np.int64))
        if theirs != fingerprint(idx, same):
            return False
        for mid in ids[~same].tolist():
            idx.remove(mid)
        if changed:
            self._fill(con, idx, dim, "namespace = ? AND status = 'active' AND seq > ?", [idx.namespace, saved])
        return True

    def _fill(self, con: Any, idx: NamespaceIndex, dim: int, where: str, params: list[Any],
              progress: Progress | None = None) -> None:
        """Add the store's rows matching ``where`` (live memories of the index's namespace) to the
        index, streamed in batches: a million memories never sit in memory twice."""
        total = con.execute(f"SELECT count(*) FROM memories WHERE {where}", params).fetchone()[0]
        idx.reserve(idx.n + total)
        for rows in tables.stream_rows(con, where, params, with_embedding=True):
            texts, contexts = rows.column("text").to_pylist(), rows.column("context").to_pylist()
            idx.add_many(
                rows.column("id").to_numpy(), tables.embeddings_of(rows, dim),
                (memory_tokens(t, c) for t, c in zip(texts, contexts)),
                rows.column("content_hash").to_numpy(zero_copy_only=False).astype(HASH_DTYPE),
                rowmod.timestamps(rows.column("created_at")), rowmod.timestamps(rows.column("last_accessed_at")),
                rowmod.floats(rows.column("importance")), rowmod.floats(rows.column("access_count")),
                # A copy (take): the batch's buffers come from DuckDB as one allocation, and a
                # column kept from it keeps the whole batch alive, vectors and all.
                rows.select(list(rowmod.INFO_COLUMNS)).take(np.arange(rows.num_rows)),
                use_count=rowmod.floats(rows.column("use_count")), seqs=rows.column("seq").to_numpy(),
            )
            if progress:
                progress(rows.num_rows)
        idx.info.finish_loading()

    def save(self, idx: NamespaceIndex, model: str) -> None:
        """Write one index to the cache folder (never fails: the cache is optional)."""
        try:
            idx.save(self.folder, model)
        except OSError:
            pass  # an unwritable folder costs a rebuild next time, nothing more

    def save_side(self, idx: NamespaceIndex) -> None:
        """Write the side structures recall built since the index was saved (never fails)."""
        try:
            idx.save_side(self.folder)
        except OSError:
            pass

    def save_due(self, model: str, every: int = SAVE_EVERY) -> None:
        """Save the indexes that changed ``every`` times or more since they were last saved."""
        for idx in self._indexes.values():
            if idx.changes_since_save >= every:
                self.save(idx, model)

    def drop_files(self, namespace: str) -> None:
        """Remove a namespace's saved files (they may hold words of erased memories)."""
        for f in self.folder.glob(namespace_key(namespace) + ".*"):
            f.unlink(missing_ok=True)

    def apply_rows(self, rows: Any, dim: int | None) -> None:
        """Bring loaded namespace indexes in line with these store rows (an Arrow table)."""
        if rows.num_rows == 0:
            return
        # Vectors stay in Arrow (read by embeddings_of): as Python lists they take many times the
        # memory (see BENCHMARKS.md, "Figures behind the code").
        cols = rowmod.columns(rows)
        vectors = None
        for i, mid in enumerate(cols["id"]):
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
            fields = (rowmod.ts(cols["created_at"][i]), rowmod.ts(cols["last_accessed_at"][i]),
                      float(cols["importance"][i]), float(cols["access_count"][i]))
            uses, seq = float(cols["use_count"][i]), int(cols["seq"][i])
            r = idx.row_of.get(mid)
            if r is not None and idx.hash_at(r) == cols["content_hash"][i]:
                idx.set_fields(mid, *fields, uses, seq)
                idx.set_info(mid, rowmod.info(cols, i))
            else:
                if vectors is None:
                    vectors = tables.embeddings_of(rows, dim)
                idx.upsert(mid, vectors[i], memory_tokens(cols["text"][i], cols["context"][i]),
                           cols["content_hash"][i], *fields, info=rowmod.info(cols, i), use_count=uses, seq=seq)

    def add_inserted(self, batch: list[dict[str, Any]], vectors: np.ndarray, ids: list[int], model: str,
                     seq: int) -> None:
        """Add rows the bank just inserted (checked rows, as stored, at change ``seq``) to the
        loaded indexes of their namespaces, without reading them back."""
        by_ns: dict[str, list[int]] = {}
        for j, r in enumerate(batch):
            if r["status"] == "active" and r["namespace"] in self._indexes:
                by_ns.setdefault(r["namespace"], []).append(j)
        for ns, js in by_ns.items():
            idx = self._indexes[ns]
            rows = [batch[j] for j in js]
            idx.add_many(
                np.asarray([ids[j] for j in js], dtype=np.int64), vectors[js],
                [memory_tokens(r["text"], r.get("context")) for r in rows],
                [r["content_hash"] for r in rows], np.array([rowmod.ts(r["created_at"]) for r in rows]),
                np.array([rowmod.ts(r["last_accessed_at"]) for r in rows]),
                np.array([r["importance"] for r in rows], dtype=np.float64),
                np.array([r["access_count"] for r in rows], dtype=np.float64),
                # A hit's Memory is built from these: without them, each new memory's first recall
                # read it back from the file (an open of the file for a handful of memories).
                infos=[_inserted_info(r, model) for r in rows],
                use_count=np.array([r["use_count"] for r in rows], dtype=np.float64), seqs=seq,
            )
            if idx.changes_since_save >= SAVE_EVERY:
                self.save(idx, model)


def _inserted_info(row: dict[str, Any], model: str) -> tuple:
    """The index's info fields (INFO_COLUMNS) of a checked row as the insert stored it."""
    stored = {**row, "embedding_model": model, **{c: rowmod.naive(row[c]) for c in rowmod.TIME_COLUMNS}}
    return tuple(stored[c] for c in rowmod.INFO_COLUMNS)


# -- a saved index against the store, without reading every row --------------------------------------

# The fingerprint of a set of live memories: how many, and sums of their ids, change sequences,
# access and use counts (what a recall changes) and of the first 56 bits of their content hashes.
# The store adds it up in SQL, the index in numpy; equal sums over the rows unchanged since an
# index was saved say the index holds those rows as the store does (another bank's rows, an
# older copy's or an edit the sequence did not record would change at least one sum).
# One piece of 14 hex digits: PostgreSQL parses a piece of text as bits per row, and one parse
# costs what one of the two 28-bit pieces it replaces did (0.17 s per 200,000 rows).
_HASH_DIGITS = 14


def store_fingerprint(con: Any, namespace: str, seq: int) -> tuple[tuple[int, ...], list[int]]:
    """The :func:`fingerprint` of the live memories of ``namespace`` last changed at or before
    ``seq``, and the ids of every memory changed after it (in any namespace): one scan."""
    sums = [f"sum({c}) FILTER (WHERE same)" for c in ("id", "seq", "access_count", "use_count")]
    sums.append(f"sum({con.dialect.hex_int('content_hash', 1, _HASH_DIGITS)}) FILTER (WHERE same)")
    row = con.execute(
        f"SELECT count(*) FILTER (WHERE same), {', '.join(f'coalesce({s}, 0)' for s in sums)}, "
        "array_agg(id) FILTER (WHERE seq > ?) FROM (SELECT id, seq, access_count, use_count, content_hash, "
        "(namespace = ? AND status = 'active' AND seq <= ?) AS same FROM memories "
        "WHERE namespace = ? OR seq > ?) AS m",  # other namespaces' rows unchanged since: nothing to say
        [seq, namespace, seq, namespace, seq]).fetchone()
    return tuple(int(v) for v in row[:-1]), [int(i) for i in row[-1] or ()]


_HEX = np.zeros(256, dtype=np.int64)
_HEX[np.frombuffer(b"0123456789abcdef", dtype=np.uint8)] = np.arange(16)
_HEX[np.frombuffer(b"ABCDEF", dtype=np.uint8)] = np.arange(10, 16)


def fingerprint(idx: NamespaceIndex, rows: np.ndarray) -> tuple[int, ...]:
    """The fingerprint of the index's rows where the boolean mask ``rows`` is set (see
    :func:`store_fingerprint`)."""
    n = idx.n
    # Only the digits summed, looked up one column at a time (every digit of every hash as int64
    # was slow and large, see BENCHMARKS.md, "Figures behind the code"). Two halves of 28 bits each: their sums fit
    # int64.
    digits = idx.hashes[:n].view(np.uint8).reshape(n, -1)[:, :_HASH_DIGITS][rows]
    half = _HASH_DIGITS // 2
    sums = []
    for cols in (range(half), range(half, _HASH_DIGITS)):
        value = np.zeros(len(digits), dtype=np.int64)
        for c in cols:
            value <<= 4
            value |= _HEX[digits[:, c]]
        sums.append(int(value.sum()))
    return (int(rows.sum()), int(idx.ids[:n][rows].sum()), int(idx.seqs[:n][rows].sum()),
            int(idx.access_count[:n][rows].astype(np.int64).sum()),
            int(idx.use_count[:n][rows].astype(np.int64).sum()), (sums[0] << (4 * (_HASH_DIGITS - half))) + sums[1])
