"""The recall writer: recorded recalls written in batches leave exactly the counts and log of
writing them one by one, and writing a batch does not hold up recall.

* N recorded recalls at assorted moments (some "as of" earlier ones), closed and reopened: each
  memory's access count is the number of recalls that returned it and its last access the latest
  of their moments; every recall is logged once.
* While the writer waits for the file (another process holds it), recorded recalls of the same
  bank from another thread go on; they are counted at once by the bank, and in the store after
  the next write, none lost and none twice.
* Another operation of the bank started while the writer writes waits for it, and both succeed.
"""

from __future__ import annotations

import fcntl
import threading
from collections import Counter
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from memory_core import MemoryBank
from memory_core.storage import tables

T0 = datetime(2025, 9, 1, tzinfo=timezone.utc)
NOW = datetime(2026, 11, 1, tzinfo=timezone.utc)
TEXTS = ["Prefers tea in the morning", "Lives in Paris with a dog", "Runs marathons in the spring",
         "Has a dog called Pixel", "Cooks vegetarian food at home", "Learns Italian on the train"]
QUERIES = ["tea", "dog", "marathons", "Pixel the dog", "vegetarian cooking", "Italian", "Paris", "morning tea"]


def _seed(bank: MemoryBank) -> list[int]:
    return bank.add_many([{"text": t, "namespace": "alice", "created_at": T0 + timedelta(days=i)}
                          for i, t in enumerate(TEXTS)])


def _expect(hits_per_recall: list[tuple[datetime, list[int]]]) -> tuple[Counter, dict[int, datetime]]:
    counts: Counter = Counter()
    last: dict[int, datetime] = {}
    for at, ids in hits_per_recall:
        for mid in ids:
            counts[mid] += 1
            last[mid] = max(last.get(mid, at), at)
    return counts, last


class FileHolder:
    """Holds the bank's file lock as another process would (flock on a separate open file, which
    conflicts with this process's own lock): the writer must wait for it."""

    def __init__(self, bank_path: Path):
        self.path = str(bank_path) + ".lock"
        self.fh = None

    def hold(self) -> None:
        self.fh = open(self.path, "a+b")
        fcntl.flock(self.fh, fcntl.LOCK_EX)

    def release(self) -> None:
        if self.fh is not None:
            fh, self.fh = self.fh, None
            fcntl.flock(fh, fcntl.LOCK_UN)
            fh.close()


@pytest.fixture
def other_process(bank_path: Path):
    holder = FileHolder(bank_path)
    yield holder
    holder.release()


@pytest.mark.parametrize("in_list_max", [2000, 1], ids=["ids-listed", "ids-scanned"])
def test_batched_writes_leave_the_counts_and_times_of_each_recall(bank_path, embedder, monkeypatch, in_list_max):
    # The writer reads the touched rows back by a list of ids, or by a scan when there are many.
    monkeypatch.setattr(tables, "_IN_LIST_MAX", in_list_max)
    bank = MemoryBank.open(bank_path, embedder=embedder)
    ids = _seed(bank)
    recorded = []
    for i in range(40):
        # Moments go back and forth: an "as of" recall earlier than the last one must not move a
        # memory's last access back.
        at = NOW + timedelta(hours=(i * 7) % 23) - timedelta(days=i % 3)
        hits = bank.recall(QUERIES[i % len(QUERIES)], namespace="alice", now=at, threshold=0.0, k=3)
        recorded.append((at, [h.memory.id for h in hits]))
        if i == 17:
            bank.flush()  # a batch mid-way (the background writer may write others), the rest on close
    bank.close()
    counts, last = _expect(recorded)
    assert sum(counts.values()) == 40 * 3
    with MemoryBank.open(bank_path, embedder=embedder) as reopened:
        assert len(reopened.retrievals("alice", limit=None)) == 40
        for mid in ids:
            m = reopened.get(mid)
            assert m.access_count == counts[mid]
            assert m.last_accessed_at == last.get(mid)
        # The reopened bank ranks with the same counts the store holds.
        for h in reopened.recall("dog", namespace="alice", now=NOW, threshold=0.0, k=6, record=False):
            assert h.memory.access_count == counts[h.memory.id]


def test_recalls_go_on_while_the_writer_waits_for_the_file(bank_path, embedder, other_process):
    bank = MemoryBank.open(bank_path, embedder=embedder, lock_timeout=120)
    ids = _seed(bank)
    recorded = []
    for i in range(5):
        hits = bank.recall("Pixel the dog", namespace="alice", now=NOW + timedelta(minutes=i), threshold=0.0, k=2)
        recorded.append((NOW + timedelta(minutes=i), [h.memory.id for h in hits]))
    other_process.hold()
    flushed: list[int] = []
    writer = threading.Thread(target=lambda: flushed.append(bank.flush()))
    writer.start()  # seals the five recalls and waits for the file
    later: list[tuple[datetime, list[int]]] = []

    def agent() -> None:
        for i in range(5, 8):
            at = NOW + timedelta(minutes=i)
            later.append((at, [h.memory.id for h in bank.recall("Pixel the dog", namespace="alice", now=at,
                                                                 threshold=0.0, k=2)]))

    recaller = threading.Thread(target=agent)
    recaller.start()
    recaller.join(timeout=60)
    try:
        assert not recaller.is_alive(), "a recorded recall waited for the writer"
        assert writer.is_alive() and not flushed  # the writer still waits for the file
    finally:
        other_process.release()
        writer.join(timeout=120)
        recaller.join(timeout=60)
    assert flushed == [5]
    counts, last = _expect(recorded + later)
    dog = ids[3]
    assert counts[dog] == 8
    # The bank counts the recalls made while the writer wrote on top of what it wrote.
    again = {h.memory.id: h.memory for h in bank.recall("Pixel the dog", namespace="alice", now=NOW + timedelta(hours=1),
                                                         threshold=0.0, k=2, record=False)}
    assert again[dog].access_count == 8
    assert again[dog].last_accessed_at == last[dog]
    bank.close()
    with MemoryBank.open(bank_path, embedder=embedder) as reopened:
        assert len(reopened.retrievals("alice", limit=None)) == 8
        for mid in ids:
            assert reopened.get(mid).access_count == counts[mid]
            assert reopened.get(mid).last_accessed_at == last.get(mid)


def test_an_operation_started_while_the_writer_writes_waits_for_it(bank_path, embedder, other_process):
    bank = MemoryBank.open(bank_path, embedder=embedder, lock_timeout=120)
    ids = _seed(bank)
    bank.recall("Pixel the dog", namespace="alice", now=NOW, threshold=0.0, k=1)
    other_process.hold()
    writer = threading.Thread(target=bank.flush)
    writer.start()
    errors: list[BaseException] = []
    added: list[int] = []

    def dashboard() -> None:
        try:
            added.append(bank.add("Walks Pixel every evening", namespace="alice", created_at=NOW))
            bank.update(ids[3], importance=0.9)
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    other = threading.Thread(target=dashboard)
    other.start()
    other_process.release()
    writer.join(timeout=120)
    other.join(timeout=120)
    assert not errors and added
    m = bank.get(ids[3])
    assert (m.access_count, m.importance) == (1, 0.9)
    assert len(bank.retrievals("alice")) == 1
    bank.close()
    with MemoryBank.open(bank_path, embedder=embedder) as reopened:
        m = reopened.get(ids[3])
        assert (m.access_count, m.importance) == (1, 0.9)
        assert reopened.get(added[0]).text == "Walks Pixel every evening"


@pytest.mark.slow
def test_retrieval_ids_stay_unique_across_reserved_blocks(bank_path, embedder, monkeypatch):
    """Recall takes its retrieval ids from blocks reserved in the store, the next block reserved
    ahead by the writer: two banks on one file, flushing now and then, never share an id."""
    import memory_core.services.recall_writer as recall_writer

    monkeypatch.setattr(recall_writer, "RETRIEVAL_ID_BLOCK", 4)
    agent = MemoryBank.open(bank_path, embedder=embedder, actor="agent")
    _seed(agent)
    other = MemoryBank.open(bank_path, embedder=embedder, actor="other")
    rids = []
    for i in range(30):
        for b in (agent, other):
            b.recall(QUERIES[i % len(QUERIES)], namespace="alice", now=NOW, threshold=0.0, k=1)
            rids.append(b.last_retrieval_id)
        if i % 3 == 0:
            agent.flush()
        if i % 5 == 0:
            other.flush()
    assert len(set(rids)) == 60
    agent.close()
    other.close()
    with MemoryBank.open(bank_path, embedder=embedder) as reopened:
        logged = reopened.retrievals("alice", limit=None)
        assert sorted(r["id"] for r in logged) == sorted(rids)
        assert sum(r["actor"] == "agent" for r in logged) == 30
