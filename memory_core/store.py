"""The DuckDB file that holds everything: schema, migrations, connections and queries.

The store is the source of truth. Indexes are caches rebuilt from it. Every write happens in
one transaction on a connection that is opened for that operation and closed after it, so
another process (the dashboard, another agent) can take the file in between; while someone
else holds it we retry with backoff up to a bounded wait.

Times are stored as naive UTC ``TIMESTAMP`` values and handed out as aware UTC datetimes
(see :mod:`memory_core.clock`).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import fcntl
import random
import shutil
import threading
import time
import unicodedata
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, Iterator

import duckdb
import numpy as np
import pyarrow as pa

from .clock import to_naive_utc, utcnow
from .errors import BankLockedError, BankReadOnlyError, CorruptBankError, StateError, ValidationError

SCHEMA_VERSION = 6

MEMORY_COLUMNS = (
    "id", "namespace", "text", "kind", "category", "importance", "created_at", "updated_at",
    "last_accessed_at", "access_count", "status", "pinned", "source", "content_hash",
    "embedding_model", "superseded_by", "merged_into", "seq", "context", "use_count",
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
    # Usage feedback and ablations. Feedback is one row per retrieval (giving it again replaces
    # it) plus one row per returned memory saying whether the answer used it and what decided
    # that. Ablation cases keep memory ids, never memory texts, so a hard delete still erases
    # the text everywhere (the page looks texts up when it shows a case).
    3: [
        """CREATE TABLE feedback (
            retrieval_id BIGINT PRIMARY KEY, namespace VARCHAR NOT NULL, given_at TIMESTAMP NOT NULL,
            actor VARCHAR, answer VARCHAR, helpful BOOLEAN
        )""",
        """CREATE TABLE feedback_hits (
            retrieval_id BIGINT NOT NULL, memory_id BIGINT NOT NULL, used BOOLEAN NOT NULL,
            decided_by VARCHAR NOT NULL,  -- given, citation, similarity
            similarity DOUBLE             -- best cosine of an answer sentence (similarity path)
        )""",
        """CREATE TABLE ablation_runs (
            id BIGINT PRIMARY KEY, started_at TIMESTAMP NOT NULL, finished_at TIMESTAMP, actor VARCHAR,
            namespace VARCHAR, answer_model VARCHAR, judge_model VARCHAR, seed BIGINT, source VARCHAR,
            n_cases INTEGER NOT NULL, better INTEGER NOT NULL, worse INTEGER NOT NULL, ties INTEGER NOT NULL,
            errors INTEGER NOT NULL, settings VARCHAR
        )""",
        """CREATE TABLE ablation_cases (
            run_id BIGINT NOT NULL, case_no INTEGER NOT NULL, namespace VARCHAR NOT NULL,
            question VARCHAR NOT NULL, expected VARCHAR, memory_ids BIGINT[] NOT NULL,
            answer_with VARCHAR, answer_without VARCHAR,
            first_shown VARCHAR,          -- with / without: which answer the judge saw as A
            judge_choice VARCHAR,         -- the judge's own words: A, B or tie
            verdict VARCHAR NOT NULL,     -- with, without, tie, or error
            reason VARCHAR, error VARCHAR
        )""",
        "INSERT INTO meta VALUES ('next_ablation_run_id', '1')",
    ],
    # Labeled query sets: an operator's judgement of which memories a query should (not) bring
    # back. A row with a NULL memory_id only records that the query is labeled (nothing relevant,
    # nothing marked): "recall should come back empty". as_of is the moment the query is asked
    # (NULL: whenever it is evaluated), so one text can mean different memories at different times.
    4: [
        """CREATE TABLE labels (
            id BIGINT PRIMARY KEY, set_name VARCHAR NOT NULL, namespace VARCHAR NOT NULL,
            query VARCHAR NOT NULL, as_of TIMESTAMP, memory_id BIGINT, relevant BOOLEAN,
            labeled_by VARCHAR NOT NULL, labeled_at TIMESTAMP NOT NULL
        )""",
        "INSERT INTO meta VALUES ('next_label_id', '1')",
    ],
    # A memory's retrieval context: text that situates it (the conversation turns around it),
    # indexed for lexical match alongside the text but never shown as the memory. NULL: none.
    5: [
        "ALTER TABLE memories ADD COLUMN context VARCHAR",
    ],
    # How many recalls' answers used each memory (feedback_hits.used), beside access_count (how
    # many recalls returned it): scoring's frequency can count uses instead of retrievals. Kept
    # by MemoryBank.feedback; an existing bank's count is rebuilt from the feedback it holds.
    6: [
        "ALTER TABLE memories ADD COLUMN use_count INTEGER NOT NULL DEFAULT 0",
        """UPDATE memories SET use_count = u.n
           FROM (SELECT memory_id, count(DISTINCT retrieval_id) AS n FROM feedback_hits WHERE used
                 GROUP BY memory_id) AS u
           WHERE memories.id = u.memory_id""",
    ],
}


def content_hash(text: str) -> str:
    """SHA-256 of the NFC-normalized, whitespace-collapsed text: equal for exact duplicates."""
    norm = " ".join(unicodedata.normalize("NFC", text).split())
    return hashlib.sha256(norm.encode("utf-8")).hexdigest()


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


def _renumber_after(con: duckdb.DuckDBPyConnection, seq_before: int, rows_before: list[tuple[int, str]]) -> None:
    """Make a restored bank look, to processes that had the replaced one open, like one big change:
    a change sequence past theirs, every row changed, and rows that are gone listed as removed."""
    seq = max(seq_before, int(con.execute("SELECT value FROM meta WHERE key = 'change_seq'").fetchone()[0])) + 1
    con.execute("BEGIN TRANSACTION")
    con.execute("UPDATE meta SET value = ? WHERE key = 'change_seq'", [str(seq)])
    con.execute("UPDATE memories SET seq = ?", [seq])
    if rows_before:
        table = pa.table({"id": pa.array([r[0] for r in rows_before], pa.int64()),
                          "namespace": pa.array([r[1] for r in rows_before], pa.string())})
        with registered(con, _before=table):
            con.execute("INSERT INTO removed_memories SELECT id, namespace, ? FROM _before "
                        "WHERE id NOT IN (SELECT id FROM memories)", [seq])
    con.execute("COMMIT")


def _fsync(path: Path) -> None:
    with open(path, "rb+") as fh:
        os.fsync(fh.fileno())


def _remove(path: Path) -> None:
    path.unlink(missing_ok=True)
    Path(str(path) + ".wal").unlink(missing_ok=True)


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


@contextlib.contextmanager
def registered(con: Any, **tables: Any) -> Iterator[None]:
    """Arrow tables visible to SQL under their keyword names on ``con`` (a DuckDB connection or a
    :class:`Connection`) for the block, and gone after it, whatever happens inside."""
    for name, table in tables.items():
        con.register(name, table)
    try:
        yield
    finally:
        for name in tables:
            con.unregister(name)


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


# Per process: the ``<bank>.lock`` files this process holds, as [open file, connections using it].
_FILE_LOCKS: dict[str, list] = {}
_FILE_LOCKS_GUARD = threading.Lock()


def _flock_within(fh: Any, mode: int, timeout: float) -> bool:
    """A blocking ``flock`` that gives up after ``timeout`` seconds (True: locked). The wait runs
    in a helper thread; given up on, that thread unlocks and closes ``fh`` once it gets the lock."""
    done = threading.Event()
    guard = threading.Lock()
    state = {"locked": False, "abandoned": False}

    def wait() -> None:
        try:
            fcntl.flock(fh, mode)
        except OSError:
            done.set()
            return
        with guard:
            if state["abandoned"]:
                fcntl.flock(fh, fcntl.LOCK_UN)
                fh.close()
                return
            state["locked"] = True
        done.set()

    threading.Thread(target=wait, name="memory-bank-file-lock", daemon=True).start()
    done.wait(timeout)
    with guard:
        if state["locked"]:
            return True
        state["abandoned"] = True
        return False


class Store:
    """One DuckDB bank file. Open a connection per operation with :meth:`connect`."""

    # DuckDB's buffer pool per connection. Its default, 80% of the machine, let a commit's
    # checkpoint of a million-memory bank take 2.7 GB and a namespace's load keep every block it
    # read (1.8 GB); 512 MB kept a 400k import at the same speed with its peak 1.4 GB lower. An
    # operation needing more spills to ``<bank>.tmp/`` for its duration.
    MEMORY_LIMIT = "512MB"
    SCAN_MEMORY_LIMIT = "128MB"  # while :meth:`stream_rows` streams

    def __init__(self, path: str | os.PathLike, lock_timeout: float = 10.0, read_only: bool = False):
        self.path = Path(path)
        self.lock_timeout = lock_timeout
        self.read_only = read_only
        self.lock_waits: list[float] = []  # seconds waited for the file, per operation that waited

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
                    if _flock_within(fh, mode, remaining):
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

    @staticmethod
    def _release_file_lock(key: str | None) -> None:
        if key is None:
            return
        with _FILE_LOCKS_GUARD:
            held = _FILE_LOCKS[key]
            held[1] -= 1
            if held[1] == 0:
                del _FILE_LOCKS[key]
                fcntl.flock(held[0], fcntl.LOCK_UN)
                held[0].close()

    def _open(self) -> tuple[duckdb.DuckDBPyConnection, str | None]:
        """A DuckDB connection and the file lock it holds: close with :meth:`_close`."""
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

    def _close(self, raw: duckdb.DuckDBPyConnection, key: str | None) -> None:
        try:
            raw.close()
        finally:
            self._release_file_lock(key)  # only now: closing the last connection checkpoints

    def _connect(self, deadline: float, started: float, waited: bool, delay: float) -> duckdb.DuckDBPyConnection:
        while True:
            try:
                con = duckdb.connect(str(self.path), read_only=self.read_only,
                                     config={"memory_limit": self.MEMORY_LIMIT})
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
    def connect(self, write: bool = True) -> Iterator[Connection]:
        """A connection inside one transaction: committed on success, rolled back on error."""
        raw, key = self._open()
        con = Connection(raw)
        try:
            if write and not self.read_only:
                con.execute("BEGIN TRANSACTION")
                try:
                    yield con
                except BaseException:
                    with contextlib.suppress(duckdb.Error):  # a damaged file may refuse the rollback too
                        con.execute("ROLLBACK")
                    raise
                con.execute("COMMIT")
            else:
                yield con
        except duckdb.Error as exc:
            # A damaged block shows up only when a query reads it: say which file and what to do,
            # never a DuckDB traceback.
            if is_corruption(exc):
                raise corrupt_error(self.path, str(exc)) from None
            raise
        finally:
            with contextlib.suppress(duckdb.Error):
                self._close(raw, key)

    @contextlib.contextmanager
    def locked(self) -> Iterator[None]:
        """Hold the file's lock, without a connection, for the block.

        Connections this process opens inside the block share the lock, and no other process can
        write the file until the block ends: a caller that must finish its own bookkeeping after
        closing a connection (the recall writer) stays the file's last writer until it is done.
        """
        started = time.monotonic()
        key, waited = self._take_file_lock(started + self.lock_timeout)
        if waited:
            self.lock_waits.append(time.monotonic() - started)
        try:
            yield
        finally:
            self._release_file_lock(key)

    @contextlib.contextmanager
    def hold(self) -> Iterator[Connection]:
        """A connection without a transaction, for a caller that commits several in a row.

        Closing a DuckDB connection checkpoints the file (a cost that grows with the bank), so a
        bulk import writes several back-to-back batches, each its own transaction, on one
        connection held for a bounded time, instead of one connection per batch.
        """
        raw, key = self._open()
        try:
            yield Connection(raw)
        finally:
            self._close(raw, key)

    def compact(self) -> None:
        """Rewrite the file from its live contents, so erased data leaves no trace in free blocks.

        DuckDB reuses freed blocks but does not wipe them; a hard delete must not leave the text
        readable in the file. The copy replaces the file while we still hold its lock, so a
        process waiting for the bank opens the new file when it retries.
        """
        raw, key = self._open()
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
        return FileSignature.of(self.path)

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
            src = duckdb.connect()  # in memory: the backup is attached read-only, the copy writable
            try:
                src.execute(f"ATTACH {_sql_string(backup)} AS _backup (READ_ONLY)").fetchall()
                tables = {r[0] for r in src.execute(
                    "SELECT table_name FROM information_schema.tables WHERE table_catalog = '_backup'").fetchall()}
                if not {"schema_migrations", "memories", "meta"} <= tables:
                    raise CorruptBankError(f"{backup} is not a Memory Console bank backup (it has no memories "
                                           "table); restore from a file made by memctl backup")
                _copy_database(src, tmp, source="_backup")
                src.execute("SELECT count(*), sum(length(text)) FROM _backup.memories").fetchall()  # reads every block
            except duckdb.Error as exc:
                raise corrupt_error(backup, str(exc), backup=True) from None
            finally:
                src.close()
            holder = Store(dest, lock_timeout=lock_timeout)
            raw = key = None
            current: tuple[int, list[tuple[int, str]]] | None = None
            if dest.exists():
                try:
                    raw, key = holder._open()
                    seq = int(raw.execute("SELECT value FROM meta WHERE key = 'change_seq'").fetchone()[0])
                    current = (seq, raw.execute("SELECT id, namespace FROM memories").fetchall())
                except CorruptBankError:
                    pass  # a damaged bank is what a restore is for: nobody can be using it
                except duckdb.Error:
                    pass
            try:
                con = duckdb.connect(str(tmp))
                try:
                    n = int(con.execute("SELECT count(*) FROM memories").fetchone()[0])
                    if current is not None:
                        _renumber_after(con, *current)
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
        with registered(con, _incoming=table):
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

    # Columns the recall writer reads back for the memories whose access counts it changed.
    ACCESS_COLUMNS = ("id", "namespace", "status", "created_at", "last_accessed_at", "importance",
                      "access_count", "use_count")
    _IN_LIST_MAX = 2000  # ids written into the SQL as a list at most; more go through a scan

    @staticmethod
    def access_rows(con: Connection, ids: list[int]) -> list[dict[str, Any]]:
        """The scoring fields (:data:`ACCESS_COLUMNS`) of these memories.

        The ids go in as a constant IN list, which DuckDB answers without the full scan that
        ``IN (SELECT unnest(?))`` costs (measured at a million memories and 300 ids: 12 ms of CPU
        against 50-70 ms). Longer lists (a large replayed journal) take the scan, whose cost does not
        grow with the list.
        """
        if not ids:
            return []
        cols = ", ".join(Store.ACCESS_COLUMNS)
        if len(ids) <= Store._IN_LIST_MAX:
            listed = ", ".join(str(int(i)) for i in ids)  # ints only: nothing else reaches the SQL
            return con.sql(f"SELECT {cols} FROM memories WHERE id IN ({listed})").to_arrow_table().to_pylist()
        return con.sql(f"SELECT {cols} FROM memories WHERE id IN (SELECT unnest(?))",
                       params=[[int(i) for i in ids]]).to_arrow_table().to_pylist()

    @staticmethod
    def stream_rows(con: Connection, where: str, params: list[Any], with_embedding: bool = False,
                    batch_rows: int = 65_536) -> Iterator[pa.Table]:
        """Memory rows as Arrow tables of up to ``batch_rows`` rows, in storage order: a namespace
        of a million memories loads without the whole result (4 GB with vectors) in memory at once."""
        cols = ", ".join(MEMORY_COLUMNS + (("embedding",) if with_embedding else ()))
        with Store.scanning(con):
            reader = con.sql(f"SELECT {cols} FROM memories WHERE {where}", params=params).to_arrow_reader(batch_rows)
            for batch in reader:
                yield pa.Table.from_batches([batch])

    @staticmethod
    @contextlib.contextmanager
    def scanning(con: Connection) -> Iterator[None]:
        """A smaller buffer pool while a large scan runs: a scan needs only the blocks in flight,
        and at MEMORY_LIMIT the pool would keep what it read until the connection closes, under
        whatever the caller builds from the rows next."""
        con.execute(f"SET memory_limit = '{Store.SCAN_MEMORY_LIMIT}'")
        try:
            yield
        finally:
            con.execute(f"SET memory_limit = '{Store.MEMORY_LIMIT}'")

    @staticmethod
    def embeddings_of(table: pa.Table, dim: int) -> np.ndarray:
        """The ``embedding`` column of an Arrow table as an (n, dim) float32 array."""
        col = table.column("embedding").combine_chunks()
        if len(col) == 0:
            return np.zeros((0, dim), dtype=np.float32)
        return col.flatten().to_numpy(zero_copy_only=False).astype(np.float32, copy=False).reshape(len(col), dim)

    # Free-text columns that may quote a memory (evidence, reports, notes, a query typed from it).
    QUOTING_COLUMNS = (("conflicts", "evidence"), ("merges", "detail"), ("maintenance_runs", "plan"),
                       ("maintenance_runs", "report"), ("events", "note"), ("retrievals", "query"),
                       ("labels", "query"), ("feedback", "answer"), ("ablation_cases", "question"),
                       ("ablation_cases", "expected"), ("ablation_cases", "answer_without"))

    @staticmethod
    def scrub_texts(con: Connection, texts: list[str | None]) -> None:
        """Replace every quotation of these (erased) texts in free-text columns by ``[erased]``:
        as written, JSON-escaped and as a Python repr, the forms reports store them in."""
        forms: set[str] = set()
        for t in texts:
            if t:
                forms |= {t, json.dumps(t)[1:-1], json.dumps(t, ensure_ascii=False)[1:-1], repr(t)[1:-1]}
        for form in sorted(forms, key=len, reverse=True):
            for table, col in Store.QUOTING_COLUMNS:
                con.execute(f"UPDATE {table} SET {col} = replace({col}, ?, '[erased]') WHERE contains({col}, ?)",
                            [form, form])

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
        with registered(con, _events=table):
            con.execute("INSERT INTO events (id, happened_at, actor, action, memory_id, before, after, note, "
                        "group_id) SELECT * FROM _events")

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

    @staticmethod
    def write_recalls(con: Connection, entries: list[dict[str, Any]]) -> tuple[int | None, list[int]]:
        """Write journaled recalls (see :mod:`memory_core.recall_log`) in bulk: their log rows, their
        hits, and the access counts and last-access times of the memories they returned.

        Idempotent: a retrieval id already in the store is skipped with its access counts, so a
        journal can be written again after a crash. Returns the change sequence given to the
        memories whose counts changed (None when none did) and their ids.
        """
        if not entries:
            return None, []
        ids = [int(e["id"]) for e in entries]
        have = {r[0] for r in con.execute("SELECT id FROM retrievals WHERE id IN (SELECT unnest(?))",
                                          [ids]).fetchall()}
        new = [e for e in entries if int(e["id"]) not in have]
        if not new:
            return None, []
        at = [datetime.fromisoformat(e["recalled_at"]) for e in new]
        heads = pa.table({
            "id": pa.array([int(e["id"]) for e in new], pa.int64()),
            "recalled_at": pa.array(at, pa.timestamp("us")),
            "actor": pa.array([e["actor"] for e in new], pa.string()),
            "namespace": pa.array([e["namespace"] for e in new], pa.string()),
            "query": pa.array([e["query"] for e in new], pa.string()),
            "params": pa.array([e["params"] for e in new], pa.string()),
            "preset": pa.array([e["preset"] for e in new], pa.string()),
            "gate": pa.array([e["gate"] for e in new], pa.string()),
            "recalled": pa.array([bool(e["recalled"]) for e in new], pa.bool_()),
            "latency_ms": pa.array([e["latency_ms"] for e in new], pa.float64()),
            "n_results": pa.array([int(e["n_results"]) for e in new], pa.int32()),
        })
        with registered(con, _heads=heads):
            con.execute("INSERT INTO retrievals (id, recalled_at, actor, namespace, query, params, preset, gate, "
                        "recalled, latency_ms, n_results) SELECT * FROM _heads")
        hit_rows = [(int(e["id"]), *h) for e in new for h in e["hits"]]
        if not hit_rows:
            return None, []
        cols = list(zip(*hit_rows))
        hits = pa.table({
            "retrieval_id": pa.array(cols[0], pa.int64()), "rank": pa.array(cols[1], pa.int32()),
            "memory_id": pa.array(cols[2], pa.int64()),
            **{name: pa.array(cols[3 + j], pa.float64()) for j, name in enumerate(
                ("score", "similarity", "lexical", "recency", "importance", "frequency"))},
        })
        uses: dict[int, list] = {}
        for e, when in zip(new, at):
            for h in e["hits"]:
                use = uses.setdefault(int(h[1]), [0, when])
                use[0] += 1
                use[1] = max(use[1], when)
        touched = list(uses)
        access = pa.table({"id": pa.array(touched, pa.int64()),
                           "n": pa.array([uses[m][0] for m in touched], pa.int64()),
                           "at": pa.array([uses[m][1] for m in touched], pa.timestamp("us"))})
        with registered(con, _hits=hits, _access=access):
            con.execute("INSERT INTO retrieval_hits (retrieval_id, rank, memory_id, score, similarity, lexical, "
                        "recency, importance, frequency) SELECT * FROM _hits")
            seq = Store.next_seq(con)
            con.execute(
                "UPDATE memories SET access_count = memories.access_count + _access.n, seq = ?, "
                "last_accessed_at = greatest(coalesce(memories.last_accessed_at, _access.at), _access.at) "
                "FROM _access WHERE memories.id = _access.id AND memories.status = 'active'", [seq])
        return seq, touched
