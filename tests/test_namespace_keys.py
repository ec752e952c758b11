"""The namespace in every table that holds a tenant's rows (schema version 8), and in every key of
those tables on PostgreSQL (version 10), on both stores.

What makes the schema distributable by namespace (Citus) or partitionable without change: every
row of a tenant's data says whose it is, filled from what it belongs to (an event from its memory,
a hit from its recall, a feedback hit from its feedback), every unique key includes it, and a
bank written before is migrated with its data intact. A PostgreSQL bank whose tenant tables are
partitioned by namespace works as before.
"""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pytest

from conftest import downgrade
from memory_core import MemoryBank
from memory_core.storage import open_store
from memory_core.storage.copy import copy_bank
from memory_core.storage.schema import BANK_WIDE, SCHEMA_VERSION, TENANT_KEYS
from stores import TENANT_TABLES


def rows(location: Path | str, sql: str, params: list[Any] | None = None) -> list[tuple]:
    """Rows of a query on the (closed) bank at ``location``, whichever store holds it."""
    with open_store(location).connect(write=False) as con:
        return [tuple(r) for r in con.execute(sql, params or []).fetchall()]


def keys(location: Path | str) -> dict[str, set[tuple[str, ...]]]:
    """The primary keys and unique constraints of the tenant tables: {table: {(column, ...)}}."""
    got: dict[str, dict[str, list[str]]] = {}
    for table, name, column in rows(location, """
            SELECT tc.table_name, tc.constraint_name, k.column_name
            FROM information_schema.table_constraints AS tc
            JOIN information_schema.key_column_usage AS k
              ON k.constraint_name = tc.constraint_name AND k.table_name = tc.table_name
            WHERE tc.constraint_type IN ('PRIMARY KEY', 'UNIQUE') AND tc.table_schema = current_schema()
            ORDER BY tc.table_name, tc.constraint_name, k.ordinal_position"""):
        if table in TENANT_TABLES:
            got.setdefault(table, {}).setdefault(name, []).append(column)
    return {table: {tuple(cols) for cols in named.values()} for table, named in got.items()}


def expected_keys(location: Path | str) -> dict[str, set[tuple[str, ...]]]:
    """PostgreSQL: each key led by its id, then the namespace. DuckDB keeps version 1's id alone."""
    with_namespace = isinstance(location, str) and location.startswith("postgresql")
    return {table: {(key, "namespace") if with_namespace else (key,)} for table, key in TENANT_KEYS.items()}


def _fill(bank: MemoryBank) -> dict[str, Any]:
    """A bank with two tenants' memories, history, recalls, feedback, labels, a merge and an erasure."""
    a1 = bank.add("Alice prefers green tea in the morning", namespace="alice", detect_conflicts=False)
    a2 = bank.add("Alice likes green tea with breakfast", namespace="alice", detect_conflicts=False)
    ids = bank.add_many([{"text": f"Bob's note {i} about sailing", "namespace": "bob"} for i in range(3)])
    bank.update(ids[0], text="Bob's first note about sailing boats")
    bank.recall("green tea", namespace="alice", threshold=0.0)
    rid = bank.last_retrieval_id
    bank.feedback(rid, used_ids=[a1])
    bank.recall("sailing", namespace="bob", threshold=0.0)
    bank.label("bob", "sailing", ids[1])
    merged = bank.merge([a1, a2], "Alice drinks green tea in the morning")
    bank.forget(ids[2], hard=True)
    return {"alice": [a1, a2], "bob": ids, "rid": rid, "merge": merged}


def _export(bank: MemoryBank) -> str:
    out = io.StringIO()
    bank.export_jsonl(out, include_embeddings=True)
    return out.getvalue()


def _namespaces_are_right(location: Path | str, events_named_by_memory_only: bool = False) -> None:
    for table in TENANT_TABLES:
        assert rows(location, f"SELECT count(*) FROM {table} WHERE namespace IS NULL") == [(0,)], table
    # Every event about a memory is in the memory's namespace; hits and feedback hits in their recall's.
    assert rows(location, "SELECT count(*) FROM events AS e JOIN memories AS m ON m.id = e.memory_id "
                          "WHERE e.namespace <> m.namespace") == [(0,)]
    assert rows(location, "SELECT count(*) FROM events WHERE memory_id IS NOT NULL") != [(0,)]
    assert rows(location, "SELECT count(*) FROM retrieval_hits AS h JOIN retrievals AS r ON r.id = h.retrieval_id "
                          "WHERE h.namespace <> r.namespace") == [(0,)]
    assert rows(location, "SELECT count(*) FROM feedback_hits AS h JOIN feedback AS f ON f.retrieval_id = h.retrieval_id "
                          "WHERE h.namespace <> f.namespace") == [(0,)]
    assert rows(location, "SELECT count(*) FROM feedback_hits") != [(0,)]
    if not events_named_by_memory_only:
        # Events that name no memory but belong to a tenant carry its namespace too.
        kinds = dict(rows(location, "SELECT action, min(namespace) FROM events WHERE memory_id IS NULL "
                                    "AND action IN ('feedback', 'label', 'merge') GROUP BY action"))
        assert kinds == {"feedback": "alice", "label": "bob", "merge": "alice"}


def test_every_tenant_row_carries_its_namespace(bank_path, embedder):
    with MemoryBank.open(bank_path, embedder=embedder) as bank:
        _fill(bank)
        bank.save_preset("mine", bank.active_preset()[1], "a bank-wide setting")
    _namespaces_are_right(bank_path)
    assert rows(bank_path, "SELECT namespace FROM events WHERE action = 'save_preset'") == [(BANK_WIDE,)]
    assert set(r[0] for r in rows(bank_path, "SELECT DISTINCT namespace FROM events")) == {"alice", "bob", BANK_WIDE}


def test_a_version_7_bank_is_migrated_with_its_namespaces_filled(bank_path, embedder):
    with MemoryBank.open(bank_path, embedder=embedder) as bank:
        made = _fill(bank)
        before = {"export": _export(bank), "history": bank.history(made["bob"][0]),
                  "retrievals": bank.retrievals(), "recall": bank.recall("sailing", namespace="bob", record=False)}
    downgrade(bank_path, 7)
    assert "namespace" not in [r[0] for r in rows(
        bank_path, "SELECT column_name FROM information_schema.columns WHERE table_name = 'events'")]
    with MemoryBank.open(bank_path, embedder=embedder) as bank:
        assert _export(bank) == before["export"]
        assert bank.history(made["bob"][0]) == before["history"]
        assert bank.retrievals() == before["retrievals"]
        assert [(h.memory.id, round(h.score, 6)) for h in bank.recall("sailing", namespace="bob", record=False)] == [
            (h.memory.id, round(h.score, 6)) for h in before["recall"]]
    assert rows(bank_path, "SELECT max(version) FROM schema_migrations") == [(SCHEMA_VERSION,)]
    assert keys(bank_path) == expected_keys(bank_path)
    # Events from before version 8 that name no memory could not be placed: they are bank-wide.
    _namespaces_are_right(bank_path, events_named_by_memory_only=True)
    assert rows(bank_path, "SELECT namespace FROM events WHERE action = 'label'") == [(BANK_WIDE,)]
    # What the migrated bank writes next carries its namespace.
    with MemoryBank.open(bank_path, embedder=embedder) as bank:
        bank.recall("green tea", namespace="alice", threshold=0.0)
        bank.feedback(bank.last_retrieval_id, used_ids=[made["merge"].merged_id])
        bank.label("bob", "boats", made["bob"][0])
    assert rows(bank_path, "SELECT namespace FROM events WHERE action = 'label' ORDER BY id") == [(BANK_WIDE,), ("bob",)]
    _namespaces_are_right(bank_path, events_named_by_memory_only=True)


def test_no_namespace_column_is_null_or_missing_in_the_schema(bank_path, embedder):
    """The schema itself: each tenant table has a NOT NULL namespace column."""
    with MemoryBank.open(bank_path, embedder=embedder):
        pass
    for table in TENANT_TABLES:
        got = rows(bank_path, "SELECT is_nullable FROM information_schema.columns WHERE table_name = ? "
                              "AND column_name = 'namespace'", [table])
        assert got, f"{table} has no namespace column"
    for table in ("memories", "events", "retrievals", "retrieval_hits", "feedback", "feedback_hits"):
        got = rows(bank_path, "SELECT is_nullable FROM information_schema.columns WHERE table_name = ? "
                              "AND column_name = 'namespace'", [table])
        assert got == [("NO",)], table


@pytest.mark.parametrize("table", ["events", "retrieval_hits", "feedback_hits"])
def test_the_namespace_columns_have_no_default(bank_path, embedder, table):
    """No default hides a writer that forgets the namespace: the column has none after the migration."""
    with MemoryBank.open(bank_path, embedder=embedder):
        pass
    got = rows(bank_path, "SELECT column_default FROM information_schema.columns WHERE table_name = ? "
                          "AND column_name = 'namespace'", [table])
    assert got == [(None,)]


def test_every_key_of_a_tenant_table_includes_its_namespace(bank_path, embedder):
    """Citus requires it of a table distributed by namespace, PostgreSQL of one partitioned by it."""
    with MemoryBank.open(bank_path, embedder=embedder) as bank:
        _fill(bank)
    assert keys(bank_path) == expected_keys(bank_path)


def _partition_by_namespace(url: str, parts: int = 4) -> None:
    """Turn every tenant table of the (closed) bank at ``url`` into one partitioned by a hash of
    its namespace, with the same columns, keys and rows: what an operator would do by hand."""
    import psycopg

    with psycopg.connect(url) as con:
        for table in TENANT_TABLES:
            con.execute(f"CREATE TABLE {table}_by_ns (LIKE {table} INCLUDING ALL) PARTITION BY HASH (namespace)")
            for i in range(parts):
                con.execute(f"CREATE TABLE {table}_ns{i} PARTITION OF {table}_by_ns "
                            f"FOR VALUES WITH (MODULUS {parts}, REMAINDER {i})")
            con.execute(f"INSERT INTO {table}_by_ns SELECT * FROM {table}")
            con.execute(f"DROP TABLE {table}")
            con.execute(f"ALTER TABLE {table}_by_ns RENAME TO {table}")


def test_a_postgresql_bank_partitioned_by_namespace_works_as_before(pg_url, embedder, tmp_path):
    with MemoryBank.open(pg_url, embedder=embedder) as bank:
        first = _fill(bank)
        before = {"export": _export(bank), "recall": bank.recall("sailing", namespace="bob", record=False)}
    _partition_by_namespace(pg_url)
    assert {r[0] for r in rows(pg_url, "SELECT c.relname FROM pg_partitioned_table AS p "
                                       "JOIN pg_class AS c ON c.oid = p.partrelid")} == set(TENANT_TABLES)
    with MemoryBank.open(pg_url, embedder=embedder) as bank:
        assert _export(bank) == before["export"]
        assert [(h.memory.id, round(h.score, 6)) for h in bank.recall("sailing", namespace="bob", record=False)] == [
            (h.memory.id, round(h.score, 6)) for h in before["recall"]]
        # Every kind of write lands, each tenant's in its partition, and recall sees it.
        more = _fill(bank)
        assert bank.get(more["bob"][2]).text is None  # erased, with VACUUM of the partitioned tables
        hits = bank.recall("Bob's first note about sailing boats", namespace="bob", threshold=0.0)
        assert {more["bob"][0], first["bob"][0]} <= {h.memory.id for h in hits}
        assert all(h.memory.namespace == "bob" for h in hits)
        assert not bank.recall("sailing", namespace="alice", threshold=0.5)
    _namespaces_are_right(pg_url)
    # The two tenants' memories went to different partitions (their hashes differ), each whole.
    placed = rows(pg_url, "SELECT tableoid::regclass::text, namespace, count(*) FROM memories GROUP BY 1, 2")
    assert len({part for part, _, _ in placed}) == 2 and len({ns for _, ns, _ in placed}) == 2
    # memctl migrate copies it as one bank (a partitioned table is one table, not its parts).
    with MemoryBank.open(pg_url, embedder=embedder) as bank:
        exported = _export(bank)
    copy_bank(open_store(pg_url), open_store(tmp_path / "copy.duckdb"))
    with MemoryBank.open(tmp_path / "copy.duckdb", embedder=embedder) as copy:
        assert _export(copy) == exported


def test_a_key_without_the_namespace_could_not_be_partitioned(pg_url, embedder):
    """The control: version 9's keys (the id alone) are what PostgreSQL refuses to partition."""
    import psycopg

    with MemoryBank.open(pg_url, embedder=embedder) as bank:
        _fill(bank)
    downgrade(pg_url, 9)
    with pytest.raises(psycopg.errors.FeatureNotSupported, match="must include all partitioning columns"):
        _partition_by_namespace(pg_url)
