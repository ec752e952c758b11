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
at confidence 0.8 and at the automatic bar (``AUTO_BAR``) show the calibration. ``--fit`` prints the
confidence table (``subject.CONFIDENCE``) fitted on the dev halves alone.

With ``--shared-namespace``, the curation set's contradictions are found as a scan finds them instead
(:func:`shared_conflicts`): candidate generation measured on our own data.

    python -m bench.curation_quality [--json bench/results/curation_quality.json] [--fit] [--shared-namespace]
        [--add-cost] [--read-cost]
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
from memory_core.curation.conflicts import AUTO_BAR, OFFER_FLOOR, subject  # noqa: E402
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


def shared_conflicts(model: str, split: str = "test") -> dict[str, Any]:
    """The curation set's contradictions found as a maintenance scan finds them: each language's pairs
    of ``split`` in one shared namespace (and the pairs across languages in one more), candidate pairs
    drawn by nearness and by subject slot (``conflicts.pairs_to_judge``), so candidate generation is
    measured too. A labelled pair counts by its confidence if the scan recorded it, else 0; what the
    scan records between two different labelled pairs (unlabelled) is counted apart."""
    pairs = [p for p in json.loads((DATA / "conflicts.json").read_text(encoding="utf-8"))["pairs"]
             if p["split"] == split]
    embedder, defaults = get_embedder(model), model_defaults(model)
    band = conflicts.candidate_band(defaults.on_model)
    t0 = datetime(2026, 1, 1)
    rows, unlabelled = [], {}
    for lang in LANGS:
        group = [p for p in pairs if _lang(p["lang"]) == lang]
        if not group:
            continue
        memories = {}
        for k, p in enumerate(group):
            memories[2 * k + 1] = _memory(2 * k + 1, p["older"], t0 + timedelta(minutes=k))
            memories[2 * k + 2] = _memory(2 * k + 2, p["newer"], t0 + timedelta(days=60, minutes=k))
        ids = np.array(sorted(memories))
        vectors = embedder.encode([memories[int(i)].text for i in ids])
        slots = {m: conflicts.slots(mem.text) for m, mem in memories.items()}
        languages = {m: conflicts.language_of(mem.text) for m, mem in memories.items()}
        cands = conflicts.pairs_to_judge(ids, vectors, band=band, slots=slots, languages=languages)
        texts = lambda mids: {m: memories[m].text for m in mids}  # noqa: E731
        across = conflicts.across_language_pairs(cands, ids, vectors, texts) if defaults.across_languages else set()
        found = {(r["a_id"], r["b_id"]): r["confidence"] for r in
                 conflicts.find(cands, ids, vectors, memories, set(), to_reference=defaults.to_reference, across=across)}
        for k, p in enumerate(group):
            rows.append((lang, p["kind"], found.get((2 * k + 1, 2 * k + 2), 0.0)))
        unlabelled[lang] = sum(1 for a, b in found if (a + 1) // 2 != (b + 1) // 2)
    out = _conflict_figures(rows)
    out["unlabelled_offered"] = unlabelled
    return out


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


def add_cost(model: str, n: int = 80) -> dict[str, Any]:
    """p50 of one ``bank.add`` (the conflict check included), candidate pairs by nearness alone
    ("nearest") and by nearness and subject slot ("slots"), side by side in one run: two banks seeded
    with the demo's memories but its first ``n``, which are then added one per call to their own
    namespaces, alternating between the banks. A first add per namespace, untimed, builds the slot index."""
    everything = [{"text": m["text"], "namespace": m["namespace"]} for m in demo.memories()]
    seed, adds = everything[n:], everything[:n]
    embedder = get_embedder(model)
    times: dict[str, list[float]] = {"nearest": [], "slots": []}
    with tempfile.TemporaryDirectory() as tmp, \
            MemoryBank.open(Path(tmp) / "a.duckdb", embedder=embedder) as nearest, \
            MemoryBank.open(Path(tmp) / "b.duckdb", embedder=embedder) as slots:
        nearest._curation._slot_index_in = lambda *_a, **_k: {}  # nearness alone, as before slot pairs
        banks = {"nearest": nearest, "slots": slots}
        for bank in banks.values():
            bank.add_many(seed)  # an import: no conflict check
            for ns in sorted({m["namespace"] for m in everything}):
                bank.add("Warm-up memory", namespace=ns)
        for k, row in enumerate(adds):
            for name in (("nearest", "slots") if k % 2 == 0 else ("slots", "nearest")):
                t0 = time.perf_counter()
                banks[name].add(row["text"], namespace=row["namespace"])
                times[name].append((time.perf_counter() - t0) * 1000)
    return {name: {"p50_ms": round(float(np.median(t)), 1), "adds": len(t)} for name, t in times.items()}


def judged_per_add(model: str, n: int = 80) -> dict[str, Any]:
    """How many pairs an add's conflict check draws and how many of them reach the judge (one subject,
    :func:`subject.same_subject`), per add, as :func:`add_cost` adds them: the demo's first ``n``
    memories, each added to its namespace after the rest. Counts, not times: they do not swing with load."""
    everything = demo.memories()
    seed, adds = everything[n:], everything[:n]
    texts = [m["text"] for m in seed + adds]
    vectors = get_embedder(model).encode(texts)
    band = conflicts.candidate_band(model_defaults(model).on_model)
    drawn, judged = [], []
    for k, row in enumerate(adds):
        rows = [i for i, m in enumerate(seed) if m["namespace"] == row["namespace"]] + [len(seed) + k]
        ids = np.asarray(rows, dtype=np.int64)
        slots = {i: conflicts.slots(texts[i]) for i in rows}
        languages = {i: conflicts.language_of(texts[i]) for i in rows}
        pairs = conflicts.pairs_to_judge(ids, vectors[rows], [len(seed) + k], band=band, slots=slots,
                                         languages=languages)
        drawn.append(len(pairs))
        judged.append(sum(subject.same_subject(texts[a], texts[b]) is not None for a, b in pairs))
    return {"adds": len(adds), "drawn_mean": round(float(np.mean(drawn)), 2),
            "judged_mean": round(float(np.mean(judged)), 2), "judged_max": int(max(judged))}


def read_cost(rounds: int = 20) -> dict[str, Any]:
    """Per text, µs to read the subject slots and supersede signals of each demo memory as the
    candidate rule reads them (in every language the text is in, ``subject._readings``) against in
    its detected language alone, alternating in one process; language detection is cached in both."""
    texts = [m["text"] for m in demo.memories()]
    for t in texts:
        subject.language_of(t)

    def one_language(text: str) -> None:
        lang, low = subject.language_of(text), text.casefold()
        _ = [slot for slot, rx in subject._slots().items() if rx[lang].search(low)]
        _ = [name for name, rx in subject._signal_table()[lang] if rx.search(low)]

    def readings(text: str) -> None:
        subject.slots(text)
        subject._signals(text, subject.language_of(text))

    times: dict[str, list[float]] = {"one_language": [], "readings": []}
    for r in range(rounds):
        for name, read in (("one_language", one_language), ("readings", readings))[:: 1 if r % 2 else -1]:
            t0 = time.perf_counter()
            for t in texts:
                read(t)
            times[name].append((time.perf_counter() - t0) / len(texts) * 1e6)
    out = {name: round(float(np.median(t)), 1) for name, t in times.items()}
    return {"texts": len(texts), "us_per_text": out, "ratio": round(out["readings"] / out["one_language"], 2)}


# --------------------------------------------------------------------------- fitting the confidence table

SMOOTHINGS = (0.5, 1.0, 2.0, 3.0, 5.0, 8.0, 13.0, 21.0, 34.0)
"""The weights, in pairs, a cell's coarser cell (its parent) may get in the cell's estimate."""
ORDERS = ((0, 1, 2, 3), (0, 1, 3, 2))
"""The orders the parts of an evidence cell are read in, the last dropped first to make its coarser
cell: a shared slot before two shared words, or the other way. :func:`choose_fit` picks the order and
the smoothing by leave-one-out log loss on the dev rows."""


def _cell_rows_set(split: str) -> list[tuple[subject.Evidence, bool]]:
    """(evidence cell, right) for each pair of the curation set's ``split`` that the rules or a signal
    call a contradiction, in one language or across two (the table reads both)."""
    pairs = [p for p in json.loads((DATA / "conflicts.json").read_text(encoding="utf-8"))["pairs"]
             if p["split"] == split]
    t0 = datetime(2026, 1, 1)
    cells = []
    for p in pairs:
        older, newer = _memory(1, p["older"], t0), _memory(2, p["newer"], t0 + timedelta(days=60))
        right = p["kind"] == "contradiction"
        across = _across_negation(older, newer) if "-" in p["lang"] else False
        cells.append((subject.ACROSS_NEGATION, right) if across else _evidence_row(older, newer, right))
    return [cell for cell in cells if cell is not None]


def _across_negation(older: Memory, newer: Memory) -> bool:
    """Whether a pair in two languages the gate vouches for is judged by the rules' ``cross_language``
    verdict alone (one side negated, no supersede signal about a shared slot), as ``conflicts.find`` does."""
    view = conflicts.MemoryView.from_memory
    if conflicts.judge_rules(view(older), view(newer), across_languages=True).kind != "cross_language":
        return False
    shared = subject.same_subject(older.text, newer.text, older.category, newer.category)
    return shared is None or subject.signal_verdict(older.text, newer.text, shared) is None


def _evidence_row(older: Memory, newer: Memory, right: bool) -> tuple[subject.Evidence, bool] | None:
    shared = subject.same_subject(older.text, newer.text, older.category, newer.category)
    if shared is None:
        return None
    view = conflicts.MemoryView.from_memory
    rule = conflicts.judge_rules(view(older), view(newer)).conflict
    if not rule and subject.signal_verdict(older.text, newer.text, shared) is None:
        return None
    return subject.evidence(rule, older.text, newer.text, shared), right


def _cell_rows_demo(model: str, namespaces: tuple[str, ...]) -> list[tuple[subject.Evidence, bool]]:
    """(evidence cell, right) for each candidate pair of the demo bank's ``namespaces`` (the pairs a
    maintenance scan judges) that the rules or a signal call a contradiction, against the answer key."""
    key = demo.truth()
    with tempfile.TemporaryDirectory() as tmp, MemoryBank.open(Path(tmp) / "demo.duckdb", model=model) as bank:
        built = demo.build(bank, replay=False, detect_conflicts=False)
        contra = {tuple(sorted((built.line_to_id[c["old_line"]], built.line_to_id[c["new_line"]])))
                  for c in key["contradictions"] if c["namespace"] in namespaces}
        band = conflicts.candidate_band(model_defaults(model).on_model)
        rows = []
        for ns in namespaces:
            ids, vectors = bank.live_vectors(ns)
            memories = bank.get_many(ids.tolist())
            slots = {m: conflicts.slots(mem.text) for m, mem in memories.items()}
            languages = {m: conflicts.language_of(mem.text) for m, mem in memories.items()}
            pairs = conflicts.pairs_to_judge(ids, vectors, band=band, slots=slots, languages=languages)
            for a, b in pairs:
                older, newer = sorted((memories[a], memories[b]), key=lambda m: (m.created_at, m.id))
                if (cell := _evidence_row(older, newer, (a, b) in contra)) is not None:
                    rows.append(cell)
    return rows


Fit = tuple[tuple[int, ...], float]
"""How the table is fitted: the order a cell's parts are read in (:data:`ORDERS`), and the smoothing."""


def _counts(rows: list[tuple[subject.Evidence, bool]], order: tuple[int, ...]) -> dict[tuple[Any, ...], list[int]]:
    # (right, pairs) per cell read in ``order`` and per coarser cell (its prefixes, down to the root ()).
    counts: dict[tuple[Any, ...], list[int]] = defaultdict(lambda: [0, 0])
    for cell, right in rows:
        _count(counts, tuple(cell[i] for i in order), right, 1)
    return counts


def _count(counts: dict[tuple[Any, ...], list[int]], key: tuple[Any, ...], right: bool, sign: int) -> None:
    for depth in range(len(key) + 1):
        counts[key[:depth]][0] += sign * right
        counts[key[:depth]][1] += sign


def _estimate(counts: dict[tuple[Any, ...], list[int]], key: tuple[Any, ...], smoothing: float) -> float:
    # The share right in the cell ``key``, smoothed towards its coarser cell's estimate with weight ``smoothing``.
    estimate = 0.5
    for depth in range(len(key) + 1):
        right, n = counts.get(key[:depth], (0, 0))
        estimate = (right + smoothing * estimate) / (n + smoothing)
    return estimate


def choose_fit(rows: list[tuple[subject.Evidence, bool]]) -> Fit:
    """The order of :data:`ORDERS` and the smoothing of :data:`SMOOTHINGS` whose estimates predict each
    dev row best when fitted on the others (leave-one-out log loss): chosen by the data, not by hand."""

    def loss(fit: Fit) -> float:
        order, smoothing = fit
        counts, total = _counts(rows, order), 0.0
        for cell, right in rows:
            key = tuple(cell[i] for i in order)
            _count(counts, key, right, -1)  # the row left out
            p = min(max(_estimate(counts, key, smoothing), 1e-3), 1 - 1e-3)
            total -= float(np.log(p if right else 1 - p))
            _count(counts, key, right, 1)
        return total

    return min(itertools.product(ORDERS, SMOOTHINGS), key=loss)


def fit_confidence(model: str = DEFAULT_MODEL) -> dict[subject.Evidence, float]:
    """The ``subject.CONFIDENCE`` table from the dev halves: per evidence cell, the share right,
    smoothed towards its coarser cell (the key without its last part; the root towards 0.5) in the
    order and with the weight :func:`choose_fit` picks, and capped at ``subject.CONFIDENCE_CAP``; and the
    cell of the rules' negation across two languages (``subject.ACROSS_NEGATION``), fitted with the rest."""
    rows = _cell_rows_set("dev") + _cell_rows_demo(model, DEV_NAMESPACES)
    order, smoothing = choose_fit(rows)
    counts = _counts(rows, order)
    table = {}
    for cell in itertools.product((True, False), ("strong", "stop", "move", "now", "-"), (True, False),
                                  (True, False)):
        rule, backing, slot, _words = cell
        if not (rule or backing in ("strong", "stop", "move") or (backing == "now" and slot)):
            continue  # no verdict to trust (subject.signal_verdict): confidence 0
        estimate = _estimate(counts, tuple(cell[i] for i in order), smoothing)
        table[cell] = round(min(estimate, subject.CONFIDENCE_CAP), 2)
    across = subject.ACROSS_NEGATION
    table[across] = round(min(_estimate(counts, tuple(across[i] for i in order), smoothing), subject.CONFIDENCE_CAP), 2)
    return table


def run(model: str = DEFAULT_MODEL, shared: bool = False) -> dict[str, Any]:
    t0 = time.perf_counter()
    if shared:
        return {"model": model, "shared": {"conflicts": shared_conflicts(model)},
                "shared_dev": {"conflicts": shared_conflicts(model, "dev")}, "seconds": round(time.perf_counter() - t0, 1)}
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
    parser.add_argument("--fit", action="store_true", help="print subject.CONFIDENCE fitted on the dev halves")
    parser.add_argument("--add-cost", action="store_true",
                        help="pairs judged per add, and p50 of bank.add, candidates by nearness alone and with "
                             "subject slots, side by side")
    parser.add_argument("--read-cost", action="store_true",
                        help="µs per text to read slots and signals in every language it is in, against one")
    parser.add_argument("--shared-namespace", action="store_true",
                        help="the curation set's contradictions in one namespace per language, found by a scan")
    args = parser.parse_args()
    if args.fit:
        for cell, value in fit_confidence(args.model).items():
            print(f"    {cell!r}: {value},")
        return
    if args.read_cost:
        print(json.dumps(read_cost(), indent=1))
        return
    if args.add_cost:
        print(json.dumps({"pairs": judged_per_add(args.model), "times": add_cost(args.model)}, indent=1))
        return
    result = run(args.model, shared=args.shared_namespace)
    if args.shared_namespace:
        print(json.dumps(result, indent=1))
        return
    if args.json:
        args.json.write_text(json.dumps(result, indent=1, ensure_ascii=False) + "\n")
    print(markdown(result))
    print(json.dumps({"set_conflicts_calibration": result["set"]["conflicts"]["calibration"],
                      "set_conflicts_false": result["set"]["conflicts"]["false_by_kind"],
                      "set_merges_false": result["set"]["merges"]["false_by_kind"]}, indent=1))
    print(f"{result['seconds']:.0f} s")


if __name__ == "__main__":
    main()
