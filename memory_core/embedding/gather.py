"""Concurrent callers of one model share its calls: leader and followers, no timer.

A model call of eight short texts costs little more than a call of one, and callers that arrive
while the model is busy would otherwise wait for it one after another. :class:`EmbedGatherer`
lets the first caller to find the model idle run at once with its own texts (a lone caller waits
for nothing); whoever arrives while a call runs queues, and when the call ends the first caller
in the queue leads the next one, taking every queued caller's texts of its kind (up to
``max_batch`` texts) along. Each caller gets its own rows of the result, or the call's error.

Texts of different kinds (a model's query and passage prefixes) never share a call: the kind is
passed on to the model's function with the texts.
"""

from __future__ import annotations

import threading
from typing import Callable, Hashable, Sequence

import numpy as np

MAX_BATCH = 64  # texts per gathered call at most (a caller with more runs them in its own call)

RunBatch = Callable[[list[str], Hashable], np.ndarray]


class _Ticket:
    """One caller's texts, and where its answer (or its turn to lead) is left."""

    __slots__ = ("texts", "kind", "ready", "result", "error", "batch")

    def __init__(self, texts: list[str], kind: Hashable):
        self.texts, self.kind = texts, kind
        self.ready = threading.Event()
        self.result: np.ndarray | None = None
        self.error: BaseException | None = None
        self.batch: list["_Ticket"] | None = None  # set when this caller is to lead a call

    def answer(self) -> np.ndarray:
        """This caller's vectors, or its call's error."""
        if self.error is not None:
            raise self.error
        assert self.result is not None
        return self.result


class EmbedGatherer:
    """Runs ``run(texts, kind)`` (an (n, dim) array for n texts) for many threads at once, with the
    texts of callers that arrive while a call is running gathered into the next call.

    ``calls`` and ``texts`` count the model calls made and the texts they embedded (for tests and
    metrics: texts / calls is the mean gathered batch)."""

    def __init__(self, run: RunBatch, max_batch: int = MAX_BATCH):
        if max_batch < 1:
            raise ValueError("max_batch must be at least 1")
        self._run = run
        self.max_batch = max_batch
        self._lock = threading.Lock()
        self._queue: list[_Ticket] = []  # callers waiting for a call, in arrival order
        self._busy = False  # a call is running (or its leader is handing over)
        self.calls = 0
        self.texts = 0

    def encode(self, texts: Sequence[str], kind: Hashable = None) -> np.ndarray:
        """Embed ``texts`` (of one ``kind``) in a call shared with concurrent callers; their rows,
        in order. A failed call raises its error in every caller whose texts were in it."""
        me = _Ticket(list(texts), kind)
        if not me.texts:
            return self._run([], kind)
        with self._lock:
            self._queue.append(me)
            if self._busy:
                batch = None
            else:
                self._busy = True
                batch = self._take()
        if batch is None:
            me.ready.wait()
            batch = me.batch
            if batch is None:  # another caller's call answered this one
                return me.answer()
        self._lead(batch)
        return me.answer()

    def _take(self) -> list[_Ticket]:
        """The next call's callers (under the lock): the first queued, and after it each queued
        caller of its kind while the texts fit in ``max_batch``. The rest keep their places."""
        first = self._queue[0]
        batch, rest, size = [first], [], len(first.texts)
        for ticket in self._queue[1:]:
            if ticket.kind == first.kind and size + len(ticket.texts) <= self.max_batch:
                batch.append(ticket)
                size += len(ticket.texts)
            else:
                rest.append(ticket)
        self._queue = rest
        return batch

    def _lead(self, batch: list[_Ticket]) -> None:
        """Run one call for ``batch``, answer its callers, then hand the model to the next caller
        in the queue (or mark it idle) whatever happened."""
        try:
            texts = [t for ticket in batch for t in ticket.texts]
            try:
                vecs = self._run(texts, batch[0].kind)
                if len(vecs) != len(texts):
                    raise RuntimeError(f"the model returned {len(vecs)} vectors for {len(texts)} texts")
            except BaseException as exc:  # noqa: BLE001 - every caller of the call hears it
                for ticket in batch:
                    ticket.error = exc
            else:
                self.calls += 1
                self.texts += len(texts)
                start = 0
                for ticket in batch:
                    ticket.result = vecs[start:start + len(ticket.texts)]
                    start += len(ticket.texts)
        finally:
            with self._lock:
                if self._queue:
                    nxt = self._take()
                    nxt[0].batch = nxt
                    nxt[0].ready.set()
                else:
                    self._busy = False
            for ticket in batch:
                ticket.ready.set()
