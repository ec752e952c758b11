"""What a server's longer lease of the bank file saves per add, side by side with the plain lease.

    python -m bench.lease_hold [--rounds 6] [--seconds 4]

One process adds memories one after another (each with its own vector: the model is left out) for
``--seconds`` on a fresh bank file, with the plain lease (``LEASE_MAX``, the file reopened every
second under load) and with a served one (``SERVED_LEASE_MAX``, what ``memctl serve`` sets), in
turns (which goes first alternates). Reports adds, the process's CPU per add and the file's opens
per run, and the median ratio of CPU per add (served over plain) with the load average.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time

import numpy as np

from memory_core import MemoryBank
from memory_core.storage import duckdb_lease


def run_one(path: str, lease_max: float, seconds: float, rng: np.random.Generator) -> dict[str, float]:
    """Add for ``seconds`` with ``lease_max``; adds, CPU ms per add and opens of the file."""
    bank = MemoryBank.open(path)
    try:
        dim = bank.embedder.dim

        def vector() -> list[float]:
            v = rng.normal(size=dim).astype(np.float32)
            return (v / np.linalg.norm(v)).tolist()

        bank._store.lease_max = lease_max
        bank.add("First note", namespace="n", embedding=vector())
        opens, cpu, started, n = bank._store.opens, time.process_time(), time.monotonic(), 0
        while time.monotonic() - started < seconds:
            bank.add(f"Note {n}: runs {n} km on day {n}", namespace="n", embedding=vector())
            n += 1
        return {"adds": n, "cpu_ms_per_add": 1000 * (time.process_time() - cpu) / n,
                "opens": bank._store.opens - opens}
    finally:
        bank.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--seconds", type=float, default=4.0)
    args = parser.parse_args()
    rng = np.random.default_rng(1)
    folder = tempfile.mkdtemp(prefix="lease-hold-")
    variants = {"plain": duckdb_lease.LEASE_MAX, "served": duckdb_lease.SERVED_LEASE_MAX}
    runs: dict[str, list[dict[str, float]]] = {name: [] for name in variants}
    loads = [os.getloadavg()[0]]
    for r in range(args.rounds):
        for name in (list(variants) if r % 2 == 0 else list(variants)[::-1]):
            runs[name].append(run_one(os.path.join(folder, f"{name}{r}.duckdb"), variants[name], args.seconds, rng))
        loads.append(os.getloadavg()[0])
    for name, rs in runs.items():
        print(f"{name} (lease {variants[name]:.0f} s): adds {[int(x['adds']) for x in rs]}, CPU ms/add "
              f"{[round(x['cpu_ms_per_add'], 2) for x in rs]}, opens {[int(x['opens']) for x in rs]}")
    ratios = [s["cpu_ms_per_add"] / p["cpu_ms_per_add"] for p, s in zip(runs["plain"], runs["served"])]
    print(f"CPU per add, served over plain: median {statistics.median(ratios):.2f} "
          f"({', '.join(f'{x:.2f}' for x in ratios)}); load {min(loads):.1f}-{max(loads):.1f}")


if __name__ == "__main__":
    main()
