"""Import and export of JSON lines: the whole demo set round-trips exactly, bad files change
nothing, re-running an import is idempotent, and exported vectors are used as they are.

Run with ``-s`` to see the measured import throughput of the demo set.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from memory_core import ImportFormatError, MemoryBank, ValidationError
from memory_core import demo as demo_set
from memory_core.storage import tables

DEMO = demo_set.MEMORIES
DEMO_QUERIES = demo_set.QUERIES


# -- helpers ---------------------------------------------------------------------------------------


def read_lines(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8").splitlines()


def write_lines(path: Path, lines: list[str]) -> Path:
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return path


def vectors_of(bank: MemoryBank) -> dict[int, np.ndarray]:
    """Every stored vector of the bank by memory id, read straight from the DuckDB file."""
    with bank._store.connect(write=False) as con:
        table = tables.fetch_rows(con, "embedding IS NOT NULL", [], with_embedding=True)
    vecs = tables.embeddings_of(table, bank.dim)
    return {int(mid): vecs[i] for i, mid in enumerate(table.column("id").to_pylist())}


def utc(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00")).astimezone(timezone.utc)


@dataclass
class DemoExport:
    """Bank A, built from the demo set plus some history, and its two exports."""

    bank_path: Path
    plain: Path          # export without vectors
    with_vectors: Path   # export with vectors
    count: int           # lines in each export
    vectors: dict[int, np.ndarray]
    hard_deleted: int


@pytest.fixture(scope="module")
def demo_lines() -> list[str]:
    if not DEMO.exists():
        pytest.fail(f"the demo set {DEMO} is missing from the package",
                    pytrace=False)
    lines = [line for line in read_lines(DEMO) if line.strip()]
    assert len(lines) > 500, f"{DEMO} holds only {len(lines)} memories; is it complete?"
    return lines


@pytest.fixture(scope="module")
def demo_export(tmp_path_factory: pytest.TempPathFactory, embedder, demo_lines: list[str]) -> DemoExport:
    """Import the whole demo set into bank A (timed), give it a recall history, an archived and a
    hard-deleted memory, and export it with and without vectors."""
    folder = tmp_path_factory.mktemp("demo")
    path = folder / "a.duckdb"
    with MemoryBank.open(path, embedder=embedder) as bank:
        started = time.perf_counter()
        report = bank.import_jsonl(DEMO)
        seconds = time.perf_counter() - started
        print(f"\n[throughput] import of the demo set: {report.added} memories in {seconds:.2f} s = "
              f"{report.added / seconds:,.0f} memories/s (embedding included)")
        assert report.added == len(demo_lines) and not report.errors

        # Some recall history, so access counts and last-access times are not all zero.
        if DEMO_QUERIES.exists():
            queries = [json.loads(line) for line in read_lines(DEMO_QUERIES)[:25] if line.strip()]
        else:
            queries = [{"namespace": "alice", "query": "what does she like to cook?", "at": "2026-12-01"}]
        for q in queries:
            bank.recall(q["query"], namespace=q["namespace"], now=q["at"], params="weighted-recall")
        active = bank.memories(namespace="bob", limit=3)
        bank.forget(active[0].id)
        bank.forget(active[1].id, hard=True)
        bank.update(active[2].id, importance=0.33)

        plain, with_vectors = folder / "a.jsonl", folder / "a-vectors.jsonl"
        n = bank.export_jsonl(plain)
        assert bank.export_jsonl(with_vectors, include_embeddings=True) == n
        vectors = vectors_of(bank)
    return DemoExport(path, plain, with_vectors, n, vectors, active[1].id)


# -- the round trip --------------------------------------------------------------------------------


@pytest.mark.slow
def test_demo_set_round_trips_exactly(demo_export: DemoExport, demo_lines: list[str], tmp_path: Path,
                                      embedder) -> None:
    """A -> export -> B -> export: both exports are identical line for line, so ids, dates,
    statuses, importance and access counts all survived; and A kept the demo file's dates."""
    exported = read_lines(demo_export.plain)
    assert len(exported) == demo_export.count == len(demo_lines) - 1  # one was hard-deleted

    rows = [json.loads(line) for line in exported]
    assert demo_export.hard_deleted not in {r["id"] for r in rows}
    # The export carries real history, or the comparison below would prove little.
    assert sum(r["access_count"] > 0 for r in rows) >= 10
    assert sum(r["last_accessed_at"] is not None for r in rows) >= 10
    assert sum(r["status"] == "archived" for r in rows) == 1 + sum('"archived"' in line for line in demo_lines)
    assert 0.33 in {r["importance"] for r in rows}
    # The demo file's own dates are kept (no "now" sneaks in).
    source = {(d["namespace"], d["text"]): d for d in map(json.loads, demo_lines)}
    for r in rows:
        assert utc(r["created_at"]) == utc(source[(r["namespace"], r["text"])]["created_at"])

    with MemoryBank.open(tmp_path / "b.duckdb", embedder=embedder) as b:
        report = b.import_jsonl(demo_export.plain)
        assert (report.added, report.skipped_existing, report.errors) == (demo_export.count, 0, [])
        assert report.ids == [r["id"] for r in rows]
        b.export_jsonl(tmp_path / "b.jsonl")
    again = read_lines(tmp_path / "b.jsonl")
    assert len(again) == len(exported)
    for i, (x, y) in enumerate(zip(exported, again), start=1):
        assert x == y, f"line {i} differs after the round trip:\nA: {x}\nB: {y}"


def test_export_with_embeddings_reimports_the_vectors_as_given(demo_export: DemoExport, tmp_path: Path,
                                                               embedder) -> None:
    """Vectors in the file are stored as they are, not computed again from the text: two lines get
    each other's vectors, and B ends up with exactly those (a re-embedding would undo the swap)."""
    lines = read_lines(demo_export.with_vectors)
    rows = [json.loads(line) for line in lines]
    assert all(len(r["embedding"]) == embedder.dim for r in rows)
    a, z = rows[0], rows[-1]
    a["embedding"], z["embedding"] = z["embedding"], a["embedding"]
    lines[0], lines[-1] = json.dumps(a, ensure_ascii=False), json.dumps(z, ensure_ascii=False)
    swapped = write_lines(tmp_path / "swapped.jsonl", lines)

    with MemoryBank.open(tmp_path / "b.duckdb", embedder=embedder) as b:
        started = time.perf_counter()
        report = b.import_jsonl(swapped)
        seconds = time.perf_counter() - started
        print(f"\n[throughput] import with vectors: {report.added} memories in {seconds:.2f} s = "
              f"{report.added / seconds:,.0f} memories/s")
        assert report.added == demo_export.count and not report.errors
        got = vectors_of(b)
        b.export_jsonl(tmp_path / "b.jsonl")

        assert set(got) == set(demo_export.vectors)
        want = dict(demo_export.vectors)
        want[a["id"]], want[z["id"]] = demo_export.vectors[z["id"]], demo_export.vectors[a["id"]]
        diff = max(float(np.max(np.abs(got[mid] - want[mid]))) for mid in want)
        assert diff < 1e-6, f"vectors differ from the file's by up to {diff}"
        assert float(np.dot(got[a["id"]], demo_export.vectors[a["id"]])) < 0.99  # the swap really took

        # Recall in B scores the untouched memories exactly as A does.
        probe = next(r for r in rows[1:-1] if r["status"] == "active")
        with MemoryBank.open(demo_export.bank_path, embedder=embedder) as bank_a:
            hits_a = bank_a.recall(probe["text"], namespace=probe["namespace"], record=False, threshold=0.0, k=10)
        hits_b = b.recall(probe["text"], namespace=probe["namespace"], record=False, threshold=0.0, k=10)
        sims_a = {h.memory.id: h.components["similarity"] for h in hits_a if h.memory.id not in (a["id"], z["id"])}
        sims_b = {h.memory.id: h.components["similarity"] for h in hits_b if h.memory.id not in (a["id"], z["id"])}
        assert hits_a[0].memory.id == hits_b[0].memory.id == probe["id"]
        for mid in set(sims_a) & set(sims_b):
            assert sims_b[mid] == pytest.approx(sims_a[mid], abs=1e-5)
    # Apart from the vectors, the bank is the same as A.
    assert read_lines(tmp_path / "b.jsonl") == read_lines(demo_export.plain)


# -- malformed files -------------------------------------------------------------------------------


def _corrupt(lines: list[str]) -> tuple[list[str], list[int]]:
    """The export with a blank first line and five bad lines; returns the 1-based file line
    numbers of the bad ones (the blank line counts in the numbering but is no error)."""
    out = list(lines)
    def edit(i: int, **changes: Any) -> None:
        row = json.loads(out[i])
        row.update(changes)
        out[i] = json.dumps(row, ensure_ascii=False)
    out[4] = out[4][: len(out[4]) // 2]                       # truncated JSON
    edit(99, importance=2)                                     # importance out of range
    edit(399, text="   ")                                      # empty text
    edit(599, category="hobby")                                # unknown category
    edit(len(out) - 2, created_at="last tuesday")              # not a date
    bad = [5, 100, 400, 600, len(out) - 1]
    return [""] + out, [n + 1 for n in bad]


def test_malformed_lines_refuse_the_whole_import_and_write_nothing(demo_export: DemoExport, tmp_path: Path,
                                                                  embedder) -> None:
    lines, bad = _corrupt(read_lines(demo_export.plain))
    path = write_lines(tmp_path / "bad.jsonl", lines)
    with MemoryBank.open(tmp_path / "b.duckdb", embedder=embedder) as b:
        b.add_many([{"id": 10**6, "text": "Already in the bank before the import"}])  # no id clash
        before = (b.count(status=None), b.stats()["change_seq"], len(b.events(limit=1000)))
        with pytest.raises(ImportFormatError) as caught:
            b.import_jsonl(path)
        assert [n for n, _ in caught.value.problems] == bad
        messages = dict(caught.value.problems)
        assert "importance" in messages[bad[1]] and "empty" in messages[bad[2]]
        assert "category" in messages[bad[3]] and "created_at" in messages[bad[4]]
        assert f"line {bad[0]}:" in str(caught.value) and "nothing imported" in str(caught.value)
        assert (b.count(status=None), b.stats()["change_seq"], len(b.events(limit=1000))) == before


def test_on_error_skip_imports_the_good_lines_and_reports_the_bad(demo_export: DemoExport, tmp_path: Path,
                                                                 embedder) -> None:
    plain = read_lines(demo_export.plain)
    lines, bad = _corrupt(read_lines(demo_export.with_vectors))  # vectors: no time spent embedding
    bad_ids = {json.loads(plain[n - 2])["id"] for n in bad}  # line n of the file is plain[n - 2]
    with MemoryBank.open(tmp_path / "b.duckdb", embedder=embedder) as b:
        report = b.import_jsonl(write_lines(tmp_path / "bad.jsonl", lines), on_error="skip")
        assert [n for n, _ in report.errors] == bad
        assert report.added == demo_export.count - len(bad)
        assert b.count(status=None) == report.added
        exported = {json.loads(line)["id"] for line in plain}
        stored = {m.id for m in b.memories(status=None, limit=None)}
        assert stored == exported - bad_ids


def test_re_running_an_import_is_idempotent(demo_export: DemoExport, tmp_path: Path, embedder) -> None:
    """An import interrupted half-way can be run again: what is there is recognised by id and
    text, only the rest is added; a third run adds nothing."""
    lines = read_lines(demo_export.with_vectors)  # vectors: no time spent embedding
    half = write_lines(tmp_path / "half.jsonl", lines[: len(lines) // 2])
    with MemoryBank.open(tmp_path / "b.duckdb", embedder=embedder) as b:
        assert b.import_jsonl(half).added == len(lines) // 2
        second = b.import_jsonl(demo_export.with_vectors)
        assert (second.added, second.skipped_existing) == (len(lines) - len(lines) // 2, len(lines) // 2)
        adds = len(b.events(limit=10_000, action="add"))
        third = b.import_jsonl(demo_export.with_vectors)
        assert (third.added, third.skipped_existing, third.errors) == (0, demo_export.count, [])
        assert b.count(status=None) == demo_export.count
        assert len(b.events(limit=10_000, action="add")) == adds
        b.export_jsonl(tmp_path / "b.jsonl")
    assert read_lines(tmp_path / "b.jsonl") == read_lines(demo_export.plain)


def test_re_importing_an_export_into_its_own_bank_adds_nothing(demo_export: DemoExport, embedder) -> None:
    with MemoryBank.open(demo_export.bank_path, embedder=embedder) as a:
        total = a.count(status=None)
        report = a.import_jsonl(demo_export.with_vectors)
        assert (report.added, report.skipped_existing, report.errors) == (0, demo_export.count, [])
        assert a.count(status=None) == total


def test_an_id_that_exists_with_other_text_is_refused(demo_export: DemoExport, tmp_path: Path, embedder) -> None:
    row = json.loads(read_lines(demo_export.plain)[0])
    with MemoryBank.open(tmp_path / "b.duckdb", embedder=embedder) as b:
        b.import_jsonl(demo_export.with_vectors)
        clash = write_lines(tmp_path / "clash.jsonl", [json.dumps({**row, "text": "Something else entirely"})])
        with pytest.raises(ValidationError, match=f"id {row['id']} already exists"):
            b.import_jsonl(clash)
        assert b.get(row["id"]).text == row["text"]
        assert b.count(status=None) == demo_export.count


def test_an_id_clash_late_in_a_big_file_refuses_the_whole_import(tmp_path: Path, embedder) -> None:
    rng = np.random.default_rng(7)
    lines = []
    for i in range(2100):
        vec = rng.normal(size=embedder.dim)
        lines.append(json.dumps({"id": 100 + i, "text": f"Memory number {i} of a big import",
                                 "embedding": [round(float(x), 5) for x in vec / np.linalg.norm(vec)]}))
    lines[-1] = json.dumps({**json.loads(lines[-1]), "id": 1})  # memory 1 exists with another text
    path = write_lines(tmp_path / "big.jsonl", lines)
    with MemoryBank.open(tmp_path / "b.duckdb", embedder=embedder) as b:
        assert b.add("The memory that already has id 1") == 1
        with pytest.raises(ValidationError) as caught:
            b.import_jsonl(path)
        assert b.count(status=None) == 1, "a refused import must write nothing"
        assert isinstance(caught.value, ImportFormatError) and [n for n, _ in caught.value.problems] == [2100]


# -- vectors of the wrong shape --------------------------------------------------------------------


def test_an_embedding_of_the_wrong_dimension_is_reported_by_line(demo_export: DemoExport, tmp_path: Path,
                                                                embedder) -> None:
    good = json.loads(read_lines(demo_export.with_vectors)[0])
    lines = [
        json.dumps({"text": "Owns a sailing boat", "namespace": "erin"}),
        json.dumps({"text": "Collects vinyl records", "namespace": "erin", "embedding": [0.5, 0.5, 0.5]}),
        json.dumps({"text": "Likes hiking", "namespace": "erin", "embedding": good["embedding"],
                    "embedding_model": "some-other/model"}),
        json.dumps({"text": "Plays the cello", "namespace": "erin", "embedding": [0.0] * embedder.dim}),
    ]
    path = write_lines(tmp_path / "dims.jsonl", lines)
    with MemoryBank.open(tmp_path / "b.duckdb", embedder=embedder) as b:
        b.add("The bank already has vectors, so it knows their dimension")
        with pytest.raises(ImportFormatError) as caught:
            b.import_jsonl(path)
        problems = dict(caught.value.problems)
        assert sorted(problems) == [2, 3, 4]
        assert str(embedder.dim) in problems[2]
        assert "some-other/model" in problems[3]
        assert b.count(status=None) == 1
        report = b.import_jsonl(path, on_error="skip")
        assert report.added == 1 and [n for n, _ in report.errors] == [2, 3, 4]


def test_an_embedding_of_the_wrong_dimension_is_reported_by_line_in_a_new_bank(tmp_path: Path, embedder) -> None:
    lines = [
        json.dumps({"text": "Owns a sailing boat"}),
        json.dumps({"text": "Collects vinyl records", "embedding": [0.5, 0.5, 0.5]}),
    ]
    path = write_lines(tmp_path / "dims.jsonl", lines)
    with MemoryBank.open(tmp_path / "b.duckdb", embedder=embedder) as b:
        with pytest.raises(ImportFormatError) as caught:
            b.import_jsonl(path)
        assert [n for n, _ in caught.value.problems] == [2]
        report = b.import_jsonl(path, on_error="skip")
        assert report.added == 1 and [n for n, _ in report.errors] == [2]


# -- dates and namespaces --------------------------------------------------------------------------


def test_dates_far_in_the_past_are_kept_exactly(tmp_path: Path, embedder) -> None:
    rows = [
        {"text": "Grandfather was born in Porto", "created_at": "1900-01-01T00:00:00Z"},
        {"text": "The family moved to Lisbon", "created_at": "1903-12-17T10:35:00.123456+00:00",
         "last_accessed_at": "1950-06-30T23:59:59.999999Z", "access_count": 3},
        {"text": "Watched the moon landing on TV", "created_at": "1969-07-20T20:17:40-05:00",
         "updated_at": "1970-01-01T00:00:00Z"},
    ]
    path = write_lines(tmp_path / "old.jsonl", [json.dumps(r) for r in rows])
    with MemoryBank.open(tmp_path / "b.duckdb", embedder=embedder) as b:
        ids = b.import_jsonl(path).ids
        got = [b.get(i) for i in ids]
        assert got[0].created_at == datetime(1900, 1, 1, tzinfo=timezone.utc)
        assert got[1].created_at == datetime(1903, 12, 17, 10, 35, 0, 123456, tzinfo=timezone.utc)
        assert got[1].last_accessed_at == datetime(1950, 6, 30, 23, 59, 59, 999999, tzinfo=timezone.utc)
        assert got[1].access_count == 3
        assert got[2].created_at == datetime(1969, 7, 21, 1, 17, 40, tzinfo=timezone.utc)
        assert got[2].updated_at == datetime(1970, 1, 1, tzinfo=timezone.utc)
        # An "as of" recall in 1905 sees exactly the two memories that existed then.
        seen = b.recall("family history", now="1905-01-01", threshold=0.0, record=False)
        assert {h.memory.id for h in seen} == set(ids[:2])
        b.export_jsonl(tmp_path / "b.jsonl")
    exported = [json.loads(line) for line in read_lines(tmp_path / "b.jsonl")]
    assert [r["created_at"] for r in exported] == [
        "1900-01-01T00:00:00+00:00", "1903-12-17T10:35:00.123456+00:00", "1969-07-21T01:17:40+00:00"]
    with MemoryBank.open(tmp_path / "c.duckdb", embedder=embedder) as c:
        c.import_jsonl(tmp_path / "b.jsonl")
        c.export_jsonl(tmp_path / "c.jsonl")
    assert read_lines(tmp_path / "c.jsonl") == read_lines(tmp_path / "b.jsonl")


def test_namespace_override_puts_every_memory_in_one_namespace(demo_export: DemoExport, tmp_path: Path,
                                                              embedder) -> None:
    rows = [json.loads(line) for line in read_lines(demo_export.with_vectors)]
    assert len({r["namespace"] for r in rows}) > 1
    with MemoryBank.open(tmp_path / "b.duckdb", embedder=embedder) as b:
        report = b.import_jsonl(demo_export.with_vectors, namespace="tenant-x")
        assert report.added == demo_export.count
        active = sum(r["status"] == "active" for r in rows)
        assert b.namespaces() == [("tenant-x", active)]
        probe = next(r for r in rows if r["status"] == "active")
        hits = b.recall(probe["text"], namespace="tenant-x", record=False)
        assert hits and hits[0].memory.id == probe["id"] and hits[0].memory.namespace == "tenant-x"
        assert b.recall(probe["text"], namespace=probe["namespace"], record=False) == []


# -- a long import shares the file ---------------------------------------------------------------

IMPORTER = """
import sys
from pathlib import Path
import numpy as np
from memory_core import MemoryBank

path, n, marker = sys.argv[1], int(sys.argv[2]), Path(sys.argv[3])
rng = np.random.default_rng(0)
vectors = rng.standard_normal((n, 384)).astype(np.float32)
rows = [{"text": f"imported memory number {i}", "namespace": "bulk", "embedding": vectors[i]} for i in range(n)]
with MemoryBank.open(path) as bank:
    marker.touch()
    bank.add_many(rows)
"""


@pytest.mark.slow
def test_a_long_import_of_vectors_lets_another_process_in(tmp_path: Path, embedder) -> None:
    """Rows that carry vectors are written on one connection held a bounded time, never for the
    whole import: another process opening the bank meanwhile gets in, sees whole batches only,
    and the import still writes every row."""
    import subprocess
    import sys

    n = 120_000
    path = tmp_path / "bank.duckdb"
    MemoryBank.open(path, embedder=embedder).close()
    marker = tmp_path / "started"
    script = tmp_path / "importer.py"
    script.write_text(IMPORTER)
    root = Path(__file__).resolve().parent.parent
    proc = subprocess.Popen([sys.executable, str(script), str(path), str(n), str(marker)], cwd=root,
                            env={**__import__("os").environ, "PYTHONPATH": str(root), "HF_HUB_OFFLINE": "1"})
    counts = []
    try:
        deadline = time.monotonic() + 300
        while not marker.exists() and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        while proc.poll() is None and time.monotonic() < deadline:
            # a generous wait: on a loaded machine one 8k-row transaction can take seconds
            with MemoryBank.open(path, embedder=embedder, lock_timeout=30) as reader:
                counts.append(reader.count(namespace="bulk"))
            time.sleep(0.05)
        assert proc.wait(timeout=60) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
    assert any(0 < c < n for c in counts), f"the reader never got in during the import: {counts}"
    assert counts == sorted(counts)
    from memory_core.services.writer import BATCH_VECTORS

    assert all(c % BATCH_VECTORS == 0 or c == n for c in counts), counts  # each batch one transaction
    with MemoryBank.open(path, embedder=embedder) as bank:
        assert bank.count(namespace="bulk") == n
