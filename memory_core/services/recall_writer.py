"""Writing the recall log: retrieval ids, the journal of recorded recalls, and the flush thread.

A recorded recall is journaled (see :mod:`memory_core.services.recall_log`) and counted at once in this
bank's index; a background thread writes the journal to the store every few seconds, and every
other operation writes it first in its own transaction (see :meth:`Core.session`).
"""

from __future__ import annotations

import atexit
import json
import math
import threading
import weakref
from datetime import datetime
from typing import TYPE_CHECKING

from ..index import gate as gate_mod
from ..storage.clock import to_naive_utc
from ..models import Hit
from .recall_log import FLUSH_AT, FLUSH_INTERVAL
from ..index.scoring import ScoringParams
from ..storage import tables

if TYPE_CHECKING:
    from .core import Core

RETRIEVAL_ID_BLOCK = 4096  # retrieval ids a bank reserves at a time (recall knows its id at once)

_OPEN: "weakref.WeakSet[RecallWriter]" = weakref.WeakSet()  # writers of banks open for writing


@atexit.register
def _flush_open() -> None:
    """Write what open banks still buffer when the interpreter exits without closing them."""
    for writer in list(_OPEN):
        try:
            writer.flush()
        except Exception:  # the journal keeps it; the next opener writes it
            pass


class RecallWriter:
    """Journals recorded recalls and writes them to the store, from a thread of its own."""

    def __init__(self, core: "Core"):
        self.core = core
        self._ids = (0, 0)  # the reserved block: next id, end (exclusive)
        # The first id of a block the flush reserved ahead (in its own transaction), so that
        # recall does not open the file when its block runs out.
        self._spare: int | None = None
        self._thread: threading.Thread | None = None
        self._wake = threading.Event()
        self._latest = threading.local()  # per thread: a server's requests each see their own

    def flush(self) -> int:
        """Write buffered recalls (this process's, and any a crashed process left in its journal)
        to the store now; returns how many.

        The file work (opening it, the update, committing, the checkpoint of closing it: long at a
        million memories, see BENCHMARKS.md, "Figures behind the code") runs without the bank's lock, so recalls from
        other threads go on
        meanwhile; other operations wait for the flush to finish before they open the file.
        """
        core = self.core
        with core.lock:
            core.wait_for_flush()
            if core.closed or core.store.read_only:
                return 0
            batches = core.journal.seal()
            orphans = list(core.journal.orphans())
            if not batches and not orphans:
                return 0
            entries = [e for b in batches for e in b.entries]
            nxt, end = self._ids
            reserve = self._spare is None and end - nxt < RETRIEVAL_ID_BLOCK // 2
            core.flushing = True
        try:
            # The file's lock is held past the connection's close until the indexes take the
            # written counts, so no other process writes before this bank has caught up with
            # its own write (recall trusts the indexes meanwhile, see flush_current).
            with core.store.locked():
                # One engine thread: the scan, the update and the checkpoint then leave the other
                # core to recall (with DuckDB, two threads cost more CPU in all, see BENCHMARKS.md, "Figures behind
                # the code").
                with core.store.hold(threads=1) as con:
                    with core.lock:
                        core.catch_up(con)
                        core.flush_current = True
                    written = core.write_recalls_apart(con, entries, orphans)
                    spare = None
                    if reserve:
                        with con.transaction():
                            spare = tables.take_ids(con, "next_retrieval_id", RETRIEVAL_ID_BLOCK)
                with core.lock:
                    if spare is not None:
                        self._spare = spare
                    core.recalls_written(written, batches, orphans)
                    core.signature = core.store.signature_after(core.synced_seq)
                    core.flush_current = False
        except BaseException:
            with core.lock:
                for _, _, fh in orphans:
                    fh.close()  # still on disk: the next flush takes them again
            raise
        finally:
            with core.lock:
                core.flushing = core.flush_current = False
                core.flush_done.notify_all()
        return len(entries) + sum(len(found) for _, found, _ in orphans)

    def next_id(self) -> int:
        """A retrieval id for a recall, from a block reserved in the store (ids a closed bank did
        not use are skipped, never reused)."""
        nxt, end = self._ids
        if nxt >= end and self._spare is not None:
            nxt, self._spare = self._spare, None
            end = nxt + RETRIEVAL_ID_BLOCK
        elif nxt >= end:
            with self.core.session() as con:
                nxt = tables.take_ids(con, "next_retrieval_id", RETRIEVAL_ID_BLOCK)
            end = nxt + RETRIEVAL_ID_BLOCK
        self._ids = (nxt + 1, end)
        return nxt

    def record(self, rid: int, query: str, namespace: str, p: ScoringParams, preset: str | None,
               decision: gate_mod.GateDecision | None, hits: list[Hit], now_dt: datetime,
               latency_ms: float) -> None:
        """Log a real recall and count the access of every memory it returned (with the lock held).

        Journaled and buffered; this bank's index counts the access at once, so its next recall
        ranks with the new counts, as the store will.
        """
        core = self.core
        at = to_naive_utc(now_dt)
        core.journal.append({
            "id": rid, "recalled_at": at.isoformat(), "actor": core.actor, "namespace": namespace,
            "query": query, "params": p.to_json(), "preset": preset,
            "gate": None if decision is None else json.dumps(decision.to_dict(), ensure_ascii=False),
            "recalled": decision is None or decision.recall, "latency_ms": latency_ms, "n_results": len(hits),
            "hits": [[h.rank, h.memory.id, h.score, *(h.components[c] for c in
                      ("similarity", "lexical", "recency", "importance", "frequency"))] for h in hits],
        })
        self._latest.rid = rid
        idx = core.indexes.get(namespace)
        for h in hits:
            mid = h.memory.id
            core.memories.pop(mid, None)
            r = None if idx is None else idx.row_of.get(mid)
            if r is None:
                continue
            last = idx.last_access[r]
            info = idx.info[r]
            if math.isnan(last) or last < now_dt.timestamp():
                last = now_dt.timestamp()
                if info is not None:
                    info = info[:5] + (at,) + info[6:]
            idx.set_fields(mid, idx.created[r], last, idx.importance[r], idx.access_count[r] + 1)
            idx.set_info(mid, info)
        if self._thread is None:
            self._thread = threading.Thread(target=self._loop, name="memory-bank-flush", daemon=True)
            self._thread.start()
        if len(core.journal.current) >= FLUSH_AT:
            self._wake.set()

    def _loop(self) -> None:
        """The background writer: pending recalls reach the store every FLUSH_INTERVAL seconds."""
        while not self.core.closed:
            self._wake.wait(FLUSH_INTERVAL)
            self._wake.clear()
            try:
                self.flush()
            except Exception:
                pass  # the file is busy or gone: the journal keeps the recalls for the next try

    @property
    def last_retrieval_id(self) -> int | None:
        """The log entry of the latest real recall this thread made through the bank."""
        return getattr(self._latest, "rid", None)

    def start(self) -> None:
        """The bank is open for writing: write at exit what it still buffers, and first what a
        crashed process journaled but never wrote."""
        _OPEN.add(self)
        if self.core.journal.folder.is_dir():
            self.flush()

    def close(self) -> None:
        """Write buffered recalls, close the core (it saves changed index caches), stop the
        thread. Safe to call twice."""
        core = self.core
        with core.lock:
            if core.closed:
                return
            if not core.store.read_only:
                try:
                    self.flush()
                except Exception:
                    # The file stayed busy past lock_timeout: the recalls stay in the journal, which
                    # the next process to open or flush the bank writes.
                    pass
            core.close()
            _OPEN.discard(self)
        self.stop()

    def stop(self) -> None:
        """Wake the thread so it sees the bank closed, and wait for it (briefly)."""
        self._wake.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout=5)
