"""Crash safety: SIGKILL a writer process at random moments during import, merge and maintenance.

    python -m bench.crash [--kills 60] [--seed 7] [--json bench/results/crash.json]

Each round forks a writer process that works on one bank (the round's phase: importing batches,
merging memories, or running maintenance with a hard delete) and writes an acknowledgement line,
fsynced, after every operation that returned. At a random moment the writer is killed with
SIGKILL. Then the bank is opened again, as a restarted process would, and checked:

* every memory whose write was acknowledged is there with its text (erased ones are erased);
* nothing is half-written: an import batch in flight is all there or not at all, a merge is
  whole or absent, counters are ahead of the rows (bench.checks.store_invariants);
* the indexes agree with the store: recall over whole namespaces equals brute force from the
  file (bench.checks.recall_matches_brute_force), whatever state the killed writer left the
  index cache files in.

The writer is forked from this process after the embedding model is loaded, so a round costs the
work, not a model load; the kill is a real SIGKILL of a real OS process holding the file.
"""

from __future__ import annotations

import os

# Single-threaded torch: forking after the model is loaded must not inherit a busy thread pool.
os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("MKL_NUM_THREADS", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("HF_HUB_OFFLINE", "1")

import argparse  # noqa: E402
import json  # noqa: E402
import random  # noqa: E402
import signal  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
import traceback  # noqa: E402
from datetime import datetime, timedelta, timezone  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

import duckdb  # noqa: E402
import numpy as np  # noqa: E402

from bench.checks import recall_matches_brute_force, store_invariants, write_result  # noqa: E402
from memory_core import MemoryBank  # noqa: E402
from memory_core.embedding.embedder import Embedder, get_embedder  # noqa: E402

PHASES = ("import", "merge", "maintain")
NAMESPACES = ("alice", "bob", "carol", "dave")
SUBJECTS = ("coffee", "tea", "running", "the garden", "Python", "PostgreSQL", "Berlin", "the cello", "pasta",
            "the budget", "Swedish lessons", "the dog", "night shifts", "a standing desk", "vegetarian food")
TEMPLATES = ("Prefers {s} in the morning", "Really prefers {s} in the morning", "Decided to spend more time on {s}",
             "Wants to learn more about {s} this year", "Finds {s} hard lately", "Stopped caring about {s}")
QUERIES = ("what does she prefer in the morning", "what is hard lately")
NOW = datetime.now(timezone.utc)


def text_pool() -> list[str]:
    return [t.format(s=s) for s in SUBJECTS for t in TEMPLATES]


class Pool:
    """Texts with their vectors (embedded once), so imports measure the store, not the model."""

    def __init__(self, embedder: Embedder):
        self.texts = text_pool()
        self.vectors = embedder.encode(self.texts)

    def rows(self, ids: list[int], rng: random.Random) -> list[dict[str, Any]]:
        out = []
        for mid in ids:
            j = rng.randrange(len(self.texts))
            out.append({"id": mid, "text": self.texts[j], "embedding": self.vectors[j].tolist(),
                        "namespace": NAMESPACES[mid % len(NAMESPACES)],
                        "importance": rng.choice((0.2, 0.4, 0.6, 0.9)),
                        "created_at": NOW - timedelta(days=rng.uniform(0, 500))})
        return out


# -- the writer (runs in the forked child) ------------------------------------------------------------

def _writer(path: Path, ack_path: Path, ready_w: int, phase: str, round_no: int, pool: Pool,
            embedder: Embedder, seed: int) -> None:
    rng = random.Random(seed)
    ack = open(ack_path, "a", encoding="utf-8")

    def log(**entry: Any) -> None:
        ack.write(json.dumps({"round": round_no, **entry}) + "\n")
        ack.flush()
        os.fsync(ack.fileno())

    bank = MemoryBank.open(path, actor=f"crash-{round_no}", embedder=embedder, lock_timeout=30)
    os.write(ready_w, b"1")
    next_id = 1_000_000 * (round_no + 1)
    step = 0
    while True:
        step += 1
        if phase == "import":
            ids = list(range(next_id, next_id + rng.randint(5, 60)))
            next_id += len(ids)
            rows = pool.rows(ids, rng)
            log(op="import-start", ids=ids)
            bank.add_many(rows)
            log(op="import", ids=ids, texts=[r["text"] for r in rows])
            if step % 4 == 0:  # closing saves the index caches: kills land in those writes too
                bank.close()
                bank = MemoryBank.open(path, actor=f"crash-{round_no}", embedder=embedder, lock_timeout=30)
        elif phase == "merge":
            ns = rng.choice(NAMESPACES)
            live = bank.memories(namespace=ns, limit=40, order=rng.choice(("newest", "oldest", "importance")))
            if len(live) < 2:
                continue
            members = [m.id for m in rng.sample(live, rng.randint(2, min(4, len(live))))]
            log(op="merge-start", ids=members)
            rec = bank.merge(members)
            log(op="merge", merge_id=rec.id, merged_id=rec.merged_id, ids=members,
                text=bank.get(rec.merged_id).text)
        else:  # maintenance, and a hard delete (which rewrites the whole file) before each run
            live = bank.memories(namespace=rng.choice(NAMESPACES), limit=20)
            if live:
                victim = rng.choice(live).id
                log(op="erase-start", id=victim)
                bank.forget(victim, hard=True)
                log(op="erase", id=victim)
            log(op="maintain-start")
            report = bank.maintain(steps=["cleanup", "merge"])
            log(op="maintain", run_id=report.run_id, merged=[c.memory_ids for c in report.changes if c.action == "merge"])


# -- the checks after each kill -------------------------------------------------------------------

class Ledger:
    """What the writers acknowledged, across rounds: memories that must be there, and erased ones."""

    def __init__(self) -> None:
        self.texts: dict[int, str] = {}
        self.erased: set[int] = set()
        self.runs: set[int] = set()
        self.ops = {"import": 0, "merge": 0, "maintain": 0, "erase": 0}

    def read(self, ack_path: Path, round_no: int) -> dict[str, Any] | None:
        """Take in the round's acknowledged operations; returns the operation in flight, if any."""
        in_flight = None
        for line in ack_path.read_text(encoding="utf-8").splitlines():
            try:
                entry = json.loads(line)
            except json.JSONDecodeError:
                continue  # a line cut by the kill: never acknowledged
            if entry["round"] != round_no:
                continue
            op = entry["op"]
            if op.endswith("-start"):
                in_flight = entry
                continue
            in_flight = None
            self.ops[op] += 1
            if op == "import":
                self.texts.update(zip(entry["ids"], entry["texts"]))
            elif op == "merge":
                self.texts[entry["merged_id"]] = entry["text"]
            elif op == "maintain":
                self.runs.add(entry["run_id"])
            elif op == "erase":
                self.erased.add(entry["id"])
        return in_flight


def check(path: Path, ledger: Ledger, in_flight: dict[str, Any] | None, embedder: Embedder) -> list[str]:
    """Everything that must hold after a kill and a restart; returns the problems."""
    problems = store_invariants(path)
    con = duckdb.connect(str(path), read_only=True)
    try:
        rows = dict(((mid, (status, text)) for mid, status, text in
                     con.execute("SELECT id, status, text FROM memories").fetchall()))
        runs = {r[0] for r in con.execute("SELECT id FROM maintenance_runs").fetchall()}
    finally:
        con.close()
    for mid, text in ledger.texts.items():
        if mid in ledger.erased:
            continue
        if mid not in rows:
            problems.append(f"acknowledged memory {mid} is missing")
        elif rows[mid][1] != text and rows[mid][0] != "deleted":
            problems.append(f"acknowledged memory {mid} has text {rows[mid][1]!r}, not {text!r}")
    for mid in ledger.erased:
        if mid in rows and (rows[mid][0] != "deleted" or rows[mid][1] is not None):
            problems.append(f"erased memory {mid} is {rows[mid][0]} with text {rows[mid][1]!r}")
    for rid in ledger.runs - runs:
        problems.append(f"acknowledged maintenance run {rid} has no record")
    if in_flight and in_flight["op"] == "import-start":
        present = [i for i in in_flight["ids"] if i in rows]
        if present and len(present) != len(in_flight["ids"]):
            problems.append(f"an import batch in flight is half there: {len(present)} of {len(in_flight['ids'])}")
    # The restart: a fresh bank object loads the index caches the killed writer left and reconciles them.
    with MemoryBank.open(path, actor="crash-check", embedder=embedder) as bank:
        problems += recall_matches_brute_force(bank, list(QUERIES), now=NOW + timedelta(days=1))
    return problems


def _seed_bank(path: Path, pool: Pool, embedder: Embedder, rng: random.Random) -> None:
    with MemoryBank.open(path, actor="seed", embedder=embedder) as bank:
        bank.add_many(pool.rows(list(range(1, 201)), rng))
        for ns in NAMESPACES:
            bank.recall(QUERIES[0], namespace=ns)  # builds and saves the index caches


def run(kills: int = 60, seed: int = 7, folder: Path | None = None, min_delay: float = 0.05,
        max_delay: float = 2.5, embedder: Embedder | None = None, progress: bool = True) -> dict[str, Any]:
    """Kill ``kills`` writers (phases in turn) and check the bank after each; returns the figures."""
    embedder = embedder or get_embedder()
    import torch

    torch.set_num_threads(1)
    rng = random.Random(seed)
    own = folder is None
    tmp = tempfile.TemporaryDirectory(prefix="crash-") if own else None
    folder = Path(tmp.name) if own else folder
    path, ack_path = folder / "crash.duckdb", folder / "acks.jsonl"
    pool = Pool(embedder)
    _seed_bank(path, pool, embedder, rng)
    ledger = Ledger()
    ledger.texts.update({i: t for i, t in _texts(path).items()})
    rounds: list[dict[str, Any]] = []
    started = time.monotonic()
    for round_no in range(kills):
        phase = PHASES[round_no % len(PHASES)]
        ready_r, ready_w = os.pipe()
        pid = os.fork()
        if pid == 0:  # the writer
            code = 0
            try:
                os.close(ready_r)
                _writer(path, ack_path, ready_w, phase, round_no, pool, embedder, seed * 1000 + round_no)
            except BaseException:
                traceback.print_exc()
                code = 3
            os._exit(code)
        os.close(ready_w)
        os.read(ready_r, 1)  # the writer has opened the bank
        os.close(ready_r)
        # A maintenance run takes seconds: longer waits let some finish, so kills also land after one.
        delay = rng.uniform(min_delay, max_delay * (3 if phase == "maintain" else 1))
        time.sleep(delay)
        done, status = os.waitpid(pid, os.WNOHANG)
        if not done:  # still working, as it should be: kill it
            os.kill(pid, signal.SIGKILL)
            _, status = os.waitpid(pid, 0)
        killed = os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL
        in_flight = ledger.read(ack_path, round_no)
        try:
            problems = check(path, ledger, in_flight, embedder)
        except Exception as exc:  # a bank that cannot be opened or read is a failed round, with the reason
            problems = [f"{type(exc).__name__}: {exc}"]
        if not killed:
            problems.append(f"the writer was not killed by SIGKILL (status {status}); it crashed on its own")
        rounds.append({"round": round_no, "phase": phase, "delay_s": round(delay, 3), "killed": killed,
                       "in_flight": in_flight["op"] if in_flight else None, "problems": problems})
        if progress:
            mark = "ok" if not problems else "FAIL " + "; ".join(problems[:3])
            print(f"[crash] round {round_no + 1}/{kills} {phase:<8} kill after {delay:.2f}s "
                  f"(in flight: {in_flight['op'] if in_flight else '-'}): {mark}", file=sys.stderr, flush=True)
    survived = sum(1 for r in rounds if r["killed"] and not r["problems"])
    con = duckdb.connect(str(path), read_only=True)
    try:
        final = dict(con.execute("SELECT status, count(*) FROM memories GROUP BY 1").fetchall())
    finally:
        con.close()
    result = {
        "kills": sum(r["killed"] for r in rounds), "survived": survived, "rounds": len(rounds),
        "kills_by_phase": {p: sum(1 for r in rounds if r["phase"] == p and r["killed"]) for p in PHASES},
        "killed_mid_operation": sum(1 for r in rounds if r["in_flight"]),
        "acknowledged_operations": ledger.ops, "acknowledged_memories": len(ledger.texts),
        "final_memories_by_status": final, "seconds": round(time.monotonic() - started, 1),
        "failures": [r for r in rounds if r["problems"]],
        "seed": seed, "delay_range_s": [min_delay, max_delay],
        "measured_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
    }
    if tmp is not None:
        tmp.cleanup()
    return result


def _texts(path: Path) -> dict[int, str]:
    con = duckdb.connect(str(path), read_only=True)
    try:
        return dict(con.execute("SELECT id, text FROM memories").fetchall())
    finally:
        con.close()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--kills", type=int, default=60)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--max-delay", type=float, default=2.5, help="Longest wait before a kill, in seconds.")
    ap.add_argument("--out", default=None, help="Write the figures to this file instead of bench/results/.")
    ap.add_argument("--json", default="crash", help="Name of the result file in bench/results/.")
    args = ap.parse_args()
    result = run(kills=args.kills, seed=args.seed, max_delay=args.max_delay)
    out = write_result(args.json, result, args.out)
    print(f"kills {result['kills']}, survived {result['survived']} (by phase {result['kills_by_phase']}, "
          f"{result['killed_mid_operation']} mid-operation), acknowledged {result['acknowledged_operations']}; "
          f"{result['seconds']} s -> {out}")
    sys.exit(0 if result["survived"] == result["kills"] == args.kills else 1)


if __name__ == "__main__":
    main()
