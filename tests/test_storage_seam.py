"""The storage seam: SQL above storage is portable, and the interface behaves on a real DuckDB file.

Every DuckDB-only construct lives in ``memory_core/storage/`` (named in ``DuckDBDialect`` or in
the DuckDB store itself), so a PostgreSQL store is an addition, not a hunt through the services.
The grep below fails naming the file and line of any DuckDB-only token that appears elsewhere.
"""

from __future__ import annotations

import json
import re
from datetime import datetime
from pathlib import Path
from typing import Iterator

import pyarrow as pa
import pytest

from memory_core import storage
from memory_core.errors import CorruptBankError
from memory_core.storage import IntegrityError, open_store, schema, tables
from memory_core.storage.schema import SCHEMA_VERSION

ROOT = Path(__file__).resolve().parent.parent / "memory_core"

# DuckDB-only spellings (the API, its relation idiom, and SQL PostgreSQL does not have), each with
# the portable way or the storage interface that replaces it.
DUCKDB_ONLY = [
    (r"^\s*(import duckdb|from duckdb\b)", "import duckdb: only memory_core.storage talks to the engine"),
    (r"(?<![\w./])duckdb\.", "the duckdb module: use the storage interface"),
    (r"\.to_arrow_table\(|\.to_arrow_reader\(", "a DuckDB relation: con.arrow(sql, params) / con.arrow_stream(...)"),
    (r"\bcon\w*\.sql\(", "a DuckDB relation: con.arrow(sql, params)"),
    (r"(?<!atexit)(?<!registry)\.(un)?register\(", "Arrow registration: with con.registered(_rows=table)"),
    (r"\blist_has_any\b", "list overlap: con.dialect.list_overlaps(column)"),
    (r"\bINSERT OR REPLACE\b", "INSERT ... ON CONFLICT (key) DO UPDATE SET ... (tables.put_meta)"),
    (r"(?<![\w.])strftime\(", "SQL strftime: extract(...) or con.dialect.iso_utc(column)"),
    (r"\bSET memory_limit\b", "DuckDB memory: with con.scanning()"),
    (r"\bSET threads\b", "DuckDB threads: store.connect(threads=n)"),
    (r"\bstruct_pack\b", "DuckDB structs: con.dialect.json_object(fields)"),
    (r"(?<![\w.])contains\(", "DuckDB contains(): strpos(haystack, needle) > 0"),
    (r"\bFORCE CHECKPOINT\b|\bCOPY FROM DATABASE\b|\bATTACH\b", "DuckDB file handling: the store's backup/compact"),
]


def duckdb_only_spots(text: str) -> list[tuple[int, str, str]]:
    """(line number, the line, why) for every DuckDB-only token in a module's source."""
    found = []
    for lineno, line in enumerate(text.splitlines(), start=1):
        for pattern, why in DUCKDB_ONLY:
            if re.search(pattern, line):
                found.append((lineno, line.strip(), why))
    return found


def test_the_grep_catches_each_token():
    planted = "\n".join([
        "import duckdb",
        "x = duckdb.connect()",
        "rows = con.sql('SELECT 1').to_arrow_table()",
        "con.register('_x', table)",
        "con.execute(\"UPDATE t SET a = NULL WHERE list_has_any(ids, ?::BIGINT[])\")",
        "con.execute(\"INSERT OR REPLACE INTO meta VALUES ('k', ?)\")",
        "con.execute(\"SELECT strftime(created_at, '%Y-%m') FROM memories\")",
        "con.execute(\"SET memory_limit = '1GB'\")",
        "con.execute('SET threads = 1')",
        "sql = 'to_json(struct_pack(a := 1))'",
        "where = 'contains(lower(text), lower(?))'",
    ])
    assert [n for n, _, _ in duckdb_only_spots(planted)] == [1, 2, 3, 3, 4, 5, 6, 7, 8, 9, 10, 11]
    portable = "\n".join([
        "atexit.register(flush)", "stamp = when.strftime('%Y-%m')", "with con.registered(_rows=table):",
        "self.registry.register(collector)",  # a Prometheus collector (server/metrics.py)
        "rows = con.arrow('SELECT 1')", "path = 'data/memory.duckdb'",
        "where += ' AND strpos(lower(text), lower(?)) > 0'",
    ])
    assert duckdb_only_spots(portable) == []


def test_no_duckdb_only_sql_outside_storage():
    outside = [f for f in sorted(ROOT.rglob("*.py")) if "storage" not in f.relative_to(ROOT).parts]
    assert len(outside) > 20, "the grep must see the services"
    spots = [f"memory_core/{f.relative_to(ROOT)}:{n}: {line}  ({why})"
             for f in outside for n, line, why in duckdb_only_spots(f.read_text(encoding="utf-8"))]
    assert not spots, "DuckDB-only code outside memory_core/storage/:\n" + "\n".join(spots)


# -- the interface on a real DuckDB file and a real PostgreSQL database ---------------------------------


@pytest.fixture
def store(bank_path: Path | str) -> Iterator[storage.Store]:
    s = open_store(bank_path, lock_timeout=5)
    with s.connect() as con:
        s.initialize(con, "test-model")
    yield s
    s.release()


def test_a_fresh_file_migrates_to_the_schema_version(store: storage.Store):
    assert isinstance(store, storage.Store)
    with store.connect(write=False) as con:
        assert isinstance(con, storage.Connection)
        assert schema.installed_version(con) == SCHEMA_VERSION
        versions = [v for (v,) in con.execute("SELECT version FROM schema_migrations ORDER BY 1").fetchall()]
        assert versions == list(range(1, SCHEMA_VERSION + 1))
        meta = tables.meta(con)
    assert meta["embedding_model"] == "test-model" and meta["change_seq"] == "0" and meta["next_label_id"] == "1"
    with store.connect() as con:  # again: nothing to do
        store.initialize(con, "another-model")
        assert tables.meta(con)["embedding_model"] == "test-model"


def test_a_newer_schema_is_refused(store: storage.Store):
    with store.connect() as con:
        con.execute("INSERT INTO schema_migrations VALUES (?, ?)", [SCHEMA_VERSION + 1, datetime(2024, 1, 1)])
    with pytest.raises(CorruptBankError, match="newer than this memory_core"):
        with store.connect() as con:
            store.initialize(con, "test-model")


def test_a_transaction_that_raises_rolls_back(store: storage.Store):
    with pytest.raises(RuntimeError):
        with store.connect() as con:
            assert tables.take_ids(con, "next_id", 5) == 1
            tables.set_meta(con, "active_preset", "gone")
            raise RuntimeError("boom")
    with store.connect(write=False) as con:
        assert tables.meta(con)["next_id"] == "1" and tables.meta(con)["active_preset"] == "default"
    with store.hold() as con:
        with pytest.raises(RuntimeError):
            with con.transaction():
                tables.next_seq(con)
                raise RuntimeError("boom")
        with con.transaction():
            assert tables.next_seq(con) == 1
    with store.connect(write=False) as con:
        assert tables.change_seq(con) == 1


def test_a_broken_key_is_an_integrity_error_and_changes_nothing(store: storage.Store):
    with pytest.raises(IntegrityError):
        with store.connect() as con:
            tables.put_meta(con, "index_mode", "ivf")
            con.execute("INSERT INTO meta VALUES ('next_id', '7')")
    with store.connect() as con:
        assert "index_mode" not in tables.meta(con)
        tables.put_meta(con, "index_mode", "ivf")
        tables.put_meta(con, "index_mode", "exact")
        assert tables.meta(con)["index_mode"] == "exact" and tables.meta(con)["next_id"] == "1"


def test_arrow_results_registered_rows_and_the_dialect(store: storage.Store):
    rows = pa.table({"id": pa.array([1, 2, 3], pa.int64()), "ns": ["a", "b", "a"]})
    with store.connect() as con:
        with con.registered(_rows=rows):
            con.execute("INSERT INTO removed_memories SELECT id, ns, 9 FROM _rows")
        got = con.arrow("SELECT id, namespace FROM removed_memories WHERE namespace = ? ORDER BY id", ["a"])
        assert got.to_pylist() == [{"id": 1, "namespace": "a"}, {"id": 3, "namespace": "a"}]
        with con.scanning():
            batches = list(con.arrow_stream("SELECT id FROM removed_memories ORDER BY id", [], batch_rows=2))
        assert sum(b.num_rows for b in batches) == 3 and all(isinstance(b, pa.Table) for b in batches)

        con.execute("INSERT INTO merges VALUES (1, 'a', 10, ?, 'manual', NULL, 1, ?, NULL)", [[4, 5], datetime(2024, 1, 1)])
        overlap = f"SELECT count(*) FROM merges WHERE {con.dialect.list_overlaps('member_ids')}"
        assert con.execute(overlap, [[5, 6]]).fetchone()[0] == 1
        assert con.execute(overlap, [[6, 7]]).fetchone()[0] == 0

        stamp = "TIMESTAMP '2024-01-02 03:04:05.000006'"
        obj = con.dialect.json_object([("n", "1"), ("at", con.dialect.iso_utc(stamp)), ("none", "NULL")])
        text = con.execute(f"SELECT {obj}").fetchone()[0]
        assert isinstance(text, str)
        assert json.loads(text) == {"n": 1, "at": "2024-01-02T03:04:05.000006+00:00", "none": None}
    with store.hold() as con:  # no transaction: a failed statement leaves the connection usable
        with con.registered(_rows=rows):
            assert con.execute("SELECT count(*) FROM _rows").fetchone()[0] == 3
        with pytest.raises(Exception, match="_rows"):
            con.execute("SELECT * FROM _rows")  # gone after the block


def test_connect_can_cap_the_engine_threads(tmp_path: Path):
    store = open_store(tmp_path / "seam.duckdb")  # an embedded engine's threads (a server's are its own)
    with store.connect(threads=1) as con:
        assert int(con.execute("SELECT current_setting('threads')").fetchone()[0]) == 1


def test_a_slow_statement_prints_no_progress_bar_into_the_callers_output(tmp_path: Path):
    """DuckDB's client draws a bar on stdout for a statement over two seconds (an open under load)."""
    store = open_store(tmp_path / "seam.duckdb")
    with store.connect() as con:
        assert con.execute("SELECT current_setting('enable_progress_bar')").fetchone()[0] is False


def test_a_folder_is_not_a_bank(tmp_path: Path):
    from memory_core.errors import ValidationError

    with pytest.raises(ValidationError, match="is a folder"):
        open_store(tmp_path)
