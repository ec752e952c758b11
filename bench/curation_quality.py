"""Curation quality on the rules path (no LLM), on the default model: contradictions offered for
review and merges suggested by default, precision and recall per language and across languages.

Two labelled sets, each with a half that choices were made on and a half reported:

* **the curation set** (``bench/data/conflicts.json``, ``duplicates.json``; written for this, not from
  the demo texts), its ``test`` half: each labelled pair is judged as the bank judges a candidate
  pair (``conflicts.find`` on the two memories, the newer dated 60 days after the older), and the
  merge plan (``merge.find_clusters`` at the model's defaults) runs over the half's duplicate pairs
  and hard negatives as one namespace;
* **the demo bank** (``memory_core/demo/data``, built as ``memctl demo`` builds it, without the
  replay): the contradictions the import recorded and the merges ``plan_merges`` suggests in each
  namespace, against the answer key. Namespaces ``alice`` and ``support-bot`` were the half the
  choices were made on; ``bob`` and ``chen`` are reported as held out.

A conflict counts as offered when it is recorded (confidence at least ``OFFER_FLOOR``); the figures
at confidence 0.8 and at the automatic bar (``AUTO_BAR``) show the calibration.

    python -m bench.curation_quality [--json bench/results/curation_quality.json]
"""

from __future__ import annotations

import argparse
import hashlib
import itertools
import json
import os
import tempfile
import time
from collections import defaultdict
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import numpy as np  # noqa: E402

from bench import fit_merge_pairs  # noqa: E402
from memory_core import MemoryBank, demo  # noqa: E402
from memory_core.curation import conflicts, merge  # noqa: E402
from memory_core.curation.conflicts import AUTO_BAR, OFFER_FLOOR  # noqa: E402
from memory_core.embedding.embedder import DEFAULT_MODEL, get_embedder, model_defaults  # noqa: E402
from memory_core.language.text import detect_language  # noqa: E402
from memory_core.models import Memory  # noqa: E402

DATA = Path(__file__).resolve().parent / "data"
DEV_NAMESPACES = ("alice", "support-bot")
TEST_NAMESPACES = ("bob", "chen")
LANGS = ("en", "sv", "zh", "cross")
Pair = tuple[int, int]


def _pr(found: int, correct: int, planted: int) -> dict[str, Any]:
    return {"found": found, "correct": correct, "planted": planted,
            "precision": correct / found if found else None, "recall": correct / planted if planted else None}


def _memory(mid: int, text: str, at: datetime) -> Memory:
    return Memory(id=mid, text=text, namespace="set", kind="explicit", category="fact", importance=0.5,
                  created_at=at, updated_at=at, last_accessed_at=None, access_count=0, status="active",
                  content_hash=hashlib.sha256(text.encode()).hexdigest())


def _lang(label: str) -> str:
    return "cross" if "-" in label else label


def set_conflicts(model: str, split: str = "test") -> dict[str, Any]:
    """The curation set's contradictions, judged pair by pair as the bank judges a candidate pair."""
    pairs = [p for p in json.loads((DATA / "conflicts.json").read_text(encoding="utf-8"))["pairs"]
             if p["split"] == split]
    embedder, defaults = get_embedder(model), model_defaults(model)
    older = embedder.encode([p["older"] for p in pairs])
    newer = embedder.encode([p["newer"] for p in pairs])
    t0 = datetime(2026, 1, 1)
    rows = []
    for p, a, b in zip(pairs, older, newer):
        memories = {1: _memory(1, p["older"], t0), 2: _memory(2, p["newer"], t0 + timedelta(days=60))}
        across = {(1, 2)} if "-" in p["lang"] else set()
        found = conflicts.find([(1, 2)], np.array([1, 2]), np.stack([a, b]), memories, set(),
                               to_reference=defaults.to_reference, across=across)
        rows.append((_lang(p["lang"]), p["kind"], found[0]["confidence"] if found else 0.0))
    return _conflict_figures(rows)


def _conflict_figures(rows: list[tuple[str, str, float]]) -> dict[str, Any]:
    """Precision and recall per language at the offer floor, 0.8 and the automatic bar, from
    (language, kind, confidence) rows; and the calibration: per confidence, how often right."""
    out: dict[str, Any] = {}
    for bar_name, bar in (("offered", OFFER_FLOOR), ("at_0.8", 0.8), ("auto", AUTO_BAR)):
        out[bar_name] = {}
        for lang in (*LANGS, "all"):
            sel = [r for r in rows if lang in ("all", r[0])]
            flagged = [r for r in sel if r[2] >= bar]
            out[bar_name][lang] = _pr(len(flagged), sum(r[1] == "contradiction" for r in flagged),
                                      sum(r[1] == "contradiction" for r in sel))
    by_conf: dict[float, list[int]] = defaultdict(lambda: [0, 0])
    for _, kind, conf in rows:
        if conf > 0:
            by_conf[round(conf, 2)][0] += 1
            by_conf[round(conf, 2)][1] += kind == "contradiction"
    out["calibration"] = {f"{c:.2f}": {"offered": n, "right": k} for c, (n, k) in sorted(by_conf.items())}
    out["false_by_kind"] = {k: sum(1 for r in rows if r[1] == k and r[2] >= OFFER_FLOOR)
                            for k in sorted({r[1] for r in rows}) if k != "contradiction"}
    return out


def set_merges(model: str, split: str = "test") -> dict[str, Any]:
    """The curation set's half as four namespaces (English, Swedish, Chinese, across two languages;
    ``fit_merge_pairs.labelled_pools``): every text of their duplicate pairs and hard negatives is a
    memory, the merge plan runs over each (``merge.find_clusters`` at the model's defaults), and each
    pair it puts in one cluster is judged: a labelled pair by its label, a pair of two subjects as
    wrong (``unrelated``), a pair of one subject the set does not label not at all."""
    t0 = datetime(2026, 1, 1)
    found: list[tuple[str, str]] = []
    planted: list[str] = []
    for group, (texts, kinds, subjects) in zip(LANGS, fit_merge_pairs.labelled_pools(split)):
        vectors = get_embedder(model).encode(texts)
        memories = [_memory(i + 1, t, t0 + timedelta(hours=i)) for i, t in enumerate(texts)]
        cands = merge.candidates(np.arange(1, len(texts) + 1), vectors, memories)
        for cluster in merge.find_clusters(cands, model=model):
            for a, b in itertools.combinations(sorted(i - 1 for i in cluster.ids), 2):
                kind = fit_merge_pairs.label((a, b), kinds, subjects)
                if kind is not None:
                    found.append((group, kind))
        planted += [group for kind in kinds.values() if kind == "duplicate"]
    out: dict[str, Any] = {}
    for lang in (*LANGS, "all"):
        sel = [k for g, k in found if lang in ("all", g)]
        out[lang] = _pr(len(sel), sel.count("duplicate"), sum(lang in ("all", g) for g in planted))
    out["false_by_kind"] = {k: sum(1 for _, kind in found if kind == k)
                            for k in ("progression", "two_events", "same_subject_other_fact", "contradiction",
                                      "unrelated")}
    return out


def demo_figures(model: str) -> dict[str, Any]:
    """The demo bank's recorded conflicts and suggested merges against the answer key, per half of
    its namespaces and per language of the pair."""
    key = demo.truth()
    contra = {tuple(sorted((c["old_line"], c["new_line"]))): c["namespace"] for c in key["contradictions"]}
    dups = {p: c["namespace"] for c in key["duplicate_clusters"] for p in itertools.combinations(sorted(c["lines"]), 2)}
    with tempfile.TemporaryDirectory() as tmp, MemoryBank.open(Path(tmp) / "demo.duckdb", model=model) as bank:
        built = demo.build(bank, replay=False)
        line_of = {mid: line for line, mid in built.line_to_id.items()}
        texts = {line: m.text for mid, m in bank.get_many(list(line_of)).items() if (line := line_of[mid])}
        recorded = {tuple(sorted((line_of[c.a.id], line_of[c.b.id]))): (c.namespace, float(c.confidence))
                    for c in bank.conflicts(status=None)}
        merged: dict[Pair, str] = {}
        plan_seconds = []  # the Merges page's "(all)" view plans every namespace: the first time, then again
        for _ in range(2):
            started = time.perf_counter()
            for ns, _ in bank.namespaces():
                for cluster, _preview in bank.plan_merges(ns):
                    for p in itertools.combinations(sorted(line_of[i] for i in cluster.ids), 2):
                        merged[p] = ns
            plan_seconds.append(round(time.perf_counter() - started, 2))
    langs = {line: detect_language(t) for line, t in texts.items()}

    def lang_of(p: Pair) -> str:
        a, b = langs.get(p[0], "en"), langs.get(p[1], "en")
        return a if a == b else "cross"

    out: dict[str, Any] = {}
    for half, names in (("dev", DEV_NAMESPACES), ("test", TEST_NAMESPACES)):
        res: dict[str, Any] = {"conflicts": {}, "merges": {}}
        for bar_name, bar in (("offered", OFFER_FLOOR), ("at_0.8", 0.8), ("auto", AUTO_BAR)):
            res["conflicts"][bar_name] = {}
            for lang in (*LANGS, "all"):
                truth = {p for p, ns in contra.items() if ns in names and lang in ("all", lang_of(p))}
                found = {p for p, (ns, conf) in recorded.items()
                         if ns in names and conf >= bar and lang in ("all", lang_of(p))}
                res["conflicts"][bar_name][lang] = _pr(len(found), len(found & truth), len(truth))
        for lang in (*LANGS, "all"):
            truth = {p for p, ns in dups.items() if ns in names and lang in ("all", lang_of(p))}
            found = {p for p, ns in merged.items() if ns in names and lang in ("all", lang_of(p))}
            res["merges"][lang] = _pr(len(found), len(found & truth), len(truth))
        out[half] = res
    out["plan_seconds"] = plan_seconds
    return out


def run(model: str = DEFAULT_MODEL) -> dict[str, Any]:
    t0 = time.perf_counter()
    result = {"model": model,
              "set": {"conflicts": set_conflicts(model), "merges": set_merges(model)},
              "set_dev": {"conflicts": set_conflicts(model, "dev"), "merges": set_merges(model, "dev")},
              "demo": demo_figures(model)}
    result["seconds"] = round(time.perf_counter() - t0, 1)
    return result


def _cell(s: dict[str, Any]) -> str:
    if not s["planted"]:
        return "–"
    p = "–" if s["precision"] is None else f"{s['precision']:.2f}"
    return f"{p} / {s['recall']:.2f} ({s['correct']}/{s['found']}, of {s['planted']})"


def markdown(result: dict[str, Any]) -> str:
    """The tables of BENCHMARKS.md's "Curation quality" section."""
    head = "| set | what | " + " | ".join(LANGS) + " | all |\n|---|---|" + "---|" * (len(LANGS) + 1) + "\n"
    rows = []
    for name, part in (("curation set, test", result["set"]), ("demo, held-out namespaces", result["demo"]["test"]),
                       ("demo, dev namespaces", result["demo"]["dev"])):
        c = part["conflicts"]
        rows.append(f"| {name} | conflicts offered | " + " | ".join(_cell(c["offered"][l]) for l in (*LANGS, "all")) + " |")
        rows.append(f"| {name} | conflicts at 0.8 | " + " | ".join(_cell(c["at_0.8"][l]) for l in (*LANGS, "all")) + " |")
        rows.append(f"| {name} | merges suggested | " + " | ".join(_cell(part["merges"][l]) for l in (*LANGS, "all")) + " |")
    return head + "\n".join(rows) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default=DEFAULT_MODEL)
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    result = run(args.model)
    if args.json:
        args.json.write_text(json.dumps(result, indent=1, ensure_ascii=False) + "\n")
    print(markdown(result))
    print(json.dumps({"set_conflicts_calibration": result["set"]["conflicts"]["calibration"],
                      "set_conflicts_false": result["set"]["conflicts"]["false_by_kind"],
                      "set_merges_false": result["set"]["merges"]["false_by_kind"]}, indent=1))
    print(f"{result['seconds']:.0f} s")


if __name__ == "__main__":
    main()
