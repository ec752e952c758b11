"""Memory footprint (issue 6, item 9): peak RSS of importing 1M memories and of a recall process.

The bank is built from synthetic unit vectors carried in the ``embedding`` field (no need to
embed a million texts), streamed into ``add_many`` in chunks of 100k rows. Each phase runs in its
own child process and reports its peak resident set (``VmHWM``):

- import: a fresh process writing every memory into one namespace;
- recall: a fresh process (model loaded, as an agent's would be) opening the bank and recalling,
  which builds that namespace's index from the store (and saves it), then recalling again;
- reopened: another such process, which loads the saved index instead.

Beside the peak, each recall process reports what it holds after its recalls, split into anonymous
memory and file-backed pages (a large namespace's vectors live in a memory-mapped file: the
kernel may drop those pages at any time and read them back).

    python -m bench --only footprint
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench._util import ROOT, machine

CHUNK = 100_000
LONG_RUN = 1000  # recalls of the long-lived process (full mode; 50 otherwise)


def _peak_mb() -> float:
    """This process's peak resident set (VmHWM). Not getrusage's ru_maxrss: Linux carries that
    over from the parent through fork and exec, so a child of a large benchmark process reported
    the parent's size as its own peak."""
    for line in open("/proc/self/status", encoding="ascii"):
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # no /proc: the best there is


def _held_mb() -> dict[str, float]:
    """Resident memory now, in all and split into anonymous and file-backed pages."""
    keys = {"VmRSS": "rss_mb", "RssAnon": "anon_mb", "RssFile": "file_mb"}
    out = {}
    for line in open("/proc/self/status", encoding="ascii"):
        key, _, value = line.partition(":")
        if key in keys:
            out[keys[key]] = int(value.split()[0]) / 1024
    return out


def _child_import(path: str, n: int) -> dict:
    from memory_core import MemoryBank

    from bench._util import synthetic_rows, unit_vectors

    t = time.perf_counter()
    with MemoryBank.open(path) as bank:  # no model: every row carries its vector
        dim = 384
        for start in range(0, n, CHUNK):
            m = min(CHUNK, n - start)
            bank.add_many(synthetic_rows(m, seed=start, vectors=unit_vectors(m, dim, seed=start)))
    return {"seconds": time.perf_counter() - t, "peak_rss_mb": _peak_mb()}


def _child_recall(path: str, long_run: int) -> dict:
    from memory_core import MemoryBank
    from memory_core.embedding.embedder import get_embedder

    from bench._util import synthetic_texts

    get_embedder().encode_one("what did I decide about the database project?")
    with MemoryBank.open(path) as bank:
        t = time.perf_counter()
        bank.recall("what did I decide about the database project?", namespace="big", record=False)
        first = time.perf_counter() - t
        t = time.perf_counter()
        bank.recall("which city did I move to?", namespace="big", record=False)
        second = time.perf_counter() - t
        for q in ("my sister's birthday", "the marathon training plan", "allergic to peanuts",
                  "guitar lessons on the weekend", "budget for the holiday", "a recipe with coffee"):
            bank.recall(q, namespace="big", record=True)
        held = _held_mb()
        # A long-lived agent: the pages recall reads stay mapped (file-backed), so what the
        # process holds grows with the queries it has answered.
        t = time.perf_counter()
        for text in synthetic_texts(long_run, seed=99):
            bank.recall(text, namespace="big", record=True)
        long_run_s = time.perf_counter() - t
        held_long = _held_mb()
    return {"first_recall_s": first, "next_recall_s": second, "peak_rss_mb": _peak_mb(), "held_after_recalls": held,
            "long_run_recalls": long_run, "long_run_s": long_run_s, "held_after_long_run": held_long}


def _spawn(*args: str) -> dict:
    env = dict(os.environ, HF_HUB_OFFLINE="1", TOKENIZERS_PARALLELISM="false")
    out = subprocess.run([sys.executable, "-m", "bench.footprint", *args], cwd=ROOT, env=env,
                         capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def run(quick: bool, smallest: bool = False) -> dict:
    n = 1_000 if smallest else 50_000 if quick else 1_000_000
    with tempfile.TemporaryDirectory() as tmp:
        path = str(Path(tmp) / "big.duckdb")
        imp = _spawn("import", path, str(n))
        long_run = str(LONG_RUN if n >= 1_000_000 else 50)
        rec = _spawn("recall", path, long_run)
        again = _spawn("recall", path, long_run)  # the saved index this time
        size = sum(p.stat().st_size for p in Path(tmp).rglob("*") if p.is_file())
    return {"machine": machine(), "memories": n, "namespaces": 1, "import": imp, "recall": rec, "reopened": again,
            "bank_on_disk_mb": size / 2**20,
            "peak_rss_mb": max(imp["peak_rss_mb"], rec["peak_rss_mb"], again["peak_rss_mb"]),
            "target_peak_rss_mb": 2560}


if __name__ == "__main__":
    what = sys.argv[1]
    res = _child_import(sys.argv[2], int(sys.argv[3])) if what == "import" else _child_recall(sys.argv[2], int(sys.argv[3]))
    print(json.dumps(res))
