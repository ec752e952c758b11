"""Store rows as the library's objects: a row becomes a :class:`Memory`, an index row's fields.

The store hands out Arrow tables and dicts with naive UTC times; everything above it works with
:class:`Memory` and aware datetimes. The conversions live here, once, so the write path, the
index cache and the queries agree on them.
"""

from __future__ import annotations

import math
from datetime import datetime, timezone
from typing import Any, Iterable

import numpy as np
import pyarrow as pa

from ..storage.clock import to_aware, to_naive_utc
from ..index import NamespaceIndex
from ..models import Memory

# What a Memory needs beyond the index's arrays, kept per row so recall never opens the file for it.
INFO_COLUMNS = ("text", "kind", "category", "created_at", "updated_at", "last_accessed_at", "pinned", "source",
                "embedding_model", "superseded_by", "merged_into", "context", "durability")
INFO_SQL = ", ".join(INFO_COLUMNS)  # fixed column names, never input
TIME_COLUMNS = ("created_at", "updated_at", "last_accessed_at")  # stored as naive UTC (None stays None)


def columns(rows: Any) -> dict[str, list]:
    """An Arrow table's columns as Python lists, all but the embedding."""
    if "embedding" in rows.column_names:
        rows = rows.drop_columns(["embedding"])
    return rows.to_pydict()


def info(cols: dict[str, list], i: int) -> tuple:
    """Row ``i``'s :data:`INFO_COLUMNS`, as the index keeps them."""
    return tuple(cols[c][i] for c in INFO_COLUMNS)


def naive(value: datetime | None) -> datetime | None:
    return None if value is None else to_naive_utc(value)


def ts(value: datetime | None) -> float:
    """A stored (naive UTC) time as seconds since the epoch; NaN for none."""
    return math.nan if value is None else value.replace(tzinfo=timezone.utc).timestamp()


_PER_SECOND = {"s": 1, "ms": 1_000, "us": 1_000_000, "ns": 1_000_000_000}


def timestamps(column: Any) -> np.ndarray:
    """An Arrow timestamp column as :func:`ts` gives each value (seconds; NaN for null), without
    a datetime per row: microseconds / 1e6 is the same float ``datetime.timestamp`` computes.
    Read from the column's buffers: Arrow's cast and temporal conversion import pyarrow.compute
    and pandas, half a second of a cold ``memctl stats``."""
    chunks = column.chunks if hasattr(column, "chunks") else [column]
    if not chunks:
        return np.zeros(0, dtype=np.float64)
    per_second = _PER_SECOND[column.type.unit]
    parts = []
    for chunk in chunks:
        validity, data = chunk.buffers()[:2]
        n, at = len(chunk), chunk.offset
        ticks = np.frombuffer(data, dtype=np.int64, count=at + n)[at:] if n else np.zeros(0, dtype=np.int64)
        micros = ticks // 1_000 if per_second > 1_000_000 else ticks * (1_000_000 // per_second)
        seconds = micros.astype(np.float64) / 1e6
        if chunk.null_count:
            bits = np.unpackbits(np.frombuffer(validity, dtype=np.uint8), bitorder="little")[at:at + n]
            seconds[bits == 0] = np.nan
        parts.append(seconds)
    return np.concatenate(parts)


def floats(column: Any) -> np.ndarray:
    return np.asarray(column.to_numpy(zero_copy_only=False), dtype=np.float64)


def memory_from_row(row: dict[str, Any]) -> Memory:
    """A store row (a dict of the memories table's columns) as a Memory."""
    return Memory(
        id=int(row["id"]), text=row["text"], namespace=row["namespace"], kind=row["kind"],
        category=row["category"], importance=float(row["importance"]),
        created_at=to_aware(row["created_at"]), updated_at=to_aware(row["updated_at"]),
        last_accessed_at=to_aware(row["last_accessed_at"]), access_count=int(row["access_count"]),
        status=row["status"], pinned=bool(row["pinned"]), source=row["source"],
        content_hash=row["content_hash"], embedding_model=row["embedding_model"],
        superseded_by=row["superseded_by"], merged_into=row["merged_into"], context=row.get("context"),
        use_count=int(row.get("use_count") or 0), durability=row.get("durability") or "durable",
    )


def memory_from_index(idx: NamespaceIndex, r: int) -> Memory | None:
    """Row ``r`` of a loaded index as a Memory (None when the index keeps no info for it)."""
    row_info = idx.info[r]
    if row_info is None:
        return None
    (text, kind, category, created, updated, last, pinned, source, model, superseded_by, merged_into, context,
     durability) = row_info
    return Memory(
        id=int(idx.ids[r]), text=text, namespace=idx.namespace, kind=kind, category=category,
        importance=float(idx.importance[r]), created_at=to_aware(created), updated_at=to_aware(updated),
        last_accessed_at=to_aware(last), access_count=int(idx.access_count[r]), status="active",
        pinned=bool(pinned), source=source, content_hash=idx.hash_at(r), embedding_model=model,
        superseded_by=superseded_by, merged_into=merged_into, context=context, use_count=int(idx.use_count[r]),
        durability=durability or "durable",
    )


def snapshot(m: Memory, fields: Iterable[str] | None = None) -> dict[str, Any]:
    """A memory as an event records it (all fields, or only ``fields``)."""
    d = m.to_dict()
    return d if fields is None else {k: d[k] for k in fields}
