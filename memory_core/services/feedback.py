"""Feedback: what happened after a recall (the answer, the memories it used, whether it helped).

Which returned memories an answer used is decided by :mod:`memory_core.evaluation.usage` (given ids,
citation markers, or sentence similarity); this module stores the decisions, keeps each memory's
``use_count`` in step, and reads the feedback log back for the usage charts.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Iterable

import numpy as np
import pyarrow as pa

from ..evaluation import usage as usage_mod
from ..storage.clock import to_aware, to_naive_utc, utcnow
from ..embedding.embedder import model_defaults
from ..errors import NotFoundError, ValidationError
from ..models import Feedback, check_id, check_namespace, check_unicode, parse_time
from ..storage import tables

if TYPE_CHECKING:
    from .core import Core


class FeedbackLog:
    """Records and reads feedback on one bank's recalls."""

    def __init__(self, core: "Core"):
        self.core = core

    def feedback(self, retrieval_id: int, answer: str | None = None, used_ids: Iterable[int] | None = None,
                 helpful: bool | None = None, *, at: Any = None,
                 namespaces: Iterable[str] | None = None) -> Feedback:
        """Record what happened after a recall: the answer, which memories it used, whether it helped.

        ``retrieval_id`` is the logged recall (``bank.last_retrieval_id`` after ``recall``, or an
        id from :meth:`retrievals`). Usage of each returned memory is decided by the first path
        that applies (see :mod:`memory_core.evaluation.usage`): ``used_ids`` given by the agent; else
        citation markers ``[m:ID]`` in ``answer``; else the similarity of the answer's sentences
        with each memory against the calibrated bar ``usage.USED_BAR``. ``helpful`` is the
        agent's own judgement of the answer (optional).

        Feedback is an event (logged with action ``feedback``). Giving feedback again for the same
        retrieval **replaces** the earlier feedback (``replaced`` is then true): one answer per
        recall. A hard delete of a returned memory erases the stored answer (it may quote the
        memory) and keeps the decisions. Each memory's ``use_count`` follows in the same
        transaction (a replaced feedback's uses come off first), and other processes rank with
        it after their next catch-up. Raises ``NotFoundError`` for an unknown retrieval and ``ValidationError`` when a
        used id is not among the retrieval's hits, when nothing is given, or for wrong types;
        nothing changes then. With ``namespaces`` (a server passes its caller's), a recall of
        another namespace is not found either.
        """
        rid, given, given_at = _checked(retrieval_id, answer, used_ids, helpful, at)

        with self.core.session(write=False) as con:
            head = con.execute("SELECT namespace FROM retrievals WHERE id = ?", [rid]).fetchone()
            if head is None or (namespaces is not None and head[0] not in namespaces):
                raise NotFoundError(f"no retrieval with id {rid}; use the id recall logged "
                                    "(bank.last_retrieval_id) or one from bank.retrievals()")
            hit_ids = [int(r[0]) for r in con.execute(
                "SELECT memory_id FROM retrieval_hits WHERE retrieval_id = ? ORDER BY rank", [rid]).fetchall()]
            vectors: dict[int, Any] = {}
            if given is None and answer is not None and hit_ids and not usage_mod.citations(answer):
                where, params = tables.ids_in("id", hit_ids)
                for mid, emb in con.execute(f"SELECT id, embedding FROM memories WHERE {where}", params).fetchall():
                    vectors[int(mid)] = None if emb is None else np.asarray(emb, dtype=np.float32)
        namespace = head[0]
        if given is not None:
            stray = sorted(set(given) - set(hit_ids))
            if stray:
                raise ValidationError(
                    f"memory id(s) {', '.join(map(str, stray))} were not returned by retrieval {rid} "
                    f"(it returned {', '.join(map(str, hit_ids)) or 'nothing'}); used_ids must be among its hits")
            decisions = [usage_mod.HitUsage(mid, mid in set(given), "given") for mid in hit_ids]
        elif answer is not None and hit_ids:
            cited = set(usage_mod.citations(answer))
            if cited:
                decisions = [usage_mod.HitUsage(mid, mid in cited, "citation") for mid in hit_ids]
            else:
                parts = usage_mod.sentences(answer)
                svec = self.core.embedder.encode(parts) if parts else np.zeros((0, self.core.dim or 1), dtype=np.float32)
                sims = usage_mod.best_similarities(svec, [vectors.get(mid) for mid in hit_ids])
                bar = model_defaults(self.core.model).on_model(usage_mod.USED_BAR)
                decisions = usage_mod.decide_by_similarity(hit_ids, sims, bar)
        else:
            decisions = []

        with self.core.lock:  # the write and taking its counts into the indexes, as one step
            rows = None
            with self.core.session() as con:
                replaced = con.execute("SELECT count(*) FROM feedback WHERE retrieval_id = ?", [rid]).fetchone()[0] > 0
                # use_count: the replaced feedback's uses come off, the new ones go on, in this transaction.
                delta: dict[int, int] = {}
                for (mid,) in con.execute("SELECT DISTINCT memory_id FROM feedback_hits WHERE retrieval_id = ? AND used",
                                          [rid]).fetchall():
                    delta[int(mid)] = delta.get(int(mid), 0) - 1
                for mid in {d.memory_id for d in decisions if d.used}:
                    delta[mid] = delta.get(mid, 0) + 1
                delta = {mid: n for mid, n in delta.items() if n}
                con.execute("DELETE FROM feedback_hits WHERE retrieval_id = ?", [rid])
                con.execute("DELETE FROM feedback WHERE retrieval_id = ?", [rid])
                con.execute("INSERT INTO feedback VALUES (?, ?, ?, ?, ?, ?)",
                            [rid, namespace, to_naive_utc(given_at), self.core.actor, answer, helpful])
                if decisions:
                    tables.insert_values(con, "feedback_hits",
                                         ("retrieval_id", "memory_id", "used", "decided_by", "similarity", "namespace"),
                                         [[rid, d.memory_id, d.used, d.decided_by, d.similarity, namespace]
                                          for d in decisions])
                tables.log_event(con, self.core.actor, "feedback", None, None,
                                {"retrieval_id": rid, "used_ids": [d.memory_id for d in decisions if d.used],
                                 "decided_by": decisions[0].decided_by if decisions else None, "helpful": helpful},
                                given_at, note="replaced earlier feedback" if replaced else None, namespace=namespace)
                if delta:
                    seq = tables.next_seq(con)  # other processes' indexes take the new counts by sequence
                    table = pa.table({"id": pa.array(list(delta), pa.int64()),
                                      "n": pa.array(list(delta.values()), pa.int64())})
                    with con.registered(_uses=table):
                        # Never below 0: an imported or merged memory's count need not match the feedback rows.
                        con.execute("UPDATE memories SET use_count = greatest(memories.use_count + _uses.n, 0), seq = ? "
                                    "FROM _uses WHERE memories.id = _uses.id", [seq])
                    rows = tables.fetch_rows(con, *tables.ids_in("id", list(delta)), with_embedding=True)
            if rows is not None:
                self.core.advance(seq)
                self.core.apply_rows(rows)
        return Feedback(retrieval_id=rid, namespace=namespace, given_at=given_at, answer=answer, helpful=helpful,
                        hits=tuple(decisions), replaced=bool(replaced))

    def feedback_log(self, namespace: str | None = None, *, since: Any = None,
                     until: Any = None) -> list[Feedback]:
        """Recorded feedback, oldest recall first; ``since``/``until`` bound the time of the recall
        the feedback is about (so a date range matches the retrieval log's)."""
        where, params = "TRUE", []
        if namespace is not None:
            where += " AND f.namespace = ?"
            params.append(check_namespace(namespace))
        for op, value, what in ((">=", since, "since"), ("<=", until, "until")):
            if value is not None:
                where += f" AND r.recalled_at {op} ?"
                params.append(to_naive_utc(parse_time(value, what)))
        with self.core.session(write=False) as con:
            heads = con.execute(
                "SELECT f.retrieval_id, f.namespace, f.given_at, f.answer, f.helpful FROM feedback f "
                f"JOIN retrievals r ON r.id = f.retrieval_id WHERE {where} ORDER BY r.recalled_at, r.id",
                params).fetchall()
            ids = [h[0] for h in heads]
            rows = con.execute(
                "SELECT fh.retrieval_id, fh.memory_id, fh.used, fh.decided_by, fh.similarity FROM feedback_hits fh "
                "JOIN retrieval_hits rh ON rh.retrieval_id = fh.retrieval_id AND rh.memory_id = fh.memory_id "
                "WHERE fh.retrieval_id IN (SELECT unnest(?)) ORDER BY fh.retrieval_id, rh.rank",
                [ids]).fetchall() if ids else []
        by_id: dict[int, list] = {}
        for r in rows:
            by_id.setdefault(int(r[0]), []).append(usage_mod.HitUsage(int(r[1]), bool(r[2]), r[3], r[4]))
        return [Feedback(retrieval_id=int(h[0]), namespace=h[1], given_at=to_aware(h[2]), answer=h[3], helpful=h[4],
                         hits=tuple(by_id.get(int(h[0]), ()))) for h in heads]

    def usage_counts(self, namespace: str | None = None) -> dict[int, int]:
        """How many times the answer used each memory, by memory id (from feedback; memories
        never used are absent). Each memory also carries this as ``Memory.use_count``, which
        ranking reads with ``ScoringParams(frequency_from="uses")``."""
        where, params = ("WHERE f.namespace = ?", [check_namespace(namespace)]) if namespace is not None else ("", [])
        with self.core.session(write=False) as con:
            rows = con.execute(
                "SELECT fh.memory_id, count(*) FROM feedback_hits fh JOIN feedback f USING (retrieval_id) "
                f"{where} {'AND' if where else 'WHERE'} fh.used GROUP BY fh.memory_id", params).fetchall()
        return {int(m): int(n) for m, n in rows}


def _checked(retrieval_id: Any, answer: Any, used_ids: Any, helpful: Any, at: Any) -> tuple[int, list[int] | None, Any]:
    """Feedback's arguments checked before anything is read: the retrieval id, the used ids given
    (or None) and when it was given; ValidationError for a wrong type or nothing given."""
    if isinstance(retrieval_id, bool) or not isinstance(retrieval_id, (int, np.integer)):
        raise ValidationError(f"retrieval_id is a whole number (bank.last_retrieval_id), got {retrieval_id!r}")
    rid = check_id(retrieval_id, "retrieval_id")
    if answer is not None:
        if not isinstance(answer, str):
            raise ValidationError(f"answer must be a string, got {type(answer).__name__}")
        if not answer.strip():
            raise ValidationError("answer must not be empty: pass the answer text, or leave it out")
        if "\x00" in answer:
            raise ValidationError("answer contains a NUL character; remove it")
        check_unicode(answer, "answer")
    if helpful is not None and not isinstance(helpful, bool):
        raise ValidationError(f"helpful must be true, false or None, got {helpful!r}")
    given: list[int] | None = None
    if used_ids is not None:
        if isinstance(used_ids, (str, bytes)) or not isinstance(used_ids, Iterable):
            raise ValidationError("used_ids must be a list of memory ids")
        given = [check_id(i) for i in used_ids]
    if answer is None and given is None and helpful is None:
        raise ValidationError("give at least one of answer, used_ids or helpful")
    given_at = parse_time(at, "at") or utcnow()
    return rid, given, given_at
