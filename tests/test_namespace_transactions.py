"""No transaction of the write path touches two namespaces' rows on PostgreSQL.

A schema distributed by namespace (Citus) runs a transaction that writes one tenant's rows on
that tenant's node alone; one over two tenants needs a commit across nodes. So on PostgreSQL
everything an agent's writes cause goes to the store one namespace per transaction, even when
one batch of work spans several: adds a server groups from concurrent requests, what the
contradiction check records for them, and the recalls a server journaled (written by the flush
thread, or first by the next operation). Triggers record which namespaces each transaction
wrote, and the test reads them back. A bulk ``add_many`` over several namespaces stays one
transaction (all or nothing, the import path): the audit's control.
"""

from __future__ import annotations

from typing import Any

import psycopg
import pytest

from memory_core import MemoryBank
from stores import TENANT_TABLES

AUDIT = """
CREATE TABLE ns_audit (xid xid8 NOT NULL, tbl text NOT NULL, namespace text NOT NULL);
CREATE FUNCTION ns_audit() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP <> 'INSERT' THEN
    INSERT INTO ns_audit VALUES (pg_current_xact_id(), TG_TABLE_NAME, OLD.namespace);
  END IF;
  IF TG_OP <> 'DELETE' THEN
    INSERT INTO ns_audit VALUES (pg_current_xact_id(), TG_TABLE_NAME, NEW.namespace);
  END IF;
  RETURN NULL;
END $$;
"""


def audit(url: str) -> None:
    """Record, for every row a transaction writes in a tenant table, its transaction and namespace."""
    with psycopg.connect(url, autocommit=True) as con:
        con.execute(AUDIT)
        for table in TENANT_TABLES:
            con.execute(f"CREATE TRIGGER ns_audit AFTER INSERT OR UPDATE OR DELETE ON {table} "
                        "FOR EACH ROW EXECUTE FUNCTION ns_audit()")


def audited(url: str) -> tuple[dict[int, set[str]], set[str]]:
    """The namespaces each audited transaction wrote ({xid: {namespace}}), and the tables written."""
    with psycopg.connect(url) as con:
        found = con.execute("SELECT xid::text, tbl, namespace FROM ns_audit").fetchall()
        con.execute("TRUNCATE ns_audit")
    by_xid: dict[int, set[str]] = {}
    for xid, _, ns in found:
        by_xid.setdefault(int(xid), set()).add(ns)
    return by_xid, {tbl for _, tbl, _ in found}


def crossing(by_xid: dict[int, set[str]]) -> list[set[str]]:
    return [nss for nss in by_xid.values() if len(nss) > 1]


@pytest.fixture
def bank(pg_url: str, embedder) -> Any:
    with MemoryBank.open(pg_url, embedder=embedder) as setup:  # the schema, then the audit
        setup.add("The team meets on Mondays", namespace="alice", detect_conflicts=False)
    audit(pg_url)
    audited(pg_url)
    with MemoryBank.open(pg_url, embedder=embedder) as b:
        yield b


def test_adds_grouped_over_namespaces_write_each_namespace_in_its_own_transaction(bank, pg_url):
    """A server groups concurrent adds of several tenants into one ``add_each``: their rows, their
    events and the contradictions the check records go to the store per namespace."""
    bank.add_each([{"text": "Lives in Paris", "namespace": "alice", "created_at": "2026-01-01"},
                   {"text": "Lives in Paris", "namespace": "bob", "created_at": "2026-01-01"}])
    found = bank.add_each([{"text": "Moved to Berlin", "namespace": "alice", "created_at": "2026-06-01"},
                           {"text": "Moved to Berlin", "namespace": "bob", "created_at": "2026-06-01"}])
    assert all(isinstance(i, int) for i in found)
    # Both namespaces found their contradiction, so the check's recording was audited too.
    assert [len(bank.conflicts(namespace=ns)) for ns in ("alice", "bob")] == [1, 1]
    by_xid, tables = audited(pg_url)
    assert {"memories", "events", "conflicts"} <= tables
    assert crossing(by_xid) == []
    assert sum(1 for nss in by_xid.values() if nss <= {"alice", "bob"}) >= 4  # two writes, two checks


def test_journaled_recalls_are_written_one_namespace_per_transaction(bank, pg_url):
    """Recalls of several tenants, journaled by one process, reach the store per namespace,
    whether the flush writes them or the next operation does (first, before its own work)."""
    ids = bank.add_each([{"text": "Prefers green tea in the morning", "namespace": ns}
                         for ns in ("alice", "bob", "carol")], detect_conflicts=[False] * 3)
    audited(pg_url)
    for ns in ("alice", "bob"):
        assert bank.recall("what does she drink in the morning", namespace=ns, threshold=0)
    assert bank.flush() == 2
    by_xid, tables = audited(pg_url)
    assert {"retrievals", "retrieval_hits", "memories"} <= tables
    assert crossing(by_xid) == [] and len(by_xid) == 2

    for ns in ("alice", "bob"):
        bank.recall("what does she drink in the morning", namespace=ns, threshold=0)
    bank.update(ids[2], importance=0.9)  # carol's: the buffered recalls are written first
    by_xid, tables = audited(pg_url)
    assert {"retrievals", "retrieval_hits", "memories", "events"} <= tables
    assert crossing(by_xid) == [] and len(by_xid) == 3
    assert [bank.get(i).access_count for i in ids] == [2, 2, 0]


def test_the_write_path_of_one_tenant_stays_in_its_namespace(bank, pg_url):
    """Feedback, edits, archiving, restoring, labels, resolving and merging touch one namespace."""
    a = bank.add("Lives in Paris", namespace="alice", created_at="2026-01-01")
    b = bank.add("Moved to Berlin", namespace="alice", created_at="2026-06-01")
    other = bank.add("Lives in Paris", namespace="bob", detect_conflicts=False)
    hits = bank.recall("where does she live", namespace="alice", threshold=0)
    bank.feedback(bank.last_retrieval_id, answer="Berlin", used_ids=[h.memory.id for h in hits], helpful=True)
    bank.label("alice", "where does she live", b)
    bank.update(a, importance=0.2)
    bank.resolve_conflict(bank.conflicts(namespace="alice")[0].id, "keep_both")
    bank.forget(other)
    bank.restore(other)
    c = bank.add("Her flat in Berlin is in Kreuzberg", namespace="alice", detect_conflicts=False)
    bank.merge([b, c])
    bank.flush()
    by_xid, tables = audited(pg_url)
    assert {"memories", "events", "retrievals", "feedback", "feedback_hits", "labels", "conflicts", "merges"} <= tables
    assert crossing(by_xid) == []


def test_the_audit_sees_a_transaction_over_two_namespaces(bank, pg_url):
    """The control: a bulk add_many over two namespaces is one transaction (all or nothing)."""
    bank.add_many([{"text": "Plays chess on Sundays", "namespace": "alice"},
                   {"text": "Plays chess on Sundays", "namespace": "bob"}])
    by_xid, _ = audited(pg_url)
    assert crossing(by_xid) == [{"alice", "bob"}]


def test_a_served_bank_never_writes_two_tenants_in_one_transaction(pg_url):
    """End to end: a real `memctl serve` over PostgreSQL, an admin token adding to four namespaces
    from eight clients at once (the write queue groups them), recalls in each, then SIGTERM
    (the journal's last flush). Every transaction the audit saw wrote one namespace."""
    from concurrent.futures import ThreadPoolExecutor

    from memctl_server import serve_with_tokens

    MemoryBank.open(pg_url).close()  # the schema, then the audit
    audit(pg_url)
    server = serve_with_tokens(pg_url, [("root", [], False, True)])
    tenants = ["alice", "bob", "carol", "dave"]
    try:
        def add(i: int) -> int:
            with server.client(server.tokens["root"]) as c:
                return c.post("/v1/memories", json={"text": f"Note {i}: the team meets on Mondays",
                                                    "namespace": tenants[i % 4]}).status_code

        with ThreadPoolExecutor(8) as pool:
            assert list(pool.map(add, range(48))) == [201] * 48
        with server.client(server.tokens["root"]) as c:
            for ns in tenants:
                assert c.post("/v1/recall", json={"query": "when does the team meet", "namespace": ns,
                                                  "threshold": 0}).json()["hits"]
    finally:
        assert server.stop() == 0, server.output()
    by_xid, tables = audited(pg_url)
    assert {"memories", "events", "retrievals", "retrieval_hits"} <= tables
    assert crossing(by_xid) == []
    # The four tenants' recalls were flushed apart: one transaction each.
    with psycopg.connect(pg_url) as con:
        assert con.execute("SELECT count(DISTINCT namespace) FROM retrievals").fetchone()[0] == 4
