"""Where an add's CPU goes in `memctl serve` (issue 33): py-spy samples the server while clients add.

    python -m bench.add_profile [--adds 600] [--clients 1] [--bank postgresql://...] [--raw FILE]

A fresh bank (a DuckDB file in a temp folder, or the PostgreSQL URL given: a new, empty database),
a real server on loopback with a bearer token, ``--clients`` clients adding the benchmark's
statements one per request. py-spy (``pip install py-spy``) samples every thread of the server
that is running (not waiting), 100 times a second (pausing it to read its threads' states); each sample is put in the first category of
:data:`CATEGORIES` whose pattern one of its frames matches, innermost frame first, so "the model"
is what runs inside the model's call wherever it was called from. The table is the share of
samples and the CPU milliseconds per add it stands for (the server's CPU time over the run, from
/proc, shared out by the samples).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path

from bench._util import ROOT, LightClient, memory_statements, process_cpu_seconds

# (category, substrings of a frame "function (file:line)"), matched innermost frame first.
CATEGORIES: list[tuple[str, tuple[str, ...]]] = [
    ("the model (ONNX Runtime / torch)", ("embed_onnx.py", "onnxruntime", "torch", "tokenizers", "transformers",
                                          "sentence_transformers", "_encode (memory_core/embedding/embedder.py",
                                          "memory_core/embedding/e5.py")),
    ("contradiction check", ("conflicts.py", "curation/conflicts/", "judging", "_judge", "detect (")),
    ("index update (vectors, lexical)", ("index.py", "vectors.py", "lexical", "faiss")),
    ("token check", ("tokens.py", "_valid (", "caller_of", "caller (memory_core/server")),
    ("validation (pydantic, row checks)", ("pydantic", "check_row", "models.py", "check_field")),
    ("JSON (request and answer)", ("json", "to_dict", "json_response", "jsonable_encoder", "render (")),
    ("store write and catch-up (SQL)", ("storage/", "duckdb", "psycopg", "writer.py", "core.py")),
    ("HTTP (uvicorn, starlette, h11, anyio)", ("uvicorn", "starlette", "h11", "anyio", "fastapi", "asyncio",
                                               "httptools", "selectors")),
    ("write queue and metrics", ("server/writes.py", "server/metrics.py", "prometheus")),
]


# Leaf frames of a thread that waits: py-spy reports some waits as running (a thread woken and not yet
# on a core on a loaded machine, a lock's wait); their samples are left out, not counted as work.
WAITS = ("Condition.wait (", "Event.wait (", "Queue.get (", "Future.result (", "_lease_loop (", "sleep (",
         "select (", "_wait_for_tstate_lock (")
# An idle pool thread (the model's encode pool) waits in C (``work_queue.get``), so its leaf frame is
# the pool's loop itself; a thread doing pool work has the work's frames below it.
POOL_IDLE = ("_worker (", "concurrent/futures/thread.py")


def categorize(stack: str) -> str:
    leaf = stack.rsplit(";", 1)[-1]
    if any(leaf.startswith(w) for w in WAITS) or (leaf.startswith(POOL_IDLE[0]) and POOL_IDLE[1] in leaf):
        return "waiting"
    frames = stack.split(";")[::-1]  # innermost first
    for frame in frames:
        for name, patterns in CATEGORIES:
            if any(p in frame for p in patterns):
                return name
    return "other"


def _created(answer: tuple[int, object]) -> None:
    if answer[0] != 201:
        raise RuntimeError(f"an add failed: {answer[0]} {answer[1]}")


def profile(bank: str | None, adds: int, clients: int, raw: Path | None = None, env: dict | None = None,
            code: Path | None = None) -> dict:
    """Run the adds under py-spy; the categories' shares and CPU ms per add. ``code``: a folder
    whose ``memory_core`` the server runs (default: this checkout's)."""
    import memctl_server  # tests/ helper: a real `memctl serve` process
    from memory_core import MemoryBank

    folder = Path(tempfile.mkdtemp(prefix="add-profile-"))
    location = bank or str(folder / "bank.duckdb")
    try:
        with MemoryBank.open(location) as b:
            _, secret = b.tokens.create("profile", ["bench"])
        old, command = dict(os.environ), memctl_server.MEMCTL
        os.environ.update(env or {})
        if code is not None:  # `-m` would put the server's working folder (this checkout) first on sys.path
            memctl_server.MEMCTL = [sys.executable, "-c", f"import sys; sys.path.insert(0, {str(code)!r}); "
                                    "from memory_core.cli import main; main()"]
        try:
            server = memctl_server.Served(location)
        finally:
            os.environ.clear()
            os.environ.update(old)
            memctl_server.MEMCTL = command
        headers = {"Authorization": f"Bearer {secret}"}
        try:
            with LightClient(server.url, headers) as c:
                for text in memory_statements(20, seed=99):  # warm: model, file, namespace
                    _created(c.request("POST", "/v1/memories", {"text": "warm " + text}))
            out_file = folder / "spy.txt"
            py_spy = shutil.which("py-spy") or str(Path(sys.executable).parent / "py-spy")  # the venv's, unactivated
            spy = subprocess.Popen([py_spy, "record", "--pid", str(server.proc.pid), "--rate", "100", "--format",
                                    "raw", "--output", str(out_file), "--threads"],
                                   stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
            time.sleep(1.0)
            cpu0, t0 = process_cpu_seconds(server.proc.pid), time.perf_counter()
            per = adds // clients
            latencies: list[float] = []
            lock = threading.Lock()

            def client(i: int) -> None:
                with LightClient(server.url, headers) as c:
                    for text in memory_statements(per, seed=500 + i):
                        t = time.perf_counter()
                        _created(c.request("POST", "/v1/memories", {"text": f"{i}: {text}"}))
                        with lock:
                            latencies.append(time.perf_counter() - t)

            threads = [threading.Thread(target=client, args=(i,)) for i in range(clients)]
            for th in threads:
                th.start()
            for th in threads:
                th.join()
            wall, cpu = time.perf_counter() - t0, process_cpu_seconds(server.proc.pid) - cpu0
            spy.send_signal(2)  # SIGINT: py-spy writes its file and exits
            spy.wait(60)
        finally:
            server.stop()
        samples: Counter[str] = Counter()
        for line in out_file.read_text().splitlines():
            stack, _, count = line.rpartition(" ")
            if stack and count.isdigit() and categorize(stack) != "waiting":
                samples[categorize(stack)] += int(count)
        if raw is not None:
            shutil.copy(out_file, raw)
        total = sum(samples.values()) or 1
        n = per * clients
        latencies.sort()
        return {"adds": n, "clients": clients, "adds_per_s": n / wall, "server_cpu_ms_per_add": 1000 * cpu / n,
                "p50_ms": 1000 * latencies[len(latencies) // 2],
                "load_average_1min": os.getloadavg()[0],
                "share": {k: v / total for k, v in samples.most_common()},
                "cpu_ms_per_add": {k: 1000 * cpu / n * v / total for k, v in samples.most_common()}}
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def table(before: dict, after: dict | None = None) -> str:
    """A markdown table of one or two profiles (ms of server CPU per add, and share)."""
    names = list(before["cpu_ms_per_add"])
    if after:
        names += [k for k in after["cpu_ms_per_add"] if k not in names]
    head = "| where | before: ms per add (share) |" + (" after: ms per add (share) |" if after else "")
    lines = [head, "|---|---|" + ("---|" if after else "")]
    for name in names:
        cells = [f"{r['cpu_ms_per_add'].get(name, 0):.2f} ({100 * r['share'].get(name, 0):.0f}%)"
                 for r in ([before, after] if after else [before])]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    cells = [f"**{r['server_cpu_ms_per_add']:.2f}**" for r in ([before, after] if after else [before])]
    lines.append("| **server CPU per add** | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--adds", type=int, default=600)
    parser.add_argument("--clients", type=int, default=1)
    parser.add_argument("--bank", default=None, help="a postgresql:// URL of an empty database (default: a new file)")
    parser.add_argument("--raw", type=Path, default=None, help="keep py-spy's collapsed stacks here")
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument("--before", type=Path, default=None,
                        help="a folder holding an older memory_core (git archive COMMIT memory_core | tar -x -C DIR): "
                             "profile its server and this checkout's in turns, --rounds times each")
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT / "tests"))
    if args.before is None:
        r = profile(args.bank, args.adds, args.clients, args.raw)
        print(table(r))
        print(f"{r['adds_per_s']:.1f} adds/s, p50 {r['p50_ms']:.1f} ms, load {r['load_average_1min']:.1f}")
        if args.json:
            args.json.write_text(json.dumps(r, indent=2))
        return
    runs: dict[str, list[dict]] = {"before": [], "after": []}
    for _ in range(args.rounds):
        for name, path in (("before", args.before), ("after", ROOT)):
            runs[name].append(profile(args.bank, args.adds, args.clients, code=path))
            r = runs[name][-1]
            print(f"{name}: {r['adds_per_s']:.1f} adds/s, p50 {r['p50_ms']:.1f} ms, server CPU "
                  f"{r['server_cpu_ms_per_add']:.2f} ms/add, load {r['load_average_1min']:.1f}", flush=True)
    merged = {name: _merge(rs) for name, rs in runs.items()}
    print(table(merged["before"], merged["after"]))
    if args.json:
        args.json.write_text(json.dumps(runs, indent=2))


def _merge(runs: list[dict]) -> dict:
    """Several profiles as one: their adds and CPU summed, samples' shares weighted by CPU."""
    adds = sum(r["adds"] for r in runs)
    cpu = sum(r["server_cpu_ms_per_add"] * r["adds"] for r in runs)
    names = {k for r in runs for k in r["cpu_ms_per_add"]}
    per = {k: sum(r["cpu_ms_per_add"].get(k, 0) * r["adds"] for r in runs) / adds for k in names}
    return {"server_cpu_ms_per_add": cpu / adds, "cpu_ms_per_add": dict(sorted(per.items(), key=lambda kv: -kv[1])),
            "share": {k: v / (cpu / adds) for k, v in per.items()}}


if __name__ == "__main__":
    main()
