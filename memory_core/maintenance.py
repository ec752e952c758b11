"""Forgetting as a feature: expiry, tiers, and the scheduled maintenance plan `memctl maintain` runs.

Maintenance has two steps with their own schedules:

* **cleanup** (weekly by default): expire old, unimportant, unused memories; detect new
  contradictions; apply the two clear conflict rules (newer wins, explicit beats inferred) to
  open conflicts the detector is sure about, leaving the rest for an operator.
* **merge** (monthly by default): merge clusters of near-duplicate memories.

A run is always previewable (``dry_run=True`` lists exactly what would change), writes one report,
and never touches a memory an operator pinned. Every change it makes is an undoable operation
(``bank.undo_group``), except expiry with ``expire_action="hard"``, which erases for good.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, Callable

from .bank import MemoryBank
from .errors import ValidationError
from .models import parse_time
from .store import utcnow

STEPS = ("cleanup", "merge")


@dataclass(frozen=True)
class MaintenancePlan:
    """What maintenance does and how often. The defaults come from practice: memories older than
    180 days, with importance under 0.7 and unused for six months, expire (archived, restorable)."""

    expire_after_days: float = 180.0
    expire_below_importance: float = 0.7
    unused_days: float = 180.0
    expire_action: str = "archive"  # "archive" (soft, restorable) or "hard" (erased for good)
    detect_conflicts: bool = True
    resolve_conflicts: bool = True  # apply newer_wins / explicit_wins when the detector is sure
    conflict_min_confidence: float = 0.8
    merge_threshold: float | None = None  # None: merge.DEFAULT_THRESHOLD
    cleanup_every_days: float = 7.0
    merge_every_days: float = 30.0

    def __post_init__(self) -> None:
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if f.name == "expire_action":
                if value not in ("archive", "hard"):
                    raise ValidationError(f"expire_action must be 'archive' or 'hard', got {value!r}")
            elif f.name in ("detect_conflicts", "resolve_conflicts"):
                if not isinstance(value, bool):
                    raise ValidationError(f"{f.name} must be true or false, got {value!r}")
            elif f.name == "merge_threshold" and value is None:
                continue
            elif (isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value)
                  or value < 0):
                raise ValidationError(f"{f.name} must be a number >= 0, got {value!r}")
        for name in ("expire_below_importance", "conflict_min_confidence"):
            if getattr(self, name) > 1:
                raise ValidationError(f"{name} must be between 0 and 1")
        if self.merge_threshold is not None and not 0 < self.merge_threshold <= 1:
            raise ValidationError(f"merge_threshold must be above 0 and at most 1, got {self.merge_threshold}")
        for name in ("cleanup_every_days", "merge_every_days"):
            if getattr(self, name) <= 0:
                raise ValidationError(f"{name} must be above 0 days")

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


@dataclass
class PlannedChange:
    """One change a run makes (or, dry, would make)."""

    step: str  # cleanup or merge
    action: str  # expire, resolve_conflict, merge
    memory_ids: list[int]
    detail: str
    namespace: str | None = None
    group_id: int | None = None  # the operation's group, to undo it (real runs only)

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


@dataclass
class MaintenanceReport:
    """What a maintenance run did or would do."""

    dry_run: bool
    now: datetime
    steps: list[str]
    changes: list[PlannedChange] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=dict)
    stats: dict[str, Any] = field(default_factory=dict)
    run_id: int | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"dry_run": self.dry_run, "now": self.now.isoformat(), "steps": self.steps,
                "changes": [c.to_dict() for c in self.changes], "counts": self.counts, "stats": self.stats,
                "run_id": self.run_id}


def tiers(bank: MemoryBank, now: Any = None, namespace: str | None = None) -> dict[str, int]:
    """Live memories by tier as of ``now``: hot (touched < 7 days ago), warm (7-90), cold (> 90)."""
    return bank.stats(namespace=namespace, now=now)["by_tier"]


def due_steps(bank: MemoryBank, now: Any = None, plan: MaintenancePlan | None = None) -> list[str]:
    """The steps whose schedule says they are due at ``now`` (never run counts as due)."""
    plan = plan or MaintenancePlan()
    now_dt = parse_time(now, "now") or utcnow()
    last: dict[str, datetime] = {}
    for run in bank.maintenance_runs(limit=200, include_dry_runs=False):
        for step in run["report"].get("steps", []):
            at = parse_time(run["report"].get("now")) or run["started_at"]
            last[step] = max(last.get(step, at), at)
    every = {"cleanup": plan.cleanup_every_days, "merge": plan.merge_every_days}
    return [s for s in STEPS if s not in last or now_dt - last[s] >= timedelta(days=every[s])]


def run(
    bank: MemoryBank,
    *,
    now: Any = None,
    plan: MaintenancePlan | None = None,
    steps: list[str] | None = None,
    namespace: str | None = None,
    dry_run: bool = False,
    client: Any = None,
    progress: Callable[[int, int, str], None] | None = None,
) -> MaintenanceReport:
    """Run (or with ``dry_run`` only plan) maintenance; returns the report, also stored in the bank.

    ``steps`` defaults to the due ones (see :func:`due_steps`); pass ``list(STEPS)`` to run all.
    ``progress(done, total, label)`` is called as work advances. ``client`` is an optional LLM
    client used to judge conflicts and write merged texts (rules and extractive merges otherwise).
    """
    from . import conflicts, merge

    plan = plan or MaintenancePlan()
    now_dt = parse_time(now, "now") or utcnow()
    if isinstance(steps, str):
        steps = [steps]
    steps = due_steps(bank, now_dt, plan) if steps is None else list(steps)
    for s in steps:
        if s not in STEPS:
            raise ValidationError(f"unknown maintenance step {s!r}; steps are {', '.join(STEPS)}")
    started = utcnow()
    report = MaintenanceReport(dry_run=dry_run, now=now_dt, steps=steps)
    counts = {"expired": 0, "merged": 0, "merges": 0, "superseded": 0, "conflicts_detected": 0}
    namespaces = [namespace] if namespace else [ns for ns, n in bank.namespaces() if n]
    gone: set[int] = set()  # memories earlier steps expire or supersede: later steps leave them be
    total = len(namespaces) * len(steps) + 1
    done = 0

    def tick(label: str) -> None:
        nonlocal done
        done += 1
        if progress is not None:
            progress(done, total, label)

    if "cleanup" in steps:
        expired = bank.expiry_candidates(now=now_dt, older_than_days=plan.expire_after_days,
                                         below_importance=plan.expire_below_importance,
                                         unused_days=plan.unused_days, namespace=namespace)
        for m in expired:
            used = "never recalled" if m.last_accessed_at is None else f"last recalled {m.last_accessed_at:%Y-%m-%d}"
            # An erased memory's words must not survive in the run's report either.
            what = f"memory {m.id}" if plan.expire_action == "hard" else repr(m.text)
            report.changes.append(PlannedChange(
                "cleanup", "expire", [m.id], f"{what}: created {m.created_at:%Y-%m-%d}, importance "
                f"{m.importance:.2f}, {used}", m.namespace))
        if expired and not dry_run:
            gid = bank.forget_many([m.id for m in expired], hard=plan.expire_action == "hard",
                                   reason=f"maintenance: expired ({plan.expire_action})")
            for c in report.changes:
                c.group_id = gid if plan.expire_action == "archive" else None
        counts["expired"] = len(expired)
        gone.update(m.id for m in expired)
        for ns in namespaces:
            new: list[Any] = []
            if plan.detect_conflicts:
                # A dry run judges the same pairs but records nothing, so its preview is complete.
                if dry_run:
                    ids, vectors = bank.live_vectors(ns)
                    pairs = conflicts.pairs_to_judge(ids, vectors)
                    memories = bank.get_many(sorted({i for p in pairs for i in p}))
                    known = {(c.a.id, c.b.id) for c in bank.conflicts(namespace=ns, status=None)}
                    new = conflicts.preview(conflicts.find(pairs, ids, vectors, memories, known, client=client),
                                            memories, ns)
                else:
                    new = bank.detect_conflicts(ns, client=client)
                counts["conflicts_detected"] += len(new)
            if plan.resolve_conflicts:
                pending = bank.conflicts(namespace=ns, status="open") + (new if dry_run else [])
                for c in pending:
                    if c.a.id in gone or c.b.id in gone:
                        continue
                    rule = conflicts.auto_rule(c, min_confidence=plan.conflict_min_confidence)
                    if rule is None:
                        continue
                    loser = c.a if rule == "newer_wins" or c.a.kind == "inferred" else c.b
                    gone.add(loser.id)
                    name = f"conflict {c.id}" if c.id else "a new conflict"
                    change = PlannedChange("cleanup", "resolve_conflict", [c.a.id, c.b.id],
                                           f"{name} by {rule}: {c.a.text!r} vs {c.b.text!r}", ns)
                    if not dry_run:
                        change.group_id = bank.resolve_conflict(c.id, rule).group_id
                    report.changes.append(change)
                    counts["superseded"] += 1
            tick(f"cleanup {ns}")

    if "merge" in steps:
        for ns in namespaces:
            held = {i for c in bank.conflicts(namespace=ns, status="open") for i in (c.a.id, c.b.id)}
            cands = merge.candidates(*bank.live_vectors(ns), bank.memories(ns, status="active", limit=None),
                                     held=held, exclude=gone if dry_run else None)
            for cluster, preview in merge.plan_merges(cands, threshold=plan.merge_threshold, client=client):
                change = PlannedChange("merge", "merge", list(cluster.ids),
                                       f"{cluster.reason} ({preview.path}): {preview.text!r}", ns)
                if not dry_run:
                    change.group_id = bank.merge(cluster.ids, preview.text, path=preview.path,
                                                 detail=preview.detail).group_id
                report.changes.append(change)
                counts["merges"] += 1
                counts["merged"] += len(cluster.ids)
            tick(f"merge {ns}")

    report.counts = counts
    report.stats = {**bank.usage_summary(namespace), "by_tier": tiers(bank, now_dt, namespace)}
    report.run_id = bank.record_maintenance_run(started_at=started, dry_run=dry_run, plan=plan.to_dict(),
                                                report=report.to_dict())
    tick("report")
    return report
