"""Copying a bank between stores, table by table: ``memctl migrate``, and a PostgreSQL bank's
backup (a DuckDB bank file) and restore.

A copy is logical and exact: every row of every table of the bank (memories with their ids,
dates, statuses and vectors, the event history, the recall log, labels, presets, tokens, meta
counters and the change sequence), read in one snapshot of the source and written in one
transaction of the destination, which must be empty (or be replaced with ``force``). Both stores
run the same schema (:mod:`.schema`), so the columns line up by name.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from ..errors import CorruptBankError, StateError, ValidationError
from . import schema, tables
from .interface import Connection, Store

BATCH_ROWS = 20_000  # rows per Arrow batch in flight (a batch of memories carries their vectors)


def _memories(con: Connection) -> int:
    return int(con.execute("SELECT count(*) FROM memories").fetchone()[0])


def _is_bank(con: Connection) -> bool:
    return "schema_migrations" in tables.bank_tables(con)


def _current(store: Store) -> None:
    """Bring the source's schema up to date (a read-only source must be current already)."""
    if store.read_only:
        return
    with store.connect() as con:
        if not _is_bank(con):
            raise CorruptBankError(f"there is no bank at {store.location}")
        meta = tables.meta(con)
        store.initialize(con, meta["embedding_model"])


def copy_rows(src: Connection, dst: Connection) -> int:
    """Copy every table of the bank in ``src`` into ``dst`` (an initialized bank whose rows are
    replaced); returns the memories copied."""
    have = set(tables.bank_tables(src))
    version = schema.installed_version(src)
    if version != schema.SCHEMA_VERSION:
        raise StateError(f"the source bank has schema version {version}, not {schema.SCHEMA_VERSION}; open it "
                         "once with this memory_core (memctl --bank SOURCE init) to bring it up to date")
    for name in tables.bank_tables(dst):
        if name not in have:
            raise CorruptBankError(f"the source bank has no table {name}")
        dst.execute(f"DELETE FROM {name}")
    for name in sorted(have):
        for batch in src.arrow_stream(f"SELECT * FROM {name}", None, BATCH_ROWS):
            if batch.num_rows == 0:
                continue
            cols = ", ".join(batch.column_names)
            with dst.registered(_rows=batch):
                dst.execute(f"INSERT INTO {name} ({cols}) SELECT {cols} FROM _rows")
    return _memories(dst)


def copy_bank(source: Store, dest: Store, *, force: bool = False) -> int:
    """Copy the bank in ``source`` into ``dest`` exactly; returns the memories copied.

    ``dest`` must hold no bank, or one with no memories, unless ``force`` (its rows are then
    replaced, and its change sequence moves past the old one's so processes that have it open
    bring their indexes in line)."""
    if source.location == dest.location:
        raise ValidationError(f"{source.location} is both the source and the destination")
    _current(source)
    with source.connect(write=False) as src:
        if not _is_bank(src):
            raise CorruptBankError(f"there is no bank at {source.location}")
        model = tables.meta(src)["embedding_model"]
        with dest.connect() as dst:
            before: tuple[int, list[tuple[int, str]]] | None = None
            if _is_bank(dst):
                held = _memories(dst)
                if held and not force:
                    raise StateError(f"{dest.location} already holds a bank with {held} memories; copy into an "
                                     "empty one, or replace it with force (memctl migrate --force)")
                dest.initialize(dst, model)
                before = (tables.change_seq(dst), dst.execute("SELECT id, namespace FROM memories").fetchall())
            else:
                dest.initialize(dst, model)
            n = copy_rows(src, dst)
            if before is not None:
                tables.renumber(dst, *before)
    return n


def backup_to_file(store: Store, dest: str | os.PathLike, *, overwrite: bool = False) -> int:
    """Write the bank in ``store`` to ``dest``, a new DuckDB bank file, as one snapshot; a crash
    never leaves a half-written file under ``dest``. Returns the memories copied."""
    from .duckdb import DuckDBStore, _fsync, _remove

    dest = Path(dest)
    if dest.is_dir():
        raise ValidationError(f"{dest} is a folder; give a file name (e.g. {dest}/bank.duckdb)")
    if dest.exists() and not overwrite:
        raise ValidationError(f"{dest} exists; choose another name or allow overwriting it")
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = dest.with_name(f".{dest.name}.partial.{os.getpid()}")
    _remove(tmp)
    try:
        with store.connect(write=False) as src:
            if not _is_bank(src):
                raise CorruptBankError(f"there is no bank at {store.location}")
            target = DuckDBStore(tmp)
            try:
                with target.connect() as dst:
                    target.initialize(dst, tables.meta(src)["embedding_model"])
                    n = copy_rows(src, dst)
            finally:
                target.release()  # closed (and checkpointed) before it is renamed into place
        _fsync(tmp)
        os.replace(tmp, dest)
    finally:
        _remove(tmp)
    return n


def restore_into(backup: str | os.PathLike, dest: Store, *, force: bool = False) -> int:
    """Put the backup file ``backup`` (a DuckDB bank file) in place of the bank in ``dest``."""
    from .duckdb import DuckDBStore

    backup = Path(backup)
    if not backup.is_file():
        raise ValidationError(f"no backup file at {backup}")
    source = DuckDBStore(backup, read_only=True)
    try:
        n = copy_bank(source, dest, force=force)
        shutil.rmtree(dest.index_folder, ignore_errors=True)  # caches of the replaced bank
        return n
    finally:
        source.release()
        dest.release()
