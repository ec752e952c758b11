"""LongMemEval-S turn recall: how often recall's top k holds the turns that answer a question.

A second public conversation set beside LoCoMo (``bench/locomo.py``), so that no lift or weight is
kept that costs one set what it gains on the other. ``bench/data/longmemeval_s_100.json.xz`` holds
100 questions of LongMemEval's ``longmemeval_s`` setting (source and licence:
``bench/data/longmemeval.md``), each with its haystack of about 50 chat sessions. Turns that hold
the evidence are labelled, which makes turn-level recall measurable.

One bank namespace per question; every turn of its haystack is a memory (``"User: ..."`` or
``"Assistant: ..."``, without context) dated by its session; the question is recalled "as of" its
own date (or the last session's, if later). recall@k is the share of the question's evidence turns
in the top k, for cosine alone (``dense``) and the bank's active preset (``hybrid``). Abstention
questions (ids ending in ``_abs``) and others without labelled turns are left out of recall.

Questions are split in two halves by their place in the file: ``dev`` (odd places) for choosing
settings, ``test`` (even places) for reporting. Every distinct turn is embedded once, in batches, in
file order, and its vector kept on disk (``bench/vectors.py``, under the machine's cache folder or
``--cache``); each question's bank takes the vectors as given. The haystacks share few turns (46,258
distinct of 49,094, 47 million characters), so the first pass is the long part and every later run
(another setting, ``bench/lifts.py``) reads vectors; ``--embed-only`` runs that pass alone, and a pass
stopped early leaves the first questions whole. ``--records`` keeps each finished question so a run
can be resumed.

    python -m bench.longmemeval [--split test] [--questions N] [--records FILE] [--json FILE] [--cache DIR]
    python -m bench.longmemeval --compact SOURCE.json.gz    rebuild the data file from the original
"""

from __future__ import annotations

import argparse
import gzip
import json
import lzma
import os
import tempfile
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from memory_core import MemoryBank, ScoringParams  # noqa: E402

from . import vectors as vector_cache  # noqa: E402

DATA = Path(__file__).resolve().parent / "data" / "longmemeval_s_100.json.xz"
KS = (1, 3, 5, 10, 20)
SPLITS = ("all", "dev", "test")
ROLES = {"u": "User", "a": "Assistant"}


def parse_date(text: str) -> datetime:
    """LongMemEval's '2023/05/30 (Tue) 23:40' as an aware datetime (UTC)."""
    day, _, clock = text.partition(" (")
    clock = clock.split(") ", 1)[1]
    return datetime.strptime(f"{day} {clock}", "%Y/%m/%d %H:%M").replace(tzinfo=timezone.utc)


def compact(source: str | os.PathLike, out: Path = DATA) -> Path:
    """The original per-question list (gzip JSON) as this benchmark's data file: each session once
    (``sessions``: id -> turns ``[role letter, text]`` plus ``1`` on an evidence turn), questions
    referring to their sessions by id, xz-compressed."""
    data = json.loads(gzip.open(source, "rt", encoding="utf-8").read())
    sessions: dict[str, list[list[Any]]] = {}
    questions = []
    for q in data:
        for sid, turns in zip(q["haystack_session_ids"], q["haystack_sessions"]):
            sessions[sid] = [[t["role"][0], t["content"]] + ([1] if t.get("has_answer") else []) for t in turns]
        questions.append({key: q[key] for key in ("question_id", "question_type", "question", "question_date",
                                                   "answer", "answer_session_ids", "haystack_session_ids",
                                                   "haystack_dates")})
    blob = json.dumps({"questions": questions, "sessions": sessions}, ensure_ascii=False, separators=(",", ":"))
    out.write_bytes(lzma.compress(blob.encode("utf-8"), preset=9 | lzma.PRESET_EXTREME))
    return out


def load(path: Path = DATA, split: str = "all", limit: int | None = None) -> list[dict[str, Any]]:
    """The questions of ``split`` (at most ``limit``), each with its haystack as memory rows.

    Per question: ``id``, ``type``, ``question``, ``answer``, ``now`` (when it is asked), ``split``,
    and ``turns``: ``{"text", "created_at", "evidence"}`` in session order, a session's turns one
    second apart from its date.
    """
    if split not in SPLITS:
        raise ValueError(f"split must be one of {', '.join(SPLITS)}, got {split!r}")
    raw = json.loads(lzma.decompress(Path(path).read_bytes()).decode("utf-8"))
    out = []
    for place, q in enumerate(raw["questions"]):
        half = "dev" if place % 2 == 1 else "test"
        if split != "all" and half != split:
            continue
        turns = []
        for sid, date in zip(q["haystack_session_ids"], q["haystack_dates"]):
            start = parse_date(date)
            for i, turn in enumerate(raw["sessions"][sid]):
                turns.append({"text": f"{ROLES[turn[0]]}: {turn[1]}", "created_at": start + timedelta(seconds=i),
                              "evidence": len(turn) > 2 and bool(turn[2])})
        asked = parse_date(q["question_date"])
        last = max(t["created_at"] for t in turns)
        out.append({"id": q["question_id"], "type": q["question_type"], "question": q["question"],
                    "answer": q["answer"], "split": half, "turns": turns,
                    "now": max(asked, last + timedelta(minutes=1))})
        if limit is not None and len(out) >= limit:
            break
    return out


def modes(k: int, default: ScoringParams) -> dict[str, ScoringParams]:
    """Cosine alone, the default, and the default without the neighbours' and dates' lifts
    (``no_lifts``: what the lifts, chosen on LoCoMo, cost or earn here), at the same k and no threshold."""
    base = {"k": k, "threshold": 0.0}
    return {"dense": default.replace(alpha=1, beta=0, gamma=0, delta=0, lexical_weight=0, date_weight=0,
                                     neighbour_weight=0, min_relevance=0, **base),
            "hybrid": default.replace(**base),
            "no_lifts": default.replace(neighbour_weight=0, date_weight=0, **base)}


def run_question(bank: MemoryBank, q: dict[str, Any], params: dict[str, ScoringParams] | None = None,
                 vecs: dict[str, Any] | None = None) -> dict[str, Any]:
    """One question's haystack in its own namespace, built through the public API (with each turn's
    vector from ``vecs`` when given), and the question recalled in every mode; ranks of the evidence
    turns (None beyond the largest k)."""
    started = time.perf_counter()
    ns = f"lme-{q['id']}"
    given = vecs or {}
    ids = bank.add_many([{"text": t["text"], "namespace": ns, "created_at": t["created_at"],
                          **({"embedding": given[t["text"]]} if t["text"] in given else {})} for t in q["turns"]],
                        dedupe=False)
    want = [i for i, t in zip(ids, q["turns"]) if t["evidence"]]
    params = modes(max(KS), bank.active_preset()[1]) if params is None else params
    ranks = {}
    for name, p in params.items():
        got = [h.memory.id for h in bank.recall(q["question"], namespace=ns, params=p, now=q["now"], record=False)]
        ranks[name] = [got.index(m) + 1 if m in got else None for m in want]
    return {"id": q["id"], "type": q["type"], "split": q["split"], "turns": len(ids), "ranks": ranks,
            "seconds": time.perf_counter() - started}


def embed_turns(bank: MemoryBank, questions: list[dict[str, Any]], cache: Path | None = None,
                log=print) -> dict[str, Any]:
    """Every distinct turn's vector of the bank's model, from the cache or embedded once (and cached)."""
    embedder = bank.embedder
    t0 = time.perf_counter()
    return vector_cache.vectors(
        (t["text"] for q in questions for t in q["turns"]), lambda texts: embedder.encode(texts, kind="memory"),
        bank.model, embedder.dim, cache,
        lambda done, total: log(f"  embedded {done}/{total} turns ({time.perf_counter() - t0:.0f} s)"))


def run(path: Path = DATA, split: str = "all", limit: int | None = None, records_file: Path | None = None,
        log=print, cache: Path | None = None, embed_only: bool = False) -> list[dict[str, Any]]:
    """Every chosen question in one temporary bank, its turns' vectors from the cache (see
    :func:`embed_turns`); records of those already in ``records_file`` are read back instead of run
    again, and each new one is appended to it. ``embed_only`` fills the cache and stops."""
    done: dict[str, dict[str, Any]] = {}
    if records_file is not None and records_file.exists():
        for line in records_file.read_text(encoding="utf-8").splitlines():
            if line.strip():
                rec = json.loads(line)
                done[rec["id"]] = rec
    questions = load(path, split, limit)
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp, MemoryBank.open(Path(tmp) / "lme.duckdb") as bank:
        todo = [q for q in questions if q["id"] not in done]
        vecs = embed_turns(bank, todo, cache, log) if todo else {}
        if embed_only:
            return []
        for q in todo:
            rec = run_question(bank, q, vecs=vecs)
            done[q["id"]] = rec
            if records_file is not None:
                with open(records_file, "a", encoding="utf-8") as fh:
                    fh.write(json.dumps(rec) + "\n")
            log(f"  {q['id']}: {rec['turns']} turns ({time.perf_counter() - t0:.0f} s)")
    return [done[q["id"]] for q in questions]


def recall_at(records: list[dict[str, Any]], mode: str, k: int) -> float | None:
    """Mean share of evidence turns in the top k, over questions with evidence turns."""
    scored = [r["ranks"][mode] for r in records if r["ranks"][mode]]
    if not scored:
        return None
    return sum(sum(1 for rank in ranks if rank is not None and rank <= k) / len(ranks) for ranks in scored) / len(scored)


def summarize(records: list[dict[str, Any]]) -> dict[str, Any]:
    """recall@k per split and mode, and the number of questions with evidence turns."""
    out: dict[str, Any] = {}
    for split in SPLITS:
        rs = [r for r in records if split == "all" or r["split"] == split]
        mode_names = list(rs[0]["ranks"]) if rs else []
        out[split] = {"questions": sum(1 for r in rs if any(r["ranks"][m] for m in mode_names)),
                      **{mode: {k: recall_at(rs, mode, k) for k in KS} for mode in mode_names}}
    return out


def report(summary: dict[str, Any]) -> str:
    """Markdown: recall@k by split and mode."""
    lines = ["| split | mode | questions | " + " | ".join(f"R@{k}" for k in KS) + " |",
             "|---|---|---|" + "---|" * len(KS)]
    for split, s in summary.items():
        for mode, vals in s.items():
            if mode != "questions":
                lines.append(f"| {split} | {mode} | {s['questions']} | "
                             + " | ".join("-" if vals[k] is None else f"{vals[k]:.3f}" for k in KS) + " |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--split", default="all", choices=SPLITS)
    parser.add_argument("--questions", type=int, default=None, help="only the first N questions of the split")
    parser.add_argument("--records", default=None, help="append each question's record here; skip those there")
    parser.add_argument("--json", dest="json_out", default=None, help="write the summary here")
    parser.add_argument("--cache", default=None, help="folder of cached turn vectors (default: the cache folder's)")
    parser.add_argument("--embed-only", action="store_true", help="fill the vector cache and stop")
    parser.add_argument("--compact", default=None, metavar="SOURCE",
                        help="rebuild the data file from LongMemEval's longmemeval_s JSON (gzip) and stop")
    args = parser.parse_args()
    if args.compact:
        print(f"wrote {compact(args.compact)}")
        return
    records = run(split=args.split, limit=args.questions, records_file=Path(args.records) if args.records else None,
                  cache=Path(args.cache) if args.cache else None, embed_only=args.embed_only)
    if args.embed_only:
        return
    summary = summarize(records)
    print(report(summary))
    if args.json_out:
        Path(args.json_out).write_text(json.dumps({"split": args.split, "questions_run": len(records),
                                                   "load_average": os.getloadavg(), "summary": summary},
                                                  indent=1) + "\n")


if __name__ == "__main__":
    main()
