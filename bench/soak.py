"""Concurrency soak: the dashboard and three agent processes on one bank for minutes.

    python -m bench.soak [--seconds 120] [--json soak]

Processes, all on one bank file:

* three **agents** (``--role agent``), each looping: add a memory (to its own namespace or the
  shared "team" one), recall (recorded), and give feedback on what it recalled;
* the **dashboard's page code** (``--role dashboard``): the real app.py run by Streamlit's
  AppTest, cycling Overview, Browse and Tune, as a browser session makes the server do;
* the **real dashboard server** (``python -m streamlit run app.py`` on a free loopback port),
  polled over HTTP by this process.

Afterwards the bank is checked: every acknowledged add is there with its text, every recorded
recall is in the retrieval log, every feedback is in the history (no write lost), and the store's
invariants hold. Figures: operations per kind, errors that reached a caller (must be 0), the waits
for the file (p50/p99/max over the operations that had to wait), operation latency, and how the
dashboard answered (page runs, their latency, HTTP polls).
"""

from __future__ import annotations

import os

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("HF_HUB_OFFLINE", "1")

import argparse  # noqa: E402
import json  # noqa: E402
import random  # noqa: E402
import socket  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
import traceback  # noqa: E402
import urllib.request  # noqa: E402
from datetime import datetime, timezone  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

import duckdb  # noqa: E402
import numpy as np  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
APP = ROOT / "app.py"
WORDS = ("coffee tea morning running garden python postgres berlin cello pasta budget swedish dog bike "
         "doctor exam holiday recipe project deadline meeting invoice").split()
LOCK_TIMEOUT = 10.0


def _pct(values: list[float], q: float) -> float | None:
    return float(np.percentile(values, q)) if values else None


def _wait_for(path: Path, limit: float = 300.0) -> None:
    deadline = time.monotonic() + limit
    while not path.exists():
        if time.monotonic() > deadline:
            raise SystemExit(f"gave up waiting for {path}")
        time.sleep(0.02)


def _report(path: Path, data: dict[str, Any]) -> None:
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(data))
    tmp.replace(path)


# -- an agent process -----------------------------------------------------------------------------

def give_feedback(bank: Any, retrieval_id: int, memory_id: int) -> None:
    """The agent reports that its answer used one memory its last recall returned, and helped."""
    bank.feedback(retrieval_id, used_ids=[memory_id], helpful=True)


def agent(index: int, bank_path: str, folder: Path, seconds: float) -> None:
    from memory_core import MemoryBank
    from memory_core.embedding.embedder import get_embedder

    get_embedder()  # load the model before the clock starts
    rng = random.Random(index)
    (folder / f"agent{index}.ready").touch()
    _wait_for(folder / "go")
    bank = MemoryBank.open(bank_path, actor=f"agent{index}", lock_timeout=LOCK_TIMEOUT)
    own = f"agent{index}"
    added: dict[int, str] = {}
    counts = {"add": 0, "recall": 0, "feedback": 0}
    errors: list[str] = []
    latency: list[float] = []
    last_hits: list[int] = []
    last_retrieval = 0
    end = time.monotonic() + seconds
    n = 0
    while time.monotonic() < end:
        n += 1
        ns = rng.choice((own, "team"))
        r = rng.random()
        t = time.perf_counter()
        try:
            if r < 0.35:
                text = f"{own} note {n}: " + " ".join(rng.sample(WORDS, 5))
                added[bank.add(text, namespace=ns, importance=rng.choice((0.3, 0.6, 0.9)))] = text
                counts["add"] += 1
            elif r < 0.8 or not last_hits:
                hits = bank.recall(" ".join(rng.sample(WORDS, 3)), namespace=ns, threshold=0.0, k=3)
                if hits:
                    last_hits, last_retrieval = [h.memory.id for h in hits], bank.last_retrieval_id
                counts["recall"] += 1
            else:
                give_feedback(bank, last_retrieval, rng.choice(last_hits))
                counts["feedback"] += 1
        except Exception as exc:  # anything that reaches the caller is a failure of the soak
            errors.append(f"{type(exc).__name__}: {exc}\n{traceback.format_exc(limit=3)}")
        latency.append(time.perf_counter() - t)
    waits = list(bank.lock_waits)
    bank.close()
    _report(folder / f"agent{index}.json", {"added": added, "counts": counts, "errors": errors,
                                            "latency": latency, "lock_waits": waits})


# -- the dashboard's page code ---------------------------------------------------------------------

def dashboard(bank_path: str, folder: Path, seconds: float) -> None:
    os.environ["MEMCTL_BANK"] = bank_path
    os.environ.pop("MEMCTL_DASHBOARD_PASSWORD", None)
    sys.path.insert(0, str(ROOT))
    from streamlit import config
    from streamlit.testing.v1 import AppTest

    config.set_option("server.address", "127.0.0.1")
    from memory_core.embedding.embedder import get_embedder

    get_embedder()
    (folder / "dashboard.ready").touch()
    _wait_for(folder / "go")
    runs: list[dict[str, Any]] = []
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        for page in (None, "dashboard/browse.py", "dashboard/tune.py"):
            t = time.perf_counter()
            problem = None
            try:
                at = AppTest.from_file(str(APP), default_timeout=120).run()
                if page and not at.exception:
                    at.switch_page(page).run()
                if at.exception:
                    problem = "exception: " + at.exception[0].message
                elif at.error or any("busy" in w.value for w in at.warning):
                    problem = "shown: " + "; ".join([e.value for e in at.error] + [w.value for w in at.warning])
            except Exception as exc:
                problem = f"{type(exc).__name__}: {exc}"
            runs.append({"page": page or "dashboard/overview.py", "seconds": time.perf_counter() - t, "problem": problem})
    _report(folder / "dashboard.json", {"runs": runs})


# -- the parent --------------------------------------------------------------------------------------

def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _child(folder: Path, name: str, args: list[str]) -> subprocess.Popen:
    log = open(folder / f"{name}.log", "w", encoding="utf-8")
    env = dict(os.environ, OMP_NUM_THREADS="1", TOKENIZERS_PARALLELISM="false", HF_HUB_OFFLINE="1")
    return subprocess.Popen([sys.executable, *args], stdout=log, stderr=subprocess.STDOUT, cwd=ROOT, env=env)


def _seed(bank_path: Path) -> None:
    from memory_core import MemoryBank

    with MemoryBank.open(bank_path, actor="seed") as bank:
        rng = random.Random(0)
        bank.add_many([{"text": f"seed {i}: " + " ".join(rng.sample(WORDS, 5)),
                        "namespace": ("team", "agent0", "agent1", "agent2")[i % 4]} for i in range(200)])


def check_bank(bank_path: Path, agents: list[dict[str, Any]]) -> list[str]:
    """Writes the agents acknowledged that are not in the bank (empty: nothing lost)."""
    from bench.checks import store_invariants

    problems = store_invariants(bank_path)
    con = duckdb.connect(str(bank_path), read_only=True)
    try:
        texts = dict(con.execute("SELECT id, text FROM memories").fetchall())
        recalls = dict(con.execute("SELECT actor, count(*) FROM retrievals GROUP BY 1").fetchall())
        feedback = dict(con.execute("SELECT actor, count(*) FROM events WHERE action = 'feedback' GROUP BY 1").fetchall())
    finally:
        con.close()
    for i, a in enumerate(agents):
        for mid, text in a["added"].items():
            if texts.get(int(mid)) != text:
                problems.append(f"agent{i}: memory {mid} lost (acknowledged {text!r}, found {texts.get(int(mid))!r})")
        if recalls.get(f"agent{i}", 0) != a["counts"]["recall"]:
            problems.append(f"agent{i}: {a['counts']['recall']} recalls acknowledged, {recalls.get(f'agent{i}', 0)} logged")
        if feedback.get(f"agent{i}", 0) != a["counts"]["feedback"]:
            problems.append(f"agent{i}: {a['counts']['feedback']} feedbacks acknowledged, "
                            f"{feedback.get(f'agent{i}', 0)} in the history")
    return problems


def run(seconds: float = 120.0, folder: Path | None = None, agents: int = 3, serve: bool = True,
        progress: bool = True) -> dict[str, Any]:
    """Run the soak; returns its figures (see the module docstring)."""
    own = folder is None
    tmp = tempfile.TemporaryDirectory(prefix="soak-") if own else None
    folder = Path(tmp.name) if own else folder
    folder.mkdir(parents=True, exist_ok=True)
    bank_path = folder / "soak.duckdb"
    _seed(bank_path)
    procs: dict[str, subprocess.Popen] = {}
    port = _free_port()
    polls: list[dict[str, Any]] = []
    try:
        for i in range(agents):
            procs[f"agent{i}"] = _child(folder, f"agent{i}", ["-m", "bench.soak", "--role", "agent", "--index", str(i),
                                                              "--bank", str(bank_path), "--folder", str(folder),
                                                              "--seconds", str(seconds)])
        procs["dashboard"] = _child(folder, "dashboard", ["-m", "bench.soak", "--role", "dashboard", "--bank",
                                                          str(bank_path), "--folder", str(folder), "--seconds", str(seconds)])
        if serve:
            procs["server"] = _child(folder, "server", [
                "-m", "streamlit", "run", str(APP), "--server.port", str(port), "--server.address", "127.0.0.1",
                "--server.headless", "true", "--browser.gatherUsageStats", "false", "--", "--bank", str(bank_path)])
        ready = [folder / f"agent{i}.ready" for i in range(agents)] + [folder / "dashboard.ready"]
        deadline = time.monotonic() + 300
        while not all(p.exists() for p in ready):
            dead = [n for n, p in procs.items() if p.poll() is not None]
            if dead or time.monotonic() > deadline:
                raise RuntimeError(f"soak processes did not start ({dead or 'timeout'}): "
                                   + (folder / f"{dead[0]}.log").read_text()[-2000:] if dead else "")
            time.sleep(0.1)
        (folder / "go").touch()
        started = time.monotonic()
        if progress:
            print(f"[soak] {agents} agents, the dashboard's pages and a streamlit server on :{port} for {seconds:g} s",
                  file=sys.stderr, flush=True)
        while time.monotonic() - started < seconds:
            if serve:
                for url in (f"http://127.0.0.1:{port}/_stcore/health", f"http://127.0.0.1:{port}/"):
                    t = time.perf_counter()
                    try:
                        with urllib.request.urlopen(url, timeout=10) as resp:
                            ok = resp.status == 200
                    except Exception:  # not up yet counts as not answering
                        ok = False
                    polls.append({"url": url, "ok": ok, "seconds": time.perf_counter() - t,
                                  "at": time.monotonic() - started})
            time.sleep(1.0)
        results = [folder / f"agent{i}.json" for i in range(agents)] + [folder / "dashboard.json"]
        deadline = time.monotonic() + 300
        while not all(p.exists() for p in results):
            dead = [n for n, p in procs.items() if n != "server" and p.poll() not in (None, 0)]
            if dead or time.monotonic() > deadline:
                raise RuntimeError(f"soak processes failed ({dead or 'timeout'})")
            time.sleep(0.2)
    finally:
        for p in procs.values():
            if p.poll() is None:
                p.terminate()
                try:
                    p.wait(timeout=15)
                except subprocess.TimeoutExpired:
                    p.kill()
    agent_data = [json.loads((folder / f"agent{i}.json").read_text()) for i in range(agents)]
    dash = json.loads((folder / "dashboard.json").read_text())
    lost = check_bank(bank_path, agent_data)
    waits = [w for a in agent_data for w in a["lock_waits"]]
    latency = [x for a in agent_data for x in a["latency"]]
    page_s = [r["seconds"] for r in dash["runs"]]
    # The server is only polled after it is up: polls before its first answer are start-up, not failure.
    first_ok = next((i for i, p in enumerate(polls) if p["ok"]), len(polls))
    after_up = polls[first_ok:]
    result = {
        "seconds": seconds, "agents": agents,
        "ops": {k: sum(a["counts"][k] for a in agent_data) for k in ("add", "recall", "feedback")},
        "ops_total": sum(sum(a["counts"].values()) for a in agent_data),
        "errors": sum(len(a["errors"]) for a in agent_data),
        "error_samples": [e for a in agent_data for e in a["errors"]][:5],
        "lost_writes": lost,
        "lock_waits": {"count": len(waits), "p50_s": _pct(waits, 50), "p99_s": _pct(waits, 99),
                       "max_s": max(waits, default=None), "bound_s": LOCK_TIMEOUT},
        "op_latency": {"p50_s": _pct(latency, 50), "p99_s": _pct(latency, 99), "max_s": max(latency, default=None)},
        "dashboard": {"page_runs": len(dash["runs"]), "problems": [r for r in dash["runs"] if r["problem"]][:5],
                      "problem_count": sum(1 for r in dash["runs"] if r["problem"]),
                      "page_p50_s": _pct(page_s, 50), "page_p99_s": _pct(page_s, 99)},
        "http": {"polls": len(after_up), "ok": sum(p["ok"] for p in after_up),
                 "p99_s": _pct([p["seconds"] for p in after_up], 99), "up_after_s": polls[first_ok]["at"] if after_up else None},
        "measured_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
    }
    if tmp is not None:
        tmp.cleanup()
    return result


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seconds", type=float, default=120.0)
    ap.add_argument("--out", default=None, help="Write the figures to this file instead of bench/results/.")
    ap.add_argument("--json", default="soak", help="Name of the result file in bench/results/.")
    ap.add_argument("--role", choices=("parent", "agent", "dashboard"), default="parent")
    ap.add_argument("--index", type=int, default=0)
    ap.add_argument("--bank")
    ap.add_argument("--folder")
    args = ap.parse_args()
    if args.role == "agent":
        agent(args.index, args.bank, Path(args.folder), args.seconds)
        return
    if args.role == "dashboard":
        dashboard(args.bank, Path(args.folder), args.seconds)
        return
    from bench.checks import write_result

    result = run(seconds=args.seconds)
    out = write_result(args.json, result, args.out)
    lw = result["lock_waits"]
    print(f"ops {result['ops_total']} {result['ops']}, errors {result['errors']}, lost {len(result['lost_writes'])}, "
          f"lock waits {lw['count']} (p50 {lw['p50_s']}, p99 {lw['p99_s']}, max {lw['max_s']} s), dashboard runs "
          f"{result['dashboard']['page_runs']} ({result['dashboard']['problem_count']} problems), http "
          f"{result['http']['ok']}/{result['http']['polls']} -> {out}")
    ok = not result["errors"] and not result["lost_writes"] and not result["dashboard"]["problem_count"] \
        and result["http"]["ok"] == result["http"]["polls"] > 0
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
