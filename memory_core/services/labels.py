"""Evaluation records: labeled query sets (which memories a query should bring back) and
ablation runs (answers with and without memory, judged).

Labels are what precision@k, recall@k and the tuner (:mod:`memory_core.evaluation.tuning`) score against;
ablation runs are what :mod:`memory_core.evaluation.evaluate` measured. Neither changes a memory.
"""

from __future__ import annotations

import json
import os
from typing import IO, TYPE_CHECKING, Any, Iterable

import numpy as np
import pyarrow as pa

from ..storage.clock import to_aware, to_naive_utc, utcnow
from . import jsonl
from ..errors import ImportFormatError, NotFoundError, ValidationError
from ..models import LabeledQuery, check_id, check_namespace, check_text, parse_time
from ..storage import tables

if TYPE_CHECKING:
    from .core import Core


def check_set_name(set_name: Any) -> str:
    if not isinstance(set_name, str) or not set_name.strip() or len(set_name) > 100:
        raise ValidationError("a label set name is a non-empty string of at most 100 characters")
    return set_name


def _check_label_row(row: Any, set_name: str | None) -> dict[str, Any]:
    if not isinstance(row, dict):
        raise ValidationError("each line must be a JSON object")
    unknown = set(row) - {"namespace", "query", "relevant", "irrelevant", "as_of", "set"}
    if unknown:
        raise ValidationError(f"unknown field(s) {', '.join(sorted(unknown))}")
    ns = check_namespace(row.get("namespace"))
    query = check_text(row.get("query"), "query")
    lists = {}
    for name in ("relevant", "irrelevant"):
        ids = row.get(name, [])
        if not isinstance(ids, list) or any(isinstance(i, bool) or not isinstance(i, int) or i < 1 for i in ids):
            raise ValidationError(f"{name} must be a list of memory ids (whole numbers from 1)")
        lists[name] = sorted(set(ids))
    both = set(lists["relevant"]) & set(lists["irrelevant"])
    if both:
        raise ValidationError(f"memory {min(both)} is both relevant and irrelevant")
    at = parse_time(row.get("as_of"), "as_of")
    set_ = set_name if set_name is not None else check_set_name(row.get("set", "default"))
    return {"namespace": ns, "query": query, **lists, "as_of": None if at is None else to_naive_utc(at),
            "set": set_}


class Labels:
    """One bank's labeled query sets."""

    def __init__(self, core: "Core"):
        self.core = core

    def label(self, namespace: str, query: str, memory_id: int, relevant: bool = True, *,
              as_of: Any = None, set_name: str = "default") -> None:
        """Mark memory ``memory_id`` as relevant (or not) to ``query`` in ``namespace``.

        Labels make a labeled query set (``set_name``) that precision@k, recall@k and the tuner
        (:mod:`memory_core.evaluation.tuning`) score against. Labeling the same memory again replaces its
        label. ``as_of`` pins the moment the query is asked (None: whenever it is evaluated).
        The memory must exist and belong to ``namespace``.
        """
        check_namespace(namespace)
        check_text(query, "query")
        mid = check_id(memory_id)
        if not isinstance(relevant, (bool, np.bool_)):
            raise ValidationError(f"relevant must be true or false, got {relevant!r}")
        check_set_name(set_name)
        at = parse_time(as_of, "as_of")
        now = utcnow()
        with self.core.session() as con:
            ns = self.namespaces_of(con, [mid]).get(mid)
            if ns is None:
                raise NotFoundError(f"no memory with id {mid}")
            if ns != namespace:
                raise ValidationError(f"memory {mid} belongs to namespace {ns!r}, not {namespace!r}")
            key = [set_name, namespace, query, None if at is None else to_naive_utc(at)]
            same = "set_name = ? AND namespace = ? AND query = ? AND as_of IS NOT DISTINCT FROM ?"
            before = con.execute(f"SELECT relevant FROM labels WHERE {same} AND memory_id = ?", [*key, mid]).fetchone()
            # A query's "labeled, nothing marked" row is no longer needed once it has a label.
            con.execute(f"DELETE FROM labels WHERE {same} AND (memory_id = ? OR memory_id IS NULL)", [*key, mid])
            lid = tables.take_ids(con, "next_label_id", 1)
            con.execute("INSERT INTO labels VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                        [lid, *key, mid, bool(relevant), self.core.actor, to_naive_utc(now)])
            # Not logged against the memory: a label says nothing about the memory itself, and
            # undoing a memory event must not touch it.
            tables.log_event(con, self.core.actor, "label", None,
                            None if before is None else {"memory_id": mid, "relevant": bool(before[0])},
                            {"set": set_name, "namespace": namespace, "query": query, "memory_id": mid,
                             "relevant": bool(relevant)}, now, namespace=namespace)

    def unlabel(self, namespace: str, query: str, memory_id: int, *, as_of: Any = None,
                set_name: str = "default") -> bool:
        """Remove one label; returns whether there was one."""
        check_namespace(namespace)
        check_text(query, "query")
        mid = check_id(memory_id)
        check_set_name(set_name)
        at = parse_time(as_of, "as_of")
        key = [set_name, namespace, query, None if at is None else to_naive_utc(at), mid]
        with self.core.session() as con:
            where = "set_name = ? AND namespace = ? AND query = ? AND as_of IS NOT DISTINCT FROM ? AND memory_id = ?"
            found = con.execute(f"SELECT relevant FROM labels WHERE {where}", key).fetchone()
            if found is None:
                return False
            con.execute(f"DELETE FROM labels WHERE {where}", key)
            tables.log_event(con, self.core.actor, "unlabel", None, {"set": set_name, "namespace": namespace, "query": query,
                            "memory_id": mid, "relevant": bool(found[0])}, None, utcnow(), namespace=namespace)
        return True

    def labels(self, namespace: str | None = None, set_name: str | None = None) -> list[LabeledQuery]:
        """The labeled queries (of one namespace and/or set), in the order they were first labeled."""
        where, params = "TRUE", []
        if namespace is not None:
            where += " AND namespace = ?"
            params.append(check_namespace(namespace))
        if set_name is not None:
            where += " AND set_name = ?"
            params.append(check_set_name(set_name))
        with self.core.session(write=False) as con:
            rows = con.execute(f"SELECT set_name, namespace, query, as_of, memory_id, relevant FROM labels "
                               f"WHERE {where} ORDER BY id", params).fetchall()
        grouped: dict[tuple, tuple[list[int], list[int]]] = {}
        for set_, ns, query, as_of, mid, relevant in rows:
            rel, irr = grouped.setdefault((set_, ns, query, as_of), ([], []))
            if mid is not None:
                (rel if relevant else irr).append(int(mid))
        return [LabeledQuery(namespace=ns, query=q, relevant=tuple(sorted(rel)), irrelevant=tuple(sorted(irr)),
                             as_of=to_aware(as_of), set_name=set_)
                for (set_, ns, q, as_of), (rel, irr) in grouped.items()]

    def label_sets(self) -> dict[str, int]:
        """Label set name → number of labeled queries in it."""
        with self.core.session(write=False) as con:
            rows = con.execute("SELECT set_name, count(DISTINCT (namespace, query, as_of)) FROM labels "
                               "GROUP BY set_name ORDER BY set_name").fetchall()
        return {name: int(n) for name, n in rows}

    def import_labels(self, source: str | os.PathLike | IO[str] | Iterable[dict[str, Any]], *,
                      set_name: str | None = None) -> int:
        """Import labeled queries from JSON lines; returns how many queries were imported.

        One line per query: ``{"namespace", "query", "relevant": [ids], "irrelevant": [ids]}``,
        optionally ``"as_of"`` (ISO time) and ``"set"`` (``set_name`` overrides it; default
        "default"). A query with no relevant id means "nothing should come back". A query already
        labeled in that set gets these labels instead of its old ones. Every line is checked
        first: a malformed line, an unknown memory id or one of another namespace raises
        ImportFormatError listing them by line number, and nothing is imported.
        """
        if set_name is not None:
            check_set_name(set_name)
        problems: list[tuple[int, str]] = []
        parsed: list[tuple[int, dict[str, Any]]] = []
        try:
            with jsonl.reading(source) as (fh, _):
                for lineno, line in enumerate(fh, start=1):
                    if isinstance(line, str) and not line.strip():
                        continue
                    try:
                        row = json.loads(line) if isinstance(line, str) else line
                        parsed.append((lineno, _check_label_row(row, set_name)))
                    except (json.JSONDecodeError, ValidationError) as exc:
                        problems.append((lineno, str(exc)))
        except UnicodeDecodeError as exc:
            raise ImportFormatError(f"the file is not UTF-8 text ({exc})") from None
        now = utcnow()
        with self.core.session() as con:
            known = self.namespaces_of(con, sorted({m for _, r in parsed for m in r["relevant"] + r["irrelevant"]}))
            seen: dict[tuple, int] = {}
            for lineno, r in parsed:
                for mid in r["relevant"] + r["irrelevant"]:
                    if mid not in known:
                        problems.append((lineno, f"no memory with id {mid}"))
                    elif known[mid] != r["namespace"]:
                        problems.append((lineno, f"memory {mid} belongs to namespace {known[mid]!r}, "
                                                 f"not {r['namespace']!r}"))
                key = (r["set"], r["namespace"], r["query"], r["as_of"])
                if key in seen:
                    problems.append((lineno, f"the same query appears again (first on line {seen[key]})"))
                seen.setdefault(key, lineno)
            if problems:
                problems.sort()
                shown = "; ".join(f"line {n}: {m}" for n, m in problems[:5])
                more = f" (and {len(problems) - 5} more)" if len(problems) > 5 else ""
                raise ImportFormatError(f"{len(problems)} problem(s), no label imported: {shown}{more}", problems)
            if not parsed:
                return 0
            keys = pa.table({
                "set_name": [r["set"] for _, r in parsed], "namespace": [r["namespace"] for _, r in parsed],
                "query": [r["query"] for _, r in parsed],
                "as_of": pa.array([r["as_of"] for _, r in parsed], pa.timestamp("us")),
            })
            with con.registered(_label_keys=keys):
                con.execute("DELETE FROM labels l USING _label_keys k WHERE l.set_name = k.set_name AND "
                            "l.namespace = k.namespace AND l.query = k.query AND l.as_of IS NOT DISTINCT FROM k.as_of")
            out: dict[str, list] = {c: [] for c in ("set_name", "namespace", "query", "as_of", "memory_id", "relevant")}
            for _, r in parsed:
                marks = [(m, True) for m in r["relevant"]] + [(m, False) for m in r["irrelevant"]] or [(None, None)]
                for mid, rel in marks:
                    for c, v in zip(out, (r["set"], r["namespace"], r["query"], r["as_of"], mid, rel)):
                        out[c].append(v)
            n = len(out["query"])
            first = tables.take_ids(con, "next_label_id", n)
            table = pa.table({
                "id": pa.array(range(first, first + n), pa.int64()),
                "set_name": out["set_name"], "namespace": out["namespace"], "query": out["query"],
                "as_of": pa.array(out["as_of"], pa.timestamp("us")),
                "memory_id": pa.array(out["memory_id"], pa.int64()), "relevant": pa.array(out["relevant"], pa.bool_()),
                "labeled_by": [self.core.actor] * n, "labeled_at": pa.array([to_naive_utc(now)] * n, pa.timestamp("us")),
            })
            with con.registered(_labels=table):
                con.execute("INSERT INTO labels SELECT * FROM _labels")
            tables.log_event(con, self.core.actor, "import_labels", None, None,
                            {"queries": len(parsed), "labels": n,
                             "sets": sorted({r["set"] for _, r in parsed})}, now)
        return len(parsed)

    def export_labels(self, dest: str | os.PathLike | IO[str], namespace: str | None = None,
                      set_name: str | None = None) -> int:
        """Write the labeled queries as JSON lines (the format :meth:`import_labels` reads)."""
        queries = self.labels(namespace=namespace, set_name=set_name)
        return jsonl.write(dest, (q.to_dict() for q in queries))

    def namespaces_of(self, con: Any, ids: list[int]) -> dict[int, str]:
        if not ids:
            return {}
        where, params = tables.ids_in("id", ids)
        return dict(con.execute(f"SELECT id, namespace FROM memories WHERE {where}", params).fetchall())


class AblationRecords:
    """One bank's stored ablation runs and their cases (memory ids, never memory texts)."""

    def __init__(self, core: "Core"):
        self.core = core

    def record_ablation(self, run: dict[str, Any], cases: list[dict[str, Any]]) -> int:
        """Store one ablation run and its cases; returns the run id.

        ``run`` carries started_at, finished_at, namespace, answer_model, judge_model, seed, source
        and settings (a dict); ``cases`` one dict per case with namespace, question, expected,
        memory_ids, answer_with, answer_without, first_shown, judge_choice, verdict (with /
        without / tie / error), reason and error. Memory texts are never stored here.
        """
        verdicts = [c["verdict"] for c in cases]
        bad = sorted(set(verdicts) - {"with", "without", "tie", "error"})
        if bad:
            raise ValidationError(f"unknown ablation verdict(s) {bad}; use with, without, tie or error")
        with self.core.session() as con:
            run_id = tables.take_ids(con, "next_ablation_run_id", 1)
            con.execute(
                "INSERT INTO ablation_runs VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [run_id, to_naive_utc(parse_time(run.get("started_at")) or utcnow()),
                 to_naive_utc(parse_time(run.get("finished_at")) or utcnow()), self.core.actor, run.get("namespace"),
                 run.get("answer_model"), run.get("judge_model"), run.get("seed"), run.get("source"), len(cases),
                 verdicts.count("with"), verdicts.count("without"), verdicts.count("tie"), verdicts.count("error"),
                 json.dumps(run.get("settings") or {}, default=str)])
            if cases:
                tables.insert_values(
                    con, "ablation_cases", ("run_id", "case_no", "namespace", "question", "expected", "memory_ids",
                                            "answer_with", "answer_without", "first_shown", "judge_choice", "verdict",
                                            "reason", "error"),
                    [[run_id, i + 1, c["namespace"], c["question"], c.get("expected"),
                      [int(m) for m in c.get("memory_ids") or []], c.get("answer_with"), c.get("answer_without"),
                      c.get("first_shown"), c.get("judge_choice"), c["verdict"], c.get("reason"), c.get("error")]
                     for i, c in enumerate(cases)])
            tables.log_event(con, self.core.actor, "ablation", None, None,
                            {"run_id": run_id, "cases": len(cases), "better": verdicts.count("with"),
                             "worse": verdicts.count("without")}, utcnow(), namespace=run.get("namespace"))
        return run_id

    def ablation_runs(self, limit: int | None = 50) -> list[dict[str, Any]]:
        """Past ablation runs, newest first: counts of better (with memory), worse, ties, errors."""
        page = "" if limit is None else f" LIMIT {int(limit)}"
        with self.core.session(write=False) as con:
            rows = con.arrow(f"SELECT * FROM ablation_runs ORDER BY id DESC{page}").to_pylist()
        for r in rows:
            r["started_at"], r["finished_at"] = to_aware(r["started_at"]), to_aware(r["finished_at"])
            r["settings"] = json.loads(r["settings"] or "{}")
        return rows

    def ablation_cases(self, run_id: int) -> list[dict[str, Any]]:
        """The cases of one ablation run, in order (``NotFoundError`` for an unknown run)."""
        rid = check_id(run_id)
        with self.core.session(write=False) as con:
            if con.execute("SELECT count(*) FROM ablation_runs WHERE id = ?", [rid]).fetchone()[0] == 0:
                raise NotFoundError(f"no ablation run with id {rid}")
            rows = con.arrow("SELECT * FROM ablation_cases WHERE run_id = ? ORDER BY case_no", [rid]).to_pylist()
        for r in rows:
            r["memory_ids"] = [int(m) for m in r["memory_ids"] or []]
        return rows
