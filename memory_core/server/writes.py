"""Grouping concurrent single adds into one write: one embedding batch, one transaction.

Each ``POST /v1/memories`` (and MCP's ``add_memory``) hands its row to the :class:`WriteQueue`
and waits. One thread takes every row waiting and stores them with ``MemoryBank.add_each``: one
embedding batch, one transaction. A request is answered once its row is committed; a bad row
gets its own error and the others of its group are stored. The history names each row's caller
(rows of several tokens are written per token).

A second thread checks the stored memories for contradictions (``MemoryBank.detect_conflicts``
with the new ids: the rules judge between two short holds of the store), except rows sent with
``detect_conflicts: False``: an agent waits for its memory to be stored, not for the rules, and
the model embeds the next group (outside Python's lock) while the rules judge the last one.
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
    """A writer thread for a bank's single adds (:meth:`add` blocks until its row is stored) and a
    checker thread that checks what was stored for contradictions meanwhile."""

    def __init__(self, bank: "MemoryBank"):
        self.bank = bank
        self.pending: "queue.Queue[tuple[dict[str, Any], str | None, Future] | None]" = queue.Queue()
        # (actor, {namespace: ids}) of answered groups, in order; None stops the checker.
        self.to_check: "queue.Queue[tuple[str | None, dict[str, list[int]]] | None]" = queue.Queue()
        self.checks = threading.Condition()
        self.answered = 0  # groups answered, and of them checked for contradictions (in order)
        self.checked = 0
        self.closed = False
        self.thread = threading.Thread(target=self.run, name="memctl-writes", daemon=True)
        self.checker = threading.Thread(target=self.check, name="memctl-checks", daemon=True)
        self.thread.start()
        self.checker.start()

    def add(self, row: dict[str, Any], actor: str | None = None) -> "Memory":
        """Store one row (as ``MemoryBank.add`` takes it) as made by ``actor`` (default: the
        bank's), and return the stored memory, or raise its error."""
        if self.closed:
            raise RuntimeError("the server is shutting down")
        done: Future = Future()
        self.pending.put((row, actor, done))
        return done.result()

    def close(self) -> None:
        """Write what is queued and check it, then stop both threads."""
        self.closed = True
        self.pending.put(None)
        self.thread.join()
        self.to_check.put(None)
        self.checker.join()

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
                self.write_rows(actor, items)

    def settle(self, timeout: float = 10.0) -> None:
        """Wait until the adds answered so far are checked for contradictions (at most ``timeout``
        seconds: a check that takes longer is still running, and its conflicts come later)."""
        with self.checks:
            target = self.answered
            self.checks.wait_for(lambda: self.checked >= target, timeout=timeout)

    def write_rows(self, actor: str | None, items: list[tuple[dict[str, Any], Future]]) -> None:
        """Store rows of one actor, answer each request once committed, and hand the stored
        memories to the checker."""
        rows = [{k: v for k, v in row.items() if k != "detect_conflicts"} for row, _ in items]
        answered = False

        def answer(results: list[Any], stored: dict[int, "Memory"]) -> None:
            nonlocal answered
            answered = True
            to_check: dict[str, list[int]] = {}
            for (row, _), result in zip(items, results):
                if isinstance(result, int) and row.get("detect_conflicts", True):
                    to_check.setdefault(stored[result].namespace, []).append(result)
            with self.checks:
                self.answered += 1
            self.to_check.put((actor, to_check))
            for (_, done), result in zip(items, results):
                if isinstance(result, int):
                    done.set_result(stored[result])
                else:
                    done.set_exception(result)

        try:
            results = self.bank.add_each(rows, detect_conflicts=False, on_stored=answer)
            if not answered:  # rows stored one by one (a bad vector in the group), or none at all
                ids = [r for r in results if isinstance(r, int)]
                answer(results, self.bank.get_many(ids) if ids else {})
        except BaseException as exc:
            if answered:  # stored and answered; what failed after the commit is for the log
                log.exception("after storing memories")
                return
            for _, done in items:  # the store failed (busy, gone): every request of the group hears it
                done.set_exception(exc)

    def check(self) -> None:
        """The checker thread: check every answered group (those waiting together, per actor and
        namespace), judging while the writer stores the next adds."""
        while True:
            first = self.to_check.get()
            if first is None:
                return
            groups = [first]
            stop = False
            while True:
                try:
                    item = self.to_check.get_nowait()
                except queue.Empty:
                    break
                if item is None:
                    stop = True
                    break
                groups.append(item)
            merged: dict[tuple[str | None, str], list[int]] = {}
            for actor, by_namespace in groups:
                for namespace, mids in by_namespace.items():
                    merged.setdefault((actor, namespace), []).extend(mids)
            try:
                for (actor, namespace), mids in merged.items():
                    with contextlib.nullcontext() if actor is None else self.bank.acting_as(actor):
                        self.bank.detect_conflicts(namespace, memory_ids=mids)
            except Exception:  # the memories are stored and answered; a check can be run again
                log.exception("checking memories for contradictions failed")
            finally:
                with self.checks:
                    self.checked += len(groups)
                    self.checks.notify_all()
            if stop:
                return
