"""Curation across languages: do merge suggestions and conflict detection find the demo's planted
pairs whose two memories are in different languages?

The demo set (``memory_core/demo/data``) plants 34 duplicate clusters (93 pairs) and 45
contradictions; 21 duplicate pairs and 5 contradictions cross languages (Chinese or Swedish beside
English, by :func:`memory_core.language.text.detect_language`, the language the tokenizer reads each memory
in). For each model, one bank is built as ``memctl demo --model MODEL`` builds it (import, then
contradictions recorded by the rules; the replay is left out: it changes no vector and no pair),
then every namespace's merge suggestions are asked for at the bank's defaults
(``bank.plan_merges(ns)``: exact and near duplicates; with ``related``: also the "same subject"
stage at the model's default related threshold).

Pair precision and recall, against the answer key (``truth.json``):

* a suggested merge cluster of n memories proposes its n(n-1)/2 pairs; a recorded conflict one pair;
* **judged**: the planted contradictions among the pairs detection judges at all (each memory's
  nearest neighbours inside the candidate band): the most a judge, rules or LLM, could find;
* **cross-language**: only pairs whose two memories are in different languages, on both sides
  (precision = planted cross-language pairs among the suggested cross-language pairs; recall =
  suggested among the planted); **all**: every pair.

    python -m bench.cross_language [--model MODEL ...] [--sweep] [--json bench/results/cross_language.json]
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import tempfile
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from memory_core import MemoryBank, demo
from memory_core.curation import conflicts  # noqa: E402
from memory_core.embedding.embedder import DEFAULT_MODEL, MINILM_MODEL, MULTILINGUAL_MODEL  # noqa: E402
from memory_core.language.text import detect_language  # noqa: E402

Pair = tuple[int, int]
SWEEP = (0.40, 0.45, 0.50, 0.55, 0.60, 0.65, 0.70, 0.75, 0.80, 0.85, 0.88, 0.90, 0.92, 0.93, 0.94, 0.95, 0.96,
         0.97)
MODELS = (DEFAULT_MODEL, MINILM_MODEL, MULTILINGUAL_MODEL)


def planted() -> tuple[set[Pair], set[Pair], dict[int, str]]:
    """The answer key's duplicate pairs and contradiction pairs (memory file lines, smaller first),
    and each line's language."""
    key = demo.truth()
    langs = {i: detect_language(row["text"]) for i, row in enumerate(demo.memories(), start=1)}
    dups = {p for c in key["duplicate_clusters"] for p in itertools.combinations(sorted(c["lines"]), 2)}
    contra = {tuple(sorted((c["old_line"], c["new_line"]))) for c in key["contradictions"]}
    return dups, contra, langs  # type: ignore[return-value]


def score(found: set[Pair], truth: set[Pair], langs: dict[int, str]) -> dict[str, Any]:
    """Pair precision and recall: for every pair, the cross-language ones, and per pair of languages
    ("en/zh", "en/sv") of the planted cross-language pairs."""
    out: dict[str, Any] = {}
    pairs_of = lambda p: "/".join(sorted({langs[p[0]], langs[p[1]]}))  # noqa: E731
    parts = [("all", lambda p: True), ("cross", lambda p: langs[p[0]] != langs[p[1]])]
    parts += [(both, lambda p, both=both: pairs_of(p) == both)
              for both in sorted({pairs_of(p) for p in truth if langs[p[0]] != langs[p[1]]})]
    for part, keep in parts:
        f, t = {p for p in found if keep(p)}, {p for p in truth if keep(p)}
        hit = len(f & t)
        out[part] = {"found": len(f), "planted": len(t), "correct": hit,
                     "precision": hit / len(f) if f else float("nan"), "recall": hit / len(t) if t else float("nan")}
    return out


def merge_pairs(bank: MemoryBank, line_of: dict[int, int], **kwargs: Any) -> set[Pair]:
    """Every pair inside every suggested merge cluster of every namespace, as memory file lines."""
    pairs: set[Pair] = set()
    for ns, _ in bank.namespaces():
        for cluster, _preview in bank.plan_merges(ns, **kwargs):
            lines = sorted(line_of[i] for i in cluster.ids)
            pairs.update(itertools.combinations(lines, 2))
    return pairs


def run(model: str, sweep: bool = False, log=print) -> dict[str, Any]:
    """Build the demo bank with ``model`` and measure its merge suggestions and recorded conflicts."""
    dups, contra, langs = planted()
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp, MemoryBank.open(Path(tmp) / "demo.duckdb", model=model) as bank:
        built = demo.build(bank, replay=False)
        line_of = {mid: line for line, mid in built.line_to_id.items()}
        defaults = bank.model_defaults
        result: dict[str, Any] = {"model": bank.model, "defaults": defaults.to_dict()}
        conflict_pairs = {tuple(sorted((line_of[c.a.id], line_of[c.b.id]))) for c in bank.conflicts(status=None)}
        result["conflicts"] = score(conflict_pairs, contra, langs)  # type: ignore[arg-type]
        # The pairs detection judges at all (close enough in meaning): what an LLM judge could find.
        judged: set[Pair] = set()
        for ns, _ in bank.namespaces():
            judged.update(tuple(sorted((line_of[a], line_of[b])))  # type: ignore[misc]
                          for a, b in conflicts.pairs_to_judge(
                              *bank.live_vectors(ns), band=conflicts.candidate_band(defaults.on_model)))
        result["conflict_candidates"] = score(judged, contra, langs)
        result["merges"] = score(merge_pairs(bank, line_of), dups, langs)
        result["merges_related"] = score(
            merge_pairs(bank, line_of, related_threshold=defaults.related_threshold), dups, langs)
        if sweep:
            result["sweep"] = {f"{t:.2f}": score(merge_pairs(bank, line_of, threshold=t), dups, langs)
                               for t in SWEEP}
        result["seconds"] = time.perf_counter() - t0
    log(f"{result['model']}: {result['seconds']:.0f} s")
    return result


def _pr(s: dict[str, Any]) -> str:
    return f"{s['precision']:.2f} / {s['recall']:.2f} ({s['correct']} of {s['found']} found, {s['planted']} planted)"


def report(results: list[dict[str, Any]]) -> str:
    """Markdown: per model, pair precision / recall of merges and conflicts, cross-language and all."""
    lines = ["| model | merge threshold | duplicates, cross-language: P / R | of which English/Chinese | "
             "duplicates, all: P / R | "
             "+ same subject, cross-language: P / R | contradictions, cross-language: P / R | contradictions, all: P / R | "
             "contradictions judged, cross-language / all |",
             "|---|---|---|---|---|---|---|---|---|"]
    for r in results:
        lines.append(f"| {r['model'].split('/')[-1]} | {r['defaults']['merge_threshold']:g} | "
                     f"{_pr(r['merges']['cross'])} | {_pr(r['merges']['en/zh'])} | {_pr(r['merges']['all'])} | "
                     f"{_pr(r['merges_related']['cross'])} | "
                     f"{_pr(r['conflicts']['cross'])} | {_pr(r['conflicts']['all'])} | "
                     f"{r['conflict_candidates']['cross']['correct']} of {r['conflict_candidates']['cross']['planted']} / "
                     f"{r['conflict_candidates']['all']['correct']} of {r['conflict_candidates']['all']['planted']} |")
    for r in results:
        if "sweep" in r:
            lines += ["", f"{r['model'].split('/')[-1]}, near duplicates with the threshold swept (the model's other "
                      "defaults): cross-language P / R (English/Chinese); all P / R", ""]
            lines += [f"- {t}: {_pr(s['cross'])} (English/Chinese {s['en/zh']['precision']:.2f} / "
                      f"{s['en/zh']['recall']:.2f}); {_pr(s['all'])}" for t, s in r["sweep"].items()]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", action="append", default=None,
                        help=f"a model to measure (repeatable; default: {', '.join(MODELS)})")
    parser.add_argument("--sweep", action="store_true", help="also sweep the near-duplicate threshold")
    parser.add_argument("--json", dest="json_out", default=None, help="write the results here")
    args = parser.parse_args()
    load1 = os.getloadavg()[0]
    results = [run(m, sweep=args.sweep) for m in (args.model or MODELS)]
    print(report(results))
    load = [load1, os.getloadavg()[0]]
    print(f"\n1-minute load average: {load[0]:.1f} at the start, {load[1]:.1f} at the end")
    if args.json_out:
        Path(args.json_out).write_text(json.dumps({"results": results, "load_average": load}, indent=1) + "\n")


if __name__ == "__main__":
    main()
