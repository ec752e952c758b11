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


def _pg_relation_bytes(con: Any) -> Iterator[bytes]:
    """The on-disk files of every table of the bank, with their TOAST tables and indexes."""
    con.execute("CHECKPOINT")
    rels = con.execute(
        "SELECT c.oid FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
        "WHERE n.nspname = current_schema() AND c.relkind = 'r'").fetchall()
    oids: list[int] = []
    for (oid,) in rels:
        oids.append(oid)
        oids += [r[0] for r in con.execute(
            "SELECT reltoastrelid FROM pg_class WHERE oid = %s AND reltoastrelid <> 0 UNION "
            "SELECT indexrelid FROM pg_index WHERE indrelid = %s", [oid, oid]).fetchall()]
    for oid in oids:
        path = con.execute("SELECT pg_relation_filepath(%s)", [oid]).fetchone()[0]
        if path is None:
            continue
        size = con.execute("SELECT pg_relation_size(%s)", [oid]).fetchone()[0]
        segment = 0
        while segment * 1024 ** 3 < max(size, 1):
            name = path if segment == 0 else f"{path}.{segment}"
            try:
                yield con.execute("SELECT pg_read_binary_file(%s)", [name]).fetchone()[0]
            except psycopg.errors.UndefinedFile:
                break
            segment += 1


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
