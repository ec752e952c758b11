"""Maintenance quality on the default model: what a default run archives, and what recall keeps.

    python -m bench.maintenance_quality [--json bench/results/maintenance_quality.json]

Two sets, per language (each memory's own, :func:`memory_core.language.text.detect_language`) and overall:

* the durability set (``bench/data/durability.json``, written apart from the demo bank): every case
  is imported as written (``written_at``), read by the durability rule, and one default cleanup
  runs 60 days later, when every transient case's time has passed. Reported on its test half (the
  rule was chosen on its dev half): durable memories archived (goal 0), transient ones archived
  (they are all due), and how often the rule's reading matches the label.
* the demo answer key (``memory_core/demo/data/truth.json``, for measuring only): the demo memories
  are imported into a fresh bank (memory id N is line N), one default run (the due steps: cleanup
  and merge) runs the day after the last logged turn, and each logged turn is recalled as of its
  own time before and after, without recording. Reported per half of the namespaces (no setting
  was chosen on either; the plan's defaults come from the durability set's dev half): memories
  archived outside the stale, trivia and log sets (goal 0), the share of those sets archived once
  due (active before the run and older than the plan's ``transient_after_days``, by when an
  unused transient memory without a date is past every window of the plan; goal 80%), automatic
  conflict resolutions that are not a planted contradiction (goal 0), and the on-topic turns with a relevant memory in
  their recall (goal: within one point of before), over all of them and over those with a relevant
  memory outside the three sets (a turn about a log only loses it once the log is due: that loss
  is the run doing its job). A hit on a merged memory counts for its members. The turns lost are
  split into those about the sets only and those whose memory was merged into one dated after the turn.
* the demo under the default schedule (:func:`schedule`): one run replayed against every earlier
  turn counts as lost a memory no run could have archived by the turn's time (a log asked about two
  days after it was written). So the history is also replayed in time order, each memory written at
  its time, each turn recalled and recorded as an agent's recall is, with maintenance run whenever
  its schedule says a step is due, against the same replay with none: what agents find with and
  without maintenance, memories archived outside the three sets, and the share of those sets live
  and due at the last turn that the runs archived.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import shutil
import tempfile
from collections import defaultdict
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from memory_core import MemoryBank, ScoringParams, demo  # noqa: E402
from memory_core.curation.maintenance import MaintenancePlan, due_steps  # noqa: E402
from memory_core.models import DEFAULT_IMPORTANCE, parse_time  # noqa: E402
from memory_core.language.text import detect_language  # noqa: E402

HERE = Path(__file__).resolve().parent
DURABILITY_SET = HERE / "data" / "durability.json"
LANGUAGES = ("en", "sv", "zh")


def _share(part: int, whole: int) -> float | None:
    return None if not whole else round(part / whole, 4)


def durability_set(path: Path = DURABILITY_SET, after_days: float = 60.0) -> dict[str, Any]:
    """Per split and language: durable and transient cases archived by one default cleanup, and the rule's accuracy."""
    data = json.loads(path.read_text(encoding="utf-8"))
    written = parse_time(data["written_at"])
    cases = data["cases"]
    with tempfile.TemporaryDirectory() as tmp, MemoryBank.open(Path(tmp) / "durability.duckdb") as bank:
        ids = bank.add_many([{"text": c["text"], "namespace": c["lang"], "category": c["category"], "kind": c["kind"],
                              "importance": c.get("importance", DEFAULT_IMPORTANCE), "created_at": written}
                             for c in cases])
        report = bank.maintain(now=written + timedelta(days=after_days), steps=["cleanup"])
        status = {m.id: m.status for m in bank.get_many(ids).values()}
        stored = {m.id: m.durability for m in bank.get_many(ids).values()}
    out: dict[str, Any] = {"after_days": after_days, "reviewed": report.counts["review"], "splits": {}}
    for split in ("dev", "test"):
        rows: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
        for c, i in zip(cases, ids):
            if c["split"] != split:
                continue
            for key in (c["lang"], "all"):
                r = rows[key]
                r[c["label"]] += 1
                r[f"{c['label']}_archived"] += status[i] == "archived"
                r["read_right"] += stored[i] == c["label"]
                r["cases"] += 1
        out["splits"][split] = {
            lang: {"durable": r["durable"], "durable_archived": r["durable_archived"],
                   "transient": r["transient"], "transient_archived": r["transient_archived"],
                   "transient_archived_share": _share(r["transient_archived"], r["transient"]),
                   "rule_accuracy": _share(r["read_right"], r["cases"])}
            for lang, r in sorted(rows.items())}
    return out


def _on_topic(bank: MemoryBank, queries: list[dict], truth: list[dict], merged_into: dict[int, int],
              namespaces: set[str], expendable: set[int], before: dict[int, bool] | None = None) -> dict[str, Any]:
    """On-topic turns of ``namespaces`` and those with a relevant memory (or a merge of one) in their
    recall; and the same for the turns with a relevant memory outside the stale, trivia and log
    sets (``expendable``): what should last once a run has done its job. With ``before`` (each
    turn's hit before the run), the turns lost, and of them those about the sets only and those
    whose relevant memory was merged into one dated after the turn (a merge carries its newest
    member's time, so a turn replayed at its own time cannot see it)."""
    n = hit = lasting = lasting_hit = 0
    found_at: dict[int, bool] = {}
    lost = {"lost": 0, "lost_sets_only": 0, "lost_later_merge": 0}
    params = ScoringParams()
    for turn, (q, t) in enumerate(zip(queries, truth)):
        if t["off_topic"] or q["namespace"] not in namespaces:
            continue
        relevant = set(t["relevant_lines"])
        keeps = bool(relevant - expendable)
        merges = {merged_into[i] for i in relevant if i in merged_into}
        hits = bank.recall(q["query"], namespace=q["namespace"], params=params, now=q["at"], record=False)
        found = found_at[turn] = bool({h.memory.id for h in hits} & (relevant | merges))
        n += 1
        hit += found
        lasting += keeps
        lasting_hit += keeps and found
        if before is not None and before[turn] and not found:
            lost["lost"] += 1
            lost["lost_sets_only"] += not keeps
            later = merges and max(m.created_at for m in bank.get_many(sorted(merges)).values()) > parse_time(q["at"])
            lost["lost_later_merge"] += keeps and bool(later)
    return {"on_topic": n, "relevant_hit": hit, "lasting": lasting, "lasting_hit": lasting_hit, "found": found_at,
            **(lost if before is not None else {})}


VARIANTS = {"default": MaintenancePlan(), "no_auto_resolve": MaintenancePlan(resolve_conflicts=False),
            "seed_004": MaintenancePlan(expire_rule="age_importance")}


def demo_key() -> dict[str, Any]:
    """The demo answer key's figures, per half of the namespaces and overall, for a default run, for
    one that leaves every conflict to an operator (what expiry alone does) and for seed 004's rule."""
    key, queries = demo.truth(), demo.queries()
    truth = key["queries"]
    expendable = {e["line"] for name in ("stale", "trivia", "logs") for e in key[name]}
    planted = {frozenset((c["old_line"], c["new_line"])) for c in key["contradictions"]}
    last_turn = max(parse_time(q["at"]) for q in queries)
    now = (last_turn + timedelta(days=1)).replace(hour=12, minute=0, second=0, microsecond=0)
    out: dict[str, Any] = {"now": now.isoformat(), "variants": {}}
    with tempfile.TemporaryDirectory() as tmp:
        imported = Path(tmp) / "imported.duckdb"
        with MemoryBank.open(imported) as bank:
            ids = bank.import_jsonl(demo.MEMORIES).ids
            assert ids == list(range(1, len(ids) + 1)), "memory id N is line N"
            names = sorted(ns for ns, n in bank.namespaces() if n)
            halves = {"first": set(names[::2]), "second": set(names[1::2]), "all": set(names)}
            before = {h: _on_topic(bank, queries, truth, {}, ns, expendable) for h, ns in halves.items()}
            memories = bank.get_many(ids)
            bank.backup(Path(tmp) / "copy.duckdb")
        for name, plan in VARIANTS.items():
            path = Path(tmp) / f"{name}.duckdb"
            shutil.copy(Path(tmp) / "copy.duckdb", path)
            with MemoryBank.open(path) as bank:
                report = bank.maintain(now=now, plan=plan)
                merged_into = {i: m.merged_into for i, m in bank.get_many(ids).items() if m.merged_into}
                after = {h: _on_topic(bank, queries, truth, merged_into, ns, expendable, before[h]['found'])
                         for h, ns in halves.items()}
            out["variants"][name] = _figures(report, memories, halves, before, after, expendable, planted, plan, now)
    return out


def _walk(path: Path, queries: list[dict], truth: list[dict],
          plan: MaintenancePlan | None) -> tuple[list[bool | None], dict[int, Any]]:
    """Replay the demo's history in time order into a fresh bank at ``path``: each memory is written
    at its ``created_at``, each turn is recalled at its own time and recorded (as an agent's recall
    is), and, with a ``plan``, maintenance runs whenever its schedule says a step is due (cleanup
    weekly, merge monthly) before the turn. Per turn: whether a relevant memory (or a merge of one)
    was in its recall (None for an off-topic turn); and by line, each memory as the walk leaves it."""
    lines = demo.MEMORIES.read_text(encoding="utf-8").splitlines()
    written = [parse_time(json.loads(line)["created_at"]) for line in lines]
    line_id: dict[int, int] = {}
    out: list[bool | None] = []
    params = ScoringParams()
    with MemoryBank.open(path) as bank:
        for q, t in zip(queries, truth):
            at = parse_time(q["at"])
            new = [n for n in range(len(line_id) + 1, len(lines) + 1) if written[n - 1] <= at]
            if new:
                ids = bank.import_jsonl(io.StringIO("\n".join(lines[n - 1] for n in new) + "\n")).ids
                line_id.update(zip(new, ids))
            if plan is not None and due_steps(bank, at, plan):
                bank.maintain(now=at, plan=plan)
            hits = {h.memory.id for h in bank.recall(q["query"], namespace=q["namespace"], params=params, now=at,
                                                     record=True)}
            if t["off_topic"]:
                out.append(None)
                continue
            relevant = {line_id[n] for n in t["relevant_lines"] if n in line_id}
            out.append(bool(hits & _with_merges(bank, relevant)))
        ids = bank.import_jsonl(io.StringIO("\n".join(lines[len(line_id):]) + "\n")).ids \
            if len(line_id) < len(lines) else []
        line_id.update(zip(range(len(line_id) + 1, len(lines) + 1), ids))
        final = bank.get_many(list(line_id.values()))
    return out, {n: final[i] for n, i in line_id.items()}


def _with_merges(bank: MemoryBank, ids: set[int]) -> set[int]:
    """``ids`` and every memory they were merged into, up the chain."""
    out, todo = set(ids), set(ids)
    while todo:
        todo = {m.merged_into for m in bank.get_many(sorted(todo)).values() if m.merged_into} - out
        out |= todo
    return out


def schedule(halves: dict[str, set[str]] | None = None) -> dict[str, Any]:
    """What agents find under the default schedule: the demo's history replayed with maintenance
    run whenever due, against the same history with none. Per half of the namespaces: the share of
    on-topic turns with a relevant memory in their recall, with and without maintenance; memories
    the runs archived outside the stale, trivia and log sets; and the share of those sets the runs
    archived of the ones live and due at the last run (older than ``transient_after_days``)."""
    key, queries = demo.truth(), demo.queries()
    truth = key["queries"]
    if halves is None:
        names = sorted({q["namespace"] for q in queries})
        halves = {"first": set(names[::2]), "second": set(names[1::2]), "all": set(names)}
    expendable = {e["line"] for name in ("stale", "trivia", "logs") for e in key[name]}
    plan = MaintenancePlan()
    with tempfile.TemporaryDirectory() as tmp:
        without, kept = _walk(Path(tmp) / "none.duckdb", queries, truth, None)
        with_runs, left = _walk(Path(tmp) / "runs.duckdb", queries, truth, plan)
    last = max(parse_time(q["at"]) for q in queries)
    archived = {n for n, m in left.items() if m.status == "archived" and kept[n].status != "archived"}
    out: dict[str, Any] = {"last_turn": last.isoformat(), "halves": {}}
    for half, spaces in halves.items():
        rows = [(a, b) for q, a, b in zip(queries, without, with_runs) if a is not None and q["namespace"] in spaces]
        mine = {n for n, m in kept.items() if m.namespace in spaces}
        due = {n for n in mine & expendable if kept[n].status == "active"
               and last - kept[n].created_at >= timedelta(days=plan.transient_after_days)}
        out["halves"][half] = {
            "on_topic_turns": len(rows), "without_maintenance": _share(sum(a for a, _ in rows), len(rows)),
            "with_maintenance": _share(sum(b for _, b in rows), len(rows)),
            "turns_lost": sum(a and not b for a, b in rows), "turns_gained": sum(b and not a for a, b in rows),
            "archived_outside": len((archived & mine) - expendable), "kept_sets": len(mine - expendable),
            "expendable_due": len(due), "expendable_due_archived": len(due & archived),
            "due_archived_share": _share(len(due & archived), len(due))}
    return out


def _figures(report: Any, memories: dict[int, Any], halves: dict[str, set[str]], before: dict, after: dict,
             expendable: set[int], planted: set[frozenset[int]], plan: MaintenancePlan, now: datetime) -> dict:
    expired = {i for c in report.changes if c.action == "expire" for i in c.memory_ids}
    resolved = [frozenset(c.memory_ids) for c in report.changes if c.action == "resolve_conflict"]
    out: dict[str, Any] = {"steps": report.steps, "counts": report.counts, "halves": {}}
    for half, spaces in halves.items():
        rows: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
        for i, m in memories.items():
            if m.namespace not in spaces:
                continue
            # Due: live before the run (the demo file holds some already archived: no run can
            # archive them again) and older than the plan's window for an undated transient memory,
            # the longest of its windows, with no use (turns are recalled without recording).
            due = m.status == "active" and (now - m.created_at) >= timedelta(days=plan.transient_after_days)
            for lang in (detect_language(m.text), "all"):
                r = rows[lang]
                if i in expendable:
                    r["expendable"] += 1
                    r["expendable_due"] += due
                    r["expendable_due_archived"] += due and i in expired
                else:
                    r["kept_sets"] += 1
                    r["archived_outside"] += i in expired
        out["halves"][half] = {
            "namespaces": sorted(spaces),
            "languages": {lang: {**r, "due_archived_share": _share(r["expendable_due_archived"], r["expendable_due"])}
                          for lang, r in sorted(rows.items())},
            "auto_resolved": sum(1 for p in resolved if _ns(memories, p) <= spaces),
            "auto_resolved_not_planted": sum(1 for p in resolved if p not in planted and _ns(memories, p) <= spaces),
            "on_topic_before": _share(before[half]["relevant_hit"], before[half]["on_topic"]),
            "on_topic_after": _share(after[half]["relevant_hit"], after[half]["on_topic"]),
            "on_topic_turns": before[half]["on_topic"],
            "lasting_before": _share(before[half]["lasting_hit"], before[half]["lasting"]),
            "lasting_after": _share(after[half]["lasting_hit"], after[half]["lasting"]),
            "lasting_turns": before[half]["lasting"],
            **{k: after[half][k] for k in ("lost", "lost_sets_only", "lost_later_merge")},
        }
    return out


def _ns(memories: dict[int, Any], pair: frozenset[int]) -> set[str]:
    return {memories[i].namespace for i in pair if i in memories}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", dest="json_out", default=None)
    args = parser.parse_args()
    result = {"measured_at": datetime.now().astimezone().isoformat(timespec="seconds"),
              "load_1min": os.getloadavg()[0], "durability_set": durability_set(), "demo": demo_key(),
              "schedule": schedule()}
    print(json.dumps(result, indent=1, ensure_ascii=False))
    if args.json_out:
        Path(args.json_out).write_text(json.dumps(result, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
