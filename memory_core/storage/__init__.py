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
implementation. :mod:`.duckdb` is the one implementation today (a bank file, the embedded
default); :func:`open_store` and :func:`restore_backup` choose the implementation for a location.
"""

from __future__ import annotations

import os

from . import schema, tables
from .interface import Connection, Cursor, Dialect, IntegrityError, Store
from .schema import SCHEMA_VERSION


def open_store(location: str | os.PathLike, *, lock_timeout: float = 10.0, read_only: bool = False) -> Store:
    """The store at ``location`` (a bank file today), ready to connect; a missing file is created
    on first connect. Raises :class:`~memory_core.errors.ValidationError` for a location that
    cannot hold a bank (a folder)."""
    from .duckdb import DuckDBStore

    return DuckDBStore.at(location, lock_timeout=lock_timeout, read_only=read_only)


def restore_backup(backup: str | os.PathLike, dest: str | os.PathLike, *, force: bool = False,
                   lock_timeout: float = 10.0) -> int:
    """Put the backup ``backup`` in place of the bank ``dest``; returns its number of memories
    (see :meth:`memory_core.storage.duckdb.DuckDBStore.restore`)."""
    from .duckdb import DuckDBStore

    return DuckDBStore.restore(backup, dest, force=force, lock_timeout=lock_timeout)


__all__ = ["Connection", "Cursor", "Dialect", "IntegrityError", "SCHEMA_VERSION", "Store", "open_store",
           "restore_backup", "schema", "tables"]
