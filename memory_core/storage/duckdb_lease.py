"""How a process keeps a DuckDB bank file between its operations: the file's lock (``flock`` on
``<bank>.lock``, one per process and file), the short lease that keeps the file open while work
follows work, yielding it to waiting processes, and releasing leases around ``fork``.

One process at a time has a DuckDB file. ``<bank>.lock`` is taken before DuckDB opens the file and
released after it closed it (DuckDB reads headers before its own lock: see ``_take_file_lock`` in
``duckdb.py``). Opening the file costs time and closing the last connection checkpoints it, so
after an operation the connection is kept for a **lease** (:class:`_Lease`): the next operation of
the same process (any bank object on that file) takes a cursor of it, and an agent adding one
memory at a time opens the file about once a second instead of several times per add. The lease
ends (the checkpoint, then the lock is released):

- after :data:`LEASE_IDLE` without an operation (time an add spends embedding does not count), and
  after the operation running when it turns :data:`LEASE_MAX` old (:data:`SERVED_LEASE_MAX` for
  a server, which would otherwise reopen the file every second under load): a program that does
  not announce itself (an older memory_core, the ``duckdb`` shell) still gets the file;
- at once when another process waits: a waiter holds a shared flock on ``<bank>.waiting`` while it
  blocks on ``<bank>.lock``; the holder tests it (a non-blocking exclusive flock) every
  :data:`LEASE_POLL` from the lease thread and before each operation takes the lease, lets go, and
  lets the announced waiters take the file first (up to :data:`YIELD_MAX`) before it competes
  again. Under contention this is per-operation sharing; alone, it is one open per lease;
- on ``bank.close()`` (``Store.release()``), before ``os.fork()``, at exit, and before a
  compaction or a restore replaces the file.

A **block that keeps the file** (``Store.keep()``, ``bank.keep_store()``) suspends the first two
for :data:`KEEP_MAX` of the lease (counted from the first time a block kept it, so that blocks back
to back count together): its operations share one open, and a waiting process gets the file when
the block ends, or once that time is up. The dashboard draws every page in one (``app.py``): a
page reads the bank several times, and with a server writing the file each read would otherwise be
one hand-over of the file.

While a lease lives, nothing but this process (and, through ``Store.holder()``, only the bank
object that used it) can change the file: what that bank read under the same lease is still true.
The server's token check relies on it (``Tokens.check_at_once`` answers on the event loop while
the lease, or on PostgreSQL the token notifications, vouch for the cached tokens). Nothing waits
for the lease to end to be durable: every commit is in the WAL before the operation returns, and
another process sees it on its next operation. The lease's own checkpoint changes the file's size
and time, so the store maps the signature after it back to the one before (``_SIGNATURE_ALIAS``):
recall's "did anyone write?" test is not fooled by it. A tool that opens the file with DuckDB
directly in a process that has the bank open calls :func:`release_file` first.
"""

from __future__ import annotations

import contextlib
import fcntl
import itertools
import os
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

import duckdb


def release_file_lock(key: str | None) -> None:
    """One holder fewer of this process's lock of a bank file; the last one unlocks and closes it."""
    if key is None:
        return
    with _FILE_LOCKS_GUARD:
        held = _FILE_LOCKS[key]
        held[1] -= 1
        if held[1] == 0:
            del _FILE_LOCKS[key]
            fcntl.flock(held[0], fcntl.LOCK_UN)
            held[0].close()



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


# Per process: the ``<bank>.lock`` files this process holds, as [open file, connections using it].
_FILE_LOCKS: dict[str, list] = {}
_FILE_LOCKS_GUARD = threading.Lock()
# Per process: one writer at a time per bank file. The file lock above is shared by every thread
# of the process (DuckDB shares one database instance per process), so two threads' write
# transactions (two banks on one file, or a bank's flush thread beside another bank's operation)
# could otherwise overlap, and DuckDB refuses the second one's update ("Conflict on update").
_WRITERS: dict[str, threading.RLock] = {}


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


# -- leases: the file kept between two operations of one process --------------------------------

# How long the file is kept after an operation with nothing to do, and at most in all (the lease
# then ends after the operation running at that moment, and the next one opens the file again).
# Another memory_core process announces that it waits and gets the file at once, whatever these
# say; the idle time only spares a busy process (a server between two requests) the open and the
# checkpoint, which cost more than a small write.
LEASE_IDLE = 0.25
LEASE_MAX = 1.0
# A server's lease (:meth:`DuckDBStore.serve`): a process that announces itself still gets the file
# at once; one that does not waits this long at most, under the default lock timeout (10 s).
SERVED_LEASE_MAX = 5.0
LEASE_POLL = 0.005  # how often an idle lease looks for a process waiting for the file
# After a lease ended because another process waited, this process lets that process take the file
# first (it was woken, but may not have run yet), for at most this long.
YIELD_MAX = 0.2
# A block of operations that keeps the file between them (:meth:`DuckDBStore.keep`: a dashboard
# page's reads) holds a process that waits for it for at most this long.
KEEP_MAX = 1.0


class _Lease:
    """This process's hold on a bank file between its operations.

    Opening a DuckDB file costs time (see BENCHMARKS.md, "Figures behind the code") and closing the last connection
    checkpoints it, which
    is what a small write cost: an agent adding memories one at a time opened the file for each
    step. So when an operation ends, its connection is kept (``keeper``, holding one count of the
    file lock and DuckDB's database instance) and the next operation of this process takes a
    cursor of it: no open, no checkpoint. The lease ends (the keeper closes: one checkpoint for
    every operation of the lease; then the file lock is released) when

    * no operation used it for :data:`LEASE_IDLE` seconds (not counting while an operation of this
      process prepares to use it: :meth:`DuckDBStore.upcoming`), or the operation running when it turns
      ``max_age`` seconds old ends (:data:`LEASE_MAX`; :data:`SERVED_LEASE_MAX` for a server): a
      process that does not announce itself (an older memory_core, the ``duckdb`` shell) gets the
      file within that long;
    * another process waits for the file: a waiter holds a shared lock on ``<bank>.waiting`` while
      it waits (see :func:`_announced`), which the lease thread tests every :data:`LEASE_POLL`
      seconds and an operation before it takes the lease; this process then lets it take the file
      first (:data:`YIELD_MAX`);
    * the bank closes (:meth:`DuckDBStore.release`), before the process forks, at exit, and before
      a compaction or restore replaces the file.

    Inside a block of :meth:`DuckDBStore.keep` (for :data:`KEEP_MAX` seconds of a lease) none of the
    first two apply: the block's operations share one open of the file, and a process that waits
    gets it when the block ends.

    Durability does not wait for the end of a lease: every commit is in the WAL on disk (DuckDB
    syncs it) before the operation returns, and a killed process's WAL is replayed by the next one.
    """

    def __init__(self, path: Path, key: str, keeper: duckdb.DuckDBPyConnection, read_only: bool, idle: float,
                 max_age: float = LEASE_MAX):
        self.path = path
        self.max_age = max_age  # LEASE_MAX, or longer for a server (SERVED_LEASE_MAX)
        # The meta counters as this process's cursors of the lease last wrote them (see
        # DuckDBConnection.known_counters): no other process writes the file while the lease lives.
        self.counters: dict[str, int] = {}
        self.key = key
        self.keeper = keeper
        self.read_only = read_only
        self.idle = idle
        try:
            self.wait_fh: Any = open(str(path) + ".waiting", "a+b")
        except OSError:  # a read-only folder: nobody can announce, the lease ends when idle
            self.wait_fh = None
        self.users = 0  # operations using it now
        self.stores: set[int] = set()  # numbers of the DuckDBStore objects that used it (see DuckDBStore.holder)
        self.started = self.last = time.monotonic()
        self.ending = False
        self.kept_since: float | None = None  # when a block of DuckDBStore.keep first kept this lease

    def kept(self, now: float) -> bool:
        """With the guard held: does a block of :meth:`DuckDBStore.keep` keep this lease from ending?
        For :data:`KEEP_MAX` seconds of the lease at most, counted from the first time one did, so
        that blocks back to back (page after page) still hand the file over once a second."""
        if not _KEPT.get(self.key):
            return False
        if self.kept_since is None:
            self.kept_since = now
        return now - self.kept_since < KEEP_MAX

    def waiters(self) -> bool:
        """Does another process wait for the file? (Only it holds ``<bank>.waiting`` shared.)"""
        if self.wait_fh is None:
            return False
        try:
            fcntl.flock(self.wait_fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            return True
        fcntl.flock(self.wait_fh, fcntl.LOCK_UN)
        return False

    def due(self, now: float, idle: bool = True) -> bool:
        """With the guard held: should this unused lease end now (counting the time it has been
        idle, unless an operation is about to use it)? Marks it ending."""
        if self.users or self.ending or self.kept(now):
            return False
        waited = self.waiters()
        idle = idle and not _UPCOMING.get(self.key) and now - self.last >= self.idle
        if waited or idle or now - self.started >= self.max_age:
            if waited:
                _YIELD_UNTIL[self.key] = now + YIELD_MAX
            self.ending = True
        return self.ending

    def end(self) -> None:
        """Close the keeper (the checkpoint) and let go of the file. Called once, after :meth:`due`
        or with ``ending`` set, without the guard."""
        before = _signature(self.path, wait=False)
        try:
            with contextlib.suppress(duckdb.Error):
                self.keeper.close()
            # Nobody else can have written since ``before``: the lock is still ours. Recall compares
            # signatures to know whether anyone wrote; the checkpoint alone must not look like it.
            with _LEASE_CHANGED:
                _SIGNATURE_ALIAS[self.key] = (FileSignature.of(self.path), before)
        finally:
            with _LEASE_CHANGED:
                _LEASES.pop(self.key, None)
                _LEASE_CHANGED.notify_all()
            release_file_lock(self.key)
            if self.wait_fh is not None:
                self.wait_fh.close()


_LEASES: dict[str, _Lease] = {}  # by lock key; guarded by _FILE_LOCKS_GUARD
_LEASE_CHANGED = threading.Condition(_FILE_LOCKS_GUARD)
_LEASE_THREAD: list[threading.Thread] = []
_YIELD_UNTIL: dict[str, float] = {}  # lock key -> until when waiters announced may go first
_UPCOMING: dict[str, int] = {}  # lock key -> operations of this process about to use the file
_KEPT: dict[str, int] = {}  # lock key -> blocks of DuckDBStore.keep under way
# lock key -> (the file's signature after a lease's checkpoint, its signature before it)
_SIGNATURE_ALIAS: dict[str, tuple["FileSignature", "FileSignature"]] = {}

_STORE_NUMBERS = itertools.count(1)


@contextlib.contextmanager
def _counted(counts: dict[str, int], key: str) -> Iterator[None]:
    """Count the block in ``counts[key]`` (under the guard) while it runs; no entry once none does."""
    with _FILE_LOCKS_GUARD:
        counts[key] = counts.get(key, 0) + 1
    try:
        yield
    finally:
        with _FILE_LOCKS_GUARD:
            counts[key] -= 1
            if not counts[key]:
                del counts[key]


def _signature(path: Path, wait: bool = True) -> FileSignature:
    """The file's signature, a lease's checkpoint not counted as a change (see :meth:`_Lease.end`).
    With ``wait``, not while this process's lease is ending: its checkpoint is under way."""
    key = str(path) + ".lock"
    with _LEASE_CHANGED:
        while wait and (lease := _LEASES.get(key)) is not None and lease.ending:
            _LEASE_CHANGED.wait()
        sig = FileSignature.of(path)
        alias = _SIGNATURE_ALIAS.get(key)
    return alias[1] if alias is not None and alias[0] == sig else sig


def _lease_loop() -> None:
    """The lease thread: ends idle leases (see :class:`_Lease`), one at a time."""
    while True:
        with _LEASE_CHANGED:
            while not _LEASES:
                _LEASE_CHANGED.wait()
            now = time.monotonic()
            due = next((lease for lease in list(_LEASES.values()) if lease.due(now)), None)
        if due is not None:
            due.end()
        else:
            time.sleep(LEASE_POLL)


def _end_leases(key: str | None = None, wait: bool = True) -> None:
    """End this process's leases (of ``key`` only, when given) that no operation uses, and wait
    for those already ending (a keeper closing in the lease thread when the interpreter exits
    aborts the process); with ``wait``, also wait for the operations using them to end."""
    while True:
        with _LEASE_CHANGED:
            found = [lease for k, lease in _LEASES.items() if key is None or k == key]
            idle = [lease for lease in found if not lease.users and not lease.ending]
            for lease in idle:
                lease.ending = True
            if not idle:
                if not any(lease.ending or wait for lease in found):
                    return
                _LEASE_CHANGED.wait(0.05)
                continue
        for lease in idle:
            lease.end()


def release_file(path: str | os.PathLike) -> None:
    """Let go of the bank file at ``path`` if this process keeps it between operations: before a
    tool in this process opens it with DuckDB directly (DuckDB refuses to open a file it has open
    with other settings) or reads its bytes (the last operations may still be in the WAL)."""
    _end_leases(str(Path(path)) + ".lock")


@contextlib.contextmanager
def _announced(path: Path) -> Iterator[None]:
    """Tell whoever holds the file that this process waits for it (for the block)."""
    try:
        fh = open(str(path) + ".waiting", "a+b")
    except OSError:
        yield
        return
    try:
        with contextlib.suppress(OSError):
            fcntl.flock(fh, fcntl.LOCK_SH)  # a holder testing for waiters has it for a moment
        yield
    finally:
        fh.close()


def _before_fork() -> None:
    """A child must not inherit a kept connection (it would checkpoint the file as it exits):
    end the idle leases, and hold the guard across the fork."""
    _end_leases(wait=False)
    _FILE_LOCKS_GUARD.acquire()


def _after_fork_in_parent() -> None:
    _FILE_LOCKS_GUARD.release()


def _after_fork_in_child() -> None:
    _FILE_LOCKS_GUARD.release()
    # Leases in use by another thread of the parent: that thread does not exist here. Keep the
    # objects (closing the keeper would write the parent's file) but forget them.
    _ORPHANS.extend(_LEASES.values())
    _LEASES.clear()
    _LEASE_THREAD.clear()
    _YIELD_UNTIL.clear()


_ORPHANS: list[_Lease] = []
if hasattr(os, "register_at_fork"):
    os.register_at_fork(before=_before_fork, after_in_parent=_after_fork_in_parent,
                        after_in_child=_after_fork_in_child)
