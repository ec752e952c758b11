"""Helpers the benchmark modules share: timing, percentiles, the machine, synthetic memories."""

from __future__ import annotations

import functools
import os
import platform
import statistics
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Callable

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
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


def model_ceiling(n: int = 160) -> dict[str, float]:
    """What the bundled model alone allows on this machine, in the benchmark's process: statements
    embedded one per call (an add or a query at a time) and eight per call (a group of concurrent
    adds), per second of wall time and in ms of CPU per text (every thread of the process). No
    server adds faster than its model embeds: these are the ceilings under the adds/s figures."""
    from memory_core.embedding.embedder import Embedder

    embedder = Embedder()
    texts = memory_statements(n, seed=9)
    embedder.encode(texts[:8])
    out: dict[str, float] = {}
    for size in (1, 8):
        wall, cpu = time.perf_counter(), time.process_time()
        for i in range(0, n, size):
            embedder.encode(texts[i:i + size])
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        out[f"per_s_batch_{size}"] = n / wall
        out[f"cpu_ms_per_text_batch_{size}"] = 1000 * cpu / n
    return out


def process_cpu_seconds(pid: int) -> float:
    """CPU seconds (user and system, every thread) another process has used so far, from /proc."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def bare_batch(embedder: object, texts: list[str], batch: int = 32) -> dict[str, float]:
    """The model alone in this process, no gatherer: texts/s embedding ``texts`` in batches of
    ``batch`` (wall), and ms of this process's CPU per text. The rate concurrent adds are held to."""
    cpu, t = time.process_time(), time.perf_counter()
    for i in range(0, len(texts), batch):
        embedder._encode(texts[i:i + batch])  # type: ignore[attr-defined]
    wall, cpu = time.perf_counter() - t, time.process_time() - cpu
    return {"batch_per_s": len(texts) / wall, "cpu_ms_per_text": 1000 * cpu / len(texts)}


def standalone(doc: str, run: Callable[..., dict], markdown: Callable[[dict], str]) -> None:
    """``python -m bench.NAME [--quick | --smallest] [--json FILE]`` for a benchmark module: run it,
    write its result as JSON when asked, print its table."""
    import argparse
    import json

    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--smallest", action="store_true")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    result = run(args.quick, args.smallest)
    if args.json:
        args.json.write_text(json.dumps(result, indent=2) + "\n")
    print(markdown(result))


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
    """Unit vectors shaped like the bundled model's embeddings (see :func:`embedding_spectrum`)."""
    mean, directions, scale = embedding_spectrum()
    if len(mean) != dim:
        raise ValueError(f"the bundled model embeds in {len(mean)} dimensions, not {dim}")
    rng = np.random.default_rng(seed)
    out = np.empty((n, dim), dtype=np.float32)
    for s in range(0, n, 65536):  # in chunks: a million float64 draws at once would take 3 GB
        z = rng.standard_normal((min(65536, n - s), len(scale)))
        v = mean + (z * scale) @ directions
        out[s:s + len(v)] = v / np.linalg.norm(v, axis=1, keepdims=True)
    return out


@functools.lru_cache(maxsize=1)
def embedding_spectrum() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The mean, principal directions and their spreads of the bundled model's embeddings of the
    demo bank's memories and queries and the general-knowledge questions (1,293 texts), kept in
    bench/data/embedding_spectrum.npz (delete it to recompute).

    Random unit vectors spread their length evenly over all 384 directions; sentence embeddings
    do not (about half of it lies in 64 directions), and recall's pruning relies on that. Drawing
    synthetic vectors from a Gaussian with this spectrum keeps benchmarks honest about it.
    """
    import json

    cached = ROOT / "bench" / "data" / "embedding_spectrum.npz"
    if cached.exists():  # written below; saves loading the model (the footprint's import must not)
        with np.load(cached) as f:
            return f["mean"], f["directions"], f["spread"]
    from memory_core import demo
    from memory_core.embedding.embedder import get_embedder

    texts = [json.loads(line)["text"] for line in open(demo.MEMORIES, encoding="utf-8")]
    for name in (demo.QUERIES, ROOT / "bench" / "data" / "general_questions.jsonl"):
        for line in open(name, encoding="utf-8"):
            row = json.loads(line)
            texts.append(row.get("query") or row.get("question") or row["text"])
    emb = get_embedder().encode(texts).astype(np.float64)
    mean = emb.mean(axis=0)
    _, spread, directions = np.linalg.svd(emb - mean, full_matrices=False)
    spread = spread / np.sqrt(len(emb))
    np.savez_compressed(cached, mean=mean.astype(np.float32), directions=directions.astype(np.float32),
                        spread=spread.astype(np.float32))
    return mean, directions, spread


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


_NAMES = ("Alice Bruno Chen Dalia Emil Farah Goran Hana Ivan Jonas Kaja Liam Maja Nils Olga Pedro Quinn Rosa Sami "
          "Tove Umar Vera Wen Ximena Yusuf Zoe Anders Beatriz Carlos Dmitri Elin Fatima Gustav Helga Ines Jamal "
          "Karin Leo Mei Noor Oskar Priya Ravi Sofia Tariq Ulla Viktor Wilma Yara Zaid").split()
_FILLS = {
    "drink": ["tea", "coffee", "oat-milk lattes", "green tea", "espresso", "hot chocolate", "sparkling water",
              "kombucha"],
    "city": "Lisbon Oslo Kyoto Berlin Nairobi Toronto Umeå Chengdu Porto Vienna Seattle Gothenburg".split(),
    "relative": "sister brother mother father cousin daughter son grandmother uncle aunt".split(),
    "food": "peanuts shellfish gluten lactose sesame eggs strawberries soy".split(),
    "job": ["a nurse", "a teacher", "a data engineer", "a carpenter", "a pilot", "a lawyer", "a chef", "an architect",
            "a pharmacist", "a translator"],
    "skill": "Spanish the cello pottery rock climbing Rust watercolour chess sailing".split(" "),
    "day": "Monday Tuesday Wednesday Thursday Friday Saturday Sunday".split(),
    "pet": "a dog a cat two rabbits a parrot an old tortoise three goldfish".split(" "),
    "sport": "running swimming cycling tennis yoga football badminton".split(),
}
_TEMPLATES = (
    "{name} prefers {drink} in the morning", "{name}'s {relative} lives in {city}",
    "{name} is allergic to {food}", "{name} works as {job} in {city}",
    "{name} started learning {skill} this year", "{name} wants to visit {city} next summer",
    "{name} goes {sport} every {day}", "{name} has {pet} at home",
    "{name}'s {relative} is getting married in {city}", "{name} avoids {food} since last winter",
    "{name} has a standing call with their {relative} on {day}s", "{name} moved to {city} to work as {job}",
    "{name} drinks {drink} after {sport}", "{name} is planning a trip with their {relative} to {city}",
)


def memory_statements(n: int, seed: int = 0) -> list[str]:
    """Short, distinct memories as an agent writes them ("Maja is allergic to sesame"): fifty
    people, fourteen kinds of fact. Some pairs contradict (two drinks preferred), as in life;
    unlike word salad, most memories are not each other's near neighbours."""
    rng = np.random.default_rng(seed)
    out: list[str] = []
    seen: set[str] = set()
    while len(out) < n:
        template = _TEMPLATES[rng.integers(len(_TEMPLATES))]
        fills = {k: v[rng.integers(len(v))] for k, v in _FILLS.items()}
        text = template.format(name=_NAMES[rng.integers(len(_NAMES))], **fills)
        if text in seen:  # every combination used: a detail makes it new
            text = f"{text}, noted {len(out)} days ago"
        seen.add(text)
        out.append(text + ".")
    return out


class LightClient:
    """A keep-alive HTTP/1.1 client on a bare socket, for load generators on the server's own
    machine: httpx spends more CPU per request (10-17 ms on 2 busy cores) than the server's add, so
    clients made with it measure the clients. Answers JSON only; ``request`` returns (status, body)."""

    def __init__(self, url: str, headers: dict[str, str] | None = None, timeout: float = 120):
        import socket
        from urllib.parse import urlsplit

        parts = urlsplit(url)
        self.host = parts.netloc
        self.sock = socket.create_connection((parts.hostname, parts.port or 80), timeout=timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.extra = "".join(f"{k}: {v}\r\n" for k, v in (headers or {}).items())
        self.buffer = b""

    def request(self, method: str, path: str, payload: object = None) -> tuple[int, object]:
        import json

        body = b"" if payload is None else json.dumps(payload).encode()
        head = (f"{method} {path} HTTP/1.1\r\nHost: {self.host}\r\n{self.extra}Content-Length: {len(body)}\r\n"
                + ("Content-Type: application/json\r\n" if payload is not None else "") + "\r\n")
        self.sock.sendall(head.encode() + body)
        while b"\r\n\r\n" not in self.buffer:
            self._read()
        head_bytes, self.buffer = self.buffer.split(b"\r\n\r\n", 1)
        lines = head_bytes.decode("latin-1").split("\r\n")
        status = int(lines[0].split()[1])
        length = next(int(l.split(":", 1)[1]) for l in lines[1:] if l.lower().startswith("content-length:"))
        while len(self.buffer) < length:
            self._read()
        answer, self.buffer = self.buffer[:length], self.buffer[length:]
        return status, json.loads(answer) if answer else None

    def _read(self) -> None:
        chunk = self.sock.recv(65536)
        if not chunk:
            raise ConnectionError("the server closed the connection")
        self.buffer += chunk

    def close(self) -> None:
        self.sock.close()

    def __enter__(self) -> "LightClient":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
