"""Changes to stored memories: update, forget, restore, their events, and undo.

Every change is one operation (:meth:`Changes.change`): one transaction, one group of events
(actor, time, action, before and after), the caches and loaded indexes brought up to date after.
Everything but a hard delete can be undone, one event or one whole operation at a time.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import TYPE_CHECKING, Any, Callable, Iterable

import numpy as np

from . import rows as rowmod
from ..storage.clock import to_aware, to_naive_utc, utcnow
from ..errors import NotFoundError, StateError, ValidationError
from ..models import Event, Memory, check_id, check_importance, check_reason, parse_time
from ..language.durability import infer as infer_durability
from ..language.text import detect_language
from ..storage import tables, transaction_parts
from .writer import EDITABLE, Writer, check_changes

if TYPE_CHECKING:
    from .core import Core

REPEATED = "added again: the same text"  # the note of a reinforce event for a repeated add
EVENT_COLUMNS = "id, happened_at, actor, action, memory_id, before, after, note, group_id, undone_by"


def event_from_row(row: tuple) -> Event:
    """A row of :data:`EVENT_COLUMNS` as an Event."""
    eid, at, actor, action, mid, before, after, note, group, undone_by = row
    return Event(id=int(eid), at=to_aware(at), actor=actor, action=action, memory_id=mid,
                 before=json.loads(before) if before else None, after=json.loads(after) if after else None,
                 note=note, group_id=group, undone_by=undone_by)


def _scrub(payload: str | None) -> str | None:
    """An event's JSON without the memory's text (or anything else that quotes it)."""
    if not payload:
        return payload
    data = json.loads(payload)
    for key in ("text", "source", "context"):
        if key in data:
            data[key] = None
    return json.dumps(data, ensure_ascii=False)


def _check_undoable(events: list[Event]) -> None:
    for e in events:
        if e.action == "undo" or (e.note or "").startswith("undo "):
            raise StateError(f"event {e.id} is an undo; an undo cannot be undone (make the change again)")
        if e.undone_by is not None:
            raise StateError(f"event {e.id} ({e.action}) was already undone (by operation {e.undone_by})")
        if e.action == "hard_delete":
            raise StateError("a hard delete cannot be undone: the text is gone")


def _restorable(before: dict | None) -> dict[str, Any]:
    fields = {k: v for k, v in (before or {}).items()
              if k in EDITABLE or k in ("status", "superseded_by", "merged_into", "last_accessed_at",
                                         "access_count", "updated_at")}
    for key in ("created_at", "last_accessed_at", "updated_at"):
        if fields.get(key) is not None:
            fields[key] = parse_time(fields[key])
    return fields


class Changes:
    """Changes memories of one bank, one undoable operation at a time."""

    def __init__(self, core: "Core", writer: Writer):
        self.core = core
        self.writer = writer

    def update(self, memory_id: int, **changes: Any) -> Memory:
        """Change fields of a memory (text, namespace, kind, category, importance, created_at,
        pinned, source). A new text is embedded again. Returns the updated memory."""
        mid = check_id(memory_id)
        unknown = set(changes) - set(EDITABLE)
        if unknown:
            raise ValidationError(
                f"cannot update {', '.join(sorted(unknown))}; editable fields: {', '.join(EDITABLE)} "
                "(use forget/restore for the status)")
        if not changes:
            raise ValidationError("nothing to update: pass at least one field")
        clean = check_changes(changes)
        if "text" in clean and "durability" not in clean:
            self._read_durability_again(mid, clean)
        vector = self.core.embedder.encode_one(clean["text"]) if "text" in clean else None
        return self.apply(mid, clean, "update", vector=vector)

    def _read_durability_again(self, mid: int, clean: dict[str, Any]) -> None:
        """A new text is read for its durability, as an added one is, unless the memory's durability
        was set by hand (it differs from what the rule reads in the old text): an edit keeps that."""
        with self.core.session(write=False) as con:
            before = self.core.get_many(con, [mid])[mid]
        if before.text is None:
            return  # hard-deleted: the change itself refuses it
        fields = {k: clean.get(k, getattr(before, k)) for k in ("category", "kind", "importance")}
        if before.durability == infer_durability(before.text, before.category, before.kind,
                                                 before.importance).durability:
            clean["durability"] = infer_durability(clean["text"], **fields).durability

    def apply(self, mid: int, fields: dict[str, Any], action: str, *, vector: np.ndarray | None = None,
               require_status: tuple[str, ...] | None = None, note: str | None = None) -> Memory:
        """Set fields of one memory as one operation; returns the memory after."""
        _, after, _ = self.change({mid: fields}, action, vectors={mid: vector} if vector is not None else None,
                                   require_status=require_status, note=note)
        return after[mid]

    def change(
        self,
        changes: dict[int, dict[str, Any]],
        action: str,
        *,
        vectors: dict[int, np.ndarray] | None = None,
        require_status: tuple[str, ...] | None = None,
        note: str | None = None,
        new_rows: list[dict[str, Any]] | None = None,
        new_vectors: np.ndarray | None = None,
        removals: list[int] | None = None,
        extra: Callable[[Any, int, list[int]], None] | None = None,
    ) -> tuple[int, dict[int, Memory], list[int]]:
        """One operation on the bank: one transaction, one group of events, indexes updated after.

        ``changes`` sets fields of existing memories (a new text is embedded again), ``new_rows``
        (checked rows with ``new_vectors``) are inserted, ``removals`` are deleted outright (only
        undo uses that, for memories an operation created), and ``extra(con, group, new_ids)``
        writes whatever else belongs to the operation (a conflict's status, a merge record).
        Returns ``(group, memories after by id, new ids)``. Curation modules build on this.
        """
        vectors = dict(vectors or {})
        for mid, fields in changes.items():
            if "text" in fields and mid not in vectors:
                vectors[mid] = self.core.embedder.encode_one(fields["text"])
        removals = list(removals or [])
        # The transaction and taking its rows into the caches, in one hold of the bank's lock: another
        # thread's catch-up in between would be undone (older rows, a lower change number) by ours.
        with self.core.lock:
            with self.core.session() as con:
                group, afters, new_ids, rows, seq = self._change_in(
                    con, changes, action, vectors=vectors, require_status=require_status, note=note,
                    new_rows=new_rows, new_vectors=new_vectors, removals=removals, extra=extra)
            self._taken(seq, rows, removals)
            return group, afters, new_ids

    def _taken(self, seq: int, rows: Any, removals: list[int]) -> None:
        """After a change's commit, with the bank's lock held: the caches and indexes take its rows."""
        self.core.advance(seq)
        self.core.acknowledged = None
        for mid in removals:
            self.core.indexes.remove(mid)
        self.core.forget_cached(removals)
        self.core.apply_rows(rows)
        self.core.indexes.save_due(self.core.model)

    def _change_in(self, con: Any, changes: dict[int, dict[str, Any]], action: str, *,
                   vectors: dict[int, np.ndarray], require_status: tuple[str, ...] | None, note: str | None,
                   new_rows: list[dict[str, Any]] | None, new_vectors: np.ndarray | None, removals: list[int],
                   extra: Callable[[Any, int, list[int]], None] | None) -> tuple[int, dict[int, Memory], list[int], Any, int]:
        """The writes of :meth:`change` in the open transaction ``con``; with the rows to take after."""
        ids = list(changes) + removals
        befores = self.core.get_rows(con, ids)
        for mid in changes:
            before = befores[mid]
            if before.status == "deleted":
                raise StateError(f"memory {mid} was hard-deleted; its text is gone and it cannot change")
            if require_status and before.status not in require_status:
                raise StateError(
                    f"memory {mid} is {before.status}; {action} needs it to be {' or '.join(require_status)}")
        group = tables.take_ids(con, "next_group_id", 1)
        seq = tables.next_seq(con)
        new_ids = self.writer.insert_rows(con, new_rows, new_vectors, seq, group) if new_rows else []
        now = to_naive_utc(utcnow())
        for mid, fields in changes.items():
            sets, params = ["seq = ?"], [seq]
            if "updated_at" not in fields:  # an undo puts the old one back
                sets.append("updated_at = ?")
                params.append(now)
            for key, value in fields.items():
                sets.append(f"{key} = ?")
                params.append(to_naive_utc(value) if isinstance(value, datetime) else value)
            if "text" in fields:
                sets += ["content_hash = ?", "language = ?", "embedding = ?"]
                params += [tables.content_hash(fields["text"]), detect_language(fields["text"]),
                           vectors[mid].astype(np.float32)]
            con.execute(f"UPDATE memories SET {', '.join(sets)} WHERE id = ?", params + [mid])
        if removals:
            con.execute("INSERT INTO removed_memories SELECT id, namespace, ? FROM memories "
                        "WHERE id IN (SELECT unnest(?))", [seq, removals])
            con.execute("DELETE FROM memories WHERE id IN (SELECT unnest(?))", [removals])
        afters = self.core.get_rows(con, list(changes) + new_ids)
        snapshots = []
        for mid, fields in changes.items():
            keys = [k for k in fields if k in Memory.__dataclass_fields__ and k != "updated_at"] + ["updated_at"]
            snapshots.append((rowmod.snapshot(befores[mid], keys), rowmod.snapshot(afters[mid], keys)))
        tables.log_events(con, self.core.actor, action, list(changes), [b for b, _ in snapshots],
                          [a for _, a in snapshots], utcnow(), group, note)
        for mid in removals:
            tables.log_event(con, self.core.actor, "remove", mid, {"id": mid, "status": befores[mid].status},
                            None, utcnow(), note, group)
        if extra is not None:
            extra(con, group, new_ids)
        rows = tables.fetch_rows(con, *tables.ids_in("id", list(changes) + new_ids), with_embedding=True)
        return group, afters, new_ids, rows, seq

    def reinforce_repeats(self, repeats: dict[int, list[dict[str, Any]]]) -> None:
        """Reinforce memories that were added again (``{id: [the checked rows that repeat it]}``:
        see :meth:`Writer.repeats`), one operation of "reinforce" events: each counts as that many
        accesses, is last accessed at the latest of the rows' times and keeps the higher importance."""
        if not repeats:
            return
        with self.core.lock:
            with self.core.session() as con:
                rows, seq = self._reinforce_in(con, repeats)
            self._taken(seq, rows, [])

    def reinforce_repeats_in(self, con: Any, repeats: dict[int, list[dict[str, Any]]]) -> None:
        """:meth:`reinforce_repeats` in the hold ``con`` (``Core.held``, bank's lock held): one
        transaction per namespace on a store that splits them, else one."""
        ids = sorted(repeats)
        namespaces = [rows[0]["namespace"] for rows in (repeats[i] for i in ids)]
        for part in transaction_parts(self.core.store, namespaces):
            with con.transaction():
                rows, seq = self._reinforce_in(con, {ids[j]: repeats[ids[j]] for j in part})
            self._taken(seq, rows, [])

    def _reinforce_in(self, con: Any, repeats: dict[int, list[dict[str, Any]]]) -> tuple[Any, int]:
        befores = self.core.get_rows(con, list(repeats))
        changes: dict[int, dict[str, Any]] = {}
        for mid, rows in repeats.items():
            m = befores[mid]
            at = max(r["created_at"] for r in rows)
            fields: dict[str, Any] = {"access_count": m.access_count + len(rows),
                                      "last_accessed_at": max(filter(None, (m.last_accessed_at, at)))}
            importance = max(r["importance"] for r in rows)
            if importance > m.importance:
                fields["importance"] = importance
            changes[mid] = fields
        _, _, _, rows, seq = self._change_in(
            con, changes, "reinforce", vectors={}, require_status=("active",), note=REPEATED,
            new_rows=None, new_vectors=None, removals=[], extra=None)
        return rows, seq

    def reinforce(self, memory_id: int, *, importance: float | None = None, at: Any = None) -> Memory:
        """Count a restatement of a stored memory as a use: one more access, the later access time,
        and the higher importance. What ingest does instead of storing a near-duplicate twice."""
        mid = check_id(memory_id)
        at_dt = parse_time(at, "at") or utcnow()
        with self.core.session(write=False) as con:
            m = self.core.get(con, mid)
        fields: dict[str, Any] = {"access_count": m.access_count + 1,
                                  "last_accessed_at": max(filter(None, (m.last_accessed_at, at_dt)))}
        if importance is not None and check_importance(importance) > m.importance:
            fields["importance"] = importance
        return self.apply(mid, fields, "reinforce", require_status=("active",))

    def forget(self, memory_id: int, hard: bool = False, reason: str | None = None) -> None:
        """Soft-delete (archive: kept, never recalled, restorable) or, with ``hard=True``, delete for
        real: the text and vector are erased from the file and the history keeps only the id and
        a content hash."""
        mid = check_id(memory_id)
        reason = check_reason(reason)
        if not hard:
            self.apply(mid, {"status": "archived"}, "forget", require_status=("active",), note=reason)
            return
        self.forget_many([mid], hard=True, reason=reason)

    def restore(self, memory_id: int) -> Memory:
        """Bring an archived (soft-deleted) memory back into recall."""
        mid = check_id(memory_id)
        return self.apply(mid, {"status": "active"}, "restore", require_status=("archived",))

    def restore_many(self, ids: Iterable[int]) -> int | None:
        """Restore several archived memories as one operation (undone as a whole with ``undo_group``);
        returns its group id (None when ``ids`` is empty). A memory that is not archived refuses them all."""
        member_ids = self._ids(ids)
        if not member_ids:
            return None
        group, _, _ = self.change({mid: {"status": "active"} for mid in member_ids}, "restore",
                                  require_status=("archived",))
        return group

    def update_many(self, ids: Iterable[int], **changes: Any) -> int | None:
        """Set the same fields on several memories as one operation (a dashboard's bulk re-grade:
        importance, category, kind, pinned...; not the text, which is each memory's own). Returns the
        group id (None when ``ids`` is empty); a bad field or id refuses them all."""
        member_ids = self._ids(ids)
        unknown = set(changes) - (set(EDITABLE) - {"text"})
        if unknown:
            raise ValidationError(
                f"cannot set {', '.join(sorted(unknown))} on several memories; fields: "
                f"{', '.join(f for f in EDITABLE if f != 'text')}")
        if not changes:
            raise ValidationError("nothing to update: pass at least one field")
        clean = check_changes(changes)
        if not member_ids:
            return None
        group, _, _ = self.change({mid: dict(clean) for mid in member_ids}, "update",
                                  require_status=("active", "archived"))
        return group

    @staticmethod
    def _ids(ids: Iterable[int]) -> list[int]:
        if isinstance(ids, (str, bytes)):
            raise ValidationError("ids must be a list of memory ids")
        return sorted({check_id(i) for i in ids})

    def forget_many(self, ids: Iterable[int], *, hard: bool = False, reason: str | None = None) -> int | None:
        """Forget several memories as one operation (soft: archived, undoable with ``undo_group``;
        hard: erased, with one rewrite of the file for all of them). Returns the operation's group
        id (None when ``ids`` is empty)."""
        if isinstance(ids, (str, bytes)):
            raise ValidationError("ids must be a list of memory ids")
        member_ids = sorted({check_id(i) for i in ids})
        reason = check_reason(reason)
        if not member_ids:
            return None
        if not hard:
            group, _, _ = self.change({mid: {"status": "archived"} for mid in member_ids}, "forget",
                                       require_status=("active",), note=reason)
            return group
        with self.core.lock:  # the transaction and the caches taking it, as one step (see change)
            with self.core.session() as con:
                befores = self.core.get_rows(con, member_ids)
                gone = [m for m in befores.values() if m.status == "deleted"]
                if gone:
                    raise StateError(f"memory {gone[0].id} is already hard-deleted")
                group = tables.take_ids(con, "next_group_id", 1)
                seq = tables.next_seq(con)
                con.execute(
                    "UPDATE memories SET text = NULL, embedding = NULL, source = NULL, context = NULL, status = 'deleted', "
                    "seq = ?, updated_at = ? WHERE id IN (SELECT unnest(?))", [seq, to_naive_utc(utcnow()), member_ids])
                # The history must not keep what was forgotten: scrub texts from earlier events.
                for eid, b, a in con.execute("SELECT id, before, after FROM events WHERE memory_id IN (SELECT unnest(?))",
                                             [member_ids]).fetchall():
                    con.execute("UPDATE events SET before = ?, after = ? WHERE id = ?", [_scrub(b), _scrub(a), eid])
                # Answers written with the memory in the prompt may quote it: feedback answers of recalls
                # that returned it, and ablation answers (and the judge's reasons) of cases that saw it.
                con.execute("UPDATE feedback SET answer = NULL WHERE retrieval_id IN (SELECT retrieval_id FROM "
                            "retrieval_hits WHERE memory_id IN (SELECT unnest(?)))", [member_ids])
                con.execute("UPDATE ablation_cases SET answer_with = NULL, reason = NULL "
                            f"WHERE {con.dialect.list_overlaps('memory_ids')}", [member_ids])
                tables.scrub_texts(con, [m.text for m in befores.values()])  # evidence, reports, notes quoting them
                # A detector's evidence and a merge's detail may quote a part of a text (the city a
                # residence slot read), which the whole-text scrub above does not find: erase them.
                con.execute("UPDATE conflicts SET evidence = '[erased]' WHERE a_id IN (SELECT unnest(?)) "
                            "OR b_id IN (SELECT unnest(?))", [member_ids, member_ids])
                con.execute("UPDATE merges SET detail = NULL WHERE merged_id IN (SELECT unnest(?)) "
                            f"OR {con.dialect.list_overlaps('member_ids')}", [member_ids, member_ids])
                tables.log_events(con, self.core.actor, "hard_delete", member_ids,
                                 [{"id": m.id, "content_hash": m.content_hash, "status": m.status}
                                  for m in (befores[i] for i in member_ids)],
                                 [{"id": i, "status": "deleted"} for i in member_ids], utcnow(), group)
            self.core.wait_for_flush()
            self.core.store.compact()
            self.core.signature = self.core.store.signature_after(seq)
            self.core.advance(seq)
            self.core.forget_cached(member_ids)
            for mid in member_ids:
                self.core.indexes.remove(mid)
            # The cached BM25 files hold the memories' words: rewrite them now, or drop them for a rebuild.
            for ns in {m.namespace for m in befores.values()}:
                idx = self.core.indexes.get(ns)
                if idx is not None:
                    self.core.save_index(idx)
                else:
                    self.core.indexes.drop_files(ns)
            return group

    def history(self, memory_id: int) -> list[Event]:
        """Every event of one memory, oldest first."""
        mid = check_id(memory_id)
        with self.core.session(write=False) as con:
            self.core.get(con, mid)
            return self.events_where(con, "memory_id = ?", [mid])

    def events(self, limit: int = 100, action: str | None = None) -> list[Event]:
        """The latest events of the whole bank, newest first."""
        where, params = ("WHERE action = ?", [action]) if action else ("", [])
        with self.core.session(write=False) as con:
            rows = con.execute(
                f"SELECT {EVENT_COLUMNS} FROM events {where} "
                "ORDER BY id DESC LIMIT ?", params + [int(limit)]).fetchall()
        return [event_from_row(r) for r in rows]

    def events_where(self, con: Any, where: str, params: list[Any]) -> list[Event]:
        return [event_from_row(r) for r in con.execute(
            f"SELECT {EVENT_COLUMNS} FROM events WHERE {where} ORDER BY id", params).fetchall()]

    def undo(self, event_id: int) -> Memory:
        """Undo one event of a memory's history by setting the fields it changed back.

        Every change but a hard delete can be undone; undoing an ``add`` archives the memory. An
        undo is itself not undone (make the change again instead), and nothing is undone twice.
        """
        eid = check_id(event_id)
        with self.core.session(write=False) as con:
            events = self.events_where(con, "id = ?", [eid])
        if not events:
            raise NotFoundError(f"no event with id {eid}")
        event = events[0]
        _check_undoable([event])
        if event.memory_id is None:
            raise StateError(f"event {eid} ({event.action}) is not about one memory; undo its operation "
                             f"with undo_group({event.group_id})")
        if event.action == "add":
            fields = {"status": "archived"}
        else:
            fields = check_changes(_restorable(event.before))
        mark = lambda con, group, _: con.execute(  # noqa: E731
            "UPDATE events SET undone_by = ? WHERE id = ?", [group, eid])
        _, after, _ = self.change({event.memory_id: fields}, "undo", note=f"undo event {eid}", extra=mark)
        return after[event.memory_id]

    def undo_groups(self, group_ids: list[int]) -> list[int]:
        """Undo several operations as one request (a maintenance run's): every one is checked first,
        so none is undone when one cannot be, then each is undone, the latest first. A memory changed
        since by anything but these operations refuses the whole request. Returns the undo groups."""
        gids = [check_id(g) for g in group_ids]
        with self.core.session(write=False) as con:
            for gid in gids:
                events = self.events_where(con, "group_id = ?", [gid])
                if not events:
                    raise NotFoundError(f"no operation with group id {gid}")
                _check_undoable(events)
                touched = sorted({e.memory_id for e in events if e.memory_id is not None})
                later = self.events_where(
                    con, "memory_id IN (SELECT unnest(?)) AND id > ? AND undone_by IS NULL "
                    "AND group_id NOT IN (SELECT unnest(?))",
                    [touched, max(e.id for e in events), gids]) if touched else []
                if later:
                    e = later[0]
                    raise StateError(f"memory {e.memory_id} changed after operation {gid} (event {e.id}, "
                                     f"{e.action}); undo that change first")
        return [self.undo_group(g) for g in sorted(gids, reverse=True)]

    def undo_group(self, group_id: int) -> int:
        """Undo a whole operation (a merge, a conflict resolution, a maintenance step): every memory
        it changed gets its fields back, memories it created are removed, and the conflicts and
        merges it recorded return to their former state. Returns the group of the undo.

        Refused when a memory the operation touched has changed since (undo that first).
        """
        gid = check_id(group_id)
        with self.core.session(write=False) as con:
            events = self.events_where(con, "group_id = ?", [gid])
            if not events:
                raise NotFoundError(f"no operation with group id {gid}")
            _check_undoable(events)
            touched = sorted({e.memory_id for e in events if e.memory_id is not None})
            later = self.events_where(
                con, "memory_id IN (SELECT unnest(?)) AND id > ? AND undone_by IS NULL AND group_id != ?",
                [touched, max(e.id for e in events), gid]) if touched else []
            if later:
                e = later[0]
                raise StateError(f"memory {e.memory_id} changed after this operation (event {e.id}, {e.action}); "
                                 "undo that change first")
        changes: dict[int, dict[str, Any]] = {}
        removals: list[int] = []
        conflict_rows: dict[int, dict[str, Any]] = {}
        merge_ids: list[int] = []
        for e in reversed(events):  # the earliest "before" of each memory wins
            if e.memory_id is not None and e.action == "add":
                removals.append(e.memory_id)
            elif e.memory_id is not None:
                changes.setdefault(e.memory_id, {}).update(check_changes(_restorable(e.before)))
            elif e.before and "conflict_id" in e.before:
                conflict_rows[e.before["conflict_id"]] = e.before
            elif e.after and "merge_id" in e.after:
                merge_ids.append(e.after["merge_id"])
        for mid in removals:
            changes.pop(mid, None)

        def revert(con: Any, group: int, _: list[int]) -> None:
            for cid, before in conflict_rows.items():
                con.execute("UPDATE conflicts SET status = ?, resolution = ?, resolved_at = ?, resolved_by = ?, "
                            "group_id = ? WHERE id = ?",
                            [before["status"], before.get("resolution"), parse_time(before.get("resolved_at")),
                             before.get("resolved_by"), before.get("group_id"), cid])
            if merge_ids:
                con.execute("UPDATE merges SET undone_at = ? WHERE id IN (SELECT unnest(?))",
                            [to_naive_utc(utcnow()), merge_ids])
            con.execute("UPDATE events SET undone_by = ? WHERE group_id = ?", [group, gid])
            # The undo is in the history even when it changed no memory (a dismissal reopened).
            spaces = [r[0] for r in con.execute("SELECT DISTINCT namespace FROM events WHERE group_id = ?",
                                                [gid]).fetchall()]
            tables.log_event(con, self.core.actor, "undo", None, {"group_id": gid}, None, utcnow(),
                            f"undo group {gid}", group, namespace=spaces[0] if len(spaces) == 1 else None)

        group, _, _ = self.change(changes, "undo", removals=removals, extra=revert, note=f"undo group {gid}")
        return group
