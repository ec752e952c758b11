"""Helpers the benchmark modules share: timing, percentiles, the machine, synthetic memories."""

from __future__ import annotations

import os
import platform
import statistics
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Callable

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "data"
LOCOMO = Path(os.environ.get("LOCOMO_PATH", ROOT.parent / "shared" / "datasets" / "locomo" / "locomo10.json"))
NOW = datetime(2026, 11, 30, tzinfo=timezone.utc)
WORDS = ("coffee tea morning run marathon city moved job project database exam swedish lesson dog garden "
         "holiday budget family friend recipe book music film train bike doctor prefers planning weekend "
         "allergic peanuts sister birthday deadline meeting python learning guitar vegetarian").split()


def machine() -> str:
    """The machine a figure was measured on, as stated next to every table."""
    cpu = platform.processor() or platform.machine()
    try:
        for line in open("/proc/cpuinfo", encoding="utf-8"):
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return f"{cpu}, {os.cpu_count()} cores, Python {platform.python_version()}"


def percentiles(samples: list[float]) -> dict[str, float]:
    """p50 and p95 in milliseconds of samples in seconds."""
    s = sorted(samples)
    return {"p50_ms": 1000 * statistics.median(s), "p95_ms": 1000 * s[int(0.95 * (len(s) - 1))], "n": len(s)}


def timed(fn: Callable[[], object], repeats: int) -> dict[str, float]:
    samples = []
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - t)
    return percentiles(samples)


def synthetic_texts(n: int, seed: int = 0) -> list[str]:
    """Short memory-like statements (8 words, unique), about as long as the demo set's."""
    rng = np.random.default_rng(seed)
    picks = rng.integers(0, len(WORDS), size=(n, 8))
    return [" ".join(WORDS[j] for j in row) + f" #{i}" for i, row in enumerate(picks)]


def unit_vectors(n: int, dim: int, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    v = rng.standard_normal((n, dim), dtype=np.float32)
    v /= np.linalg.norm(v, axis=1, keepdims=True)
    return v


def synthetic_rows(n: int, seed: int = 0, namespace: str = "big", vectors: np.ndarray | None = None,
                   start: int = 0) -> list[dict]:
    """Memory rows dated over the last 400 days, with importance spread over [0, 1]."""
    rng = np.random.default_rng(seed + 1)
    texts = synthetic_texts(n, seed)
    imp = rng.random(n)
    age = rng.random(n) * 400
    rows = [{"text": texts[i], "namespace": namespace, "importance": float(imp[i]),
             "created_at": NOW - timedelta(days=float(age[i]))} for i in range(n)]
    if vectors is not None:
        for i, r in enumerate(rows):
            r["embedding"] = vectors[start + i]
    return rows
