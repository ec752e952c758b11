"""memory_core.demo: the demo set is consistent data shipped in the package, and build() makes the
demo bank from it.

The JSONL/JSON files in memory_core/demo/data/ are the demo's source: the checks below are what
keeps them consistent when someone edits them (the answer key names memories and turns by line).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tomllib
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from fnmatch import fnmatch
from itertools import pairwise
from pathlib import Path

import pytest

import memory_core
from memory_core import CATEGORIES, KINDS, MemoryBank, ValidationError, demo

ROOT = Path(__file__).resolve().parent.parent
FIRST_DAY, LAST_DAY = "2025-09-01", "2026-11-25"  # the months the demo covers
FIELDS = {"text", "namespace", "kind", "category", "importance", "created_at", "source", "status"}
IDENTIFIERS = [re.compile(p) for p in (r"[\w.+-]+@[\w-]+\.\w", r"\+?\d[\d ()-]{7,}\d", r"https?://", r"www\.")]


def utc(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


# -- where the data lives ----------------------------------------------------------------------------


def test_the_demo_data_lives_in_the_package_and_the_wheel_ships_it() -> None:
    package = Path(memory_core.__file__).resolve().parent
    assert demo.DATA.parent == package / "demo"
    assert all(p.is_file() for p in (demo.MEMORIES, demo.QUERIES, demo.TRUTH))
    setuptools = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    assert "memory_core.demo.data" in setuptools["packages"]
    for path in (demo.MEMORIES, demo.QUERIES, demo.TRUTH):
        assert any(fnmatch(path.name, pattern) for pattern in setuptools["package-data"]["memory_core.demo.data"])


def test_a_copy_of_the_package_alone_finds_its_demo_data(tmp_path: Path) -> None:
    """No path outside the package (no ../data): a copy of memory_core elsewhere reads the demo."""
    site = tmp_path / "site"
    shutil.copytree(Path(memory_core.__file__).parent, site / "memory_core",
                    ignore=shutil.ignore_patterns("__pycache__"))
    code = ("from memory_core import demo; "
            "print(demo.DATA, len(demo.memories()), len(demo.queries()), len(demo.truth()['queries']))")
    out = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=300,
                         env=dict(os.environ, PYTHONPATH=str(site), HF_HUB_OFFLINE="1"), check=True).stdout
    data, n_memories, n_queries, n_described = out.split()
    assert Path(data) == site / "memory_core" / "demo" / "data"
    assert (int(n_memories), int(n_queries), int(n_described)) == (753, 440, 440)


# -- the data files are consistent ----------------------------------------------------------------


def test_every_memory_is_a_well_formed_distilled_statement() -> None:
    rows = demo.memories()
    assert len({(r["namespace"], r["text"]) for r in rows}) == len(rows), "a text appears twice in a namespace"
    for line, r in enumerate(rows, start=1):
        assert set(r) <= FIELDS, f"line {line}: unexpected fields {set(r) - FIELDS}"
        assert r["kind"] in KINDS and r["category"] in CATEGORIES, f"line {line}"
        assert 0 <= r["importance"] <= 1 and round(r["importance"], 2) == r["importance"], f"line {line}"
        assert FIRST_DAY <= r["created_at"][:10] <= LAST_DAY, f"line {line}: {r['created_at']}"
        assert r.get("status", "archived") == "archived", f"line {line}: only soft deletes are marked"
        assert not any(p.search(r["text"]) for p in IDENTIFIERS), f"line {line} looks like a personal identifier"


def test_the_turns_are_in_the_order_they_were_asked() -> None:
    turns = demo.queries()
    assert all(set(q) == {"namespace", "query", "at"} for q in turns)
    assert all(a["at"] <= b["at"] for a, b in pairwise(turns))
    assert FIRST_DAY <= turns[0]["at"][:10] and turns[-1]["at"][:10] <= LAST_DAY


def test_the_answer_key_points_at_the_lines_it_names() -> None:
    """Texts and namespaces match, old before new, every turn asked after a memory it is about."""
    rows, turns, key = demo.memories(), demo.queries(), demo.truth()

    def memory(line: int, namespace: str, text: str | None = None) -> dict:
        assert 1 <= line <= len(rows), f"memory line {line} out of range"
        row = rows[line - 1]
        assert row["namespace"] == namespace and text in (None, row["text"]), f"memory line {line}"
        return row

    clustered: set[int] = set()
    for c in key["duplicate_clusters"]:
        assert 2 <= len(c["lines"]) <= 4 and c["lines"] == sorted(c["lines"]) and not clustered & set(c["lines"])
        clustered |= set(c["lines"])
        for line, text in zip(c["lines"], c["texts"], strict=True):
            memory(line, c["namespace"], text)
    for c in key["contradictions"]:
        old, new = memory(c["old_line"], c["namespace"], c["old"]), memory(c["new_line"], c["namespace"], c["new"])
        assert old["created_at"] < new["created_at"] and old["category"] == new["category"] == c["category"]
    for section in ("stale", "trivia", "logs"):
        for r in key[section]:
            memory(r["line"], r["namespace"], r["text"])
    assert [e["line"] for e in key["queries"]] == list(range(1, len(turns) + 1))
    for e, q in zip(key["queries"], turns):
        assert (e["namespace"], e["query"]) == (q["namespace"], q["query"]), f"turn {e['line']}"
        assert e["off_topic"] == (not e["relevant_lines"]), f"turn {e['line']}"
        about = [memory(line, q["namespace"]) for line in e["relevant_lines"]]
        assert not about or any(m["created_at"] < q["at"] for m in about), f"turn {e['line']} asked too early"


def test_the_answer_keys_counts_are_its_sections_sizes() -> None:
    key = demo.truth()
    assert key["counts"] == {
        "duplicate_clusters": len(key["duplicate_clusters"]),
        "duplicate_cluster_memories": sum(len(c["lines"]) for c in key["duplicate_clusters"]),
        "contradictions": len(key["contradictions"]),
        "stale": len(key["stale"]), "trivia": len(key["trivia"]), "logs": len(key["logs"]),
        "queries": len(key["queries"]), "off_topic_queries": sum(e["off_topic"] for e in key["queries"]),
    }


# -- build() on the whole demo set ---------------------------------------------------------------


@dataclass
class Built:
    bank: MemoryBank
    report: demo.DemoReport
    progress: list[tuple[str, int, int]]


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory, embedder) -> Iterator[Built]:
    calls: list[tuple[str, int, int]] = []
    bank = MemoryBank.open(tmp_path_factory.mktemp("demo") / "demo.duckdb", embedder=embedder)
    report = demo.build(bank, progress=lambda *call: calls.append(call))
    yield Built(bank, report, calls)
    bank.close()


@pytest.mark.slow  # the whole demo build: every turn replayed
def test_build_imports_every_memory_of_the_file_line_by_line(built: Built) -> None:
    rows = demo.memories()
    r = built.report
    assert r.memories == len(rows) == built.bank.count(status=None)
    assert r.namespaces == len({row["namespace"] for row in rows}) == len(built.bank.namespaces())
    assert sorted(r.line_to_id) == list(range(1, len(rows) + 1))
    stored = built.bank.get_many(list(r.line_to_id.values()))
    for line, row in enumerate(rows, start=1):
        m = stored[r.line_to_id[line]]
        assert (m.namespace, m.text, m.created_at) == (row["namespace"], row["text"], utc(row["created_at"]))
        assert m.status == row.get("status", "active")


@pytest.mark.slow  # the whole demo build: every turn replayed
def test_build_replays_the_recall_history_with_the_agents_feedback(built: Built) -> None:
    turns, key = demo.queries(), demo.truth()
    assert built.report.recalls == len(turns)
    logged = sorted(built.bank.retrievals(limit=None), key=lambda r: r["id"])  # in the order replayed
    assert len(logged) == len(turns)
    for r, q in zip(logged, turns):
        assert (r["namespace"], r["query"], r["recalled_at"]) == (q["namespace"], q["query"], utc(q["at"]))
    # The simulated agent used exactly the returned memories the answer key marks relevant.
    line_of = {r["id"]: n for n, r in enumerate(logged, start=1)}
    ids = built.report.line_to_id
    feedback = built.bank.feedback_log()
    assert feedback and len(feedback) == sum(bool(r["hits"]) for r in logged)
    assert any(f.used_ids for f in feedback)
    for f in feedback:
        line = line_of[f.retrieval_id]
        relevant = {ids[n] for n in key["queries"][line - 1]["relevant_lines"]}
        returned = {h["memory_id"] for h in logged[line - 1]["hits"]}
        assert sorted(f.used_ids) == sorted(returned & relevant)


@pytest.mark.slow  # the whole demo build: every turn replayed
def test_build_labels_every_turn_from_the_answer_key(built: Built) -> None:
    turns, key = demo.queries(), demo.truth()
    labeled = built.bank.labels(set_name=demo.LABEL_SET)
    assert built.report.labeled == len(labeled) == len(key["queries"]) == len(turns)
    ids = built.report.line_to_id
    archived = {m.id for m in built.bank.memories(namespace=None, status="archived", limit=None)}
    assert archived  # the demo has soft-deleted memories, which no label may expect
    for q, entry in zip(labeled, key["queries"]):
        assert (q.namespace, q.query) == (entry["namespace"], entry["query"])
        assert q.as_of == utc(turns[entry["line"] - 1]["at"])
        assert q.relevant == tuple(sorted({ids[n] for n in entry["relevant_lines"]} - archived))


@pytest.mark.slow  # the whole demo build: every turn replayed
def test_build_records_the_contradictions_it_finds_and_reports_each_stage(built: Built) -> None:
    assert built.report.conflicts > 0
    assert built.report.conflicts == len(built.bank.conflicts())
    stages = [stage for stage, _, _ in built.progress]
    assert list(dict.fromkeys(stages)) == ["import", "replay", "conflicts"]
    for stage in ("import", "replay", "conflicts"):
        done, total = [(d, t) for s, d, t in built.progress if s == stage][-1]
        assert done == total > 0


# -- build() on other files ------------------------------------------------------------------------


def _slice(tmp_path: Path, n_memories: int, n_queries: int) -> tuple[Path, Path]:
    memories = demo.MEMORIES.read_text(encoding="utf-8").splitlines()[:n_memories]
    turns = demo.QUERIES.read_text(encoding="utf-8").splitlines()
    names = {json.loads(line)["namespace"] for line in memories}
    turns = [t for t in turns if json.loads(t)["namespace"] in names][:n_queries]
    (tmp_path / "m.jsonl").write_text("\n".join(memories) + "\n", encoding="utf-8")
    (tmp_path / "q.jsonl").write_text("\n".join(turns) + "\n", encoding="utf-8")
    return tmp_path / "m.jsonl", tmp_path / "q.jsonl"


def test_other_files_get_no_labels_unless_given_their_answer_key(tmp_path: Path, embedder) -> None:
    memories, queries = _slice(tmp_path, 20, 3)
    with MemoryBank.open(tmp_path / "b.duckdb", embedder=embedder) as bank:
        r = demo.build(bank, memories=memories, queries=queries, detect_conflicts=False)
        assert (r.memories, r.recalls, r.labeled) == (20, 3, 0)
        assert bank.labels() == [] and len(bank.retrievals(limit=None)) == 3


def test_an_answer_key_for_other_queries_is_refused_before_anything_is_written(tmp_path: Path,
                                                                               embedder) -> None:
    memories, queries = _slice(tmp_path, 20, 3)
    with MemoryBank.open(tmp_path / "b.duckdb", embedder=embedder) as bank:
        with pytest.raises(ValidationError, match="describes 440 queries, the queries file has 3"):
            demo.build(bank, memories=memories, queries=queries, truth=demo.TRUTH)
        with pytest.raises(ValidationError, match="missing"):
            demo.build(bank, memories=tmp_path / "nowhere.jsonl", queries=queries)
        assert bank.count(status=None) == 0 and bank.retrievals(limit=None) == []
