"""The PostgreSQL implementation of the store: a bank is one PostgreSQL database (its schema).

Owns everything that is about the server and the driver (psycopg 3 with a connection pool):
transactions as the unit of work, the bank's write lock, the translation of the portable SQL the
services write (``?`` placeholders, ``unnest(?)`` of a Python list), Arrow tables in and out,
:class:`PostgresDialect` (every piece of PostgreSQL-only SQL the portable code needs, named in
one place), the local folder that holds a bank's index cache and recall journal, erasure
(``VACUUM FULL``) and backup (a DuckDB bank file: the same logical copy a DuckDB bank makes).

**Writers.** Every write transaction takes the bank's write lock first: a transaction-level
advisory lock (``pg_advisory_xact_lock``) on one key per database. Writers from any number of
processes and machines queue for it inside PostgreSQL (no file, no polling, no lock error short of
the store's ``lock_timeout``) and readers never wait for it (MVCC snapshots). It makes the bank's
meta counters (ids, the change sequence) safe to read and advance in the transaction, and it is
why the change sequence is unique *and in commit order*: a row stamped 7 is committed before any
transaction can take 8. A PostgreSQL ``SEQUENCE`` would give unique numbers but commit them out
of order, and a process that caught up to 8 would never look back for 7 committed after it.
Write transactions are short (the embedding is computed before the store is touched), so one at a
time is not the bottleneck a file lock is: no open, no checkpoint, no fsync of a file per
operation.

**Readers** run in ``REPEATABLE READ READ ONLY`` transactions: one snapshot for the operation, as a
DuckDB transaction gives.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import logging
import os
import re
import threading
import time
import weakref
from pathlib import Path
from typing import Any, Iterator, Sequence
from urllib.parse import urlsplit, urlunsplit

import numpy as np
import pyarrow as pa

from .cache_dir import cache_root
from ..errors import BankLockedError, BankReadOnlyError, CorruptBankError, ValidationError
from . import schema
from .interface import DATABASE_SCHEMES, IntegrityError, LockWaits
from .pg_notify import TRIGGER_DDL, ChangeListener

try:  # the driver is a dependency, but a DuckDB-only install may lack it: say so when it matters
    import psycopg
    from psycopg import errors as pg_errors
    from psycopg.adapt import Dumper, Loader
    from psycopg.pq import Format
    from psycopg_pool import ConnectionPool, PoolTimeout
except ImportError:  # pragma: no cover - the package lists psycopg as a dependency
    psycopg = None  # type: ignore[assignment]

log = logging.getLogger(__name__)

URL_SCHEMES = DATABASE_SCHEMES
# The write lock's key: one per database (a bank is a database), the same in every process.
WRITE_LOCK_KEY = int.from_bytes(hashlib.sha256(b"memory_core.bank.write").digest()[:8], "big", signed=True)
POOL_MAX = 8  # connections a store keeps at most: one per thread that works on the bank at once
OLDER_TRANSACTIONS_WAIT = 10.0  # seconds an erasure's rewrite waits for transactions older than it


def is_postgres_url(location: object) -> bool:
    """Does ``location`` name a PostgreSQL bank (a ``postgresql://`` URL)?"""
    return isinstance(location, str) and location.startswith(URL_SCHEMES)


def public_url(url: str) -> str:
    """The URL without its password: what names the bank in messages, logs and cache folders."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    host = parts.hostname or ""
    netloc = (parts.username or "") + "@" + host + (f":{parts.port}" if parts.port else "")
    return urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment))


def local_folder(url: str) -> Path:
    """This machine's folder for the bank at ``url``: readable name plus a hash of the URL
    (without password), so two databases never share one."""
    public = public_url(url)
    parts = urlsplit(public)
    name = re.sub(r"[^A-Za-z0-9_.-]+", "_", f"{parts.hostname or 'local'}_{parts.port or 5432}_{parts.path.strip('/')}")
    return cache_root() / f"{name}-{hashlib.sha256(public.encode()).hexdigest()[:12]}"


# -- the dialect -----------------------------------------------------------------------------------


class PostgresDialect:
    """The PostgreSQL spelling of what :class:`~memory_core.storage.Dialect` names."""

    name = "postgres"

    def list_overlaps(self, column: str) -> str:
        return f"{column} && ?::BIGINT[]"

    def json_object(self, fields: Sequence[tuple[str, str]]) -> str:
        pairs = ", ".join(f"'{key}', {expr}" for key, expr in fields)
        return f"json_build_object({pairs})::text"

    def iso_utc(self, column: str) -> str:
        return f"to_char({column}, 'YYYY-MM-DD\"T\"HH24:MI:SS.US') || '+00:00'"

    def hex_int(self, column: str, start: int, digits: int) -> str:
        bits = 4 * int(digits)
        return f"('x' || substr({column}, {int(start)}, {int(digits)}))::bit({bits})::bigint"

    def table_names(self) -> str:
        return ("SELECT relname FROM pg_class WHERE relnamespace = current_schema()::regnamespace "
                "AND relkind IN ('r', 'p') AND NOT relispartition")


DIALECT = PostgresDialect()


# -- SQL translation: the portable SQL of the services, in psycopg's placeholders --------------------


@functools.lru_cache(maxsize=2048)
def _split(sql: str) -> tuple[tuple[str, ...], tuple[bool, ...]]:
    """The SQL cut at its ``?`` placeholders (text between them, with ``%`` doubled for psycopg),
    and for each placeholder whether it is the argument of ``unnest(...)``. Quoted text and
    comments are left alone."""
    parts: list[str] = []
    in_unnest: list[bool] = []
    buf: list[str] = []
    i, n = 0, len(sql)
    while i < n:
        ch = sql[i]
        if ch in ("'", '"'):
            j = i + 1
            while j < n:
                if sql[j] == ch:
                    if j + 1 < n and sql[j + 1] == ch:
                        j += 2
                        continue
                    break
                j += 1
            buf.append(sql[i:j + 1].replace("%", "%%"))
            i = j + 1
        elif ch == "-" and sql.startswith("--", i):
            j = sql.find("\n", i)
            j = n if j < 0 else j
            buf.append(sql[i:j].replace("%", "%%"))
            i = j
        elif ch == "?":
            text = "".join(buf)
            in_unnest.append(bool(re.search(r"unnest\(\s*$", text, re.IGNORECASE)))
            parts.append(text)
            buf = []
            i += 1
        elif ch == "%":
            buf.append("%%")
            i += 1
        else:
            buf.append(ch)
            i += 1
    parts.append("".join(buf))
    return tuple(parts), tuple(in_unnest)


def translate(sql: str, params: Sequence[Any] | None) -> tuple[str, list[Any]]:
    """PostgreSQL text and parameters for a portable statement: ``?`` becomes ``%s``, and the
    list given to ``unnest(?)`` gets its array type (whole numbers: ``BIGINT[]``, text:
    ``TEXT[]``), which PostgreSQL cannot infer from an empty list or from text."""
    parts, in_unnest = _split(sql)
    params = list(params or [])
    if len(params) != len(in_unnest):
        raise ValidationError(f"the statement has {len(in_unnest)} placeholders and {len(params)} values")
    out = [parts[0]]
    for k, p in enumerate(params):
        if in_unnest[k]:
            kind = "TEXT[]" if any(isinstance(v, str) for v in p) else "BIGINT[]"
            out.append(f"%s::{kind}")
        else:
            out.append("%s")
        out.append(parts[k + 1])
    return "".join(out), params


# -- values: vectors as numpy, numbers as DuckDB gives them ---------------------------------------------

# A vector is stored as BYTEA (schema version 9): its float32 values, little-endian, one after the
# other. It is the bank's only BYTEA column, so BYTEA is read as a vector and a vector written as
# BYTEA (parameters, and the columns of temporary tables that bulk writes COPY into).
VECTOR_DTYPE = np.dtype("<f4")
_BYTEA = 17

if psycopg is not None:
    class _VectorLoader(Loader):
        """``bytea`` in binary (a vector's bytes as they are) as a float32 numpy array."""

        format = Format.BINARY

        def load(self, data: Any) -> np.ndarray:
            return np.frombuffer(bytes(data), dtype=VECTOR_DTYPE).astype(np.float32, copy=False)

    class _NumericLoader(Loader):
        """``numeric`` (``sum`` of integers, ``extract``) as int when whole, float otherwise: what
        DuckDB's HUGEINT and DOUBLE give, never a Decimal."""

        format = Format.BINARY

        def __init__(self, oid: int, context: Any = None):
            super().__init__(oid, context)
            from psycopg.types.numeric import NumericBinaryLoader

            self._inner = NumericBinaryLoader(oid, context)

        def load(self, data: Any) -> int | float:
            value = self._inner.load(data)
            if value.is_finite() and value == value.to_integral_value():
                return int(value)
            return float(value)

    class _VectorDumper(Dumper):
        """A numpy vector as ``bytea``: its values as float32, little-endian."""

        format = Format.BINARY

        oid = _BYTEA

        def dump(self, obj: np.ndarray) -> bytes:
            return vector_bytes(obj)


def vector_bytes(v: np.ndarray) -> bytes:
    """A vector as the store keeps it (see :data:`VECTOR_DTYPE`)."""
    return np.ascontiguousarray(v, dtype=VECTOR_DTYPE).reshape(-1).tobytes()


def _configure(conn: Any) -> None:
    conn.adapters.register_loader(_BYTEA, _VectorLoader)
    conn.adapters.register_loader("numeric", _NumericLoader)
    conn.adapters.register_dumper(np.ndarray, _VectorDumper)
    conn.adapters.register_dumper(None, _VectorDumper)  # COPY's bytea columns (set_types) take vectors


# -- Arrow in and out -----------------------------------------------------------------------------------

# PostgreSQL type oids and the Arrow type a DuckDB query of the same column gives.
_ARROW_OF_OID: dict[int, pa.DataType] = {
    16: pa.bool_(), 20: pa.int64(), 21: pa.int16(), 23: pa.int32(), 25: pa.string(), 1043: pa.string(),
    700: pa.float32(), 701: pa.float64(), 1700: pa.float64(), 1114: pa.timestamp("us"),
    1184: pa.timestamp("us", tz="UTC"), 1082: pa.date32(), 114: pa.string(), 3802: pa.string(),
    1016: pa.list_(pa.int64()), 1007: pa.list_(pa.int32()), 1009: pa.list_(pa.string()),
    1015: pa.list_(pa.string()), 1021: pa.list_(pa.float32()), 1022: pa.list_(pa.float64()),
}


def _vector_column(values: list[Any]) -> pa.Array:
    """A list<float32> column from numpy vectors (None for NULL), without Python floats."""
    lengths = np.fromiter((0 if v is None else len(v) for v in values), dtype=np.int32, count=len(values))
    offsets = np.zeros(len(values) + 1, dtype=np.int32)
    np.cumsum(lengths, out=offsets[1:])
    present = [v for v in values if v is not None]
    flat = np.concatenate(present).astype(np.float32) if present else np.zeros(0, dtype=np.float32)
    mask = pa.array([v is None for v in values], pa.bool_()) if len(present) < len(values) else None
    return pa.ListArray.from_arrays(pa.array(offsets), pa.array(flat), mask=mask)


def _to_arrow(description: Any, rows: list[tuple]) -> pa.Table:
    """Rows of a query as an Arrow table typed as DuckDB types them."""
    names = [d.name for d in description]
    columns = list(zip(*rows)) if rows else [()] * len(names)
    arrays = []
    for d, col in zip(description, columns):
        kind = _ARROW_OF_OID.get(d.type_code)
        values = list(col)
        if d.type_code == _BYTEA:
            arrays.append(_vector_column(values))
        elif kind is not None:
            arrays.append(pa.array(values, type=kind))
        else:
            arrays.append(pa.array(values))
    return pa.Table.from_arrays(arrays, names=_unique(names))


def _unique(names: list[str]) -> list[str]:
    seen: dict[str, int] = {}
    out = []
    for name in names:
        if name in seen:
            seen[name] += 1
            name = f"{name}_{seen[name]}"
        else:
            seen[name] = 0
        out.append(name)
    return out


def _sql_type(t: pa.DataType) -> str:
    """The PostgreSQL column type of an Arrow type (the temporary tables of ``registered``)."""
    if pa.types.is_boolean(t):
        return "BOOLEAN"
    if pa.types.is_int64(t) or pa.types.is_uint32(t) or pa.types.is_uint64(t):
        return "BIGINT"
    if pa.types.is_integer(t):
        return "INTEGER"
    if pa.types.is_float32(t):
        return "REAL"
    if pa.types.is_floating(t):
        return "DOUBLE PRECISION"
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return "TEXT"
    if pa.types.is_timestamp(t):
        return "TIMESTAMP" if t.tz is None else "TIMESTAMPTZ"
    if pa.types.is_date(t):
        return "DATE"
    if (pa.types.is_list(t) or pa.types.is_large_list(t)) and pa.types.is_float32(t.value_type):
        return "BYTEA"  # a vector (see VECTOR_DTYPE)
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return _sql_type(t.value_type) + "[]"
    raise ValidationError(f"an Arrow column of type {t} has no PostgreSQL type here (give the column a type: "
                          "a column of only None is Arrow's null type)")


_COPY_TYPE = {"BIGINT": "int8", "INTEGER": "int4", "REAL": "float4", "DOUBLE PRECISION": "float8",
              "TEXT": "text", "BOOLEAN": "bool", "TIMESTAMP": "timestamp", "TIMESTAMPTZ": "timestamptz",
              "DATE": "date", "BYTEA": "bytea"}


def _copy_type(sql_type: str) -> str:
    """psycopg's name of a column type (what ``Copy.set_types`` takes)."""
    if sql_type.endswith("[]"):
        return _COPY_TYPE[sql_type[:-2]] + "[]"
    return _COPY_TYPE[sql_type]


def _rows_of(table: pa.Table) -> Iterator[tuple]:
    """The rows of an Arrow table as Python values, vectors (list<float32>) as numpy arrays."""
    columns: list[list[Any]] = []
    for name in table.column_names:
        col = table.column(name).combine_chunks()
        if (pa.types.is_list(col.type) or pa.types.is_large_list(col.type)) and pa.types.is_float32(col.type.value_type):
            flat = col.flatten().to_numpy(zero_copy_only=False)
            offsets = col.offsets.to_numpy()
            valid = col.is_valid().to_pylist()
            columns.append([flat[offsets[i]:offsets[i + 1]] if valid[i] else None for i in range(len(col))])
        else:
            columns.append(col.to_pylist())
    return zip(*columns) if columns else iter(())


# -- connections ------------------------------------------------------------------------------------


def _integrity(exc: BaseException) -> bool:
    return isinstance(exc, psycopg.errors.IntegrityError)


class PostgresConnection:
    """A pooled psycopg connection as :class:`~memory_core.storage.Connection`."""

    dialect = DIALECT

    def __init__(self, raw: Any, store: "PostgresStore"):
        self._raw = raw
        self._store = store

    def _cursor(self) -> Any:
        return self._raw.cursor(binary=True)

    def execute(self, sql: str, params: Sequence[Any] | None = None) -> Any:
        text, values = translate(sql, params)
        cur = self._cursor()
        try:
            cur.execute(text, values)
        except psycopg.errors.IntegrityError as exc:
            raise IntegrityError(str(exc)) from exc
        except psycopg.errors.LockNotAvailable as exc:
            raise self._store.busy() from exc
        return cur

    def executemany(self, sql: str, params: Sequence[Sequence[Any]]) -> Any:
        rows = [translate(sql, p) for p in params]
        if not rows:
            return None
        cur = self._cursor()
        try:
            cur.executemany(rows[0][0], [values for _, values in rows])
        except psycopg.errors.IntegrityError as exc:
            raise IntegrityError(str(exc)) from exc
        return cur

    def arrow(self, sql: str, params: Sequence[Any] | None = None) -> pa.Table:
        cur = self.execute(sql, params)
        return _to_arrow(cur.description, cur.fetchall())

    def arrow_stream(self, sql: str, params: Sequence[Any] | None = None,
                     batch_rows: int = 65_536) -> Iterator[pa.Table]:
        """Batches from a server-side cursor (a named cursor needs a transaction: a connection
        held without one gets its own for the scan)."""
        text, values = translate(sql, params)
        own = self._raw.info.transaction_status == psycopg.pq.TransactionStatus.IDLE
        if own:
            self._raw.execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
        try:
            with self._raw.cursor(name=f"_stream_{id(self)}", binary=True) as cur:
                cur.itersize = batch_rows
                cur.execute(text, values)
                while True:
                    rows = cur.fetchmany(batch_rows)
                    if not rows:
                        break
                    yield _to_arrow(cur.description, rows)
        finally:
            if own:
                self._raw.execute("COMMIT")

    @contextlib.contextmanager
    def registered(self, **relations: pa.Table) -> Iterator[None]:
        """Each Arrow table as a temporary table of its name, filled by binary ``COPY``."""
        made = []
        try:
            for name, table in relations.items():
                cols = ", ".join(f'"{c}" {_sql_type(table.schema.field(c).type)}' for c in table.column_names)
                self._raw.execute(f'CREATE TEMP TABLE "{name}" ({cols})')
                made.append(name)
                with self._cursor().copy(f'COPY "{name}" FROM STDIN (FORMAT BINARY)') as copy:
                    copy.set_types([_copy_type(_sql_type(table.schema.field(c).type)) for c in table.column_names])
                    for row in _rows_of(table):
                        copy.write_row(row)
            yield
        finally:
            if self._raw.info.transaction_status != psycopg.pq.TransactionStatus.INERROR:
                for name in made:
                    self._raw.execute(f'DROP TABLE IF EXISTS "{name}"')

    @contextlib.contextmanager
    def scanning(self) -> Iterator[None]:
        """Nothing to do: the server's memory is its own, not the caller's."""
        yield

    @contextlib.contextmanager
    def transaction(self) -> Iterator[None]:
        """One write transaction on a held connection, under the bank's write lock."""
        with self._store._write_transaction(self._raw):
            yield


class PostgresStore:
    """A bank in one PostgreSQL database (a :class:`~memory_core.storage.Store`), reached
    through a pool of connections."""

    shared = True  # other processes (servers) write it at any time
    splits_namespaces = True  # ready to be distributed by namespace (docs/scale-out.md)

    def __init__(self, url: str, lock_timeout: float = 10.0, read_only: bool = False):
        if psycopg is None:
            raise ValidationError("a PostgreSQL bank needs psycopg 3 and psycopg-pool: "
                                  "pip install 'psycopg[binary]>=3.2' 'psycopg-pool>=3.2'")
        self.url = url
        self.location = public_url(url)
        self.path = None  # no file: see location, index_folder, journal_folder
        self.lock_timeout = lock_timeout
        self.read_only = read_only
        self.lock_waits = LockWaits()
        folder = local_folder(url)
        self.index_folder = folder / "index"
        self.journal_folder = folder / "journal"
        self._local = threading.local()  # per thread: how deep in locked()/hold() (the lock is held)
        self._pool: Any = None
        self._pool_guard = threading.Lock()
        self._listener: ChangeListener | None = None  # started by watch() or the first wait_for_change
        self._watching = False  # signature() from the listener (see watch)

    @classmethod
    def at(cls, url: str, *, lock_timeout: float = 10.0, read_only: bool = False) -> "PostgresStore":
        return cls(url, lock_timeout=lock_timeout, read_only=read_only)

    def __repr__(self) -> str:
        return f"PostgresStore({self.location!r})"

    # -- the pool --------------------------------------------------------------------------------

    def _get_pool(self) -> Any:
        with self._pool_guard:
            if self._pool is None:
                # check: a pooled connection is tried (one empty round trip) before it is handed
                # out, so a server restart or a killed session costs a reconnect, not a failed
                # operation.
                pool = ConnectionPool(self.url, min_size=1, max_size=POOL_MAX, open=False,
                                      kwargs={"autocommit": True}, configure=_configure,
                                      check=ConnectionPool.check_connection,
                                      name=f"memctl-{self.location}", max_idle=60.0, reconnect_timeout=30.0)
                try:
                    pool.open(wait=True, timeout=max(self.lock_timeout, 1.0))
                except Exception as exc:
                    with contextlib.suppress(Exception):
                        pool.close(timeout=0)
                    raise self.unreachable(exc) from None
                self._pool = pool
                weakref.finalize(self, _close_pool, pool)
            return self._pool

    def unreachable(self, exc: BaseException) -> BankLockedError:
        detail = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        return BankLockedError(
            f"cannot reach the PostgreSQL bank {self.location} ({detail}); is the server running "
            "(e.g. pg_ctlcluster 15 main start) and does the database exist (createdb NAME)?")

    def busy(self) -> BankLockedError:
        return BankLockedError(
            f"the bank {self.location} is being written by another process for more than "
            f"{self.lock_timeout:g} s; wait for it to finish, or open the bank with a longer lock_timeout")

    def _holding(self) -> bool:
        """Does this thread hold the bank's write lock (in :meth:`locked` or :meth:`hold`)?"""
        return getattr(self._local, "depth", 0) > 0

    @contextlib.contextmanager
    def _raw(self) -> Iterator[Any]:
        """A connection from the pool, for the block."""
        pool = self._get_pool()
        try:
            conn = pool.getconn(timeout=max(self.lock_timeout, 1.0))
        except PoolTimeout:
            raise BankLockedError(
                f"no connection to {self.location} within {max(self.lock_timeout, 1.0):g} s: the server went "
                f"away (e.g. pg_ctlcluster 15 main start) or this process's {POOL_MAX} connections all stayed "
                "busy (open the bank with a longer lock_timeout)") from None
        except Exception as exc:
            raise self.unreachable(exc) from None
        try:
            yield conn
        except psycopg.errors.LockNotAvailable:
            raise self.busy() from None
        except (psycopg.OperationalError, psycopg.InterfaceError) as exc:
            # The server went away mid-operation (a restart, a killed session): a transaction cut off
            # before its COMMIT is rolled back by the server (all or nothing); one cut off while
            # committing may have committed, unacknowledged. Either way a retriable "cannot reach"
            # (503 from a server), never a crash.
            raise self.unreachable(exc) from None
        finally:
            if conn.info.transaction_status != psycopg.pq.TransactionStatus.IDLE:
                with contextlib.suppress(Exception):
                    conn.rollback()
            pool.putconn(conn)

    @contextlib.contextmanager
    def upcoming(self) -> Iterator[None]:
        """Nothing to keep: the pool keeps its connections anyway."""
        yield

    @contextlib.contextmanager
    def keep(self) -> Iterator[None]:
        """Nothing to hand over: other processes use the database at the same time."""
        yield

    def serve(self) -> None:
        """Nothing to keep: other processes use the database at the same time."""

    def release(self) -> None:
        """Close the pool's connections (the bank is closing; the store reopens it if used again)."""
        with self._pool_guard:
            pool, self._pool = self._pool, None
            listener, self._listener = self._listener, None
        if listener is not None:
            listener.stop()
        if pool is not None:
            _close_pool(pool)

    # -- transactions ----------------------------------------------------------------------------

    def _lock_timeout_ms(self) -> int:
        return max(1, int(self.lock_timeout * 1000))  # 0 means "forever" to PostgreSQL

    @contextlib.contextmanager
    def _write_transaction(self, raw: Any) -> Iterator[None]:
        """BEGIN, take the bank's write lock (waiting up to lock_timeout) unless this thread holds
        it already, yield, COMMIT; roll back on error."""
        lock = "" if self._holding() else f"; SELECT pg_advisory_xact_lock({WRITE_LOCK_KEY})"
        try:
            # One round trip: without parameters psycopg sends the statements as one simple query.
            started = _now()
            try:
                raw.execute(f"BEGIN; SET LOCAL lock_timeout = {self._lock_timeout_ms()}{lock}")
            except psycopg.errors.LockNotAvailable:
                raise self.busy() from None
            waited = _now() - started
            if lock and waited > 0.005:
                self.lock_waits.append(waited)
            yield
        except BaseException:
            with contextlib.suppress(Exception):
                raw.execute("ROLLBACK")
            raise
        raw.execute("COMMIT")

    @contextlib.contextmanager
    def _read_transaction(self, raw: Any) -> Iterator[None]:
        raw.execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
        try:
            yield
        except BaseException:
            with contextlib.suppress(Exception):
                raw.execute("ROLLBACK")
            raise
        raw.execute("COMMIT")

    @contextlib.contextmanager
    def connect(self, write: bool = True, threads: int | None = None) -> Iterator[PostgresConnection]:
        """A connection inside one transaction: a write transaction (under the write lock) with
        ``write`` on a writable store, else a read-only snapshot. ``threads`` does not apply."""
        with self._raw() as raw:
            try:
                if write and not self.read_only:
                    with self._write_transaction(raw):
                        yield PostgresConnection(raw, self)
                else:
                    with self._read_transaction(raw):
                        yield PostgresConnection(raw, self)
            except psycopg.errors.ReadOnlySqlTransaction as exc:
                raise BankReadOnlyError(f"the bank {self.location} was opened read-only ({exc})") from None
            except psycopg.OperationalError as exc:
                if isinstance(exc, psycopg.errors.LockNotAvailable):
                    raise self.busy() from None
                raise self.unreachable(exc) from None

    @contextlib.contextmanager
    def hold(self, threads: int | None = None) -> Iterator[PostgresConnection]:
        """A connection without a transaction, holding the bank's write lock for the block (as a
        bank file is held): what the caller reads between its transactions (a catch-up, then a
        write) sees no other writer's commit. Each :meth:`PostgresConnection.transaction` on it
        is one transaction. ``threads`` does not apply."""
        with self._raw() as raw:
            with self._session_lock(raw):
                yield PostgresConnection(raw, self)

    @contextlib.contextmanager
    def locked(self) -> Iterator[None]:
        """Hold the bank's write lock for the block, on a connection of its own: write transactions
        this thread opens inside go ahead without it (this thread has it), and no other writer
        commits until the block ends."""
        if self._holding():
            yield
            return
        with self._raw() as raw:
            with self._session_lock(raw):
                yield

    @contextlib.contextmanager
    def _session_lock(self, raw: Any) -> Iterator[None]:
        """The bank's write lock as a session-level advisory lock on ``raw``, for the block; this
        thread is marked as its holder meanwhile (reentrant: an inner block takes nothing)."""
        depth = getattr(self._local, "depth", 0)
        # Free, as it mostly is: one round trip; else wait for it, at most lock_timeout (three).
        if depth == 0 and not raw.execute("SELECT pg_try_advisory_lock(%s)", [WRITE_LOCK_KEY]).fetchone()[0]:
            raw.execute(f"SET lock_timeout = {self._lock_timeout_ms()}")
            started = _now()
            try:
                raw.execute("SELECT pg_advisory_lock(%s)", [WRITE_LOCK_KEY])
            except psycopg.errors.LockNotAvailable:
                raise self.busy() from None
            finally:
                raw.execute("SET lock_timeout = 0")
            waited = _now() - started
            if waited > 0.005:
                self.lock_waits.append(waited)
        self._local.depth = depth + 1
        try:
            yield
        finally:
            self._local.depth = depth
            if depth == 0:
                try:
                    if raw.info.transaction_status != psycopg.pq.TransactionStatus.IDLE:
                        raw.rollback()
                    raw.execute("SELECT pg_advisory_unlock(%s)", [WRITE_LOCK_KEY])
                except Exception:
                    raw.close()  # the server lets go of a closed session's locks; the pool drops it

    def signature(self) -> int:
        """The bank's change sequence: every write that other processes must notice advances it.
        Read from the database (one indexed row, cheap on a local socket: see BENCHMARKS.md, "Figures behind the
        code") unless the
        store :meth:`watch`-es: a notification arrives a few milliseconds after the commit, and a
        recall in between would miss a change another process has already acknowledged, which a
        library caller does not expect (a server opts in and offers ``min_seq`` instead)."""
        known = self.known_signature()
        return known if known is not None else self._read_seq()

    def known_signature(self) -> int | None:
        """The latest notified change number while this store watches (see :meth:`signature`)."""
        listener = self._listener if self._watching else None
        return None if listener is None else listener.latest()

    def known_tokens_version(self) -> int | None:
        """A number that changes whenever the bank's tokens may have changed, while this store
        watches and its listener hears of token changes (see pg_notify.py); else None."""
        listener = self._listener if self._watching else None
        return None if listener is None else listener.tokens_version()

    def _read_seq(self) -> int:
        with self._raw() as raw:
            row = raw.execute("SELECT value FROM meta WHERE key = 'change_seq'").fetchone()
        return -1 if row is None else int(row[0])

    def holder(self) -> None:
        """None: other processes write the database at any time (see :meth:`DuckDBStore.holder`)."""
        return None

    def signature_after(self, seq: int) -> int:
        """``seq`` itself: other processes may have committed since the operation that caught up
        to it, and re-reading the sequence now would pass their changes off as seen."""
        return seq

    def watch(self) -> bool:
        """Take :meth:`signature` from the change listener from now on (while it is connected;
        the database's row otherwise): a recall then costs no round trip to the database, and
        sees another process's commit once its notification arrives (milliseconds later)."""
        self._listening()
        self._watching = True
        return True

    def _listening(self) -> ChangeListener:
        """This store's change listener (LISTEN/NOTIFY, see pg_notify.py), started on first use:
        what a server waits on to learn of other servers' changes without polling."""
        with self._pool_guard:
            if self._listener is None:
                self._listener = ChangeListener(self.url).start()
                weakref.finalize(self, self._listener.halt)  # a store dropped without release()
            return self._listener

    def wait_for_change(self, seq: int, timeout: float = 1.0) -> bool:
        """Wait until this process knows of change ``seq`` (read-your-writes for a client that
        got ``seq`` from another server); False after ``timeout`` seconds (the database is
        asked then, in case the listener was not connected)."""
        if self._listening().wait_for(seq, timeout):
            return True
        try:
            return self._read_seq() >= seq
        except BankLockedError:
            return False

    def size_bytes(self) -> int:
        """The database's size on disk (``pg_database_size``)."""
        with self._raw() as raw:
            return int(raw.execute("SELECT pg_database_size(current_database())").fetchone()[0])

    # -- schema ----------------------------------------------------------------------------------

    def initialize(self, con: PostgresConnection, model: str) -> None:
        """Create or migrate the schema (:mod:`memory_core.storage.schema`) in the connection's
        schema (``search_path``), and record the model of a new bank."""
        have = {r[0] for r in con.execute(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema()").fetchall()}
        version = 0
        if "schema_migrations" in have:
            version = schema.installed_version(con)
        elif have:
            raise CorruptBankError(
                f"the database {self.location} holds tables but no Memory Console bank (it has "
                f"{', '.join(sorted(have)[:5])}); point at an empty database or an existing bank")
        schema.migrate(con, version, model, self.location)
        for stmt in TRIGGER_DDL:  # change notifications (pg_notify.py): PostgreSQL only, not a migration
            con.execute(stmt)

    def table_names(self) -> list[str]:
        """The bank's tables (a partitioned one once: VACUUM of it covers its partitions)."""
        with self._raw() as raw:
            return sorted(r[0] for r in raw.execute(DIALECT.table_names()).fetchall())

    # -- erasure and backup ------------------------------------------------------------------------

    def compact(self) -> None:
        """Rewrite every table of the bank (``VACUUM FULL``) so erased text is gone from the table
        files: a plain VACUUM frees the space of the old row versions but leaves their bytes in the
        pages until reused. What the WAL, replicas and backups still hold is in RELIABILITY.md."""
        if self.read_only:
            return
        tables = self.table_names()
        with self._raw() as raw:
            holding = self._wait_for_older_transactions(raw, OLDER_TRANSACTIONS_WAIT)
            if holding:
                log.warning("the rewrite of %s after a hard delete went ahead after %g s while %s still "
                            "ran: the erased text stays in the table files until the next erasure's rewrite "
                            "(or a VACUUM FULL of the bank's tables) after they end", self.location,
                            OLDER_TRANSACTIONS_WAIT, "; ".join(holding))
            for name in tables:
                raw.execute(f'VACUUM FULL "{name}"')

    # What keeps ``VACUUM FULL`` of this database's tables from dropping a row version deleted by a
    # transaction that committed before xid ``%(now)s`` (PostgreSQL's data horizon for a table,
    # ComputeXidHorizons in procarray.c):
    #  - a session of this database whose snapshot (backend_xmin) or transaction (backend_xid) is
    #    older: it may still read the old version;
    #  - a transaction of ANY database (or a prepared one) whose id is older: every snapshot lists
    #    the ids running in the whole cluster, and the rewrite's own snapshot, whose xmin counts
    #    for its own database, then keeps every version such a transaction might not have seen
    #    committed. (Measured: another database's DROP DATABASE, begun a moment before the delete,
    #    left the erased text in the rewritten files.)
    #  - a replication slot whose xmin is older (hot_standby_feedback of a replica).
    # Each row names one, without its query (which could quote anything).
    _HOLDING_SQL = (
        "SELECT format('session %%s (%%s, database %%s, xid %%s, xmin %%s, since %%s)', pid, backend_type, "
        "coalesce(datname, '-'), coalesce(backend_xid::text, '-'), coalesce(backend_xmin::text, '-'), xact_start) "
        "FROM pg_stat_activity WHERE pid <> pg_backend_pid() AND ("
        "  ((datname = current_database() OR datname IS NULL) AND age(backend_xmin) > age(%(now)s::text::xid))"
        "  OR age(backend_xid) > age(%(now)s::text::xid)) "
        "UNION ALL SELECT format('prepared transaction %%s (%%s, database %%s)', transaction, gid, database) "
        "FROM pg_prepared_xacts WHERE age(transaction) > age(%(now)s::text::xid) "
        "UNION ALL SELECT format('replication slot %%s (xmin %%s)', slot_name, xmin) "
        "FROM pg_replication_slots WHERE age(xmin) > age(%(now)s::text::xid) "
        "UNION ALL SELECT format('a transaction older than %%s (the oldest running: %%s)', %(now)s::text, xmin) "
        "FROM (SELECT pg_snapshot_xmin(pg_current_snapshot())::text::bigint %% 4294967296 AS xmin) s "
        "WHERE age(s.xmin::text::xid) > age(%(now)s::text::xid)")

    @classmethod
    def _wait_for_older_transactions(cls, raw: Any, timeout: float) -> list[str]:
        """Wait (at most ``timeout`` seconds) until nothing that could keep an old row version
        through ``VACUUM FULL`` began before now (see ``_HOLDING_SQL``): any session of this
        database with an older snapshot, a transaction of any database with an older id (the
        rewrite's own snapshot would keep the versions for it), a prepared transaction or a
        replication slot. Returns what still held at the deadline (empty: none; the rewrite goes
        ahead either way, RELIABILITY.md says what then)."""
        now = int(raw.execute("SELECT pg_snapshot_xmax(pg_current_snapshot())::text").fetchone()[0]) % 2**32
        deadline = _now() + timeout
        while True:
            # One statement, so one transaction: pg_stat_activity is read afresh each time.
            holding = [r[0] for r in raw.execute(cls._HOLDING_SQL, {"now": str(now)}).fetchall()]
            # A transaction ending between its pg_stat_activity row and the snapshot is harmless:
            # the next round sees it gone.
            if not holding or _now() >= deadline:
                return holding
            time.sleep(0.02)

    def backup(self, dest: str | os.PathLike, overwrite: bool = False) -> int:
        """Copy the bank to ``dest``, a DuckDB bank file: the same logical copy (every table, one
        snapshot) a DuckDB bank's backup makes, restorable into either store. For PostgreSQL's own
        backups (pg_dump, base backups, replicas) use PostgreSQL's tools."""
        from .copy import backup_to_file

        return backup_to_file(self, dest, overwrite=overwrite)


def _now() -> float:
    return time.monotonic()


def _close_pool(pool: Any) -> None:
    with contextlib.suppress(Exception):
        pool.close(timeout=1.0)
