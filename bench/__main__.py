"""The benchmark entry point: run every benchmark module, write JSON results, regenerate BENCHMARKS.md.

    python -m bench                 full mode: the sizes of issue 6 (takes a while)
    python -m bench --quick         small sizes, under 2 minutes on an idle 2-core machine
    python -m bench --only import_speed,overfetch --quick
    python -m bench --only pg_store --n-large 200000    the PostgreSQL store's cold load at 200k, not 1M

A benchmark module is a ``bench/<name>.py`` named in :data:`ORDER` that defines
``run(quick: bool) -> dict`` (the reliability scripts, LoCoMo and the tuning figures have their own
commands and their own sections of BENCHMARKS.md); it may also accept ``smallest: bool`` (the smoke test's sizes) and
define ``markdown(result: dict) -> str`` for its section of BENCHMARKS.md, and ``n_large: int`` (the size of
the largest namespace it builds, given by ``--n-large``). Results go to
``bench/results/<name>.json`` (full mode) or ``bench/results/quick/`` (quick mode), plots to
PNG files beside them; full mode rewrites BENCHMARKS.md from every result file there.
"""

from __future__ import annotations

import argparse
import importlib
import inspect
import json
import os
import pkgutil
import sys
import time
import traceback
from datetime import datetime, timezone
from pathlib import Path

from bench import _util

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

HERE = Path(__file__).resolve().parent
# The speed and scale benchmarks (issue 6), in the order they run. The crash and soak scripts,
# LoCoMo and the tuning figures take minutes to hours and have their own commands.
ORDER = ("models", "import_speed", "add_speed", "recall_scale", "overfetch", "mem0_compare", "dashboard", "footprint", "serve", "pg_servers",
         "pg_store")


def discover() -> dict[str, object]:
    """Benchmark modules by name: those of ORDER present in bench/ that define run(quick)."""
    present = {info.name for info in pkgutil.iter_modules([str(HERE)])}
    found = {}
    for name in ORDER:
        if name in present:
            module = importlib.import_module(f"bench.{name}")
            if callable(getattr(module, "run", None)):
                found[name] = module
    return found


def run_all(quick: bool, smallest: bool = False, only: list[str] | None = None, out: Path | None = None,
            markdown: Path | None = None, plots: bool = True, n_large: int | None = None) -> dict:
    """Run the chosen benchmarks, write ``<out>/<name>.json`` and ``<out>/run.json``; returns the summary."""
    from bench import _report

    modules = discover()
    if only:
        unknown = set(only) - set(modules)
        if unknown:
            raise SystemExit(f"unknown benchmark(s) {', '.join(sorted(unknown))}; known: {', '.join(modules)}")
        modules = {k: v for k, v in modules.items() if k in only}
    out = out or (HERE / "results" / ("quick" if quick or smallest else ""))
    out.mkdir(parents=True, exist_ok=True)
    mode = "smallest" if smallest else "quick" if quick else "full"
    now = datetime.now(timezone.utc).isoformat(timespec="seconds")
    summary = {"mode": mode, "started_at": now, "last_started_at": now, "benchmarks": {}}
    for name, module in modules.items():
        accepts = inspect.signature(module.run).parameters
        kwargs: dict = {"smallest": True} if smallest and "smallest" in accepts else {}
        if n_large and "n_large" in accepts:
            kwargs["n_large"] = n_large
        print(f"[bench] {name} ({mode})", file=sys.stderr, flush=True)
        t = time.perf_counter()
        load_before = os.getloadavg()[0]
        try:
            result = module.run(quick or smallest, **kwargs)
            status = "ok"
        except Exception as exc:  # one broken benchmark must not lose the others' figures
            traceback.print_exc()
            result, status = {"error": f"{type(exc).__name__}: {exc}"}, "error"
        seconds = time.perf_counter() - t
        # How busy the machine was: absolute figures on a shared machine mean little without it.
        result.setdefault("machine", _util.machine())
        result = {"benchmark": name, "mode": mode, "seconds": seconds,
                  "load_average_1min": [round(load_before, 1), round(os.getloadavg()[0], 1)], **result}
        (out / f"{name}.json").write_text(json.dumps(result, indent=2, default=str) + "\n")
        summary["benchmarks"][name] = {"status": status, "seconds": seconds}
        print(f"[bench] {name}: {status} in {seconds:.0f} s", file=sys.stderr, flush=True)
    previous = out / "run.json"
    if only and previous.exists():  # a partial run updates the summary of the others
        before = json.loads(previous.read_text())
        if before.get("mode") == mode:
            summary["benchmarks"] = {**before.get("benchmarks", {}), **summary["benchmarks"]}
            summary["started_at"] = min(before.get("started_at", summary["started_at"]), summary["started_at"])
    previous.write_text(json.dumps(summary, indent=2) + "\n")
    if plots:
        summary["plots"] = _report.plots(out)
    if markdown is not None:
        _report.write(markdown, _report.markdown(out, modules=discover()))
    return summary


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes (under 2 minutes)")
    parser.add_argument("--smallest", action="store_true", help="the smoke test's sizes (seconds each)")
    parser.add_argument("--only", default=None, help="comma-separated benchmark names")
    parser.add_argument("--out", type=Path, default=None, help="results folder")
    parser.add_argument("--markdown", type=Path, default=None,
                        help="write the tables here (default: BENCHMARKS.md in full mode, nothing otherwise)")
    parser.add_argument("--no-plots", action="store_true")
    parser.add_argument("--n-large", type=int, default=None,
                        help="size of the largest namespace of the benchmarks that take one (pg_store: 1,000,000)")
    parser.add_argument("--list", action="store_true", help="list the benchmarks and exit")
    parser.add_argument("--render", action="store_true",
                        help="only redraw the plots and rewrite the markdown from the results already in --out")
    args = parser.parse_args(argv)
    if args.render:
        from bench import _report

        out = args.out or HERE / "results"
        _report.plots(out)
        _report.write(args.markdown or HERE.parent / "BENCHMARKS.md", _report.markdown(out, modules=discover()))
        return
    if args.list:
        for name, module in discover().items():
            print(f"{name:<16} {(module.__doc__ or '').strip().splitlines()[0]}")
        return
    markdown = args.markdown
    if markdown is None and not (args.quick or args.smallest) and not args.only:
        markdown = HERE.parent / "BENCHMARKS.md"
    summary = run_all(args.quick, args.smallest, args.only.split(",") if args.only else None, args.out, markdown,
                      plots=not args.no_plots, n_large=args.n_large)
    print(json.dumps(summary, indent=2))
    if any(b["status"] != "ok" for b in summary["benchmarks"].values()):
        raise SystemExit(1)


if __name__ == "__main__":
    main()
