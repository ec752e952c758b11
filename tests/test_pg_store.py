"""A PostgreSQL bank: many writers at once, and moving a bank between stores exactly.

The concurrency test runs real OS processes (plain scripts run with ``sys.executable``) that add,
add in bulk, update, forget, recall and give feedback against one PostgreSQL bank at the same
time. Writers are PostgreSQL transactions queued on the bank's write lock: nothing may be lost,
no lock error may surface, and the change sequence must order every change (one number per
transaction, never shared). The processes embed with a small hashing embedder instead of the
model, so the race is about the store, not about four copies of torch on two cores.
"""

from __future__ import annotations

import io
import json
import os
import shutil
import subprocess
import sys
import textwrap
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import numpy as np
import psycopg
import pytest

import stores
from memory_core import MemoryBank, ScoringParams
from memory_core.storage import open_store
from memory_core.storage.postgres import PostgresStore, translate
from memory_core.storage.schema import SCHEMA_VERSION

NOW = datetime(2026, 11, 1, tzinfo=timezone.utc)

# A deterministic stand-in for the embedding model (words hashed into 384 dimensions), shared by
# the test and its child processes.
HASH_EMBEDDER = textwrap.dedent(
    """
    import hashlib
    import numpy as np

    class HashEmbedder:
        name = "test/hash-embedder"
        dim = 384

        def encode(self, texts, **_):
            out = np.zeros((len(texts), self.dim), dtype=np.float32)
            for i, t in enumerate(texts):
                for w in t.lower().split():
                    out[i, int(hashlib.md5(w.encode()).hexdigest(), 16) % self.dim] += 1.0
                out[i] /= max(np.linalg.norm(out[i]), 1e-9)
            return out

        def encode_one(self, text, **_):
            return self.encode([text])[0]

        def warm(self, texts):
            pass
    """
)
_ns: dict = {}
exec(HASH_EMBEDDER, _ns)  # noqa: S102 - our own source, run in the child processes too
HashEmbedder = _ns["HashEmbedder"]

WORKER = HASH_EMBEDDER + textwrap.dedent(
    """
    import json, sys, traceback
    from memory_core import MemoryBank

    url, me, rounds, out = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
    bank = MemoryBank.open(url, embedder=HashEmbedder(), actor=f"worker{me}", lock_timeout=60)
    added, archived, recalls, feedback, errors = [], [], 0, 0, []
    for r in range(rounds):
        try:
            mid = bank.add(f"worker {me} round {r} single memory about topic{r % 7}", namespace="shared",
                           detect_conflicts=False)
            added.append(mid)
            many = bank.add_many([{"text": f"worker {me} round {r} bulk {j} about topic{j}",
                                   "namespace": "shared"} for j in range(3)])
            added += many
            bank.update(many[0], importance=0.9)
            if r % 3 == 0:
                bank.forget(many[1])
                archived.append(many[1])
            hits = bank.recall(f"topic{r % 7} memory", namespace="shared", threshold=0, k=5)
            recalls += 1
            if r % 2 == 0 and hits:
                bank.feedback(bank.last_retrieval_id, answer="ok", used_ids=[hits[0].memory.id], helpful=True)
                feedback += 1
        except Exception:
            errors.append(traceback.format_exc())
    bank.close()
    with open(out, "w") as fh:
        json.dump({"added": added, "archived": archived, "recalls": recalls, "feedback": feedback,
                   "errors": errors}, fh)
    """
)


def test_translation_of_portable_sql():
    assert translate("SELECT ? WHERE a LIKE '%?%' -- what?\n AND b = ?", [1, 2]) == (
        "SELECT %s WHERE a LIKE '%%?%%' -- what?\n AND b = %s", [1, 2])
    assert translate("SELECT * FROM t WHERE id IN (SELECT unnest(?))", [[]])[0].endswith("unnest(%s::BIGINT[]))")
    assert translate("SELECT unnest( ?)", [["a"]])[0] == "SELECT unnest( %s::TEXT[])"


def test_pg_store_names_itself_without_password_and_keeps_caches_by_url(tmp_path, monkeypatch):
    monkeypatch.setenv("MEMCTL_CACHE_DIR", str(tmp_path))
    s = PostgresStore("postgresql://me:secret@db.example:5433/bank")
    t = PostgresStore("postgresql://me@db.example:5433/other")
    assert s.location == "postgresql://me@db.example:5433/bank" and "secret" not in str(s.index_folder)
    assert s.index_folder.parent.parent == tmp_path and s.index_folder != t.index_folder
    assert s.path is None and s.journal_folder.parent == s.index_folder.parent


def test_unreachable_server_says_how_to_start_it():
    from memory_core.errors import BankLockedError

    with pytest.raises(BankLockedError, match="pg_ctlcluster"):
        MemoryBank.open("postgresql://postgres@127.0.0.1:1/none", lock_timeout=0.5)


def test_many_processes_write_one_bank_and_lose_nothing(pg_url, tmp_path):
    workers, rounds = 4, 12
    MemoryBank.open(pg_url, embedder=HashEmbedder()).close()  # the schema, before the race
    script = tmp_path / "worker.py"
    script.write_text(WORKER)
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parent.parent)}  # this checkout's memory_core
    procs = [subprocess.Popen([sys.executable, str(script), pg_url, str(w), str(rounds), str(tmp_path / f"{w}.json")],
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env)
             for w in range(workers)]
    for p in procs:
        out, _ = p.communicate(timeout=300)
        assert p.returncode == 0, out.decode()[-3000:]
    reports = [json.loads((tmp_path / f"{w}.json").read_text()) for w in range(workers)]
    assert [r["errors"] for r in reports] == [[]] * workers, "no lock errors, no failures"

    added = [mid for r in reports for mid in r["added"]]
    assert len(added) == len(set(added)) == workers * rounds * 4, "every id handed out once"
    with MemoryBank.open(pg_url, embedder=HashEmbedder()) as bank:
        stored = {m.id: m for m in bank.memories(status=None, limit=None)}
        assert set(stored) == set(added), "nothing lost"
        archived = {mid for r in reports for mid in r["archived"]}
        assert {i for i, m in stored.items() if m.status == "archived"} == archived
        for w, r in enumerate(reports):
            assert all(stored[mid].text.startswith(f"worker {w} ") for mid in r["added"])
        assert len(bank.retrievals(limit=None)) == sum(r["recalls"] for r in reports)
        assert len(bank.feedback_log()) == sum(r["feedback"] for r in reports)
        assert sum(bank.usage_counts().values()) == sum(r["feedback"] for r in reports)

    with psycopg.connect(pg_url) as con:
        change_seq = int(con.execute("SELECT value FROM meta WHERE key = 'change_seq'").fetchone()[0])
        assert con.execute("SELECT max(seq) FROM memories").fetchone()[0] <= change_seq
        # Every add, update, forget and feedback took its own number (recall flushes take more).
        writes = workers * rounds * 3 + sum(len(r["archived"]) + r["feedback"] for r in reports)
        assert change_seq >= writes


SEQ_WORKER = textwrap.dedent(
    """
    import json, sys
    from memory_core.storage import open_store, tables

    url, n, out = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    store = open_store(url, lock_timeout=60)
    got = []
    for _ in range(n):
        with store.connect() as con:
            got.append(tables.next_seq(con))
    store.release()
    with open(out, "w") as fh:
        json.dump(got, fh)
    """
)


def test_the_change_sequence_is_unique_across_processes(pg_url, tmp_path):
    """Processes that only take change numbers, as fast as they can: every number once, none
    skipped, each process's own numbers increasing."""
    MemoryBank.open(pg_url, embedder=HashEmbedder()).close()
    script = tmp_path / "seq.py"
    script.write_text(SEQ_WORKER)
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parent.parent)}
    workers, n = 4, 200
    procs = [subprocess.Popen([sys.executable, str(script), pg_url, str(n), str(tmp_path / f"s{w}.json")],
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env) for w in range(workers)]
    for p in procs:
        out, _ = p.communicate(timeout=300)
        assert p.returncode == 0, out.decode()[-3000:]
    got = [json.loads((tmp_path / f"s{w}.json").read_text()) for w in range(workers)]
    assert sorted(s for g in got for s in g) == list(range(1, workers * n + 1))
    assert all(g == sorted(g) for g in got)


def _export(bank: MemoryBank) -> list[dict]:
    buf = io.StringIO()
    bank.export_jsonl(buf)
    return [json.loads(line) for line in buf.getvalue().splitlines() if line.strip()]


def _busy(bank: MemoryBank) -> None:
    """A bank with something in every kind of record: statuses, history, recalls, feedback,
    labels, presets, tokens, a merge and a conflict."""
    ids = bank.add_many([{"text": t, "namespace": ns, "importance": imp, "created_at": NOW - timedelta(days=d)}
                         for t, ns, imp, d in (("Drinks green tea every morning", "alice", 0.7, 40),
                                               ("Moved to Berlin in August", "alice", 0.9, 90),
                                               ("Switched to coffee last week", "alice", 0.5, 3),
                                               ("Works night shifts at the hospital", "bob", 0.6, 10),
                                               ("Allergic to peanuts", "bob", 1.0, 400))])
    bank.update(ids[1], importance=0.95)
    bank.forget(ids[4])
    bank.add("Has a cat named Miso", namespace="bob", created_at=NOW - timedelta(days=1))
    bank.record_conflict(ids[0], ids[2], kind="switch", evidence="tea vs coffee", confidence=0.9,
                         suggestion="newer_wins", path="rules")
    hits = bank.recall("what does she drink?", namespace="alice", now=NOW, threshold=0)
    bank.feedback(bank.last_retrieval_id, answer="green tea", used_ids=[hits[0].memory.id], helpful=True)
    bank.label("alice", "where does she live?", ids[1])
    bank.save_preset("mine", ScoringParams(k=7, threshold=0.1), description="test")
    bank.tokens.create("agent", namespaces=["alice"])
    bank.flush()


def _snapshot(location) -> dict:
    with MemoryBank.open(location, embedder=HashEmbedder()) as bank:
        return {
            "export": _export(bank),
            "history": [(e.id, e.actor, e.action, e.memory_id, e.before, e.after, e.group_id)
                        for e in bank.events(limit=1000)],
            "recall": [(h.memory.id, round(h.score, 6)) for h in
                       bank.recall("tea coffee Berlin", namespace="alice", now=NOW, threshold=0, record=False)],
            "retrievals": [(r["id"], r["query"], [h["memory_id"] for h in r["hits"]])
                           for r in bank.retrievals(limit=None)],
            "labels": [(lq.query, lq.relevant) for lq in bank.labels()],
            "presets": sorted((n, p.to_json()) for n, p in bank.presets().items()),
            "tokens": [(t.name, t.namespaces) for t in bank.tokens.list()],
            "conflicts": [(c.id, c.a.id, c.b.id, c.status, c.evidence) for c in bank.conflicts(status=None)],
            "stats": {k: v for k, v in bank.stats().items() if k not in ("path", "file_bytes")},
        }


def test_migrate_copies_a_bank_exactly_both_ways(pg_url, tmp_path):
    src = tmp_path / "src.duckdb"
    with MemoryBank.open(src, embedder=HashEmbedder()) as bank:
        _busy(bank)
    before = _snapshot(src)
    assert before["export"] and before["history"] and before["retrievals"] and before["labels"]

    from click.testing import CliRunner
    from memory_core.cli import cli

    result = CliRunner().invoke(cli, ["migrate", "--from", str(src), "--to", pg_url])
    assert result.exit_code == 0, result.output
    assert _snapshot(pg_url) == before
    with psycopg.connect(pg_url) as con:  # vectors bit for bit
        pg_vectors = {mid: None if e is None else np.frombuffer(e, "<f4")  # float32 bytes (schema 9)
                      for mid, e in con.execute("SELECT id, embedding FROM memories ORDER BY id").fetchall()}
    back = tmp_path / "back.duckdb"
    assert MemoryBank.copy_bank(pg_url, back) == len(before["export"])
    assert _snapshot(back) == before
    import duckdb

    con = duckdb.connect(str(back), read_only=True)
    for mid, vec in con.execute("SELECT id, embedding FROM memories ORDER BY id").fetchall():
        assert (vec is None and pg_vectors[mid] is None) or np.array_equal(np.asarray(vec, np.float32),
                                                                          np.asarray(pg_vectors[mid], np.float32))
    con.close()

    again = CliRunner().invoke(cli, ["migrate", "--from", str(src), "--to", pg_url])
    assert again.exit_code != 0 and "already holds a bank" in again.output


def test_a_bank_with_real_array_vectors_is_migrated_to_bytes_in_place(pg_url, tmp_path):
    """A PostgreSQL bank written before schema 9 keeps its vectors as REAL[]: opening it converts
    them to float32 bytes, bit for bit, and the bank answers as before (from the store, not a
    saved index)."""
    from conftest import downgrade

    with MemoryBank.open(pg_url, embedder=HashEmbedder()) as bank:
        _busy(bank)
        bank.forget(bank.add("erased before the migration", namespace="alice"), hard=True)
        with bank._store.connect(write=False) as con:
            before = dict(con.execute("SELECT id, embedding FROM memories").fetchall())
        recalls = [[(h.memory.id, h.score) for h in bank.recall(q, namespace="alice", record=False, threshold=0, now=NOW)]
                   for q in ("coffee", "tea in the morning", "berlin")]
    assert any(v is None for v in before.values()) and any(v is not None for v in before.values())
    downgrade(pg_url, 8)
    with psycopg.connect(pg_url) as con:
        assert con.execute("SELECT data_type FROM information_schema.columns WHERE table_name = 'memories' "
                           "AND column_name = 'embedding'").fetchone()[0] == "ARRAY"
    shutil.rmtree(stores.index_folder(pg_url), ignore_errors=True)
    with MemoryBank.open(pg_url, embedder=HashEmbedder()) as bank:
        assert [[(h.memory.id, h.score) for h in bank.recall(q, namespace="alice", record=False, threshold=0, now=NOW)]
                for q in ("coffee", "tea in the morning", "berlin")] == recalls
    with psycopg.connect(pg_url) as con:
        assert con.execute("SELECT data_type FROM information_schema.columns WHERE table_name = 'memories' "
                           "AND column_name = 'embedding'").fetchone()[0] == "bytea"
        after = {mid: None if e is None else np.frombuffer(e, "<f4")
                 for mid, e in con.execute("SELECT id, embedding FROM memories").fetchall()}
        assert con.execute("SELECT max(version) FROM schema_migrations").fetchone()[0] == SCHEMA_VERSION
    assert after.keys() == before.keys()
    for mid, vec in before.items():
        assert (vec is None and after[mid] is None) or np.array_equal(after[mid], vec), mid


def test_backup_of_a_pg_bank_is_a_bank_file_and_restores_into_either_store(pg_url, tmp_path, pg_databases):
    with MemoryBank.open(pg_url, embedder=HashEmbedder()) as bank:
        _busy(bank)
        n = bank.backup(tmp_path / "pg.backup")
    before = _snapshot(pg_url)
    assert n == len(before["export"])
    assert _snapshot(tmp_path / "pg.backup") == before  # a DuckDB bank file
    other = pg_databases()
    assert MemoryBank.restore_backup(tmp_path / "pg.backup", other) == n
    assert _snapshot(other) == before
    with pytest.raises(Exception, match="force"):
        MemoryBank.restore_backup(tmp_path / "pg.backup", other)


def test_a_store_in_a_schema_of_its_own(pg_url):
    """A bank is the connection's schema: two banks can share one database (search_path)."""
    with psycopg.connect(pg_url, autocommit=True) as con:
        con.execute("CREATE SCHEMA team_a")
    url = pg_url + "?options=-csearch_path%3Dteam_a"
    with MemoryBank.open(url, embedder=HashEmbedder()) as bank:
        bank.add("Lives in a schema", namespace="n")
    with psycopg.connect(pg_url) as con:
        assert con.execute("SELECT count(*) FROM team_a.memories").fetchone()[0] == 1
        assert con.execute("SELECT count(*) FROM information_schema.tables WHERE table_schema = 'public'"
                           ).fetchone()[0] == 0
    assert open_store(url).index_folder != open_store(pg_url).index_folder


def test_memctl_on_a_pg_bank(pg_url, tmp_path, embedder):
    """memctl --bank postgresql://... : the same commands as on a bank file."""
    from click.testing import CliRunner
    from memory_core.cli import cli

    def memctl(*args: str) -> str:
        result = CliRunner().invoke(cli, ["--bank", pg_url, *args])
        assert result.exit_code == 0, result.output
        return result.stdout

    assert "ready" in memctl("init")
    memctl("add", "Prefers vegetarian food", "-n", "alice", "-i", "0.8")
    memctl("add", "Works night shifts", "-n", "alice")
    hits = json.loads(memctl("recall", "what should I cook for dinner?", "-n", "alice", "--json", "--threshold", "0"))
    assert hits and hits[0]["memory"]["text"] == "Prefers vegetarian food"
    assert json.loads(memctl("stats", "--json"))["total"] == 2
    memctl("forget", "2", "--hard", "--yes")
    assert "backed up 2 memories" in memctl("backup", str(tmp_path / "copy.duckdb"))
    assert "Works night shifts" not in memctl("export", "-")


def test_killed_sessions_cost_a_reconnect_not_an_operation(pg_url):
    """Every session of the bank killed by the server (what a restart does to a client): the
    next operations reconnect by themselves; a transaction cut off midway left nothing."""
    with MemoryBank.open(pg_url, embedder=HashEmbedder()) as bank:
        first = bank.add("Before the cut", namespace="n")
        with psycopg.connect(stores.ADMIN_URL, autocommit=True) as admin:
            killed = admin.execute("SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
                                   "WHERE datname = %s AND pid <> pg_backend_pid()",
                                   [pg_url.rpartition("/")[2]]).fetchone()[0]
        assert killed >= 1
        second = bank.add("After the cut", namespace="n")
        assert sorted(m.id for m in bank.memories("n", limit=None)) == [first, second]
        assert [h.memory.id for h in bank.recall("after the cut", namespace="n", threshold=0, k=1,
                                                  record=False)] == [second]


def test_another_process_s_change_is_seen_by_the_next_recall(pg_url):
    """Two banks on one database (two servers): a write committed by one is in the other's next
    recall (each recall compares the change sequence with the one it caught up to)."""
    a = MemoryBank.open(pg_url, embedder=HashEmbedder())
    b = MemoryBank.open(pg_url, embedder=HashEmbedder())
    try:
        a.add("Drinks green tea", namespace="n")
        assert len(b.recall("green tea", namespace="n", threshold=0, record=False)) == 1
        for i in range(20):
            mid = a.add(f"Visited city number {i} in spring", namespace="n")
            assert mid in [h.memory.id for h in b.recall(f"city number {i} spring", namespace="n", threshold=0,
                                                          k=50, record=False)]
    finally:
        a.close()
        b.close()


def test_a_write_that_lands_during_an_operation_is_not_passed_off_as_seen(pg_url, monkeypatch):
    """B's operation catches up; A commits before B's operation ends. B must not remember the
    sequence as it is after its operation (that would take A's write as seen, and B's recalls
    would skip it until some other change): its next recall catches up and finds A's memory."""
    P = ScoringParams(threshold=0, k=10)  # given: no session to read the active preset
    a = MemoryBank.open(pg_url, embedder=HashEmbedder())
    b = MemoryBank.open(pg_url, embedder=HashEmbedder())
    try:
        a.add("Drinks green tea", namespace="n")
        b.recall("green tea", namespace="n", params=P, record=False)  # B's index is loaded
        a.add("Plays the cello", namespace="n")  # B's next recall takes the slow path...
        core = b._core
        original = core.catch_up
        landed: list[int] = []

        def catch_up_then_a_writes(con):
            original(con)
            if not landed:  # ...and A commits right after B caught up, before B's operation ends
                landed.append(a.add("Keeps bees on the roof", namespace="n"))

        monkeypatch.setattr(core, "catch_up", catch_up_then_a_writes)
        b.recall("cello", namespace="n", params=P, record=False)
        monkeypatch.setattr(core, "catch_up", original)
        assert landed[0] in [h.memory.id for h in b.recall("bees on the roof", namespace="n", params=P,
                                                            record=False)]
    finally:
        a.close()
        b.close()


def test_other_processes_learn_of_a_change_by_notification(pg_url):
    """A's add is notified to B (LISTEN/NOTIFY: what a server waits on for read-your-writes);
    the time from A's acknowledged add to B knowing its change number, measured."""
    import statistics
    import time

    a = MemoryBank.open(pg_url, embedder=HashEmbedder())
    b = MemoryBank.open(pg_url, embedder=HashEmbedder())
    try:
        a.add("Drinks green tea", namespace="n")
        b.recall("green tea", namespace="n", threshold=0, record=False)
        store = b._core.store
        assert store._listening().wait_for(1, 5.0), "the listener is up"
        lags = []
        for i in range(30):
            mid = a.add(f"Visited city number {i} in spring", namespace="n", detect_conflicts=False)
            started = time.perf_counter()
            seq = a.stats()["change_seq"]
            assert store.wait_for_change(seq, timeout=1.0)
            lags.append(time.perf_counter() - started)
            assert mid in [h.memory.id for h in b.recall(f"city number {i} spring", namespace="n", threshold=0,
                                                          k=50, record=False)]
        lags.sort()
        print(f"\n[notify] A's change known to B: p50 {1000 * statistics.median(lags):.2f} ms, "
              f"max {1000 * lags[-1]:.2f} ms over {len(lags)} adds")
        assert lags[-1] < 1.0
    finally:
        a.close()
        b.close()


def test_two_servers_on_one_database_one_truth(pg_url):
    """Two servers (the REST app, in this process) over one database: adds acknowledged by A from
    4 concurrent clients are returned by a recall on B within 5 s; the time from A's answer to B
    returning the memory is printed (its figures are bench.pg_servers', not a pass mark here)."""
    import statistics
    import threading
    import time

    from fastapi.testclient import TestClient

    from memory_core.server.app import create_app

    with TestClient(create_app(MemoryBank.open(pg_url, embedder=HashEmbedder()), auth=False)) as server_a, \
            TestClient(create_app(MemoryBank.open(pg_url, embedder=HashEmbedder()), auth=False)) as server_b:
        lags: list[float] = []
        errors: list[str] = []

        def client(c: int) -> None:
            for i in range(15):
                text = f"client{c} fact{i} zebra{c}x{i}"
                r = server_a.post("/v1/memories", json={"text": text, "namespace": "shared",
                                                        "detect_conflicts": False})
                if r.status_code != 201:
                    errors.append(r.text)
                    continue
                mid, acked = r.json()["id"], time.perf_counter()
                while True:
                    got = server_b.post("/v1/recall", json={"query": f"zebra{c}x{i}", "namespace": "shared",
                                                            "threshold": 0, "k": 5, "record": False})
                    if mid in [h["memory"]["id"] for h in got.json()["hits"]]:
                        lags.append(time.perf_counter() - acked)
                        break
                    if time.perf_counter() - acked > 5:
                        errors.append(f"{text} not on B after 5 s")
                        break

        threads = [threading.Thread(target=client, args=(c,)) for c in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert errors == []
        lags.sort()
        p99 = lags[min(len(lags) - 1, int(0.99 * len(lags)))]
        print(f"\n[two servers] add on A -> returned by B: p50 {1000 * statistics.median(lags):.1f} ms, "
              f"p99 {1000 * p99:.1f} ms over {len(lags)} adds from 4 clients")
        assert len(lags) == 60


def _pg_state(url: str) -> dict:
    """What a merge or a resolve changes, read straight from the database."""
    with psycopg.connect(url) as con:
        return {
            "memories": con.execute("SELECT id, status, text, importance, seq FROM memories ORDER BY id").fetchall(),
            "events": con.execute("SELECT count(*) FROM events").fetchone()[0],
            "merges": con.execute("SELECT count(*) FROM merges").fetchone()[0],
            "conflicts": con.execute("SELECT id, status FROM conflicts ORDER BY id").fetchall(),
            "change_seq": con.execute("SELECT value FROM meta WHERE key = 'change_seq'").fetchone()[0],
        }


def test_a_connection_dropped_mid_merge_or_resolve_leaves_nothing_half_done(pg_url, monkeypatch):
    """The server drops the connection (a restart, a network cut) after a merge or a resolve has
    written part of its rows: the operation fails with the retriable BankLockedError, the database
    is exactly as before, and the same operation succeeds once tried again."""
    from memory_core.errors import BankLockedError
    from memory_core.storage import tables

    bank = MemoryBank.open(pg_url, embedder=HashEmbedder())
    try:
        ids = bank.add_many([{"text": t, "namespace": "n", "created_at": NOW - timedelta(days=d)}
                             for t, d in (("Drinks green tea every morning", 30), ("Switched to coffee", 2),
                                          ("Has a cat named Miso", 9), ("Owns a cat called Miso", 8))])
        conflict = bank.record_conflict(ids[0], ids[1], kind="switch", evidence="tea vs coffee", confidence=0.9,
                                        suggestion="newer_wins", path="rules")
        before = _pg_state(pg_url)
        cut: list[int] = []

        def cutting(original):
            def log(con, *args, **kwargs):
                result = original(con, *args, **kwargs)  # the operation's rows are written by now...
                pid = con._raw.info.backend_pid  # ...when the server drops its connection
                with psycopg.connect(stores.ADMIN_URL, autocommit=True) as admin:
                    admin.execute("SELECT pg_terminate_backend(%s)", [pid])
                cut.append(pid)
                return result
            return log

        monkeypatch.setattr(tables, "log_event", cutting(tables.log_event))
        monkeypatch.setattr(tables, "log_events", cutting(tables.log_events))
        with pytest.raises(BankLockedError, match="cannot reach"):
            bank.merge([ids[2], ids[3]], text="Has a cat named Miso")
        assert cut and _pg_state(pg_url) == before
        with pytest.raises(BankLockedError, match="cannot reach"):
            bank.resolve_conflict(conflict.id, "newer_wins")
        assert len(cut) >= 2 and _pg_state(pg_url) == before
        monkeypatch.undo()

        merged = bank.merge([ids[2], ids[3]], text="Has a cat named Miso")
        assert bank.resolve_conflict(conflict.id, "newer_wins").status == "resolved"
        after = _pg_state(pg_url)
        assert after["merges"] == 1 and dict(after["conflicts"])[conflict.id] == "resolved"
        statuses = {mid: status for mid, status, *_ in after["memories"]}
        assert statuses[ids[0]] == "superseded" and statuses[ids[2]] == statuses[ids[3]] == "merged"
        assert merged is not None
        assert [h.memory.id for h in bank.recall("cat Miso", namespace="n", threshold=0, record=False)][:1] == \
            [m for m, s in statuses.items() if s == "active" and m not in ids]
    finally:
        bank.close()


def test_an_erasure_by_another_server_leaves_no_text_in_this_server_s_saved_index(pg_url, tmp_path, monkeypatch):
    """Two servers on two machines (two cache folders): B has saved its index of alice, texts
    included; A erases a memory of alice. Once B catches up, B's folder holds no trace of it."""
    secret = "Keeps the spare key under the blue flowerpot"
    monkeypatch.setenv("MEMCTL_CACHE_DIR", str(tmp_path / "b"))
    b = MemoryBank.open(pg_url, embedder=HashEmbedder())
    ids = b.add_many([{"text": t, "namespace": "alice"} for t in (secret, "Likes jazz", "Runs on Sundays")])
    b.recall("jazz", namespace="alice", record=False)
    b.load_namespace("alice")
    b._core.save_index(b._core.indexes["alice"])
    files = list((tmp_path / "b").rglob("*"))
    assert any(f.is_file() and b"flowerpot" in f.read_bytes() for f in files)
    monkeypatch.setenv("MEMCTL_CACHE_DIR", str(tmp_path / "a"))
    with MemoryBank.open(pg_url, embedder=HashEmbedder()) as a:
        a.forget(ids[0], hard=True)
    assert [h.memory.text for h in b.recall("jazz", namespace="alice", record=False)] == ["Likes jazz"]
    for f in (tmp_path / "b").rglob("*"):
        if f.is_file():
            data = f.read_bytes()
            assert b"flowerpot" not in data and b"spare key" not in data, f
    b.close()


def _reader_of_the_bank(pg_url: str, pg_databases: Any, mid: int, text: str) -> Any:
    """Another session of the bank's database that read the memory in a REPEATABLE READ transaction."""
    con = psycopg.connect(pg_url)
    con.execute("BEGIN ISOLATION LEVEL REPEATABLE READ")
    assert con.execute("SELECT text FROM memories WHERE id = %s", [mid]).fetchone()[0] == text
    return con


def _writer_of_another_database(pg_url: str, pg_databases: Any, mid: int, text: str) -> Any:
    """A transaction of another database that took an id before the delete (in the parallel
    tests: another worker's DROP DATABASE)."""
    con = psycopg.connect(pg_databases())
    con.execute("BEGIN")
    con.execute("SELECT pg_current_xact_id()")
    return con


@pytest.mark.parametrize("hold", [_reader_of_the_bank, _writer_of_another_database],
                         ids=["reader of the bank", "writer of another database"])
def test_a_hard_delete_waits_for_a_transaction_that_holds_the_old_text(pg_url, pg_databases, hold):
    """VACUUM FULL copies a deleted row's old version into the new file while a transaction older
    than the delete might still read it (a reader of the bank), or while one holds the oldest id
    its own snapshot keeps versions for (a writer of any database of the server). The erasure's
    rewrite waits for either (here open 1.5 s across the delete), so the text is gone from the
    table files afterwards."""
    import threading

    secret = "a transaction held open across the erasure qv8w"
    with MemoryBank.open(pg_url, embedder=HashEmbedder()) as bank:
        mid = bank.add(secret, namespace="alice", detect_conflicts=False)
        con = hold(pg_url, pg_databases, mid, secret)
        ended = threading.Timer(1.5, con.rollback)
        ended.start()
        try:
            bank.forget(mid, hard=True)
        finally:
            ended.join()
            con.close()
    held = stores.relations_holding(pg_url, [b"qv8w"])
    assert held == [], f"erased text is still in a file: {held}\n{stores.pg_horizons(pg_url)}"


def test_an_add_judges_its_contradictions_without_holding_the_write_lock(pg_url, embedder, monkeypatch):
    """Several servers write one database: the rules judge what an add contradicts (the bulk of
    an add's Python) without the bank's write lock, so another server's writes do not wait for
    them; what they found is recorded afterwards. A session of its own tries the lock while the
    judging runs."""
    from memory_core.curation import conflicts  # the service imports it when it judges
    from memory_core.storage.postgres import WRITE_LOCK_KEY

    free_while_judging: list[bool] = []
    find = conflicts.find

    def judging(*args, **kwargs):
        with psycopg.connect(pg_url, autocommit=True) as other:
            got = other.execute("SELECT pg_try_advisory_lock(%s)", [WRITE_LOCK_KEY]).fetchone()[0]
            if got:
                other.execute("SELECT pg_advisory_unlock(%s)", [WRITE_LOCK_KEY])
        free_while_judging.append(got)
        return find(*args, **kwargs)

    monkeypatch.setattr(conflicts, "find", judging)
    with MemoryBank.open(pg_url, embedder=embedder) as bank:
        old = bank.add("Lives in Paris", namespace="bob", created_at="2026-01-01")
        new = bank.add("Moved to Berlin", namespace="bob", created_at="2026-06-01")
        assert free_while_judging and all(free_while_judging), free_while_judging
        assert [(c.a.id, c.b.id) for c in bank.conflicts(namespace="bob")] == [(old, new)]


def test_a_pair_another_server_changed_while_it_was_judged_is_not_flagged(pg_url, embedder, monkeypatch):
    """Between the judging and the recording (no lock is held meanwhile) another server archives
    the older memory: the add stands, and no conflict names a memory that is no longer live."""
    from memory_core.curation import conflicts  # the service imports it when it judges

    with MemoryBank.open(pg_url, embedder=embedder) as setup:
        old = setup.add("Lives in Paris", namespace="bob", created_at="2026-01-01")
    find = conflicts.find

    def judging(*args, **kwargs):
        found = find(*args, **kwargs)
        assert found, "the pair is a contradiction the rules flag"
        with MemoryBank.open(pg_url, embedder=embedder) as other:
            other.forget(old)
        return found

    monkeypatch.setattr(conflicts, "find", judging)
    with MemoryBank.open(pg_url, embedder=embedder) as bank:
        new = bank.add("Moved to Berlin", namespace="bob", created_at="2026-06-01")
        assert bank.get(new).status == "active" and bank.get(old).status == "archived"
        assert bank.conflicts(namespace="bob", status=None) == []
