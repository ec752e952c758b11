"""Reproduce the DuckDB race behind lost commits between processes (and what our lock changes).

DuckDB 2.0.1 reads a database file's headers through an unlocked handle before it takes its
file lock. Two processes taking turns (connect, insert, commit, close) then lose commits now and
then. Run: ``python bench/duckdb_header_race.py [rounds] [trials]``; prints, per trial, how many
of each process's committed rows are missing, without and with an flock held around
connect..close (what memory_core.storage.duckdb.DuckDBStore does with ``<bank>.lock``).
The race is timing-dependent. Measured on the dev box (2 shared cores, other load), 400 rounds:
an earlier equivalent script lost 1-4 of 800 commits in 5 of 6 trials plain and 0 in 6 of 6 with
the lock; this script's first run (3 trials) lost none either way, so run more trials before
concluding anything from one run.
"""

from __future__ import annotations

import fcntl
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import duckdb


def worker(path: str, me: str, rounds: int, locked: bool) -> None:
    lock = open(path + ".lock", "a+")
    done = 0
    while done < rounds:
        if locked:
            fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            try:
                con = duckdb.connect(path)
            except duckdb.Error as exc:
                if "lock" in str(exc).lower():
                    time.sleep(0.001)
                    continue
                raise
            try:
                con.execute("BEGIN")
                con.execute("INSERT INTO t VALUES (?, ?)", [me, done])
                con.execute("COMMIT")
                done += 1
            finally:
                con.close()
        finally:
            if locked:
                fcntl.flock(lock, fcntl.LOCK_UN)


def trial(rounds: int, locked: bool) -> list[int]:
    with tempfile.TemporaryDirectory() as folder:
        path = str(Path(folder) / "race.duckdb")
        duckdb.connect(path).execute("CREATE TABLE t (who VARCHAR, i INTEGER)").close()
        procs = [subprocess.Popen([sys.executable, __file__, "--worker", path, me, str(rounds), str(int(locked))])
                 for me in "ab"]
        for p in procs:
            p.wait()
        con = duckdb.connect(path)
        lost = [rounds - con.execute("SELECT count(DISTINCT i) FROM t WHERE who = ?", [me]).fetchone()[0]
                for me in "ab"]
        con.close()
        return lost


if __name__ == "__main__":
    if sys.argv[1:2] == ["--worker"]:
        worker(sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5] == "1")
    else:
        rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 400
        trials = int(sys.argv[2]) if len(sys.argv) > 2 else 3
        for _ in range(trials):
            print(f"plain: lost {trial(rounds, False)}   with lock: lost {trial(rounds, True)}", flush=True)
