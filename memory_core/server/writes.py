"""Grouping concurrent single adds into one write: one embedding batch, one transaction.

Each ``POST /v1/memories`` hands its row to the :class:`WriteQueue` and waits. One thread takes
every row waiting, embeds them as one batch and stores them with one ``add_many`` (one
transaction), then checks the new memories for contradictions, namespace by namespace, as
``MemoryBank.add`` does (except rows with ``detect_conflicts: False``). A request is answered only
once its row is committed. ``add_many`` is all or nothing, so a group that fails (one bad row
refuses the whole transaction) is written again one row at a time: each request gets its own
answer, and only a bad row's request an error.
"""

from __future__ import annotations

import queue
import threading
from concurrent.futures import Future
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from memory_core import MemoryBank

MAX_GROUP = 256  # rows written in one transaction at most


class WriteQueue:
    """One writer thread for a bank's single adds; :meth:`add` blocks until its row is stored."""

    def __init__(self, bank: "MemoryBank"):
        self.bank = bank
        self.pending: "queue.Queue[tuple[dict[str, Any], Future] | None]" = queue.Queue()
        self.thread = threading.Thread(target=self.run, name="memctl-writes", daemon=True)
        self.closed = False
        self.thread.start()

    def add(self, row: dict[str, Any]) -> int:
        """Store one row (as ``MemoryBank.add`` takes it) and return its id, or raise its error."""
        if self.closed:
            raise RuntimeError("the server is shutting down")
        done: Future = Future()
        self.pending.put((row, done))
        return done.result()

    def close(self) -> None:
        """Write what is queued, then stop the thread."""
        self.closed = True
        self.pending.put(None)
        self.thread.join()

    def run(self) -> None:
        while True:
            first = self.pending.get()
            if first is None:
                return
            group = [first]
            stop = False
            while len(group) < MAX_GROUP:
                try:
                    item = self.pending.get_nowait()
                except queue.Empty:
                    break
                if item is None:
                    stop = True
                    break
                group.append(item)
            self.write_group(group)
            if stop:
                return

    def write_group(self, group: list[tuple[dict[str, Any], Future]]) -> None:
        if len(group) > 1:
            try:
                ids = self.bank.add_many([{k: v for k, v in row.items() if k != "detect_conflicts"}
                                          for row, _ in group])
            except Exception:
                ids = None  # write them one by one below: each request gets its own answer
            if ids is not None:
                by_namespace: dict[str, list[int]] = {}
                for (row, _), mid in zip(group, ids):
                    if row.get("detect_conflicts", True):
                        by_namespace.setdefault(row["namespace"], []).append(mid)
                for namespace, mids in by_namespace.items():
                    try:
                        self.bank.detect_conflicts(namespace, memory_ids=mids)
                    except Exception:
                        pass  # stored: a missed contradiction is found by the next detection run
                for (_, done), mid in zip(group, ids):
                    done.set_result(mid)
                return
        for row, done in group:
            try:
                done.set_result(self.bank.add(**row))
            except BaseException as exc:
                done.set_exception(exc)
