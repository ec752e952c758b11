"""The default threshold on the demo set's answer key: off-topic turns that recall nothing, and
on-topic turns whose recall holds a memory they were written to find.

    python -m bench.demo_threshold [--json bench/results/demo_threshold.json]

The demo memories are imported into a fresh bank (so memory id N is line N, as the answer key
counts), and each logged query is recalled as of its own time with ``ScoringParams()`` (k and
threshold as given, default the default's), without recording.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from memory_core import MemoryBank, ScoringParams, demo  # noqa: E402


def measure(thresholds: list[float]) -> list[dict[str, float]]:
    """Per threshold: share of off-topic queries with an empty result, share of on-topic queries
    with any result, and share of on-topic queries with a relevant memory among the hits."""
    truth, queries = demo.truth()["queries"], demo.queries()
    out = []
    with tempfile.TemporaryDirectory() as tmp, MemoryBank.open(Path(tmp) / "demo.duckdb") as bank:
        bank.import_jsonl(demo.MEMORIES)
        for thr in thresholds:
            params = ScoringParams().replace(threshold=thr)
            off = on_any = on_hit = n_off = n_on = 0
            for q, t in zip(queries, truth):
                hits = bank.recall(q["query"], namespace=q["namespace"], params=params, now=q["at"], record=False)
                if t["off_topic"]:
                    n_off += 1
                    off += not hits
                else:
                    n_on += 1
                    on_any += bool(hits)
                    on_hit += bool({h.memory.id for h in hits} & set(t["relevant_lines"]))
            out.append({"threshold": thr, "off_topic": n_off, "on_topic": n_on, "off_topic_empty": off / n_off,
                        "on_topic_nonempty": on_any / n_on, "on_topic_relevant_hit": on_hit / n_on})
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", dest="json_out", default=None)
    parser.add_argument("--thresholds", type=float, nargs="*", default=None,
                        help="default: 0, 0.35 (the former default) and the current default")
    args = parser.parse_args()
    thresholds = args.thresholds or sorted({0.0, 0.35, ScoringParams().threshold})
    rows = measure(thresholds)
    for r in rows:
        print(f"threshold {r['threshold']:.2f}: off-topic empty {r['off_topic_empty']:.1%} of {r['off_topic']}, "
              f"on-topic with a relevant hit {r['on_topic_relevant_hit']:.1%} "
              f"(non-empty {r['on_topic_nonempty']:.1%}) of {r['on_topic']}")
    if args.json_out:
        Path(args.json_out).write_text(json.dumps({"params": ScoringParams().to_dict(), "rows": rows}, indent=1) + "\n")


if __name__ == "__main__":
    main()
