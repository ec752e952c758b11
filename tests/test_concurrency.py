"""Two real OS processes on one bank file at once (DESIGN.md: "Two processes can share one bank").

DuckDB lets one process hold a file at a time; MemoryBank holds it only for one operation, waits
with backoff while another process has it, fails with BankLockedError after ``lock_timeout``, and
catches up with the other process's changes by change sequence.

The child processes are plain scripts run with ``sys.executable``; each loads the embedding model
once (a few seconds) before the parent lets them start.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest

from memory_core import BankLockedError, MemoryBank
from memory_core.storage import duckdb as duckdb_store

N = 150
TEMPLATE = "Memory {i:03d}: on day {i} of project Kestrel the team decided to use tool number {tool}"


def memory_text(i: int) -> str:
    return TEMPLATE.format(i=i, tool=i * 7 + 3)


# Shared by both child scripts: arguments, the texts, and a file-based start signal and report.
_PRELUDE = textwrap.dedent(
    """
    import json, os, sys, time, traceback
    from pathlib import Path

    from memory_core import MemoryBank
    from memory_core.embedding.embedder import get_embedder

    path, folder, N = sys.argv[1], Path(sys.argv[2]), int(sys.argv[3])

    def memory_text(i: int) -> str:
        return TEMPLATE.format(i=i, tool=i * 7 + 3)

    def wait_for(name: str, limit: float = 120.0) -> None:
        deadline = time.monotonic() + limit
        while not (folder / name).exists():
            if time.monotonic() > deadline:
                raise SystemExit(f"gave up waiting for {name}")
            time.sleep(0.01)

    def report(name: str, data: dict) -> None:
        tmp = folder / (name + ".tmp")
        tmp.write_text(json.dumps(data))
        tmp.replace(folder / name)

    get_embedder()  # load the model before the race starts
    """
).replace("import json,", f"TEMPLATE = {TEMPLATE!r}\nimport json,")

WRITER = _PRELUDE + textwrap.dedent(
    """
    (folder / "writer.ready").touch()
    wait_for("go")
    errors, ids = [], []
    bank = MemoryBank.open(path, actor="writer", lock_timeout=30)  # one open bank for all adds
    for i in range(N):
        try:
            ids.append(bank.add(memory_text(i), namespace="shared", importance=0.6, category="decision"))
        except Exception:
            errors.append(traceback.format_exc())
    waits = list(bank.lock_waits)
    bank.close()
    report("writer.json", {"errors": errors, "ids": ids, "lock_waits": waits})
    """
)

READER = _PRELUDE + textwrap.dedent(
    """
    (folder / "reader.ready").touch()
    wait_for("go")
    errors, counts, seen_texts, loops = [], [], set(), 0
    bank = MemoryBank.open(path, actor="reader", lock_timeout=30)

    def step() -> None:
        counts.append(bank.count(namespace="shared"))
        for record in (True, False):
            hits = bank.recall("which tool did the Kestrel team decide to use?", namespace="shared",
                               record=record, threshold=0.0, k=5)
            seen_texts.update(h.memory.text for h in hits)

    while not (folder / "writer.json").exists():
        try:
            step()
            loops += 1
        except Exception:
            errors.append(traceback.format_exc())
    last_text = None
    try:
        step()  # once more after the writer finished: everything must be visible now
        loops += 1
        last = bank.recall(memory_text(N - 1), namespace="shared", record=False, k=1)
        last_text = last[0].memory.text if last else None
    except Exception:
        errors.append(traceback.format_exc())
    waits = list(bank.lock_waits)
    bank.close()
    report("reader.json", {"errors": errors, "counts": counts, "loops": loops,
                           "seen_texts": sorted(seen_texts), "last_text": last_text, "lock_waits": waits})
    """
)


def _child_env() -> dict[str, str]:
    env = dict(os.environ)
    env.update(HF_HUB_OFFLINE="1", TOKENIZERS_PARALLELISM="false", OMP_NUM_THREADS="1")
    # The children must import the memory_core under test (this checkout), not whichever one the
    # interpreter has installed: they run from the bank's folder, so the parent's cwd is not on
    # their path.
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(Path(__file__).resolve().parents[1]),
                                                       env.get("PYTHONPATH")]))
    return env


def _start(script: str, folder: Path, name: str, *args: str) -> subprocess.Popen:
    path = folder / f"{name}.py"
    path.write_text(script, encoding="utf-8")
    with open(folder / f"{name}.log", "w", encoding="utf-8") as log:  # the child keeps its own copy
        return subprocess.Popen([sys.executable, str(path), *args], stdout=log, stderr=subprocess.STDOUT,
                                env=_child_env(), cwd=folder)


def _wait_files(folder: Path, names: list[str], procs: list[subprocess.Popen], limit: float) -> None:
    deadline = time.monotonic() + limit
    while not all((folder / n).exists() for n in names):
        for p in procs:
            if p.poll() is not None and p.returncode != 0:
                pytest.fail(f"a child process died: {p.args}\n{_logs(folder)}")
        if time.monotonic() > deadline:
            pytest.fail(f"timed out waiting for {names}\n{_logs(folder)}")
        time.sleep(0.05)


def _logs(folder: Path) -> str:
    return "\n".join(f"--- {p.name}\n{p.read_text(errors='replace')[-3000:]}" for p in folder.glob("*.log"))


def _kill(procs: list[subprocess.Popen]) -> None:
    for p in procs:
        if p.poll() is None:
            p.kill()
            p.wait(timeout=10)


def test_a_writer_and_a_reader_process_share_one_bank(tmp_path: Path, embedder) -> None:
    """A writer process adds N memories one by one while a reader process loops count() and
    recall (recorded and what-if) on the same file. Neither sees an error, nothing is lost, the
    reader sees the count grow, and afterwards both the reader and the parent find the last memory
    (their indexes caught up with another process's writes)."""
    folder = tmp_path / "race"
    folder.mkdir()
    path = folder / "shared.duckdb"
    MemoryBank.open(path).close()  # create the file up front

    procs = [
        _start(WRITER, folder, "writer", str(path), str(folder), str(N)),
        _start(READER, folder, "reader", str(path), str(folder), str(N)),
    ]
    try:
        _wait_files(folder, ["writer.ready", "reader.ready"], procs, limit=120)
        (folder / "go").touch()
        _wait_files(folder, ["writer.json", "reader.json"], procs, limit=180)
        for p in procs:
            assert p.wait(timeout=60) == 0, _logs(folder)
    finally:
        _kill(procs)

    writer: dict[str, Any] = json.loads((folder / "writer.json").read_text())
    reader: dict[str, Any] = json.loads((folder / "reader.json").read_text())
    assert writer["errors"] == [], "writer errors:\n" + "\n".join(writer["errors"][:3])
    assert reader["errors"] == [], "reader errors:\n" + "\n".join(reader["errors"][:3])

    # Nothing lost, nothing garbled.
    assert len(writer["ids"]) == N and len(set(writer["ids"])) == N
    with MemoryBank.open(path, embedder=embedder) as bank:
        stored = bank.memories(namespace="shared", limit=None)
        assert sorted(m.text for m in stored) == sorted(memory_text(i) for i in range(N))
        assert {m.id for m in stored} == set(writer["ids"])
        hits = bank.recall(memory_text(N - 1), namespace="shared", record=False, k=1)
        assert hits and hits[0].memory.text == memory_text(N - 1)
        recalls = bank.retrievals(namespace="shared", limit=100_000)

    # The reader saw the count grow, while the writer was writing, never backwards.
    counts = reader["counts"]
    assert counts == sorted(counts), f"the count went backwards: {counts}"
    assert counts[-1] == N
    assert len({c for c in counts if 0 < c < N}) >= 3, f"the reader never overlapped the writer: {counts}"
    assert set(reader["seen_texts"]) <= {memory_text(i) for i in range(N)}
    assert reader["last_text"] == memory_text(N - 1)
    # Its recorded recalls were all logged (the what-ifs were not).
    assert len(recalls) == reader["loops"]
    assert {r["actor"] for r in recalls} == {"reader"}
    slow = lambda waits: sum(w > 0.05 for w in waits)  # noqa: E731  (lock_waits also holds plain ~10 ms opens)
    print(f"\n[concurrency] reader loops {reader['loops']}; operations that waited > 50 ms for the file: "
          f"writer {slow(writer['lock_waits'])} (max {max(writer['lock_waits'], default=0):.3f} s), "
          f"reader {slow(reader['lock_waits'])} (max {max(reader['lock_waits'], default=0):.3f} s)")


HOLDER = textwrap.dedent(
    """
    import sys, time
    from pathlib import Path
    import duckdb

    con = duckdb.connect(sys.argv[1])          # takes the file, as a long operation would
    con.execute("SELECT count(*) FROM memories").fetchall()
    Path(sys.argv[2]).touch()
    time.sleep(float(sys.argv[3]))
    con.close()
    """
)


def _hold(folder: Path, path: Path, seconds: float, tag: str) -> subprocess.Popen:
    ready = folder / f"held-{tag}"
    proc = _start(HOLDER, folder, f"holder-{tag}", str(path), str(ready), str(seconds))
    try:
        _wait_files(folder, [ready.name], [proc], limit=60)
    except BaseException:
        _kill([proc])
        raise
    return proc


def test_a_held_file_gives_a_clear_error_after_a_bounded_wait_and_waits_long_enough(tmp_path: Path) -> None:
    """While another process holds the file: a short lock_timeout fails with BankLockedError
    naming the file (without waiting for the holder), a long one waits and succeeds once the
    holder lets go; the same holds for each operation of an open bank."""
    folder = tmp_path / "lock"
    folder.mkdir()
    path = folder / "held.duckdb"
    MemoryBank.open(path).close()

    holder = _hold(folder, path, 3.0, "open")
    try:
        with pytest.raises(BankLockedError) as caught:
            MemoryBank.open(path, lock_timeout=0.5)
        assert holder.poll() is None, "the short wait outlasted the holder: it was not bounded"
        assert str(path) in str(caught.value) and "lock_timeout" in str(caught.value)

        bank = MemoryBank.open(path, lock_timeout=10)  # waits for the holder to let go
        assert holder.wait(timeout=10) == 0
        assert bank.lock_waits and bank.lock_waits[0] > 0.5
        assert bank.count() == 0
        bank.close()
    finally:
        _kill([holder])

    # An open bank takes the file per operation: a holder in between makes each operation wait.
    patient = MemoryBank.open(path, lock_timeout=10)
    hasty = MemoryBank.open(path, lock_timeout=0.3)
    # The holder is plain duckdb: it does not announce that it waits, and fails at once while
    # this process keeps the file, so it starts once the opens' lease has gone idle.
    time.sleep(duckdb_store.LEASE_IDLE + 0.3)
    holder = _hold(folder, path, 2.0, "ops")
    try:
        with pytest.raises(BankLockedError, match="held.duckdb"):
            hasty.count()
        assert holder.poll() is None
        assert patient.count() == 0
        assert holder.wait(timeout=10) == 0
        assert hasty.count() == 0  # once free, the hasty bank works again
    finally:
        _kill([holder])
        patient.close()
        hasty.close()


# A process that opens the bank and adds one memory (with its own vector: no model needed).
_OPENER = textwrap.dedent(
    """
    import sys
    from pathlib import Path
    from memory_core import MemoryBank

    bank = MemoryBank.open(sys.argv[1], lock_timeout=60)
    mid = bank.add("Added while the lock file was held", embedding=[1.0] + [0.0] * 383)
    bank.close()
    Path(sys.argv[2]).write_text(str(mid))
    """
)


def _open_files(pid: int) -> set[str]:
    out = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        try:
            out.add(os.readlink(fd))
        except OSError:  # closed between listing and reading
            pass
    return out


@pytest.mark.skipif(not Path("/proc/self/fd").exists(), reason="reads a process's open files from /proc")
def test_no_process_opens_the_database_file_while_another_holds_the_lock_file(tmp_path: Path) -> None:
    """DuckDB reads a file's headers before it takes its own lock, so two processes taking turns
    can lose a commit (bench/duckdb_header_race.py reproduces it). Store therefore takes
    ``<bank>.lock`` first: while another process holds that lock, an opener must not have the
    database file (or its WAL) open at all, and once the lock is released it opens, writes, and
    nothing is lost."""
    import fcntl

    folder = tmp_path / "lockfile"
    folder.mkdir()
    path = folder / "bank.duckdb"
    MemoryBank.open(path).close()
    lock = open(str(path) + ".lock", "a+b")
    fcntl.flock(lock, fcntl.LOCK_EX)
    done = folder / "added"
    proc = _start(_OPENER, folder, "opener", str(path), str(done))
    try:
        # Wait until the opener is waiting for the lock file (it has it open), then watch it.
        lock_name = str(path) + ".lock"
        deadline = time.monotonic() + 60
        while lock_name not in _open_files(proc.pid):
            assert proc.poll() is None, f"the opener ended while the lock was held\n{_logs(folder)}"
            assert time.monotonic() < deadline, f"the opener never reached the lock file\n{_logs(folder)}"
            time.sleep(0.02)
        watched_until = time.monotonic() + 1.5
        while time.monotonic() < watched_until:
            files = _open_files(proc.pid)
            assert not {str(path), str(path) + ".wal"} & files, (
                f"the opener opened the database file while another process held {lock_name}")
            assert not done.exists()
            time.sleep(0.01)
    finally:
        fcntl.flock(lock, fcntl.LOCK_UN)
        lock.close()
    try:
        assert proc.wait(timeout=60) == 0, _logs(folder)
    finally:
        _kill([proc])
    bank = MemoryBank.open(path)
    try:
        assert bank.get(int(done.read_text())).text == "Added while the lock file was held"
    finally:
        bank.close()
