"""LoCoMo evidence recall: how often recall's top k holds the turns that answer a question.

One bank namespace per conversation; every dialogue turn becomes a memory (``"Speaker: text"``)
dated by its session, with the turns just before and after it in the session as its ``context``
(indexed for lexical match, not shown). Every question of categories 1-4 (multi-hop, temporal,
open-domain, single-hop) is recalled "as of" the day after the last session, and recall@k is the
share of its annotated evidence turns found in the top k, for four modes:

* dense: cosine similarity alone;
* lexical: BM25 over text and context alone;
* hybrid: ``ScoringParams()``, the default an agent gets (relevance, recency, importance, frequency);
* no_lifts: hybrid without the neighbours' and the dates' lifts.

Then the questions that need no memory: category 5 (adversarial: about the conversation, but
unanswerable from it) and ``bench/data/general_questions.jsonl`` (general knowledge and chit-chat,
asked of every conversation's bank): the share where recall at the default threshold returns
nothing, against R@10 on categories 1-4 at threshold 0 and at the default threshold.

Settings were chosen on conversations 0-4; 5-9 are reported apart as held-out. Turn vectors are
embedded once per model and kept on disk (``bench/vectors.py``): a second run reads them.

    python -m bench.locomo DATASET [--conversations N] \
        [--json bench/results/locomo_recall.json] [--plots bench/results]

``DATASET`` is LoCoMo's ``locomo10.json`` (CC BY-NC 4.0, not shipped here).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import tempfile
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import numpy as np  # noqa: E402

from memory_core import MemoryBank, ScoringParams  # noqa: E402

from . import vectors as vector_cache  # noqa: E402

KS = (1, 3, 5, 10, 20)
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}
GENERAL = Path(__file__).resolve().parent / "data" / "general_questions.jsonl"
TUNE_SPLIT = range(0, 5)  # conversations the defaults were chosen on; the rest are held out
THRESHOLDS = tuple(round(t, 2) for t in np.arange(0.30, 0.501, 0.01))


def session_time(text: str) -> datetime:
    """LoCoMo's '1:56 pm on 8 May, 2023' as an aware datetime."""
    return datetime.strptime(re.sub(r"\s+", " ", text.strip()), "%I:%M %p on %d %B, %Y").replace(tzinfo=timezone.utc)


def load(path: str | os.PathLike, conversations: int | None = None, context: bool = True) -> list[dict[str, Any]]:
    """Per conversation: its turns as memory rows (with dia_id) and all its annotated questions.
    ``context=False`` stores each turn alone, as an agent that stores what it is told would."""
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    out = []
    for index, conv in enumerate(data[:conversations]):
        c = conv["conversation"]
        turns: list[dict[str, Any]] = []
        last = None
        for key in sorted((k for k in c if re.fullmatch(r"session_\d+", k)), key=lambda k: int(k.split("_")[1])):
            when = session_time(c[f"{key}_date_time"])
            last = when if last is None or when > last else last
            session = [f"{t['speaker']}: {t['text']}" for t in c[key]]
            for i, turn in enumerate(c[key]):
                # What an agent storing a finished conversation knows about a turn: the turns
                # around it. "Yes, last Sunday!" is findable by the question it answers.
                near = "\n".join(session[j] for j in (i - 1, i + 1) if 0 <= j < len(session)) if context else ""
                turns.append({"dia_id": turn["dia_id"], "text": session[i], "context": near,
                              "created_at": when + timedelta(seconds=i)})
        questions = [q for q in conv["qa"] if q.get("evidence")]
        out.append({"index": index, "id": conv.get("sample_id", f"conv-{index}"), "turns": turns,
                    "questions": questions, "now": last + timedelta(days=1)})
    return out


def modes(k: int, default: ScoringParams | None = None) -> dict[str, ScoringParams]:
    """The ranking modes compared, at the same k and no threshold (recall@k, not precision).
    Dense and lexical are relevance alone: the neighbours' lift, but not the dates' (issue 17).
    Hybrid is ``default``: the bank's active preset, what an agent gets (ScoringParams() if None)."""
    base = {"k": k, "threshold": 0.0}
    default = ScoringParams() if default is None else default
    return {
        "dense": default.replace(alpha=1, beta=0, gamma=0, delta=0, lexical_weight=0, date_weight=0, **base),
        "lexical": default.replace(alpha=1, beta=0, gamma=0, delta=0, lexical_weight=1, lexical_below_floor=1,
                                   date_weight=0, **base),
        "hybrid": default.replace(**base),
        "no_lifts": default.replace(neighbour_weight=0, date_weight=0, **base),
    }


def load_general(path: Path = GENERAL) -> list[str]:
    """The general-knowledge and chit-chat questions that need no memory."""
    return [json.loads(line)["question"] for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def run(dataset: str | os.PathLike, conversations: int | None = None, general: list[str] | None = None,
        max_questions: int | None = None, only: list[int] | None = None, records_file: Path | None = None,
        log=print, context: bool = True) -> dict[str, Any]:
    """Build the banks, ask every question; return per-question records (see :func:`summarize`).

    ``max_questions`` keeps only the first questions of each conversation (for a quick run);
    ``only`` picks conversations by index. With ``records_file`` each finished conversation's
    records are appended to it as one JSON line, and conversations already there are not run again,
    so a long run can be resumed or split over processes and summarized together. ``context=False``
    stores the turns without their neighbouring turns.
    """
    convs = [c for c in load(dataset, conversations, context) if only is None or c["index"] in only]
    general = load_general() if general is None else general
    done: dict[int, dict[str, Any]] = {}
    if records_file is not None and Path(records_file).exists():
        for line in Path(records_file).read_text(encoding="utf-8").splitlines():
            if line.strip():
                part = json.loads(line)
                done[part["conversation"]] = part
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp, MemoryBank.open(Path(tmp) / "locomo.duckdb") as bank:
        todo = [c for c in convs if c["index"] not in done]
        vecs = vector_cache.vectors((t["text"] for c in todo for t in c["turns"]),
                                    lambda texts: bank.embedder.encode(texts, kind="memory"), bank.model,
                                    bank.embedder.dim)
        for conv in todo:
            part = run_conversation(bank, conv, general, max_questions, vecs)
            done[conv["index"]] = part
            if records_file is not None:
                with open(records_file, "a", encoding="utf-8") as fh:
                    fh.write(json.dumps(part) + "\n")
            log(f"  {conv['id']}: {part['turns']} turns, {len(part['records'])} questions of categories 1-4 "
                f"({time.perf_counter() - t0:.0f} s)")
    return merge_parts([done[c["index"]] for c in convs if c["index"] in done])


def run_conversation(bank: MemoryBank, conv: dict[str, Any], general: list[str],
                     max_questions: int | None = None, vecs: dict[str, Any] | None = None) -> dict[str, Any]:
    """One conversation's bank namespace, built through the public API (each turn's vector from
    ``vecs`` when there), and its questions asked."""
    started = time.perf_counter()
    ns = conv["id"]
    given = vecs or {}
    new_ids = bank.add_many([{"text": t["text"], "context": t["context"] or None, "namespace": ns,
                              "created_at": t["created_at"],
                              **({"embedding": given[t["text"]]} if t["text"] in given else {})}
                             for t in conv["turns"]],
                            dedupe=False)  # each turn is its own memory, even one that repeats an earlier turn's words
    ids = {t["dia_id"]: i for t, i in zip(conv["turns"], new_ids)}
    records: list[dict[str, Any]] = []
    no_memory: list[dict[str, Any]] = []
    kmax = max(KS)
    questions = conv["questions"][:max_questions]
    # Recall embeds each query on its own; embedding them in one batch first is what makes a
    # run of ~2,000 questions take minutes instead of an hour on a busy machine.
    bank.embedder.warm([q["question"] for q in questions] + list(general))
    for q in questions:
        want = sorted({ids[e] for e in q["evidence"] if e in ids})
        if q["category"] == 5:
            no_memory.append(_no_memory(bank, q["question"], ns, conv, "adversarial"))
            continue
        if not want:
            continue
        rec: dict[str, Any] = {"conversation": conv["index"], "category": q["category"], "ranks": {}, "scores": []}
        for name, params in modes(kmax, bank.active_preset()[1]).items():
            hits = bank.recall(q["question"], namespace=ns, params=params, now=conv["now"], record=False)
            got = [h.memory.id for h in hits]
            rec["ranks"][name] = [got.index(m) + 1 if m in got else None for m in want]
            if name == "hybrid":
                by_id = {h.memory.id: h.score for h in hits}
                rec["scores"] = [by_id.get(m) for m in want]
        records.append(rec)
    for text in general:
        no_memory.append(_no_memory(bank, text, ns, conv, "general"))
    return {"conversation": conv["index"], "turns": len(conv["turns"]), "records": records,
            "no_memory": no_memory, "threshold": bank.active_preset()[1].threshold,
            "seconds": time.perf_counter() - started}


def merge_parts(parts: list[dict[str, Any]]) -> dict[str, Any]:
    """Per-conversation results as one (the shape :func:`summarize` takes)."""
    return {"conversations": [p["conversation"] for p in parts], "turns": sum(p["turns"] for p in parts),
            "records": [r for p in parts for r in p["records"]],
            "no_memory": [x for p in parts for x in p["no_memory"]],
            "threshold": parts[0]["threshold"] if parts else ScoringParams().threshold,
            "seconds": sum(p["seconds"] for p in parts)}


def _no_memory(bank: MemoryBank, query: str, ns: str, conv: dict[str, Any], kind: str) -> dict[str, Any]:
    """Whether recall with the default returns nothing, and the best score any memory reaches.

    One recall at k=1 without a threshold gives both: the default's result is empty exactly when
    that best score is under the default threshold (scores do not depend on k or the threshold).
    """
    default = bank.active_preset()[1]
    best = bank.recall(query, namespace=ns, params=default.replace(k=1, threshold=0.0), now=conv["now"],
                       record=False)
    top = best[0].score if best else 0.0
    return {"set": kind, "conversation": conv["index"], "empty": top < default.threshold or top <= 0,
            "top_score": top}


def recall_at(records: list[dict[str, Any]], mode: str, k: int, threshold: float = 0.0) -> float | None:
    """Mean share of evidence turns in the top k (scoring at least ``threshold``, hybrid only)."""
    if not records:
        return None
    total = 0.0
    for r in records:
        ranks = r["ranks"][mode]
        ok = [rank is not None and rank <= k for rank in ranks]
        if threshold > 0:
            ok = [o and s is not None and s >= threshold for o, s in zip(ok, r["scores"])]
        total += sum(ok) / len(ranks)
    return total / len(records)


def summarize(result: dict[str, Any]) -> dict[str, Any]:
    """Recall@k by split, mode and category; the no-memory shares and the threshold trade-off."""
    recs = result["records"]
    splits = {"all": recs, "tune (0-4)": [r for r in recs if r["conversation"] in TUNE_SPLIT],
              "held-out (5-9)": [r for r in recs if r["conversation"] not in TUNE_SPLIT]}
    out: dict[str, Any] = {"recall": {}, "questions": {}}
    for split, rs in splits.items():
        if not rs:
            continue
        out["questions"][split] = len(rs)
        out["recall"][split] = {
            mode: {"all": {k: recall_at(rs, mode, k) for k in KS},
                   **{CATEGORIES[c]: {k: recall_at([r for r in rs if r["category"] == c], mode, k) for k in KS}
                      for c in CATEGORIES if any(r["category"] == c for r in rs)}}
            for mode in modes(1)
        }
    thr = result["threshold"]
    nm = result["no_memory"]
    out["no_memory"] = {
        "threshold": thr,
        **{s: {"questions": sum(1 for x in nm if x["set"] == s),
               "empty_at_default": _mean([x["empty"] for x in nm if x["set"] == s])}
           for s in ("general", "adversarial")},
        "r10_threshold_0": recall_at(recs, "hybrid", 10),
        "r10_default_threshold": recall_at(recs, "hybrid", 10, thr),
        "r5_threshold_0": recall_at(recs, "hybrid", 5),
        "r5_default_threshold": recall_at(recs, "hybrid", 5, thr),
    }
    out["threshold_sweep"] = [
        {"threshold": t,
         "general_empty": _mean([x["top_score"] < t for x in nm if x["set"] == "general"]),
         "adversarial_empty": _mean([x["top_score"] < t for x in nm if x["set"] == "adversarial"]),
         "r10": recall_at(recs, "hybrid", 10, t)}
        for t in (0.0,) + THRESHOLDS
    ]
    return out


def _mean(values: list) -> float | None:
    return float(np.mean(values)) if values else None


def report(summary: dict[str, Any], result: dict[str, Any]) -> str:
    """Markdown tables of a summary."""
    lines = [f"{len(result['conversations'])} conversation(s), {result['turns']} turns as memories, "
             f"{summary['questions'].get('all', 0)} questions of categories 1-4, {result['seconds']:.0f} s", ""]
    for split, by_mode in summary["recall"].items():
        lines += [f"**{split}** ({summary['questions'][split]} questions)", "",
                  "| mode | " + " | ".join(f"R@{k}" for k in KS) + " |", "|---" * (len(KS) + 1) + "|"]
        for mode, cats in by_mode.items():
            lines.append(f"| {mode} | " + " | ".join(f"{cats['all'][k]:.3f}" for k in KS) + " |")
        lines += ["", "| hybrid by category | " + " | ".join(f"R@{k}" for k in KS) + " |", "|---" * (len(KS) + 1) + "|"]
        for cat, vals in by_mode["hybrid"].items():
            if cat != "all":
                lines.append(f"| {cat} | " + " | ".join(f"{vals[k]:.3f}" for k in KS) + " |")
        lines.append("")
    nm = summary["no_memory"]
    lines += [f"No memory needed, default threshold {nm['threshold']}:", "",
              "| set | questions | recall returns nothing |", "|---|---|---|"]
    for s in ("general", "adversarial"):
        if nm[s]["questions"]:
            lines.append(f"| {s} | {nm[s]['questions']} | {nm[s]['empty_at_default']:.1%} |")
    lines += ["", f"Hybrid R@10 on categories 1-4: {nm['r10_threshold_0']:.3f} at threshold 0, "
              f"{nm['r10_default_threshold']:.3f} at {nm['threshold']} "
              f"({100 * (nm['r10_threshold_0'] - nm['r10_default_threshold']):.1f} points); "
              f"R@5 {nm['r5_threshold_0']:.3f} / {nm['r5_default_threshold']:.3f}."]
    return "\n".join(lines)


def plots(summary: dict[str, Any], folder: Path) -> list[Path]:
    """Recall@k by mode and split, and the threshold trade-off, as PNG (HTML if export fails)."""
    import plotly.graph_objects as go

    folder.mkdir(parents=True, exist_ok=True)
    figs = {}
    fig = go.Figure()
    for split, by_mode in summary["recall"].items():
        for mode, cats in by_mode.items():
            fig.add_trace(go.Scatter(x=list(KS), y=[cats["all"][k] for k in KS], mode="lines+markers",
                                     name=f"{mode}, {split}",
                                     line={"dash": {"all": "solid", "tune (0-4)": "dot"}.get(split, "dash")}))
    fig.update_layout(title="LoCoMo evidence recall@k, categories 1-4", xaxis_title="k", yaxis_title="recall@k",
                      xaxis={"type": "log", "tickvals": list(KS)}, yaxis={"range": [0, 1]}, width=900, height=520)
    figs["locomo_recall_at_k"] = fig
    sweep = summary["threshold_sweep"][1:]
    fig = go.Figure()
    xs = [s["threshold"] for s in sweep]
    fig.add_trace(go.Scatter(x=xs, y=[s["general_empty"] for s in sweep], name="general questions: nothing returned"))
    fig.add_trace(go.Scatter(x=xs, y=[s["adversarial_empty"] for s in sweep],
                             name="category 5 (adversarial): nothing returned"))
    fig.add_trace(go.Scatter(x=xs, y=[s["r10"] for s in sweep], name="R@10, categories 1-4"))
    thr = summary["no_memory"]["threshold"]
    fig.add_vline(x=thr, line_dash="dot", annotation_text=f"default {thr}")
    fig.update_layout(title="What the threshold costs and buys (hybrid default)", xaxis_title="threshold",
                      yaxis={"range": [0, 1]}, width=900, height=520)
    figs["locomo_threshold"] = fig
    written = []
    for name, fig in figs.items():
        try:
            path = folder / f"{name}.png"
            fig.write_image(path)
        except Exception as exc:  # kaleido needs a browser; keep the interactive figure instead
            print(f"PNG export failed ({exc}); writing HTML")
            path = folder / f"{name}.html"
            fig.write_html(path, include_plotlyjs="cdn")
        written.append(path)
    return written


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dataset")
    parser.add_argument("--conversations", type=int, default=None, help="only the first N conversations")
    parser.add_argument("--questions", type=int, default=None, help="only the first N questions of each")
    parser.add_argument("--only", default=None, help="conversation indices to run, e.g. 0-4 or 5,7")
    parser.add_argument("--records", default=None,
                        help="append each conversation's records to this JSONL and skip those already there "
                             "(resume, or split a run over processes)")
    parser.add_argument("--no-context", action="store_true",
                        help="store each turn without its neighbouring turns as context")
    parser.add_argument("--json", dest="json_out", default=None, help="write the summary here")
    parser.add_argument("--plots", default=None, help="write PNG plots into this folder")
    args = parser.parse_args()
    only = None
    if args.only:
        only = []
        for part in args.only.split(","):
            lo, _, hi = part.partition("-")
            only.extend(range(int(lo), int(hi or lo) + 1))
    result = run(args.dataset, args.conversations, max_questions=args.questions, only=only,
                 records_file=Path(args.records) if args.records else None, context=not args.no_context)
    summary = summarize(result)
    print(report(summary, result))
    if args.json_out:
        Path(args.json_out).write_text(json.dumps(
            {"conversations": result["conversations"], "turns": result["turns"], "seconds": result["seconds"],
             "params": ScoringParams().to_dict(), "context": not args.no_context, **summary}, indent=1) + "\n")
    if args.plots:
        for path in plots(summary, Path(args.plots)):
            print(f"wrote {path}")


if __name__ == "__main__":
    main()
