"""Storage: the one interface the rest of memory_core uses to reach the bank's store.

A store holds everything (memories with their vectors, events, the recall log, settings,
curation and evaluation records); indexes are caches derived from it. What the services need
from it is small (the protocols are in :mod:`.interface`, re-exported here):

* :class:`Store`: a connection per operation (:meth:`Store.connect`, one transaction),
  a connection held across several transactions (:meth:`Store.hold`), the bank's lock across a
  caller's own bookkeeping (:meth:`Store.locked`), what a store keeps between operations
  (:meth:`Store.upcoming` while one is prepared, :meth:`Store.release` on closing), a cheap "did anyone write?" value
  (:meth:`Store.signature`), the schema (:meth:`Store.initialize`), and backup, restore and
  compaction.
* :class:`Connection`: ``execute``/``executemany`` with ``?`` placeholders, Arrow results
  (:meth:`Connection.arrow`, :meth:`Connection.arrow_stream`), Arrow tables as temporary
  relations for bulk statements (:meth:`Connection.registered`), transactions on a held
  connection, and the :class:`Dialect` of the engine.
* :mod:`.schema`: the schema version and its migrations; :mod:`.tables`: the SQL on the bank's
  tables that several services share (meta counters, bulk inserts, the event log, row reads),
  as plain functions of a connection.

The SQL services write is portable between DuckDB and PostgreSQL; what is not lives behind the
:class:`Dialect` of a connection, so every engine-only construct is named in one place per
implementation. :mod:`.duckdb` (a bank file, the embedded default) and :mod:`.postgres` (a
PostgreSQL database, for many writers and several servers) implement it; :func:`open_store` and
:func:`restore_backup` choose the implementation for a location, and :mod:`.copy` copies a bank
between any two stores (``memctl migrate``, a PostgreSQL bank's backup). Beside the store, the
conventions of what it keeps: :mod:`.clock` (naive-UTC times) and :mod:`.cache_dir` (the machine's
cache folder). May import: ``errors`` and ``models``; nothing above.
"""

from __future__ import annotations

import os
from typing import Hashable, Sequence

from . import schema  # and .tables, imported where used (NumPy, Arrow): the cache folder needs neither
from .interface import DATABASE_SCHEMES, Connection, Cursor, Dialect, IntegrityError, Store
from .schema import SCHEMA_VERSION



def is_database_url(location: str | os.PathLike) -> bool:
    """Does ``location`` name a database server's bank (a URL) rather than a bank file? A string
    check only: the PostgreSQL driver is imported when such a bank opens, not for a file."""
    return isinstance(location, str) and location.startswith(DATABASE_SCHEMES)


def open_store(location: str | os.PathLike, *, lock_timeout: float = 10.0, read_only: bool = False) -> Store:
    """The store at ``location``, ready to connect: a ``postgresql://`` URL (a database that
    exists; its tables are created on first connect) or a bank file (created on first connect).
    Raises :class:`~memory_core.errors.ValidationError` for a location that cannot hold a bank
    (a folder)."""
    if is_database_url(location):
        from .postgres import PostgresStore

        return PostgresStore.at(str(location), lock_timeout=lock_timeout, read_only=read_only)
    from .duckdb import DuckDBStore

    return DuckDBStore.at(location, lock_timeout=lock_timeout, read_only=read_only)


def restore_backup(backup: str | os.PathLike, dest: str | os.PathLike, *, force: bool = False,
                   lock_timeout: float = 10.0) -> int:
    """Put the backup ``backup`` (a bank file) in place of the bank ``dest`` (a file or a URL);
    returns its number of memories (see :meth:`memory_core.storage.duckdb.DuckDBStore.restore`
    and :func:`memory_core.storage.copy.restore_into`)."""
    if is_database_url(dest):
        from .copy import restore_into

        return restore_into(backup, open_store(dest, lock_timeout=lock_timeout), force=force)
    from .duckdb import DuckDBStore

    return DuckDBStore.restore(backup, dest, force=force, lock_timeout=lock_timeout)


def transaction_parts(store: Store, namespaces: Sequence[Hashable]) -> list[list[int]]:
    """The positions of a batch's items each of its transactions writes, given what names each
    item's namespace: one namespace's items per transaction on a store that splits them
    (``Store.splits_namespaces``: a schema distributed by namespace commits each on one node),
    else all of them in one."""
    if not store.splits_namespaces:
        return [list(range(len(namespaces)))] if namespaces else []
    parts: dict[Hashable, list[int]] = {}
    for i, ns in enumerate(namespaces):
        parts.setdefault(ns, []).append(i)
    return list(parts.values())


__all__ = ["Connection", "Cursor", "Dialect", "IntegrityError", "SCHEMA_VERSION", "Store", "open_store",
           "is_database_url", "restore_backup", "schema", "tables", "transaction_parts"]
