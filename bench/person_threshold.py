"""Two thresholds, one for a question about the user or the namespace's subject and one for the rest?

A question that speaks of the user ("my", "jag", "我") or names the namespace's subject ("Maya")
might deserve another threshold than one that does not ("Why is the sky blue?"). Both multilingual
sets are run through ``bench.multilingual`` (or its ``--records`` files are read) and every
same-language question's top score is held to its calibrated threshold moved by ``personal`` or
``other``, each an offset on a grid. Chosen on the dev halves (odd fact ids, odd unanswered ids,
every second general question), with both constraints in every language of both sets: general
questions empty at least ``--empty``, and personal unanswered questions empty at least as often as
with no offset. Of those, the best mean same-language hit@1 at the threshold wins (the smaller
offsets on a tie). The best single offset (both alike) is found under the same constraints, and
the best pair under the general constraint alone (what the unanswered questions guard against);
each is reported on the test halves.

    python -m bench.person_threshold [--records FIRST.json SECOND.json] [--json bench/results/person_threshold.json]
"""

from __future__ import annotations

import argparse
import json
import os
import re
from pathlib import Path
from typing import Any

import numpy as np

from . import multilingual

LANGS = multilingual.LANGS
SECOND = multilingual.DATA.parent / "multilingual_second.json"
FIRST_PERSON = {"en": r"\b(?:i|me|my|mine|i'm|i've|i'd|myself|we|us|our|ours|we're|we've)\b",
                "sv": r"\b(?:jag|mig|min|mitt|mina|vi|oss|vår|vårt|våra)\b", "zh": r"我"}
OFFSETS = [round(float(x), 3) + 0.0 for x in np.arange(-0.10, 0.1001, 0.005)]


def personal(text: str, lang: str, name: str | None) -> bool:
    """The question speaks of the user (first person) or names the set's person."""
    t = text.casefold()
    return bool(re.search(FIRST_PERSON[lang], t)) or (name is not None and name.casefold() in t)


def table(result: dict[str, Any], data: dict[str, Any]) -> dict[str, dict[str, np.ndarray]]:
    """Per kind (on-topic same-language questions, general, unanswered): score, threshold, language,
    personal, dev half, and (on-topic) whether the top hit is the fact asked about."""
    names = data.get("person", {}).get("name", {})
    seen: dict[str, int] = {}
    general_dev = []
    for g in result["general"]:
        seen[g["lang"]] = seen.get(g["lang"], -1) + 1
        general_dev.append(seen[g["lang"]] % 2 == 1)
    rows = {"on": ([r for r in result["records"] if r["q"] == r["m"]], lambda i, r: r["fact"] % 2 == 1),
            "general": (result["general"], lambda i, r: general_dev[i]),
            "unanswered": (result["unanswered"], lambda i, r: r["id"] % 2 == 1)}
    out = {}
    for kind, (recs, dev) in rows.items():
        lang = [r.get("q", r.get("lang")) for r in recs]
        out[kind] = {"score": np.array([r["score"] for r in recs]), "thr": np.array([r["threshold"] for r in recs]),
                     "lang": np.array(lang), "dev": np.array([dev(i, r) for i, r in enumerate(recs)]),
                     "personal": np.array([personal(r["question"], la, names.get(la)) for r, la in zip(recs, lang)]),
                     "right": np.array([r.get("got") == r.get("fact", -1) for r in recs])}
    near = {u["id"]: u["near"] for u in data.get("unanswered", [])}
    out["unanswered"]["near"] = np.array([r["got"] == near.get(r["id"]) for r in result["unanswered"]])
    return out


def separation(sets: dict[str, Any]) -> dict[str, dict[str, dict[str, float]]]:
    """Why no threshold parts them, per set and language: how often a right answer's top score beats an
    unanswered question's (AUC), and the share of unanswered questions returned whose top hit is the
    fact on its topic."""
    out: dict[str, dict[str, dict[str, float]]] = {}
    for name, kinds in sets.items():
        on, un = kinds["on"], kinds["unanswered"]
        cells: dict[str, dict[str, float]] = {"auc": {}, "near_share": {}}
        for lang in LANGS:
            right = on["score"][on["right"] & (on["lang"] == lang)]
            mine = un["lang"] == lang
            cells["auc"][lang] = float((right[:, None] > un["score"][mine][None, :]).mean())
            returned = mine & (un["score"] >= un["thr"])
            cells["near_share"][lang] = float(un["near"][returned].mean())
        out[name] = cells
    return out


def measure(sets: dict[str, Any], mine: float, other: float, split: str) -> dict[str, dict[str, dict[str, float]]]:
    """Per set, per language: hit@1 at the moved threshold, general and unanswered empty."""
    out: dict[str, dict[str, dict[str, float]]] = {}
    for name, kinds in sets.items():
        cells: dict[str, dict[str, float]] = {"hit1_thr": {}, "general_empty": {}, "unanswered_empty": {}}
        for kind, a in kinds.items():
            passed = a["score"] >= a["thr"] + np.where(a["personal"], mine, other)
            half = a["dev"] if split == "dev" else ~a["dev"]
            for lang in LANGS:
                keep = half & (a["lang"] == lang)
                if kind == "on":
                    cells["hit1_thr"][lang] = float((a["right"] & passed)[keep].mean())
                else:
                    cells[f"{kind}_empty"][lang] = float((~passed)[keep].mean())
        out[name] = cells
    return out


def choose(sets: dict[str, Any], empty: float) -> dict[str, Any]:
    """Today, the best single offset and the best pair on the dev halves; each measured on both halves."""
    today = measure(sets, 0.0, 0.0, "dev")

    def eligible(m: dict, unanswered: bool = True) -> bool:
        return all(m[s]["general_empty"][la] >= empty and (not unanswered or m[s]["unanswered_empty"][la]
                                                           >= today[s]["unanswered_empty"][la])
                   for s in m for la in LANGS)

    def mean_hit(m: dict) -> float:
        return float(np.mean([m[s]["hit1_thr"][la] for s in m for la in LANGS]))

    best: dict[str, tuple] = {}
    for mine in OFFSETS:
        for other in OFFSETS:
            m = measure(sets, mine, other, "dev")
            key = (mean_hit(m), -abs(mine) - abs(other))
            kinds = (["two", "one"] if mine == other else ["two"]) if eligible(m) else []
            kinds += ["two, general only"] if eligible(m, unanswered=False) else []
            for kind in kinds:
                if kind not in best or key > best[kind][0]:
                    best[kind] = (key, mine, other)
    picks = {"today": (0.0, 0.0), **{k: (v[1], v[2]) for k, v in best.items()}}
    return {k: {"personal": p, "other": o, "dev": measure(sets, p, o, "dev"), "test": measure(sets, p, o, "test"),
                "mean_hit1_thr": {s: mean_hit(measure(sets, p, o, s)) for s in ("dev", "test")}}
            for k, (p, o) in picks.items()}


def report(chosen: dict[str, Any]) -> str:
    """One line per choice and half: hit@1 at the threshold, general and unanswered empty, per set."""
    lines = ["| choice (personal / other offset) | half | set | hit@1 at the threshold en / zh / sv "
             "| general empty | personal unanswered empty |", "|---|---|---|---|---|---|"]
    for kind, c in chosen.items():
        for split in ("dev", "test"):
            for name, m in c[split].items():
                f = {k: " / ".join(f"{v[la]:.3f}" if k == "hit1_thr" else f"{v[la]:.0%}" for la in LANGS)
                     for k, v in m.items()}
                lines.append(f"| {kind} ({c['personal']:+.3f} / {c['other']:+.3f}) | {split} | {name} | "
                             f"{f['hit1_thr']} | {f['general_empty']} | {f['unanswered_empty']} |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", nargs=2, default=None, help="bench.multilingual --records of both sets")
    parser.add_argument("--empty", type=float, default=0.90, help="general questions empty at least this")
    parser.add_argument("--json", dest="json_out", default=None)
    args = parser.parse_args()
    load1 = os.getloadavg()[0]
    sets = {}
    for i, (name, path) in enumerate((("first", multilingual.DATA), ("second", SECOND))):
        data = multilingual.load(path)
        result = json.loads(Path(args.records[i]).read_text()) if args.records else multilingual.run(data=data)
        sets[name] = table(result, data)
    chosen = choose(sets, args.empty)
    apart = separation(sets)
    print(report(chosen))
    for name, cells in apart.items():
        print(f"{name}: right answer above unanswered (AUC) " + " / ".join(f"{cells['auc'][la]:.2f}" for la in LANGS)
              + "; unanswered returned with the fact on its topic first "
              + " / ".join(f"{cells['near_share'][la]:.0%}" for la in LANGS))
    print(f"\n1-minute load average: {load1:.1f} at the start, {os.getloadavg()[0]:.1f} at the end")
    if args.json_out:
        personal_share = {name: {kind: float(a["personal"].mean()) for kind, a in kinds.items()}
                          for name, kinds in sets.items()}
        out = {"chosen": chosen, "separation": apart, "personal_share": personal_share, "empty": args.empty,
               "load_average": [load1, os.getloadavg()[0]]}
        Path(args.json_out).write_text(json.dumps(out, indent=1) + "\n")


if __name__ == "__main__":
    main()
