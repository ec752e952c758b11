"""Maintenance: forgetting as a feature. Expiry, tiers, and the scheduled plan `memctl maintain` runs.

Maintenance has two steps with their own schedules:

* **cleanup** (weekly by default): expire transient memories whose time has passed (a day's
  state after a few days, a week's after a couple of weeks, a dated thing after its date, logs,
  small talk and events by age and disuse: :mod:`memory_core.language.durability`), and offer durable ones
  long unused for review, never expiring them for age or disuse alone; seed 004's rule (old,
  unimportant, unused: ``expire_rule="age_importance"``) stays as an option. Then detect new
  contradictions and apply the two clear conflict rules (newer wins, explicit beats inferred) to
  open conflicts the detector is sure about (:func:`memory_core.curation.conflicts.auto_rule` and
  its ``AUTO_BAR`` own that bar), leaving the rest for an operator.
* **merge** (monthly by default): merge clusters of near-duplicate memories. On the rules path a
  cluster the pair classifier found is merged only when every pair in it clears the classifier's
  automatic bar (``merge_pairs`` ``auto_bar``, fitted as conflicts' ``AUTO_BAR`` is); the clusters
  below it are left for an operator on the Merges page, which offers them all.

This module plans; the bank applies. :func:`plan_run` reads the bank (through
:class:`MaintenanceSource`, reads only) and decides every change from that data, each step against
what the earlier ones leave, so a preview (``dry_run=True``) lists exactly what a real run changes.
:meth:`MemoryBank.apply_maintenance` makes the changes (unless dry) and records the run with its
report; :meth:`MemoryBank.maintain` does both. A run never touches a memory an operator pinned.
Every change it makes is an undoable operation (``bank.undo_group``), except expiry with
``expire_action="hard"``, which erases for good; ``bank.undo_maintenance_run`` undoes a whole run.
Each operation is one transaction: a run stopped between two leaves each memory wholly changed by
one or untouched. A preview's rows can be left out of the run (:func:`row_key`,
:meth:`MaintenanceWork.keep_only`).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from . import conflicts, merge, merge_pairs
from ..storage.clock import utcnow
from ..embedding.embedder import model_defaults
from ..errors import ValidationError
from ..language import durability as durability_mod
from ..models import MAINTENANCE_STEPS, Conflict, Memory, parse_time

if TYPE_CHECKING:
    from ..language.llm import LLMClient

ProgressFn = Callable[[int, int, str], None]

STEPS = MAINTENANCE_STEPS


EXPIRE_RULES = ("durability", "age_importance")


@dataclass(frozen=True)
class MaintenancePlan:
    """What maintenance does and how often.

    With ``expire_rule="durability"`` (the default) a transient memory expires once its time has
    passed: a day's state ``day_state_days`` after it was written, a week's ``week_state_days``
    after, a dated one ``after_date_days`` after its date, the rest (logs, small talk, events)
    once older than ``transient_after_days`` and unused as long. A durable memory never expires:
    one older than ``expire_after_days`` and unused for ``unused_days`` is listed for review.
    ``expire_rule="age_importance"`` is seed 004's rule instead: every memory older than
    ``expire_after_days``, under ``expire_below_importance`` and unused for ``unused_days`` expires,
    durable or not. Expired memories are archived (restorable) unless ``expire_action="hard"``."""

    expire_after_days: float = 180.0
    expire_below_importance: float = 0.7
    unused_days: float = 180.0
    expire_action: str = "archive"  # "archive" (soft, restorable) or "hard" (erased for good)
    expire_rule: str = "durability"  # or "age_importance" (seed 004's)
    day_state_days: float = 3.0
    week_state_days: float = 14.0
    after_date_days: float = 1.0
    transient_after_days: float = 30.0
    detect_conflicts: bool = True
    resolve_conflicts: bool = True  # apply newer_wins / explicit_wins when the detector is sure
    conflict_min_confidence: float = conflicts.AUTO_BAR
    merge_threshold: float | None = None  # None: the bank's model's default (embed.MODEL_DEFAULTS)
    cleanup_every_days: float = 7.0
    merge_every_days: float = 30.0

    def __post_init__(self) -> None:
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if f.name == "expire_action":
                if value not in ("archive", "hard"):
                    raise ValidationError(f"expire_action must be 'archive' or 'hard', got {value!r}")
            elif f.name == "expire_rule":
                if value not in EXPIRE_RULES:
                    raise ValidationError(f"expire_rule must be one of {', '.join(EXPIRE_RULES)}, got {value!r}")
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
    action: str  # expire, review (a durable memory long unused: listed, never changed), resolve_conflict, merge
    memory_ids: list[int]
    detail: str
    namespace: str | None = None
    group_id: int | None = None  # the operation's group, to undo it (real runs only)
    # Why an expiry or a review: the memory's durability, the rule's reason, its age in days and
    # when it was last recalled (None: never).
    why: dict[str, Any] | None = None

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


class MaintenanceSource(Protocol):
    """The reads a maintenance plan is made from (:class:`MemoryBank` provides them); none writes."""

    @property
    def model(self) -> str: ...

    def maintenance_runs(self, limit: int = ..., include_dry_runs: bool = ...) -> list[dict[str, Any]]: ...

    def namespaces(self) -> list[tuple[str, int]]: ...

    def stats(self, namespace: str | None = ..., now: Any = ...) -> dict[str, Any]: ...

    def expiry_candidates(self, *, now: Any = ..., older_than_days: float, below_importance: float | None,
                          unused_days: float, namespace: str | None = ...,
                          durability: str | None = ...) -> list[Memory]: ...

    def live_vectors(self, namespace: str) -> tuple[np.ndarray, np.ndarray]: ...

    def get_many(self, ids: Iterable[int]) -> dict[int, Memory]: ...

    def memories(self, namespace: str | None = ..., status: str | None = ..., *,
                 limit: int | None = ...) -> list[Memory]: ...

    def conflicts(self, namespace: str | None = ..., status: str | None = ...,
                  memory_id: int | None = ...) -> list[Conflict]: ...


@dataclass
class Resolution:
    """An open conflict a clear rule resolves: a recorded one, or a new one (``finding``: its index
    in :attr:`MaintenanceWork.findings`, recorded before it is resolved)."""

    change: PlannedChange
    conflict: Conflict  # id 0 while a new one is not recorded
    rule: str
    finding: int | None = None

    def settle(self, conflict_id: int, group_id: int | None) -> None:
        """Name the conflict by its recorded id and the operation that resolved it."""
        self.change.detail = _resolution_detail(conflict_id, self.rule, self.conflict)
        self.change.group_id = group_id


@dataclass
class PlannedMerge:
    """A cluster to merge, with the text its preview wrote."""

    change: PlannedChange
    ids: tuple[int, ...]
    text: str
    path: str
    detail: str | None


@dataclass
class MaintenanceWork:
    """A planned run: its report's changes and counts, and the operations that make them true, in
    the order :meth:`MemoryBank.apply_maintenance` applies them (expire, record the new conflicts,
    resolve, merge)."""

    plan: MaintenancePlan
    now: datetime
    steps: list[str]
    namespace: str | None
    started: datetime
    changes: list[PlannedChange] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=lambda: dict.fromkeys(
        ("expired", "review", "merged", "merges", "superseded", "conflicts_detected"), 0))
    expire: list[int] = field(default_factory=list)
    findings: list[dict[str, Any]] = field(default_factory=list)  # rows for MemoryBank.record_conflicts
    resolutions: list[Resolution] = field(default_factory=list)
    merges: list[PlannedMerge] = field(default_factory=list)
    progress: ProgressFn | None = None
    total: int = 1
    done: int = 0

    def tick(self, label: str) -> None:
        self.done += 1
        if self.progress is not None:
            self.progress(self.done, self.total, label)

    def keep_only(self, keys: Iterable[str]) -> None:
        """Leave out the rows whose :func:`row_key` is not in ``keys`` (an operator deselected them
        in a preview); review rows change nothing and stay. New conflicts are still recorded."""
        wanted = set(keys)
        dropped = {id(c) for c in self.changes if c.action != "review" and row_key(c) not in wanted}
        if not dropped:
            return
        self.changes = [c for c in self.changes if id(c) not in dropped]
        kept = {i for c in self.changes if c.action == "expire" for i in c.memory_ids}
        self.expire = [i for i in self.expire if i in kept]
        self.resolutions = [r for r in self.resolutions if id(r.change) not in dropped]
        self.merges = [m for m in self.merges if id(m.change) not in dropped]
        self.counts.update(expired=len(self.expire), superseded=len(self.resolutions), merges=len(self.merges),
                           merged=sum(len(m.ids) for m in self.merges))

    def applied(self, action: str) -> None:
        """Tell ``progress`` that one operation of a real run is done (its count of work unchanged)."""
        if self.progress is not None:
            self.progress(self.done, self.total, f"applied {action}")

    def expired(self, group_id: int | None) -> None:
        """Note the operation that expired the memories (undoable only when archived)."""
        for c in self.changes:
            if c.action == "expire":
                c.group_id = group_id if self.plan.expire_action == "archive" else None

    def report(self, dry_run: bool, stats: dict[str, Any]) -> MaintenanceReport:
        return MaintenanceReport(dry_run=dry_run, now=self.now, steps=self.steps, changes=self.changes,
                                 counts=self.counts, stats=stats)


def row_key(change: PlannedChange | dict[str, Any]) -> str:
    """A row of a plan by what it does: its action and memories (the same in a dry run and the real
    run planned from the same bank), e.g. ``"expire:12"``, ``"merge:3-7"``."""
    action, ids = (change["action"], change["memory_ids"]) if isinstance(change, dict) else (change.action,
                                                                                             change.memory_ids)
    return f"{action}:{'-'.join(map(str, ids))}"


def tiers(bank: MaintenanceSource, now: Any = None, namespace: str | None = None) -> dict[str, int]:
    """Live memories by tier as of ``now``: hot (touched < 7 days ago), warm (7-90), cold (> 90)."""
    return bank.stats(namespace=namespace, now=now)["by_tier"]


def due_steps(bank: MaintenanceSource, now: Any = None, plan: MaintenancePlan | None = None) -> list[str]:
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


def plan_run(
    source: MaintenanceSource,
    *,
    now: Any = None,
    plan: MaintenancePlan | None = None,
    steps: Iterable[str] | str | None = None,
    namespace: str | None = None,
    client: LLMClient | None = None,
    progress: ProgressFn | None = None,
) -> MaintenanceWork:
    """Plan a maintenance run from the bank's data; changes nothing (``client``, an optional LLM,
    judges conflicts and writes merged texts; rules and extractive merges otherwise).

    ``steps`` defaults to the due ones (see :func:`due_steps`); pass ``list(STEPS)`` to run all.
    ``progress(done, total, label)`` is called as work advances (the last tick when the run is
    recorded). Later steps plan against what earlier ones leave: a memory that expires is neither
    judged nor merged, one a rule supersedes is not merged, and a new conflict left open holds its
    memories out of merges, as the bank's state would after the earlier steps.
    """
    plan = plan or MaintenancePlan()
    now_dt = parse_time(now, "now") or utcnow()
    if isinstance(steps, str):
        steps = [steps]
    steps = due_steps(source, now_dt, plan) if steps is None else list(steps)
    for s in steps:
        if s not in STEPS:
            raise ValidationError(f"unknown maintenance step {s!r}; steps are {', '.join(STEPS)}")
    work = MaintenanceWork(plan=plan, now=now_dt, steps=steps, namespace=namespace, started=utcnow(),
                           progress=progress)
    namespaces = [namespace] if namespace else [ns for ns, n in source.namespaces() if n]
    work.total = len(namespaces) * len(steps) + 1
    gone: set[int] = set()  # memories earlier steps expire or supersede: later steps leave them be
    held: dict[str, set[int]] = {}  # by namespace: memories in a conflict that stays open

    if "cleanup" in steps:
        _plan_expiry(source, work)
        gone.update(work.expire)
        for ns in namespaces:
            held[ns] = _plan_cleanup(source, work, ns, gone, client)
            work.tick(f"cleanup {ns}")

    if "merge" in steps:
        for ns in namespaces:
            if ns not in held:
                held[ns] = {i for c in source.conflicts(namespace=ns, status="open") for i in (c.a.id, c.b.id)}
            cands = merge.candidates(*source.live_vectors(ns), source.memories(ns, status="active", limit=None),
                                     held=held[ns], exclude=gone)
            for cluster, preview in merge.plan_merges(cands, threshold=plan.merge_threshold, client=client,
                                                         model=source.model):
                if not _merges_unattended(cluster, client, source.model):
                    continue
                change = PlannedChange("merge", "merge", list(cluster.ids),
                                       f"{cluster.reason} ({preview.path}): {preview.text!r}", ns)
                work.changes.append(change)
                work.merges.append(PlannedMerge(change, cluster.ids, preview.text, preview.path, preview.detail))
                work.counts["merges"] += 1
                work.counts["merged"] += len(cluster.ids)
            work.tick(f"merge {ns}")
    return work


def _merges_unattended(cluster: merge.Cluster, client: LLMClient | None, model: str | None) -> bool:
    """Whether a run merges ``cluster`` without an operator: an exact duplicate, a cluster the LLM
    or a cosine bar set by hand found, or one every pair of which clears the classifier's automatic bar."""
    scorer = merge_pairs.scorer(model)
    if client is not None or cluster.confidence is None or scorer is None:
        return True
    return cluster.confidence >= scorer.auto_bar


def _plan_expiry(source: MaintenanceSource, work: MaintenanceWork) -> None:
    """Plan the cleanup's expiries (and, by durability, its reviews) into ``work``."""
    plan, now = work.plan, work.now
    if plan.expire_rule == "age_importance":
        for m in source.expiry_candidates(now=now, older_than_days=plan.expire_after_days,
                                          below_importance=plan.expire_below_importance,
                                          unused_days=plan.unused_days, namespace=work.namespace):
            _add_row(work, "expire", m, f"older than {plan.expire_after_days:g} days with importance "
                     f"{m.importance:.2f} (under {plan.expire_below_importance:g})")
        return
    for m in source.expiry_candidates(now=now, older_than_days=0, below_importance=None, unused_days=0,
                                      namespace=work.namespace, durability="transient"):
        why = transient_due(m, plan, now)
        if why is not None:
            _add_row(work, "expire", m, why)
    for m in source.expiry_candidates(now=now, older_than_days=plan.expire_after_days, below_importance=None,
                                      unused_days=plan.unused_days, namespace=work.namespace, durability="durable"):
        _add_row(work, "review", m, f"durable and unused for {plan.unused_days:g} days: review it (a durable "
                 "memory is never expired for age or disuse alone)")


def transient_due(m: Memory, plan: MaintenancePlan, now: datetime) -> str | None:
    """Why a transient memory's time has passed at ``now`` under ``plan`` (None: not yet)."""
    reading = durability_mod.infer(m.text, m.category, m.kind, m.importance)
    # Marked transient by hand where the text names no time: by age and disuse, as a log is.
    horizon = reading.horizon if reading.durability == "transient" else "age"
    age = now - m.created_at
    if horizon == "date":
        date = durability_mod.named_date(m.text or "", m.created_at)
        if date is not None:
            return (f"transient, dated {date:%Y-%m-%d} ({reading.reason}): over for {plan.after_date_days:g} days"
                    if now >= date + timedelta(days=1 + plan.after_date_days) else None)
        horizon = "week"
    if horizon == "day":
        return (f"transient, a day's state ({reading.reason}): older than {plan.day_state_days:g} days"
                if age >= timedelta(days=plan.day_state_days) else None)
    if horizon == "week":
        return (f"transient, a week's state ({reading.reason}): older than {plan.week_state_days:g} days"
                if age >= timedelta(days=plan.week_state_days) else None)
    unused = m.last_accessed_at is None or now - m.last_accessed_at >= timedelta(days=plan.transient_after_days)
    if age >= timedelta(days=plan.transient_after_days) and unused:
        return (f"transient ({reading.reason if reading.durability == 'transient' else 'marked so'}): older than "
                f"{plan.transient_after_days:g} days and unused as long")
    return None


def _add_row(work: MaintenanceWork, action: str, m: Memory, reason: str) -> None:
    """One expiry or review row, with why: durability, reason, age and last use."""
    used = "never recalled" if m.last_accessed_at is None else f"last recalled {m.last_accessed_at:%Y-%m-%d}"
    # An erased memory's words must not survive in the run's report either.
    what = f"memory {m.id}" if action == "expire" and work.plan.expire_action == "hard" else repr(m.text)
    age = (work.now - m.created_at).total_seconds() / 86400
    work.changes.append(PlannedChange(
        "cleanup", action, [m.id], f"{what}: {reason}; created {m.created_at:%Y-%m-%d}, importance "
        f"{m.importance:.2f}, {used}", m.namespace,
        why={"durability": m.durability, "reason": reason, "age_days": round(age, 1),
             "last_used": None if m.last_accessed_at is None else m.last_accessed_at.isoformat()}))
    if action == "expire":
        work.expire.append(m.id)
        work.counts["expired"] += 1
    else:
        work.counts["review"] += 1


def _plan_cleanup(source: MaintenanceSource, work: MaintenanceWork, ns: str, gone: set[int],
                  client: LLMClient | None) -> set[int]:
    """Plan one namespace's conflict work: detect new contradictions among the memories that stay,
    resolve those a clear rule settles. Returns the memories held by conflicts that stay open."""
    plan = work.plan
    recorded = source.conflicts(namespace=ns, status=None)  # newest first
    new: list[Conflict] = []
    first = len(work.findings)
    if plan.detect_conflicts:
        ids, vectors = _live_except(*source.live_vectors(ns), gone)
        scale = model_defaults(source.model)
        everyone = source.get_many(ids.tolist())  # a scan reads every text: the slots of all
        index = conflicts.SlotIndex()  # the slots (and languages) an add's check reads, by the same rule
        index.add({m: mem.text for m, mem in everyone.items()})
        pairs = conflicts.pairs_to_judge(ids, vectors, band=conflicts.candidate_band(scale.on_model),
                                         slots=index.slots_of, languages=index.languages)
        if pairs:
            memories = {m: everyone[m] for m in sorted({i for p in pairs for i in p})}
            across = conflicts.across_language_pairs(pairs, ids, vectors, _texts(source, memories)) \
                if scale.across_languages else set()
            found = conflicts.find(pairs, ids, vectors, memories, {(c.a.id, c.b.id) for c in recorded},
                                   client=client, to_reference=scale.to_reference, across=across)
            work.findings += found
            new = conflicts.preview(found, memories, ns)
            work.counts["conflicts_detected"] += len(found)
    # In the order the bank lists open conflicts once the new ones are recorded: newest first.
    pending = [(c, first + i) for i, c in reversed(list(enumerate(new)))]
    pending += [(c, None) for c in recorded if c.status == "open"]
    stay_open = []
    for c, finding in pending:
        rule = None
        if plan.resolve_conflicts and c.a.id not in gone and c.b.id not in gone:
            rule = conflicts.auto_rule(c, min_confidence=plan.conflict_min_confidence)
        if rule is None:
            stay_open.append(c)
            continue
        loser = c.a if rule == "newer_wins" or c.a.kind == "inferred" else c.b
        gone.add(loser.id)
        change = PlannedChange("cleanup", "resolve_conflict", [c.a.id, c.b.id], _resolution_detail(c.id, rule, c), ns)
        work.changes.append(change)
        work.resolutions.append(Resolution(change, c, rule, finding))
        work.counts["superseded"] += 1
    return {i for c in stay_open for i in (c.a.id, c.b.id)}


def _resolution_detail(conflict_id: int, rule: str, c: Conflict) -> str:
    name = f"conflict {conflict_id}" if conflict_id else "a new conflict"
    return f"{name} by {rule}: {c.a.text!r} vs {c.b.text!r}"


def _live_except(ids: np.ndarray, vectors: np.ndarray, gone: set[int]) -> tuple[np.ndarray, np.ndarray]:
    """A namespace's live ids and vectors without ``gone`` (copied only when one of them is there)."""
    if not gone or not len(ids):
        return ids, vectors
    keep = ~np.isin(ids, np.fromiter(gone, dtype=np.int64, count=len(gone)))
    return (ids, vectors) if keep.all() else (ids[keep], vectors[keep])


def _texts(source: MaintenanceSource, known: dict[int, Memory]) -> Callable[[list[int]], dict[int, str]]:
    """Texts of memory ids (for :func:`conflicts.across_language_pairs`): from ``known``, else the source."""
    def texts(mids: list[int]) -> dict[int, str]:
        out = {m: known[m].text for m in mids if m in known}
        rest = [m for m in mids if m not in out]
        if rest:
            out.update({m: mem.text for m, mem in source.get_many(rest).items() if mem.text})
        return out
    return texts
