"""Grouping concurrent single adds into one write: one embedding batch, one transaction.

Each ``POST /v1/memories`` (and MCP's ``add_memory``) hands its row to the :class:`WriteQueue`
and waits. One thread takes every row waiting and stores them with ``MemoryBank.add_each``: one
embedding batch, one transaction. A request is answered once its row is committed; a bad row
gets its own error and the others of its group are stored. The history names each row's caller
(rows of several tokens are written per token).

Then, before the next group, the same thread checks the group's memories for contradictions in
the same hold of the store (``add_each``'s ``on_stored`` answers in between, as ``MemoryBank.add``
checks), except rows sent with ``detect_conflicts: False``: an agent waits for its memory to be
stored, not for the rules.
Whoever reads conflicts calls :meth:`WriteQueue.settle` first, so that the conflicts of every add
answered before are there (read-your-writes, as in process).
"""

from __future__ import annotations

import contextlib
import logging
import queue
import threading
from concurrent.futures import Future
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from memory_core import Memory, MemoryBank

log = logging.getLogger(__name__)

MAX_GROUP = 256  # rows written in one transaction at most


class WriteQueue:
    """One writer thread for a bank's single adds; :meth:`add` blocks until its row is stored."""

    def __init__(self, bank: "MemoryBank"):
        self.bank = bank
        self.pending: "queue.Queue[tuple[dict[str, Any], str | None, Future] | None]" = queue.Queue()
        self.checks = threading.Condition()
        self.answered = 0  # groups answered, and of them checked for contradictions (in order)
        self.checked = 0
        self.rows_written = 0  # rows stored, and the groups (one batch, one transaction) they took
        self.groups_written = 0
        self.thread = threading.Thread(target=self.run, name="memctl-writes", daemon=True)
        self.closed = False
        self.thread.start()

    def add(self, row: dict[str, Any], actor: str | None = None) -> "Memory":
        """Store one row (as ``MemoryBank.add`` takes it) as made by ``actor`` (default: the
        bank's), and return the stored memory, or raise its error."""
        return self.submit(row, actor).result()

    def submit(self, row: dict[str, Any], actor: str | None = None) -> "Future[Memory]":
        """Queue one row as :meth:`add` does; its future (an async route awaits it without a thread)."""
        if self.closed:
            raise RuntimeError("the server is shutting down")
        done: Future = Future()
        self.pending.put((row, actor, done))
        return done

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

    def write_group(self, group: list[tuple[dict[str, Any], str | None, Future]]) -> None:
        """Store a group: one ``add_each`` per actor in it (the history names who made each add)."""
        by_actor: dict[str | None, list[tuple[dict[str, Any], Future]]] = {}
        for row, actor, done in group:
            by_actor.setdefault(actor, []).append((row, done))
        for actor, items in by_actor.items():
            with contextlib.nullcontext() if actor is None else self.bank.acting_as(actor):
                self.write_rows(items)

    def settle(self, timeout: float = 10.0) -> None:
        """Wait until the adds answered so far are checked for contradictions (at most ``timeout``
        seconds: a check that takes longer is still running, and its conflicts come later)."""
        with self.checks:
            target = self.answered
            self.checks.wait_for(lambda: self.checked >= target, timeout=timeout)

    def write_rows(self, items: list[tuple[dict[str, Any], Future]]) -> None:
        """Store rows of one actor; answer each request once committed, then (in the same hold of
        the store) check the stored memories for contradictions."""
        rows = [{k: v for k, v in row.items() if k not in ("detect_conflicts", "dedupe")} for row, _ in items]
        answered = False

        def answer(results: list[Any], stored: dict[int, "Memory"]) -> None:
            nonlocal answered
            answered = True
            with self.checks:
                self.answered += 1
                stored_now = sum(isinstance(r, int) for r in results)
                self.rows_written += stored_now
                self.groups_written += stored_now > 0
            for (_, done), result in zip(items, results):
                if isinstance(result, int):
                    done.set_result(stored[result])
                else:
                    done.set_exception(result)

        try:
            results = self.bank.add_each(rows, detect_conflicts=[row.get("detect_conflicts", True) for row, _ in items],
                                         on_stored=answer, dedupe=[row.get("dedupe", True) for row, _ in items])
            if not answered:  # rows stored one by one (a bad vector in the group), or none at all
                ids = [r for r in results if isinstance(r, int)]
                answer(results, self.bank.get_many(ids) if ids else {})
        except BaseException as exc:
            if not answered:  # the store failed (busy, gone): every request of the group hears it
                for _, done in items:
                    done.set_exception(exc)
            else:  # the memories are stored and answered; a check can be run again
                log.exception("checking memories for contradictions failed")
        finally:
            if answered:
                with self.checks:
                    self.checked += 1
                    self.checks.notify_all()
