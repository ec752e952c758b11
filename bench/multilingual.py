"""Memories and questions in English, Chinese and Swedish: does recall find the fact it was asked about?

``bench/data/multilingual.json`` holds 104 everyday facts about one user (preferences, health,
work, family, plans, places), each written in the three languages, with two questions per fact
per language written as a user would ask them, and 35 general questions per language that no
memory answers. Facts that share words ("allergic to cats" / "my sister has two cats") are each
other's distractors.

For each memory language one bank namespace holds the 104 facts in that language, added through
the public API (``add_many``); every question is asked of every namespace (``recall``, no
recording) with the bank's active preset for its model, the default a new bank gets:

* **hit@1**: the top-ranked memory is the fact the question was written for (ranking at the
  default's weights, threshold 0);
* **hit@1 at the threshold**: the same, and its score clears the default threshold as the
  question's language moves it (``MemoryBank.calibrated``: what an agent actually receives);
* **general questions empty**: the share of general questions asked in a language of the namespace
  in that language for which recall at the default returns nothing;
* **personal unanswered empty**: the same for the set's ``unanswered`` questions, personal questions
  on topics near the facts that no fact answers ("What's my dentist's name?"), where an irrelevant
  memory does most harm; their ids split them in halves as the facts'.

Same-language cells are a question and memories in one language; cross-language cells the rest.
Beside each top hit, the model's own cosine: the memory whose vector is nearest the question's,
asked as written (no lexical match, no rule, no prior), so what the blend adds or costs is visible.

Facts are split in two halves (odd and even ids): anything tuned on this data is tuned on the
"dev" half (odd ids) and reported on the "test" half (even ids) as well as on all facts.
``--data bench/data/multilingual_second.json`` runs the second set (one student's facts, questions
that name her; its namespaces are named after her).

    python -m bench.multilingual [--model MODEL] [--data FILE] [--json bench/results/multilingual.json]
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from memory_core import MemoryBank  # noqa: E402

DATA = Path(__file__).resolve().parent / "data" / "multilingual.json"
LANGS = ("en", "zh", "sv")
SPLITS = {"all": lambda fid: True, "dev": lambda fid: fid % 2 == 1, "test": lambda fid: fid % 2 == 0}
CREATED = datetime(2026, 1, 10, tzinfo=timezone.utc)
NOW = CREATED + timedelta(days=14)


def load(path: Path = DATA) -> dict[str, Any]:
    """The facts and the general questions."""
    return json.loads(path.read_text(encoding="utf-8"))


def run(model: str | None = None, data: dict[str, Any] | None = None, log=print) -> dict[str, Any]:
    """Build one bank (three namespaces, one per memory language) and ask every question of each.

    Returns per-question records: question language, memory language, fact id, the top hit's fact
    id and score, and the threshold the question is held to; and per general question its top score
    and threshold. ``threshold`` is the active preset's, before any language moves it.
    """
    data = load() if data is None else data
    facts = data["facts"]
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp, MemoryBank.open(Path(tmp) / "ml.duckdb", model=model) as bank:
        _, params = bank.active_preset()
        rank_params = params.replace(k=1, threshold=0.0)
        person = data.get("person", {}).get("namespace")
        ns = {lang: f"{person}-{lang}" if person else lang for lang in LANGS}
        fact_of: dict[int, int] = {}
        memory_vectors = {}
        for mem_lang in LANGS:
            texts = [f["text"][mem_lang] for f in facts]
            ids = bank.add_many([{"text": t, "namespace": ns[mem_lang], "created_at": CREATED} for t in texts])
            fact_of.update({mid: f["id"] for mid, f in zip(ids, facts)})
            memory_vectors[mem_lang] = bank.embedder.encode(texts, kind="memory")
        questions = [(f["id"], lang, q) for f in facts for lang in LANGS for q in f["questions"][lang]]
        general = [(lang, q) for lang in LANGS for q in data["general"][lang]]
        bank.embedder.warm([q for _, _, q in questions] + [q for _, q in general])
        asked = bank.embedder.encode([q for _, _, q in questions], kind="query")
        records = []
        for (fid, q_lang, text), vector in zip(questions, asked):
            for mem_lang in LANGS:
                hits = bank.recall(text, namespace=ns[mem_lang], params=rank_params, now=NOW, record=False)
                top = hits[0] if hits else None
                nearest = int((memory_vectors[mem_lang] @ vector).argmax())
                records.append({"fact": fid, "q": q_lang, "m": mem_lang, "question": text,
                                "threshold": bank.calibrated(params, text).threshold,
                                "got": fact_of[top.memory.id] if top else None,
                                "score": top.score if top else 0.0, "cosine_got": facts[nearest]["id"]})
        no_memory = []
        for lang, text in general:
            hits = bank.recall(text, namespace=ns[lang], params=rank_params, now=NOW, record=False)
            no_memory.append({"lang": lang, "question": text, "score": hits[0].score if hits else 0.0,
                              "threshold": bank.calibrated(params, text).threshold,
                              "got": fact_of[hits[0].memory.id] if hits else None})
        unanswered = []
        for entry in data.get("unanswered", []):
            for lang in LANGS:
                text = entry["question"][lang]
                hits = bank.recall(text, namespace=ns[lang], params=rank_params, now=NOW, record=False)
                unanswered.append({"id": entry["id"], "lang": lang, "question": text,
                                   "score": hits[0].score if hits else 0.0,
                                   "threshold": bank.calibrated(params, text).threshold,
                                   "got": fact_of[hits[0].memory.id] if hits else None})
        result = {"model": bank.model, "threshold": params.threshold, "params": params.to_dict(),
                  "facts": len(facts), "records": records, "general": no_memory, "unanswered": unanswered,
                  "seconds": time.perf_counter() - t0}
    log(f"{bank.model}: {len(records)} recalls, {len(no_memory)} general and {len(unanswered)} unanswered "
        f"personal questions, {result['seconds']:.0f} s")
    return result


def summarize(result: dict[str, Any]) -> dict[str, Any]:
    """hit@1 (and at the threshold) per question/memory language pair and split; the general
    questions' empty share per language; same-language and cross-language means."""
    thr = result["threshold"]
    out: dict[str, Any] = {"model": result["model"], "threshold": thr, "splits": {}}
    for split, keep in SPLITS.items():
        recs = [r for r in result["records"] if keep(r["fact"])]
        cells: dict[str, dict[str, float]] = {}
        for q in LANGS:
            for m in LANGS:
                rs = [r for r in recs if r["q"] == q and r["m"] == m]
                cells[f"{q}>{m}"] = {
                    "hit1": _mean([r["got"] == r["fact"] for r in rs]),
                    "cosine_hit1": _mean([r["cosine_got"] == r["fact"] for r in rs]),
                    "hit1_thr": _mean([_received(r) for r in rs]),
                    "questions": len(rs)}
        same = {lang: cells[f"{lang}>{lang}"] for lang in LANGS}
        cross = [c for key, c in cells.items() if key[:2] != key[-2:]]
        out["splits"][split] = {
            "cells": cells,
            "same": {lang: c["hit1"] for lang, c in same.items()},
            "same_cosine": {lang: c["cosine_hit1"] for lang, c in same.items()},
            "same_thr": {lang: c["hit1_thr"] for lang, c in same.items()},
            "cross": _mean([c["hit1"] for c in cross]),
            "cross_thr": _mean([c["hit1_thr"] for c in cross]),
            "all_thr": _mean([_received(r) for r in recs]),
        }
    out["general_empty"] = {lang: _mean([g["score"] < g.get("threshold", thr) for g in result["general"]
                                         if g["lang"] == lang]) for lang in LANGS}
    out["unanswered_empty"] = {split: {lang: _mean([u["score"] < u["threshold"] for u in result.get("unanswered", [])
                                                    if u["lang"] == lang and keep(u["id"])]) for lang in LANGS}
                               for split, keep in SPLITS.items()}
    return out


def _received(record: dict[str, Any]) -> bool:
    """The top hit is the fact asked about and clears the threshold the question is held to."""
    return record["got"] == record["fact"] and record["score"] >= record["threshold"]


def _mean(values: list) -> float:
    return sum(values) / len(values) if values else float("nan")


def report(summary: dict[str, Any]) -> str:
    """Markdown: same-language and cross-language hit@1 by split, the full grid, general questions."""
    lines = [f"Model `{summary['model']}`, default threshold {summary['threshold']} (moved per question language).", "",
             "| facts | en→en | zh→zh | sv→sv | cross-language (mean of 6) | every pair at the threshold "
             "| general empty en / zh / sv | personal unanswered empty en / zh / sv |",
             "|---|---|---|---|---|---|---|---|"]
    ge, ue = summary["general_empty"], summary.get("unanswered_empty", {})
    for split, s in summary["splits"].items():
        same, thr, cos = s["same"], s["same_thr"], s["same_cosine"]
        lines.append(f"| {split} | " + " | ".join(f"{same[lang]:.3f} ({thr[lang]:.3f}; cosine {cos[lang]:.3f})"
                                                 for lang in LANGS)
                     + f" | {s['cross']:.3f} ({s['cross_thr']:.3f}) | {s['all_thr']:.3f} | "
                     + (" / ".join(f"{ge[lang]:.0%}" for lang in LANGS) if split == "all" else "") + " | "
                     + (" / ".join(f"{ue[split][lang]:.0%}" for lang in LANGS) if split in ue else "") + " |")
    lines += ["", "hit@1 (in brackets: and clearing the default threshold; and the model's own cosine's hit@1, "
              "the question as asked). All facts, question language → "
              "memory language:", "", "| question \\ memory | " + " | ".join(LANGS) + " |", "|---|---|---|---|"]
    cells = summary["splits"]["all"]["cells"]
    for q in LANGS:
        lines.append(f"| {q} | " + " | ".join(f"{cells[f'{q}>{m}']['hit1']:.3f}" for m in LANGS) + " |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default=None, help="embedding model of the bank (default: the bundled one)")
    parser.add_argument("--data", default=str(DATA), help="the set of facts and questions (JSON)")
    parser.add_argument("--json", dest="json_out", default=None, help="write the summary here")
    parser.add_argument("--records", default=None, help="write every question's result here (JSON)")
    args = parser.parse_args()
    load1 = os.getloadavg()[0]
    result = run(args.model, load(Path(args.data)))
    summary = summarize(result)
    summary["load_average"] = [load1, os.getloadavg()[0]]
    summary["seconds"] = result["seconds"]
    print(report(summary))
    print(f"\n1-minute load average: {load1:.1f} at the start, {os.getloadavg()[0]:.1f} at the end")
    if args.json_out:
        Path(args.json_out).write_text(json.dumps(summary, indent=1) + "\n")
    if args.records:
        Path(args.records).write_text(json.dumps(result, ensure_ascii=False, indent=0) + "\n")


if __name__ == "__main__":
    main()
