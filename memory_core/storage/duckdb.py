"""The DuckDB implementation of the store: a bank is one DuckDB file.

Owns everything that is about the file and the engine: the ``<bank>.lock`` file lock shared by
the processes that use the bank, opening connections with retry and backoff while another
process holds the file, recognizing a damaged file, backup, restore and compaction (logical
copies of the database), DuckDB's memory and thread settings, the connection wrapper that gives
the :class:`~memory_core.storage.Connection` interface, and :class:`DuckDBDialect`: every piece
of DuckDB-only SQL the portable code needs, named in one place.

Every write happens in one transaction on a connection opened for that operation, so another
process (the dashboard, another agent) can take the file in between; while someone else holds it
we wait for it up to a bounded wait. Between two operations of one process the file is kept for a
short lease (see :class:`_Lease`): opening a DuckDB file and the checkpoint of closing it cost more
than a small write, and a process waiting for the file announces itself so that the lease ends at
once.
"""

from __future__ import annotations

import atexit
import contextlib
import fcntl
import os
import random
import shutil
import threading
import time
from pathlib import Path
from typing import Any, Iterator, Sequence

import duckdb
import pyarrow as pa

from . import schema, tables
from ..errors import BankLockedError, BankReadOnlyError, CorruptBankError, StateError, ValidationError
from .duckdb_lease import (_announced, _counted, _end_leases, _FILE_LOCKS, _FILE_LOCKS_GUARD, FileSignature,
                           _flock_within, _KEPT, _Lease, _LEASE_CHANGED, LEASE_IDLE, _lease_loop, LEASE_MAX,
                           SERVED_LEASE_MAX, _LEASE_THREAD, _LEASES, release_file_lock, _signature, _STORE_NUMBERS, _UPCOMING, _WRITERS,
                           _YIELD_UNTIL)
from .duckdb_lease import release_file  # noqa: F401 (re-exported: tests and bench import it from here)
from .interface import IntegrityError, LockWaits


def _quiet(con: duckdb.DuckDBPyConnection) -> duckdb.DuckDBPyConnection:
    """DuckDB's Python client prints a progress bar to stdout for a statement over two seconds (an
    open or a checkpoint on a busy machine): a library must not write into its caller's output."""
    con.execute("SET enable_progress_bar = false")
    return con


class DuckDBDialect:
    """The DuckDB spelling of what :class:`~memory_core.storage.Dialect` names."""

    name = "duckdb"

    def list_overlaps(self, column: str) -> str:
        return f"list_has_any({column}, ?::BIGINT[])"

    def json_object(self, fields: Sequence[tuple[str, str]]) -> str:
        pairs = ", ".join(f"{key} := {expr}" for key, expr in fields)
        return f"to_json(struct_pack({pairs}))::VARCHAR"

    def iso_utc(self, column: str) -> str:
        return f"strftime({column}, '%Y-%m-%dT%H:%M:%S.%f') || '+00:00'"

    def hex_int(self, column: str, start: int, digits: int) -> str:
        return f"('0x' || substr({column}, {int(start)}, {int(digits)}))::BIGINT"

    def table_names(self) -> str:
        return ("SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema() "
                "AND table_type = 'BASE TABLE'")


DIALECT = DuckDBDialect()

_CORRUPTION_SIGNS = (
    "corrupt", "checksum", "could not read enough bytes", "not a valid duckdb database", "invalidated",
    "failed to read", "serializ",
)


def is_corruption(exc: BaseException) -> bool:
    """Does this DuckDB error mean the file itself is damaged (not a bad query or a busy file)?"""
    if isinstance(exc, (duckdb.ConstraintException, duckdb.TransactionException, duckdb.BinderException,
                        duckdb.ParserException, duckdb.ConversionException)):
        return False
    msg = str(exc).lower()
    busy = "conflicting lock" in msg or "could not set lock" in msg
    return any(sign in msg for sign in _CORRUPTION_SIGNS) and not busy


def corrupt_error(path: Path, detail: str, *, opening: bool = False, backup: bool = False) -> CorruptBankError:
    """The error a damaged file gives: which file, what DuckDB saw, and the way out."""
    first = (detail.splitlines() or [""])[0]
    if backup:
        return CorruptBankError(f"the backup {path} cannot be read ({first}); it is damaged or not a bank "
                                "backup: restore from another backup")
    what = "cannot open the bank" if opening else "the bank file is damaged:"
    return CorruptBankError(
        f"{what} {path} ({first}). The file is damaged or is not a Memory Console bank. Restore it from "
        f"a backup: memctl --bank {path} restore --from BACKUP --force (backups are made with "
        "memctl backup FILE), or point at another bank")


def _sql_string(value: str | os.PathLike) -> str:
    """A SQL string literal (ATTACH takes no parameters; the only text we quote is a file path)."""
    return "'" + str(value).replace("'", "''") + "'"


def _copy_database(raw: duckdb.DuckDBPyConnection, dest: Path, source: str | None = None) -> None:
    """Copy every table of the connection's database (or the attached ``source``) into a new file:
    a logical copy, so free blocks (where erased text may linger) are not carried over."""
    name = source or raw.execute("SELECT current_database()").fetchone()[0]
    raw.execute(f"ATTACH {_sql_string(dest)} AS _copy_target").fetchall()
    try:
        quoted = '"' + name.replace('"', '""') + '"'
        raw.execute(f"COPY FROM DATABASE {quoted} TO _copy_target").fetchall()
    finally:
        raw.execute("DETACH _copy_target").fetchall()


def _fsync(path: Path) -> None:
    with open(path, "rb+") as fh:
        os.fsync(fh.fileno())


def _remove(path: Path) -> None:
    path.unlink(missing_ok=True)
    Path(str(path) + ".wal").unlink(missing_ok=True)


class DuckDBConnection:
    """A DuckDB connection as :class:`~memory_core.storage.Connection`: every statement starts clean.

    DuckDB refuses a new statement while an earlier result is unfinished (``fetchone`` leaves
    it so); finishing it first lets callers read one row and move on.

    ``known_counters``: the meta counters' values as this process last wrote them, shared by the
    cursors of one lease of the file (no other process writes the file while it lives), for
    :func:`tables.take_counters`; None for a connection of no lease. They are forgotten when a
    transaction rolls back and when any other statement writes meta.
    """

    dialect = DIALECT

    def __init__(self, con: duckdb.DuckDBPyConnection, known_counters: dict[str, int] | None = None):
        self._con = con
        self.known_counters = known_counters

    def _forget_counters(self, sql: str) -> None:
        if self.known_counters and "meta" in sql and not sql.startswith(("SELECT", *tables.COUNTER_WRITES)):
            self.known_counters.clear()

    def execute(self, sql: str, params: Any = None) -> duckdb.DuckDBPyConnection:
        self._con.complete()
        self._forget_counters(sql)
        try:
            return self._con.execute(sql, params)
        except duckdb.ConstraintException as exc:
            raise IntegrityError(str(exc)) from exc

    def executemany(self, sql: str, params: Any) -> duckdb.DuckDBPyConnection:
        self._con.complete()
        self._forget_counters(sql)
        try:
            return self._con.executemany(sql, params)
        except duckdb.ConstraintException as exc:
            raise IntegrityError(str(exc)) from exc

    def arrow(self, sql: str, params: Any = None) -> pa.Table:
        self._con.complete()
        return self._con.sql(sql, params=params).to_arrow_table()

    def arrow_stream(self, sql: str, params: Any = None, batch_rows: int = 65_536) -> Iterator[pa.Table]:
        self._con.complete()
        reader = self._con.sql(sql, params=params).to_arrow_reader(batch_rows)
        for batch in reader:
            yield pa.Table.from_batches([batch])

    @contextlib.contextmanager
    def registered(self, **relations: pa.Table) -> Iterator[None]:
        self._con.complete()
        for name, table in relations.items():
            self._con.register(name, table)
        try:
            yield
        finally:
            self._con.complete()
            for name in relations:
                self._con.unregister(name)

    @contextlib.contextmanager
    def scanning(self) -> Iterator[None]:
        """A smaller buffer pool while a large scan runs: a scan needs only the blocks in flight,
        and at MEMORY_LIMIT the pool would keep what it read until the connection closes, under
        whatever the caller builds from the rows next."""
        self.execute(f"SET memory_limit = '{DuckDBStore.SCAN_MEMORY_LIMIT}'")
        try:
            yield
        finally:
            self.execute(f"SET memory_limit = '{DuckDBStore.MEMORY_LIMIT}'")

    @contextlib.contextmanager
    def transaction(self) -> Iterator[None]:
        self.execute("BEGIN TRANSACTION")
        try:
            yield
        except BaseException:
            if self.known_counters is not None:
                self.known_counters.clear()
            with contextlib.suppress(duckdb.Error):  # a damaged file may refuse the rollback too
                self.execute("ROLLBACK")
            raise
        try:
            self.execute("COMMIT")
        except BaseException:
            if self.known_counters is not None:
                self.known_counters.clear()
            raise


_EXITING = False


@atexit.register
def _end_leases_at_exit() -> None:
    global _EXITING
    _EXITING = True
    _end_leases(wait=False)


class DuckDBStore:
    """One DuckDB bank file (a :class:`~memory_core.storage.Store`). Open a connection per
    operation with :meth:`connect`."""

    # DuckDB's buffer pool per connection. Its default, most of the machine, let a commit's
    # checkpoint of a million-memory bank and a namespace's load keep every block they read; this
    # limit kept a large import at the same speed with a much lower peak (see BENCHMARKS.md, "Figures behind the
    # code"). An
    # operation needing more spills to ``<bank>.tmp/`` for its duration.
    shared = False  # one process at a time has the file
    splits_namespaces = False  # a file is never distributed: one transaction costs less than several
    MEMORY_LIMIT = "512MB"
    SCAN_MEMORY_LIMIT = "128MB"  # while a connection is :meth:`~DuckDBConnection.scanning`

    def __init__(self, path: str | os.PathLike, lock_timeout: float = 10.0, read_only: bool = False):
        self.path = Path(path)
        self.location = str(self.path)
        # The caches of a bank file live next to it (they move and go with it).
        self.index_folder = Path(str(self.path) + ".index")
        self.journal_folder = Path(str(self.path) + ".journal")
        self.lock_timeout = lock_timeout
        self.read_only = read_only
        self.lock_waits = LockWaits()  # seconds waited for the file, per operation that waited
        # Seconds this store keeps the file after an operation (see _Lease; 0: let go at once).
        self.lease_idle = LEASE_IDLE
        self.lease_max = LEASE_MAX  # at most, under load (SERVED_LEASE_MAX once :meth:`serve` is called)
        self.opens = 0  # DuckDB connections this store opened on the file (not through a lease)
        # Tells this store object from every other of the process for good (an id() is reused
        # once an object is gone): a lease counts which stores used it (see holder()).
        self.number = next(_STORE_NUMBERS)

    @classmethod
    def at(cls, path: str | os.PathLike, *, lock_timeout: float = 10.0, read_only: bool = False) -> "DuckDBStore":
        """The bank file at ``path``: refuses a folder, and (unless read-only) makes the folder the
        file goes in; the file itself is created by the first connection."""
        path = Path(path)
        if path.is_dir():
            raise ValidationError(f"{path} is a folder; give the path of a bank file (e.g. {path}/memory.duckdb)")
        if not read_only:
            path.parent.mkdir(parents=True, exist_ok=True)
        return cls(path, lock_timeout=lock_timeout, read_only=read_only)

    # -- connections -------------------------------------------------------------------------

    def _take_file_lock(self, deadline: float) -> tuple[str | None, bool]:
        """Hold ``<bank>.lock`` (shared when read-only) until :meth:`_release_file_lock`.

        DuckDB (2.0.1) reads the file's headers through a second, unlocked handle *before* it
        takes its own lock, and trusts them afterwards. A process opening the bank while another
        one commits, checkpoints and closes can therefore start from the headers as they were
        before that commit: the other process's last committed transaction is silently gone once
        this one checkpoints (a recorded recall lost from the log), or blocks are read past the
        end of the file ("IO Error: Could not read enough bytes from file") or with a wrong
        checksum. Holding our own lock from before DuckDB opens the file until after it closed
        it (its checkpoint included) keeps every process from reading a file another one is
        writing. The lock is per process and reentrant: connections of one process share DuckDB's
        instance, so they never re-read the headers while another connection of theirs is open.

        Returns the lock's key (None when the lock file cannot be created, e.g. a read-only bank
        in a read-only folder, where nobody can write, or a missing folder, which DuckDB reports)
        and whether it had to wait.
        """
        key = str(self.path) + ".lock"
        mode = fcntl.LOCK_SH if self.read_only else fcntl.LOCK_EX
        fh = None
        waited = False
        try:
            while True:
                with _FILE_LOCKS_GUARD:
                    held = _FILE_LOCKS.get(key)
                    if held is not None:
                        held[1] += 1
                        return key, waited
                    if fh is None:
                        try:
                            fh = open(key, "a+b")
                        except OSError:
                            return None, waited  # DuckDB says what is wrong with the folder
                    until = _YIELD_UNTIL.pop(key, None)
                if until is not None:
                    self._let_waiters_go(min(until, deadline))
                with _FILE_LOCKS_GUARD:
                    held = _FILE_LOCKS.get(key)
                    if held is not None:
                        held[1] += 1
                        return key, waited
                    try:
                        fcntl.flock(fh, mode | fcntl.LOCK_NB)
                    except OSError:
                        pass
                    else:
                        _FILE_LOCKS[key] = [fh, 1]
                        fh = None
                        return key, waited
                remaining = deadline - time.monotonic()
                if remaining > 0:
                    waited = True
                    # Wait in the kernel, woken the moment the holder lets go: a process that
                    # polls misses the few milliseconds a busy process leaves between operations.
                    # Announced, so that a holder keeping the file between operations lets go.
                    with _announced(self.path):
                        got = _flock_within(fh, mode, remaining)
                    if got:
                        with _FILE_LOCKS_GUARD:
                            held = _FILE_LOCKS.get(key)
                            if held is None:
                                _FILE_LOCKS[key] = [fh, 1]
                            else:  # a thread of ours took it meanwhile (shared): join it
                                held[1] += 1
                                fcntl.flock(fh, fcntl.LOCK_UN)
                                fh.close()
                        fh = None
                        return key, waited
                fh = None  # the waiting thread owns it now and lets go of it when it gets it
                raise BankLockedError(
                    f"the bank {self.path} is held by another process for more than "
                    f"{self.lock_timeout:g} s; wait for it to finish, or open the bank with a "
                    "longer lock_timeout")
        finally:
            if fh is not None:
                fh.close()

    def _let_waiters_go(self, until: float) -> None:
        """This process just ended a lease for a process that waited: let it (and whoever else
        announced) take the file first, until ``until``."""
        try:
            fh = open(str(self.path) + ".waiting", "a+b")
        except OSError:
            return
        try:
            while time.monotonic() < until:
                try:
                    fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except OSError:
                    time.sleep(0.001)  # still announced: not in yet
                    continue
                fcntl.flock(fh, fcntl.LOCK_UN)
                return
        finally:
            fh.close()

    @staticmethod
    def _release_file_lock(key: str | None) -> None:
        release_file_lock(key)

    def _open(self, lease: bool = True) -> tuple[duckdb.DuckDBPyConnection, Any]:
        """A DuckDB connection and the file lock it holds (or the lease it came from): close with
        :meth:`_close`. Without ``lease``, this process's lease of the file ends first (the caller
        replaces the file)."""
        if lease:
            kept = self._from_lease()
            if kept is not None:
                return kept
        else:
            _end_leases(str(self.path) + ".lock")
        deadline = time.monotonic() + self.lock_timeout
        delay = 0.005
        started = time.monotonic()
        key, waited = self._take_file_lock(deadline)
        try:
            con = self._connect(deadline, started, waited, delay)
        except BaseException:
            self._release_file_lock(key)
            raise
        return con, key

    def _from_lease(self) -> tuple[duckdb.DuckDBPyConnection, _Lease] | None:
        """A cursor of this process's lease of the file, if it has one nobody waits for."""
        key = str(self.path) + ".lock"
        with _LEASE_CHANGED:
            while True:
                lease = _LEASES.get(key)
                if lease is None:
                    return None
                if lease.ending:  # its keeper is closing: wait until the file is let go
                    _LEASE_CHANGED.wait()
                    continue
                if lease.users or (lease.read_only == self.read_only and not lease.due(time.monotonic(), idle=False)):
                    # In use by another thread of ours: the file is this process's anyway.
                    if lease.read_only == self.read_only:
                        lease.users += 1
                        lease.stores.add(self.number)
                        return lease.keeper.cursor(), lease
                    _LEASE_CHANGED.wait()  # DuckDB opens a file one way at a time per process
                    continue
                lease.ending = True  # due (waiters, idle, too old) or the other mode
                break
        lease.end()
        return None

    def _close(self, raw: duckdb.DuckDBPyConnection, key: Any, keep: bool = False) -> None:
        """Close a connection of :meth:`_open`; with ``keep`` (the operation succeeded) the file
        stays this process's for a lease (see :class:`_Lease`)."""
        if isinstance(key, _Lease):
            lease = key
            try:
                raw.close()
            finally:
                with _LEASE_CHANGED:
                    lease.users -= 1
                    lease.last = time.monotonic()
                    end = (not lease.users and not lease.ending
                           and (not keep or _EXITING or (lease.last - lease.started >= lease.max_age
                                                         and not lease.kept(lease.last))))
                    if end:
                        lease.ending = True
                    _LEASE_CHANGED.notify_all()
                if end:
                    lease.end()
            return
        if keep and key is not None and self.lease_idle > 0 and not _EXITING:
            with _LEASE_CHANGED:
                if key not in _LEASES:
                    _LEASES[key] = _Lease(self.path, key, raw, self.read_only, self.lease_idle, self.lease_max)
                    _LEASES[key].stores.add(self.number)
                    if not _LEASE_THREAD:
                        thread = threading.Thread(target=_lease_loop, name="memory-bank-lease", daemon=True)
                        _LEASE_THREAD.append(thread)
                        thread.start()
                    _LEASE_CHANGED.notify_all()
                    return  # the lease holds the connection and this count of the file lock
        try:
            raw.close()
        finally:
            self._release_file_lock(key)  # only now: closing the last connection checkpoints

    @contextlib.contextmanager
    def upcoming(self) -> Iterator[None]:
        """The caller prepares an operation on the file (the model embeds its rows): a lease of the
        file does not end for being idle meanwhile (it still ends for a process that waits)."""
        with _counted(_UPCOMING, str(self.path) + ".lock"):
            yield

    @contextlib.contextmanager
    def keep(self) -> Iterator[None]:
        """Keep the file between the operations of the block (a dashboard page's reads): they share
        one open of it, where each would otherwise hand the file to a process that waits for it
        (a server writing) and open it again. A process that waits gets the file when the block
        ends, or after the operation running once blocks have kept this process's lease of the
        file :data:`KEEP_MAX` seconds (blocks back to back count together: the lease ends then,
        and the next one may be kept again)."""
        with _counted(_KEPT, str(self.path) + ".lock"):
            yield

    def serve(self) -> None:
        """This process serves the file (``memctl serve``): keep it under load for up to
        :data:`SERVED_LEASE_MAX` instead of :data:`LEASE_MAX` (reopening it each second cost a
        quarter of a served add's store work); a process that announces it waits still gets it at once."""
        self.lease_max = SERVED_LEASE_MAX

    def release(self) -> None:
        """Let go of the file now if this process keeps it between operations (closing a bank)."""
        _end_leases(str(self.path) + ".lock", wait=False)

    def _connect(self, deadline: float, started: float, waited: bool, delay: float) -> duckdb.DuckDBPyConnection:
        while True:
            try:
                con = _quiet(duckdb.connect(str(self.path), read_only=self.read_only,
                                            config={"memory_limit": self.MEMORY_LIMIT}))
                self.opens += 1
                if waited:
                    self.lock_waits.append(time.monotonic() - started)
                return con
            except duckdb.Error as exc:
                msg = str(exc)
                lowered = msg.lower()
                # Still possible: a program other than memory_core holding the file.
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
                raise corrupt_error(self.path, msg, opening=True) from None

    @contextlib.contextmanager
    def _writing(self, write: bool = True) -> Iterator[None]:
        """Be this process's one writer of the file for the block (reentrant in one thread);
        a reader (``write=False``, or a read-only bank) passes straight through."""
        if not write or self.read_only:
            yield
            return
        with _FILE_LOCKS_GUARD:
            writer = _WRITERS.setdefault(str(self.path), threading.RLock())
        started = time.monotonic()
        if not writer.acquire(blocking=False):
            if not writer.acquire(timeout=self.lock_timeout):
                raise BankLockedError(
                    f"the bank {self.path} is being written by another thread of this process for more "
                    f"than {self.lock_timeout:g} s; wait for it to finish, or open the bank with a longer "
                    "lock_timeout")
            self.lock_waits.append(time.monotonic() - started)
        try:
            yield
        finally:
            writer.release()

    @contextlib.contextmanager
    def connect(self, write: bool = True, threads: int | None = None) -> Iterator[DuckDBConnection]:
        """A connection inside one transaction (with ``write``): committed on success, rolled back
        on error. ``threads`` caps DuckDB's threads for it (default: one per core)."""
        with self._writing(write):
            yield from self._connection(write, threads)

    def _connection(self, write: bool, threads: int | None) -> Iterator[DuckDBConnection]:
        raw, key = self._open()
        con = DuckDBConnection(raw, key.counters if isinstance(key, _Lease) else None)
        ok = False
        try:
            if threads is not None:
                con.execute(f"SET threads = {int(threads)}")
            if write and not self.read_only:
                with con.transaction():
                    yield con
            else:
                yield con
            ok = True
        except duckdb.Error as exc:
            # A damaged block shows up only when a query reads it: say which file and what to do,
            # never a DuckDB traceback.
            if is_corruption(exc):
                raise corrupt_error(self.path, str(exc)) from None
            raise
        finally:
            if threads is not None and ok:
                # A setting of the database, which a lease keeps for the next operation.
                with contextlib.suppress(duckdb.Error):
                    con.execute("RESET threads")
            with contextlib.suppress(duckdb.Error):
                self._close(raw, key, keep=ok)

    @contextlib.contextmanager
    def locked(self) -> Iterator[None]:
        """Hold the file's lock, without a connection, for the block.

        Connections this process opens inside the block share the lock, and no other process can
        write the file until the block ends: a caller that must finish its own bookkeeping after
        closing a connection (the recall writer) stays the file's last writer until it is done.
        """
        with self._writing():
            started = time.monotonic()
            key, waited = self._take_file_lock(started + self.lock_timeout)
            if waited:
                self.lock_waits.append(time.monotonic() - started)
            try:
                yield
            finally:
                self._release_file_lock(key)

    @contextlib.contextmanager
    def hold(self, threads: int | None = None) -> Iterator[DuckDBConnection]:
        """A connection without a transaction, for a caller that commits several in a row
        (``threads`` as :meth:`connect` takes it).

        Closing a DuckDB connection checkpoints the file (a cost that grows with the bank), so a
        bulk import writes several back-to-back batches, each its own transaction, on one
        connection held for a bounded time, instead of one connection per batch.
        """
        with self._writing():
            yield from self._connection(False, threads)

    def compact(self) -> None:
        """Rewrite the file from its live contents, so erased data leaves no trace in free blocks.

        DuckDB reuses freed blocks but does not wipe them; a hard delete must not leave the text
        readable in the file. The copy replaces the file while we still hold its lock, so a
        process waiting for the bank opens the new file when it retries.
        """
        with self._writing():
            self._compact()

    def _compact(self) -> None:
        raw, key = self._open(lease=False)  # the file is replaced: no connection may outlive it
        tmp = self.path.with_name(f".{self.path.name}.compact.{os.getpid()}")
        try:
            raw.execute("FORCE CHECKPOINT").fetchall()
            tmp.unlink(missing_ok=True)
            _copy_database(raw, tmp)  # quotes the path: a bank's folder may have a quote in its name
            os.replace(tmp, self.path)
        finally:
            self._close(raw, key)
            tmp.unlink(missing_ok=True)
            Path(str(tmp) + ".wal").unlink(missing_ok=True)

    def signature(self) -> FileSignature:
        return _signature(self.path)

    def known_signature(self) -> None:
        """None: a file's signature is read from the file (a stat); :meth:`holder` is what a
        process knows without looking."""
        return None

    def known_tokens_version(self) -> None:
        """None: nothing tells this process of token changes; :meth:`holder` vouches instead."""
        return None

    def holder(self) -> object | None:
        """This process's lease of the file while only this store object has used it, else None:
        while the same lease lives, no other process and no other bank of this one can have
        changed the file, so what this store read under it is still true."""
        with _LEASE_CHANGED:
            lease = _LEASES.get(str(self.path) + ".lock")
            if lease is None or lease.ending or lease.stores != {self.number}:
                return None
            return lease

    def signature_after(self, seq: int) -> FileSignature:
        """The file's signature now: the caller still holds (or leases) the file, so nobody else
        wrote since its operation."""
        return self.signature()

    def watch(self) -> bool:
        """A bank file sends no notifications: recall keeps comparing the file's signature (a stat)."""
        return False

    def wait_for_change(self, seq: int, timeout: float) -> bool:
        """No notifications: wait a moment (a twentieth of a second at most) and let the caller look again."""
        time.sleep(max(0.0, min(timeout, 0.05)))
        return False

    def size_bytes(self) -> int:
        return self.path.stat().st_size if self.path.exists() else 0

    # -- backup and restore ----------------------------------------------------------------------

    def backup(self, dest: str | os.PathLike, overwrite: bool = False) -> int:
        """Copy the bank to ``dest`` as one consistent snapshot; returns the memories copied.

        The copy is made while this process holds the file, so no other process writes during it
        (they wait, as for any operation); it goes to a temporary file first and is renamed into
        place only when complete, so a crash never leaves a half-written backup under ``dest``.
        """
        dest = Path(dest)
        if dest.exists() and dest.resolve() == self.path.resolve():
            raise ValidationError(f"{dest} is the bank itself; back up to another file")
        if dest.is_dir():
            raise ValidationError(f"{dest} is a folder; give a file name (e.g. {dest}/{self.path.name})")
        if dest.exists() and not overwrite:
            raise ValidationError(f"{dest} exists; choose another name or allow overwriting it")
        dest.parent.mkdir(parents=True, exist_ok=True)
        tmp = dest.with_name(f".{dest.name}.partial.{os.getpid()}")
        raw, key = self._open()
        try:
            try:
                if not self.read_only:
                    raw.execute("FORCE CHECKPOINT").fetchall()
                _copy_database(raw, tmp)
                n = raw.execute("SELECT count(*) FROM memories").fetchone()[0]
            except duckdb.Error as exc:
                if is_corruption(exc):
                    raise corrupt_error(self.path, str(exc)) from None
                raise
            _fsync(tmp)
            os.replace(tmp, dest)
        finally:
            self._close(raw, key)
            _remove(tmp)
        return int(n)

    @staticmethod
    def restore(backup: str | os.PathLike, dest: str | os.PathLike, *, force: bool = False,
                lock_timeout: float = 10.0) -> int:
        """Put the backup ``backup`` in place of the bank ``dest``; returns its number of memories.

        Refuses to replace an existing bank unless ``force``. With ``force`` the swap happens
        while holding ``dest``'s lock, and the restored file's change sequence moves past the
        replaced one's, so processes that still have the bank open (an agent, the dashboard)
        bring their indexes in line with the restored bank on their next operation.
        """
        backup, dest = Path(backup), Path(dest)
        if not backup.is_file():
            raise ValidationError(f"no backup file at {backup}")
        if dest.exists() and backup.resolve() == dest.resolve():
            raise ValidationError(f"{backup} is the bank itself; restore from a backup copy")
        if dest.exists() and not force:
            raise StateError(
                f"the bank {dest} exists and restoring would replace it with {backup}. Stop the agents and the "
                "dashboard that use it (or let them catch up after the swap) and restore with force=True "
                "(memctl restore --from BACKUP --force); to keep the current bank, back it up first "
                "(memctl backup FILE)")
        dest.parent.mkdir(parents=True, exist_ok=True)
        tmp = dest.with_name(f".{dest.name}.restore.{os.getpid()}")
        _remove(tmp)
        try:
            src = _quiet(duckdb.connect())  # in memory: the backup is attached read-only, the copy writable
            try:
                src.execute(f"ATTACH {_sql_string(backup)} AS _backup (READ_ONLY)").fetchall()
                held = {r[0] for r in src.execute(
                    "SELECT table_name FROM information_schema.tables WHERE table_catalog = '_backup'").fetchall()}
                if not {"schema_migrations", "memories", "meta"} <= held:
                    raise CorruptBankError(f"{backup} is not a Memory Console bank backup (it has no memories "
                                           "table); restore from a file made by memctl backup")
                _copy_database(src, tmp, source="_backup")
                src.execute("SELECT count(*), sum(length(text)) FROM _backup.memories").fetchall()  # reads every block
            except duckdb.Error as exc:
                raise corrupt_error(backup, str(exc), backup=True) from None
            finally:
                src.close()
            holder = DuckDBStore(dest, lock_timeout=lock_timeout)
            raw = key = None
            current: tuple[int, list[tuple[int, str]]] | None = None
            if dest.exists():
                try:
                    raw, key = holder._open(lease=False)  # the file is replaced
                    seq = tables.change_seq(DuckDBConnection(raw))
                    current = (seq, raw.execute("SELECT id, namespace FROM memories").fetchall())
                except CorruptBankError:
                    pass  # a damaged bank is what a restore is for: nobody can be using it
                except duckdb.Error:
                    pass
            try:
                con = _quiet(duckdb.connect(str(tmp)))
                try:
                    n = int(con.execute("SELECT count(*) FROM memories").fetchone()[0])
                    if current is not None:
                        tables.renumber_after_restore(DuckDBConnection(con), *current)
                finally:
                    con.close()
                _fsync(tmp)
                # The replaced file's WAL must not be replayed onto the restored one.
                Path(str(dest) + ".wal").unlink(missing_ok=True)
                os.replace(tmp, dest)
            finally:
                if raw is not None:
                    with contextlib.suppress(duckdb.Error):
                        holder._close(raw, key)
        finally:
            _remove(tmp)
        shutil.rmtree(Path(str(dest) + ".index"), ignore_errors=True)  # caches of the replaced bank
        return n

    # -- schema --------------------------------------------------------------------------------

    def initialize(self, con: DuckDBConnection, model: str) -> None:
        """Create or migrate the schema (:mod:`memory_core.storage.schema`), and record the model of
        a new bank."""
        have = {r[0] for r in con.execute("SELECT table_name FROM information_schema.tables").fetchall()}
        version = 0
        if "schema_migrations" in have:
            version = schema.installed_version(con)
        elif have:
            raise CorruptBankError(
                f"{self.path} is a DuckDB file but not a Memory Console bank (it has tables "
                f"{', '.join(sorted(have)[:5])}); point at a new or existing bank file"
            )
        schema.migrate(con, version, model, self.path)
