"""Grouping concurrent single adds into one write: one embedding batch, one transaction.

Each ``POST /v1/memories`` (and MCP's ``add_memory``) hands its row to the :class:`WriteQueue`
and waits. One thread takes every row waiting and stores them with ``MemoryBank.add_each``: one
embedding batch, one transaction. While it writes, a second thread embeds the rows that arrive,
so the model (outside Python's lock) overlaps the store work and the next group comes embedded.
A request is answered once its row is committed; a bad row gets its own error and the others of
its group are stored. The history names each row's caller (rows of several tokens are written
per token).

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
import threading
from concurrent.futures import Future
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from memory_core import Memory, MemoryBank

log = logging.getLogger(__name__)

MAX_GROUP = 256  # rows written in one transaction at most


class _Waiting:
    """A queued add: its row, who made it, its answer, and its text's vector once embedded early."""

    __slots__ = ("row", "actor", "done", "vector", "tried")

    def __init__(self, row: dict[str, Any], actor: str | None, done: Future):
        self.row, self.actor, self.done = row, actor, done
        self.vector: Any = None
        # Embedded early, or not to be (a row with its own vector or no text to embed).
        self.tried = row.get("embedding") is not None or not (isinstance(row.get("text"), str) and row["text"].strip())


class WriteQueue:
    """One writer thread for a bank's single adds; :meth:`add` blocks until its row is stored.

    A second thread embeds the texts of rows that wait while the writer is busy, so that the
    model (which runs outside Python's lock) overlaps the writer's store work and contradiction
    check; the writer still takes every row waiting when it is free, embedded or not, so groups
    keep the size the writer's pace gives them."""

    def __init__(self, bank: "MemoryBank"):
        self.bank = bank
        self.cond = threading.Condition()
        self.waiting: list[_Waiting] = []
        self.embedding = False  # the embedder holds rows of ``waiting`` (the writer waits for them)
        self.writing = False  # the writer is storing a group (only then does the embedder start)
        self.checks = threading.Condition()
        self.answered = 0  # groups answered, and of them checked for contradictions (in order)
        self.checked = 0
        self.rows_written = 0  # rows stored, and the groups (one batch, one transaction) they took
        self.groups_written = 0
        self.embedded_early = 0  # rows the embedder gave a vector while the writer was busy
        self.closed = False
        self.thread = threading.Thread(target=self.run, name="memctl-writes", daemon=True)
        self.embedder = threading.Thread(target=self.embed_early, name="memctl-embeds", daemon=True)
        self.thread.start()
        self.embedder.start()

    def add(self, row: dict[str, Any], actor: str | None = None) -> "Memory":
        """Store one row (as ``MemoryBank.add`` takes it) as made by ``actor`` (default: the
        bank's), and return the stored memory, or raise its error."""
        return self.submit(row, actor).result()

    def submit(self, row: dict[str, Any], actor: str | None = None) -> "Future[Memory]":
        """Queue one row as :meth:`add` does; its future (an async route awaits it without a thread)."""
        done: Future = Future()
        with self.cond:
            if self.closed:
                raise RuntimeError("the server is shutting down")
            self.waiting.append(_Waiting(row, actor, done))
            self.cond.notify_all()
        return done

    def queued(self) -> int:
        """Rows waiting for the writer."""
        with self.cond:
            return len(self.waiting)

    def close(self) -> None:
        """Write what is queued, then stop the threads."""
        with self.cond:
            self.closed = True
            self.cond.notify_all()
        self.thread.join()
        self.embedder.join()

    def run(self) -> None:
        """The writer: take every row waiting (up to :data:`MAX_GROUP`) once the embedder has
        let go of them, and write them; until closed and nothing waits."""
        while True:
            with self.cond:
                self.cond.wait_for(lambda: (self.waiting or self.closed) and not self.embedding)
                if not self.waiting:
                    return
                group, self.waiting = self.waiting[:MAX_GROUP], self.waiting[MAX_GROUP:]
                self.writing = True
            try:
                self.write_group([({**w.row, "embedding": w.vector} if w.vector is not None else w.row, w.actor, w.done)
                                  for w in group])
            finally:
                with self.cond:
                    self.writing = False

    def embed_early(self) -> None:
        """The embedder: while the writer stores a group, embed the texts of rows waiting that have
        no vector yet, in one model call each time (a writer that is free takes rows as they are:
        a lone add waits for no one). A model error leaves them to the writer, which names the
        row at fault."""
        while True:
            with self.cond:
                self.cond.wait_for(lambda: self.closed or (self.writing and any(not w.tried for w in self.waiting)))
                if self.closed:
                    return
                batch = [w for w in self.waiting if not w.tried][:MAX_GROUP]
                for w in batch:
                    w.tried = True
                self.embedding = True
            try:
                vectors = self.bank.embedder.encode([w.row["text"] for w in batch])
            except Exception:  # noqa: BLE001 - the writer embeds these rows again and reports the error
                vectors = [None] * len(batch)
            with self.cond:
                for w, vec in zip(batch, vectors):
                    w.vector = vec
                self.embedded_early += sum(vec is not None for vec in vectors)
                self.embedding = False
                self.cond.notify_all()

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
