"""The storage interface: what a store and its connections offer the rest of memory_core.

Protocols only (and the one error services catch), implemented by :mod:`.duckdb` and
:mod:`.postgres`; see
:mod:`memory_core.storage` for the overview. Kept apart from the package's ``__init__`` so that an
implementation depends on the interface, and the package on the implementations, never round.
"""

from __future__ import annotations

import os
from collections import deque
from contextlib import AbstractContextManager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterator, Protocol, Sequence, runtime_checkable

if TYPE_CHECKING:  # for the hints only: the protocols are imported by callers that move no Arrow data
    import pyarrow as pa


DATABASE_SCHEMES = ("postgresql://", "postgres://")  # how a PostgreSQL bank's URL starts

class IntegrityError(Exception):
    """A statement broke a key or constraint of the schema (e.g. an id another writer just took).

    Implementations raise it in place of their driver's own error, so services can catch it."""


class LockWaits:
    """The seconds a store's operations waited for its write lock: the latest ``keep`` of them
    (what tests and the soak benchmark look at) and the totals since the store opened (what a
    server's metrics report), so that a process that runs for months keeps a bounded list."""

    def __init__(self, keep: int = 10_000):
        self.recent: deque[float] = deque(maxlen=keep)
        self.count = 0
        self.seconds = 0.0

    def append(self, waited: float) -> None:
        self.recent.append(waited)
        self.count += 1
        self.seconds += waited

    def __iter__(self) -> Iterator[float]:
        return iter(self.recent)

    def __len__(self) -> int:
        return len(self.recent)

    def __getitem__(self, i: int) -> float:
        return self.recent[i]


class Cursor(Protocol):
    """What ``execute`` returns: the rows of the statement, read once."""

    def fetchone(self) -> tuple[Any, ...] | None: ...

    def fetchall(self) -> list[tuple[Any, ...]]: ...


class Dialect(Protocol):
    """SQL that differs between engines, by name: each method returns a piece of SQL text.

    Every construct one engine has and the other spells differently (or not at all) is a method
    here; SQL elsewhere is written in the part both engines share.
    """

    name: str  # "duckdb" or "postgres": what a migration step for one engine names it by

    def list_overlaps(self, column: str) -> str:
        """A condition: the list (array) ``column`` shares an element with the one ``?`` parameter,
        a list of whole numbers."""
        ...

    def json_object(self, fields: Sequence[tuple[str, str]]) -> str:
        """An expression: the JSON text (a string) of an object with these ``(key, SQL expression)``
        fields, in this order."""
        ...

    def iso_utc(self, column: str) -> str:
        """An expression: the naive UTC timestamp ``column`` as ISO 8601 text with microseconds and
        ``+00:00`` (NULL stays NULL)."""
        ...

    def hex_int(self, column: str, start: int, digits: int) -> str:
        """An expression: the ``digits`` (at most 15) hexadecimal digits of the text ``column``
        from position ``start`` (1-based) as a whole number."""
        ...

    def table_names(self) -> str:
        """A query: the name of each table of the connection's schema, one per row. A table
        partitioned by hand (PostgreSQL) is one table: its partitions are not listed."""
        ...


@runtime_checkable
class Connection(Protocol):
    """A connection to the store: one operation's, from :meth:`Store.connect` or :meth:`Store.hold`.

    Parameters are ``?`` placeholders with a list of values (Python lists for array columns);
    times are naive UTC datetimes. A statement may start while an earlier result is unread.
    """

    dialect: Dialect

    def execute(self, sql: str, params: Sequence[Any] | None = None) -> Cursor:
        """Run one statement; raises :class:`IntegrityError` when it breaks a key or constraint."""
        ...

    def executemany(self, sql: str, params: Sequence[Sequence[Any]]) -> Any:
        """Run one statement once per parameter row."""
        ...

    def arrow(self, sql: str, params: Sequence[Any] | None = None) -> pa.Table:
        """The rows of a query as an Arrow table (timestamps naive, lists as list columns)."""
        ...

    def arrow_stream(self, sql: str, params: Sequence[Any] | None = None,
                     batch_rows: int = 65_536) -> Iterator[pa.Table]:
        """The rows of a query as Arrow tables of up to ``batch_rows`` rows, without the whole
        result in memory at once. Run no other statement until the iterator is done."""
        ...

    def registered(self, **tables: pa.Table) -> AbstractContextManager[None]:
        """Arrow tables visible to SQL under their keyword names (a temporary relation each) for
        the block, and gone after it, whatever happens inside: how bulk rows reach a statement
        (``INSERT ... SELECT * FROM _rows``, ``UPDATE t SET ... FROM _rows WHERE ...``)."""
        ...

    def scanning(self) -> AbstractContextManager[None]:
        """A large read runs in the block: keep the engine's own memory for it small, so what
        the caller builds from the rows fits beside it (a no-op where the engine is a server)."""
        ...

    def transaction(self) -> AbstractContextManager[None]:
        """One transaction on a held connection: committed when the block ends, rolled back when
        it raises."""
        ...


@runtime_checkable
class Store(Protocol):
    """A bank's store: open a connection per operation with :meth:`connect`."""

    location: str  # what names the bank in messages and to memctl --bank: a file path, or a URL without password
    path: Path | None  # the bank's file, None for a store that is not a file
    index_folder: Path  # this machine's folder for the saved namespace indexes (a cache)
    journal_folder: Path  # this machine's folder for the journal of recalls not yet written
    read_only: bool
    lock_waits: LockWaits  # seconds waited for the store's write lock, per operation that waited
    shared: bool  # other processes write it while this one works (a database server), not in turns (a file)
    # Writes each namespace's rows in transactions of their own, even where one batch of work spans
    # several: a schema distributed by namespace (Citus) then commits each on one node.
    splits_namespaces: bool

    def connect(self, write: bool = True, threads: int | None = None) -> AbstractContextManager[Connection]:
        """A connection for one operation: with ``write`` (and a writable store) inside one
        transaction, committed on success and rolled back on error. ``threads`` bounds the
        engine threads its statements use (an embedded engine shares the caller's cores).
        A damaged store raises :class:`~memory_core.errors.CorruptBankError`, a busy one
        :class:`~memory_core.errors.BankLockedError` after the store's lock timeout."""
        ...

    def hold(self, threads: int | None = None) -> AbstractContextManager[Connection]:
        """A connection without a transaction, for a caller that commits several in a row
        (:meth:`Connection.transaction`); ``threads`` as :meth:`connect` takes it."""
        ...

    def locked(self) -> AbstractContextManager[None]:
        """Hold the store's write lock, without a connection, for the block: connections this
        process opens inside share it, and no other process writes until the block ends."""
        ...

    def upcoming(self) -> AbstractContextManager[None]:
        """The caller prepares an operation on the store (the model embeds its rows) for the block:
        a store that keeps its connection between operations keeps it meanwhile."""
        ...

    def keep(self) -> AbstractContextManager[None]:
        """Keep the store between the operations of the block (a dashboard page): a store that
        hands itself to other processes between operations (a DuckDB file) does so once, when
        the block ends (or after a bounded time), instead of between every two."""
        ...

    def serve(self) -> None:
        """This process serves the store (a server): a store that hands itself to other processes
        keeps itself longer under load, as long as no other process says it waits."""
        ...

    def release(self) -> None:
        """Let go of whatever the store keeps between operations (the bank is closing)."""
        ...

    def signature(self) -> object:
        """A cheap value that changes whenever anyone writes: equal values mean nobody wrote."""
        ...

    def known_signature(self) -> object | None:
        """:meth:`signature` as this process knows it without asking the store or waiting (the
        latest notification's number while it :meth:`watch`-es), else None."""
        ...

    def known_tokens_version(self) -> object | None:
        """A value that changes whenever the bank's access tokens may have changed, known
        without asking the store (notifications), else None: equal values mean no token changed."""
        ...

    def holder(self) -> object | None:
        """A value that stays the same (``is``) for as long as no one but this store object can
        change the store (a DuckDB file this process keeps), else None: what was read under the
        same holder is still true, with no need to look."""
        ...

    def signature_after(self, seq: int) -> object:
        """The signature a process may remember after an operation that brought it up to change
        ``seq``: compared with a later :meth:`signature`, equal means nothing happened since that
        this process has not taken in. (A file held by this process cannot have changed under
        it: its signature now; a store others write meanwhile: the sequence itself.)"""
        ...

    def watch(self) -> bool:
        """From now on, take :meth:`signature` from change notifications instead of asking the
        store (a server that recalls often); False for a store that sends none (nothing changes)."""
        ...

    def wait_for_change(self, seq: int, timeout: float) -> bool:
        """Wait (up to ``timeout`` seconds) until change ``seq`` may be in the store: True when a
        notification says so; False when the store sends none or none came (look again)."""
        ...

    def initialize(self, con: Connection, model: str) -> None:
        """Create or migrate the schema (:mod:`.schema`) in ``con``; a new bank records ``model``."""
        ...

    def backup(self, dest: str | os.PathLike, overwrite: bool = False) -> int:
        """Copy the bank to ``dest`` as one consistent snapshot; returns the memories copied."""
        ...

    def compact(self) -> None:
        """Make erased data unrecoverable from the store's files (hard delete calls it)."""
        ...

    def size_bytes(self) -> int:
        """The bank's size on disk (its file, or its database)."""
        ...
