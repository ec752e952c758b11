"""Forgotten means forgotten: after a hard delete the text is in no file, export, history or log.

A memory with a unique text is recalled, edited, flagged in a contradiction, named in maintenance
reports, and then erased (by `forget(hard=True)`, and by a maintenance run that hard-deletes).
Afterwards its text, and the stemmed words the BM25 cache kept of it, are searched for byte by
byte in every file next to the bank (the .duckdb file, its .wal, every file in `<bank>.index/`,
any temporary file; for a PostgreSQL bank, its table files and its local cache folder), in a fresh export, in the event history, in the stored reports, and in the
log records emitted meanwhile. The retrieval log keeps the memory's id only.
"""

from __future__ import annotations

import io
import logging
from datetime import datetime, timedelta, timezone
from pathlib import Path

import stores

from memory_core import MemoryBank
from memory_core.curation.maintenance import MaintenancePlan
from memory_core.storage.duckdb import release_file
from memory_core.language.text import tokenize

NOW = datetime(2026, 11, 1, tzinfo=timezone.utc)
SECRET = "Keeps the spare key under the blue flowerpot near Quetzalcoatl Street"
SECRET_OLD = "Once mentioned a cousin named Wolfgangus Xerxesson living in Trondheim"


def _needles(text: str) -> list[bytes]:
    """The text, and the rare words of it that an index or a payload could keep on their own."""
    rare = [w for w in tokenize(text) if len(w) >= 7]
    return [text.encode("utf-8")] + [w.encode("utf-8") for w in rare] + [
        w.encode("utf-8") for w in text.split() if len(w) >= 9]


def _files_holding(folder: Path, needles: list[bytes]) -> list[str]:
    for bank_file in folder.rglob("*.duckdb"):
        release_file(bank_file)  # what a bank of this process keeps between operations is in the files
    found = []
    for f in sorted(p for p in folder.rglob("*") if p.is_file()):
        data = f.read_bytes()
        hits = [n.decode() for n in needles if n in data or n.lower() in data.lower()]
        if hits:
            found.append(f"{f.relative_to(folder)}: {hits}")
    return found


def _stored_holding(location, needles: list[bytes]) -> list[str]:
    """Files next to the bank (or in a PostgreSQL bank's local cache folder) that hold a needle,
    and for a PostgreSQL bank its table files too."""
    found = _files_holding(stores.local_folder(location), needles)
    if stores.is_pg(location):
        found += [f"the database's {where}" for where in stores.relations_holding(location, needles)]
    return found


def _busy_bank(path: Path | str, embedder) -> tuple[MemoryBank, int, int]:
    bank = MemoryBank.open(path, embedder=embedder)
    secret = bank.add(SECRET, namespace="alice", importance=0.9, created_at=NOW - timedelta(days=5))
    old = bank.add(SECRET_OLD, namespace="alice", importance=0.2, created_at=NOW - timedelta(days=400),
                   durability="transient")
    _, _, newer = bank.add_many([{"text": t, "namespace": "alice", "created_at": NOW - timedelta(days=d)}
                                 for t, d in (("Drinks tea every morning", 40), ("Moved to Berlin in August", 90),
                                              ("Keeps the spare key at the neighbours'", 1))])
    bank.recall("where is the spare key kept?", namespace="alice", now=NOW)
    bank.recall("any cousins in Norway?", namespace="alice", now=NOW - timedelta(days=200))
    bank.update(secret, importance=0.95)
    bank.detect_conflicts("alice")
    # A contradiction whose evidence quotes the text, as detectors do; maintenance names it in its report.
    bank.record_conflict(secret, newer, kind="switch", evidence=f"{SECRET!r} vs 'at the neighbours'",
                         confidence=0.95, suggestion="newer_wins", path="rules")
    # Reports that name the memories: a dry run lists what expiry would archive, with the text.
    bank.maintain(dry_run=True, now=NOW, steps=["cleanup", "merge"])
    bank.recall("spare key", namespace="alice", now=NOW, record=False)  # index caches on disk
    bank.close()
    return MemoryBank.open(path, embedder=embedder), secret, old


def _check_gone(path: Path | str, bank: MemoryBank, text: str, mid: int, logs: str) -> None:
    needles = _needles(text)
    held = _stored_holding(path, needles)
    assert held == [], f"erased text is still in a file: {held}\n{stores.pg_horizons(path)}"
    assert stores.text_columns_holding(path, text) == []
    buf = io.StringIO()
    bank.export_jsonl(buf)
    assert text not in buf.getvalue()
    for event in bank.history(mid):
        assert text not in repr(event.before) + repr(event.after) + repr(event.note)
    assert text not in repr(bank.maintenance_runs(limit=100))
    assert text not in logs
    m = bank.get(mid)
    assert m.status == "deleted" and m.text is None
    # The retrieval log keeps the id of a recalled memory, never its text.
    recalled = [h for r in bank.retrievals(limit=None) for h in r["hits"] if h["memory_id"] == mid]
    assert recalled and all(set(h) >= {"memory_id", "score"} and text not in repr(h) for h in recalled)


def test_hard_delete_leaves_no_trace(bank_path, embedder, caplog):
    path = bank_path
    caplog.set_level(logging.DEBUG)
    bank, secret, _ = _busy_bank(path, embedder)
    assert _stored_holding(path, _needles(SECRET)), "the control: before the delete the text is in the file"
    bank.recall("spare key", namespace="alice", now=NOW, record=False)  # the bank has its indexes loaded
    bank.forget(secret, hard=True)
    logs = "\n".join(r.getMessage() for r in caplog.records)
    _check_gone(path, bank, SECRET, secret, logs)
    assert bank.recall("spare key flowerpot", namespace="alice", now=NOW, record=False)  # the rest still works
    bank.close()
    _check_gone(path, MemoryBank.open(path, embedder=embedder), SECRET, secret, logs)  # and after the close


def test_maintenance_that_hard_deletes_leaves_no_trace(bank_path, embedder, caplog):
    path = bank_path
    caplog.set_level(logging.DEBUG)
    bank, _, old = _busy_bank(path, embedder)
    report = bank.maintain(now=NOW, steps=["cleanup"], plan=MaintenancePlan(expire_action="hard"))
    assert old in [i for c in report.changes if c.action == "expire" for i in c.memory_ids]
    logs = "\n".join(r.getMessage() for r in caplog.records)
    _check_gone(path, bank, SECRET_OLD, old, logs)
    bank.close()
