"""Labeled query sets: marking results, listing, JSONL import/export with validation, the schema upgrade,
`memctl labels` and the demo's labels from the answer key."""

from __future__ import annotations

import io
import json
from datetime import datetime, timezone

import duckdb
import pytest
from click.testing import CliRunner

from conftest import downgrade
from memory_core import ImportFormatError, MemoryBank, NotFoundError, ValidationError, demo
from memory_core.cli import cli
from memory_core.models import LabeledQuery
from memory_core.storage.schema import SCHEMA_VERSION


@pytest.fixture
def two_ns(bank):
    ids = {
        "veg": bank.add("Prefers vegetarian food", namespace="alice"),
        "mia": bank.add("Her daughter is called Mia", namespace="alice"),
        "night": bank.add("Works night shifts", namespace="bob"),
    }
    return bank, ids


def lines(*rows: dict) -> io.StringIO:
    return io.StringIO("".join(json.dumps(r) + "\n" for r in rows))


def test_label_relabel_and_unlabel(two_ns):
    bank, ids = two_ns
    bank.label("alice", "what do I eat?", ids["veg"], relevant=True)
    bank.label("alice", "what do I eat?", ids["mia"], relevant=False)
    [q] = bank.labels()
    assert (q.namespace, q.query, q.relevant, q.irrelevant, q.set_name) == (
        "alice", "what do I eat?", (ids["veg"],), (ids["mia"],), "default")
    bank.label("alice", "what do I eat?", ids["mia"], relevant=True)  # a second mark replaces the first
    [q] = bank.labels()
    assert q.relevant == tuple(sorted((ids["veg"], ids["mia"]))) and q.irrelevant == ()
    assert bank.unlabel("alice", "what do I eat?", ids["veg"]) is True
    assert bank.unlabel("alice", "what do I eat?", ids["veg"]) is False
    assert bank.labels()[0].relevant == (ids["mia"],)
    assert bank.label_sets() == {"default": 1}
    assert [e.action for e in bank.events(limit=10)][:2] == ["unlabel", "label"]


def test_labels_are_kept_apart_by_set_and_moment(two_ns):
    bank, ids = two_ns
    then = datetime(2026, 3, 1, tzinfo=timezone.utc)
    bank.label("alice", "what do I eat?", ids["veg"], as_of=then)
    bank.label("alice", "what do I eat?", ids["mia"], set_name="strict")
    by_set = {q.set_name: q for q in bank.labels()}
    assert by_set["default"].as_of == then and by_set["default"].relevant == (ids["veg"],)
    assert by_set["strict"].as_of is None and by_set["strict"].relevant == (ids["mia"],)
    assert [q.set_name for q in bank.labels(set_name="strict")] == ["strict"]
    assert bank.labels(namespace="bob") == []


@pytest.mark.parametrize("call, error", [
    (lambda b, ids: b.label("alice", "q", 999), NotFoundError),
    (lambda b, ids: b.label("alice", "q", ids["night"]), ValidationError),  # bob's memory
    (lambda b, ids: b.label("alice", "", ids["veg"]), ValidationError),
    (lambda b, ids: b.label("alice", "q", ids["veg"], relevant="yes"), ValidationError),
    (lambda b, ids: b.label("alice", "q", ids["veg"], set_name=""), ValidationError),
    (lambda b, ids: b.label("alice", "q", ids["veg"], as_of="last tuesday"), ValidationError),
])
def test_bad_labels_are_refused_and_change_nothing(two_ns, call, error):
    bank, ids = two_ns
    events = len(bank.events(limit=1000))
    with pytest.raises(error):
        call(bank, ids)
    assert bank.labels() == [] and len(bank.events(limit=1000)) == events


def test_import_export_round_trip(two_ns, tmp_path):
    bank, ids = two_ns
    n = bank.import_labels(lines(
        {"namespace": "alice", "query": "what do I eat?", "relevant": [ids["veg"]], "irrelevant": [ids["mia"]]},
        {"namespace": "alice", "query": "capital of Australia?", "relevant": [], "irrelevant": []},
        {"namespace": "bob", "query": "when do I work?", "relevant": [ids["night"]],
         "as_of": "2026-05-01T10:00:00Z", "set": "shifts"},
    ))
    assert n == 3
    got = {q.query: q for q in bank.labels()}
    # a query with nothing relevant is kept: recall should come back empty for it
    assert got["capital of Australia?"] == LabeledQuery("alice", "capital of Australia?")
    assert got["when do I work?"].set_name == "shifts"
    assert got["when do I work?"].as_of == datetime(2026, 5, 1, 10, tzinfo=timezone.utc)
    out = tmp_path / "labels.jsonl"
    assert bank.export_labels(out) == 3
    exported = [json.loads(line) for line in out.read_text().splitlines()]
    assert exported[0] == {"namespace": "alice", "query": "what do I eat?", "relevant": [ids["veg"]],
                           "irrelevant": [ids["mia"]], "set": "default"}
    # importing the export again replaces each query's labels: the same set, not twice as many rows
    before = bank.labels()
    assert bank.import_labels(out) == 3
    assert bank.labels() == before
    # a new import of one query replaces that query's old labels
    bank.import_labels(lines({"namespace": "alice", "query": "what do I eat?", "relevant": [ids["mia"]]}))
    assert {q.query: q for q in bank.labels()}["what do I eat?"].relevant == (ids["mia"],)


def test_import_refuses_unknown_ids_wrong_namespace_and_bad_lines(two_ns, tmp_path):
    bank, ids = two_ns
    path = tmp_path / "bad.jsonl"
    path.write_text("\n".join([
        json.dumps({"namespace": "alice", "query": "fine", "relevant": [ids["veg"]]}),
        json.dumps({"namespace": "alice", "query": "ghost", "relevant": [4242]}),
        json.dumps({"namespace": "alice", "query": "other ns", "relevant": [ids["night"]]}),
        "{not json",
        json.dumps({"namespace": "alice", "query": "both", "relevant": [ids["veg"]], "irrelevant": [ids["veg"]]}),
        json.dumps({"namespace": "alice", "query": "ids", "relevant": ["1"]}),
        json.dumps({"namespace": "alice", "query": "fine", "relevant": []}),
    ]) + "\n")
    with pytest.raises(ImportFormatError) as exc:
        bank.import_labels(path)
    assert [n for n, _ in exc.value.problems] == [2, 3, 4, 5, 6, 7]
    messages = dict(exc.value.problems)
    assert "no memory with id 4242" in messages[2]
    assert "belongs to namespace 'bob'" in messages[3]
    assert "appears again (first on line 1)" in messages[7]
    assert bank.labels() == []  # nothing imported, not even the good line


def test_a_version_2_bank_is_upgraded_and_takes_labels(tmp_path, embedder):
    path = tmp_path / "v2.duckdb"
    MemoryBank.open(path, embedder=embedder).close()
    downgrade(path, 2)  # what a bank written before labels existed looks like
    with MemoryBank.open(path, embedder=embedder) as bank:
        mid = bank.add("Prefers tea", namespace="n", detect_conflicts=False)
        bank.label("n", "what do I drink?", mid)
        assert bank.labels()[0].relevant == (mid,)
    con = duckdb.connect(str(path))
    assert [v for (v,) in con.execute("SELECT version FROM schema_migrations ORDER BY version").fetchall()] == \
        list(range(1, SCHEMA_VERSION + 1))
    con.close()


def test_cli_labels_import_export_list(two_ns, tmp_path):
    bank, ids = two_ns
    path = bank.path
    bank.close()
    src = tmp_path / "in.jsonl"
    src.write_text(json.dumps({"namespace": "alice", "query": "food?", "relevant": [ids["veg"]]}) + "\n")
    runner = CliRunner()
    result = runner.invoke(cli, ["--bank", str(path), "labels", "import", str(src), "--set", "mine"])
    assert result.exit_code == 0, result.output
    assert "imported 1 labeled queries" in result.output
    result = runner.invoke(cli, ["--bank", str(path), "labels", "list"])
    assert "mine" in result.output and "1 queries" in result.output
    result = runner.invoke(cli, ["--bank", str(path), "labels", "export", "--set", "mine"])
    assert json.loads(result.stdout.splitlines()[0])["relevant"] == [ids["veg"]]
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps({"namespace": "alice", "query": "food?", "relevant": [999]}) + "\n")
    result = runner.invoke(cli, ["--bank", str(path), "labels", "import", str(bad)])
    assert result.exit_code == 1 and "line 1: no memory with id 999" in result.output


@pytest.mark.slow
def test_demo_imports_labels_from_the_answer_key(tmp_path):
    """`memctl demo` on a slice of the demo files, with a matching slice of the answer key."""
    memories = demo.MEMORIES.read_text(encoding="utf-8").splitlines()[:120]
    queries = demo.QUERIES.read_text(encoding="utf-8").splitlines()
    truth = demo.truth()
    keep = [e for e in truth["queries"] if all(line <= 120 for line in e["relevant_lines"])][:15]
    mem_file, q_file, t_file = tmp_path / "m.jsonl", tmp_path / "q.jsonl", tmp_path / "t.json"
    mem_file.write_text("\n".join(memories) + "\n", encoding="utf-8")
    q_file.write_text("\n".join(queries[e["line"] - 1] for e in keep) + "\n", encoding="utf-8")
    t_file.write_text(json.dumps({"queries": [{**e, "line": i} for i, e in enumerate(keep, start=1)]}),
                      encoding="utf-8")
    bank_file = tmp_path / "demo.duckdb"
    result = CliRunner().invoke(cli, ["--bank", str(bank_file), "demo", "--memories", str(mem_file),
                                      "--queries", str(q_file), "--truth", str(t_file)])
    assert result.exit_code == 0, result.output
    assert "15 labeled queries (set 'demo')" in result.output
    with MemoryBank.open(bank_file) as bank:
        labeled = bank.labels(set_name="demo")
        archived = {m.id for m in bank.memories(namespace=None, status="archived", limit=None)}
        assert len(labeled) == 15
        for q, e in zip(labeled, keep):
            # ids are line numbers on a fresh import; archived memories are left out (never recalled)
            assert q.relevant == tuple(sorted(set(e["relevant_lines"]) - archived))
            assert q.namespace == e["namespace"] and q.query == e["query"]
            assert q.as_of == datetime.fromisoformat(json.loads(queries[e["line"] - 1])["at"].replace("Z", "+00:00"))
            for mid in q.relevant:
                assert bank.get(mid).text == json.loads(memories[mid - 1])["text"]


def test_an_ablation_run_keeps_its_cases_as_given(bank):
    """Cases are written as one statement on both stores: every field comes back in order, an
    empty list of memory ids included."""
    mid = bank.add("Alice drinks green tea", namespace="alice", detect_conflicts=False)
    cases = [{"namespace": "alice", "question": f"what does Alice drink? ({i})", "expected": "tea",
              "memory_ids": [mid] if i % 2 else [], "answer_with": "green tea", "answer_without": "unknown",
              "first_shown": "with", "judge_choice": "A", "verdict": ["with", "tie", "without"][i % 3],
              "reason": "named the tea", "error": None} for i in range(5)]
    run_id = bank.record_ablation({"namespace": "alice", "answer_model": "m", "judge_model": "j", "seed": 7,
                                   "source": "test", "settings": {"k": 5}}, cases)
    got = bank.ablation_cases(run_id)
    assert [c["case_no"] for c in got] == [1, 2, 3, 4, 5]
    assert [{k: c[k] for k in cases[0]} for c in got] == cases
    (run,) = [r for r in bank.ablation_runs() if r["id"] == run_id]
    assert (run["n_cases"], run["better"], run["worse"], run["ties"]) == (5, 2, 1, 2)
