"""Fast single writes (issue 15, item 6): sequential ``bank.add`` by the bank's only user, and the file
handed over at once to another process that wants it.

A process keeps the bank file between its operations for a short lease (``storage/duckdb.py``,
``_Lease``): an add then neither opens the file nor checkpoints it on close. A process waiting for
the file announces itself (a shared flock on ``<bank>.waiting``) and the holder lets go at once.
Real DuckDB files and the real model; speed figures are in BENCHMARKS.md (``python -m bench --only
add_speed``), here only ratios and counts.
"""

from __future__ import annotations

import fcntl
import json
import os
import statistics
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from memory_core import MemoryBank
from memory_core.storage import duckdb as duckdb_store
from memory_core.storage import duckdb_lease

ROOT = Path(__file__).resolve().parents[1]
TOPICS = ("coffee", "tea", "running", "Berlin", "Python", "the cello", "pasta", "budgeting", "Swedish", "cycling")


def texts(n: int, tag: str = "") -> list[str]:
    return [f"{tag}Memory {i}: prefers {TOPICS[i % len(TOPICS)]} on day {i} of the project" for i in range(n)]


def _child_env() -> dict[str, str]:
    env = dict(os.environ, HF_HUB_OFFLINE="1", TOKENIZERS_PARALLELISM="false", OMP_NUM_THREADS="1")
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    return env


def _lock_free(path: Path) -> bool:
    """Could another process take the bank's file lock right now (without waiting)?"""
    with open(str(path) + ".lock", "a+b") as fh:
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            return False
        fcntl.flock(fh, fcntl.LOCK_UN)
        return True


def test_sequential_adds_of_the_only_user_open_the_file_about_once_per_lease(bank_path, embedder):
    bank = MemoryBank.open(bank_path, embedder=embedder)
    try:
        bank.add_many([{"text": t, "namespace": "alice"} for t in texts(40, "seed ")])
        store = bank._store
        before = store.opens
        started = time.monotonic()
        ids = [bank.add(t, namespace="alice") for t in texts(30)]
        elapsed = time.monotonic() - started
        opens = store.opens - before
        # One open per lease; a lease lasts at most LEASE_MAX seconds however fast the adds come.
        assert opens <= 2 + 2 * elapsed / duckdb_store.LEASE_MAX, (opens, elapsed)
        assert opens <= len(ids) // 3, f"{opens} opens of the file for {len(ids)} adds"
        assert [m.text for m in bank.get_many(ids).values()] == texts(30)
    finally:
        bank.close()
    assert _lock_free(bank_path), "closing the bank must let go of the file"
    with MemoryBank.open(bank_path, embedder=embedder) as again:
        assert again.count(namespace="alice") == 70


def test_an_add_still_flags_what_it_contradicts(bank_path, embedder):
    with MemoryBank.open(bank_path, embedder=embedder) as bank:
        old = bank.add("Lives in Paris", namespace="bob", created_at="2026-01-01")
        new = bank.add("Moved to Berlin", namespace="bob", created_at="2026-06-01")
        found = bank.conflicts(namespace="bob")
        assert [(c.a.id, c.b.id) for c in found] == [(old, new)]
        # Without the check, nothing is flagged; with an error in the row, nothing is written.
        bank.add("Moved to Madrid", namespace="bob", detect_conflicts=False)
        assert len(bank.conflicts(namespace="bob")) == 1
        with pytest.raises(ValueError, match="importance"):
            bank.add("Moved to Rome", namespace="bob", importance=3)
        assert bank.count(namespace="bob") == 3


def test_adds_keep_the_file_open_where_each_step_opened_it_before(tmp_path, embedder):
    """What makes an add cheap: the file stays open between adds (the lease), where the add as it
    was (add_many of one row, then detect_conflicts, no lease) opened and checkpointed it for each
    step; both flag the same contradictions. The time each takes is a benchmark's
    (``python -m bench --only add_speed``), printed here only."""
    rows = texts(60)
    vectors = embedder.encode(rows)
    fast = MemoryBank.open(tmp_path / "fast.duckdb", embedder=embedder)
    slow = MemoryBank.open(tmp_path / "slow.duckdb", embedder=embedder)
    slow._store.lease_idle = 0  # every operation opens the file and checkpoints it on close
    try:
        for bank in (fast, slow):
            bank.add_many([{"text": t, "namespace": "alice"} for t in texts(40, "seed ")])
        t_fast, t_slow = [], []
        opens = (fast._store.opens, slow._store.opens)
        for start in range(0, len(rows), 10):
            for i in range(start, start + 10):
                t = time.perf_counter()
                mid = slow.add_many([{"text": rows[i], "namespace": "alice", "embedding": vectors[i]}])[0]
                slow.detect_conflicts("alice", memory_ids=[mid])
                t_slow.append(time.perf_counter() - t)
            for i in range(start, start + 10):
                t = time.perf_counter()
                fast.add(rows[i], namespace="alice", embedding=vectors[i])
                t_fast.append(time.perf_counter() - t)
        ratio = statistics.median(t_fast) / statistics.median(t_slow)
        print(f"\n[fast add] store's share per add: {1000 * statistics.median(t_fast):.1f} ms, "
              f"before {1000 * statistics.median(t_slow):.1f} ms (ratio {ratio:.2f})")
        fast_opens, slow_opens = fast._store.opens - opens[0], slow._store.opens - opens[1]
        assert fast_opens <= len(rows) / 10 and slow_opens >= len(rows) / 2, (fast_opens, slow_opens)
        assert fast.count(namespace="alice") == slow.count(namespace="alice") == 100
        assert len(fast.conflicts(status=None)) == len(slow.conflicts(status=None))
    finally:
        fast.close()
        slow.close()


def test_the_file_is_let_go_when_idle_and_at_once_for_a_process_that_waits(bank_path, embedder, monkeypatch):
    bank = MemoryBank.open(bank_path, embedder=embedder, lock_timeout=30)
    try:
        bank.add("Drinks tea every morning", namespace="alice")
        # An idle lease ends by itself: a process that does not announce itself gets the file soon.
        deadline = time.monotonic() + 5
        while not _lock_free(bank_path):
            assert time.monotonic() < deadline, "an idle lease kept the file"
            time.sleep(0.005)

        # A long lease (as if the bank were busy) still lets go at once for a process that waits.
        monkeypatch.setattr(duckdb_store, "LEASE_MAX", 60.0)
        bank._store.lease_idle = 60.0
        bank.add("Cycles to work", namespace="alice")
        assert not _lock_free(bank_path), "the file is kept between operations"
        waiting = open(str(bank_path) + ".waiting", "a+b")
        lock = open(str(bank_path) + ".lock", "a+b")
        try:
            started = time.monotonic()
            fcntl.flock(waiting, fcntl.LOCK_SH)  # "I wait for the file", as another process says it
            fcntl.flock(lock, fcntl.LOCK_EX)
            waited = time.monotonic() - started
            fcntl.flock(waiting, fcntl.LOCK_UN)
            assert waited < 2.0, f"the holder kept the file {waited:.2f} s after a process announced it waited"
            # While the other process holds the file, the bank's next operation waits for it.
            done: list[int] = []
            adder = threading.Thread(target=lambda: done.append(bank.add("Plays chess", namespace="alice")))
            adder.start()
            time.sleep(0.3)
            assert adder.is_alive() and not done
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)
            lock.close()
            waiting.close()
        adder.join(timeout=30)
        assert done and bank.get(done[0]).text == "Plays chess"
    finally:
        bank.close()


_ADD_AND_DIE = textwrap.dedent(
    """
    import os, signal, sys
    from memory_core import MemoryBank

    bank = MemoryBank.open(sys.argv[1])
    mid = bank.add("Acknowledged just before the crash", namespace="alice", embedding=[1.0] + [0.0] * 383)
    print(mid, flush=True)
    os.kill(os.getpid(), signal.SIGKILL)  # the lease still holds the file: no close, no checkpoint
    """
)


def test_an_acknowledged_add_survives_a_crash_during_the_lease(bank_path):
    MemoryBank.open(bank_path).close()
    run = subprocess.run([sys.executable, "-c", _ADD_AND_DIE, str(bank_path)], capture_output=True, text=True,
                         env=_child_env(), timeout=120)
    assert run.returncode == -9, run.stderr[-2000:]
    mid = int(run.stdout.split()[0])
    with MemoryBank.open(bank_path) as bank:
        assert bank.get(mid).text == "Acknowledged just before the crash"


# -- two processes: one adding in a tight loop, the other opening the bank, adding and recalling --

_PRELUDE = textwrap.dedent(
    """
    import json, sys, time, traceback
    from pathlib import Path
    from memory_core import MemoryBank
    from memory_core.embedding.embedder import get_embedder

    path, folder = sys.argv[1], Path(sys.argv[2])

    def wait_for(name, limit=300.0):
        deadline = time.monotonic() + limit
        while not (folder / name).exists():
            if time.monotonic() > deadline:
                raise SystemExit(f"gave up waiting for {name}")
            time.sleep(0.005)

    def report(name, data):
        (folder / (name + ".tmp")).write_text(json.dumps(data))
        (folder / (name + ".tmp")).replace(folder / name)

    get_embedder().encode(["warm up"])  # the model is loaded before the race
    """
)

LOOPER = _PRELUDE + textwrap.dedent(
    """
    bank = MemoryBank.open(path, actor="looper", lock_timeout=10)
    added, errors, n = {}, [], 0
    (folder / "looper.ready").touch()
    while not (folder / "visitor.json").exists():
        text = f"Looper note {n}: prefers route {n % 7} for the morning run"
        try:
            added[bank.add(text, namespace="looper")] = text
        except Exception:
            errors.append(traceback.format_exc())
        n += 1
        if n == 5:
            (folder / "looping").touch()
    bank.close()
    report("looper.json", {"added": added, "errors": errors})
    """
)

VISITOR = _PRELUDE + textwrap.dedent(
    """
    wait_for("looping")
    ops, added, errors = [], {}, []
    t = time.monotonic()
    bank = MemoryBank.open(path, actor="visitor", lock_timeout=10)
    ops.append(["open", time.monotonic() - t])
    for i in range(8):
        text = f"Visitor note {i}: plays the cello on Tuesday number {i}"
        try:
            t = time.monotonic()
            added[bank.add(text, namespace="visitor")] = text
            ops.append(["add", time.monotonic() - t])
            t = time.monotonic()
            hits = bank.recall("which route for the morning run?", namespace="looper", threshold=0.0, k=3)
            ops.append(["recall", time.monotonic() - t])
            t = time.monotonic()
            mine = bank.recall(text, namespace="visitor", threshold=0.0, k=1, record=False)
            ops.append(["recall own", time.monotonic() - t])
            if not hits or not mine or mine[0].memory.text != text:
                errors.append(f"recall {i}: looper hits {len(hits)}, own {[h.memory.text for h in mine]}")
        except Exception:
            errors.append(traceback.format_exc())
    waits = list(bank.lock_waits)
    bank.close()
    report("visitor.json", {"ops": ops, "added": added, "errors": errors, "lock_waits": waits})
    """
)


@pytest.mark.slow
def test_a_process_adding_in_a_loop_does_not_starve_another_one(tmp_path, embedder):
    """Process A adds in a tight loop (it keeps the file between its adds); process B opens the
    same bank, adds and recalls. B is served well within its lock timeout (10 s), A goes on
    adding meanwhile, and every id either was given is in the bank with its text."""
    folder = tmp_path / "pair"
    folder.mkdir()
    path = folder / "shared.duckdb"
    with MemoryBank.open(path, embedder=embedder) as bank:
        bank.add_many([{"text": t, "namespace": ns} for ns in ("looper", "visitor") for t in texts(20, ns)])
    procs = []
    for name, script in (("looper", LOOPER), ("visitor", VISITOR)):
        (folder / f"{name}.py").write_text(script)
        log = open(folder / f"{name}.log", "w")
        procs.append(subprocess.Popen([sys.executable, str(folder / f"{name}.py"), str(path), str(folder)],
                                      stdout=log, stderr=subprocess.STDOUT, env=_child_env(), cwd=folder))
    try:
        deadline = time.monotonic() + 600
        while not ((folder / "looper.json").exists() and (folder / "visitor.json").exists()):
            for p in procs:
                assert p.poll() in (None, 0), "a child died:\n" + "\n".join(
                    f.read_text()[-3000:] for f in folder.glob("*.log"))
            assert time.monotonic() < deadline, "timed out"
            time.sleep(0.05)
        for p in procs:
            assert p.wait(timeout=60) == 0
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
    looper = json.loads((folder / "looper.json").read_text())
    visitor = json.loads((folder / "visitor.json").read_text())
    assert looper["errors"] == [] and visitor["errors"] == [], (looper["errors"][:2], visitor["errors"][:2])
    slowest = max(s for _, s in visitor["ops"])
    print(f"\n[fast add] looper added {len(looper['added'])}; visitor ops "
          f"p50 {1000 * statistics.median(s for _, s in visitor['ops']):.0f} ms, slowest {slowest:.2f} s")
    assert slowest < 3.0, f"the visitor waited {slowest:.1f} s for the file: {visitor['ops']}"
    assert len(looper["added"]) >= 10
    with MemoryBank.open(path, embedder=embedder) as bank:
        for who in (looper, visitor):
            got = bank.get_many([int(i) for i in who["added"]])
            assert {str(i): m.text for i, m in got.items()} == who["added"]


def test_what_an_add_keeps_for_reading_back_is_what_the_store_holds(bank):
    """get_many answers a fresh add from memory (the server answers every add with it): it must
    equal the memory read from the store, field for field."""
    ids = bank.add_each([
        {"text": "Prefers green tea", "namespace": "n", "importance": 0.7, "category": "preference",
         "created_at": "2024-03-01T12:30:45.123456+02:00", "source": "chat", "pinned": True, "context": "a turn"},
        {"text": "Works nights", "namespace": "n"}])
    cached = bank.get_many(ids)
    for mid in ids:
        assert cached[mid] == bank.get(mid)  # get() always reads the store


def test_a_single_add_records_the_same_add_event_as_a_bulk_import(bank):
    """A few rows build their "add" events in Python, many in SQL: the history must not tell."""
    from memory_core.storage import tables

    row = {"text": "Prefers “window” seats, 靠窗", "importance": 0.75, "category": "preference",
           "created_at": "2026-03-01T08:30:00+00:00", "pinned": True}
    one = bank.add(namespace="a", **row)
    many = bank.add_many([{**row, "namespace": "b"}] + [{"text": f"filler {i}", "namespace": "b"}
                                                        for i in range(tables.SMALL_INSERT)])[0]
    first, second = bank.history(one)[0].after, bank.history(many)[0].after
    assert {k for k in first if first[k] != second[k]} <= {"id", "namespace", "updated_at"}
    assert first["created_at"] == second["created_at"] == "2026-03-01T08:30:00.000000+00:00"
    assert first["pinned"] is True and first["importance"] == 0.75 and first["id"] == one


def test_add_each_tells_its_caller_of_the_commit_before_the_contradiction_check(bank):
    """A server answers its callers from ``on_stored``: the rows are committed and readable, a bad
    row has its error, and the check still runs (its conflicts are there when add_each returns)."""
    old = bank.add("Lives in Paris", namespace="bob", created_at="2026-01-01")
    heard: list = []

    def on_stored(results, memories):
        heard.append((results, memories, len(bank.conflicts(namespace="bob"))))

    results = bank.add_each([{"text": "Moved to Berlin", "namespace": "bob", "created_at": "2026-06-01"},
                             {"text": "Bad importance", "namespace": "bob", "importance": 7}], on_stored=on_stored)
    [(told, memories, conflicts_then)] = heard
    new = results[0]
    assert told[0] == new and isinstance(told[1], ValueError) and isinstance(results[1], ValueError)
    assert memories[new].text == "Moved to Berlin" and memories[new] == bank.get(new)
    assert conflicts_then == 0  # heard before the check ...
    assert [(c.a.id, c.b.id) for c in bank.conflicts(namespace="bob")] == [(old, new)]  # ... which still ran


def test_a_block_that_keeps_the_file_hands_it_to_a_waiting_process_once_not_per_read(bank_path, embedder):
    """A dashboard page reads the bank several times while a server waits to write: inside
    ``keep_store`` the reads share one open of the file and the server gets it when the block ends;
    outside, every read hands the file over and opens it again."""
    bank = MemoryBank.open(bank_path, embedder=embedder, lock_timeout=30)
    waiting = open(str(bank_path) + ".waiting", "a+b")
    try:
        bank.add_many([{"text": t, "namespace": "alice"} for t in texts(20)])
        store = bank._store
        fcntl.flock(waiting, fcntl.LOCK_SH)  # another process says it waits for the file
        with bank.keep_store():
            before = store.opens
            for _ in range(4):
                assert bank.count(namespace="alice") == 20
                assert len(bank.memories(namespace="alice", limit=5)) == 5
            assert store.opens - before <= 1
            assert not _lock_free(bank_path), "the file was handed over inside the block"
        deadline = time.monotonic() + 5
        while not _lock_free(bank_path):  # the block is over: the waiting process gets the file
            assert time.monotonic() < deadline, "the file was kept after the block, with a process waiting"
            time.sleep(0.005)
        before = store.opens
        for _ in range(3):
            assert bank.count(namespace="alice") == 20
        assert store.opens - before == 3  # without the block, each read hands the file over
    finally:
        waiting.close()
        bank.close()


def test_a_block_keeps_a_waiting_process_out_for_a_bounded_time_only(bank_path, embedder, monkeypatch):
    monkeypatch.setattr(duckdb_lease, "KEEP_MAX", 0.2)
    bank = MemoryBank.open(bank_path, embedder=embedder, lock_timeout=30)
    waiting = open(str(bank_path) + ".waiting", "a+b")
    try:
        bank.add("Drinks tea every morning", namespace="alice")
        with bank.keep_store():
            assert bank.count(namespace="alice") == 1
            fcntl.flock(waiting, fcntl.LOCK_SH)
            deadline = time.monotonic() + 5
            while not _lock_free(bank_path):  # a block that goes on past KEEP_MAX lets the waiter in
                assert time.monotonic() < deadline, "a block kept a waiting process out past KEEP_MAX"
                time.sleep(0.01)
            assert bank.count(namespace="alice") == 1  # and the block's next read opens the file again
    finally:
        waiting.close()
        bank.close()


def test_blocks_back_to_back_still_hand_the_file_to_a_waiting_process(bank_path, embedder, monkeypatch):
    """Page after page, each in its own block: together they keep a waiting process out for at most
    KEEP_MAX per lease, not for as long as the pages go on (a server's writes would time out)."""
    monkeypatch.setattr(duckdb_lease, "KEEP_MAX", 0.2)
    bank = MemoryBank.open(bank_path, embedder=embedder, lock_timeout=30)
    waiting = open(str(bank_path) + ".waiting", "a+b")
    try:
        bank.add("Drinks tea every morning", namespace="alice")
        store = bank._store
        fcntl.flock(waiting, fcntl.LOCK_SH)
        before = store.opens
        until = time.monotonic() + 1.5
        while time.monotonic() < until:
            with bank.keep_store():
                assert bank.count(namespace="alice") == 1
        assert store.opens - before >= 3, "back-to-back blocks kept the file from a waiting process"
    finally:
        waiting.close()
        bank.close()


# A sequence of adds with what an add does besides inserting: contradictions to flag, a repeated
# text to reinforce, a second namespace, an add whose check is turned off.
_SEQUENCE = [("Lives in Paris", "bob", True), ("Prefers tea to coffee", "alice", True),
             ("Moved to Berlin", "bob", True), ("Prefers tea to coffee", "alice", True),
             ("Is vegetarian", "alice", True), ("Moved to Madrid", "bob", False),
             ("Eats steak every week", "alice", True), ("Works at the harbour", "bob", True)]


def _bank_contents(path: Path) -> dict[str, list]:
    """What a bank file stores, without the wall-clock times of the run that wrote it."""
    import duckdb

    def untimed(doc: str | None) -> dict | None:
        return None if doc is None else {k: v for k, v in json.loads(doc).items() if not k.endswith("_at")}

    con = duckdb.connect(str(path), read_only=True)
    try:
        memories = con.execute("SELECT id, namespace, text, status, importance, access_count, seq, content_hash, "
                               "embedding FROM memories ORDER BY id").fetchall()
        events = [(*e[:4], untimed(e[4]), untimed(e[5])) for e in con.execute(
            "SELECT id, action, memory_id, group_id, before, after FROM events ORDER BY id").fetchall()]
        conflicts = con.execute("SELECT id, a_id, b_id, kind, evidence, confidence, status FROM conflicts "
                                "ORDER BY id").fetchall()
        counters = con.execute("SELECT key, value FROM meta WHERE key LIKE 'next_%' OR key = 'change_seq' "
                               "ORDER BY key").fetchall()
    finally:
        con.close()
    return {"memories": memories, "events": events, "conflicts": conflicts, "counters": counters}


def test_adds_back_to_back_store_what_adds_that_each_catch_up_store(tmp_path, embedder):
    """An add right after an add on the same hold of the file reads no catch-up (nobody else can
    have written): the bank it builds must be the one built when every add catches up with the
    store first (a read between the adds makes each catch up), id for id, vector for vector,
    event for event and conflict for conflict."""
    banks = {}
    for name, read_between in (("back_to_back", False), ("catching_up", True)):
        path = banks[name] = tmp_path / f"{name}.duckdb"
        with MemoryBank.open(path, embedder=embedder) as bank:
            for day, (text, namespace, detect) in enumerate(_SEQUENCE, start=1):
                if read_between:
                    bank.stats()
                bank.add(text, namespace=namespace, created_at=f"2026-01-{day:02d}", detect_conflicts=detect)
    back_to_back, catching_up = (_bank_contents(p) for p in banks.values())
    assert back_to_back["conflicts"], "the sequence must flag a contradiction for the comparison to mean much"
    assert any(e[1] == "reinforce" for e in back_to_back["events"]), "the repeated text must be reinforced"
    for part in ("memories", "events", "conflicts", "counters"):
        assert back_to_back[part] == catching_up[part], part


def test_an_add_after_another_process_wrote_sees_what_it_wrote(tmp_path, embedder):
    """The add that skips the catch-up must not miss another process's write: once this process let
    go of the file and another wrote to it, the next add catches up (its repeat check finds the
    other's memory, and recall sees it)."""
    path = tmp_path / "shared.duckdb"
    with MemoryBank.open(path, embedder=embedder) as bank:
        bank.add("Prefers tea to coffee", namespace="alice")
        bank.add("Walks to work", namespace="alice")
        child = subprocess.run([sys.executable, "-c", textwrap.dedent(f"""
            from memory_core import MemoryBank
            with MemoryBank.open({str(path)!r}) as other:
                print(other.add("Plays the cello on Sundays", namespace="alice"))
            """)], env=_child_env(), capture_output=True, text=True, timeout=300)
        assert child.returncode == 0, child.stderr
        theirs = int(child.stdout.split()[-1])
        again = bank.add("Plays the cello on Sundays", namespace="alice")
        assert again == theirs, "the repeat of another process's memory must reinforce it, not store it again"
        assert bank.count(namespace="alice") == 3
        hits = bank.recall("cello", namespace="alice", record=False)
        assert hits and hits[0].memory.id == theirs


def test_an_add_records_its_conflicts_as_a_check_that_reads_the_store_again(tmp_path, embedder):
    """An add's own check records what it found from what it read in the hold that wrote (the pairs'
    rows, and no known-pair read: a memory written in the hold is in no recorded conflict). The bank
    must be the one built when each add is checked afterwards by ``detect_conflicts``, which reads
    the pairs and the recorded conflicts from the store; and a later scan must know every pair."""
    banks = {}
    for name, afterwards in (("in_the_add", False), ("checked_after", True)):
        path = banks[name] = tmp_path / f"{name}.duckdb"
        with MemoryBank.open(path, embedder=embedder) as bank:
            newest, unchecked = 0, set()
            for day, (text, namespace, detect) in enumerate(_SEQUENCE, start=1):
                mid = bank.add(text, namespace=namespace, created_at=f"2026-01-{day:02d}",
                               detect_conflicts=detect and not afterwards)
                if detect and afterwards and mid > newest:  # a repeat is reinforced, not checked
                    bank.detect_conflicts(namespace, memory_ids=[mid])
                if not detect:
                    unchecked.add(mid)
                newest = max(newest, mid)
        contents = _bank_contents(path)
        with MemoryBank.open(path, embedder=embedder) as bank:
            for namespace in ("alice", "bob"):
                for c in bank.detect_conflicts(namespace):  # only what no add checked is new to a scan
                    assert {c.a.id, c.b.id} & unchecked, f"a scan found a pair an add had recorded: {c}"
        banks[name] = contents
    in_the_add, checked_after = banks.values()
    assert in_the_add["conflicts"], "the sequence must flag a contradiction for the comparison to mean much"
    for part in ("memories", "events", "conflicts", "counters"):
        assert in_the_add[part] == checked_after[part], part


_WAITING_WRITER = textwrap.dedent(
    """
    import json, sys, time
    from memory_core import MemoryBank

    started = time.monotonic()
    bank = MemoryBank.open(sys.argv[1], actor="visitor", lock_timeout=float(sys.argv[2]))
    mid = bank.add("Visitor note: waters the plants on Fridays", namespace="visitor", embedding=json.loads(sys.argv[3]))
    took = time.monotonic() - started
    bank.close()
    print(json.dumps({"id": mid, "took": took}), flush=True)
    """
)


def test_a_served_bank_keeps_the_file_under_load_and_a_waiting_writer_still_gets_it(tmp_path, embedder):
    """A server (``serve_store``) adding without pause keeps the file for several seconds, where a
    plain process reopens it every :data:`LEASE_MAX`; another process that wants to write (and
    announces it waits, as memory_core does) still gets the file well within its lock timeout."""
    path = tmp_path / "served.duckdb"
    rng = np.random.default_rng(7)

    def vector() -> list[float]:
        v = rng.normal(size=embedder.dim).astype(np.float32)
        return (v / np.linalg.norm(v)).tolist()

    bank = MemoryBank.open(path, embedder=embedder)
    bank.serve_store()
    added: list[int] = []
    stop = threading.Event()

    def loop() -> None:
        i = 0
        while not stop.is_set():
            added.append(bank.add(f"Server note {i}: a run of {i} km", namespace="server", embedding=vector(),
                                  detect_conflicts=False))
            i += 1

    adder = threading.Thread(target=loop)
    try:
        bank.add("First note", namespace="server", embedding=vector())
        before, started = bank._store.opens, time.monotonic()
        adder.start()
        time.sleep(2.5)
        opens_alone, alone = bank._store.opens - before, time.monotonic() - started
        # More than two plain leases' time under load, one open of the file (two if the lease began just before).
        assert alone > 2 * duckdb_store.LEASE_MAX and opens_alone <= 1, (opens_alone, alone, len(added))
        visitor = subprocess.run([sys.executable, "-c", _WAITING_WRITER, str(path), "5", json.dumps(vector())],
                                 capture_output=True, text=True, env=_child_env(), timeout=120)
        assert visitor.returncode == 0, visitor.stderr[-3000:]
        out = json.loads(visitor.stdout.strip().splitlines()[-1])
        count_after = len(added)
        time.sleep(0.5)
        assert len(added) > count_after, "the server goes on adding once the visitor is done"
    finally:
        stop.set()
        if adder.is_alive():
            adder.join(timeout=60)
        bank.close()
    # The visitor's open and add (after its start-up) stayed far under its 5 s lock timeout.
    assert out["took"] < 3.0, out
    with MemoryBank.open(path, embedder=embedder) as again:
        assert again.get(out["id"]).text == "Visitor note: waters the plants on Fridays"
        assert set(again.get_many(added)) == set(added)


def _mixed_writes(path: Path, embedder, *, lease: bool) -> None:
    """Adds between other writes of the same process (an update, a forget, a resolved conflict,
    a recorded recall, a second bank object of the same file), on a leased file or none."""
    first, second = MemoryBank.open(path, embedder=embedder), MemoryBank.open(path, embedder=embedder)
    try:
        if not lease:
            for bank in (first, second):
                bank._store.lease_idle = 0
                bank._store.release()
        for day, (text, namespace, detect) in enumerate(_SEQUENCE, start=1):
            bank = first if day % 3 else second
            mid = bank.add(text, namespace=namespace, created_at=f"2026-01-{day:02d}", detect_conflicts=detect)
            if day == 2:
                first.update(mid, importance=0.9)
            if day == 4:
                second.recall("tea", namespace="alice")
            if day == 5:
                second.forget(mid)
        for c in first.conflicts(status="open")[:1]:
            second.resolve_conflict(c.id, "keep_both")
        first.add("Swims on Mondays", namespace="alice")
    finally:
        first.close()
        second.close()


def test_the_counters_a_lease_keeps_are_the_ones_the_store_holds(tmp_path, embedder):
    """An add on a leased file writes the meta counters it knows instead of reading them back
    (``DuckDBConnection.known_counters``). Whatever else the process writes in between, by this bank
    or another bank object of the same file, the bank must be the one built when every write reads
    the counters from the store (no lease): id for id, event for event, counter for counter."""
    contents = {}
    for lease in (True, False):
        path = tmp_path / f"lease_{lease}.duckdb"
        _mixed_writes(path, embedder, lease=lease)
        contents[lease] = _bank_contents(path)
    assert contents[True]["conflicts"], "the sequence must flag a contradiction for the comparison to mean much"
    for part in ("memories", "events", "conflicts", "counters"):
        assert contents[True][part] == contents[False][part], part


def test_a_rolled_back_write_leaves_the_known_counters_unknown(bank_path, embedder):
    """A transaction that took counters and then failed is rolled back: the counters the lease knew
    are forgotten, so the next write reads the stored ones and takes the same ids again."""
    if not isinstance(bank_path, Path):
        pytest.skip("a bank file's lease")
    from memory_core.storage import tables

    with MemoryBank.open(bank_path, embedder=embedder) as bank:
        bank.add("Prefers tea to coffee", namespace="alice")  # the file is leased from here on
        store = bank._store
        with store.connect() as con:
            assert con.known_counters is not None, "the second operation is a cursor of the lease"
            taken = tables.take_counters(con, {"next_id": 1, "change_seq": 1})
            assert con.known_counters["next_id"] == taken["next_id"] + 1
        with pytest.raises(RuntimeError):
            with store.connect() as con:
                tables.take_counters(con, {"next_id": 5, "change_seq": 1})
                raise RuntimeError("the operation fails after taking its ids")
        with store.connect() as con:
            assert not con.known_counters, "a rollback forgets what the lease knew (or ended it)"
            again = tables.take_counters(con, {"next_id": 1, "change_seq": 1})
        assert again == {k: v + 1 for k, v in taken.items()}
        with store.connect() as con:
            tables.take_counters(con, {"next_id": 1, "change_seq": 1})
            assert con.known_counters, "a cursor of the lease knows the counters it wrote"
            tables.set_meta(con, "next_id", str(again["next_id"] + 5))
            assert not con.known_counters, "another write of meta forgets the counters"
            assert tables.take_counters(con, {"next_id": 1})["next_id"] == again["next_id"] + 5


def test_writes_run_as_one_statement_are_all_or_nothing(bank_path, embedder):
    """``tables.run_as_one`` writes the counters, a memory and its event in one statement: when the
    memory cannot be stored (its id is taken) nothing of it is written, the counters included, and
    the counters the lease knew are forgotten."""
    if not isinstance(bank_path, Path):
        pytest.skip("a bank file's lease")
    from memory_core.storage import tables
    from memory_core.storage.interface import IntegrityError

    with MemoryBank.open(bank_path, embedder=embedder) as bank:
        taken = bank.add("Prefers tea to coffee", namespace="alice")
        bank.add("Walks to work", namespace="alice")  # the file is leased, the counters known
        with bank._store.hold() as con:
            counters = dict(con.execute("SELECT key, value FROM meta").fetchall())
            events = con.execute("SELECT count(*) FROM events").fetchone()[0]
            assert tables.knows_counters(con, ["next_event_id", "change_seq"])
            pending: list[tables.Statement] = []
            first = tables.take_counters(con, {"next_event_id": 1, "change_seq": 1}, pending)
            row = con.execute(f"SELECT {', '.join(tables.MEMORY_COLUMNS)}, embedding FROM memories WHERE id = ?",
                              [taken]).fetchone()
            tables.insert_values(con, "events", tables.EVENT_INSERT_COLUMNS,
                                 [(first["next_event_id"], row[6], "test", "add", taken, None, "{}", None, None,
                                   "alice")], pending)
            tables.insert_values(con, "memories", tables.MEMORY_COLUMNS + ("embedding",), [list(row)], pending)
            with pytest.raises(IntegrityError):
                tables.run_as_one(con, pending)
            assert not con.known_counters, "a failed write forgets the counters it took"
            assert dict(con.execute("SELECT key, value FROM meta").fetchall()) == counters
            assert con.execute("SELECT count(*) FROM events").fetchone()[0] == events
