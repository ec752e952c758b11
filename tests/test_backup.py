"""`memctl backup` / `bank.backup`: a consistent copy while others write; `memctl restore --from`: back again.

A backup is taken while holding the bank's file (other processes wait, as for any operation) and
is a logical copy renamed into place when complete. Restoring refuses to replace an existing bank
without --force, and a process that has the bank open sees the restored contents on its next
operation. `memctl restore ID` (one soft-deleted memory) keeps working.
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import duckdb
import numpy as np
import pytest

from bench.checks import recall_matches_brute_force, store_invariants
from memory_core import CorruptBankError, MemoryBank, StateError, ValidationError


@pytest.fixture(scope="session")
def embedder():
    """all-MiniLM-L6-v2 rather than the default model: the recalls these tests make were written for it."""
    from memory_core.embedding.embedder import MINILM_MODEL, get_embedder

    return get_embedder(MINILM_MODEL)

ROOT = Path(__file__).resolve().parent.parent


def _export(bank: MemoryBank) -> list[dict]:
    buf = io.StringIO()
    bank.export_jsonl(buf)
    return [json.loads(line) for line in buf.getvalue().splitlines()]


def _populated(path: Path, embedder) -> MemoryBank:
    bank = MemoryBank.open(path, embedder=embedder)
    a = bank.add("Drinks tea every morning", namespace="alice", created_at="2026-01-02")
    b = bank.add("Switched from tea to coffee in the morning", namespace="alice", created_at="2026-10-01")
    bank.add_many([{"text": f"Project note {i}: uses tool {i * 7}", "namespace": "bob"} for i in range(30)])
    bank.forget(a)
    bank.restore(a)
    bank.record_conflict(a, b, kind="switch", evidence="tea vs coffee", confidence=0.9,
                         suggestion="newer_wins", path="rules")
    bank.recall("what does she drink", namespace="alice")
    bank.save_preset("strict", bank.preset("default").replace(threshold=0.6))
    return bank


def test_backup_and_restore_round_trip(tmp_path, embedder):
    path, copy = tmp_path / "bank.duckdb", tmp_path / "backups" / "monday.duckdb"
    bank = _populated(path, embedder)
    before = _export(bank)
    history = len(bank.events(limit=10_000))
    assert bank.backup(copy) == len(before)
    assert copy.exists() and not list(copy.parent.glob(".*partial*")), "no temporary file left behind"

    # Life goes on: a new memory, an erased one. Then the bank is restored from the backup.
    new = bank.add("Adopted a dog called Rex", namespace="alice")
    bank.forget(bank.memories(namespace="bob", limit=1)[0].id, hard=True)
    with pytest.raises(StateError, match="--force"):
        MemoryBank.restore_backup(copy, path)
    assert MemoryBank.restore_backup(copy, path, force=True) == len(before)

    # The same bank object (an agent that kept it open) sees the restored bank on its next operation.
    assert _export(bank) == before
    assert not [h for h in bank.recall("dog", namespace="alice", record=False, threshold=0, k=50)
                if h.memory.id == new]
    assert bank.preset("strict").threshold == 0.6 and len(bank.conflicts(namespace="alice")) == 1
    assert recall_matches_brute_force(bank, ["what does she drink", "tool"]) == []
    bank.close()
    with MemoryBank.open(path, embedder=embedder) as fresh:
        assert _export(fresh) == before
        assert len(fresh.events(limit=10_000)) == history
        assert recall_matches_brute_force(fresh, ["what does she drink", "tool"]) == []
    assert store_invariants(path) == []


def test_a_backup_holds_the_recalls_made_just_before_it(bank, tmp_path, embedder):
    """Recalls are buffered and written with the bank's next operation; a backup is one, so a
    recall made a moment before is in the copy, with the use it counted."""
    mid = bank.add("Drinks tea every morning", namespace="alice")
    hit = bank.recall("what does she drink", namespace="alice")[0]
    assert hit.memory.id == mid
    bank.backup(tmp_path / "copy.duckdb")
    with MemoryBank.open(tmp_path / "copy.duckdb", embedder=embedder, read_only=True) as copy:
        assert len(copy.retrievals("alice")) == 1
        assert copy.get(mid).access_count == 1


def test_backup_and_restore_refuse_what_would_lose_data(tmp_path, embedder):
    path = tmp_path / "bank.duckdb"
    with MemoryBank.open(path, embedder=embedder) as bank:
        bank.add("Likes tea", namespace="alice")
        bank.backup(tmp_path / "b1.duckdb")
        with pytest.raises(ValidationError, match="exists"):
            bank.backup(tmp_path / "b1.duckdb")
        bank.backup(tmp_path / "b1.duckdb", overwrite=True)
        with pytest.raises(ValidationError, match="the bank itself"):
            bank.backup(path, overwrite=True)
    not_a_bank = tmp_path / "notes.duckdb"
    con = duckdb.connect(str(not_a_bank))
    con.execute("CREATE TABLE notes (x INT)")
    con.close()
    with pytest.raises(CorruptBankError, match="not a Memory Console bank backup"):
        MemoryBank.restore_backup(not_a_bank, path, force=True)
    garbage = tmp_path / "garbage.duckdb"
    garbage.write_bytes(b"nope" * 5000)
    with pytest.raises(CorruptBankError, match="garbage.duckdb"):
        MemoryBank.restore_backup(garbage, path, force=True)
    with pytest.raises(ValidationError, match="no backup file"):
        MemoryBank.restore_backup(tmp_path / "missing.duckdb", path, force=True)
    with MemoryBank.open(path, embedder=embedder) as bank:  # none of that touched the bank
        assert [m.text for m in bank.memories()] == ["Likes tea"]


def test_restore_mends_a_damaged_bank(tmp_path, embedder):
    path, copy = tmp_path / "bank.duckdb", tmp_path / "b.duckdb"
    with MemoryBank.open(path, embedder=embedder) as bank:
        bank.add_many([{"text": f"Fact {i} about the garden", "namespace": "alice"} for i in range(50)])
        bank.backup(copy)
    with open(path, "r+b") as fh:
        fh.write(os.urandom(8192))
    with pytest.raises(CorruptBankError, match="restore --from"):
        MemoryBank.open(path, embedder=embedder)
    assert MemoryBank.restore_backup(copy, path, force=True) == 50
    with MemoryBank.open(path, embedder=embedder) as bank:
        assert bank.count() == 50
        assert recall_matches_brute_force(bank, ["garden"]) == []


WRITER = textwrap.dedent(
    """
    import json, sys, time
    from pathlib import Path
    import numpy as np
    from memory_core import MemoryBank

    path, folder = sys.argv[1], Path(sys.argv[2])
    vectors = np.load(folder / "vectors.npy")
    bank = MemoryBank.open(path, actor="writer", lock_timeout=30)
    acked = []
    (folder / "writer.ready").touch()
    i = 0
    while not (folder / "stop").exists():
        mid = bank.add_many([{"text": f"Concurrent note {i}", "namespace": "alice",
                              "embedding": vectors[i % len(vectors)].tolist()}])[0]
        acked.append(mid)
        (folder / "acked.json.tmp").write_text(json.dumps(acked))
        (folder / "acked.json.tmp").replace(folder / "acked.json")
        i += 1
    bank.close()
    """
)


def test_backups_taken_while_another_process_writes_are_consistent(tmp_path, embedder):
    """A writer process adds memories one by one, acknowledging each; meanwhile backups are taken.
    Each backup is a consistent bank (invariants hold, every memory has its add event), holds every
    memory acknowledged before it started and nothing the writer had not begun."""
    folder, path = tmp_path / "live", tmp_path / "live" / "bank.duckdb"
    folder.mkdir()
    with MemoryBank.open(path, embedder=embedder) as bank:
        bank.add("Seed memory", namespace="alice")
    np.save(folder / "vectors.npy", embedder.encode([f"Concurrent note {i}" for i in range(20)]))
    script = folder / "writer.py"
    script.write_text(WRITER)
    env = dict(os.environ, HF_HUB_OFFLINE="1", PYTHONPATH=str(ROOT))
    proc = subprocess.Popen([sys.executable, str(script), str(path), str(folder)], cwd=ROOT, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    taken = []
    try:
        deadline = time.monotonic() + 120
        while not (folder / "acked.json").exists():
            assert proc.poll() is None, proc.stdout.read().decode()
            assert time.monotonic() < deadline
            time.sleep(0.05)
        with MemoryBank.open(path, embedder=embedder, lock_timeout=30) as bank:
            for n in range(6):
                acked_before = set(json.loads((folder / "acked.json").read_text()))
                dest = tmp_path / f"backup-{n}.duckdb"
                count = bank.backup(dest)
                acked_after = set(json.loads((folder / "acked.json").read_text()))
                taken.append((dest, count, acked_before, acked_after))
                time.sleep(0.2)
    finally:
        (folder / "stop").touch()
        proc.wait(timeout=60)
    assert proc.returncode == 0, proc.stdout.read().decode()
    counts = []
    for dest, count, acked_before, acked_after in taken:
        assert store_invariants(dest) == []
        con = duckdb.connect(str(dest), read_only=True)
        ids = {r[0] for r in con.execute("SELECT id FROM memories WHERE text LIKE 'Concurrent note %'").fetchall()}
        con.close()
        assert acked_before <= ids, "a backup lost an acknowledged memory"
        assert ids <= acked_after | {max(acked_after) + 1}, "a backup holds memories from nowhere"
        counts.append(len(ids))
    assert counts == sorted(counts) and counts[-1] > counts[0], f"the writer did not write during backups: {counts}"
    # The last backup restores into a bank that works.
    restored = tmp_path / "restored.duckdb"
    MemoryBank.restore_backup(taken[-1][0], restored)
    with MemoryBank.open(restored, embedder=embedder) as bank:
        assert bank.count() == taken[-1][1]
        assert recall_matches_brute_force(bank, ["concurrent note"]) == []


def _memctl(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "memory_core.cli", *args], capture_output=True, text=True,
                          cwd=ROOT, env=dict(os.environ, HF_HUB_OFFLINE="1"), timeout=300)


def test_cli_backup_and_restore(tmp_path, embedder):
    path, copy = tmp_path / "bank.duckdb", tmp_path / "copy.duckdb"
    with MemoryBank.open(path, embedder=embedder) as bank:
        keep = bank.add("Keeps bees", namespace="alice")
        bank.forget(keep)  # archived: `memctl restore ID` still brings one memory back
    out = _memctl("--bank", str(path), "backup", str(copy))
    assert out.returncode == 0, out.stderr
    assert "backed up 1 memories" in out.stdout and "restore --from" in out.stdout
    out = _memctl("--bank", str(path), "restore", str(keep))
    assert out.returncode == 0 and "restored" in out.stdout, out.stderr
    out = _memctl("--bank", str(path), "restore", "--from", str(copy))
    assert out.returncode == 1 and "--force" in out.stderr and "Traceback" not in out.stderr
    out = _memctl("--bank", str(path), "restore", "--from", str(copy), "--force")
    assert out.returncode == 0 and "1 memories" in out.stdout, out.stderr
    with MemoryBank.open(path, embedder=embedder) as bank:
        assert bank.get(keep).status == "archived"  # as it was when backed up
    out = _memctl("--bank", str(path), "restore")
    assert out.returncode == 2 and "--from BACKUP" in out.stderr
