"""The DuckDB file that holds everything: schema, migrations, connections and queries.

The store is the source of truth. Indexes are caches rebuilt from it. Every write happens in
one transaction on a connection that is opened for that operation and closed after it, so
another process (the dashboard, another agent) can take the file in between; while someone
else holds it we retry with backoff up to a bounded wait.

Times are stored as naive UTC ``TIMESTAMP`` values and handed out as aware UTC datetimes.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import random
import time
import unicodedata
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Iterator

import duckdb
import numpy as np
import pyarrow as pa

from .errors import BankLockedError, BankReadOnlyError, CorruptBankError

SCHEMA_VERSION = 2

MEMORY_COLUMNS = (
    "id", "namespace", "text", "kind", "category", "importance", "created_at", "updated_at",
    "last_accessed_at", "access_count", "status", "pinned", "source", "content_hash",
    "embedding_model", "superseded_by", "merged_into", "seq",
)

_TIME_COLUMNS = ("created_at", "updated_at", "last_accessed_at")
# The memory as an "add" event records it (the fields a caller gave, in this order, and its id).
_ADD_EVENT_FIELDS = ("text", "namespace", "importance", "kind", "category", "created_at", "updated_at",
                     "last_accessed_at", "status", "pinned", "source", "content_hash", "superseded_by",
                     "merged_into", "access_count", "id")

_MIGRATIONS: dict[int, list[str]] = {
    1: [
        "CREATE TABLE meta (key VARCHAR PRIMARY KEY, value VARCHAR)",
        """CREATE TABLE memories (
            id BIGINT PRIMARY KEY,
            namespace VARCHAR NOT NULL,
            text VARCHAR,                 -- NULL once hard-deleted
            kind VARCHAR NOT NULL,
            category VARCHAR NOT NULL,
            importance DOUBLE NOT NULL,
            created_at TIMESTAMP NOT NULL,
            updated_at TIMESTAMP NOT NULL,
            last_accessed_at TIMESTAMP,
            access_count BIGINT NOT NULL,
            status VARCHAR NOT NULL,
            pinned BOOLEAN NOT NULL,
            source VARCHAR,
            content_hash VARCHAR NOT NULL,
            embedding FLOAT[],            -- NULL once hard-deleted
            embedding_model VARCHAR,
            superseded_by BIGINT,
            merged_into BIGINT,
            seq BIGINT NOT NULL           -- change sequence of the row's last change
        )""",
        """CREATE TABLE events (
            id BIGINT PRIMARY KEY, happened_at TIMESTAMP NOT NULL, actor VARCHAR NOT NULL,
            action VARCHAR NOT NULL, memory_id BIGINT, before VARCHAR, after VARCHAR,
            note VARCHAR
        )""",
        """CREATE TABLE retrievals (
            id BIGINT PRIMARY KEY, recalled_at TIMESTAMP NOT NULL, actor VARCHAR, namespace VARCHAR NOT NULL,
            query VARCHAR, params VARCHAR, preset VARCHAR, gate VARCHAR, recalled BOOLEAN NOT NULL,
            latency_ms DOUBLE, n_results INTEGER NOT NULL
        )""",
        """CREATE TABLE retrieval_hits (
            retrieval_id BIGINT NOT NULL, rank INTEGER NOT NULL, memory_id BIGINT NOT NULL,
            score DOUBLE, similarity DOUBLE, lexical DOUBLE, recency DOUBLE,
            importance DOUBLE, frequency DOUBLE
        )""",
        """CREATE TABLE presets (
            name VARCHAR PRIMARY KEY, params VARCHAR NOT NULL, description VARCHAR,
            created_at TIMESTAMP NOT NULL, updated_at TIMESTAMP NOT NULL
        )""",
        "CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, applied_at TIMESTAMP NOT NULL)",
    ],
    # Curation: operations that change several memories at once are undone as a whole (group_id);
    # contradictions, merges and maintenance runs are recorded.
    2: [
        "ALTER TABLE events ADD COLUMN group_id BIGINT",
        "ALTER TABLE events ADD COLUMN undone_by BIGINT",
        """CREATE TABLE conflicts (
            id BIGINT PRIMARY KEY, namespace VARCHAR NOT NULL, a_id BIGINT NOT NULL, b_id BIGINT NOT NULL,
            kind VARCHAR, evidence VARCHAR, confidence DOUBLE, suggestion VARCHAR, path VARCHAR,
            status VARCHAR NOT NULL,      -- open, resolved, acknowledged, dismissed
            resolution VARCHAR, detected_at TIMESTAMP NOT NULL, resolved_at TIMESTAMP, resolved_by VARCHAR,
            group_id BIGINT               -- the operation that resolved it (undo reverses that group)
        )""",
        # Rows removed outright (undoing a merge removes the merged memory): other processes drop
        # them from their indexes by change sequence, as they do for changed rows.
        "CREATE TABLE removed_memories (id BIGINT NOT NULL, namespace VARCHAR NOT NULL, seq BIGINT NOT NULL)",
        """CREATE TABLE merges (
            id BIGINT PRIMARY KEY, namespace VARCHAR NOT NULL, merged_id BIGINT NOT NULL,
            member_ids BIGINT[] NOT NULL, path VARCHAR, detail VARCHAR, group_id BIGINT NOT NULL,
            created_at TIMESTAMP NOT NULL, undone_at TIMESTAMP
        )""",
        """CREATE TABLE maintenance_runs (
            id BIGINT PRIMARY KEY, started_at TIMESTAMP NOT NULL, finished_at TIMESTAMP, actor VARCHAR,
            dry_run BOOLEAN NOT NULL, plan VARCHAR, report VARCHAR
        )""",
        "INSERT INTO meta VALUES ('next_group_id', '1'), ('next_conflict_id', '1'), ('next_merge_id', '1'), "
        "('next_run_id', '1')",
    ],
}


def utcnow() -> datetime:
    return datetime.now(timezone.utc)


def to_naive_utc(value: datetime) -> datetime:
    """The naive UTC datetime DuckDB stores for an aware or naive (taken as UTC) datetime."""
    if value.tzinfo is not None:
        value = value.astimezone(timezone.utc).replace(tzinfo=None)
    return value


def to_aware(value: datetime | None) -> datetime | None:
    """An aware UTC datetime for a stored naive one."""
    if value is None:
        return None
    return value.replace(tzinfo=timezone.utc)


def content_hash(text: str) -> str:
    """SHA-256 of the NFC-normalized, whitespace-collapsed text: equal for exact duplicates."""
    norm = " ".join(unicodedata.normalize("NFC", text).split())
    return hashlib.sha256(norm.encode("utf-8")).hexdigest()


@dataclass
class FileSignature:
    """Size and modification time of the database and its WAL: unchanged means nobody wrote."""

    parts: tuple

    @classmethod
    def of(cls, path: Path) -> "FileSignature":
        parts = []
        for p in (path, Path(str(path) + ".wal")):
            try:
                st = p.stat()
                parts.append((st.st_size, st.st_mtime_ns))
            except FileNotFoundError:
                parts.append(None)
        return cls(tuple(parts))


class Connection:
    """A DuckDB connection on which every statement starts clean.

    DuckDB refuses a new statement while an earlier result is unfinished (``fetchone`` leaves
    it so); finishing it first lets callers read one row and move on.
    """

    def __init__(self, con: Connection):
        self._con = con

    def execute(self, sql: str, params: Any = None) -> duckdb.DuckDBPyConnection:
        self._con.complete()
        return self._con.execute(sql, params)

    def executemany(self, sql: str, params: Any) -> duckdb.DuckDBPyConnection:
        self._con.complete()
        return self._con.executemany(sql, params)

    def sql(self, sql: str, params: Any = None) -> duckdb.DuckDBPyRelation:
        self._con.complete()
        return self._con.sql(sql, params=params)

    def register(self, name: str, table: Any) -> None:
        self._con.complete()
        self._con.register(name, table)

    def unregister(self, name: str) -> None:
        self._con.complete()
        self._con.unregister(name)


class Store:
    """One DuckDB bank file. Open a connection per operation with :meth:`connect`."""

    def __init__(self, path: str | os.PathLike, lock_timeout: float = 10.0, read_only: bool = False):
        self.path = Path(path)
        self.lock_timeout = lock_timeout
        self.read_only = read_only
        self.lock_waits: list[float] = []  # seconds waited for the file, per operation that waited

    # -- connections -------------------------------------------------------------------------

    def _open(self) -> duckdb.DuckDBPyConnection:
        deadline = time.monotonic() + self.lock_timeout
        delay = 0.005
        started = time.monotonic()
        waited = False
        while True:
            try:
                con = duckdb.connect(str(self.path), read_only=self.read_only)
                if waited:
                    self.lock_waits.append(time.monotonic() - started)
                return con
            except duckdb.Error as exc:
                msg = str(exc)
                lowered = msg.lower()
                if "lock" in lowered and "conflicting" in lowered or "could not set lock" in lowered:
                    if time.monotonic() >= deadline:
                        raise BankLockedError(
                            f"the bank {self.path} is held by another process for more than "
                            f"{self.lock_timeout:g} s ({msg.splitlines()[0]}); wait for it to finish, "
                            "or open the bank with a longer lock_timeout"
                        ) from None
                    waited = True
                    time.sleep(delay * (0.5 + random.random()))
                    delay = min(delay * 2, 0.2)
                    continue
                if "permission denied" in lowered or "read-only" in lowered or "readonly" in lowered:
                    raise BankReadOnlyError(
                        f"cannot write the bank {self.path}: {msg.splitlines()[0]}. Make the file and "
                        "its folder writable, or open it with read_only=True"
                    ) from None
                if not self.path.exists() and self.read_only:
                    raise CorruptBankError(f"there is no bank at {self.path}") from None
                raise CorruptBankError(
                    f"cannot open the bank {self.path}: {msg.splitlines()[0]}. The file is damaged or "
                    "is not a Memory Console bank; put back a backup copy of the file, or point at "
                    "another bank"
                ) from None

    @contextlib.contextmanager
    def connect(self, write: bool = True) -> Iterator[Connection]:
        """A connection inside one transaction: committed on success, rolled back on error."""
        raw = self._open()
        con = Connection(raw)
        try:
            if write and not self.read_only:
                con.execute("BEGIN TRANSACTION")
                try:
                    yield con
                except BaseException:
                    con.execute("ROLLBACK")
                    raise
                con.execute("COMMIT")
            else:
                yield con
        finally:
            raw.close()

    @contextlib.contextmanager
    def hold(self) -> Iterator[Connection]:
        """A connection without a transaction, for a caller that commits several in a row.

        Closing a DuckDB connection checkpoints the file (a cost that grows with the bank), so a
        bulk import writes several back-to-back batches, each its own transaction, on one
        connection held for a bounded time, instead of one connection per batch.
        """
        raw = self._open()
        try:
            yield Connection(raw)
        finally:
            raw.close()

    def compact(self) -> None:
        """Rewrite the file from its live contents, so erased data leaves no trace in free blocks.

        DuckDB reuses freed blocks but does not wipe them; a hard delete must not leave the text
        readable in the file. The copy replaces the file while we still hold its lock, so a
        process waiting for the bank opens the new file when it retries.
        """
        raw = self._open()
        tmp = self.path.with_name(f".{self.path.name}.compact.{os.getpid()}")
        try:
            raw.execute("FORCE CHECKPOINT").fetchall()
            name = raw.execute("SELECT current_database()").fetchone()[0]
            raw.complete()
            tmp.unlink(missing_ok=True)
            raw.execute(f"ATTACH '{tmp}' AS compacted").fetchall()
            raw.execute(f'COPY FROM DATABASE "{name}" TO compacted').fetchall()
            raw.execute("DETACH compacted").fetchall()
            os.replace(tmp, self.path)
        finally:
            raw.close()
            tmp.unlink(missing_ok=True)
            Path(str(tmp) + ".wal").unlink(missing_ok=True)

    def signature(self) -> FileSignature:
        return FileSignature.of(self.path)

    # -- schema --------------------------------------------------------------------------------

    def initialize(self, con: Connection, model: str) -> None:
        """Create or migrate the schema, and record the model of a new bank."""
        have = {r[0] for r in con.execute("SELECT table_name FROM information_schema.tables").fetchall()}
        version = 0
        if "schema_migrations" in have:
            version = con.execute("SELECT coalesce(max(version), 0) FROM schema_migrations").fetchone()[0]
        elif have:
            raise CorruptBankError(
                f"{self.path} is a DuckDB file but not a Memory Console bank (it has tables "
                f"{', '.join(sorted(have)[:5])}); point at a new or existing bank file"
            )
        if version > SCHEMA_VERSION:
            raise CorruptBankError(
                f"{self.path} has schema version {version}, newer than this memory_core "
                f"({SCHEMA_VERSION}); upgrade memory_core"
            )
        now = to_naive_utc(utcnow())
        for v in range(version + 1, SCHEMA_VERSION + 1):
            for stmt in _MIGRATIONS[v]:
                con.execute(stmt)
            con.execute("INSERT INTO schema_migrations VALUES (?, ?)", [v, now])
        if version == 0:  # the meta rows of version 1 (later versions add theirs in their migration)
            for key, value in {
                "embedding_model": model, "embedding_dim": "", "change_seq": "0", "next_id": "1",
                "next_event_id": "1", "next_retrieval_id": "1", "active_preset": "default",
                "created_at": now.isoformat(),
            }.items():
                con.execute("INSERT INTO meta VALUES (?, ?)", [key, value])

    # -- meta ------------------------------------------------------------------------------------

    @staticmethod
    def meta(con: Connection) -> dict[str, str]:
        return dict(con.execute("SELECT key, value FROM meta").fetchall())

    @staticmethod
    def set_meta(con: Connection, key: str, value: str) -> None:
        con.execute("UPDATE meta SET value = ? WHERE key = ?", [value, key])

    @staticmethod
    def take_ids(con: Connection, counter: str, n: int) -> int:
        """Reserve ``n`` consecutive ids from a meta counter; returns the first."""
        first = int(con.execute("SELECT value FROM meta WHERE key = ?", [counter]).fetchone()[0])
        Store.set_meta(con, counter, str(first + n))
        return first

    @staticmethod
    def change_seq(con: Connection) -> int:
        return int(con.execute("SELECT value FROM meta WHERE key = 'change_seq'").fetchone()[0])

    @staticmethod
    def next_seq(con: Connection) -> int:
        """Advance the bank's change sequence: every row changed in this transaction gets it."""
        return Store.take_ids(con, "change_seq", 1) + 1

    # -- memories --------------------------------------------------------------------------------

    @staticmethod
    def insert_memories(con: Connection, rows: dict[str, list], embeddings: np.ndarray,
                        log: tuple[str, datetime, int | None] | None = None) -> None:
        """Bulk insert through Arrow (one statement, not one per row).

        With ``log = (actor, at, group)`` each new memory also gets its "add" event, whose
        ``after`` (the memory as added) DuckDB writes as JSON from the same Arrow table: building
        100k JSON strings in Python cost as much as the insert itself.
        """
        n = len(rows["id"])
        flat = pa.array(np.ascontiguousarray(embeddings, dtype=np.float32).reshape(-1))
        offsets = pa.array(np.arange(0, n + 1, dtype=np.int32) * embeddings.shape[1])
        table = pa.table({
            **{c: rows[c] for c in MEMORY_COLUMNS},
            "embedding": pa.ListArray.from_arrays(offsets, flat),
        })
        con.register("_incoming", table)
        try:
            cols = ", ".join(MEMORY_COLUMNS + ("embedding",))
            con.execute(f"INSERT INTO memories ({cols}) SELECT {cols} FROM _incoming")
            if log is not None and n:
                actor, at, group = log
                first = Store.take_ids(con, "next_event_id", n)
                iso = lambda c: f"strftime({c}, '%Y-%m-%dT%H:%M:%S.%f') || '+00:00'"  # noqa: E731
                after = ", ".join(
                    f"{c} := {iso(c) if c in _TIME_COLUMNS else c}" for c in _ADD_EVENT_FIELDS)
                con.execute(
                    "INSERT INTO events (id, happened_at, actor, action, memory_id, before, after, note, group_id) "
                    f"SELECT ? + row_number() OVER (ORDER BY id) - 1, ?, ?, 'add', id, NULL, "
                    f"to_json(struct_pack({after}))::VARCHAR, NULL, ? FROM _incoming",
                    [first, to_naive_utc(at), actor, group])
        finally:
            con.unregister("_incoming")

    @staticmethod
    def fetch_rows(con: Connection, where: str, params: list[Any],
                   with_embedding: bool = False, order: str = "id", limit: int | None = None,
                   offset: int = 0) -> pa.Table:
        """Memory rows as an Arrow table; ``where`` is a parameterized SQL condition, ``order`` a
        trusted ORDER BY clause (never user text)."""
        cols = ", ".join(MEMORY_COLUMNS + (("embedding",) if with_embedding else ()))
        page = "" if limit is None else f" LIMIT {int(limit)} OFFSET {int(offset)}"
        return con.sql(f"SELECT {cols} FROM memories WHERE {where} ORDER BY {order}{page}",
                       params=params).to_arrow_table()

    @staticmethod
    def embeddings_of(table: pa.Table, dim: int) -> np.ndarray:
        """The ``embedding`` column of an Arrow table as an (n, dim) float32 array."""
        col = table.column("embedding").combine_chunks()
        if len(col) == 0:
            return np.zeros((0, dim), dtype=np.float32)
        return col.flatten().to_numpy(zero_copy_only=False).astype(np.float32, copy=False).reshape(len(col), dim)

    @staticmethod
    def log_events(con: Connection, actor: str, action: str, memory_ids: list[int],
                   befores: list[dict | None], afters: list[dict | None], at: datetime,
                   group: int | None = None) -> None:
        """Log one event per memory in bulk (an import of 100k memories writes 100k events)."""
        n = len(memory_ids)
        if not n:
            return
        first = Store.take_ids(con, "next_event_id", n)
        dump = lambda d: None if d is None else json.dumps(d, default=str, ensure_ascii=False)  # noqa: E731
        table = pa.table({
            "id": pa.array(range(first, first + n), pa.int64()),
            "happened_at": pa.array([to_naive_utc(at)] * n, pa.timestamp("us")),
            "actor": [actor] * n, "action": [action] * n,
            "memory_id": pa.array(memory_ids, pa.int64()),
            "before": pa.array([dump(b) for b in befores], pa.string()),
            "after": pa.array([dump(a) for a in afters], pa.string()),
            "note": pa.array([None] * n, pa.string()),
            "group_id": pa.array([group] * n, pa.int64()),
        })
        con.register("_events", table)
        try:
            con.execute("INSERT INTO events (id, happened_at, actor, action, memory_id, before, after, note, "
                        "group_id) SELECT * FROM _events")
        finally:
            con.unregister("_events")

    @staticmethod
    def log_event(con: Connection, actor: str, action: str, memory_id: int | None,
                  before: dict | None, after: dict | None, at: datetime, note: str | None = None,
                  group: int | None = None) -> int:
        eid = Store.take_ids(con, "next_event_id", 1)
        con.execute(
            "INSERT INTO events (id, happened_at, actor, action, memory_id, before, after, note, group_id) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [eid, to_naive_utc(at), actor, action, memory_id,
             None if before is None else json.dumps(before, default=str, ensure_ascii=False),
             None if after is None else json.dumps(after, default=str, ensure_ascii=False), note, group],
        )
        return eid
