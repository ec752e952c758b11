"""Calibrate a model's default recall preset: choose on the dev halves, report on the test halves.

Two data sets, each split in two: ``bench/data/multilingual.json`` (facts in English, Chinese and
Swedish; odd fact ids are dev, even ones test; general questions alternate) and LoCoMo with plain
turns as memories (conversations 0-4 dev, 5-9 test). Each bank is built once through the public
API; every question's similarities and lexical matches are captured once
(``MemoryBank.candidates``) and re-ranked under every setting of the grid, exactly as recall
ranks. A setting is eligible when general questions come back empty at least ``--empty`` of the
time in every language and LoCoMo R@10 stays at least ``--locomo``; of those, the one with the
best worst-case hit@1 (same-language en/zh/sv and cross-language, top hit correct and clearing
the threshold) on the dev halves wins.

``--languages`` chooses the model's per-language calibration instead (``ModelDefaults.language_threshold``,
``scoring.for_language``): per question language, the offset of the default threshold at which general
questions in that language come back empty at least ``--empty`` of the time on the dev halves of both
multilingual sets; of those, the one with the best worse-set same-language hit@1 at the threshold (the
smaller offset on a tie). With none eligible, no offset. Ranking does not move with the offset, so
LoCoMo's R@10 (threshold 0) cannot change.

    python -m bench.calibrate --model multilingual-e5-small --locomo-data DATASET
    python -m bench.calibrate --languages
    python -m bench.calibrate --preset generative-agents --model MODEL [--read en zh]
    python -m bench.calibrate --lexical-floor --locomo-data DATASET

``--lexical-floor`` chooses the share of its lexical match a memory whose cosine is below the
similarity floor keeps (``lexical_below_floor``, :data:`FLOOR_SHARES`), the lexical weight kept at
the preset's (LoCoMo's choice): the best mean same-language hit@1 (top hit, threshold 0) over both
multilingual sets' dev halves; each share's dev and test figures and LoCoMo R@10 are printed.

``--preset NAME`` puts a built-in preset's threshold on a model's scale: the lowest at which general
questions come back empty at least ``--empty`` of the time in every language the model reads
(``--read``) on both multilingual sets' dev halves (``ModelDefaults.presets``).
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

import numpy as np

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from memory_core import MemoryBank, ScoringParams  # noqa: E402
from memory_core.index.scoring import for_language  # noqa: E402

from . import locomo, multilingual  # noqa: E402

GRID = {  # on the scale of cosines with e5's shared directions projected out (unrelated texts near 0)
    "similarity_floor": [0.05, 0.10, 0.15, 0.20],
    "similarity_ceiling": [0.60, 0.65, 0.70, 0.75, 0.80],
    "lexical_weight": [0.2, 0.3, 0.4, 0.5, 0.6],
    "min_relevance": [0.02, 0.05, 0.1],
}
THRESHOLDS = [round(t, 3) for t in np.arange(0.20, 0.651, 0.01)]
PRESET_THRESHOLDS = [round(t, 3) for t in np.arange(0.20, 0.901, 0.01)]  # a preset's own scale may sit higher
OFFSETS = [round(t, 3) + 0.0 for t in np.arange(-0.1, 0.1001, 0.01)]
SECOND = multilingual.DATA.parent / "multilingual_second.json"
FLOOR_SHARES = [0.0, 0.25, 0.5, 0.75, 1.0]


def _top(cand: Any, params: ScoringParams, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Per query: the ids of the k best (by score, ties by the higher cosine, then the smaller id, as
    recall breaks them) and their scores."""
    score = cand.scores(params.replace(k=k, threshold=0.0))
    order = np.lexsort((np.broadcast_to(cand.ids, score.shape), -cand.similarity, -score), axis=-1)[:, :k]
    return cand.ids[order], np.take_along_axis(score, order, axis=-1)


def multilingual_cases(model: str | None, log=print, path: Path = multilingual.DATA) -> dict[str, Any]:
    """Per memory language: the bank's candidates for every question (all languages) and the
    general questions in that language, and what each question wants. Read uncalibrated: every
    question held to the preset's own threshold (``Candidates.offsets`` None)."""
    data = multilingual.load(path)
    facts = data["facts"]
    tmp = tempfile.mkdtemp()
    bank = MemoryBank.open(Path(tmp) / "ml.duckdb", model=model)
    out: dict[str, Any] = {"bank": bank, "spaces": {}}
    questions = [(f["id"], lang, q) for f in facts for lang in multilingual.LANGS for q in f["questions"][lang]]
    t0 = time.perf_counter()
    for mem_lang in multilingual.LANGS:
        ids = bank.add_many([{"text": f["text"][mem_lang], "namespace": mem_lang, "created_at": multilingual.CREATED}
                             for f in facts])
        fact_of = dict(zip(ids, (f["id"] for f in facts)))
        general = data["general"][mem_lang]
        texts = [q for _, _, q in questions] + general
        cand = bank.candidates(texts, namespace=mem_lang, now=multilingual.NOW)
        cand.offsets = None
        out["spaces"][mem_lang] = {"cand": cand, "fact_of": fact_of, "questions": questions,
                                   "general": len(general)}
        log(f"  multilingual {mem_lang}: {len(texts)} questions ({time.perf_counter() - t0:.0f} s)")
    return out


def multilingual_metrics(cases: dict[str, Any], params: ScoringParams, thresholds: list[float]
                         ) -> dict[float, dict[str, dict[str, float]]]:
    """Per threshold, per split: same-language hit@1 (clearing it) per language, cross-language
    hit@1, and the share of general questions returned nothing per language."""
    acc: dict[float, dict[str, dict[str, list[float]]]] = {
        t: {s: {} for s in ("dev", "test")} for t in thresholds}
    for mem_lang, space in cases["spaces"].items():
        ids, scores = _top(space["cand"], params, 1)
        nq = len(space["questions"])
        got = np.array([space["fact_of"].get(int(i), -1) for i in ids[:nq, 0]])
        top = scores[:nq, 0]
        want = np.array([fid for fid, _, _ in space["questions"]])
        qlang = np.array([lang for _, lang, _ in space["questions"]])
        gen_top = scores[nq:, 0]
        for t in thresholds:
            ok = (got == want) & (top >= t) & (top > 0)
            for split, keep in (("dev", want % 2 == 1), ("test", want % 2 == 0)):
                cell = acc[t][split]
                same = keep & (qlang == mem_lang)
                cell.setdefault(mem_lang, []).append(float(ok[same].mean()))
                cell.setdefault("cross", []).extend(ok[keep & (qlang != mem_lang)].astype(float).tolist())
                g = np.arange(len(gen_top)) % 2 == (1 if split == "dev" else 0)
                cell.setdefault(f"empty_{mem_lang}", []).append(float(((gen_top < t) | (gen_top <= 0))[g].mean()))
    return {t: {s: {k: float(np.mean(v)) for k, v in cells.items()} for s, cells in by.items()}
            for t, by in acc.items()}


def locomo_cases(path: str, model: str | None, log=print) -> dict[str, Any]:
    """Per LoCoMo conversation (plain turns): candidates for its questions of categories 1-4."""
    convs = locomo.load(path, None, context=False)
    tmp = tempfile.mkdtemp()
    bank = MemoryBank.open(Path(tmp) / "locomo.duckdb", model=model)
    out: dict[str, Any] = {"bank": bank, "convs": []}
    t0 = time.perf_counter()
    for conv in convs:
        ns = conv["id"]
        new_ids = bank.add_many([{"text": t["text"], "namespace": ns, "created_at": t["created_at"]}
                                 for t in conv["turns"]])
        by_dia = {t["dia_id"]: i for t, i in zip(conv["turns"], new_ids)}
        qs = [(q["question"], sorted({by_dia[e] for e in q["evidence"] if e in by_dia}))
              for q in conv["questions"] if q["category"] != 5]
        qs = [(q, want) for q, want in qs if want]
        cand = bank.candidates([q for q, _ in qs], namespace=ns, now=conv["now"])
        out["convs"].append({"index": conv["index"], "cand": cand, "want": [w for _, w in qs]})
        log(f"  LoCoMo {ns}: {len(conv['turns'])} turns, {len(qs)} questions ({time.perf_counter() - t0:.0f} s)")
    return out


def locomo_r10(cases: dict[str, Any], params: ScoringParams) -> dict[str, float]:
    """R@10 (threshold 0, as the LoCoMo benchmark reports it) on the dev and test conversations."""
    acc: dict[str, list[float]] = {"dev": [], "test": []}
    for conv in cases["convs"]:
        ids, scores = _top(conv["cand"], params, 10)
        for row, srow, want in zip(ids, scores, conv["want"]):
            got = {int(i) for i, s in zip(row, srow) if s > 0}
            acc["dev" if conv["index"] < 5 else "test"].append(sum(w in got for w in want) / len(want))
    return {k: float(np.mean(v)) for k, v in acc.items()}


def sweep(ml: dict[str, Any], lc: dict[str, Any] | None, base: ScoringParams, *, empty: float, locomo_min: float,
          log=print) -> list[dict[str, Any]]:
    """Every grid setting and threshold, scored on both splits."""
    rows = []
    keys = list(GRID)
    for values in itertools.product(*GRID.values()):
        change = dict(zip(keys, values))
        if change["similarity_floor"] >= change["similarity_ceiling"]:
            continue
        p = base.replace(**change)
        r10 = locomo_r10(lc, p) if lc else {"dev": float("nan"), "test": float("nan")}
        for t, by in multilingual_metrics(ml, p, THRESHOLDS).items():
            rows.append({**change, "threshold": t, "locomo_dev": r10["dev"], "locomo_test": r10["test"],
                         "dev": by["dev"], "test": by["test"]})
    log(f"  {len(rows)} settings")
    return rows


def _worst(cell: dict[str, float]) -> float:
    return min(cell[lang] for lang in ("en", "zh", "sv", "cross"))


def _eligible(cell: dict[str, float], empty: float, languages: tuple[str, ...] = multilingual.LANGS) -> bool:
    return all(cell[f"empty_{lang}"] >= empty for lang in languages)


def choose(rows: list[dict[str, Any]], empty: float, locomo_min: float) -> dict[str, Any] | None:
    ok = [r for r in rows if _eligible(r["dev"], empty)
          and (np.isnan(r["locomo_dev"]) or r["locomo_dev"] >= locomo_min)]
    if not ok:
        return None
    return max(ok, key=lambda r: (_worst(r["dev"]), r["dev"]["cross"], r["locomo_dev"]))


def language_thresholds(sets: list[dict[str, Any]], base: ScoringParams, empty: float) -> dict[str, Any]:
    """Per language: each threshold offset's dev and test same-language hit@1 at the moved threshold
    and general questions' empty share, per set; and the chosen offset (0 when none is eligible)."""
    out: dict[str, Any] = {}
    for lang in multilingual.LANGS:
        rows = []
        for offset in OFFSETS:
            t = for_language(base, offset).threshold
            row: dict[str, Any] = {"offset": offset, "threshold": t}
            for i, cases in enumerate(sets):
                by = multilingual_metrics({"spaces": {lang: cases["spaces"][lang]}}, base, [t])
                for split, cell in by[t].items():
                    row[f"{split}_{i}"] = {"hit1_thr": cell[lang], "empty": cell[f"empty_{lang}"]}
            rows.append(row)
        ok = [r for r in rows if all(r[f"dev_{i}"]["empty"] >= empty for i in range(len(sets)))]
        best = max(ok, key=lambda r: (min(r[f"dev_{i}"]["hit1_thr"] for i in range(len(sets))), -abs(r["offset"])),
                   default=None)
        out[lang] = {"chosen": 0.0 if best is None else best["offset"], "rows": rows}
    return out


def preset_threshold(sets: list[dict[str, Any]], params: ScoringParams, empty: float,
                     languages: tuple[str, ...] = multilingual.LANGS) -> dict[str, Any]:
    """A built-in preset's threshold on a model: the lowest of :data:`PRESET_THRESHOLDS` at which
    general questions come back empty at least ``empty`` of the time in each of ``languages`` (those
    the model reads) on every set's dev half, with each set's figures there."""
    by_set = [multilingual_metrics(cases, params, PRESET_THRESHOLDS) for cases in sets]
    ok = [t for t in PRESET_THRESHOLDS if all(_eligible(by[t]["dev"], empty, languages) for by in by_set)]
    chosen = min(ok, default=None)
    return {"chosen": chosen, "rows": [{"threshold": t, "sets": [by[t] for by in by_set]} for t in PRESET_THRESHOLDS]}


def lexical_floor(sets: list[dict[str, Any]], lc: dict[str, Any], base: ScoringParams) -> dict[str, Any]:
    """Per share of :data:`FLOOR_SHARES`: same-language hit@1 (and at the threshold) per set, split and
    language, and LoCoMo R@10; the chosen share (best mean dev hit@1, the smaller share on a tie)."""
    rows = []
    for share in FLOOR_SHARES:
        p = base.replace(lexical_below_floor=share)
        row: dict[str, Any] = {"lexical_below_floor": share, "locomo_r10": locomo_r10(lc, p)}
        for i, cases in enumerate(sets):
            by = multilingual_metrics(cases, p, [0.0, p.threshold])
            row[f"set_{i}"] = {split: {lang: (by[0.0][split][lang], by[p.threshold][split][lang])
                                       for lang in multilingual.LANGS} for split in ("dev", "test")}
        row["dev_mean"] = float(np.mean([row[f"set_{i}"]["dev"][lang][0] for i in range(len(sets))
                                         for lang in multilingual.LANGS]))
        rows.append(row)
    best = max(rows, key=lambda r: (r["dev_mean"], -r["lexical_below_floor"]))
    return {"chosen": best["lexical_below_floor"], "rows": rows}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default=None)
    parser.add_argument("--locomo-data", default=None, help="locomo10.json (LoCoMo R@10 as a constraint)")
    parser.add_argument("--empty", type=float, default=0.9, help="least share of general questions returned nothing")
    parser.add_argument("--locomo", type=float, default=0.70, help="least LoCoMo R@10 (plain turns)")
    parser.add_argument("--memory-prefix", default=None, help="e5 only: embed memories with this prefix")
    parser.add_argument("--languages", action="store_true",
                        help="choose the per-language threshold offsets (both multilingual sets)")
    parser.add_argument("--preset", default=None,
                        help="choose this built-in preset's threshold on the model (both multilingual sets)")
    parser.add_argument("--read", nargs="+", default=list(multilingual.LANGS), choices=multilingual.LANGS,
                        help="--preset: the languages the model reads (use-multilingual-v3: en zh)")
    parser.add_argument("--lexical-floor", action="store_true",
                        help="choose lexical_below_floor (both multilingual sets, LoCoMo: --locomo-data)")
    parser.add_argument("--json", dest="json_out", default=None)
    args = parser.parse_args()
    if args.lexical_floor:
        sets = [multilingual_cases(args.model), multilingual_cases(args.model, path=SECOND)]
        result = lexical_floor(sets, locomo_cases(args.locomo_data, args.model), sets[0]["bank"].active_preset()[1])
        print(json.dumps({**result, "load_average": os.getloadavg()[0]}, indent=1))
        if args.json_out:
            Path(args.json_out).write_text(json.dumps(result) + "\n")
        return
    if args.preset:
        sets = [multilingual_cases(args.model), multilingual_cases(args.model, path=SECOND)]
        params = sets[0]["bank"].presets()[args.preset]
        result = preset_threshold(sets, params, args.empty, tuple(args.read))
        print(json.dumps({"model": sets[0]["bank"].model, "preset": args.preset, "chosen": result["chosen"],
                          "test": [row["sets"] for row in result["rows"] if row["threshold"] == result["chosen"]],
                          "load_average": os.getloadavg()[0]}, indent=1))
        if args.json_out:
            Path(args.json_out).write_text(json.dumps(result) + "\n")
        return
    if args.languages:
        sets = [multilingual_cases(args.model), multilingual_cases(args.model, path=SECOND)]
        offsets = language_thresholds(sets, ScoringParams.preset("default"), args.empty)
        print(json.dumps({lang: v["chosen"] for lang, v in offsets.items()}))
        for lang, v in offsets.items():
            best = next(r for r in v["rows"] if r["offset"] == v["chosen"])
            print(lang, {k: val for k, val in best.items() if k != "offset"})
        if args.json_out:
            Path(args.json_out).write_text(json.dumps(offsets) + "\n")
        return
    load1 = os.getloadavg()[0]
    if args.memory_prefix is not None:
        from memory_core.embedding.embedder import get_embedder

        get_embedder(args.model).prefixes["memory"] = args.memory_prefix
    ml = multilingual_cases(args.model)
    lc = locomo_cases(args.locomo_data, args.model) if args.locomo_data else None
    base = ml["bank"].active_preset()[1]
    rows = sweep(ml, lc, base, empty=args.empty, locomo_min=args.locomo)
    best = choose(rows, args.empty, args.locomo)
    print(json.dumps({"model": ml["bank"].model, "best": best, "load_average": [load1, os.getloadavg()[0]]},
                     indent=1))
    if args.json_out:
        Path(args.json_out).write_text(json.dumps({"model": ml["bank"].model, "best": best, "rows": rows}) + "\n")


if __name__ == "__main__":
    main()
