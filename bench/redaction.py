"""What the write side's redaction catches and misses, by kind of identifier and by language.

    python -m bench.redaction [--json redaction]

Runs memory_core.language.redact.find_pii over the labelled corpus of tests/test_redact.py (English,
Swedish and Chinese; emails, phones, cards, IBANs, bank accounts, national ids, addresses, IPs,
with negatives such as dates, prices and versions) and writes finding-level counts per kind and
per language, plus every miss and false positive with its text, to bench/results/redaction.json.
"""

from __future__ import annotations

import argparse
import sys
from collections import defaultdict
from datetime import datetime, timezone
from pathlib import Path

from bench.checks import write_result
from memory_core.language.redact import find_pii

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from test_redact import CORPUS  # noqa: E402  (the corpus lives with its test)


def run() -> dict:
    by_kind: dict[str, dict[str, int]] = defaultdict(lambda: {"caught": 0, "missed": 0, "false_positive": 0})
    by_lang: dict[str, dict[str, int]] = defaultdict(lambda: {"caught": 0, "missed": 0, "false_positive": 0})
    misses, false_positives = [], []
    for case in CORPUS:
        found = {(f.kind, f.text) for f in find_pii(case.text)}
        expected = set(case.expected)
        for kind, _ in found & expected:
            by_kind[kind]["caught"] += 1
            by_lang[case.lang]["caught"] += 1
        for kind, text in expected - found:
            by_kind[kind]["missed"] += 1
            by_lang[case.lang]["missed"] += 1
            misses.append({"lang": case.lang, "kind": kind, "identifier": text, "text": case.text,
                           "why": case.known_miss})
        for kind, text in found - expected:
            by_kind[kind]["false_positive"] += 1
            by_lang[case.lang]["false_positive"] += 1
            false_positives.append({"lang": case.lang, "kind": kind, "flagged": text, "text": case.text,
                                    "why": case.known_miss})
    tp = sum(v["caught"] for v in by_kind.values())
    fn = sum(v["missed"] for v in by_kind.values())
    fp = sum(v["false_positive"] for v in by_kind.values())
    return {"cases": len(CORPUS), "languages": sorted({c.lang for c in CORPUS}),
            "precision": round(tp / (tp + fp), 3), "recall": round(tp / (tp + fn), 3),
            "by_kind": dict(sorted(by_kind.items())), "by_language": dict(sorted(by_lang.items())),
            "misses": misses, "false_positives": false_positives,
            "measured_at": datetime.now(timezone.utc).isoformat(timespec="seconds")}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--json", default="redaction")
    args = ap.parse_args()
    result = run()
    out = write_result(args.json, result)
    print(f"{result['cases']} cases: precision {result['precision']}, recall {result['recall']}; "
          f"{len(result['misses'])} missed, {len(result['false_positives'])} false positives -> {out}")


if __name__ == "__main__":
    main()
