"""The retrieval log's write buffer: recorded recalls are journaled at once and written in batches.

Writing each recall to DuckDB costs two transactions' worth of opening and committing the file, ten
to a hundred times the ranking itself (BENCHMARKS.md, "Figures behind the code"). So a recorded
recall appends one JSON line to this process's journal file
(``<bank>.journal/<pid>-<random>.jsonl``) and returns; the bank writes the pending recalls (their
log rows and the access counts they add) to the store in one transaction: from a background thread
every :data:`FLUSH_INTERVAL` seconds, before any other operation of the same bank touches the file
(so ``retrievals()``, ``stats()`` and usage metrics read in the same process always see every
recall), on :meth:`MemoryBank.close`, and at exit.

What a crash loses: nothing a process crash (kill -9, an exception that kills the interpreter)
can take. The journal line is written to the operating system before ``recall`` returns; each
journal file is locked (``flock``) by its owner for as long as the owner lives, and whoever opens
or flushes the bank next finds journals nobody holds and writes them to the store. A journal is
locked before it appears under its ``*.jsonl`` name (it is created as ``.<name>.creating`` and
renamed once locked), so no other process can take a live journal for an abandoned one; a
process killed in that instant leaves an empty ``.creating`` file and no recall (none had
returned). Writing is idempotent (a retrieval id already in the store is skipped, together with
its access counts), so a crash between committing a batch and deleting its journal counts
nothing twice.

Writing a batch takes the DuckDB file for tens to hundreds of milliseconds (opening it, the update,
the checkpoint on closing it), so the background writer does not hold the bank's lock meanwhile:
recalls go on. To keep the lines being written apart from those recorded meanwhile, the writer
*seals* the current journal file (:meth:`RecallJournal.seal`: it keeps its lock and its lines, and
the next recall starts a new file) and deletes it once the batch is committed
(:meth:`RecallJournal.written`). A sealed file the writer could not write stays sealed and is
written with the next batch; one left by a crash is an orphan like any other.

Only a crash of the whole machine (power loss) can lose the lines the OS had not yet put on disk:
the journal is not fsynced per recall, which would cost more than the batching saves.

Other processes see a recall once it is flushed: within :data:`FLUSH_INTERVAL` seconds while the
recalling process lives, at once when it closes the bank.
"""

from __future__ import annotations

import fcntl
import json
import os
import secrets
from pathlib import Path
from typing import IO, Any, Iterator

FLUSH_INTERVAL = 2.0  # seconds between background writes of pending recalls
FLUSH_AT = 512  # pending recalls that wake the writer before the interval is up


class SealedJournal:
    """A journal file closed to new lines, locked by its owner until its lines are in the store."""

    def __init__(self, path: Path, fh: IO[str], entries: list[dict[str, Any]]):
        self.path = path
        self.fh = fh
        self.entries = entries


class RecallJournal:
    """This process's journal of recorded recalls not yet in the store."""

    def __init__(self, folder: Path):
        self.folder = folder  # the store's journal folder (next to a bank file, or a local cache folder)
        self.current: list[dict[str, Any]] = []  # lines of the open file
        self.sealed: list[SealedJournal] = []  # files being (or still to be) written
        self._fh: IO[str] | None = None
        self.path: Path | None = None

    @property
    def pending(self) -> list[dict[str, Any]]:
        """Every recall journaled and not yet written, oldest first."""
        return [e for s in self.sealed for e in s.entries] + self.current

    def _open(self) -> IO[str]:
        self.folder.mkdir(parents=True, exist_ok=True)
        name = f"{os.getpid()}-{secrets.token_hex(4)}"
        # Created under a name orphans() does not look at, locked, then renamed (the lock stays
        # with the file): a journal is never visible unlocked. Created and then locked under its
        # final name, another process flushing in between took it for an orphan, found it empty
        # and deleted it, and this process journaled into a deleted file from then on.
        creating = self.folder / f".{name}.creating"
        fh = open(creating, "a+", encoding="utf-8")
        fcntl.flock(fh, fcntl.LOCK_EX)  # held while we live: an unlocked journal is an orphan
        self.path = self.folder / f"{name}.jsonl"
        os.replace(creating, self.path)
        return fh

    def append(self, entry: dict[str, Any]) -> None:
        """Journal one recorded recall (in the OS's hands when this returns) and queue it."""
        if self._fh is None:
            self._fh = self._open()
        self._fh.write(json.dumps(entry, ensure_ascii=False, separators=(",", ":")) + "\n")
        self._fh.flush()
        self.current.append(entry)

    def seal(self) -> list[SealedJournal]:
        """Close the current file to new lines (the next :meth:`append` opens another) and return
        every sealed file: what a batch written now must hold."""
        if self.current:
            assert self._fh is not None and self.path is not None
            self.sealed.append(SealedJournal(self.path, self._fh, self.current))
            self._fh, self.path, self.current = None, None, []
        return list(self.sealed)

    def written(self, batches: list[SealedJournal]) -> None:
        """These sealed files' recalls are committed to the store: delete the files."""
        for b in batches:
            b.path.unlink(missing_ok=True)
            fcntl.flock(b.fh, fcntl.LOCK_UN)
            b.fh.close()
            self.sealed.remove(b)

    def close(self) -> None:
        """Drop the (empty) journal file and let go of the others. Call after a flush; pending
        entries stay on disk (unlocked) for the next opener to replay."""
        for b in self.sealed:
            fcntl.flock(b.fh, fcntl.LOCK_UN)
            b.fh.close()
        self.sealed = []
        if self._fh is None:
            return
        fh, self._fh = self._fh, None
        if not self.current and self.path is not None:
            self.path.unlink(missing_ok=True)
        fcntl.flock(fh, fcntl.LOCK_UN)
        fh.close()

    def orphans(self) -> Iterator[tuple[Path, list[dict[str, Any]], IO[str]]]:
        """Journals of processes that are gone, each with its entries and an open handle holding
        its lock (close it after deleting the file)."""
        if not self.folder.is_dir():
            return
        own = {s.path for s in self.sealed} | ({self.path} if self.path is not None else set())
        paths = [p for p in sorted(self.folder.glob("*.jsonl")) if p not in own]
        for path in paths:
            try:
                fh = open(path, "r+", encoding="utf-8")
            except FileNotFoundError:
                continue
            try:
                fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                fh.close()  # its owner is alive and will write it itself
                continue
            try:
                current = os.stat(path).st_ino == os.fstat(fh.fileno()).st_ino
            except FileNotFoundError:
                current = False
            if not current:
                fh.close()  # another process replayed and deleted it while we waited to open it
                continue
            entries = []
            for line in fh.read().split("\n"):  # not splitlines(): a query may hold U+2028
                if not line:
                    continue
                try:
                    entries.append(json.loads(line))
                except json.JSONDecodeError:
                    pass  # a line cut short by the crash: the recall never returned
            yield path, entries, fh
