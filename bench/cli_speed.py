"""memctl at the model's pace (issue 42): whole `memctl` processes, warm and cold, timed by /usr/bin/time -v.

    python -m bench.cli_speed [--bank BANK] [--runs 5] [--json bench/results/cli_speed.json]

Each figure is the median of ``--runs`` whole processes (``/usr/bin/time -v``: elapsed wall time,
user + system CPU, maximum resident set): ``memctl recall "what is Alice allergic to" -n alice
--dry-run`` on the demo bank through the warm helper (started and used once before timing) and
cold (``MEMCTL_WARM=0``: the model and the index load in the process), and ``memctl stats``
through the running helper and cold. The demo bank is built into a temp folder unless ``--bank``
names one. A private cache folder holds the helper (sharing the machine's built models). The
processes run from compiled bytecode, as an installed package does (``PYTHONDONTWRITEBYTECODE`` is
dropped and an untimed cold call writes it first): compiling the package's sources costs a
process about half a second. Goals: warm p50 <= 0.3 s; cold <= 1.5 s and <= 300 MiB; stats <= 0.5 s.
The load average is recorded: on a loaded machine wall times grow, CPU times less.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from bench._util import ROOT, machine

QUERY = ("recall", "what is Alice allergic to", "-n", "alice", "--dry-run")
GOALS = {"warm_wall_s": 0.3, "cold_wall_s": 1.5, "cold_rss_mib": 300.0, "stats_wall_s": 0.5}


def _time_v(args: list[str], env: dict[str, str]) -> dict[str, float]:
    """One whole process under /usr/bin/time -v: wall seconds, CPU seconds, peak RSS in MiB."""
    run = subprocess.run(["/usr/bin/time", "-v", sys.executable, "-m", "memory_core.cli", *args], env=env,
                         capture_output=True, text=True, timeout=600)
    if run.returncode != 0:
        raise RuntimeError(f"memctl {' '.join(args)} failed:\n{run.stderr[-2000:]}")
    out = run.stderr

    def field(name: str) -> str:
        match = re.search(rf"^\s*{re.escape(name)}: (.+)$", out, re.M)
        assert match, f"/usr/bin/time -v printed no {name!r}"
        return match.group(1).strip()

    wall = 0.0
    for part in field("Elapsed (wall clock) time (h:mm:ss or m:ss)").split(":"):
        wall = wall * 60 + float(part)
    return {"wall_s": wall, "cpu_s": float(field("User time (seconds)")) + float(field("System time (seconds)")),
            "rss_mib": int(field("Maximum resident set size (kbytes)")) / 1024}


def _median(samples: list[dict[str, float]]) -> dict[str, float]:
    return {key: statistics.median(s[key] for s in samples) for key in samples[0]}


def run(bank: str | None = None, runs: int = 5) -> dict:
    with tempfile.TemporaryDirectory(prefix="cli-speed-") as tmp:
        cache = Path(tmp) / "cache"
        cache.mkdir()
        models = Path(os.environ.get("MEMCTL_CACHE_DIR") or Path.home() / ".cache" / "memory-console") / "models"
        if models.exists():
            (cache / "models").symlink_to(models.resolve(), target_is_directory=True)
        env = {**{k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}, "PYTHONPATH": str(ROOT),
               "HF_HUB_OFFLINE": "1", "MEMCTL_CACHE_DIR": str(cache)}
        cold_env, warm_env = {**env, "MEMCTL_WARM": "0"}, {**env, "MEMCTL_WARM": "1"}
        if bank is None:
            bank = str(Path(tmp) / "demo.duckdb")
            subprocess.run([sys.executable, "-m", "memory_core.cli", "--bank", bank, "demo"], env=cold_env,
                           check=True, capture_output=True, timeout=3600)
        load_before = os.getloadavg()[0]
        base = ["--bank", bank]
        _time_v(base + list(QUERY), cold_env)  # writes the bytecode
        cold = _median([_time_v(base + list(QUERY), cold_env) for _ in range(runs)])
        stats_cold = _median([_time_v(base + ["stats"], cold_env) for _ in range(runs)])
        start = _time_v(base + list(QUERY), warm_env)  # starts the helper and waits for it
        try:
            warm = _median([_time_v(base + list(QUERY), warm_env) for _ in range(runs)])
            stats = _median([_time_v(base + ["stats"], warm_env) for _ in range(runs)])
        finally:
            subprocess.run([sys.executable, "-c", "import sys; from memory_core.cli import warm; warm.stop(sys.argv[1])",
                            bank], env=env, timeout=120)
        load_after = os.getloadavg()[0]
    result = {"machine": machine(), "load_average": [round(load_before, 2), round(load_after, 2)], "runs": runs,
              "warm": warm, "first_warm_call": start, "cold": cold, "stats": stats, "stats_cold": stats_cold,
              "goals": GOALS}
    result["met"] = {"warm_wall_s": warm["wall_s"] <= GOALS["warm_wall_s"],
                     "cold_wall_s": cold["wall_s"] <= GOALS["cold_wall_s"],
                     "cold_rss_mib": cold["rss_mib"] <= GOALS["cold_rss_mib"],
                     "stats_wall_s": stats["wall_s"] <= GOALS["stats_wall_s"]}
    return result


def markdown(result: dict) -> str:
    rows = [("`memctl recall ... --dry-run`, warm helper", result["warm"], "p50 <= 0.3 s"),
            ("`memctl recall ... --dry-run`, cold (`MEMCTL_WARM=0`)", result["cold"], "<= 1.5 s, <= 300 MiB"),
            ("`memctl stats`, warm helper", result["stats"], "<= 0.5 s"),
            ("`memctl stats`, cold (`MEMCTL_WARM=0`, or no helper running)", result["stats_cold"], ""),
            ("the first warm call (starts the helper)", result["first_warm_call"], "")]
    lines = [f"{result['machine']}; load average {result['load_average'][0]}-{result['load_average'][1]}; "
             f"median of {result['runs']} processes.", "",
             "| process | wall s | CPU s | peak RSS MiB | goal |", "|---|---|---|---|---|"]
    for name, m, goal in rows:
        lines.append(f"| {name} | {m['wall_s']:.2f} | {m['cpu_s']:.2f} | {m['rss_mib']:.0f} | {goal} |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bank", default=None, help="The demo bank (default: built in a temp folder).")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    result = run(args.bank, args.runs)
    if args.json:
        args.json.write_text(json.dumps(result, indent=2) + "\n")
    print(markdown(result))


if __name__ == "__main__":
    main()
