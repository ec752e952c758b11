"""memctl, driven through click's CliRunner against real bank files in tmp_path.

The CLI opens banks with ``MemoryBank.open(path, actor="cli")``, which uses the process-wide
cached embedder; every fixture here requests the session ``embedder`` first so the model is
loaded once for the whole run.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from memory_core import MemoryBank
from memory_core.cli import cli


# -- helpers ---------------------------------------------------------------------------------------


def memctl(bank_file: Path, *args: str, input: str | None = None, ok: bool = True) -> Result:
    """Run ``memctl --bank BANK ARGS...`` in-process.

    Every run must end either cleanly or through click's own exit (a ClickException or an abort):
    an uncaught Python exception is a bug even when the exit code looks right, because the real
    ``memctl`` would print a traceback.
    """
    result = CliRunner().invoke(cli, ["--bank", str(bank_file), *args], input=input)
    assert "Traceback" not in result.output, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit), (
        f"memctl {' '.join(args)} raised {result.exception!r}:\n{result.output}"
    )
    if ok:
        assert result.exit_code == 0, f"memctl {' '.join(args)} failed:\n{result.output}"
    return result


def add(bank_file: Path, text: str, *options: str) -> int:
    """``memctl add`` and the id it prints (the only thing on stdout)."""
    out = memctl(bank_file, "add", text, *options).stdout.strip()
    assert out.isdigit(), f"add should print just the new id, printed {out!r}"
    return int(out)


def recall_json(bank_file: Path, query: str, *options: str) -> list[dict[str, Any]]:
    return json.loads(memctl(bank_file, "recall", query, "--json", *options).stdout)


def show_json(bank_file: Path, memory_id: int) -> dict[str, Any]:
    return json.loads(memctl(bank_file, "show", str(memory_id), "--json").stdout)


def stats_json(bank_file: Path) -> dict[str, Any]:
    return json.loads(memctl(bank_file, "stats", "--json").stdout)


def write_jsonl(path: Path, lines: list[str | dict[str, Any]]) -> Path:
    path.write_text("".join((line if isinstance(line, str) else json.dumps(line)) + "\n" for line in lines),
                    encoding="utf-8")
    return path


@pytest.fixture
def bank_file(tmp_path: Path, embedder) -> Path:
    """The path of a (not yet created) bank file; the model is already loaded."""
    folder = tmp_path / "banks"
    return folder / "bank.duckdb"


@pytest.fixture
def food_bank(bank_file: Path) -> dict[str, int]:
    """A bank with a few memories of namespace ``default``; returns their ids by short name."""
    return {
        "veg": add(bank_file, "Prefers vegetarian food", "-i", "0.8", "-c", "preference"),
        "pasta": add(bank_file, "Loves cooking pasta with vegetables on weekends", "-c", "preference"),
        "nuts": add(bank_file, "Is allergic to peanuts", "-i", "0.9", "-c", "profile"),
        "nurse": add(bank_file, "Works night shifts as a nurse", "-c", "profile"),
    }


# -- init, add, recall -----------------------------------------------------------------------------


def test_init_creates_a_bank_and_reopening_reports_its_contents(bank_file: Path) -> None:
    result = memctl(bank_file, "init")
    assert bank_file.exists()
    assert "multilingual-e5-small" in result.output and "0 memories" in result.output
    add(bank_file, "Prefers window seats on flights")
    assert "1 memories" in memctl(bank_file, "init").output


def test_add_prints_increasing_ids_and_stores_the_options(bank_file: Path) -> None:
    first = add(bank_file, "Prefers vegetarian food", "-n", "alice", "-i", "0.8", "--kind", "inferred",
                "-c", "preference", "--created-at", "2025-03-12T08:30:00Z", "--source", "chat 12")
    second = add(bank_file, "Runs a marathon in May", "-n", "alice")
    assert second > first
    m = show_json(bank_file, first)["memory"]
    assert m["text"] == "Prefers vegetarian food"
    assert (m["namespace"], m["importance"], m["kind"], m["category"], m["source"]) == (
        "alice", 0.8, "inferred", "preference", "chat 12")
    assert m["created_at"] == "2025-03-12T08:30:00+00:00"


def test_recall_prints_a_table_and_json_with_score_components(bank_file: Path, food_bank: dict[str, int]) -> None:
    table = memctl(bank_file, "recall", "is she vegetarian?").stdout
    lines = table.splitlines()
    assert lines[0].split()[:3] == ["#", "score", "rel"]
    assert " 1 " in lines[1] and "Prefers vegetarian food" in lines[1]
    assert "Works night shifts" not in table  # irrelevant memories stay out

    hits = recall_json(bank_file, "is she vegetarian?")
    assert hits[0]["memory"]["id"] == food_bank["veg"]
    assert [h["rank"] for h in hits] == list(range(1, len(hits) + 1))
    assert all(hits[i]["score"] >= hits[i + 1]["score"] for i in range(len(hits) - 1))
    assert {"similarity", "lexical", "recency", "importance", "frequency"} <= set(hits[0]["components"])
    assert hits[0]["components"]["importance"] == pytest.approx(0.8)


def test_recall_with_the_generative_agents_preset_uses_its_weights_k_and_threshold(
        bank_file: Path, food_bank: dict[str, int]) -> None:
    """The preset's k=3 and threshold (0.45 on MiniLM's scale, the model's own in the bank) bound the result, its score is 0.6·rel + 0.2·rec +
    0.2·imp on raw cosine (no lexical part), and the log records the preset's name."""
    wide = recall_json(bank_file, "what food does she like to cook?", "--preset", "weighted-recall")
    assert len(wide) == 4  # weighted-recall: threshold 0, k 5 -> every memory

    hits = recall_json(bank_file, "what food does she like to cook?", "--preset", "generative-agents")
    assert 1 <= len(hits) <= 3
    with MemoryBank.open(bank_file) as b:
        threshold = b.presets()["generative-agents"].threshold  # on the bank's model's scale
    for h in hits:
        c = h["components"]
        assert h["score"] >= threshold
        assert c["relevance"] == pytest.approx(max(0.0, c["similarity"]), abs=1e-6)
        assert h["score"] == pytest.approx(0.6 * c["relevance"] + 0.2 * c["recency"] + 0.2 * c["importance"],
                                           abs=1e-6)
    with MemoryBank.open(bank_file) as b:
        last = b.retrievals(limit=1)[0]
    assert last["preset"] == "generative-agents" and last["params"]["k"] == 3
    assert last["n_results"] == len(hits)


def test_recall_now_is_an_as_of_view(bank_file: Path) -> None:
    """``--now`` sets the clock: memories written later are invisible and age is measured from it."""
    spanish = add(bank_file, "Started learning Spanish with an online tutor", "--created-at", "2025-01-01")
    later = add(bank_file, "Switched Spanish tutors to a local teacher", "--created-at", "2025-06-01")

    early = recall_json(bank_file, "How are the Spanish lessons going?", "--now", "2025-03-01", "--threshold", "0")
    assert [h["memory"]["id"] for h in early] == [spanish]
    # 59 days old, with generative-agents' 30-day half-life (DESIGN.md)
    ga = recall_json(bank_file, "How are the Spanish lessons going?", "--now", "2025-03-01", "--threshold", "0",
                     "--preset", "generative-agents")
    assert ga[0]["components"]["recency"] == pytest.approx(math.exp(-math.log(2) * 59 / 30), rel=1e-6)

    late = recall_json(bank_file, "How are the Spanish lessons going?", "--now", "2025-07-01", "--threshold", "0")
    assert {h["memory"]["id"] for h in late} == {spanish, later}

    table = memctl(bank_file, "recall", "Spanish lessons", "--now", "2025-03-01", "--threshold", "0").stdout
    assert "8 weeks ago" in table


def test_recall_k_and_threshold_options(bank_file: Path, food_bank: dict[str, int]) -> None:
    # A question that names something of each memory: each has relevance of its own.
    assert len(recall_json(bank_file, "vegetarian pasta peanuts nurse", "--threshold", "0", "-k", "10")) == 4
    assert len(recall_json(bank_file, "vegetarian pasta peanuts nurse", "--threshold", "0", "-k", "2")) == 2
    assert recall_json(bank_file, "food", "--threshold", "0.99") == []
    out = memctl(bank_file, "recall", "food", "--threshold", "0.99").stdout
    assert "no memory clears the threshold" in out


def test_recall_dry_run_changes_nothing_and_a_real_recall_counts_the_access(
        bank_file: Path, food_bank: dict[str, int]) -> None:
    veg = food_bank["veg"]
    hits = recall_json(bank_file, "is she vegetarian?", "--dry-run")
    assert hits and hits[0]["memory"]["id"] == veg
    m = show_json(bank_file, veg)["memory"]
    assert m["access_count"] == 0 and m["last_accessed_at"] is None
    assert stats_json(bank_file)["retrievals"] == 0

    recall_json(bank_file, "is she vegetarian?", "--now", "2030-01-01T00:00:00Z")
    m = show_json(bank_file, veg)["memory"]
    assert m["access_count"] == 1
    assert m["last_accessed_at"] == "2030-01-01T00:00:00+00:00"
    assert stats_json(bank_file)["retrievals"] == 1


def test_recall_names_its_retrieval_so_feedback_can_follow(bank_file: Path, food_bank: dict[str, int]) -> None:
    """The CLI's recall-then-feedback loop: the id `memctl feedback` takes is printed (on stderr,
    so the table and the JSON stay as they are); a dry run logs nothing and names nothing."""
    veg = food_bank["veg"]
    out = memctl(bank_file, "recall", "is she vegetarian?", "--json")
    assert json.loads(out.stdout)[0]["memory"]["id"] == veg
    rid = int(out.stderr.split("retrieval ")[1].split(";")[0])
    assert f"memctl feedback {rid} --used ID" in out.stderr
    fb = memctl(bank_file, "feedback", str(rid), "--used", str(veg), "--json").stdout
    assert {h["memory_id"]: h["used"] for h in json.loads(fb)["hits"]}[veg] is True
    assert "retrieval" not in memctl(bank_file, "recall", "is she vegetarian?", "--dry-run").stderr


# -- show, forget, restore -------------------------------------------------------------------------


def test_show_lists_the_history_of_add_update_forget_and_restore(bank_file: Path) -> None:
    mid = add(bank_file, "Wants to run a half marathon this year", "-c", "goal")
    with MemoryBank.open(bank_file, actor="operator") as b:  # memctl has no update command
        b.update(mid, importance=0.9)
    memctl(bank_file, "forget", str(mid), "--reason", "achieved")
    memctl(bank_file, "restore", str(mid))

    out = memctl(bank_file, "show", str(mid)).stdout
    assert "text: Wants to run a half marathon this year" in out
    history = out.split("history:")[1].strip().splitlines()
    assert len(history) == 4
    assert "cli: add" in history[0]
    assert "operator: update" in history[1] and "0.5" in history[1] and "0.9" in history[1]
    assert "cli: forget" in history[2] and "achieved" in history[2]
    assert "cli: restore" in history[3]

    data = show_json(bank_file, mid)
    assert [e["action"] for e in data["history"]] == ["add", "update", "forget", "restore"]
    assert data["history"][1]["before"]["importance"] == 0.5
    assert data["history"][1]["after"]["importance"] == 0.9


def test_forget_archives_restore_brings_back(bank_file: Path, food_bank: dict[str, int]) -> None:
    veg = food_bank["veg"]
    out = memctl(bank_file, "forget", str(veg)).stdout
    assert f"memctl restore {veg}" in out
    assert show_json(bank_file, veg)["memory"]["status"] == "archived"
    assert veg not in [h["memory"]["id"] for h in recall_json(bank_file, "vegetarian food", "--dry-run")]

    assert "restored" in memctl(bank_file, "restore", str(veg)).stdout
    assert show_json(bank_file, veg)["memory"]["status"] == "active"
    assert recall_json(bank_file, "vegetarian food", "--dry-run")[0]["memory"]["id"] == veg


def test_forget_hard_erases_the_text(bank_file: Path, food_bank: dict[str, int]) -> None:
    veg = food_bank["veg"]
    out = memctl(bank_file, "forget", str(veg), "--hard", "--yes").stdout
    assert "erased" in out
    shown = memctl(bank_file, "show", str(veg)).stdout
    assert "text: None" in shown and "status: deleted" in shown
    assert "vegetarian" not in shown  # nor in the scrubbed history
    assert veg not in [h["memory"]["id"] for h in recall_json(bank_file, "vegetarian", "--threshold", "0")]
    # A hard delete is final.
    again = memctl(bank_file, "restore", str(veg), ok=False)
    assert again.exit_code == 1 and "hard-deleted" in again.output


def test_forget_hard_asks_first_and_no_keeps_the_memory(bank_file: Path, food_bank: dict[str, int]) -> None:
    veg = food_bank["veg"]
    result = memctl(bank_file, "forget", str(veg), "--hard", input="n\n", ok=False)
    assert result.exit_code == 1 and "Aborted" in result.output
    assert show_json(bank_file, veg)["memory"]["text"] == "Prefers vegetarian food"
    memctl(bank_file, "forget", str(veg), "--hard", input="y\n")
    assert show_json(bank_file, veg)["memory"]["text"] is None


def test_forget_hard_leaves_no_copy_of_the_text_in_the_bank_files(bank_file: Path) -> None:
    """DESIGN.md: a hard delete removes the text "from the database file too". A real recall first
    rewrites the row (access count), which once left the old text in DuckDB's free blocks."""
    mid = add(bank_file, "Secret zebra passphrase quartz")
    add(bank_file, "Prefers tea to coffee")
    hits = recall_json(bank_file, "zebra quartz", "--threshold", "0")  # rewrites the row: access count
    assert mid in [h["memory"]["id"] for h in hits]
    memctl(bank_file, "forget", str(mid), "--hard", "--yes")
    leftovers = [p.name for p in bank_file.parent.rglob("*") if p.is_file() and b"passphrase" in p.read_bytes()]
    assert leftovers == [], f"the erased text is still in {leftovers}"


# -- stats -----------------------------------------------------------------------------------------


def test_stats_json_counts_by_status_namespace_and_retrievals(bank_file: Path) -> None:
    a1 = add(bank_file, "Prefers vegetarian food", "-n", "alice", "-c", "preference")
    add(bank_file, "Training for a marathon", "-n", "alice", "-c", "goal", "--kind", "inferred")
    a3 = add(bank_file, "Lives in Lisbon", "-n", "alice", "-c", "profile")
    add(bank_file, "Uses vim", "-n", "bob", "-c", "preference")
    memctl(bank_file, "forget", str(a1))
    memctl(bank_file, "forget", str(a3), "--hard", "--yes")
    memctl(bank_file, "recall", "marathon", "-n", "alice", "--threshold", "0")
    memctl(bank_file, "recall", "quantum chromodynamics lecture", "-n", "bob", "--threshold", "0.99")

    s = stats_json(bank_file)
    assert s["total"] == 4 and s["active"] == 2
    assert s["by_status"] == {"active": 2, "archived": 1, "deleted": 1}
    assert s["by_namespace"] == {"alice": 1, "bob": 1}
    assert s["by_kind"] == {"explicit": 1, "inferred": 1}
    assert s["by_category"] == {"goal": 1, "preference": 1}
    assert s["retrievals"] == 2 and s["empty_retrievals"] == 1
    text = memctl(bank_file, "stats").stdout
    assert "memories: 4 (2 active)" in text and "retrievals: 2 (1 empty)" in text


# -- export and import -----------------------------------------------------------------------------


def test_export_import_round_trip_keeps_everything(bank_file: Path, tmp_path: Path) -> None:
    """Export, import into a new bank, export again: the two files are identical, so ids, dates,
    statuses, importance and access counts survived; importing again adds nothing."""
    add(bank_file, "Prefers vegetarian food", "-n", "alice", "-i", "0.8", "--created-at", "2024-02-29T12:00:00Z")
    old = add(bank_file, "Was born in Porto", "-n", "alice", "-c", "profile", "--created-at", "1931-05-17")
    gone = add(bank_file, "Drives a red car", "-n", "bob", "--kind", "inferred")
    add(bank_file, "Learning Rust", "-n", "bob", "-c", "goal")
    memctl(bank_file, "recall", "where was she born?", "-n", "alice", "--now", "2025-01-01")
    memctl(bank_file, "forget", str(gone))

    first = tmp_path / "a.jsonl"
    assert "exported 4 memories" in memctl(bank_file, "export", str(first)).output
    rows = [json.loads(line) for line in first.read_text(encoding="utf-8").splitlines()]
    by_id = {r["id"]: r for r in rows}
    assert by_id[old]["created_at"] == "1931-05-17T00:00:00+00:00" and by_id[old]["access_count"] == 1
    assert by_id[gone]["status"] == "archived"

    other = tmp_path / "other" / "b.duckdb"
    out = memctl(other, "import", str(first)).stdout
    assert "imported 4, already present 0, skipped 0" in out
    second = tmp_path / "b.jsonl"
    memctl(other, "export", str(second))
    assert second.read_text(encoding="utf-8").splitlines() == first.read_text(encoding="utf-8").splitlines()

    assert "imported 0, already present 4" in memctl(other, "import", str(first)).stdout
    assert stats_json(other)["total"] == 4


def test_export_to_stdout_and_by_namespace(bank_file: Path) -> None:
    add(bank_file, "Prefers vegetarian food", "-n", "alice")
    add(bank_file, "Uses vim", "-n", "bob")
    result = memctl(bank_file, "export")
    rows = [json.loads(line) for line in result.stdout.splitlines()]
    assert [r["text"] for r in rows] == ["Prefers vegetarian food", "Uses vim"]
    assert "exported 2 memories" in result.stderr
    rows = [json.loads(line) for line in memctl(bank_file, "export", "-", "-n", "bob").stdout.splitlines()]
    assert [r["namespace"] for r in rows] == ["bob"]


def _malformed_file(path: Path) -> Path:
    return write_jsonl(path, [
        {"text": "Prefers aisle seats", "namespace": "carol"},                  # 1 good
        '{"text": "Likes jazz", "namespace": ',                                  # 2 bad JSON
        {"text": "Speaks Portuguese", "importance": 2},                          # 3 importance 2
        {"text": "Keeps a sourdough starter", "namespace": "carol"},            # 4 good
        {"text": "", "namespace": "carol"},                                      # 5 empty text
        {"text": "Plays chess", "category": "hobby"},                            # 6 unknown category
    ])


def test_import_with_malformed_lines_is_refused_and_changes_nothing(bank_file: Path, tmp_path: Path) -> None:
    add(bank_file, "Already here")
    before = stats_json(bank_file)
    result = memctl(bank_file, "import", str(_malformed_file(tmp_path / "bad.jsonl")), ok=False)
    assert result.exit_code == 1
    for n in (2, 3, 5, 6):
        assert f"line {n}:" in result.output
    for n in (1, 4):
        assert f"line {n}:" not in result.output
    problem = {int(line.split(":")[0].split()[1]): line for line in result.stderr.splitlines()
               if line.startswith("line ")}
    assert "importance" in problem[3] and "empty" in problem[5] and "category" in problem[6]
    assert "nothing imported" in result.output and "--skip-errors" in result.output
    after = stats_json(bank_file)
    assert after["total"] == before["total"] == 1 and after["change_seq"] == before["change_seq"]


def test_import_skip_errors_imports_the_good_lines_and_reports_the_bad(bank_file: Path, tmp_path: Path) -> None:
    result = memctl(bank_file, "import", str(_malformed_file(tmp_path / "bad.jsonl")), "--skip-errors")
    assert "imported 2, already present 0, skipped 4 malformed line(s)" in result.stdout
    assert [int(line.split(":")[0].split()[-1]) for line in result.stderr.splitlines()
            if line.startswith("skipped line")] == [2, 3, 5, 6]
    exported = [json.loads(line) for line in memctl(bank_file, "export").stdout.splitlines()]
    assert sorted(r["text"] for r in exported) == ["Keeps a sourdough starter", "Prefers aisle seats"]
    assert {r["namespace"] for r in exported} == {"carol"}


def test_import_namespace_option_puts_everything_in_one_namespace(bank_file: Path, tmp_path: Path) -> None:
    f = write_jsonl(tmp_path / "m.jsonl", [{"text": "Likes jazz", "namespace": "x"}, {"text": "Owns a cat"}])
    memctl(bank_file, "import", str(f), "-n", "dave")
    assert stats_json(bank_file)["by_namespace"] == {"dave": 2}


# -- presets ---------------------------------------------------------------------------------------


def test_preset_save_list_activate(bank_file: Path, food_bank: dict[str, int]) -> None:
    out = memctl(bank_file, "preset", "list").stdout
    assert any(line.startswith("* default") for line in out.splitlines())
    assert "generative-agents" in out and "weighted-recall" in out

    memctl(bank_file, "preset", "save", "focused", "--from", "weighted-recall", "--set", "k=2", "--set", "alpha=0.8")
    line = next(line for line in memctl(bank_file, "preset", "list").stdout.splitlines() if "focused" in line)
    assert line.startswith("  focused") and "α=0.8" in line and "k=2" in line and "threshold=0 " in line + " "

    assert "active preset: focused" in memctl(bank_file, "preset", "activate", "focused").stdout
    listing = memctl(bank_file, "preset", "list").stdout.splitlines()
    assert [line.split()[1] for line in listing if line.startswith("*")] == ["focused"]
    assert stats_json(bank_file)["active_preset"] == "focused"

    # A recall without --preset now gets the active one: weighted-recall's threshold 0 with k=2.
    assert len(recall_json(bank_file, "food")) == 2
    with MemoryBank.open(bank_file) as b:
        last = b.retrievals(limit=1)[0]
    assert last["preset"] == "focused" and last["params"]["alpha"] == 0.8


# -- bad input: one clear line, exit code 1, no traceback ------------------------------------------


BAD_INPUT = [
    (["add", ""], "empty"),
    (["add", "Likes tea", "-i", "2"], "importance"),
    (["add", "Likes tea", "--created-at", "last tuesday"], "ISO 8601"),
    (["show", "999"], "999"),
    (["forget", "999"], "999"),
    (["restore", "1"], "archived"),
    (["recall", "tea", "--now", "yesterday"], "ISO 8601"),
    (["recall", "tea", "-k", "0"], "k must be"),
    (["recall", "tea", "--threshold", "nan"], "finite"),
    (["recall", "tea", "--preset", "nope"], "nope"),
    (["recall", "tea", "-n", " "], "namespace"),
    (["preset", "activate", "nope"], "nope"),
    (["preset", "save", "default"], "built-in"),
    (["preset", "save", "mine", "--set", "alpha=-1"], "alpha"),
]


@pytest.mark.parametrize("args, expected", BAD_INPUT, ids=[" ".join(a) or "empty" for a, _ in BAD_INPUT])
def test_bad_input_gives_one_clear_line(bank_file: Path, args: list[str], expected: str) -> None:
    add(bank_file, "Likes green tea")  # memory 1, active
    before = stats_json(bank_file)["change_seq"]
    result = memctl(bank_file, *args, ok=False)
    assert result.exit_code == 1
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("Error: "), result.output
    assert expected in lines[0]
    assert stats_json(bank_file)["change_seq"] == before


def test_a_folder_or_a_foreign_file_as_bank_gives_one_clear_line(tmp_path: Path, embedder) -> None:
    folder = tmp_path / "folder"
    folder.mkdir()
    foreign = tmp_path / "notes.duckdb"
    foreign.write_text("these are my notes, not a database\n")
    for path, expected in ((folder, "is a folder"), (foreign, "not a valid DuckDB")):
        result = memctl(path, "stats", ok=False)
        assert result.exit_code == 1
        lines = [line for line in result.output.splitlines() if line.strip()]
        assert len(lines) == 1 and lines[0].startswith("Error: ") and expected in lines[0]
    assert foreign.read_text() == "these are my notes, not a database\n"


# -- demo ------------------------------------------------------------------------------------------


def test_demo_builds_a_bank_with_the_replayed_recall_history(bank_file: Path, tmp_path: Path) -> None:
    memories = write_jsonl(tmp_path / "mem.jsonl", [
        {"text": "Prefers vegetarian food", "namespace": "alice", "category": "preference",
         "importance": 0.8, "created_at": "2025-09-02T10:00:00Z"},
        {"text": "Is training for the Lisbon half marathon", "namespace": "alice", "category": "goal",
         "importance": 0.7, "created_at": "2025-09-10T09:00:00Z"},
        {"text": "Old phone number was replaced", "namespace": "alice", "status": "archived",
         "created_at": "2025-09-03T09:00:00Z"},
        {"text": "Writes Python at work", "namespace": "bob", "category": "profile",
         "created_at": "2025-09-05T09:00:00Z"},
        {"text": "Wants to learn Rust this winter", "namespace": "bob", "category": "goal",
         "importance": 0.6, "created_at": "2025-10-01T09:00:00Z"},
    ])
    queries = write_jsonl(tmp_path / "q.jsonl", [
        {"namespace": "alice", "query": "Any vegetarian dinner ideas?", "at": "2025-09-20T18:00:00Z"},
        {"namespace": "bob", "query": "Which language should I learn next, Rust?", "at": "2025-10-02T08:00:00Z"},
        {"namespace": "alice", "query": "How is the half marathon training going?", "at": "2025-10-05T07:00:00Z"},
        {"namespace": "bob", "query": "What is the capital of Mongolia?", "at": "2025-10-06T07:00:00Z"},
    ])
    out = memctl(bank_file, "demo", "--memories", str(memories), "--queries", str(queries)).stdout
    assert "5 memories in 2 namespaces, 4 recalls replayed" in out

    s = stats_json(bank_file)
    assert s["retrievals"] == 4 and s["total"] == 5
    assert s["by_status"] == {"active": 4, "archived": 1}
    with MemoryBank.open(bank_file) as b:
        logged = b.retrievals(limit=10)
        veg = b.memories(namespace="alice", contains="vegetarian")[0]
    # The replay keeps each query's own time and counts the accesses it made.
    assert sorted(r["recalled_at"].isoformat() for r in logged)[0] == "2025-09-20T18:00:00+00:00"
    assert veg.access_count >= 1 and veg.last_accessed_at.isoformat() == "2025-09-20T18:00:00+00:00"

    again = memctl(bank_file, "demo", "--memories", str(memories), "--queries", str(queries), ok=False)
    assert again.exit_code == 1 and "already has memories" in again.output
    assert stats_json(bank_file)["total"] == 5


def test_demo_if_empty_builds_into_an_empty_bank_file_and_leaves_a_full_one_alone(bank_file: Path,
                                                                                  tmp_path: Path) -> None:
    """What `make run` relies on: a bank file created empty (the dashboard opened first) gets the
    demo; a bank with memories is not touched, and the command still succeeds."""
    memories = write_jsonl(tmp_path / "mem.jsonl", [
        {"text": "Prefers vegetarian food", "namespace": "alice", "created_at": "2025-09-02T10:00:00Z"},
        {"text": "Writes Python at work", "namespace": "bob", "created_at": "2025-09-05T09:00:00Z"},
    ])
    queries = write_jsonl(tmp_path / "q.jsonl", [
        {"namespace": "alice", "query": "Any vegetarian dinner ideas?", "at": "2025-09-20T18:00:00Z"},
    ])
    files = ("--memories", str(memories), "--queries", str(queries))
    MemoryBank.open(bank_file).close()
    assert bank_file.exists() and stats_json(bank_file)["total"] == 0

    out = memctl(bank_file, "demo", "--if-empty", *files).stdout
    assert "2 memories in 2 namespaces, 1 recalls replayed" in out
    before = stats_json(bank_file)
    assert (before["total"], before["retrievals"]) == (2, 1)

    again = memctl(bank_file, "demo", "--if-empty", *files).stdout
    assert "already has 2 memories; the demo was not built" in again
    after = stats_json(bank_file)
    assert (after["total"], after["retrievals"], after["change_seq"]) == (2, 1, before["change_seq"])

    both = memctl(bank_file, "demo", "--if-empty", "--force", *files, ok=False)
    assert both.exit_code == 2 and "pick one" in both.output
