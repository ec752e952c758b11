"""LoCoMo evidence recall: how often recall's top k holds the turns that answer a question.

Each turn of a conversation becomes a memory dated by its session; each annotated question
(adversarial ones excluded: they have no evidence) is recalled "as of" the day after the last
session, and recall@k is the share of its evidence turns found in the top k.

    python -m bench.locomo ../shared/datasets/locomo/locomo10.json --conversations 1
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

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from memory_core import MemoryBank, ScoringParams  # noqa: E402


def session_time(text: str) -> datetime:
    """LoCoMo's '1:56 pm on 8 May, 2023' as an aware datetime."""
    return datetime.strptime(re.sub(r"\s+", " ", text.strip()), "%I:%M %p on %d %B, %Y").replace(tzinfo=timezone.utc)


def load(path: str, conversations: int | None) -> list[dict]:
    """Per conversation: its turns as memory rows (keyed by dia_id) and its answerable questions."""
    data = json.loads(Path(path).read_text())
    out = []
    for conv in data[:conversations]:
        c = conv["conversation"]
        turns = []
        last = None
        for key in sorted((k for k in c if re.fullmatch(r"session_\d+", k)), key=lambda k: int(k.split("_")[1])):
            when = session_time(c[f"{key}_date_time"])
            last = when if last is None or when > last else last
            for i, turn in enumerate(c[key]):
                turns.append({"dia_id": turn["dia_id"], "text": f"{turn['speaker']}: {turn['text']}",
                              "created_at": when + timedelta(seconds=i)})
        questions = [q for q in conv["qa"] if q.get("category") != 5 and q.get("evidence")]
        out.append({"id": conv["sample_id"], "turns": turns, "questions": questions,
                    "now": last + timedelta(days=1)})
    return out


def recall_at_k(bank: MemoryBank, namespace: str, questions: list[dict], ids: dict[str, int],
                params: ScoringParams, now: datetime) -> float:
    total = 0.0
    for q in questions:
        want = {ids[e] for e in q["evidence"] if e in ids}
        if not want:
            continue
        got = {h.memory.id for h in bank.recall(q["question"], namespace=namespace, params=params, now=now,
                                                  record=False)}
        total += len(want & got) / len(want)
    return total / len(questions)


def variants(k: int) -> dict[str, ScoringParams]:
    """The parameter sets compared, all with the same k and no threshold (recall@k, not precision)."""
    base = {"k": k, "threshold": 0.0}
    return {
        "relevance only (cosine)": ScoringParams(alpha=1, beta=0, gamma=0, delta=0, lexical_weight=0, **base),
        "relevance only (dense+lexical)": ScoringParams(alpha=1, beta=0, gamma=0, delta=0, **base),
        "default": ScoringParams().replace(**base),
        "generative-agents": ScoringParams.preset("generative-agents").replace(**base),
        "weighted-recall": ScoringParams.preset("weighted-recall").replace(**base),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dataset")
    parser.add_argument("--conversations", type=int, default=None, help="only the first N conversations")
    parser.add_argument("-k", type=int, default=10)
    parser.add_argument("--json", dest="json_out", default=None, help="write the results here")
    args = parser.parse_args()
    convs = load(args.dataset, args.conversations)
    results: dict[str, list[float]] = {}
    with tempfile.TemporaryDirectory() as tmp, MemoryBank.open(Path(tmp) / "locomo.duckdb") as bank:
        t0 = time.perf_counter()
        for conv in convs:
            new_ids = bank.add_many([{"text": t["text"], "namespace": conv["id"], "created_at": t["created_at"]}
                                     for t in conv["turns"]])
            ids = {t["dia_id"]: i for t, i in zip(conv["turns"], new_ids)}
            for name, params in variants(args.k).items():
                results.setdefault(name, []).append(
                    recall_at_k(bank, conv["id"], conv["questions"], ids, params, conv["now"]))
        elapsed = time.perf_counter() - t0
    n_q = sum(len(c["questions"]) for c in convs)
    print(f"LoCoMo: {len(convs)} conversation(s), {sum(len(c['turns']) for c in convs)} turns, {n_q} questions, "
          f"{elapsed:.0f} s")
    summary = {name: sum(v) / len(v) for name, v in results.items()}
    for name, value in summary.items():
        print(f"  recall@{args.k} {name:<32} {value:.3f}")
    if args.json_out:
        Path(args.json_out).write_text(json.dumps({"k": args.k, "conversations": len(convs), "questions": n_q,
                                                   "recall_at_k": summary, "per_conversation": results}, indent=2))


if __name__ == "__main__":
    main()
