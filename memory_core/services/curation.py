"""Curation: contradictions and their resolution, merges, and maintenance runs.

Finding conflicts and planning merges is the work of :mod:`memory_core.curation.conflicts` and
:mod:`memory_core.curation.merge`; this module records what they found and applies an operator's (or a
rule's) decision as one undoable operation of :class:`~memory_core.services.changes.Changes`.
"""

from __future__ import annotations

import json
import weakref
from datetime import datetime
from typing import TYPE_CHECKING, Any, Callable, Iterable, NamedTuple

import numpy as np

from . import rows as rowmod
from .changes import Changes
from ..storage.clock import to_aware, to_naive_utc, utcnow
from ..embedding.embedder import model_defaults
from ..errors import MemoryCoreError, NotFoundError, StateError, ValidationError
from ..models import (
    CONFLICT_STATUSES, RESOLUTIONS, Conflict, Memory, MergeRecord, check_choice, check_id, check_namespace, check_text,
)
from .queries import Queries, where_equal
from ..storage import tables, transaction_parts
from .writer import Writer

if TYPE_CHECKING:
    from .core import Core

# Called by add_each once its rows are committed: (each row's id or error, the stored memories by id).
StoredHook = Callable[[list["int | MemoryCoreError"], dict[int, Memory]], None]
# What judging new memories needs, copied out of an index: candidate pairs, their ids, vectors,
# memories by id, the new memories' ids, and the pairs the rules may judge across languages
# (Curation._judging_in).
Judging = tuple[list[tuple[int, int]], np.ndarray, np.ndarray, dict[int, Memory], list[int], set[tuple[int, int]]]


class HeldRead(NamedTuple):
    """What an add's own check read in the hold that wrote its memories, so that recording what it
    found need not read it again: the judged memories as the store holds them (nobody else can
    have changed them in the hold), and the ids written in it (in no recorded conflict yet)."""

    rows: dict[int, Memory]
    written: frozenset[int]


def _conflict_from_row(row: dict[str, Any], memories: dict[int, Memory]) -> Conflict:
    return Conflict(
        id=row["id"], namespace=row["namespace"], a=memories[row["a_id"]], b=memories[row["b_id"]],
        kind=row["kind"], evidence=row["evidence"], confidence=row["confidence"], suggestion=row["suggestion"],
        path=row["path"], status=row["status"], resolution=row["resolution"],
        detected_at=to_aware(row["detected_at"]), resolved_at=to_aware(row["resolved_at"]),
        group_id=row["group_id"])


class Curation:
    """Records and resolves one bank's conflicts, merges and maintenance runs."""

    def __init__(self, core: "Core", writer: Writer, changes: Changes, queries: Queries):
        self.core = core
        self.writer = writer
        self.changes = changes
        self.queries = queries
        # Per loaded namespace index, which of its memories fill each subject slot (built on the
        # first add that checks for conflicts, then kept up by each add): an add's slot pairs.
        self._slot_indexes: weakref.WeakKeyDictionary[Any, conflicts.SlotIndex] = weakref.WeakKeyDictionary()

    def conflicts(self, namespace: str | None = None, status: str | None = "open",
                  memory_id: int | None = None) -> list[Conflict]:
        """Recorded contradictions, newest first; ``status=None`` for every status."""
        where, params = where_equal(
            namespace=None if namespace is None else check_namespace(namespace),
            status=None if status is None else check_choice(status, CONFLICT_STATUSES, "status"))
        if memory_id is not None:
            where += " AND (a_id = ? OR b_id = ?)"
            params += [check_id(memory_id)] * 2
        with self.core.session(write=False) as con:
            rows = con.arrow(f"SELECT * FROM conflicts WHERE {where} ORDER BY id DESC", params).to_pylist()
            memories = self.core.get_rows(con, sorted({r["a_id"] for r in rows} | {r["b_id"] for r in rows}))
        return [_conflict_from_row(r, memories) for r in rows]

    def conflict(self, conflict_id: int) -> Conflict:
        """One recorded conflict by id."""
        cid = check_id(conflict_id)
        with self.core.session(write=False) as con:
            return self.conflict_in(con, cid)

    def conflict_in(self, con: Any, cid: int) -> Conflict:
        rows = con.arrow("SELECT * FROM conflicts WHERE id = ?", [cid]).to_pylist()
        if not rows:
            raise NotFoundError(f"no conflict with id {cid}")
        return _conflict_from_row(rows[0], self.core.get_rows(con, [rows[0]["a_id"], rows[0]["b_id"]]))

    def record_conflict(self, a_id: int, b_id: int, *, kind: str, evidence: str, confidence: float,
                        suggestion: str, path: str) -> Conflict | None:
        """Record that two live memories of one namespace contradict each other.

        Returns None when the pair was recorded before, whatever became of it: a dismissed pair is
        never flagged again, and an open one is not flagged twice.
        """
        return self.record_conflicts([dict(a_id=a_id, b_id=b_id, kind=kind, evidence=evidence,
                                           confidence=confidence, suggestion=suggestion, path=path)])[0]

    def record_conflicts(self, found: list[dict[str, Any]]) -> list[Conflict | None]:
        """Record several conflicts (dicts of :meth:`record_conflict`'s arguments) in one operation;
        a bad one refuses them all. Returns each recorded Conflict, or None for a known pair."""
        checked = self._check_found(found)
        with self.core.session() as con:
            new_ids, _ = self._record_in(con, checked)
            return [None if cid is None else self.conflict_in(con, cid) for cid in new_ids]

    @staticmethod
    def _check_found(found: list[dict[str, Any]]) -> list[tuple[int, int, dict[str, Any]]]:
        checked = []
        for f in found:
            a_id, b_id = check_id(f["a_id"]), check_id(f["b_id"])
            if a_id == b_id:
                raise ValidationError("a memory cannot contradict itself")
            confidence = f["confidence"]
            if isinstance(confidence, bool) or not isinstance(confidence, (int, float)) or not 0 <= confidence <= 1:
                raise ValidationError(f"confidence must be between 0 and 1, got {confidence!r}")
            checked.append((a_id, b_id, f))
        return checked

    def _record_in(self, con: Any, checked: list[tuple[int, int, dict[str, Any]]], *,
                   live_only: bool = False, seen: HeldRead | None = None) -> tuple[list[int | None], int | None]:
        """Record checked conflicts in ``con``'s transaction; the new conflicts' ids (None: known
        pair), and the change number taken (None: nothing new). With ``live_only``, a pair one of
        whose memories is no longer live (changed by another server since it was judged) is left
        out (None) instead of refused.

        A fixed handful of statements however many there are (an add that finds one conflict used
        to spend nine): one read of the pairs, one of the known ones, one for every counter, one
        insert of the conflicts and one of their events. ``seen`` (an add's own check, in the hold
        that wrote: see :class:`HeldRead`) spares the two reads."""
        if not checked:
            return [], None
        wanted = sorted({i for a, b, _ in checked for i in (a, b)})
        if seen is not None and all(i in seen.rows for i in wanted):
            pairs = {i: seen.rows[i] for i in wanted}
        else:
            pairs = self.core.get_rows(con, wanted, missing_ok=live_only)
        ordered: list[tuple[Memory, Memory, dict[str, Any]] | None] = []
        for a_id, b_id, f in checked:
            if live_only and not all(i in pairs and pairs[i].status == "active" for i in (a_id, b_id)):
                ordered.append(None)
                continue
            a, b = sorted((pairs[a_id], pairs[b_id]), key=lambda m: (m.created_at, m.id))
            if a.namespace != b.namespace:
                raise ValidationError("a conflict is between memories of one namespace; these are in "
                                      f"{a.namespace!r} and {b.namespace!r}")
            if a.status != "active" or b.status != "active":
                raise StateError(f"only live memories conflict; memory {a.id} is {a.status}, {b.id} is {b.status}")
            ordered.append((a, b, f))
        live = [o for o in ordered if o is not None]
        if not live:
            return [None] * len(ordered), None
        if seen is not None and all(a.id in seen.written or b.id in seen.written for a, b, _ in live):
            known: set[tuple[int, int]] = set()  # a memory written in this hold is in no recorded conflict
        else:
            where, params = tables.ids_in("a_id", sorted({a.id for a, _, _ in live}))
            known = set(con.execute(f"SELECT a_id, b_id FROM conflicts WHERE {where}", params).fetchall())
        new: list[tuple[Memory, Memory, dict[str, Any]] | None] = []
        for o in ordered:
            new.append(o if o is not None and (o[0].id, o[1].id) not in known else None)
            if o is not None:
                known.add((o[0].id, o[1].id))
        fresh = [n for n in new if n is not None]
        if not fresh:
            return [None] * len(new), None
        # change_seq: other processes' caches of conflicts must notice.
        wanted = {"next_conflict_id": len(fresh), "next_event_id": len(fresh), "change_seq": 1}
        # Counters a bank file's lease knows: the three writes as one statement (tables.run_as_one).
        pending: list[tables.Statement] | None = [] if tables.knows_counters(con, wanted) else None
        first = tables.take_counters(con, wanted, pending)
        now = to_naive_utc(utcnow())
        ids = range(first["next_conflict_id"], first["next_conflict_id"] + len(fresh))
        tables.insert_values(
            con, "conflicts", ("id", "namespace", "a_id", "b_id", "kind", "evidence", "confidence", "suggestion", "path",
                               "status", "detected_at"),
            [(cid, a.namespace, a.id, b.id, f["kind"], f["evidence"], float(f["confidence"]), f["suggestion"], f["path"],
              "open", now) for cid, (a, b, f) in zip(ids, fresh)], pending)
        tables.insert_values(
            con, "events", tables.EVENT_INSERT_COLUMNS,
            [(eid, now, self.core.actor, "conflict_detected", None, None,
              json.dumps({"conflict_id": cid, "a_id": a.id, "b_id": b.id, "kind": f["kind"]}, ensure_ascii=False),
              None, None, a.namespace)
             for eid, cid, (a, b, f) in zip(range(first["next_event_id"], first["next_event_id"] + len(fresh)),
                                            ids, fresh)], pending)
        if pending:
            tables.run_as_one(con, pending)
        taken = iter(ids)
        return [None if n is None else next(taken) for n in new], first["change_seq"] + 1

    def resolve_conflict(self, conflict_id: int, rule: str, *, memory_id: int | None = None,
                         text: str | None = None) -> Conflict:
        """Resolve a conflict by a rule; one undoable operation (``undo_group(conflict.group_id)``).

        * ``newer_wins``: the older memory becomes superseded, linked to the newer.
        * ``explicit_wins``: the inferred memory becomes superseded by the explicit one.
        * ``keep_both``: both stay; recall returns them together and the prompt states the contradiction.
        * ``edit``: ``memory_id`` (one of the two) gets ``text``; the conflict is resolved.
        * ``dismiss``: not a conflict; the pair is never flagged again.
        """
        cid = check_id(conflict_id)
        check_choice(rule, RESOLUTIONS, "rule")
        conflict = self.conflict(cid)
        if conflict.status not in ("open", "acknowledged"):
            raise StateError(f"conflict {cid} is already {conflict.status} ({conflict.resolution}); undo that first")
        a, b = conflict.a, conflict.b
        changes: dict[int, dict[str, Any]] = {}
        if rule != "dismiss":
            for m in (a, b):
                if m.status != "active" and rule != "keep_both":
                    raise StateError(f"memory {m.id} is {m.status} since the conflict was found; the conflict "
                                     "is moot: dismiss it")
        if rule == "newer_wins":
            changes[a.id] = {"status": "superseded", "superseded_by": b.id}
        elif rule == "explicit_wins":
            if a.kind == b.kind:
                raise StateError(f"both memories are {a.kind}; use newer_wins, keep_both or edit")
            loser, winner = (a, b) if a.kind == "inferred" else (b, a)
            changes[loser.id] = {"status": "superseded", "superseded_by": winner.id}
        elif rule == "edit":
            if memory_id not in (a.id, b.id):
                raise ValidationError(f"edit needs memory_id {a.id} or {b.id} (one of the two)")
            changes[memory_id] = {"text": check_text(text)}
        elif memory_id is not None or text is not None:
            raise ValidationError(f"{rule} takes no memory_id or text")
        status = {"keep_both": "acknowledged", "dismiss": "dismissed"}.get(rule, "resolved")
        before = {"conflict_id": cid, "status": conflict.status, "resolution": conflict.resolution,
                  "resolved_at": conflict.resolved_at.isoformat() if conflict.resolved_at else None,
                  "resolved_by": None, "group_id": conflict.group_id}

        def mark(con: Any, group: int, _: list[int]) -> None:
            con.execute("UPDATE conflicts SET status = ?, resolution = ?, resolved_at = ?, resolved_by = ?, "
                        "group_id = ? WHERE id = ?", [status, rule, to_naive_utc(utcnow()), self.core.actor, group, cid])
            tables.log_event(con, self.core.actor, "resolve_conflict", None, before,
                            {"conflict_id": cid, "status": status, "resolution": rule}, utcnow(), None, group,
                            namespace=conflict.namespace)

        self.changes.change(changes, "resolve_conflict", extra=mark, note=f"conflict {cid}: {rule}")
        return self.conflict(cid)

    def dismiss_conflicts(self, conflict_ids: Iterable[int]) -> int | None:
        """Dismiss several conflicts as one undoable operation; returns its group (None for no ids).

        A triage of many false alarms is one Undo, not one per pair. Every conflict must be open or
        acknowledged (checked inside the transaction): otherwise nothing is dismissed.
        """
        cids = sorted({check_id(c) for c in conflict_ids})
        if not cids:
            return None
        found = {c.id: c for c in (self.conflict(cid) for cid in cids)}  # NotFoundError for an unknown id

        def mark(con: Any, group: int, _: list[int]) -> None:
            rows = con.execute("SELECT id, status, resolution, resolved_at, resolved_by, group_id FROM conflicts "
                               "WHERE id IN (SELECT unnest(?))", [cids]).fetchall()
            for cid, status, resolution, resolved_at, resolved_by, old_group in rows:
                if status not in ("open", "acknowledged"):
                    raise StateError(f"conflict {cid} is already {status} ({resolution}); nothing was dismissed")
            now = utcnow()
            con.execute("UPDATE conflicts SET status = 'dismissed', resolution = 'dismiss', resolved_at = ?, "
                        "resolved_by = ?, group_id = ? WHERE id IN (SELECT unnest(?))",
                        [to_naive_utc(now), self.core.actor, group, cids])
            for cid, status, resolution, resolved_at, resolved_by, old_group in rows:
                before = {"conflict_id": cid, "status": status, "resolution": resolution,
                          "resolved_at": resolved_at.isoformat() if resolved_at else None,
                          "resolved_by": resolved_by, "group_id": old_group}
                tables.log_event(con, self.core.actor, "resolve_conflict", None, before,
                                 {"conflict_id": cid, "status": "dismissed", "resolution": "dismiss"}, now, None,
                                 group, namespace=found[cid].namespace)

        group, _, _ = self.changes.change({}, "resolve_conflict", extra=mark,
                                          note=f"dismiss {len(cids)} conflict{'s' if len(cids) != 1 else ''}")
        return group

    def acknowledged_pairs(self, con: Any) -> dict[int, set[int]]:
        if self.core.acknowledged is None:
            pairs: dict[int, set[int]] = {}
            for a, b in con.execute("SELECT a_id, b_id FROM conflicts WHERE status = 'acknowledged'").fetchall():
                pairs.setdefault(a, set()).add(b)
                pairs.setdefault(b, set()).add(a)
            self.core.acknowledged = pairs
        return self.core.acknowledged

    def merge(self, ids: Iterable[int], text: str | None = None, *, path: str = "manual",
              detail: str | None = None) -> MergeRecord:
        """Merge live memories of one namespace into a new one; one undoable operation.

        The new memory takes ``text`` (default: an extractive merge keeping every distinct fact), the
        highest importance, the newest date, the summed access counts, "explicit" if any member is,
        the most common category; the members become ``merged`` with ``merged_into`` set.
        """
        if isinstance(ids, (str, bytes)):
            raise ValidationError("ids must be a list of memory ids")
        member_ids = sorted({check_id(i) for i in ids})
        if len(member_ids) < 2:
            raise ValidationError("a merge needs at least two different memories")
        with self.core.session(write=False) as con:
            members = self.core.get_rows(con, member_ids)
        namespaces = {m.namespace for m in members.values()}
        if len(namespaces) > 1:
            raise ValidationError(f"a merge stays within one namespace; these span {', '.join(sorted(namespaces))}")
        for m in members.values():
            if m.status != "active":
                raise StateError(f"memory {m.id} is {m.status}; only live memories can be merged")
        ms = [members[i] for i in member_ids]
        from ..curation import merge as merge_mod
        text = check_text(text) if text is not None else merge_mod.extractive_merge([m.text for m in ms])
        last = [m.last_accessed_at for m in ms if m.last_accessed_at is not None]
        row = self.writer.check_row({
            "text": text, "namespace": ms[0].namespace, **merge_mod.merged_fields(ms),
            "last_accessed_at": max(last) if last else None, "source": "merge",
            "pinned": any(m.pinned for m in ms),
            # A merge lasts when one of its members does (a durable fact is never merged away).
            "durability": "durable" if any(m.durability == "durable" for m in ms) else "transient"}, utcnow())
        with self.core.session() as con:
            new_id = tables.take_ids(con, "next_id", 1)  # reserved, so the members can point at it
        row["id"] = new_id
        changes = {m.id: {"status": "merged", "merged_into": new_id} for m in ms}
        record: dict[str, int] = {}

        def log(con: Any, group: int, _: list[int]) -> None:
            mid = tables.take_ids(con, "next_merge_id", 1)
            con.execute("INSERT INTO merges VALUES (?, ?, ?, ?, ?, ?, ?, ?, NULL)",
                        [mid, ms[0].namespace, new_id, member_ids, path, detail, group, to_naive_utc(utcnow())])
            tables.log_event(con, self.core.actor, "merge", None, None,
                            {"merge_id": mid, "merged_id": new_id, "member_ids": member_ids}, utcnow(), None, group,
                            namespace=ms[0].namespace)
            record["id"] = mid

        self.changes.change(changes, "merge", require_status=("active",), new_rows=[row],
                     new_vectors=self.writer.vectors_for([row]), extra=log, note=f"merged into {new_id}")
        return self.merges(merge_id=record["id"])[0]

    def merges(self, namespace: str | None = None, *, merge_id: int | None = None,
               include_undone: bool = True) -> list[MergeRecord]:
        """Past merges, newest first."""
        where, params = where_equal(namespace=None if namespace is None else check_namespace(namespace),
                                    id=None if merge_id is None else check_id(merge_id))
        if not include_undone:
            where += " AND undone_at IS NULL"
        with self.core.session(write=False) as con:
            rows = con.arrow(f"SELECT * FROM merges WHERE {where} ORDER BY id DESC", params).to_pylist()
        if merge_id is not None and not rows:
            raise NotFoundError(f"no merge with id {merge_id}")
        return [MergeRecord(id=r["id"], namespace=r["namespace"], merged_id=r["merged_id"],
                            member_ids=tuple(r["member_ids"]), path=r["path"], detail=r["detail"],
                            group_id=r["group_id"], created_at=to_aware(r["created_at"]),
                            undone_at=to_aware(r["undone_at"])) for r in rows]

    def undo_merge(self, merge_id: int) -> None:
        """Undo a merge: the members come back as they were and the merged memory is removed."""
        record = self.merges(merge_id=merge_id)[0]
        if record.undone_at is not None:
            raise StateError(f"merge {record.id} was already undone")
        self.changes.undo_group(record.group_id)

    def record_maintenance_run(self, *, started_at: datetime, dry_run: bool, plan: dict[str, Any],
                               report: dict[str, Any]) -> int:
        """Log a maintenance run (dry or real) with its plan and report; returns its id."""
        with self.core.session() as con:
            rid = tables.take_ids(con, "next_run_id", 1)
            con.execute("INSERT INTO maintenance_runs VALUES (?, ?, ?, ?, ?, ?, ?)",
                        [rid, to_naive_utc(started_at), to_naive_utc(utcnow()), self.core.actor, dry_run,
                         json.dumps(plan, default=str), json.dumps(report, default=str, ensure_ascii=False)])
        return rid

    def undo_maintenance_run(self, run_id: int) -> list[int]:
        """Undo everything a maintenance run changed (its expiries, resolutions and merges), all or
        nothing, and note it in the run's report (``undone``); returns the undo groups. Refused for a
        dry run, a run already undone, one that changed nothing undoable (a hard expiry erases for
        good), and when a memory the run changed has changed since."""
        rid = check_id(run_id)
        with self.core.session(write=False) as con:
            rows = con.arrow("SELECT * FROM maintenance_runs WHERE id = ?", [rid]).to_pylist()
        if not rows:
            raise NotFoundError(f"no maintenance run {rid}")
        run = rows[0]
        if run["dry_run"]:
            raise StateError(f"maintenance run {rid} was a dry run: it changed nothing")
        report = json.loads(run["report"] or "{}")
        if report.get("undone"):
            raise StateError(f"maintenance run {rid} was already undone")
        groups = list(dict.fromkeys(c["group_id"] for c in report.get("changes", []) if c.get("group_id") is not None))
        if not groups:
            raise StateError(f"maintenance run {rid} changed nothing that can be undone")
        undos = self.changes.undo_groups(groups)
        report["undone"] = {"at": utcnow().isoformat(), "by": self.core.actor, "groups": undos}
        with self.core.session() as con:
            con.execute("UPDATE maintenance_runs SET report = ? WHERE id = ?",
                        [json.dumps(report, default=str, ensure_ascii=False), rid])
        return undos

    def maintenance_runs(self, limit: int = 20, include_dry_runs: bool = True) -> list[dict[str, Any]]:
        """Past maintenance runs, newest first, with their plans and reports."""
        where = "" if include_dry_runs else "WHERE NOT dry_run"
        with self.core.session(write=False) as con:
            rows = con.arrow(f"SELECT * FROM maintenance_runs {where} ORDER BY id DESC LIMIT {int(limit)}").to_pylist()
        for r in rows:
            r["started_at"], r["finished_at"] = to_aware(r["started_at"]), to_aware(r["finished_at"])
            r["plan"], r["report"] = json.loads(r["plan"] or "{}"), json.loads(r["report"] or "{}")
        return rows

    # -- finding and applying: engines find, this service records --------------------------------

    def detect_conflicts(self, namespace: str, *, memory_ids: Iterable[int] | None = None,
                         client: Any = None) -> list[Conflict]:
        """Find and record contradictions in ``namespace`` (only involving ``memory_ids`` when given);
        returns the newly recorded ones. See :func:`memory_core.curation.conflicts.find`."""
        wanted = None if memory_ids is None else {int(i) for i in memory_ids}
        if wanted is not None and client is None:  # the rules alone: as an add checks what it wrote
            with self.core.held() as con:
                return [self.conflict_in(con, cid) for cid in self._check_in(con, {namespace: sorted(wanted)})]
        ids, vectors = self.queries.live_vectors(namespace)
        scale = model_defaults(self.core.model)
        from ..curation import conflicts
        with self.core.held() as con:  # a scan: the slots of every memory, from the same slot index an add reads
            slots = self._slot_index_in(con, namespace, ids.tolist() if wanted is None else wanted)
            languages = self._slot_languages(con, namespace)
        pairs = conflicts.pairs_to_judge(ids, vectors, wanted, band=self._band(), slots=slots, languages=languages)
        if not pairs:
            return []
        known = ({(c.a.id, c.b.id) for c in self.conflicts(namespace=namespace, status=None)} if wanted is None
                 else {(c.a.id, c.b.id) for mid in wanted for c in self.conflicts(status=None, memory_id=mid)})
        memories = self.queries.get_many(sorted({i for p in pairs for i in p}))
        across = conflicts.across_language_pairs(pairs, ids, vectors, self._texts(memories)) \
            if scale.across_languages else set()
        found = conflicts.find(pairs, ids, vectors, memories, known, memory_ids=wanted, client=client,
                               to_reference=scale.to_reference, across=across)
        return [c for c in self.record_conflicts(found) if c is not None] if found else []

    def add(self, row: dict[str, Any], *, detect: bool = True, client: Any = None, dedupe: bool = True) -> int:
        """Store one memory and flag what it contradicts in its namespace; returns its id (see
        :meth:`add_each`)."""
        result = self.add_each([row], detect=[detect], client=client, dedupe=[dedupe])[0]
        if isinstance(result, Exception):
            raise result
        return result

    def add_each(self, rows: list[dict[str, Any]], *, detect: list[bool] | None = None,
                 client: Any = None, on_stored: StoredHook | None = None,
                 dedupe: list[bool] | None = None) -> list[int | MemoryCoreError]:
        """Store each row (of :meth:`Writer.add_many`) as :meth:`add` would, together: one
        embedding batch and one transaction for the rows that pass their checks; a bad row gets
        its error in its place and the others are stored. ``detect[i]`` (default: all) says
        whether row i is checked for contradictions.

        A row whose text an active memory of its namespace already has (or an earlier row of the
        call: the content hash, whitespace normalised) is not stored again unless ``dedupe[i]`` is
        false (default: all are deduplicated): its result is that memory's id, and the memory is
        reinforced (one more access, the later access time, the higher importance; a "reinforce"
        event in its history), in the same hold as the write. A text equal to an archived (or
        merged, superseded) memory is stored as a new memory: what was forgotten stays forgotten.

        The model embeds the rows first; then the write and, with the rules, the check take the
        file once (one hold; the write is one transaction, what the check found another: the
        memories are stored even if the check fails, as when they ran apart), so an agent adding
        memories one at a time neither opens the file for each step nor lets another process in
        between them. On a database other servers write, the rules judge outside the write lock
        and what they found is recorded in a second, short hold. An LLM judge runs after the
        write, outside the hold: other processes would wait for its answers.
        ``on_stored(results, memories)`` is called once the rows are committed, before the check,
        with the results so far and the stored memories by id: a server answers its callers
        there, and they need not wait for the rules.
        """
        now = utcnow()
        results: list[int | MemoryCoreError | None] = [None] * len(rows)
        good: list[tuple[int, dict[str, Any]]] = []
        for i, row in enumerate(rows):
            try:
                good.append((i, self.writer.check_row(row, now)))
            except MemoryCoreError as exc:
                results[i] = exc
        if not good:
            return results  # type: ignore[return-value]
        checked = [c for _, c in good]
        wanted = [detect is None or detect[i] for i, _ in good]
        work: list[Judging] = []
        with self.core.store.upcoming():
            try:
                vectors = self.writer.vectors_for(checked)
            except MemoryCoreError as exc:  # e.g. a given vector of the wrong dimension: each row alone
                if len(good) == 1:
                    results[good[0][0]] = exc
                    return results  # type: ignore[return-value]
                for i, _ in good:
                    results[i] = self.add_each([rows[i]], detect=None if detect is None else [detect[i]],
                                               client=client, dedupe=None if dedupe is None else [dedupe[i]])[0]
                return results  # type: ignore[return-value]
            with self.core.held() as con:
                # Repeats are looked up in the hold that writes: no other writer adds the same text between.
                stored, earlier = self.writer.repeats(checked, [dedupe is None or dedupe[i] for i, _ in good], con=con)
                repeats = {good[j][0]: (good[j][1], stored.get(j), good[earlier[j]][0] if j in earlier else None)
                           for j in (*stored, *earlier)}  # position -> (row, stored id, earlier position)
                if repeats:
                    keep = [j for j in range(len(good)) if good[j][0] not in repeats]
                    good, wanted, vectors = [good[j] for j in keep], [wanted[j] for j in keep], vectors[keep]
                    checked = [c for _, c in good]
                by_namespace: dict[str, list[int]] = {}
                for part in transaction_parts(self.core.store, [row["namespace"] for row in checked]):
                    try:
                        whole = len(part) == len(checked)
                        ids = self.writer.write(con, checked if whole else [checked[j] for j in part],
                                                vectors if whole else vectors[part])
                    except MemoryCoreError as exc:  # another namespace's rows may be stored already
                        if whole:
                            raise
                        ids = [exc] * len(part)
                    for j, mid in zip(part, ids):
                        results[good[j][0]] = mid
                        if wanted[j] and not isinstance(mid, MemoryCoreError):
                            by_namespace.setdefault(checked[j]["namespace"], []).append(mid)
                self._reinforce_in(con, results, repeats)
                ids = [mid for mid in results if isinstance(mid, int)]
                if on_stored is not None:
                    on_stored(list(results), self.core.get_many(con, ids))  # type: ignore[arg-type]
                if client is None:
                    if self.core.store.shared:
                        # Other servers write this database meanwhile: what judging needs is copied
                        # out here, and the rules judge it without the bank's write lock (or this
                        # process's), so neither another server's writes nor this one's recalls wait.
                        work = self._judging(con, by_namespace)
                    else:
                        self._check_in(con, by_namespace, written=True)
        if work:
            found = self._findings(work)
            if any(found):
                with self.core.held() as con:
                    self._record_found_in(con, found, live_only=True)
        if client is not None:
            for ns, mids in by_namespace.items():
                self.detect_conflicts(ns, memory_ids=mids, client=client)
        return results  # type: ignore[return-value]

    def _reinforce_in(self, con: Any, results: list[Any],
                      repeats: dict[int, tuple[dict[str, Any], int | None, int | None]]) -> None:
        """Give each repeated row its memory's id in ``results`` and reinforce those memories in the
        hold ``con`` (see :meth:`add_each`); a row whose memory cannot take it gets the error."""
        targets: dict[int, list[dict[str, Any]]] = {}
        for i, (row, mid, first) in sorted(repeats.items()):
            results[i] = mid if mid is not None else results[first]  # type: ignore[index]
            if isinstance(results[i], int):
                targets.setdefault(results[i], []).append(row)
        if not targets:
            return
        try:
            self.changes.reinforce_repeats_in(con, targets)
        except MemoryCoreError as exc:  # e.g. archived by another process since it was looked up
            for i in repeats:
                if results[i] in targets:
                    results[i] = type(exc)(f"{exc}; add the memory again")

    def _check_in(self, con: Any, by_namespace: dict[str, list[int]], *, written: bool = False) -> list[int]:
        """Find with the rules and record what these new memories contradict, in the hold ``con``
        (the check :meth:`add_each` runs after its write); the new conflicts' ids. ``written``:
        the memories were written in this very hold, so what judging read of them and of their
        pairs (in the hold) is what recording would read again (see :class:`HeldRead`)."""
        work = self._judging(con, by_namespace)
        seen = HeldRead({i: m for w in work for i, m in w[3].items()},
                        frozenset(i for w in work for i in w[4])) if written else None
        return self._record_found_in(con, self._findings(work), seen=seen)

    def _record_found_in(self, con: Any, found: list[list[tuple[int, int, dict[str, Any]]]], *,
                         live_only: bool = False, seen: HeldRead | None = None) -> list[int]:
        """Record checked findings (a list per namespace) in the hold ``con``: one transaction per
        namespace on a store that splits them, else one; the new conflicts' ids."""
        flat = [f for part in found for f in part]
        namespace_of = [k for k, part in enumerate(found) for _ in part]  # the k-th namespace judged
        new: list[int] = []
        for part in transaction_parts(self.core.store, namespace_of):
            with con.transaction():
                recorded, seq = self._record_in(con, [flat[i] for i in part], live_only=live_only, seen=seen)
            if seq is not None:
                # Open conflicts change no cache of this bank, and nobody else wrote since the
                # catch-up (the store is held): the next operation need not catch up.
                self.core.advance(seq)
            new += [cid for cid in recorded if cid is not None]
        return new

    def _findings(self, work: list[Judging]) -> list[list[tuple[int, int, dict[str, Any]]]]:
        """What the rules find the new memories contradict (what :meth:`detect_conflicts` finds for
        them without an LLM), checked for recording, a list per namespace: needs no store and no lock."""
        # Memories written in this very hold are in no recorded conflict yet: nothing is known.
        scale = model_defaults(self.core.model)
        from ..curation import conflicts
        return [self._check_found(conflicts.find(pairs, ids, vectors, memories, set(), memory_ids=new,
                                                 to_reference=scale.to_reference, across=across))
                for pairs, ids, vectors, memories, new, across in work]

    def _band(self) -> tuple[float, float]:
        """The cosines between which two memories are on one topic, on the bank's model's scale."""
        from ..curation import conflicts
        return conflicts.candidate_band(model_defaults(self.core.model).on_model)

    def _judging(self, con: Any, by_namespace: dict[str, list[int]]) -> list[Judging]:
        """:meth:`_judging_in` for the new memories of each namespace that has something to judge."""
        return [w for ns, mids in by_namespace.items() if (w := self._judging_in(con, ns, mids))]

    def _judging_in(self, con: Any, namespace: str, new: list[int]) -> Judging | None:
        """What judging the new memories against their namespace needs, copied out of the loaded
        index (read under the bank's lock, through ``con``): the candidate pairs, their ids,
        vectors and memories. None when there is nothing to judge."""
        idx = self.core.ns_index(con, namespace)
        if idx is None:
            return None
        from ..curation import conflicts
        pairs = conflicts.pairs_to_judge(idx.ids[: idx.n], idx.emb[: idx.n], new, row_of=idx.row_of,
                                         band=self._band(), slots=self._slot_index_in(con, namespace, new, idx),
                                         languages=self._slot_languages(con, namespace, idx))
        if not pairs:
            return None
        members = sorted({i for p in pairs for i in p})
        # The index holds what the judge reads of each memory (as recall's hits are built); only
        # rows it keeps no info for are read from the store.
        memories = {i: m for i in members if (m := rowmod.memory_from_index(idx, idx.row_of[i])) is not None}
        missing = [i for i in members if i not in memories]
        memories.update(self.core.get_rows(con, missing) if missing else {})
        across: set[tuple[int, int]] = set()
        if model_defaults(self.core.model).across_languages:  # the whole namespace's neighbours, in the hold
            across = conflicts.across_language_pairs(pairs, idx.ids[: idx.n], idx.emb[: idx.n],
                                                     self._texts(memories, con, idx), row_of=idx.row_of)
        # find() is given the pairs' own ids and vectors only (it maps ids to rows).
        ids = np.asarray(members, dtype=np.int64)
        vectors = idx.emb[[idx.row_of[m] for m in members]]  # a copy: the index may grow meanwhile
        return pairs, ids, vectors, memories, new, across

    def _slot_index_in(self, con: Any, namespace: str, new: Iterable[int],
                       idx: Any = None) -> dict[int, frozenset[str]]:
        """The subject slots of the ``new`` memories of ``namespace`` and of the memories that share
        one with them, from the namespace's slot index (:class:`conflicts.SlotIndex`, in step with its
        loaded index ``idx``; read through ``con``, in the hold): a dict lookup per add, not a scan."""
        idx = self.core.ns_index(con, namespace) if idx is None else idx
        if idx is None:
            return {}
        index = self._slot_indexes.get(idx)
        if index is None:
            from ..curation import conflicts
            index = self._slot_indexes[idx] = conflicts.SlotIndex()
        new = list(new)
        index.sync(idx.ids[: idx.n], self._texts({}, con, idx), new, idx.seqs[: idx.n])
        return index.around(new)

    def _slot_languages(self, con: Any, namespace: str, idx: Any = None) -> dict[int, str] | None:
        """The languages of the memories in ``namespace``'s slot index (after :meth:`_slot_index_in`)."""
        idx = self.core.ns_index(con, namespace) if idx is None else idx
        index = self._slot_indexes.get(idx) if idx is not None else None
        return None if index is None else index.languages

    def _texts(self, known: dict[int, Memory], con: Any = None,
               idx: Any = None) -> Callable[[list[int]], dict[int, str]]:
        """Texts of memory ids, for :func:`conflicts.across_language_pairs`: from ``known``, else the
        loaded index ``idx`` (read through ``con``, in the hold), else the store."""
        def texts(mids: list[int]) -> dict[int, str]:
            out = {m: known[m].text for m in mids if m in known}
            rest = [m for m in mids if m not in out]
            if idx is not None:
                for m in rest:
                    info = idx.info[idx.row_of[m]] if m in idx.row_of else None
                    if info is not None:
                        out[m] = info[0]
                rest = [m for m in rest if m not in out]
            if rest:
                got = self.core.get_rows(con, rest) if con is not None else self.queries.get_many(rest)
                out.update({m: mem.text for m, mem in got.items() if mem.text})
            return out
        return texts

    def apply_maintenance(self, work: Any, *, dry_run: bool = False) -> Any:
        """Make the changes a planned maintenance run lists (a :class:`memory_core.curation.maintenance.MaintenanceWork`),
        unless ``dry_run``, then record the run with its report; returns the report."""
        if not dry_run:
            # Each operation is one transaction and one undo group: a run stopped between two
            # leaves every memory either changed by a whole operation or not at all.
            action = work.plan.expire_action
            if work.expire:
                work.expired(self.changes.forget_many(work.expire, hard=action == "hard",
                                                      reason=f"maintenance: expired ({action})"))
                work.applied("expire")
            recorded = self.record_conflicts(work.findings) if work.findings else []
            for r in work.resolutions:
                c = r.conflict if r.finding is None else recorded[r.finding]
                if c is not None:  # None: another writer recorded the pair meanwhile; it stays for an operator
                    r.settle(c.id, self.resolve_conflict(c.id, r.rule).group_id)
                    work.applied("resolve_conflict")
            for m in work.merges:
                m.change.group_id = self.merge(m.ids, m.text, path=m.path, detail=m.detail).group_id
                work.applied("merge")
        report = work.report(dry_run, {**self.queries.usage_summary(work.namespace),
                                       "by_tier": self.queries.stats(namespace=work.namespace, now=work.now)["by_tier"]})
        report.run_id = self.record_maintenance_run(started_at=work.started, dry_run=dry_run,
                                                    plan=work.plan.to_dict(), report=report.to_dict())
        work.tick("report")
        return report

    def merge_candidates(self, namespace: str) -> list[Any]:
        """The live memories of ``namespace`` that could be merged (:class:`memory_core.curation.merge.Candidate`):
        all but the pinned ones and those in an open conflict."""
        ids, vectors = self.queries.live_vectors(namespace)
        held = {i for c in self.conflicts(namespace=namespace, status="open") for i in (c.a.id, c.b.id)}
        live = self.queries.memories(namespace, status="active", limit=None)
        from ..curation import merge as merge_mod
        return merge_mod.candidates(ids, vectors, live, held=held)

    def plan_merges(self, namespace: str, *, threshold: float | None = None, related_threshold: float | None = None,
                    client: Any = None, max_size: int = 6) -> list[tuple[Any, Any]]:
        """Every merge worth making in ``namespace`` as (Cluster, MergePreview), changing nothing; apply one
        with ``merge(cluster.ids, preview.text, path=preview.path, detail=preview.detail)``. See
        :func:`memory_core.curation.merge.plan_merges`. Uses the bank's LLM when set."""
        from ..curation import merge as merge_mod
        return merge_mod.plan_merges(self.merge_candidates(namespace), threshold=threshold,
                                     related_threshold=related_threshold, client=client, max_size=max_size,
                                     model=self.core.model)

    def ingest(self, conversation: Any, namespace: str, *, pii: str = "redact", client: Any = None) -> Any:
        """Distil a conversation (a list of {"role", "content", "at"} turns) into memories of
        ``namespace``: extract, store what is new, reinforce what is known (see
        :func:`memory_core.curation.extract.plan_ingest`), flag contradictions."""
        from ..curation import extract
        report = extract.IngestReport(extract.extract(extract.parse_conversation(conversation), client, pii=pii))
        found = report.extraction.memories
        if found:
            plan = extract.plan_ingest(found, self.core.embedder.encode([c.text for c in found]),
                                       *self.queries.live_vectors(namespace), namespace,
                                       duplicate_threshold=model_defaults(self.core.model).on_model(0.9))
            for mid, cand in plan.reinforce:
                self.changes.reinforce(mid, importance=cand.importance, at=cand.created_at)
                report.reinforced.append((mid, cand.text))
            if plan.rows:
                report.added = self.writer.add_many(plan.rows)
                report.conflicts = self.detect_conflicts(namespace, memory_ids=report.added, client=client)
        return report
