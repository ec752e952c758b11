"""Both stores in tests: PostgreSQL databases made and dropped for tests, and what a test needs to
look at a bank's storage whichever store holds it (its bytes on disk, its tables, its caches).

A bank in tests is named by its location: a Path (a DuckDB file) or a ``postgresql://`` URL.
"""

from __future__ import annotations

import os
import secrets
from pathlib import Path
from typing import Any, Iterator

import psycopg

from memory_core.storage import open_store
from memory_core.storage.duckdb import release_file

# Tables of a tenant's data, each with a namespace column (schema version 8). Bank-wide tables (meta,
# presets, tokens, schema_migrations, maintenance_runs, ablation_runs) are listed in docs/scale-out.md.
TENANT_TABLES = ("memories", "events", "retrievals", "retrieval_hits", "feedback", "feedback_hits", "conflicts",
                 "merges", "removed_memories", "labels", "ablation_cases")

ADMIN_URL = os.environ.get("MEMCTL_TEST_PG", "postgresql://postgres@127.0.0.1:5432/postgres")
START_HINT = ("start it with: pg_ctlcluster 15 main start (or point MEMCTL_TEST_PG at a server where this "
              "user may create databases, e.g. postgresql://user@host:5432/postgres)")


def check_server() -> str | None:
    """None when the test server answers, else why not (with how to start it)."""
    try:
        psycopg.connect(ADMIN_URL, connect_timeout=3).close()
    except Exception as exc:  # noqa: BLE001 - any failure means the same to the tests
        first = (str(exc).splitlines() or [type(exc).__name__])[0]
        return f"PostgreSQL is not reachable at {ADMIN_URL} ({first}); {START_HINT}"
    return None


def _url_of(name: str) -> str:
    base, _, _ = ADMIN_URL.rpartition("/")
    return f"{base}/{name}"


def create_database() -> str:
    """A new empty database ``memctl_test_<random>``; returns its URL."""
    name = f"memctl_test_{secrets.token_hex(6)}"
    with psycopg.connect(ADMIN_URL, autocommit=True) as con:
        con.execute(f'CREATE DATABASE "{name}"')
    return _url_of(name)


def drop_database(url: str) -> None:
    """Drop a database made by :func:`create_database`, closing whatever is still connected."""
    name = url.rpartition("/")[2]
    assert name.startswith("memctl_test_"), name
    with psycopg.connect(ADMIN_URL, autocommit=True) as con:
        con.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def is_pg(location: Any) -> bool:
    return isinstance(location, str) and location.startswith("postgresql://")


def index_folder(location: Path | str) -> Path:
    """Where the bank's saved namespace indexes live."""
    return open_store(location).index_folder


def local_folder(location: Path | str) -> Path:
    """The folder of the files this machine keeps for the bank (the bank file's own folder, or
    the cache folder of a PostgreSQL bank)."""
    if is_pg(location):
        return open_store(location).index_folder.parent
    return Path(location).parent


def _pg_relations(con: Any) -> Iterator[tuple[int, str, str]]:
    """Every relation with files of the bank's tables: (oid, table, kind), kind being ``heap``,
    ``toast <name>``, ``toast index <name>`` or ``index <name>``."""
    rels = con.execute(
        "SELECT c.oid, c.relname, c.reltoastrelid FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
        "WHERE n.nspname = current_schema() AND c.relkind = 'r' ORDER BY c.relname").fetchall()
    for oid, table, toast in rels:
        yield oid, table, "heap"
        if toast:
            yield toast, table, f"toast {con.execute('SELECT %s::regclass::text', [toast]).fetchone()[0]}"
            for (ix,) in con.execute("SELECT indexrelid::regclass::text FROM pg_index WHERE indrelid = %s",
                                     [toast]).fetchall():
                yield con.execute("SELECT %s::regclass::oid", [ix]).fetchone()[0], table, f"toast index {ix}"
        for ix_oid, ix in con.execute("SELECT indexrelid, indexrelid::regclass::text FROM pg_index "
                                      "WHERE indrelid = %s ORDER BY 2", [oid]).fetchall():
            yield ix_oid, table, f"index {ix}"


def _pg_file_bytes(con: Any, oid: int) -> tuple[str | None, bytes]:
    """The relation's file path and the bytes of all its segments (read by the server)."""
    path = con.execute("SELECT pg_relation_filepath(%s)", [oid]).fetchone()[0]
    if path is None:
        return None, b""
    size = con.execute("SELECT pg_relation_size(%s)", [oid]).fetchone()[0]
    blob = b""
    segment = 0
    while segment * 1024 ** 3 < max(size, 1):
        name = path if segment == 0 else f"{path}.{segment}"
        try:
            blob += con.execute("SELECT pg_read_binary_file(%s)", [name]).fetchone()[0]
        except psycopg.errors.UndefinedFile:
            break
        segment += 1
    return path, blob


def _pg_relation_bytes(con: Any) -> Iterator[bytes]:
    """The on-disk files of every table of the bank, with their TOAST tables and indexes."""
    con.execute("CHECKPOINT")
    for oid, _, _ in list(_pg_relations(con)):
        yield _pg_file_bytes(con, oid)[1]


def _hits(blob: bytes, needles: list[bytes]) -> list[str]:
    low = blob.lower()
    return [n.decode() for n in needles if n in blob or n.lower() in low]


def _pg_tuples_holding(con: Any, oid: int, needles: list[bytes]) -> list[str]:
    """The heap (or TOAST) tuples whose bytes hold a needle, with their xmin, xmax and flags
    (pageinspect; empty when the extension cannot be had)."""
    try:
        con.execute("CREATE EXTENSION IF NOT EXISTS pageinspect SCHEMA public")
    except psycopg.Error:
        return []
    pages = con.execute("SELECT pg_relation_size(%s) / current_setting('block_size')::int", [oid]).fetchone()[0]
    found = []
    for blk in range(pages):
        for lp, xmin, xmax, infomask, ctid, data in con.execute(
                "SELECT lp, t_xmin, t_xmax, t_infomask, t_ctid::text, t_data "
                "FROM public.heap_page_items(public.get_raw_page(%s::regclass::text, %s))", [oid, blk]).fetchall():
            if data is not None and _hits(bytes(data), needles):
                found.append(f"({blk},{lp}) xmin={xmin} xmax={xmax} infomask=0x{infomask:04x} ctid={ctid}")
    return found


def relations_holding(location: Path | str, needles: list[bytes]) -> list[str]:
    """Which stored files of the bank hold a needle (case-insensitively), each as a description:
    the DuckDB file or its WAL; for a PostgreSQL bank the relation (table, and heap, TOAST or
    index) and its file, and for heap and TOAST files the tuples holding it (their xmin/xmax)."""
    if not is_pg(location):
        release_file(Path(location))
        found = []
        for f in (Path(location), Path(location).with_name(Path(location).name + ".wal")):
            if f.exists() and (hits := _hits(f.read_bytes(), needles)):
                found.append(f"{f.name}: {hits}")
        return found
    found = []
    with psycopg.connect(location, autocommit=True) as con:
        con.execute("CHECKPOINT")
        for oid, table, kind in list(_pg_relations(con)):
            path, blob = _pg_file_bytes(con, oid)
            if hits := _hits(blob, needles):
                where = f"table {table}, {kind} ({path}): {hits}"
                if not kind.startswith("index") and not kind.startswith("toast index"):
                    tuples = _pg_tuples_holding(con, oid, needles)
                    where += f"; tuples {tuples}" if tuples else "; no live page item holds it"
                found.append(where)
    return found


def pg_horizons(location: str) -> str:
    """What could have kept old row versions from a ``VACUUM FULL`` of the bank: every session
    (this database's and others') with its transaction ids, prepared transactions, replication
    slots, and the current snapshot. For a failing erasure check's message."""
    if not is_pg(location):
        return ""
    lines = []
    with psycopg.connect(location, autocommit=True) as con:
        lines.append(f"this session: pid {con.info.backend_pid}, database {con.info.dbname}, "
                     f"snapshot {con.execute('SELECT pg_current_snapshot()::text').fetchone()[0]}")
        for row in con.execute(
                "SELECT pid, datname, backend_type, state, backend_xid::text, backend_xmin::text, "
                "age(backend_xmin), xact_start, left(query, 80) FROM pg_stat_activity "
                "WHERE backend_xid IS NOT NULL OR backend_xmin IS NOT NULL OR datname = current_database() "
                "ORDER BY datname = current_database() DESC, pid").fetchall():
            lines.append(f"activity: {row}")
        for row in con.execute("SELECT transaction::text, gid, prepared, owner, database FROM pg_prepared_xacts"):
            lines.append(f"prepared: {row}")
        for row in con.execute("SELECT slot_name, slot_type, database, active, xmin::text, catalog_xmin::text "
                               "FROM pg_replication_slots"):
            lines.append(f"slot: {row}")
    return "\n".join(lines)


def stored_bytes(location: Path | str) -> bytes:
    """Every byte of the bank's store: the DuckDB file and its WAL, or the table files of a
    PostgreSQL bank (read by the server: the tests run as a superuser)."""
    if is_pg(location):
        with psycopg.connect(location, autocommit=True) as con:
            return b"".join(_pg_relation_bytes(con))
    path = Path(location)
    release_file(path)  # what a bank of this process keeps between operations is in the file
    blob = path.read_bytes()
    wal = path.with_name(path.name + ".wal")
    if wal.exists():
        blob += wal.read_bytes()
    return blob


def text_columns_holding(location: Path | str, needle: str) -> list[str]:
    """Every text column of every table of the bank that still mentions ``needle``."""
    if is_pg(location):
        with psycopg.connect(location, autocommit=True) as con:
            cols = con.execute("SELECT table_name, column_name FROM information_schema.columns WHERE "
                               "table_schema = current_schema() AND data_type IN ('character varying', 'text')"
                               ).fetchall()
            return [f"{t}.{c}" for t, c in cols
                    if con.execute(f'SELECT count(*) FROM "{t}" WHERE strpos(lower("{c}"), lower(%s)) > 0',
                                   [needle]).fetchone()[0]]
    import duckdb

    release_file(location)
    con = duckdb.connect(str(location), read_only=True)
    try:
        cols = con.execute("SELECT table_name, column_name FROM information_schema.columns "
                           "WHERE data_type = 'VARCHAR'").fetchall()
        return [f"{t}.{c}" for t, c in cols
                if con.execute(f'SELECT count(*) FROM "{t}" WHERE strpos(lower("{c}"), lower(?)) > 0',
                               [needle]).fetchone()[0]]
    finally:
        con.close()
