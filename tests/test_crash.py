"""Crash safety: a writer killed with SIGKILL during import, merge and maintenance loses nothing acknowledged.

The short version of `python -m bench.crash --kills 60` (see RELIABILITY.md for the full run's
figures): 6 kills, two in each phase, each followed by a restart and the full set of checks. The
checks themselves are shown to catch a half-written merge and indexes that disagree with the store.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import duckdb

from bench.checks import recall_matches_brute_force, store_invariants
from memory_core import MemoryBank

ROOT = Path(__file__).resolve().parent.parent


def test_six_kills_during_import_merge_and_maintenance_lose_nothing(tmp_path):
    out = tmp_path / "crash.json"
    env = dict(os.environ, HF_HUB_OFFLINE="1", OMP_NUM_THREADS="1")
    run = subprocess.run([sys.executable, "-m", "bench.crash", "--kills", "6", "--seed", "11", "--out", str(out)],
                         cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)
    assert out.exists(), run.stderr[-3000:]
    result = json.loads(out.read_text())
    assert result["failures"] == [], json.dumps(result["failures"], indent=1)[:3000]
    assert result["kills"] == result["survived"] == 6
    assert result["kills_by_phase"] == {"import": 2, "merge": 2, "maintain": 2}
    assert result["acknowledged_operations"]["import"] > 0  # the writers did work before dying
    assert run.returncode == 0


def test_the_checks_catch_a_half_written_merge_and_stale_indexes(tmp_path, embedder):
    """Were the crash checks blind, the test above would prove nothing."""
    path = tmp_path / "bank.duckdb"
    bank = MemoryBank.open(path, embedder=embedder)
    ids = bank.add_many([{"text": t, "namespace": "alice"} for t in
                         ("Prefers tea in the morning", "Really prefers tea in the morning", "Lives in Berlin")])
    record = bank.merge(ids[:2])
    bank.recall("tea", namespace="alice", record=False)  # loads the index
    assert store_invariants(path) == [] and recall_matches_brute_force(bank, ["tea"]) == []

    # Behind the bank's back (no change sequence): a member is set live again, a text changes.
    con = duckdb.connect(str(path))
    con.execute("UPDATE memories SET status = 'active', merged_into = NULL WHERE id = ?", [ids[0]])
    con.execute("UPDATE memories SET importance = 0.99 WHERE id = ?", [ids[2]])
    con.close()
    assert any("half a merge" in p for p in store_invariants(path))
    assert recall_matches_brute_force(bank, ["tea"]) != []  # the bank's indexes did not see it
    con = duckdb.connect(str(path))
    con.execute("DELETE FROM memories WHERE id = ?", [record.merged_id])
    con.close()
    assert any(f"merged memory {record.merged_id} is missing" in p for p in store_invariants(path))
    bank.close()
