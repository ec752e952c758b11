"""Scheduled maintenance (MemoryBank.maintain: maintenance.plan_run, then apply_maintenance) on small realistic banks.

Every bank here is built with explicit dates, access times and importances, and every run gets a
fixed ``now``, so nothing depends on the wall clock. What an operator relies on:

* a dry run lists exactly what a real run would change, and changes nothing;
* a real run expires old, unimportant, unused memories (archived, undoable as one operation),
  merges duplicates, resolves only clear contradictions, and writes one report;
* pinned memories are never touched; a hard expiry leaves no copy of the text anywhere;
* the schedule: cleanup weekly, merges monthly.
"""

from __future__ import annotations

import io
import math
from datetime import datetime, timedelta, timezone
from pathlib import Path

import numpy as np
import pytest

from memory_core import MemoryBank, ValidationError
from memory_core.curation import conflicts, maintenance
from memory_core.curation.maintenance import STEPS, MaintenancePlan


@pytest.fixture(scope="session")
def embedder():
    """all-MiniLM-L6-v2 rather than the default model: the merge and conflict bars these tests exercise were measured with it."""
    from memory_core.embedding.embedder import MINILM_MODEL, get_embedder

    return get_embedder(MINILM_MODEL)

NOW = datetime(2026, 11, 30, 12, 0, tzinfo=timezone.utc)


def ago(days: float) -> datetime:
    return NOW - timedelta(days=days)


# key, namespace, text, importance, created (days before NOW), last accessed (days before NOW or None),
# access count, pinned
REALISTIC = [
    # expire: old, unimportant, never or long ago recalled
    ("run_log", "alice", "Long run: 9 km at 6:40/km", 0.2, 400, None, 0, False),
    ("meatballs", "alice", "Complained that IKEA meatballs are overrated", 0.3, 300, 200, 1, False),
    ("endpoints", "bob", "Side project: wrote the first API endpoints for groups", 0.3, 200, None, 0, False),
    # keep: important
    ("peanuts", "alice", "Is allergic to peanuts", 0.9, 500, 30, 6, False),
    # keep: importance exactly at the bar (expiry needs importance < 0.7)
    ("swedish", "alice", "Takes Swedish lessons on Tuesday evenings", 0.7, 400, None, 0, False),
    # keep: recalled recently
    ("octopus", "alice", "Watched a documentary about octopuses", 0.3, 250, 20, 2, False),
    # keep: recalled 179 days ago, one day short of "unused for 180 days"
    ("flat", "alice", "Viewed a flat in Södermalm with a tiny kitchen", 0.5, 181, 179, 1, False),
    # keep: too young
    ("ramen", "alice", "Tried a new ramen place near the office", 0.4, 100, None, 0, False),
    # keep: pinned by an operator
    ("cat", "alice", "Her cat stole a cinnamon bun off the table", 0.2, 365, None, 0, True),
    ("engineer", "bob", "Works as a backend engineer", 0.8, 300, 3, 4, False),
]
EXPIRING = {"run_log", "meatballs", "endpoints"}
QUERIES = [("alice", "what did I run"), ("alice", "food"), ("alice", "kitchen"), ("bob", "side project"),
           ("bob", "what is my job")]


def build(bank: MemoryBank, rows=REALISTIC, transient=EXPIRING) -> dict[str, int]:
    # dedupe=False: exact duplicates are stored as given (a bank written before adds reinforced
    # the memory already there, or by a caller who asked for copies), for the merge step to find.
    # The memories the run should expire are marked transient (logs and passing remarks), the
    # rest durable, whatever the durability rule reads in their texts.
    ids = bank.add_many([
        {"text": text, "namespace": ns, "importance": imp, "created_at": ago(created),
         "last_accessed_at": None if used is None else ago(used), "access_count": count, "pinned": pinned,
         "durability": "transient" if key in transient else "durable"}
        for key, ns, text, imp, created, used, count, pinned in rows], dedupe=False)
    return dict(zip([r[0] for r in rows], ids))


def content(bank: MemoryBank, queries=QUERIES) -> tuple[str, list]:
    """Everything a user can see: every memory with every field, and what recall returns."""
    out = io.StringIO()
    bank.export_jsonl(out)
    results = [[(h.memory.id, round(h.score, 6)) for h in bank.recall(q, namespace=ns, now=NOW, k=10,
                                                                        threshold=0, record=False)]
               for ns, q in queries]
    return "\n".join(sorted(out.getvalue().splitlines())), results


def curation_state(bank: MemoryBank) -> tuple:
    return ([(c.id, c.status) for c in bank.conflicts(status=None)], [(m.id, m.undone_at) for m in bank.merges()],
            [e.id for e in bank.events(limit=10_000)])


def changes_of(report: maintenance.MaintenanceReport, action: str | None = None) -> list[tuple[str, tuple[int, ...]]]:
    return sorted((c.action, tuple(c.memory_ids)) for c in report.changes if action in (None, c.action))


def tier_of(age_days: float) -> str:
    """The design's tiers, written out independently: hot < 7 days, warm 7-90, cold > 90."""
    return "hot" if age_days < 7 else "warm" if age_days <= 90 else "cold"


# -- dry run -----------------------------------------------------------------------------------


def test_dry_run_lists_exactly_the_expiring_memories_and_changes_nothing(bank: MemoryBank) -> None:
    ids = build(bank)
    before, state = content(bank), curation_state(bank)

    report = bank.maintain(dry_run=True, now=NOW, steps=list(STEPS))

    assert report.dry_run is True
    expired = {mid for c in report.changes if c.action == "expire" for mid in c.memory_ids}
    assert expired == {ids[k] for k in EXPIRING}
    assert report.counts["expired"] == 3
    assert all(c.group_id is None for c in report.changes)  # nothing was done, so nothing to undo
    # The preview tells an operator why: the text, its age, importance and last use.
    by_id = {c.memory_ids[0]: c for c in report.changes if c.action == "expire"}
    assert "Long run: 9 km at 6:40/km" in by_id[ids["run_log"]].detail
    assert "never recalled" in by_id[ids["run_log"]].detail
    assert "last recalled" in by_id[ids["meatballs"]].detail
    assert by_id[ids["endpoints"]].namespace == "bob"

    assert content(bank) == before
    assert curation_state(bank) == state
    runs = bank.maintenance_runs()
    assert len(runs) == 1 and runs[0]["dry_run"] is True and runs[0]["id"] == report.run_id
    assert runs[0]["report"]["counts"]["expired"] == 3
    assert bank.maintenance_runs(include_dry_runs=False) == []


# -- real run ----------------------------------------------------------------------------------


def test_real_run_archives_the_expiring_memories_and_writes_one_report(bank: MemoryBank) -> None:
    ids = build(bank)
    dupes = bank.add_many([
        {"text": "Prefers dark mode in every editor", "namespace": "bob", "importance": 0.6, "created_at": ago(40),
         "last_accessed_at": ago(2), "access_count": 3},
        {"text": "Prefers dark mode in every editor", "namespace": "bob", "importance": 0.5, "created_at": ago(20)},
    ], dedupe=False)  # exact duplicates, as build() stores them

    report = bank.maintain(now=NOW, steps=list(STEPS))

    assert report.dry_run is False
    for key, mid in ids.items():
        assert bank.get(mid).status == ("archived" if key in EXPIRING else "active"), key
    assert report.counts["expired"] == 3
    assert report.counts["merged"] == 2 and report.counts["merges"] == 1
    assert report.counts["superseded"] == 0
    assert report.counts["conflicts_detected"] == len(bank.conflicts(status=None))
    [merged] = bank.merges()
    assert merged.member_ids == tuple(dupes)
    assert bank.get(merged.merged_id).access_count == 3

    live = bank.memories(status="active", limit=None)
    assert len(live) == len(REALISTIC) - 3 + 1  # three expired; the two duplicates became one
    expected_tiers = {"hot": 0, "warm": 0, "cold": 0}
    for m in live:
        touched = max(m.created_at, m.last_accessed_at or m.created_at)
        expected_tiers[tier_of((NOW - touched).total_seconds() / 86400)] += 1
    assert report.stats == {
        "active": len(live),
        "average_access_count": round(sum(m.access_count for m in live) / len(live), 3),
        "never_accessed": sum(m.access_count == 0 for m in live),
        "by_tier": expected_tiers,
    }
    assert report.stats["average_access_count"] > 0 and report.stats["never_accessed"] > 0

    [run] = bank.maintenance_runs(include_dry_runs=False)
    assert run["id"] == report.run_id and run["dry_run"] is False
    assert run["report"]["counts"] == report.counts and run["report"]["stats"] == report.stats
    assert run["plan"] == MaintenancePlan().to_dict()
    # Three expiries, one review (a durable memory long unused, listed and left as it is), one merge.
    assert len(run["report"]["changes"]) == len(report.changes) == 3 + 1 + 1
    [review] = [c for c in report.changes if c.action == "review"]
    assert review.memory_ids == [ids["swedish"]] and review.group_id is None and report.counts["review"] == 1
    assert review.why["durability"] == "durable" and review.why["last_used"] is None


def test_an_expiry_is_undone_as_one_operation_restoring_the_bank_exactly(bank: MemoryBank) -> None:
    ids = build(bank)
    before = content(bank)

    report = bank.maintain(now=NOW, steps=["cleanup"])

    expiries = [c for c in report.changes if c.action == "expire"]
    assert len(expiries) == 3
    groups = {c.group_id for c in expiries}
    assert len(groups) == 1 and None not in groups  # one undoable operation for the whole expiry
    assert content(bank) != before
    hits = bank.recall("Long run 9 km", namespace="alice", now=NOW, threshold=0, k=10, record=False)
    assert ids["run_log"] not in [h.memory.id for h in hits]

    bank.undo_group(expiries[0].group_id)

    assert content(bank) == before
    assert all(bank.get(ids[k]).status == "active" for k in EXPIRING)


def test_pinned_memories_are_never_expired_merged_or_auto_resolved(bank: MemoryBank) -> None:
    rows = [
        ("trivia", "carol", "Saw a heron by the canal on the way to work", 0.1, 500, None, 0, True),
        ("dup1", "carol", "Prefers window seats on long flights", 0.6, 60, None, 0, True),
        ("dup2", "carol", "Prefers window seats on long flights", 0.6, 30, None, 0, True),
        ("dup3", "carol", "Keeps a sourdough starter called Bubbles", 0.5, 50, None, 0, False),
        ("dup4", "carol", "Keeps a sourdough starter called Bubbles", 0.5, 40, None, 0, True),
        ("tea", "carol", "Prefers tea in the morning", 0.7, 400, None, 0, True),
        ("coffee", "carol", "Now prefers coffee in the morning", 0.7, 30, None, 0, False),
    ]
    ids = build(bank, rows)

    report = bank.maintain(now=NOW, steps=list(STEPS))

    for key, mid in ids.items():
        assert bank.get(mid).status == "active", key
    assert bank.get(ids["trivia"]).pinned and bank.get(ids["dup4"]).pinned
    touched = {mid for c in report.changes for mid in c.memory_ids}
    assert touched == set(), report.changes
    assert bank.merges() == []
    # The contradiction is shown to an operator, not decided for them.
    [c] = bank.conflicts(namespace="carol")
    assert {c.a.id, c.b.id} == {ids["tea"], ids["coffee"]} and c.status == "open"
    assert report.counts == {"expired": 0, "review": 0, "merged": 0, "merges": 0, "superseded": 0,
                             "conflicts_detected": 1}


# -- hard expiry -------------------------------------------------------------------------------

SECRET = "Booked the Zanzibar quokka safari"


def index_contents(folder: Path) -> list[tuple[str, bytes]]:
    """Every cached index file's bytes, with the compressed BM25 arrays (.npz) unpacked."""
    out = []
    for p in sorted(folder.rglob("*")):
        if not p.is_file():
            continue
        out.append((p.name, p.read_bytes()))
        if p.suffix == ".npz":
            with np.load(p, allow_pickle=False) as z:
                for k in z.files:
                    items = [z[k].item()] if z[k].ndim == 0 else z[k].ravel().tolist()
                    out.append((f"{p.name}:{k}", "\n".join(map(str, items)).encode()))
    return out


def _hard_expire(bank: MemoryBank) -> tuple[int, maintenance.MaintenanceReport]:
    [mid, _] = bank.add_many([
        {"text": SECRET, "namespace": "alice", "importance": 0.2, "created_at": ago(400), "durability": "transient"},
        {"text": "Prefers tea in the morning", "namespace": "alice", "importance": 0.8, "created_at": ago(10)},
    ])
    bank.recall("quokka safari", namespace="alice", now=NOW, threshold=0, record=False)  # builds the index
    assert any(b"quokka" in data for _, data in index_contents(bank.index_folder)), "the index holds the words"
    report = bank.maintain(now=NOW, steps=["cleanup"], plan=MaintenancePlan(expire_action="hard"))
    return mid, report


def test_hard_expiry_erases_the_memory_and_its_index_entries(bank: MemoryBank) -> None:
    mid, report = _hard_expire(bank)
    [change] = report.changes
    assert change.memory_ids == [mid] and change.group_id is None  # nothing to undo: it is gone
    m = bank.get(mid)
    assert m.text is None and m.status == "deleted"
    assert all(SECRET not in str(e.before) + str(e.after) for e in bank.history(mid))
    assert mid not in [h.memory.id for h in bank.recall("quokka safari", namespace="alice", now=NOW,
                                                         threshold=0, record=False)]
    bank.close()
    leftovers = [name for name, data in index_contents(bank.index_folder) if b"quokka" in data]
    assert leftovers == [], f"the erased words are still in {leftovers}"


def test_hard_expiry_leaves_no_copy_of_the_text_in_the_database_file(bank: MemoryBank) -> None:
    _hard_expire(bank)
    bank.close()
    leftovers = [p.name for p in bank.path.parent.iterdir()
                 if p.is_file() and b"quokka" in p.read_bytes()]
    assert leftovers == [], f"the erased text is still in {leftovers}"


# -- the schedule ------------------------------------------------------------------------------


def test_cleanup_is_due_weekly_and_merges_monthly(bank: MemoryBank) -> None:
    build(bank)
    assert maintenance.due_steps(bank, NOW) == ["cleanup", "merge"]  # never run: everything is due
    first = bank.maintain(now=NOW)
    assert first.steps == ["cleanup", "merge"]

    assert maintenance.due_steps(bank, NOW + timedelta(days=6, hours=23)) == []
    idle = bank.maintain(now=NOW + timedelta(days=6))
    assert idle.steps == [] and idle.changes == []
    assert maintenance.due_steps(bank, NOW + timedelta(days=7)) == ["cleanup"]
    second = bank.maintain(now=NOW + timedelta(days=7))
    assert second.steps == ["cleanup"]

    assert maintenance.due_steps(bank, NOW + timedelta(days=13)) == []
    assert maintenance.due_steps(bank, NOW + timedelta(days=14)) == ["cleanup"]
    assert maintenance.due_steps(bank, NOW + timedelta(days=29)) == ["cleanup"]
    # A dry run previews; it does not count as having done the work.
    bank.maintain(now=NOW + timedelta(days=30), dry_run=True)
    assert maintenance.due_steps(bank, NOW + timedelta(days=30)) == ["cleanup", "merge"]
    # The plan's own intervals.
    plan = MaintenancePlan(cleanup_every_days=1, merge_every_days=10)
    assert maintenance.due_steps(bank, NOW + timedelta(days=8), plan) == ["cleanup"]
    assert maintenance.due_steps(bank, NOW + timedelta(days=10), plan) == ["cleanup", "merge"]


# -- the merge step ----------------------------------------------------------------------------


def test_merge_step_merges_duplicates_but_not_contradictions(bank: MemoryBank) -> None:
    rows = [
        ("dup_a", "bob", "Prefers dark mode in every editor", 0.6, 60, None, 0, False),
        ("dup_b", "bob", "Prefers dark mode in every editor", 0.5, 20, 5, 2, False),
        ("near_a", "bob", "Plans to move to Berlin in March 2026", 0.7, 90, None, 0, False),
        ("near_b", "bob", "Planning to move to Berlin in March 2026", 0.6, 45, None, 0, False),
        ("users_old", "bob", "The side project's free tier allows 3 users", 0.6, 200, None, 0, False),
        ("users_new", "bob", "The side project's free tier allows 5 users", 0.6, 20, None, 0, False),
        ("spicy_old", "bob", "Likes spicy food", 0.5, 150, None, 0, False),
        ("spicy_new", "bob", "Does not like spicy food", 0.5, 15, None, 0, False),
    ]
    ids = build(bank, rows)
    vectors = bank.embedder.encode(["Plans to move to Berlin in March 2026", "Planning to move to Berlin in March 2026",
                                    "The side project's free tier allows 3 users",
                                    "The side project's free tier allows 5 users"])
    assert float(vectors[0] @ vectors[1]) >= 0.88  # a near duplicate by the default threshold
    assert float(vectors[2] @ vectors[3]) >= 0.88  # as close in meaning, but a contradiction
    before = content(bank, [("bob", "editor theme"), ("bob", "moving to Berlin"), ("bob", "how many users")])

    report = bank.maintain(now=NOW, steps=["merge"])

    assert changes_of(report) == sorted([("merge", (ids["dup_a"], ids["dup_b"])),
                                         ("merge", (ids["near_a"], ids["near_b"]))])
    assert report.counts["merges"] == 2 and report.counts["merged"] == 4 and report.counts["expired"] == 0
    for key in ("users_old", "users_new", "spicy_old", "spicy_new"):
        assert bank.get(ids[key]).status == "active", key
    records = {r.member_ids: r for r in bank.merges()}
    dark = bank.get(records[(ids["dup_a"], ids["dup_b"])].merged_id)
    assert dark.text == "Prefers dark mode in every editor" and dark.importance == 0.6
    assert dark.access_count == 2 and dark.created_at == ago(20)
    berlin = bank.get(records[(ids["near_a"], ids["near_b"])].merged_id)
    assert "Berlin" in berlin.text and "March 2026" in berlin.text
    assert bank.get(ids["near_a"]).merged_into == berlin.id

    for change in sorted(report.changes, key=lambda c: -c.group_id):
        bank.undo_group(change.group_id)
    assert content(bank, [("bob", "editor theme"), ("bob", "moving to Berlin"), ("bob", "how many users")]) == before


def test_merge_step_does_not_merge_away_a_changed_date(bank: MemoryBank) -> None:
    ids = build(bank, [
        ("march", "bob", "Plans to move to Berlin in March 2026", 0.7, 200, None, 0, False),
        ("april", "bob", "Plans to move to Berlin in April 2026", 0.7, 60, None, 0, False),
    ])
    bank.maintain(now=NOW, steps=["merge"])
    live = [m.text for m in bank.memories(namespace="bob")]
    assert any("April" in t for t in live), live
    assert bank.get(ids["april"]).status == "active"


# -- the cleanup step's conflict rules ---------------------------------------------------------


def test_cleanup_offers_rule_verdicts_for_review_and_resolves_only_at_the_plan_bar(bank: MemoryBank) -> None:
    rows = [
        ("tea", "alice", "Prefers tea in the morning", 0.7, 400, None, 0, False),
        ("coffee", "alice", "Now prefers coffee to tea in the morning", 0.7, 30, None, 0, False),
        ("drinks", "bob", "Watches anime every evening", 0.8, 300, None, 0, False),
        ("stopped", "bob", "Stopped watching anime", 0.8, 10, None, 0, False),
    ]
    ids = build(bank, rows)

    # The default bar is where held-out precision is 0.95: no rules verdict reaches it, so both
    # contradictions wait for an operator and nothing is superseded.
    report = bank.maintain(now=NOW, steps=["cleanup"])
    assert report.counts["conflicts_detected"] == 2 and report.counts["superseded"] == 0
    assert conflicts.AUTO_BAR == MaintenancePlan().conflict_min_confidence
    opened = bank.conflicts(status="open")
    assert {frozenset((c.a.id, c.b.id)) for c in opened} == {frozenset((ids["tea"], ids["coffee"])),
                                                             frozenset((ids["drinks"], ids["stopped"]))}
    assert all(c.confidence < conflicts.AUTO_BAR for c in opened)
    assert all(bank.get(mid).status == "active" for mid in ids.values())

    # An operator who lowers the bar in the plan gets the clear rule applied where the detector is
    # that sure (the preference that changed, in one subject slot), and only there.
    bar = max(c.confidence for c in opened)
    sure = next(c for c in opened if c.confidence == bar)
    report = bank.maintain(now=NOW, steps=["cleanup"], plan=MaintenancePlan(conflict_min_confidence=bar))
    [resolution] = [c for c in report.changes if c.action == "resolve_conflict"]
    assert resolution.memory_ids == [sure.a.id, sure.b.id] and "newer_wins" in resolution.detail
    assert bank.get(sure.a.id).status == "superseded" and bank.get(sure.a.id).superseded_by == sure.b.id
    [open_one] = bank.conflicts(status="open")
    assert open_one.confidence < bar
    # The automatic resolution is undoable like an operator's.
    bank.undo_group(resolution.group_id)
    assert bank.get(sure.a.id).status == "active"
    assert bank.conflict(sure.id).status == "open"


def test_lives_in_paris_then_moved_to_berlin_is_flagged_for_an_operator(bank: MemoryBank) -> None:
    """The pair embeds at cosine 0.385 only: the same-subject rule (both say where he lives) and the
    supersede signal ("moved") find it; it is offered, never applied without a person."""
    [paris, berlin] = bank.add_many([
        {"text": "Lives in Paris", "namespace": "bob", "importance": 0.8, "kind": "explicit",
         "created_at": datetime(2025, 3, 1, tzinfo=timezone.utc)},
        {"text": "Moved to Berlin", "namespace": "bob", "importance": 0.8, "kind": "explicit",
         "created_at": datetime(2026, 4, 1, tzinfo=timezone.utc)},
    ])
    bank.maintain(now=NOW, steps=["cleanup"])
    [flagged] = bank.conflicts(namespace="bob", status="open")
    assert (flagged.a.id, flagged.b.id) == (paris, berlin)
    assert flagged.confidence < conflicts.AUTO_BAR and bank.get(paris).status == "active"
    assert bank.resolve_conflict(flagged.id, "newer_wins").status == "resolved"
    assert bank.get(paris).superseded_by == berlin


# -- a preview is exactly what the run then does -------------------------------------------------


def test_dry_run_does_not_preview_merging_memories_that_expire_first(bank: MemoryBank) -> None:
    build(bank, [
        ("log1", "alice", "Long run: 9 km at 6:40/km", 0.2, 400, None, 0, False),
        ("log2", "alice", "Long run: 9 km at 6:40/km", 0.2, 390, None, 0, False),
        ("keep", "alice", "Is allergic to peanuts", 0.9, 30, None, 0, False),
    ])
    dry = bank.maintain(now=NOW, steps=list(STEPS), dry_run=True)
    real = bank.maintain(now=NOW, steps=list(STEPS))
    assert changes_of(dry) == changes_of(real)


def test_dry_run_previews_the_conflict_resolutions_the_run_makes(bank: MemoryBank) -> None:
    build(bank, [
        ("drinks", "alice", "Drinks tea every morning", 0.8, 300, None, 0, False),
        ("stopped", "alice", "Stopped drinking tea", 0.8, 10, None, 0, False),
    ])
    plan = MaintenancePlan(conflict_min_confidence=0.8)  # an operator's bar, below the default
    dry = bank.maintain(now=NOW, steps=["cleanup"], dry_run=True, plan=plan)
    real = bank.maintain(now=NOW, steps=["cleanup"], plan=plan)
    assert changes_of(real, "resolve_conflict")  # the real run supersedes the older habit
    assert changes_of(dry) == changes_of(real)


# -- tiers -------------------------------------------------------------------------------------


def test_tiers_as_of_different_now(bank: MemoryBank) -> None:
    ids = bank.add_many([
        {"text": "Started a pottery class", "namespace": "alice", "created_at": ago(3)},
        {"text": "Booked a cabin in Jämtland for the winter", "namespace": "alice", "created_at": ago(30)},
        {"text": "Learned to make gnocchi", "namespace": "alice", "created_at": ago(200)},
        {"text": "Is allergic to peanuts", "namespace": "alice", "created_at": ago(200), "last_accessed_at": ago(2),
         "access_count": 9},
        {"text": "Reads crime novels before bed", "namespace": "alice", "created_at": ago(95)},
        {"text": "Works as a backend engineer", "namespace": "bob", "created_at": ago(1)},
    ])
    bank.forget(ids[0])  # archived memories are not live, so not in any tier
    assert maintenance.tiers(bank, NOW, namespace="alice") == {"hot": 1, "warm": 1, "cold": 2}
    assert maintenance.tiers(bank, NOW) == {"hot": 2, "warm": 1, "cold": 2}
    # Ten days later nothing of alice's is hot; touched 90 days ago is still warm, 91 is cold.
    assert maintenance.tiers(bank, NOW + timedelta(days=10), namespace="alice") == {"hot": 0, "warm": 2, "cold": 2}
    assert maintenance.tiers(bank, NOW + timedelta(days=60), namespace="alice") == {"hot": 0, "warm": 2, "cold": 2}
    assert maintenance.tiers(bank, NOW + timedelta(days=61), namespace="alice") == {"hot": 0, "warm": 1, "cold": 3}
    # A real recall touches a memory: it is hot again as of then.
    later = NOW + timedelta(days=120)
    bank.recall("gnocchi", namespace="alice", now=later, k=1, threshold=0)
    assert maintenance.tiers(bank, later, namespace="alice") == {"hot": 1, "warm": 0, "cold": 3}
    # The report of a run carries the tiers as of its own now.
    report = bank.maintain(now=later, steps=["merge"], namespace="alice")
    assert report.stats["by_tier"] == {"hot": 1, "warm": 0, "cold": 3}


# -- bad input ---------------------------------------------------------------------------------


@pytest.mark.parametrize("changes", [
    {"expire_action": "soft"},
    {"expire_action": None},
    {"expire_below_importance": 1.5},
    {"expire_below_importance": -0.1},
    {"conflict_min_confidence": 2},
    {"conflict_min_confidence": math.nan},
    {"unused_days": -1},
    {"expire_after_days": "180"},
    {"expire_after_days": math.inf},
    {"merge_every_days": -30},
    {"merge_threshold": 1.5},
    {"merge_threshold": 0},
    {"cleanup_every_days": None},
    {"expire_after_days": True},
])
def test_bad_plan_values_are_refused_when_the_plan_is_made(changes: dict) -> None:
    with pytest.raises(ValidationError):
        MaintenancePlan(**changes)


def test_a_bad_plan_changes_nothing(bank: MemoryBank) -> None:
    build(bank)
    before = content(bank)
    with pytest.raises(ValidationError):
        bank.maintain(now=NOW, steps=list(STEPS), plan=MaintenancePlan(merge_threshold=1.5))
    assert content(bank) == before


def test_an_unknown_step_is_refused_and_changes_nothing(bank: MemoryBank) -> None:
    build(bank)
    before, state = content(bank), curation_state(bank)
    with pytest.raises(ValidationError, match="unknown maintenance step 'defrag'"):
        bank.maintain(now=NOW, steps=["cleanup", "defrag"])
    with pytest.raises(ValidationError):
        bank.maintain(now=NOW, steps=["Cleanup"])
    with pytest.raises(ValidationError):
        bank.maintain(now="last tuesday")
    assert content(bank) == before and curation_state(bank) == state
    assert bank.maintenance_runs() == []
